/* SPDX-License-Identifier: MIT */
/*
 * faults.c: touch_pages() takes page faults; compute() only computes.  argv[1] = rounds.
 * Each round touches 16 MiB afresh (4,096 faults) until it has spent at least 25 ms of CPU
 * time, then computes for at least 10 ms: however fast the machine, a sampler at 2000/s takes
 * some 50 samples in each touch_pages() and 20 in each compute(), so the faults counted
 * between a round's last sample in touch_pages() and its end are a small part of its faults.
 */
#include "burn.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static volatile double sink;

static double cpu_seconds(void)
{
	return clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

__attribute__((noinline)) void touch_pages(void)
{
	size_t bytes = 16u << 20;
	double end = cpu_seconds() + 0.025;
	do {
		char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			exit(1);
		madvise(p, bytes, MADV_NOHUGEPAGE); /* a fault per 4 KiB page, whatever THP says */
		for (size_t i = 0; i < bytes; i += 4096)
			p[i] = 1;
		munmap(p, bytes);
	} while (cpu_seconds() < end);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void compute(void)
{
	sink = burn_cpu(CLOCK_THREAD_CPUTIME_ID, 0.010, 100000);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 30;
	for (int r = 0; r < rounds; r++) {
		touch_pages();
		compute();
	}
	printf("faults: done\n");
	return 0;
}
