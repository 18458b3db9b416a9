/* SPDX-License-Identifier: MIT */
/*
 * matmul.c: the demo program: a naive triple-loop matrix multiply (C = A x B, N x N doubles),
 * slow on purpose so that profiles have something to show: cache misses in the inner loop.
 * Usage: matmul [N] [REPEAT]   (defaults 600 and 1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void fill(double *m, int n, unsigned seed)
{
	for (int i = 0; i < n * n; i++) {
		seed = seed * 1103515245u + 12345u;
		m[i] = (double)(seed >> 16 & 0x7fff) / 32768.0;
	}
}

static void multiply(const double *a, const double *b, double *c, int n)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double sum = 0;
			for (int k = 0; k < n; k++)
				sum += a[i * n + k] * b[k * n + j]; /* strided access to b */
			c[i * n + j] = sum;
		}
}

static double trace(const double *m, int n)
{
	double t = 0;
	for (int i = 0; i < n; i++)
		t += m[i * n + i];
	return t;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 600;
	int repeat = argc > 2 ? atoi(argv[2]) : 1;
	if (n <= 0 || n > 8192 || repeat <= 0) {
		fprintf(stderr, "usage: matmul [N (1..8192)] [REPEAT]\n");
		return 2;
	}
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
	double *c = malloc(sizeof(double) * n * n);
	if (!a || !b || !c) {
		fprintf(stderr, "matmul: out of memory for N=%d\n", n);
		return 1;
	}
	fill(a, n, 1);
	fill(b, n, 2);
	struct timespec t0, t1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	for (int r = 0; r < repeat; r++)
		multiply(a, b, c, n);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("matmul: N=%d repeat=%d trace=%.6f cpu=%.3f s\n", n, repeat, trace(c, n), secs);
	free(a);
	free(b);
	free(c);
	return 0;
}
