/* SPDX-License-Identifier: MIT */
/*
 * callpaths.c: call paths that frame pointers cannot follow: work inside a qsort comparison
 * callback (through glibc), memcpy-heavy copying, and a deep recursion; and deep paths whose
 * middle and length change every 2 ms, to check that no sample keeps a stale part of the last.
 *   callpaths qsort|memcpy|deep|shifting [SECONDS] [DEPTH]
 * shifting: rounds of 2 ms, each in the shape K = round % 4: a recursion of SHIFT_A[K] frames
 * of rec_a, then SHIFT_B[K] of rec_b, then leaf0..leaf3 (K) working.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds = 0.5;
static volatile long sink;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int compare(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	volatile long slow = 0;
	for (int i = 0; i < 20; i++)
		slow += i;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void sort_work(void)
{
	enum { N = 20000 };
	static long v[N];
	double end = now() + seconds;
	unsigned s = 1;
	while (now() < end) {
		for (int i = 0; i < N; i++) {
			s = s * 1103515245u + 12345u;
			v[i] = s;
		}
		qsort(v, N, sizeof(v[0]), compare);
	}
	sink = v[0];
}

__attribute__((noinline)) static void copy_work(void)
{
	enum { N = 1 << 20 };
	static char a[N], b[N];
	double end = now() + seconds;
	while (now() < end)
		for (int i = 0; i < 16; i++) {
			memcpy(b, a, N);
			memcpy(a, b, N);
		}
	sink = a[7];
}

__attribute__((noinline)) long recurse(int depth)
{
	if (depth == 0) {
		double end = now() + seconds;
		long x = 0;
		while (now() < end)
			for (int i = 0; i < 1000; i++)
				x += i;
		return x;
	}
	long r = recurse(depth - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r + 1;
}

static const int SHIFT_A[4] = { 100, 2900, 1500, 1500 };
static const int SHIFT_B[4] = { 2900, 100, 1500, 1000 };

static inline __attribute__((always_inline)) long spin(void)
{
	double end = now() + 0.002;
	long x = 0;
	while (now() < end)
		for (int i = 0; i < 1000; i++)
			x += i;
	return x;
}

/* leaf0..leaf3: the same work, in four functions the tests tell apart. */
#define LEAF(k)                                            \
	__attribute__((noinline)) long leaf##k(void)       \
	{                                                  \
		long r = spin();                           \
		__asm__ volatile("" ::: "memory");         \
		return r + k;                              \
	}
LEAF(0)
LEAF(1)
LEAF(2)
LEAF(3)

__attribute__((noinline)) long rec_b(int depth, int shape)
{
	long r;
	if (depth == 0) {
		static long (*const leaves[4])(void) = { leaf0, leaf1, leaf2, leaf3 };
		r = leaves[shape]();
	} else {
		r = rec_b(depth - 1, shape);
	}
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r + 1;
}

__attribute__((noinline)) long rec_a(int depth, int shape)
{
	long r = depth == 0 ? rec_b(SHIFT_B[shape] - 1, shape) : rec_a(depth - 1, shape);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) static long shifting(void)
{
	double end = now() + seconds;
	long x = 0;
	for (int round = 0; now() < end; round++)
		x += rec_a(SHIFT_A[round % 4] - 1, round % 4);
	return x;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "qsort";
	if (argc > 2)
		seconds = atof(argv[2]);
	int depth = argc > 3 ? atoi(argv[3]) : 5000;
	if (!strcmp(what, "qsort"))
		sort_work();
	else if (!strcmp(what, "memcpy"))
		copy_work();
	else if (!strcmp(what, "deep"))
		sink = recurse(depth);
	else if (!strcmp(what, "shifting"))
		sink = shifting();
	else
		return 2;
	printf("callpaths %s: done\n", what);
	return 0;
}
