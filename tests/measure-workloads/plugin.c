/* SPDX-License-Identifier: MIT */
/* plugin.c: built twice (as libplugina.so and libpluginb.so) with a different PLUGIN_WORK. */
#include "burn.h"

static volatile double sink;

__attribute__((noinline)) void PLUGIN_WORK(double seconds)
{
	sink = burn_cpu(CLOCK_THREAD_CPUTIME_ID, seconds, 10000);
}

void plugin_run(double seconds)
{
	PLUGIN_WORK(seconds);
	__asm__ volatile("" ::: "memory");
}
