/* SPDX-License-Identifier: MIT */
/*
 * timer.c: the POSIX timer source of the preloaded library (REALTIME, and CPUTIME where perf
 * events cannot be opened).  Each thread has one timer, signalling the thread itself
 * (SIGEV_THREAD_ID) with the event's index; a sample is credited with the clock's advance
 * since the thread's previous one.  The kernel checks a CPU-time timer only at its tick, so
 * the log says when CPUTIME took far fewer samples than its threads' CPU time asked for.
 */
#include "compat.h"
#include "source.h"

#include <errno.h>
#include <string.h>

struct timer_thread {
	timer_t timer;
	bool has_timer;
	uint64_t last; /* the clock at the previous sample */
};

static struct timer_thread *state_of(const struct mthread *t, int i)
{
	return rt_source_state(t, rt.cfg.ev[i].source);
}

/* A POSIX CPUTIME timer's samples, and those the threads' CPU time asked for. */
static _Atomic uint64_t cputime_samples, cputime_expected;

static uint64_t clock_now(const struct mevent *e)
{
	return e->source == MSOURCE_CPUTIME ? rt_thread_cpu_ns(0) : rt_monotonic_ns();
}

static int timer_thread_start(struct mthread *t, int i)
{
	const struct mevent *e = &rt.cfg.ev[i];
	struct timer_thread *s = state_of(t, i);
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = rt.signo;
	sev.sigev_value.sival_int = i;
	sev._sigev_un._tid = t->tid;
	clockid_t clk = e->source == MSOURCE_CPUTIME ? CLOCK_THREAD_CPUTIME_ID : CLOCK_REALTIME;
	if (timer_create(clk, &sev, &s->timer) < 0)
		return fth_error_errno(errno, "%s: timer_create", e->name);
	s->has_timer = true;
	s->last = clock_now(e);
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(e->rate / 1000000);
	its.it_interval.tv_nsec = (long)(e->rate % 1000000) * 1000;
	its.it_value = its.it_interval;
	if (timer_settime(s->timer, 0, &its, NULL) < 0)
		return fth_error_errno(errno, "%s: timer_settime", e->name);
	return 0;
}

static void timer_thread_quiet(struct mthread *t)
{
	for (int i = 0; i < rt.cfg.nevents; i++) {
		if (rt_source_of(i) != &rt_timer_source)
			continue;
		struct timer_thread *s = state_of(t, i);
		if (s->has_timer) {
			timer_delete(s->timer);
			s->has_timer = false;
		}
		return; /* one timer a thread */
	}
}

static int timer_signalled(const struct mthread *t, const siginfo_t *info)
{
	(void)t;
	return info->si_code == SI_TIMER ? info->si_value.sival_int : -1;
}

static void timer_sample(struct mthread *t, int i, void *uc)
{
	if (!rt_sample_claim(t))
		return;
	bool complete;
	uint32_t n;
	uint32_t leaf = rt_sample_path(t, uc, 0, &complete, &n);
	struct timer_thread *s = state_of(t, i);
	uint64_t now = clock_now(&rt.cfg.ev[i]);
	if (leaf != UINT32_MAX && now > s->last)
		cct_add(&t->cct, leaf, (unsigned)i, now - s->last);
	s->last = now;
	t->samples[i]++;
	rt_sample_recorded(t, leaf, complete, n, true);
	t->busy = 0;
}

static void timer_thread_written(const struct mthread *t)
{
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (rt.cfg.ev[i].source == MSOURCE_CPUTIME && rt.cfg.ev[i].rate) {
			cputime_samples += t->samples[i];
			cputime_expected += t->cpu_ns / (rt.cfg.ev[i].rate * 1000);
		}
}

/* A POSIX CPU-time timer is checked at the kernel tick only: say when that cost most of the
 * samples (see measure(1), CPUTIME). */
static void timer_process_summary(void)
{
	if (cputime_expected >= 20 && cputime_samples < cputime_expected / 2)
		rt_log("warning: CPUTIME took %llu samples where its threads' CPU time asked for "
		       "%llu: the kernel checks a POSIX CPU-time timer only at its tick, and these "
		       "threads ran in shorter slices (a busy machine?); each sample carries the "
		       "CPU time since the one before, so shares are noisier",
		       (unsigned long long)cputime_samples, (unsigned long long)cputime_expected);
	cputime_samples = cputime_expected = 0;
}

static void timer_describe(const struct mevent *e, struct mfile_metric *x, char *desc,
			   size_t size)
{
	(void)x;
	if (e->source == MSOURCE_CPUTIME)
		fth_format(desc, size, "CPU time, per-thread POSIX timer every %llu us (checked at "
				       "the kernel tick)", (unsigned long long)e->rate);
	else
		fth_format(desc, size, "wall-clock time, per-thread POSIX timer every %llu us",
			   (unsigned long long)e->rate);
}

const struct rt_source rt_timer_source = {
	.name = "timer",
	.thread_bytes = sizeof(struct timer_thread),
	.process_summary = timer_process_summary,
	.thread_start = timer_thread_start,
	.thread_quiet = timer_thread_quiet,
	.thread_written = timer_thread_written,
	.signalled = timer_signalled,
	.sample = timer_sample,
	.describe = timer_describe,
};
