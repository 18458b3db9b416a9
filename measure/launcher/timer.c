/* SPDX-License-Identifier: MIT */
/*
 * timer.c: the launcher's POSIX timer source (source.h): -e REALTIME, and CPUTIME where perf
 * events cannot be opened (perf.c falls back to it); one timer a thread, so at most one of
 * them.
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "source.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static bool timer_names(const char *name)
{
	struct mevent e;
	fth_format(e.name, sizeof(e.name), "%s", name);
	events_strip_modifiers(&e);
	return events_same_name(e.name, "REALTIME");
}

static int timer_add(struct mconfig *c, const char *name, const char *rate,
		     const struct event_defaults *d, int16_t group, bool leader)
{
	struct mevent *e = events_new(c, name, d, group, leader);
	if (!e)
		return -1;
	events_strip_modifiers(e);
	e->source = MSOURCE_REALTIME;
	fth_format(e->name, sizeof(e->name), "REALTIME");
	e->unit = MFILE_UNIT_NANOSECONDS;
	if (events_timer_rate(e, rate, d) < 0)
		return -1;
	c->nevents++;
	return 0;
}

/* Event I of C is a timer (REALTIME, or CPUTIME fallen back to one): can one be made, and is
 * it the only one? */
static int timer_check(struct mconfig *c, int i)
{
	const struct mevent *e = &c->ev[i];
	for (int k = 0; k < i; k++)
		if (c->ev[k].source == MSOURCE_CPUTIME || c->ev[k].source == MSOURCE_REALTIME)
			return fth_error("use at most one of REALTIME and CPUTIME: two timers in "
					 "one thread disturb each other's measurement");
	timer_t t;
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_NONE;
	clockid_t clk = e->source == MSOURCE_CPUTIME ? CLOCK_THREAD_CPUTIME_ID : CLOCK_REALTIME;
	if (timer_create(clk, &sev, &t) < 0)
		return fth_error_errno(errno, "event %s: cannot create a POSIX timer", e->name);
	timer_delete(t);
	return 0;
}

const struct launcher_source launcher_timer_source = {
	.name = "REALTIME",
	.description = "wall-clock time, per-thread POSIX timer (@microseconds)",
	.names = timer_names,
	.add = timer_add,
	.check = timer_check,
	.samples = true,
};
