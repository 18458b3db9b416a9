/* SPDX-License-Identifier: MIT */
/* bench/workloads/callheavy.c - deep and frequent calls.
 * usage: callheavy [fib_reps=40] [dispatch_iters=200000000]
 * Phase 1: recursive fib(32), repeated fib_reps times (~7 M calls each).
 * Phase 2: a loop calling one of 8 small functions through a pointer
 *          table, index chosen from data so it cannot be devirtualised. */
#include <stdlib.h>
#include "common.h"

__attribute__((noinline)) long fib(int n)
{
    if (n < 2)
        return n;
    return fib(n - 1) + fib(n - 2);
}

typedef long (*op_fn)(long, long);

__attribute__((noinline)) long op_add(long a, long x) { return a + x; }
__attribute__((noinline)) long op_sub(long a, long x) { return a - (x >> 1); }
__attribute__((noinline)) long op_xor(long a, long x) { return a ^ (x * 2654435761L); }
__attribute__((noinline)) long op_mul(long a, long x) { return a * 31 + x; }
__attribute__((noinline)) long op_rot(long a, long x) { return (long)(((unsigned long)a << 7) | ((unsigned long)a >> 57)) + x; }
__attribute__((noinline)) long op_shr(long a, long x) { return (a >> 3) ^ x; }
__attribute__((noinline)) long op_neg(long a, long x) { return -a + 3 * x; }
__attribute__((noinline)) long op_mix(long a, long x)
{
    unsigned long h = (unsigned long)(a ^ x);
    h ^= h >> 33; h *= 0xff51afd7ed558ccdUL; h ^= h >> 33;
    return (long)h;
}

/* not static/const: keeps the compiler from resolving the calls */
op_fn op_table[8] = { op_add, op_sub, op_xor, op_mul, op_rot, op_shr, op_neg, op_mix };

__attribute__((noinline)) long dispatch_loop(long iters)
{
    long acc = 1;
    for (long i = 0; i < iters; i++)
        acc = op_table[(acc ^ i) & 7](acc, i);
    return acc;
}

__attribute__((noinline)) long fib_phase(int reps)
{
    long s = 0;
    for (int r = 0; r < reps; r++)
        s += fib(32);
    return s;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 40;
    long iters = argc > 2 ? atol(argv[2]) : 200000000L;
    double t0 = now_s();
    long a = fib_phase(reps);
    long b = dispatch_loop(iters);
    printf("callheavy fib=%ld dispatch=%ld\n", a, b);
    report_elapsed(t0);
    return 0;
}
