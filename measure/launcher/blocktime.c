/* SPDX-License-Identifier: MIT */
/*
 * blocktime.c: the launcher's BLOCKTIME source (source.h): -e BLOCKTIME, the time each thread
 * is blocked by the context where it blocked, checked by opening the context-switch event the
 * preloaded library opens in each thread (mconfig_blocktime_attr).  Alone, it also measures
 * the default event for the time threads run.
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "source.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

/* -e BLOCKTIME: the time each thread is blocked, by the context where it blocked. */
static int blocktime_add(struct mconfig *c, const char *name, const char *rate,
			 const struct event_defaults *d, int16_t group, bool leader)
{
	if (rate)
		return fth_error("BLOCKTIME takes no period or rate: it measures every time a thread "
				 "blocks");
	if (group >= 0)
		return fth_error("BLOCKTIME cannot be in a perf group");
	for (int i = 0; i < c->nevents; i++)
		if (c->ev[i].source == MSOURCE_BLOCKTIME)
			return 0; /* -e BLOCKTIME twice is -e BLOCKTIME */
	(void)name, (void)leader;
	struct mevent *e = events_new(c, "BLOCKTIME", d, -1, false);
	if (!e)
		return -1;
	c->nevents++;
	memset(e, 0, sizeof(*e));
	fth_format(e->name, sizeof(e->name), "BLOCKTIME");
	e->source = MSOURCE_BLOCKTIME;
	e->unit = MFILE_UNIT_NANOSECONDS;
	e->group = -1;
	return 0;
}

/* Whether this kernel lets a thread measure its own blocked time (see mconfig_blocktime_attr). */
static int blocktime_check(struct mconfig *c, int i)
{
	(void)c, (void)i;
	struct perf_event_attr a;
	mconfig_blocktime_attr(&a);
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	int err = errno;
	struct utsname u;
	if (uname(&u) < 0)
		snprintf(u.release, sizeof(u.release), "?");
	if (err == EACCES || err == EPERM)
		return fth_error("event BLOCKTIME: not permitted: kernel.perf_event_paranoid is "
				 "%d, and blocked time needs the context-switch event counted in "
				 "kernel mode; run as root or with CAP_PERFMON, or lower it "
				 "(sysctl -w kernel.perf_event_paranoid=1)", events_read_paranoid());
	if (err == EINVAL || err == E2BIG || err == EOPNOTSUPP)
		return fth_error("event BLOCKTIME: this kernel (Linux %s) cannot report "
				 "context switches with a synchronous signal (perf sigtrap and "
				 "context-switch records need Linux 5.13 or later)", u.release);
	if (err == ENOENT || err == ENODEV || err == ENOSYS)
		return fth_error("event BLOCKTIME: perf_events software events are not available "
				 "in this kernel (Linux %s, CONFIG_PERF_EVENTS)", u.release);
	return fth_error_errno(err, "event BLOCKTIME: perf_event_open");
}

const struct launcher_source launcher_blocktime_source = {
	.name = "BLOCKTIME",
	.description = "time each thread is blocked (sleep, I/O, locks; not preemption) by the "
		       "context where it blocked, in ns",
	.add = blocktime_add,
	.check = blocktime_check,
	.needs_samples = true,
};
