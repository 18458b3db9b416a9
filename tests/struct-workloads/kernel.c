/* SPDX-License-Identifier: MIT */
/*
 * kernel.c: a kernel that the compiler inlines into main at -O2 and -O3; struct must show its
 * loops under the inline call site of the kernel.  Markers as in loops.c.
 */
#include <stdio.h>
#include <stdlib.h>

static double a[64][64], b[64][64], c[64][64];

static void kernel(int n)
{
	for (int i = 0; i < n; i++) /* LOOP k-i - */
		for (int j = 0; j < n; j++) { /* LOOP k-j k-i */
			double s = c[i][j];
			for (int k = 0; k < n; k++) /* LOOP k-k k-j */
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			a[i][j] = b[j][i] = i + j;
	kernel(n); /* KERNEL-CALL */
	printf("%g\n", c[n / 2][n / 3]);
	return 0;
}
