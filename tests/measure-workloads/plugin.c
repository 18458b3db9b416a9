/* SPDX-License-Identifier: MIT */
/* plugin.c: built twice (as libplugina.so and libpluginb.so) with a different PLUGIN_WORK. */
#include <time.h>

static volatile double sink;

__attribute__((noinline)) void PLUGIN_WORK(double seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds, now, x = 1;
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	} while (now < end);
	sink = x;
}

void plugin_run(double seconds)
{
	PLUGIN_WORK(seconds);
	__asm__ volatile("" ::: "memory");
}
