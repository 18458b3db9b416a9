/* SPDX-License-Identifier: MIT */
/*
 * threads.c: 8 threads, thread K spinning in its own function workK(); thread 7 creates a
 * nested thread that runs work_nested().  argv[1] = seconds per thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds = 0.3;
static volatile double sink[9];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define WORK(k)                                                        \
	__attribute__((noinline)) void work##k(void)                   \
	{                                                              \
		double end = now() + seconds, x = k;                   \
		while (now() < end)                                    \
			for (int i = 0; i < 1000; i++)                 \
				x = x * 1.0000001 + 1e-9;              \
		sink[k] = x;                                           \
		__asm__ volatile("" ::: "memory");                     \
	}
WORK(0) WORK(1) WORK(2) WORK(3) WORK(4) WORK(5) WORK(6) WORK(7) WORK(8)

static void work_nested(void) { work8(); }

static void *nested_start(void *arg)
{
	(void)arg;
	work_nested();
	return NULL;
}

static void (*const fns[8])(void) = { work0, work1, work2, work3, work4, work5, work6, work7 };

static void *start(void *arg)
{
	long k = (long)arg;
	pthread_t nested;
	if (k == 7 && pthread_create(&nested, NULL, nested_start, NULL) != 0)
		return NULL;
	fns[k]();
	if (k == 7)
		pthread_join(nested, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	pthread_t t[8];
	for (long k = 0; k < 8; k++)
		if (pthread_create(&t[k], NULL, start, (void *)k) != 0)
			return 1;
	for (int k = 0; k < 8; k++)
		pthread_join(t[k], NULL);
	printf("threads: done\n");
	return 0;
}
