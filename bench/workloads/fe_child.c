/* SPDX-License-Identifier: MIT */
/* bench/workloads/fe_child.c - the "compiler" that forkexec launches.
 * usage: fe_child WORK IDX - about WORK x 1 ms of mixed work.          */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

__attribute__((noinline)) static unsigned long tokenize(int n, int seed)
{
    unsigned long h = (unsigned long)seed * 0x9e3779b97f4a7c15UL + 1;
    for (long i = 0; i < (long)n * 150000; i++) {
        h ^= h << 13; h ^= h >> 7; h ^= h << 17;
    }
    return h;
}

__attribute__((noinline)) static long parse(int depth)
{
    return depth < 2 ? depth : parse(depth - 1) + parse(depth - 2);
}

__attribute__((noinline)) static unsigned long codegen(int n)
{
    size_t sz = 1u << 20;
    unsigned char *buf = malloc(sz);
    unsigned long s = 0;
    for (int r = 0; r < n; r++) {
        memset(buf, r, sz);
        for (size_t i = 0; i < sz; i += 64)
            s += buf[i];
    }
    free(buf);
    return s;
}

int main(int argc, char **argv)
{
    int work = argc > 1 ? atoi(argv[1]) : 100;
    int idx = argc > 2 ? atoi(argv[2]) : 0;
    unsigned long r = tokenize(work, idx);
    long p = 0;
    for (int i = 0; i < work; i++)
        p += parse(20);
    r += codegen(work);
    return (r + (unsigned long)p) == 42 ? 1 : 0;
}
