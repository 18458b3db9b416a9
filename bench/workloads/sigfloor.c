/* SPDX-License-Identifier: MIT */
/* bench/workloads/sigfloor.c - the floor of signal-based sampling, preloaded into a workload:
 * a task-clock perf event at FLOOR_RATE samples/s (default 5000) that, like measure's, raises a
 * synchronous SIGTRAP in the thread at each sample (perf sigtrap, inherited by the threads the
 * program creates), handled by an empty handler: what sampling costs on this machine before a
 * profiler does any work at all.  Built by measure-bench.sh as a shared library.          */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t samples;

static void on_sample(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)info;
	(void)uc;
	samples++;
}

__attribute__((constructor)) static void sigfloor_start(void)
{
	const char *rate = getenv("FLOOR_RATE");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGTRAP, &sa, NULL);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.freq = 1;
	a.sample_freq = rate ? (unsigned long)atol(rate) : 5000;
	a.exclude_kernel = 1;
	a.inherit = 1;
	a.sigtrap = 1;
	a.remove_on_exec = 1; /* required by sigtrap; an exec'd program preloads this again */
	if (syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC) < 0)
		fprintf(stderr, "sigfloor: perf_event_open failed: no floor measured\n");
}
