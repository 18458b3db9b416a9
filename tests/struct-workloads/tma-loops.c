/* SPDX-License-Identifier: MIT */
/*
 * tma-loops.c: known loops in known functions for the top-down pipeline tests
 * (tests/e2e/t0404-tma-loops.sh, t0453-view-tui-tma-loops.sh), built there at -O2 -g: stream
 * has one loop, branchy a nest (outer and inner), norm2 is always inlined into main's loop and
 * brings its own loop under the inline call site.  Loop header lines carry "LOOP NAME PARENT"
 * as in loops.c.  Bounds come from the command line so that no loop can be unrolled away.
 */
#include <stdlib.h>

volatile double sink;

__attribute__((noinline)) void stream(double *a, const double *b, long n)
{
	double scale = sink + 2.5;
	for (long i = 0; i < n; i++) /* LOOP stream - */
		a[i] = b[i] * scale + a[i];
	sink += a[n / 2];
}

__attribute__((noinline)) long branchy(const long *v, long n, long m)
{
	long s = (long)sink;
	for (long i = 0; i < n; i++) { /* LOOP branchy-outer - */
		s ^= i * 31 + (long)sink;
		for (long j = 0; j < m; j++) { /* LOOP branchy-inner branchy-outer */
			if ((v[j] ^ i) & 1)
				s += v[j];
			else
				s -= i;
		}
	}
	return s;
}

static inline __attribute__((always_inline)) double norm2(const double *a, long n)
{
	double s = 0;
	for (long k = 0; k < n; k++) /* LOOP norm main */
		s += a[k] * a[k];
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 4096, reps = argc > 2 ? atol(argv[2]) : 100;
	if (n < 8)
		n = 8;
	double *a = calloc((size_t)n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
	long *v = calloc((size_t)n, sizeof(long));
	if (!a || !b || !v)
		return 1;
	for (long i = 0; i < n; i++) { /* LOOP init - */
		b[i] = (double)i;
		v[i] = i * 7;
	}
	for (long r = 0; r < reps; r++) { /* LOOP main - */
		stream(a, b, n);
		sink += (double)branchy(v, n / 8, 64);
		sink += norm2(a, n);
	}
	free(a);
	free(b);
	free(v);
	return 0;
}
