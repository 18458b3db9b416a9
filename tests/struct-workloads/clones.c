/* SPDX-License-Identifier: MIT */
/*
 * clones.c: functions that GCC emits as clones at -O2 and -O3: work() has its unlikely branch
 * split into work.cold, and scaled() is specialised for its constant argument as
 * scaled.constprop.0.  t0208 checks that struct links both to their parent function.
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((cold, noinline)) void report(const char *what, long v)
{
	fprintf(stderr, "%s %ld\n", what, v);
}

__attribute__((noinline)) long work(const long *a, long n)
{
	long s = 0;
	for (long i = 0; i < n; i++) {
		if (a[i] < 0) {
			report("negative", a[i]);
			report("at", i);
			s -= a[i] * 3;
			continue;
		}
		s += a[i];
	}
	return s;
}

static __attribute__((noinline)) long scaled(long x, long factor)
{
	long s = 0;
	for (long i = 0; i < x; i++)
		s += i * factor + (s >> 3);
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;
	long *a = calloc((size_t)n, sizeof(long));
	if (!a)
		return 1;
	for (long i = 0; i < n; i++)
		a[i] = (i * 7) & 1023;
	long r = scaled(n, 7) + scaled(n + 1, 7) + work(a, n);
	printf("%ld\n", r);
	free(a);
	return 0;
}
