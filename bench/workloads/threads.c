/* SPDX-License-Identifier: MIT */
/* bench/workloads/threads.c - T pthreads, each with its own mix of work.
 * usage: threads T [total_units=400]
 * total_units of work are split evenly between the T threads; thread i
 * divides its share over four kernels with weights that depend on i, so
 * every thread has a different profile (float / integer / memory / calls). */
#include <pthread.h>
#include <stdlib.h>
#include <math.h>
#include "common.h"

#define MEM_BYTES (8u << 20)

__attribute__((noinline)) double work_float(long n)
{
    double x = 1.0, y = 0.5;
    for (long i = 0; i < n * 20000; i++) {
        x = sqrt(x * 1.000001 + y);
        y = y * 0.999999 + 1e-7;
    }
    return x + y;
}

__attribute__((noinline)) unsigned long work_int(long n)
{
    unsigned long h = 0x9e3779b97f4a7c15UL;
    for (long i = 0; i < n * 40000; i++) {
        h ^= h << 13; h ^= h >> 7; h ^= h << 17;
        h += (unsigned long)i;
    }
    return h;
}

__attribute__((noinline)) unsigned long work_mem(long n, unsigned *buf)
{
    unsigned long s = 0;
    size_t words = MEM_BYTES / sizeof(unsigned);
    size_t idx = 0;
    for (long i = 0; i < n * 20000; i++) {
        idx = (idx + 4099u * 16u) % words; /* stride ~256 KB: cache-missy */
        s += buf[idx];
        buf[idx] = (unsigned)s;
    }
    return s;
}

__attribute__((noinline)) long rec(int n)
{
    return n < 2 ? n : rec(n - 1) + rec(n - 2);
}

__attribute__((noinline)) long work_calls(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += rec(17);
    return s;
}

struct targ { int id; long units; double result; };

static const int mix[8][4] = { /* weights float,int,mem,calls per thread id */
    { 8, 1, 0, 1 }, { 0, 2, 7, 1 }, { 1, 8, 1, 0 }, { 0, 0, 2, 8 },
    { 5, 5, 0, 0 }, { 0, 0, 5, 5 }, { 3, 0, 4, 3 }, { 2, 6, 0, 2 },
};

void *worker(void *p)
{
    struct targ *a = p;
    const int *w = mix[a->id % 8];
    int wsum = w[0] + w[1] + w[2] + w[3];
    unsigned *buf = calloc(MEM_BYTES / sizeof(unsigned), sizeof(unsigned));
    double r = 0;
    r += work_float(a->units * w[0] / wsum);
    r += (double)work_int(a->units * w[1] / wsum);
    r += (double)work_mem(a->units * w[2] / wsum, buf);
    r += (double)work_calls(a->units * w[3] / wsum);
    free(buf);
    a->result = r;
    return NULL;
}

int main(int argc, char **argv)
{
    int nt = argc > 1 ? atoi(argv[1]) : 2;
    long total = argc > 2 ? atol(argv[2]) : 400;
    if (nt < 1 || nt > 64)
        return 1;
    double t0 = now_s();
    pthread_t th[64];
    struct targ args[64];
    for (int i = 0; i < nt; i++) {
        args[i].id = i;
        args[i].units = total * 100 / nt;
        pthread_create(&th[i], NULL, worker, &args[i]);
    }
    double s = 0;
    for (int i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        s += args[i].result;
    }
    printf("threads nt=%d result=%.3e\n", nt, s);
    report_elapsed(t0);
    return 0;
}
