/* SPDX-License-Identifier: MIT */
/*
 * unwind-wl.c: the C work of the unwinder cross-check (unwind-ref.c), built several times
 * with different optimisation levels, with and without frame pointers.  WL_NAME names this
 * build's entry point.  It recurses, calls libc (qsort with a callback, string and formatting
 * functions), libm and the loader (dlsym), and calls cheap functions through the PLT in loops.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef WL_NAME
#error "WL_NAME must name the entry point of this build"
#endif

static volatile double sink;

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double leaf_math(unsigned *seed, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++) {
		double x = (double)rand_r(seed) / RAND_MAX;
		s += sin(x) * exp(x) + pow(x, 1.5) + sqrt(x + 1);
	}
	return s;
}

static void libc_work(unsigned *seed)
{
	double v[256];
	char buf[256];
	for (int i = 0; i < 256; i++)
		v[i] = (double)rand_r(seed);
	qsort(v, 256, sizeof(v[0]), compare_doubles);
	for (int i = 0; i < 64; i++) {
		snprintf(buf, sizeof(buf), "%d:%g:%s", i, v[i], "unwind");
		sink += (double)strlen(buf) + (double)(strchr(buf, ':') - buf);
		memmove(buf + 1, buf, 100);
	}
}

static const char *const lookups[] = { "printf", "qsort", "no_such_symbol_here", "malloc",
				       "pthread_create", "sin", "unw_getcontext", "dlsym" };

static void loader_work(unsigned *seed)
{
	for (int i = 0; i < 64; i++) {
		void *p = dlsym(RTLD_DEFAULT, lookups[rand_r(seed) % 8]);
		sink += p != NULL;
	}
}

static void plt_work(unsigned *seed)
{
	long s = 0;
	for (int i = 0; i < 4000; i++)
		s += getpagesize() + rand_r(seed);
	sink += (double)s;
}

__attribute__((noinline)) static double recurse(unsigned *seed, int depth)
{
	if (depth <= 0) {
		switch (rand_r(seed) % 4) {
		case 0: return leaf_math(seed, 200);
		case 1: libc_work(seed); return 1;
		case 2: loader_work(seed); return 2;
		default: plt_work(seed); return 3;
		}
	}
	volatile char pad[24 + (depth % 5) * 8];
	pad[0] = (char)depth;
	double r = recurse(seed, depth - 1) + pad[0];
	return r;
}

/* One round: a call path of up to MAX_DEPTH frames of this build, then the work. */
void WL_NAME(unsigned *seed, int max_depth)
{
	sink += recurse(seed, (int)(rand_r(seed) % (unsigned)max_depth));
}
