/* SPDX-License-Identifier: MIT */
/* bench-stats.h: the clocks and the median that every C benchmark reports with. */
#ifndef FATHOM_BENCH_BENCH_STATS_H
#define FATHOM_BENCH_BENCH_STATS_H

#include <time.h>

/* The time of CLOCK (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...) in seconds. */
double bench_clock(clockid_t clock);
/* The monotonic wall time in seconds. */
double bench_now(void);
/* The median of the N values at V, which it sorts. */
double bench_median(double *v, int n);
/* This process's resident memory in MiB (/proc/self/statm), or NaN. */
double bench_rss_mib(void);
/* Remove the scratch directory DIR and all below it (saying so for PROG when it cannot). */
void bench_remove_tree(const char *dir, const char *prog);

#endif
