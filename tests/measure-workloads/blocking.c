/* SPDX-License-Identifier: MIT */
/*
 * blocking.c: blocks in two known places.  sleep_200ms() sleeps for 200 ms; read_pipe() reads
 * from a pipe that a helper thread writes to 300 ms after it starts; burn() only computes (50 ms
 * of CPU time).
 * argv[1] = rounds (default 1), each doing all three.  It prints how long the two blocking
 * calls took in all (wall time, ns) and how many times a call was interrupted (EINTR), which
 * measuring must never cause.
 */
#include "burn.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static volatile double sink;
static int interrupted;

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_for(struct timespec ts)
{
	while (nanosleep(&ts, &ts) != 0)
		if (errno == EINTR)
			__atomic_add_fetch(&interrupted, 1, __ATOMIC_RELAXED);
}

static void *write_later(void *arg)
{
	(void)arg;
	sleep_for((struct timespec){ 0, 300000000 });
	if (write(fds[1], "x", 1) != 1)
		exit(1);
	return NULL;
}

__attribute__((noinline)) void sleep_200ms(void)
{
	sleep_for((struct timespec){ 0, 200000000 });
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void read_pipe(void)
{
	pthread_t writer;
	if (pthread_create(&writer, NULL, write_later, NULL) != 0)
		exit(1);
	char c;
	ssize_t n;
	while ((n = read(fds[0], &c, 1)) < 0 && errno == EINTR)
		interrupted++;
	if (n != 1)
		exit(1);
	pthread_join(writer, NULL);
	__asm__ volatile("" ::: "memory");
}

/* At least 50 ms of CPU time, however fast the machine: most of the run's CPU time. */
__attribute__((noinline)) void burn(void)
{
	sink = burn_cpu(CLOCK_THREAD_CPUTIME_ID, 0.050, 100000);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;
	if (pipe(fds) != 0)
		return 1;
	long long sleep_ns = 0, read_ns = 0;
	for (int r = 0; r < rounds; r++) {
		long long t0 = now_ns();
		sleep_200ms();
		long long t1 = now_ns();
		read_pipe();
		long long t2 = now_ns();
		burn();
		sleep_ns += t1 - t0;
		read_ns += t2 - t1;
	}
	printf("sleep_ns=%lld read_ns=%lld interrupted=%d\n", sleep_ns, read_ns, interrupted);
	return 0;
}
