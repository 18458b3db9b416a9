/* SPDX-License-Identifier: MIT */
/*
 * phases.c: four threads in known phases, for the trace timeline's tests: thread K runs
 * phase_a() for (K + 1) units of CPU time, then phase_b() for (4 - K) units, then sleeps 8
 * units in phase_sleep(), and ends.  A unit is argv[1] milliseconds (default 100) of the
 * thread's own CPU time, so a busy machine stretches the phases but not their order.  Each
 * thread prints where its phases began and ended, in CLOCK_REALTIME nanoseconds (the clock
 * the measurement's thread start times use):
 *   phases TID A_START A_END B_START B_END SLEEP_START SLEEP_END
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long unit_ms = 100;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static volatile double sink;

/* Spin until this thread has used MS more milliseconds of CPU time. */
__attribute__((always_inline)) static inline void burn(long ms)
{
	uint64_t until = clock_ns(CLOCK_THREAD_CPUTIME_ID) + (uint64_t)ms * 1000000u;
	double x = 1;
	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < until)
		for (int i = 0; i < 20000; i++)
			x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* Each phase is its own code (noipa: not folded with the other, nor inlined), so that its
 * samples are its own. */
__attribute__((noipa)) static void phase_a(long units)
{
	burn(units * unit_ms);
	sink += 1;
}

__attribute__((noipa)) static void phase_b(long units)
{
	burn(units * unit_ms);
	sink += 2;
}

__attribute__((noipa)) static void phase_sleep(long units)
{
	struct timespec ts = { units * unit_ms / 1000, (units * unit_ms % 1000) * 1000000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void *worker(void *arg)
{
	long k = (long)(intptr_t)arg;
	uint64_t t[6];
	t[0] = clock_ns(CLOCK_REALTIME);
	phase_a(k + 1);
	t[1] = clock_ns(CLOCK_REALTIME);
	t[2] = t[1];
	phase_b(4 - k);
	t[3] = clock_ns(CLOCK_REALTIME);
	t[4] = t[3];
	phase_sleep(8);
	t[5] = clock_ns(CLOCK_REALTIME);
	pthread_mutex_lock(&print_lock);
	printf("phases %ld %llu %llu %llu %llu %llu %llu\n", (long)syscall(SYS_gettid),
	       (unsigned long long)t[0], (unsigned long long)t[1], (unsigned long long)t[2],
	       (unsigned long long)t[3], (unsigned long long)t[4], (unsigned long long)t[5]);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		unit_ms = atol(argv[1]) > 0 ? atol(argv[1]) : 100;
	pthread_t th[4];
	for (long k = 0; k < 4; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k) != 0)
			return 1;
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	return 0;
}
