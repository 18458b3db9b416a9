/* SPDX-License-Identifier: MIT */
/*
 * noreturn-lib.c: a shared library for t0212 whose loops call functions that never return
 * through the PLT (or, built with -fno-plt, through the GOT): abort() from the C library and
 * lib_die(), exported from this library.  Each loop is marked LOOP.
 */
#include <stdio.h>
#include <stdlib.h>

/*
 * The error paths are marked likely so that compilers lay them out in line: the bytes after
 * each call that does not return are the loop's next block, which a CFG that let the call
 * fall through would join to the loop.
 */
#define LAID_IN_LINE(c) __builtin_expect(!!(c), 1)

__attribute__((noreturn)) void lib_die(const char *why);

void lib_die(const char *why)
{
	fprintf(stderr, "lib_die: %s\n", why);
	exit(4);
}

int lib_sum_abort(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP lib_sum_abort */
		if (LAID_IN_LINE(a[i] < 0))
			abort();
		s += a[i] * 5;
	}
	return s;
}

int lib_sum_die(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP lib_sum_die */
		if (LAID_IN_LINE(a[i] > 99))
			lib_die("too big");
		s += a[i];
	}
	return s;
}
