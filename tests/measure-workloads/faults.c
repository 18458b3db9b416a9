/* SPDX-License-Identifier: MIT */
/* faults.c: touch_pages() takes page faults; compute() only computes.  argv[1] = rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static volatile double sink;

__attribute__((noinline)) void touch_pages(void)
{
	size_t bytes = 16u << 20;
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = 1;
	munmap(p, bytes);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void compute(void)
{
	double x = 1;
	for (int i = 0; i < 3000000; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
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
