#!/bin/sh
# SPDX-License-Identifier: MIT
# t0210-measure-memleak.sh: -e MEMLEAK credits the bytes of every allocation to the function
# that made it, the bytes freed to the same one, and what is still allocated at the end as
# leaked: exactly at --memleak-prob 1, within six standard deviations of the binomial sampling
# at 0.1; across threads (blocks freed by another thread than the one that allocated them),
# with a time source, and over jemalloc and tcmalloc when they are installed.
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
for lib in libjemalloc.so.2 libtcmalloc_minimal.so.4; do
	path=
	for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
		[ -r "$d/$lib" ] && path=$d/$lib && break
	done
	if [ -z "$path" ]; then
		skip "$lib is not installed (Debian: apt-get install libjemalloc2 libtcmalloc-minimal4)" \
			"P = 1 over $lib: exact"
		continue
	fi
	test_expect_success "P = 1 over $lib: exact" '
		rm -rf a && LD_PRELOAD='"$path"' measure -o a -e MEMLEAK "$W/synchronous" leak $N \
			>out 2>err && cat err && check_exact a
	'
done
test_done
