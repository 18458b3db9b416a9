// SPDX-License-Identifier: MIT
/*
 * omp.cc: an OpenMP region ("#pragma omp parallel for") in a static function that the
 * compiler inlines into main; its loop calls two always-inline helpers.  GCC outlines the
 * region as region._omp_fn.0, whose DIE it puts inside the abstract instance of region;
 * struct must find it there, with the helpers inlined at their call lines inside its loop.
 * Markers (SCALE-CALL, CLAMP-CALL, LOOP) are found by the tests with grep.
 */
#include <cstdio>
#include <cstdlib>

static double a[4096], b[4096];

__attribute__((always_inline)) static inline double scale(double x, double f)
{
	return x * f + 1.0;
}

__attribute__((always_inline)) static inline double clampv(double x)
{
	return x > 100.0 ? 100.0 : x;
}

static void region(int n, double f)
{
#pragma omp parallel for
	for (int i = 0; i < n; i++) { /* LOOP omp-i */
		double s = scale(a[i], f); /* SCALE-CALL */
		b[i] = clampv(s); /* CLAMP-CALL */
	}
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4096;
	if (n > 4096)
		n = 4096;
	for (int i = 0; i < n; i++)
		a[i] = i;
	region(n, argc > 2 ? atof(argv[2]) : 0.5); /* REGION-CALL */
	std::printf("%g\n", b[n / 2]);
	return 0;
}
