/* SPDX-License-Identifier: MIT */
/* bench/workloads/deep.c - a 5000-frame deep recursion that does all of its
 * work at the bottom, so almost every sample has a ~5000-frame call path.
 * usage: deep [depth=5000] [reps=20] [work=4000]                         */
#include <stdlib.h>
#include "common.h"

__attribute__((noinline)) double bottom_work(long n)
{
    double x = 0.5;
    for (long i = 0; i < n * 10000; i++)
        x = x * 0.9999999 + 1e-9 * (double)(i & 7);
    return x;
}

/* the volatile pad and the work after the call keep the recursion a real
 * recursion (no tail call, no loop conversion), ~64-80 bytes per frame */
__attribute__((noinline)) double descend(int depth, long n)
{
    volatile char pad[32];
    pad[0] = (char)depth;
    if (depth <= 1)
        return bottom_work(n);
    double r = descend(depth - 1, n);
    return r + pad[0];
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 5000;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    long work = argc > 3 ? atol(argv[3]) : 4000;
    double t0 = now_s();
    double s = 0;
    for (int r = 0; r < reps; r++)
        s += descend(depth, work);
    printf("deep depth=%d s=%.6f\n", depth, s);
    report_elapsed(t0);
    return 0;
}
