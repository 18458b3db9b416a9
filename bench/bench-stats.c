/* SPDX-License-Identifier: MIT */
/* bench-stats.c: the clocks, the median, the resident memory and the scratch directories of
 * bench-stats.h. */
#include "compat.h"
#include "bench-stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

double bench_clock(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double bench_now(void)
{
	return bench_clock(CLOCK_MONOTONIC);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_rss_mib(void)
{
	unsigned long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return NAN;
	int n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	return n == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) / (1 << 20) : NAN;
}

void bench_remove_tree(const char *dir, const char *prog)
{
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "%s: could not remove %s\n", prog, dir);
}
