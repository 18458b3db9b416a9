#!/bin/sh
# SPDX-License-Identifier: MIT
# t0110-measure-memleak.sh: -e MEMLEAK credits the bytes of every allocation to the function
# that made it, the bytes freed to the same one, and what is still allocated at the end as
# leaked: exactly at --memleak-prob 1, within six standard deviations of the binomial sampling
# at 0.1; across threads (blocks freed by another thread than the one that allocated them),
# with a time source, and over jemalloc and tcmalloc when they are installed; blocks tracked
# with a header in front (glibc) are the program's blocks unchanged.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
N=30000
# check_exact DIR: the sites of "synchronous leak $N" (metrics 0 allocated, 1 freed, 2 leaked)
check_exact() {
	for m in 0 1 2; do
		test-tool profile -m $m -r leak_a -r leak_b -r freed_c -r aligned_d "$1"/*.fthm |
			sed -n "s/^reach /$m /p"
	done >got &&
	cat >want <<-END &&
	0 leak_a $((100 * N))
	0 leak_b $((364 * N))
	0 freed_c $((1000 * N))
	0 aligned_d $((64 * N))
	1 leak_a 0
	1 leak_b $((64 * N))
	1 freed_c $((1000 * N))
	1 aligned_d 0
	2 leak_a $((100 * N))
	2 leak_b $((300 * N))
	2 freed_c 0
	2 aligned_d $((64 * N))
	END
	test_cmp want got
}

test_expect_success 'P = 1: allocated, freed and leaked bytes are exact at each site' '
	measure -o m -e MEMLEAK "$W/synchronous" leak $N >out 2>err && cat err &&
	check_exact m &&
	grep -q "MEMLEAK: .* bytes still allocated at the end" m/*.log
'
test_expect_success 'P = 1: the leaf is the allocator function called' '
	test-tool profile -m 2 m/*.fthm >p && grep -Eq "^function (__libc_)?malloc $((100 * N))$" p ||
	{ cat p; false; }
'
test_expect_success 'P = 1: the metric table says what the metrics are' '
	fathom-dump m/*.fthm >d &&
	grep -A2 "\"MEMLEAK Bytes Allocated\"" d | grep -q "unit: bytes rate: exact" &&
	grep -A1 "\"MEMLEAK Bytes Freed\"" d | grep -q "probability 1" &&
	grep -q "\"MEMLEAK Bytes Leaked\"" d
'
# At P = 0.1 each site's estimate is 10 x (bytes of the tracked blocks): a binomial count of
# N blocks with p = 0.1 has sd sqrt(N p (1 - p)) blocks; six of them bound a correct run.
test_expect_success 'P = 0.1: totals within 6 sd of the binomial sampling; freed sites 0' '
	measure -o s -e MEMLEAK --memleak-prob 0.1 "$W/synchronous" leak $N >out 2>err &&
	for m in 0 1 2; do
		test-tool profile -m $m -r leak_a -r leak_b -r freed_c -r aligned_d s/*.fthm |
			sed -n "s/^reach /$m /p"
	done >got && cat got &&
	awk -v n=$N "
		function near(v, size, what) { mean = size * n; sd = 10 * size * sqrt(n * 0.1 * 0.9)
			if (v < mean - 6 * sd || v > mean + 6 * sd) { print what, v, \"not within\", mean, \"+-\", 6 * sd; bad = 1 } }
		\$1 == 2 && \$2 == \"leak_a\" { near(\$3, 100, \"leak_a leaked\") }
		\$1 == 2 && \$2 == \"leak_b\" { near(\$3, 300, \"leak_b leaked\") }
		\$1 == 2 && \$2 == \"aligned_d\" { near(\$3, 64, \"aligned_d leaked\") }
		\$1 == 0 && \$2 == \"freed_c\" { near(\$3, 1000, \"freed_c allocated\"); a = \$3 }
		\$1 == 1 && \$2 == \"freed_c\" { f = \$3 }
		\$1 == 2 && \$2 == \"freed_c\" && \$3 != 0 { print \"freed_c leaked\", \$3; bad = 1 }
		\$1 == 1 && \$2 == \"leak_a\" && \$3 != 0 { print \"leak_a freed\", \$3; bad = 1 }
		END { if (a != f) { print \"freed_c allocated\", a, \"freed\", f; bad = 1 } exit bad }" got &&
	fathom-dump s/*.fthm | grep -A1 "\"MEMLEAK Bytes Allocated\"" | grep -q "probability 0.1, bytes scaled by 1/P"
'
test_expect_success 'threads: blocks freed by main are credited to the worker that allocated' '
	measure -o t -e MEMLEAK "$W/synchronous" threads 2000 >out 2>err && cat err &&
	test "$(ls t/*.fthm | wc -l)" -eq 5 &&
	for m in 0 1 2; do
		test-tool profile -m $m -r thread_alloc t/*.fthm | sed -n "s/^reach /$m /p"
	done >got &&
	printf "0 thread_alloc 384000\n1 thread_alloc 384000\n2 thread_alloc 0\n" >want &&
	test_cmp want got
'
test_expect_success 'MEMLEAK with a time source: exact, and the samples still land' '
	measure -o c -e MEMLEAK -e CPUTIME@1000 "$W/synchronous" leak $N >out 2>err &&
	check_exact c && grep -q "summary: samples taken [1-9]" c/*.log
'
# A program whose executable defines malloc itself comes before measure in the search order.
cat >own.c <<'END'
#include <stddef.h>
#include <string.h>
static char heap[1 << 24];
static size_t used;
void *malloc(size_t n) { void *p = heap + used; used += (n + 15) & ~(size_t)15; return used <= sizeof(heap) ? p : NULL; }
void free(void *p) { (void)p; }
void *calloc(size_t n, size_t s) { void *p = malloc(n * s); if (p) memset(p, 0, n * s); return p; }
void *realloc(void *p, size_t n) { void *q = malloc(n); if (p && q) memcpy(q, p, n); return q; }
int main(void) { return malloc(100) == NULL; }
END
if cc -O1 -o own own.c 2>/dev/null; then
	test_expect_success 'a malloc of the program itself: MEMLEAK says it cannot measure it' '
		measure -o o -e MEMLEAK ./own >out 2>err; cat err &&
		grep -q "MEMLEAK cannot measure this program: its malloc" err
	'
else
	skip "no C compiler (cc)" "a malloc of the program itself: MEMLEAK says it cannot measure it"
fi
# Tracked blocks carry their entry in a header in front of them (glibc): the program must not
# see it.  Contents kept through realloc chains that go in and out of tracking (at P < 1),
# calloc zeroed, malloc_usable_size neither short nor past the block (the program writes all of
# it), realloc to 0, a forked child freeing what the parent allocated, a thread replacing
# blocks; at P = 1 what was allocated in all three files is exactly what was freed plus leaked.
cat >blocks.c <<'END'
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#define N 4000
static void *keep[N];
static size_t size[N];
static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed + i * 7);
}
static int same(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(seed + i * 7))
			return 0;
	return 1;
}
static void fail(const char *what, int i)
{
	printf("FAIL %s %d\n", what, i);
	exit(1);
}
static void check_all(const char *what)
{
	for (int i = 0; i < N; i++)
		if (!same(keep[i], size[i], i))
			fail(what, i);
}
static void *worker(void *arg)
{
	for (int i = 0; i < N; i += 2) {
		free(keep[i]);
		keep[i] = malloc(size[i] = 8 + i % 500);
		fill(keep[i], size[i], i);
	}
	return arg;
}
int main(void)
{
	for (int i = 0; i < N; i++) {
		size_t n = 1 + (size_t)(i * 37) % 3000;
		unsigned char *p = i % 3 ? malloc(n) : calloc(n, 1);
		if (!p)
			fail("alloc", i);
		for (size_t j = 0; i % 3 == 0 && j < n; j++)
			if (p[j])
				fail("calloc zero", i);
		size_t u = malloc_usable_size(p);
		if (u < n || u > 2 * n + 64)
			fail("usable size", i);
		fill(p, u, i); /* all of it is the program's */
		keep[i] = p;
		size[i] = u;
	}
	check_all("contents");
	for (int r = 0; r < 6; r++)
		for (int i = 0; i < N; i++) {
			size_t n = 1 + (size_t)(i * 13 + r * 1111) % 5000;
			unsigned char *q = r % 2 ? reallocarray(keep[i], n, 1) : realloc(keep[i], n);
			if (!q)
				fail("realloc", i);
			if (!same(q, n < size[i] ? n : size[i], i))
				fail("realloc contents", i);
			fill(q, n, i);
			keep[i] = q;
			size[i] = n;
		}
	if (realloc(keep[0], 0) != NULL)
		fail("realloc to 0", 0);
	keep[0] = strdup("x");
	size[0] = 0;
	pid_t pid = fork();
	if (pid == 0) {
		check_all("child contents");
		for (int i = 0; i < N; i++)
			free(keep[i]);
		for (int i = 0; i < N; i++)
			free(malloc(16 + i));
		_exit(0);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		fail("child", 0);
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, NULL))
		fail("thread", 0);
	check_all("after thread");
	for (int i = 0; i < N; i++)
		free(keep[i]);
	puts("blocks ok");
	return 0;
}
END
if cc -O1 -pthread -o blocks blocks.c 2>/dev/null; then
	test_expect_success 'blocks with a header: the program sees its blocks unchanged (P = 1)' '
		measure -o b -e MEMLEAK ./blocks >out 2>err; cat err && grep -qx "blocks ok" out &&
		test "$(ls b/*.fthm | wc -l)" -eq 3 &&
		for m in 0 1 2; do test-tool profile -m $m b/*.fthm | sed -n "s/^total //p"; done >totals &&
		awk "NR == 1 { a = \$1 } NR == 2 { f = \$1 } NR == 3 { l = \$1 }
			END { if (a != f + l || a < 4000 * 1500) { print a, f, l; exit 1 } }" totals
	'
	test_expect_success 'blocks with a header: unchanged at P = 0.3 and 0.02' '
		measure -o c3 -e MEMLEAK --memleak-prob 0.3 ./blocks >out 2>err; cat err &&
		grep -qx "blocks ok" out &&
		measure -o c02 -e MEMLEAK --memleak-prob 0.02 ./blocks >out 2>err; cat err &&
		grep -qx "blocks ok" out
	'
else
	skip "no C compiler (cc)" "blocks with a header: the program sees its blocks unchanged (P = 1)"
	skip "no C compiler (cc)" "blocks with a header: unchanged at P = 0.3 and 0.02"
fi
for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	path=
	for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
		[ -r "$d/$lib" ] && path=$d/$lib && break
	done
	if [ -z "$path" ]; then
		for what in "P = 1 over $lib: exact" \
			"P = 0.3 over $lib: the program sees its blocks unchanged"; do
			skip "$lib is not installed (Debian: apt-get install libjemalloc2 libtcmalloc-minimal4)" \
				"$what"
		done
		continue
	fi
	test_expect_success "P = 1 over $lib: exact" '
		rm -rf a && LD_PRELOAD='"$path"' measure -o a -e MEMLEAK "$W/synchronous" leak $N \
			>out 2>err && cat err && check_exact a
	'
	if test -x blocks; then
		test_expect_success "P = 0.3 over $lib: the program sees its blocks unchanged" '
			rm -rf a && LD_PRELOAD='"$path"' measure -o a -e MEMLEAK --memleak-prob 0.3 \
				./blocks >out 2>err && cat err && grep -qx "blocks ok" out
		'
	else
		skip "no C compiler (cc)" "P = 0.3 over $lib: the program sees its blocks unchanged"
	fi
done
test_done
