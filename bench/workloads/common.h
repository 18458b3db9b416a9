/* SPDX-License-Identifier: MIT */
/* bench/workloads/common.h - tiny helpers shared by the benchmark programs. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H
#include <stdio.h>
#include <time.h>
#include <sys/resource.h>

static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline double tv_s(struct timeval t)
{
    return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

/* Every program reports its own wall time and its own CPU time (all
 * threads plus waited-for children; user+sys is the exact scheduler
 * runtime, which on this kernel also contains the hard-irq time of perf's
 * sample handler) on stderr.  The driver uses them to separate in-process
 * slowdown from tool start-up/tear-down cost and from CPU stolen by other
 * processes on the machine.  maxrss_kb is this process's peak resident set
 * so far (bench/measure-bench.sh uses it for the memory that measure adds). */
static inline void report_elapsed(double t0)
{
    struct rusage self, kids;
    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    fprintf(stderr, "elapsed_s=%.6f\ncpu_s=%.6f\nmaxrss_kb=%ld\n", now_s() - t0,
            tv_s(self.ru_utime) + tv_s(self.ru_stime) +
            tv_s(kids.ru_utime) + tv_s(kids.ru_stime), self.ru_maxrss);
}
#endif
