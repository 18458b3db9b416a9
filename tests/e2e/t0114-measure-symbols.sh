#!/bin/sh
# SPDX-License-Identifier: MIT
# t0114-measure-symbols.sh: the preloaded library exports only the functions it interposes.
# Its own helpers (lib/ and the unwind tables: arena_alloc, crc32c, fth_format, ...) stay
# inside it, so a program or library that defines functions of the same names keeps its own,
# and measure keeps its.
. "$top_srcdir/tests/lib/test-lib.sh"

lib="$top_builddir/measure/.libs/libmeasure.so"
test_expect_success 'the library exports interposers only' '
	nm -D --defined-only "$lib" | awk "{print \$3}" | sed "s/@.*//" | sort -u >exported &&
	grep -qx malloc exported && grep -qx execve exported && grep -qx sigaction exported &&
	! grep -E "^(arena_|cf_|cfi_|crc32c|fth_|mfile_|ZSTD_|loadmap_|rt_)" exported
'

# The program exports (-rdynamic) functions named like measure's helpers, each of which aborts
# if measure were to call it; its library defines two more and calls them itself.
cat >clashlib.c <<'SRC'
#include <stddef.h>
#include <stdint.h>
uint32_t crc32c(uint32_t crc, const void *data, size_t n) { (void)data; return crc + (uint32_t)n + 7; }
int fth_format(char *buf, size_t size, const char *fmt) { (void)buf; (void)size; (void)fmt; return 42; }
int clash_check(void) { char b[4]; return crc32c(1, b, 2) == 10 && fth_format(b, 4, "x") == 42; }
SRC
cat >clash.c <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int clash_check(void);
static void refuse(const char *name) { fprintf(stderr, "clash: measure called %s\n", name); abort(); }
void *arena_alloc(void *a, size_t s, size_t al) { (void)a; (void)s; (void)al; refuse("arena_alloc"); return 0; }
void arena_prefault(const void *p, size_t s) { (void)p; (void)s; refuse("arena_prefault"); }
int cf_put(void *w, const void *p, size_t n) { (void)w; (void)p; (void)n; refuse("cf_put"); return 0; }
void *cfi_lookup(void *t, unsigned long pc) { (void)t; (void)pc; refuse("cfi_lookup"); return 0; }
int mfile_writer_open(void *w, int fd) { (void)w; (void)fd; refuse("mfile_writer_open"); return 0; }
const char *fth_errmsg(void) { refuse("fth_errmsg"); return ""; }
static volatile double sink;
int main(void)
{
	struct timespec ts;
	double x = 1, end;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + 0.2;
	do {
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	sink = x;
	if (!clash_check())
		return printf("clash: the library got measure's functions\n"), 1;
	printf("clash: ok\n");
	return 0;
}
SRC
if cc -O1 -shared -fPIC -o libclash.so clashlib.c 2>/dev/null &&
   cc -O1 -rdynamic -o clash clash.c -L. -lclash -Wl,-rpath,"$PWD" 2>/dev/null; then
	test_expect_success 'a program and a library with functions of the same names: both keep theirs' '
		./clash >bare && grep -qx "clash: ok" bare &&
		measure -o cl -e task-clock@f1000 ./clash >out 2>err && cat err &&
		grep -qx "clash: ok" out &&
		test "$(ls cl/*.fthm | wc -l)" -eq 1 &&
		grep -q "^summary: samples taken [1-9][0-9]* .* errors 0 cpu_ns [1-9]" cl/*.log
	'
else
	skip "no C compiler (cc)" "a program and a library with functions of the same names"
fi
test_done
