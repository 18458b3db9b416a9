/* SPDX-License-Identifier: MIT */
/*
 * split.c: CPU work split 3:1 between work_three() and work_one(); argv[1] = total seconds of
 * CPU time.  It prints what it measured of itself, so that tests compare a profile with the
 * run it came from: "split: wall W3 W1" (ns of wall-clock time in each function, which a busy
 * machine stretches unevenly) after "split: done".  Built again as split-even with
 * -DSPLIT_THREE=0.5 -DSPLIT_PAD (1:1, its code at other addresses) for view's comparison of
 * two runs.
 */
#include "burn.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#ifndef SPLIT_THREE
#define SPLIT_THREE 0.75 /* work_three's share of the work */
#endif

static volatile double sink;

#ifdef SPLIT_PAD
/* Never called: moves the functions after it to other addresses. */
__attribute__((noinline)) void split_pad(int n)
{
	for (int i = 0; i < n; i++)
		sink = sink * 1.5 + i;
	for (int i = 0; i < n; i++)
		sink = sink / 3 + i * sink;
}
#endif

__attribute__((noinline)) static void spin(double seconds)
{
	sink = burn_cpu(CLOCK_THREAD_CPUTIME_ID, seconds, 2000);
}

__attribute__((noinline)) void work_three(double seconds)
{
	spin(seconds);
	__asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
}

__attribute__((noinline)) void work_one(double seconds)
{
	spin(seconds);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double total = argc > 1 ? atof(argv[1]) : 1.0, wall[2] = { 0, 0 };
	/* Interleave in slices so that both functions see the same conditions. */
	for (int i = 0; i < 20; i++) {
		double t0 = clock_seconds(CLOCK_MONOTONIC);
		work_three(total * SPLIT_THREE / 20);
		double t1 = clock_seconds(CLOCK_MONOTONIC);
		work_one(total * (1 - SPLIT_THREE) / 20);
		wall[0] += t1 - t0;
		wall[1] += clock_seconds(CLOCK_MONOTONIC) - t1;
	}
#ifdef SPLIT_PAD
	if (argc > 99)
		split_pad(argc);
#endif
	printf("split: done\nsplit: wall %.0f %.0f\n", wall[0] * 1e9, wall[1] * 1e9);
	return 0;
}
