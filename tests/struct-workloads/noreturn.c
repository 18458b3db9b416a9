/* SPDX-License-Identifier: MIT */
/*
 * noreturn.c: loops whose bodies have error paths that never return, for t0212: abort() and
 * exit() from the C library, a local noreturn function, one the compiler finds never returns
 * (no attribute: struct must find it too), an endless one, and an inlined noreturn function
 * that ends in a call to one that returns (as glibc's malloc_printerr ends in
 * __libc_message).  Each loop is marked LOOP; struct must report these and no others.
 */
#include <stdio.h>
#include <stdlib.h>

/*
 * The error paths are marked likely so that compilers lay them out in line: the bytes after
 * each call that does not return are the loop's next block, which a CFG that let the call
 * fall through would join to the loop.
 */
#define LAID_IN_LINE(c) __builtin_expect(!!(c), 1)
#include <unistd.h>

volatile int sink;

__attribute__((noinline, noreturn)) static void die(const char *why)
{
	fprintf(stderr, "die: %s\n", why);
	exit(3);
}

/* No attribute: every path ends in _exit(), which the compiler sees. */
__attribute__((noinline)) static void stop(int code)
{
	fprintf(stderr, "stop %d\n", code);
	fflush(stderr);
	_exit(code);
}

/* No attribute, and no call that does not return: it never ends. */
__attribute__((noinline)) static void hang(void)
{
	for (;;) /* LOOP hang */
		sink++;
}

/* Returns: the inlined function below does not after calling it. */
__attribute__((noinline)) void report(const char *m)
{
	fputs(m, stderr);
}

static inline __attribute__((always_inline, noreturn)) void fatal(const char *m)
{
	report(m);
	__builtin_unreachable();
}

__attribute__((noinline)) int sum_abort(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP sum_abort */
		if (LAID_IN_LINE(a[i] < 0))
			abort();
		s += a[i] * 3;
	}
	return s;
}

__attribute__((noinline)) int sum_exit(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP sum_exit */
		if (LAID_IN_LINE(a[i] == 7))
			exit(2);
		s ^= a[i];
	}
	return s;
}

__attribute__((noinline)) int sum_die(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP sum_die */
		if (LAID_IN_LINE(a[i] > 1000))
			die("too big");
		s += a[i];
	}
	return s;
}

__attribute__((noinline)) int sum_stop(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP sum_stop */
		if (LAID_IN_LINE(a[i] == -5))
			stop(5);
		if (LAID_IN_LINE(a[i] == -6))
			hang();
		s += a[i] + 1;
	}
	return s;
}

__attribute__((noinline)) int sum_fatal(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) { /* LOOP sum_fatal */
		if (LAID_IN_LINE(a[i] == -9))
			fatal("minus nine\n");
		if (LAID_IN_LINE(a[i] == -8))
			fatal("minus eight\n");
		s += a[i] - 1;
	}
	return s;
}

int data[64];

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64;
	printf("%d\n", sum_abort(data, n) + sum_exit(data, n) + sum_die(data, n) +
			       sum_stop(data, n) + sum_fatal(data, n));
	return 0;
}
