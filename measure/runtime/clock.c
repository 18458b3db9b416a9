/* SPDX-License-Identifier: MIT */
/*
 * clock.c: the preloaded library's clocks: wall-clock and monotonic time, and a thread's CPU
 * time (its own, or another thread's of the process), in nanoseconds.  Async-signal-safe.
 */
#include "compat.h"
#include "runtime.h"

#include <time.h>

uint64_t rt_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_thread_cpu_ns(pid_t tid)
{
	/* Another thread's CPU clock, as the kernel numbers it: ~TID << 3, per thread (4), the
	 * scheduler's clock (2).  pthread_getcpuclockid() would need its pthread_t. */
	clockid_t clock = tid ? (clockid_t)((~(unsigned)tid << 3) | 6u) : CLOCK_THREAD_CPUTIME_ID;
	struct timespec ts;
	if (clock_gettime(clock, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
