/* SPDX-License-Identifier: MIT */
/*
 * loop-lines.c: loops whose statement is far from their latch, for
 * tests/e2e/t0215-struct-loop-lines.sh (built there at -O0 and -O2, with -fopenmp).  Each loop
 * statement carries a marker comment "LINE NAME" with the line struct must label the loop
 * with; bodies are several lines long so that at -O2 the rotated loop's latch lies at their
 * bottom.  Bounds come from the caller so that nothing is unrolled away.
 */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) void scale_for(long *a, long n, long f)
{
	for (long i = 0; i < n; i++) { /* LINE for */
		long x = a[i];

		x = x * f + 1;
		if (x & 1)
			x ^= f;

		a[i] = x;
	}
}

__attribute__((noinline)) void scale_while(long *a, long n, long f)
{
	long i = 0;
	while (i < n) { /* LINE while */
		long x = a[i] + f;

		if (x > 1000)
			x -= f;
		a[i] = x;

		i++;
	}
}

__attribute__((noinline)) long sum_do(const long *a, long n)
{
	long i = 0, s = 0;
	do {
		s += a[i] * 3;

		if (s > 100000)
			s -= a[i];

		i++;
	} while (i < n); /* LINE do */
	return s;
}

__attribute__((noinline)) void init_nested(long *a, long n, long m)
{
	for (long i = 0; i < n; i++) { /* LINE outer */
		long base = i * m;

		for (long j = 0; j < m; j++) { /* LINE inner */
			long v = base + j;

			a[base + j] = v * v;
		}
		sink += a[base];
	}
}

__attribute__((noinline)) void omp_axpy(double *y, const double *x, double alpha, long n)
{
#pragma omp parallel for
	for (long k = 0; k < n; k++) { /* LINE omp */
		double t = x[k] * alpha;

		if (t > 1e9)
			t = 1e9;

		y[k] += t;
	}
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 8;
	long *a = calloc((size_t)(n * n), sizeof(*a));
	double *x = calloc((size_t)n, sizeof(*x)), *y = calloc((size_t)n, sizeof(*y));
	if (!a || !x || !y)
		return 1;
	init_nested(a, n, n);
	scale_for(a, n, 3);
	scale_while(a, n, 5);
	omp_axpy(y, x, 2.0, n);
	printf("%ld %g\n", sum_do(a, n), y[0]);
	free(a);
	free(x);
	free(y);
	return 0;
}
