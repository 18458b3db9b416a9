/* SPDX-License-Identifier: MIT */
/* burn.h: the clocks and the spin loop with which measure's workloads burn CPU time. */
#ifndef FATHOM_MEASURE_WORKLOADS_BURN_H
#define FATHOM_MEASURE_WORKLOADS_BURN_H

#include <time.h>

/* The time CLOCK has counted, in seconds. */
static inline __attribute__((always_inline)) double clock_seconds(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Spins until CLOCK has counted SECONDS more, reading it every ROUNDS multiply-adds, and
 * returns their result (for the caller's sink).  Always inlined: the samples land in the
 * function that calls it, whose name the tests look for.
 */
static inline __attribute__((always_inline)) double burn_cpu(clockid_t clock, double seconds,
							     int rounds)
{
	double end = clock_seconds(clock) + seconds, x = 1;
	do
		for (int i = 0; i < rounds; i++)
			x = x * 1.0000001 + 1e-9;
	while (clock_seconds(clock) < end);
	return x;
}

#endif
