/* SPDX-License-Identifier: MIT */
/* split.c: CPU work split 3:1 between work_three() and work_one(); argv[1] = total seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double seconds)
{
	double end = now() + seconds, x = 1.0;
	while (now() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
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
	double total = argc > 1 ? atof(argv[1]) : 1.0;
	/* Interleave in slices so that both functions see the same conditions. */
	for (int i = 0; i < 20; i++) {
		work_three(total * 0.75 / 20);
		work_one(total * 0.25 / 20);
	}
	printf("split: done\n");
	return 0;
}
