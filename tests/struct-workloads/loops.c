/* SPDX-License-Identifier: MIT */
/*
 * loops.c: a program with known loop nests for struct's tests.  Every loop header line carries
 * a marker comment "LOOP NAME PARENT" that tests/e2e/t0201-struct-loops.sh reads: PARENT is
 * the enclosing loop ("-" for none); the loop of the always_inline function sits in the loop
 * of its caller.  The irreducible loop lies between the two IRREDUCIBLE markers.  Bounds come
 * from the command line so that no compiler can unroll a loop away.
 */
#include <stdio.h>
#include <stdlib.h>

volatile long sink;

__attribute__((noinline)) static void work(long x)
{
	sink += x;
}

/* Always inlined: its loop must sit under the inline call site inside the caller's loop. */
static inline __attribute__((always_inline)) void inlined_sum(long n)
{
	for (long k = 0; k < n; k++) /* LOOP inl outer-of-inl */
		sink += k * 3;
}

__attribute__((noinline)) static void nested(long n)
{
	for (long i = 0; i < n; i++) { /* LOOP nest-outer - */
		for (long j = 0; j < n; j++) /* LOOP nest-inner nest-outer */
			sink += i ^ j;
	}
}

__attribute__((noinline)) static void siblings(long n)
{
	for (long i = 0; i < n; i++) /* LOOP sib-a - */
		sink += i;
	for (long i = 0; i < n; i++) /* LOOP sib-b - */
		sink -= i;
}

__attribute__((noinline)) static void calls_inlined(long n)
{
	for (long i = 0; i < n; i++) { /* LOOP outer-of-inl - */
		inlined_sum(n);
	}
}

__attribute__((noinline)) static void calls_in_body(long n)
{
	for (long i = 0; i < n; i++) /* LOOP with-call - */
		work(i);
}

/* A dense switch compiles to a jump table: its cases must be found and lie inside the loop. */
__attribute__((noinline)) static void switcher(long n)
{
	for (long i = 0; i < n; i++) { /* LOOP sw - */
		switch ((i * 7 + n) % 9) {
		case 0: sink += 3; break;
		case 1: sink ^= 5; break;
		case 2: sink -= 7; break;
		case 3: sink *= 3; break;
		case 4: sink += i; break;
		case 5: sink ^= i; break;
		case 6: sink -= i * 2; break;
		case 7: sink += 11; break;
		default: sink = 0; break;
		}
	}
}

__attribute__((noinline)) static void irreducible(long n, int start_in_b)
{
	long i = 0;
	if (start_in_b)
		goto b;
a:                                    /* IRREDUCIBLE */
	sink += i;
	i++;
b:
	sink -= 1;
	if (i < n && (sink & 1) == 0)
		goto a;
	if (i < n)
		goto a;                    /* IRREDUCIBLE */
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3;
	nested(n);
	siblings(n);
	calls_inlined(n);
	calls_in_body(n);
	switcher(n);
	irreducible(n, argc > 2);
	printf("%ld\n", (long)sink);
	return 0;
}
