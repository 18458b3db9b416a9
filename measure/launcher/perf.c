/* SPDX-License-Identifier: MIT */
/*
 * perf.c: the launcher's perf_events source (source.h): the names no other source takes,
 * resolved in this order: CPUTIME (the task clock), perf's generic software and hardware
 * names, raw rHEX, then libpfm4; the topdown events, collected as -e names them and planned
 * into perf groups and TMA nodes (tma.h) once every -e is known; each group opened once to
 * check it counts here; -L's perf names.  Every refusal says why, specifically.
 */
#include "compat.h"
#include "events.h"
#include "source.h"
#include "buf.h"
#include "error.h"
#include "mfile.h"
#include "tma.h"
#include "formula.h"
#include "xalloc.h"

#include <ctype.h>
#include <math.h>
#include <signal.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

struct builtin {
	const char *name;
	uint32_t type;
	uint64_t config;
	uint8_t unit;
	const char *description;
};

#define SW PERF_TYPE_SOFTWARE
#define HW PERF_TYPE_HARDWARE
#define NS MFILE_UNIT_NANOSECONDS
#define CNT MFILE_UNIT_COUNT
static const struct builtin builtins[] = {
	{ "cpu-clock", SW, PERF_COUNT_SW_CPU_CLOCK, NS, "CPU time, perf's high-resolution per-thread clock" },
	{ "task-clock", SW, PERF_COUNT_SW_TASK_CLOCK, NS, "task time, perf's high-resolution per-thread clock" },
	{ "page-faults", SW, PERF_COUNT_SW_PAGE_FAULTS, CNT, "page faults" },
	{ "faults", SW, PERF_COUNT_SW_PAGE_FAULTS, CNT, "page faults (alias of page-faults)" },
	{ "minor-faults", SW, PERF_COUNT_SW_PAGE_FAULTS_MIN, CNT, "minor page faults (no I/O)" },
	{ "major-faults", SW, PERF_COUNT_SW_PAGE_FAULTS_MAJ, CNT, "major page faults (I/O)" },
	{ "context-switches", SW, PERF_COUNT_SW_CONTEXT_SWITCHES, CNT, "context switches" },
	{ "cs", SW, PERF_COUNT_SW_CONTEXT_SWITCHES, CNT, "context switches (alias)" },
	{ "cpu-migrations", SW, PERF_COUNT_SW_CPU_MIGRATIONS, CNT, "migrations to another CPU" },
	{ "migrations", SW, PERF_COUNT_SW_CPU_MIGRATIONS, CNT, "migrations (alias)" },
	{ "alignment-faults", SW, PERF_COUNT_SW_ALIGNMENT_FAULTS, CNT, "alignment faults" },
	{ "emulation-faults", SW, PERF_COUNT_SW_EMULATION_FAULTS, CNT, "emulation faults" },
	{ "CYCLES", HW, PERF_COUNT_HW_CPU_CYCLES, CNT, "CPU cycles" },
	{ "cpu-cycles", HW, PERF_COUNT_HW_CPU_CYCLES, CNT, "CPU cycles (alias)" },
	{ "INSTRUCTIONS", HW, PERF_COUNT_HW_INSTRUCTIONS, CNT, "instructions retired" },
	{ "CACHE-REFERENCES", HW, PERF_COUNT_HW_CACHE_REFERENCES, CNT, "last-level cache references" },
	{ "CACHE-MISSES", HW, PERF_COUNT_HW_CACHE_MISSES, CNT, "last-level cache misses" },
	{ "BRANCHES", HW, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, CNT, "branch instructions retired" },
	{ "BRANCH-INSTRUCTIONS", HW, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, CNT, "branch instructions (alias)" },
	{ "BRANCH-MISSES", HW, PERF_COUNT_HW_BRANCH_MISSES, CNT, "mispredicted branches" },
	{ "BUS-CYCLES", HW, PERF_COUNT_HW_BUS_CYCLES, CNT, "bus cycles" },
	{ "REF-CYCLES", HW, PERF_COUNT_HW_REF_CPU_CYCLES, CNT, "reference cycles (constant rate)" },
	{ "STALLED-CYCLES-FRONTEND", HW, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, CNT, "cycles the front end stalled" },
	{ "STALLED-CYCLES-BACKEND", HW, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, CNT, "cycles the back end stalled" },
};



/*
 * libpfm4 starts on first need: its start reads every tracepoint's files when debugfs is
 * mounted (thousands of files, tens of milliseconds at each launch), which the built-in names
 * (the timers, task-clock, CYCLES...) never need.
 */
static enum { PFM_UNTRIED, PFM_READY, PFM_FAILED } pfm_state;
static char pfm_failure[160];

static bool pfm_ready(void)
{
	if (pfm_state == PFM_UNTRIED) {
		int rc = pfm_initialize();
		pfm_state = rc == PFM_SUCCESS ? PFM_READY : PFM_FAILED;
		if (rc != PFM_SUCCESS)
			fth_format(pfm_failure, sizeof(pfm_failure), "libpfm4 cannot start: %s",
				   pfm_strerror(rc));
	}
	return pfm_state == PFM_READY;
}

static long perf_open(struct perf_event_attr *a, int group_fd)
{
	return syscall(SYS_perf_event_open, a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

static bool is_virtual_machine(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[4096];
	bool vm = false;
	while (f && !vm && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5) && strstr(line, " hypervisor"))
			vm = true;
	if (f)
		fclose(f);
	return vm;
}

static bool has_core_pmu(void)
{
	return access("/sys/bus/event_source/devices/cpu", F_OK) == 0 ||
	       access("/sys/bus/event_source/devices/cpu_core", F_OK) == 0;
}

/* Levenshtein distance, case-insensitive, capped at 99. */
static int distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 80 || m > 80)
		return 99;
	int row[81];
	for (size_t j = 0; j <= m; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= n; i++) {
		int prev = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= m; j++) {
			int cur = row[j];
			int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			int best = prev + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[m] > 99 ? 99 : row[m];
}

struct suggestion {
	char name[MCONFIG_NAME_MAX];
	int dist;
};

static void consider(struct suggestion *best, int nbest, const char *want, const char *name)
{
	int d = distance(want, name);
	/* A name that contains what was typed is a good match too. */
	if (strlen(want) >= 3 && strcasestr(name, want))
		d = d < 3 ? d : 3;
	/* Names are matched regardless of case: TASK-CLOCK would only repeat task-clock. */
	for (int i = 0; i < nbest; i++)
		if (!strcasecmp(best[i].name, name))
			return;
	for (int i = 0; i < nbest; i++) {
		if (d < best[i].dist) {
			memmove(&best[i + 1], &best[i], sizeof(*best) * (size_t)(nbest - i - 1));
			fth_format(best[i].name, sizeof(best[i].name), "%s", name);
			best[i].dist = d;
			return;
		}
	}
}

/* Call FN for every event of every PMU present (libpfm4), with "pmu::event" and its info. */
static void for_each_pfm_event(void (*fn)(void *ctx, const char *full, const pfm_event_info_t *),
			       void *ctx)
{
	if (!pfm_ready())
		return;
	for (int p = 0; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pinfo;
		memset(&pinfo, 0, sizeof(pinfo));
		pinfo.size = sizeof(pinfo);
		if (pfm_get_pmu_info((pfm_pmu_t)p, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		for (int e = pinfo.first_event; e != -1; e = pfm_get_event_next(e)) {
			pfm_event_info_t info;
			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm_get_event_info(e, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
				continue;
			char full[MCONFIG_NAME_MAX];
			fth_format(full, sizeof(full), "%s::%s", pinfo.name, info.name);
			fn(ctx, full, &info);
		}
	}
}

struct suggest_ctx {
	struct suggestion *best;
	int nbest;
	const char *want;
};

static void suggest_pfm(void *ctx, const char *full, const pfm_event_info_t *info)
{
	struct suggest_ctx *s = ctx;
	consider(s->best, s->nbest, s->want, full);
	consider(s->best, s->nbest, s->want, info->name);
}

static void suggest_name(void *ctx, const char *name, const char *description)
{
	(void)description;
	struct suggest_ctx *s = ctx;
	if (name)
		consider(s->best, s->nbest, s->want, name);
}

static int unknown_event(const char *name)
{
	struct suggestion best[3];
	for (int i = 0; i < 3; i++) {
		best[i].name[0] = '\0';
		best[i].dist = 100;
	}
	/* The other sources' names first, then perf's own. */
	struct suggest_ctx ctx = { best, 3, name };
	int n;
	const struct launcher_source *const *src = launcher_sources(&n);
	for (int k = 0; k < n; k++)
		if (src[k] != &launcher_perf_source)
			launcher_source_list(src[k], suggest_name, &ctx);
	consider(best, 3, name, "CPUTIME");
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		consider(best, 3, name, builtins[i].name);
	for_each_pfm_event(suggest_pfm, &ctx);
	char list[400] = "";
	size_t pos = 0;
	for (int i = 0; i < 3 && best[i].dist < 100; i++)
		pos += fth_format(list + pos, sizeof(list) - FTH_MIN(pos, sizeof(list) - 1), "%s%s",
				  i ? ", " : "", best[i].name);
	return fth_error("unknown event \"%s\"; closest known: %s (measure -L lists them all)", name,
			 list[0] ? list : "none");
}

/* Resolve E->name into a perf encoding. */
static int resolve(struct mevent *e)
{
	if (events_same_name(e->name, "CPUTIME")) {
		/* The kernel's task clock, sampled in the thread's CPU time: events_check() falls
		 * back to a POSIX CPU-time timer where perf events cannot be opened. */
		e->source = MSOURCE_PERF;
		e->type = PERF_TYPE_SOFTWARE;
		e->config = PERF_COUNT_SW_TASK_CLOCK;
		fth_format(e->name, sizeof(e->name), "CPUTIME");
		e->unit = MFILE_UNIT_NANOSECONDS;
		return 0;
	}
	e->source = MSOURCE_PERF;
	e->unit = MFILE_UNIT_COUNT;
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++) {
		if (events_same_name(e->name, builtins[i].name)) {
			e->type = builtins[i].type;
			e->config = builtins[i].config;
			e->unit = builtins[i].unit;
			return 0;
		}
	}
	const char *n = e->name;
	if ((n[0] == 'r' || n[0] == 'R') && n[1] && strspn(n + 1, "0123456789abcdefABCDEF") ==
							    strlen(n + 1)) {
		e->type = PERF_TYPE_RAW;
		e->config = strtoull(n + 1, NULL, 16);
		return 0;
	}
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	pfm_perf_encode_arg_t arg;
	memset(&arg, 0, sizeof(arg));
	arg.attr = &attr;
	arg.size = sizeof(arg);
	if (!pfm_ready())
		return fth_error("event \"%s\" is not a built-in name, and %s (measure -L lists the "
				 "built-in names)", n, pfm_failure);
	int rc = pfm_get_os_event_encoding(n, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (rc == PFM_ERR_NOTFOUND || rc == PFM_ERR_NOINIT)
		return unknown_event(n);
	if (rc != PFM_SUCCESS)
		return fth_error("event \"%s\": %s", n, pfm_strerror(rc));
	e->type = attr.type;
	e->config = attr.config;
	e->config1 = attr.config1;
	e->config2 = attr.config2;
	if (attr.type == PERF_TYPE_SOFTWARE && (attr.config == PERF_COUNT_SW_CPU_CLOCK ||
						attr.config == PERF_COUNT_SW_TASK_CLOCK))
		e->unit = MFILE_UNIT_NANOSECONDS;
	if (attr.exclude_kernel)
		e->exclude_kernel = true;
	return 0;
}

/* A topdown event: remember what was asked for; events_check() plans it. */
static int add_topdown(struct mconfig *c, const char *name, unsigned subtrees, const char *rate,
		       const struct event_defaults *d)
{
	uint64_t r = d->rate;
	bool freq = d->freq;
	if (rate && events_parse_rate(rate, &r, &freq) < 0)
		return fth_error_prefix("event %s", name);
	if (freq) {
		uint64_t max = events_max_frequency();
		if (max && r >= max) {
			if (rate)
				return fth_error("event %s: frequency %llu is not below the kernel's "
						 "limit kernel.perf_event_max_sample_rate=%llu", name,
						 (unsigned long long)r, (unsigned long long)max);
			r = max - 1;
		}
	}
	if (c->tma_req.planned)
		return fth_error("event %s: the topdown events are already planned", name);
	for (unsigned i = 0; i < 4; i++) {
		if (!(subtrees & (1u << i)) || (c->tma_req.subtrees & (1u << i)))
			continue; /* the first -e that asks for a subtree sets its rate */
		c->tma_req.subtrees |= 1u << i;
		c->tma_req.rate[i] = r;
		c->tma_req.freq[i] = freq;
	}
	if (!d->kernel_allowed)
		c->tma_req.exclude_kernel = true;
	return 0;
}

/* A sentence saying why EVENT could not be opened (errno ERR). */
static int open_failure(const struct mevent *e, int err)
{
	bool hardware = e->type == PERF_TYPE_HARDWARE || e->type == PERF_TYPE_RAW ||
			e->type == PERF_TYPE_HW_CACHE || e->type >= PERF_TYPE_MAX;
	if (err == EACCES || err == EPERM) {
		int paranoid = events_read_paranoid();
		return fth_error("event %s: not permitted: kernel.perf_event_paranoid is %d; run as "
				 "root, or lower it (sysctl -w kernel.perf_event_paranoid=%d)%s",
				 e->name, paranoid, e->exclude_kernel ? 2 : 1,
				 e->exclude_kernel ? "" : ", or count user space only (NAME:u)");
	}
	if (hardware && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL) &&
	    !has_core_pmu()) {
		return fth_error("event %s: hardware counters are not available: this machine has "
				 "no hardware PMU%s; use a software event (task-clock, cpu-clock) "
				 "or a timer (CPUTIME, REALTIME)", e->name,
				 is_virtual_machine() ? " (it is a virtual machine without PMU "
							"passthrough)" : "");
	}
	if (err == EINVAL && e->precise)
		return fth_error("event %s: precise level :%.*s is not supported by this processor",
				 e->name, e->precise, "ppp");
	if (err == EINVAL && e->freq)
		return fth_error("event %s: frequency %llu refused by the kernel (limit "
				 "kernel.perf_event_max_sample_rate=%llu)", e->name,
				 (unsigned long long)e->rate,
				 (unsigned long long)events_max_frequency());
	if (err == EMFILE)
		return fth_error("event %s: too many open files (raise ulimit -n)", e->name);
	if (err == ENOENT || err == EOPNOTSUPP)
		return fth_error("event %s: this machine's processor or kernel cannot count it",
				 e->name);
	return fth_error_errno(err, "event %s: perf_event_open failed", e->name);
}

static void busy_wait_ms(int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	volatile unsigned long spin = 0;
	do {
		for (int i = 0; i < 10000; i++)
			spin++;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ms * 1000000L);
}

/*
 * Open event E (in the group of GROUP_FD, or leading one when it is -1); where kernel counting
 * is not allowed, count user space only (said later, in the metric's flags).  Returns the
 * descriptor, or -1 with errno (E then says whether user space alone was tried).
 */
static long open_event(struct mevent *e, int group_fd)
{
	struct perf_event_attr a;
	mconfig_perf_attr(e, &a, group_fd < 0);
	long fd = perf_open(&a, group_fd);
	if (fd < 0 && (errno == EACCES || errno == EPERM) && !e->exclude_kernel) {
		e->exclude_kernel = true;
		mconfig_perf_attr(e, &a, group_fd < 0);
		fd = perf_open(&a, group_fd);
	}
	return fd;
}

/* Open every event of group G (or the single event I when G < 0) and check it is scheduled. */
static int check_group(struct mconfig *c, int first)
{
	int fds[MCONFIG_MAX_EVENTS];
	int n = 0, rc = 0;
	int16_t g = c->ev[first].group;
	for (int i = first; i < c->nevents && rc == 0; i++) {
		struct mevent *e = &c->ev[i];
		if (e->source != MSOURCE_PERF || (i != first && (g < 0 || e->group != g)))
			continue;
		long fd = open_event(e, n ? fds[0] : -1);
		if (fd < 0) {
			rc = open_failure(e, errno);
			break;
		}
		fds[n++] = (int)fd;
		if (g < 0)
			break;
	}
	if (rc == 0 && n > 1) {
		/* A group that cannot be scheduled at once never counts: time_running stays 0. */
		ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
		busy_wait_ms(5);
		ioctl(fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
		uint64_t v[3 + MCONFIG_MAX_EVENTS] = { 0, 0, 0 };
		if (read(fds[0], v, sizeof(v)) >= (ssize_t)(3 * sizeof(v[0])) && v[1] > 0 &&
		    v[2] == 0)
			rc = fth_error("event group led by %s: its %d events do not fit in the "
				       "hardware counters at once (counters exhausted); split it",
				       c->ev[first].name, n);
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return rc;
}

/* ---- topdown ---- */

static struct tma_plan plan; /* the launcher plans once; large, so not on the stack */
static uint32_t tma_base;    /* where the plan's events start among the metrics */

static uint32_t add_tma_base(void *ctx, uint32_t k)
{
	(void)ctx;
	return k + tma_base;
}
static struct buf tma_notes = BUF_INIT;
static struct buf timer_notes = BUF_INIT; /* what a timer source costs here */

static const char *topdown_names(unsigned subtrees)
{
	static char names[80];
	names[0] = '\0';
	size_t pos = 0;
	static const char *const n[] = { "topdown", "topdown:retiring", "topdown:frontend",
					 "topdown:backend" };
	if ((subtrees & TMA_SUB_ALL) == TMA_SUB_ALL && !(subtrees & TMA_SUB_BASE))
		return "topdown:all";
	for (unsigned i = 0; i < 4; i++)
		if (subtrees & (1u << i))
			pos += fth_format(names + pos, sizeof(names) - pos, "%s%s", pos ? "+" : "",
					  n[i]);
	return names;
}

/* Can this machine count top-down events?  -1 with the reason and what would help. */
static int tma_usable(const char *ev, struct tma_machine *m)
{
	if (!has_core_pmu()) {
		bool vm = is_virtual_machine();
		return fth_error("event %s: no PMU: hardware performance counters are not available "
				 "here (the kernel lists no 'cpu' PMU in /sys/bus/event_source/"
				 "devices)%s, so top-down cannot be measured on this %s%s: %s", ev,
				 vm ? "; CPU flag 'hypervisor' is set: this is a virtual machine "
				      "without PMU virtualization" : "",
				 m->cpu ? m->cpu->product : m->description,
				 m->cpu ? "" : " (a CPU that topdown does not support either)",
				 vm ? "enable PMU virtualization for the virtual machine (KVM/QEMU: "
				      "-cpu host with the PMU on; in a cloud, an instance type with "
				      "PMU access) or run on bare metal"
				    : "load the processor's perf driver or run on a machine whose "
				      "kernel supports its PMU");
	}
	if (!m->cpu)
		return fth_error("event %s: unsupported CPU: %s; top-down supports %s (%s=MODEL "
				 "forces a model, e.g. for measure --plan)", ev, m->description,
				 tma_cpu_names(), TMA_ENV_CPU);
	struct perf_event_attr a;
	mconfig_probe_attr(&a, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES);
	long fd = perf_open(&a, -1);
	if (fd < 0) {
		int err = errno;
		if (err == EACCES || err == EPERM)
			return fth_error("event %s: not permitted: kernel.perf_event_paranoid is %d; "
					 "top-down counts this program's own events, which needs it at "
					 "2 or below (sysctl -w kernel.perf_event_paranoid=2), or "
					 "CAP_PERFMON, or root", ev, events_read_paranoid());
		if (err == ENOENT || err == ENODEV || err == EOPNOTSUPP)
			return fth_error("event %s: no PMU: the kernel has no hardware cycle counter "
					 "here%s; run on bare metal or enable PMU virtualization", ev,
					 is_virtual_machine() ? " (a virtual machine)" : "");
		return fth_error_errno(err, "event %s: cannot open a hardware counter", ev);
	}
	close((int)fd);
	if (m->cpu->vendor == TMA_INTEL && !m->forced) {
		const char *dir = access("/sys/bus/event_source/devices/cpu/events", F_OK) == 0
					  ? "/sys/bus/event_source/devices/cpu/events"
					  : "/sys/bus/event_source/devices/cpu_core/events";
		char path[160];
		fth_format(path, sizeof(path), "%s/slots", dir);
		if (access(path, F_OK) < 0)
			return fth_error("event %s: no PERF_METRICS: the kernel exposes no slots event "
					 "(%s), so the top-down metrics of this %s cannot be read; a "
					 "hypervisor that hides PERF_METRICS, or an older kernel: run on "
					 "bare metal or a newer kernel", ev, path, m->cpu->product);
		fth_format(path, sizeof(path), "%s/topdown-heavy-ops", dir);
		if (m->cpu->metrics == 8 && access(path, F_OK) < 0)
			m->budget.metrics = 4; /* this kernel knows level 1 only */
	}
	return 0;
}

/*
 * The kernel's own encoding of the Intel core PMU's event NAME ("event=0x00,umask=0x80" in
 * sysfs) and the PMU's type, when it publishes them; 0 otherwise.
 */
static int sysfs_encoding(const char *name, uint64_t *config, uint32_t *type)
{
	static const char *const pmus[] = { "cpu", "cpu_core" };
	for (size_t i = 0; i < ARRAY_SIZE(pmus); i++) {
		char path[160];
		fth_format(path, sizeof(path), "/sys/bus/event_source/devices/%s/events/%s",
			   pmus[i], name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned ev = 0, umask = 0;
		int n = fscanf(f, "event=%x,umask=%x", &ev, &umask);
		fclose(f);
		fth_format(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmus[i]);
		f = fopen(path, "r");
		unsigned t = 0;
		if (f) {
			if (fscanf(f, "%u", &t) != 1)
				t = 0;
			fclose(f);
		}
		if (n == 2 && t) {
			*config = ev | (uint64_t)umask << 8;
			*type = t;
			return 1;
		}
	}
	return 0;
}

/*
 * Plan the topdown events of C into perf groups and TMA nodes appended to C (once).  With
 * OUT (measure --plan) the plan is printed and this machine's PMU is not consulted.
 */
static int tma_finalize(struct mconfig *c, struct buf *out)
{
	if (!c->tma_req.subtrees || c->tma_req.planned)
		return 0;
	const char *ev = topdown_names(c->tma_req.subtrees);
	struct tma_machine m;
	if (tma_identify(&m) < 0)
		return -1;
	if (out && !m.cpu)
		return fth_error("event %s: unsupported CPU: %s; top-down supports %s (%s=MODEL "
				 "forces one)", ev, m.description, tma_cpu_names(), TMA_ENV_CPU);
	if (!out && tma_usable(ev, &m) < 0)
		return -1;
	struct tma_request req;
	memset(&req, 0, sizeof(req));
	req.subtrees = c->tma_req.subtrees;
	memcpy(req.rate, c->tma_req.rate, sizeof(req.rate));
	memcpy(req.freq, c->tma_req.freq, sizeof(req.freq));
	/* The kernel part is counted only when allowed; every event of a group says the same. */
	req.exclude_kernel = c->tma_req.exclude_kernel || (events_read_paranoid() >= 2 && geteuid() != 0);
	if (tma_plan(m.cpu, &req, &m.budget, &plan) < 0)
		return fth_error_prefix("event %s", ev);
	/* The slots and metric events as this kernel encodes them (its sysfs events/ strings). */
	for (int i = 0; !out && !m.forced && i < plan.nevents; i++) {
		struct tma_event *te = &plan.ev[i];
		uint64_t config;
		uint32_t type;
		if ((te->role == TMA_ROLE_SLOTS || te->role == TMA_ROLE_METRIC) &&
		    sysfs_encoding(te->event, &config, &type)) {
			te->config = config;
			te->type = type;
		} else if (m.cpu->vendor == TMA_INTEL && sysfs_encoding("slots", &config, &type)) {
			te->type = type; /* the core PMU's type (PERF_TYPE_RAW unless hybrid) */
		}
	}
	if (c->nevents + plan.nevents > MCONFIG_MAX_EVENTS)
		return fth_error("event %s: %d counters with the other events: more than %d", ev,
				 c->nevents + plan.nevents, MCONFIG_MAX_EVENTS);
	int16_t group0 = 0;
	for (int i = 0; i < c->nevents; i++)
		if (c->ev[i].group >= group0)
			group0 = (int16_t)(c->ev[i].group + 1);
	int base = c->nevents;
	for (int i = 0; i < plan.nevents; i++) {
		const struct tma_event *te = &plan.ev[i];
		struct mevent *e = &c->ev[c->nevents++];
		memset(e, 0, sizeof(*e));
		fth_format(e->name, sizeof(e->name), "%s", te->name);
		e->source = MSOURCE_PERF;
		e->unit = MFILE_UNIT_COUNT;
		e->sampling = te->sampling;
		e->exclude_kernel = te->exclude_kernel;
		e->group = (int16_t)(group0 + te->group);
		e->type = te->type;
		e->config = te->config;
		e->config1 = te->config1;
		e->rate = te->rate;
		e->freq = te->freq;
		e->tma_role = te->role;
	}
	/* Node J becomes metric nevents + J = base + plan.nevents + J: every $K moves by BASE. */
	tma_base = (uint32_t)base;
	for (int j = 0; j < plan.nnodes; j++) {
		const struct tma_node *n = &plan.node[j];
		char formula[TMA_FORMULA_MAX + 200];
		if (formula_relocate(n->formula, add_tma_base, NULL, formula, sizeof(formula)) < 0 ||
		    mconfig_add_tma(c, n->name, n->parent < 0 ? -1 : base + plan.nevents + n->parent,
				    isnan(n->threshold) ? -1 : (int32_t)lround(n->threshold * 1e6),
				    n->level, n->of_cycles, formula, n->description) < 0)
			return fth_error_prefix("event %s", ev);
	}
	c->tma_req.planned = true;
	buf_reset(&tma_notes);
	if (out) {
		buf_printf(out, "CPU: %s; counters %s\n", m.description,
			   m.budget_from_cpuid ? "from CPUID" : "from the model table");
		tma_plan_print(&plan, out);
	}
	for (const char *s = plan.notes; *s;) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		buf_printf(&tma_notes, "measure: %s: %.*s\n", ev, (int)len, s);
		s += len + (nl != NULL);
	}
	return 0;
}

int events_plan(struct mconfig *c, struct buf *out)
{
	if (!c->tma_req.subtrees) {
		buf_addstr(out, "no topdown event: nothing to plan\n");
		return 0;
	}
	if (tma_finalize(c, out) < 0)
		return -1;
	buf_printf(out, "metric table: %d counters, then %d TMA nodes\n", c->nevents, c->ntma);
	for (int j = 0; j < c->ntma; j++)
		buf_printf(out, "  [%d] %s = %s\n", c->nevents + j, c->tma[j].name,
			   c->tma_text + c->tma[j].formula);
	return 0;
}

/*
 * CPUTIME counts the task clock where perf events can be opened.  Elsewhere (a perf_event
 * paranoia level or a seccomp filter that forbids them) it falls back to a POSIX CPU-time
 * timer, which the kernel checks only at its tick while the thread runs: say what that costs.
 */
static int check_cputime(struct mconfig *c, int i)
{
	struct mevent *e = &c->ev[i];
	long fd = open_event(e, -1);
	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	int err = errno;
	e->source = MSOURCE_CPUTIME;
	e->type = 0;
	e->config = 0;
	e->exclude_kernel = false;
	e->rate /= 1000; /* back to microseconds */
	if (launcher_source_of(MSOURCE_CPUTIME)->check(c, i) < 0)
		return -1;
	buf_printf(&timer_notes, "measure: CPUTIME: perf events cannot be opened here (%s), so a "
				 "POSIX CPU-time timer samples instead.  The kernel checks it only at "
				 "its tick, while the thread runs: a thread that runs in slices "
				 "shorter than a tick (on a busy machine) is sampled less often than "
				 "asked, and each sample carries all the CPU time since the one "
				 "before, so shares come out noisier\n", strerror(err));
	return 0;
}

/* The builtin name that EVENT (a resolved libpfm4 name) counts the same as, or NULL. */
static const char *same_builtin(const struct mevent *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		if (e->type == builtins[i].type && e->config == builtins[i].config &&
		    e->config1 == 0)
			return builtins[i].name;
	return NULL;
}

struct list_pfm_ctx {
	source_show_fn *show;
	void *ctx;
};

static void list_pfm(void *ctx, const char *full, const pfm_event_info_t *info)
{
	const struct list_pfm_ctx *lc = ctx;
	char desc[120];
	fth_format(desc, sizeof(desc), "%.110s", info->desc ? info->desc : "");
	char *nl = strchr(desc, '\n');
	if (nl)
		*nl = '\0';
	/* libpfm4 describes perf's own events by their kernel names: say what they are. */
	struct mevent e;
	memset(&e, 0, sizeof(e));
	fth_format(e.name, sizeof(e.name), "%s", full);
	const char *same = !strncmp(full, "perf::", 6) && resolve(&e) == 0 ? same_builtin(&e) : NULL;
	if (same)
		fth_format(desc, sizeof(desc), "same as %s", same);
	lc->show(lc->ctx, full, desc);
}

static void perf_list(source_show_fn *show, void *ctx)
{
	show(ctx, "CPUTIME", "CPU time (@microseconds of the thread's CPU time): the kernel's task "
			     "clock, else a POSIX timer checked at the tick");
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		show(ctx, builtins[i].name, builtins[i].description);
	show(ctx, "r00c0", "raw event code (rHEX), processor specific");
	size_t ntopdown;
	const struct tma_event_name *topdown = tma_event_names(&ntopdown);
	for (size_t i = 0; i < ntopdown; i++)
		show(ctx, topdown[i].name, topdown[i].description);
	struct list_pfm_ctx lc = { show, ctx };
	for_each_pfm_event(list_pfm, &lc);
	if (pfm_state == PFM_FAILED) {
		char note[200];
		fth_format(note, sizeof(note), "%s: only the built-in names are listed.", pfm_failure);
		show(ctx, NULL, note);
	}
}

static int perf_add(struct mconfig *c, const char *name, const char *rate,
		    const struct event_defaults *d, int16_t group, bool leader)
{
	unsigned sub = tma_subtree_of(name);
	if (sub && group >= 0)
		return fth_error("%s cannot be in a perf group: it makes its own groups (slots, "
				 "metrics and a cycles trigger)", name);
	if (sub)
		return add_topdown(c, name, sub, rate, d);
	struct mevent *e = events_new(c, name, d, group, leader);
	if (!e)
		return -1;
	events_strip_modifiers(e);
	if (resolve(e) < 0)
		return -1;
	if (mevent_is_cputime(e)) {
		if (events_timer_rate(e, rate, d) < 0)
			return -1;
		e->rate *= 1000; /* the task clock counts nanoseconds */
		c->nevents++;
		return 0;
	}
	if (events_rate(e, rate, d) < 0)
		return -1;
	if (e->freq) {
		uint64_t max = events_max_frequency();
		if (max && e->rate >= max) {
			if (rate)
				return fth_error("event %s: frequency %llu is not below the kernel's "
						 "limit kernel.perf_event_max_sample_rate=%llu",
						 e->name, (unsigned long long)e->rate,
						 (unsigned long long)max);
			e->rate = max - 1;
		}
	}
	c->nevents++;
	return 0;
}

static int perf_prepare(struct mconfig *c)
{
	if (tma_finalize(c, NULL) < 0)
		return -1;
	buf_reset(&timer_notes);
	return 0;
}

static int perf_check(struct mconfig *c, int i)
{
	const struct mevent *e = &c->ev[i];
	if (mevent_is_cputime(e))
		return check_cputime(c, i);
	if (i > 0 && e->group >= 0 && e->group == c->ev[i - 1].group)
		return 0; /* checked with its leader */
	return check_group(c, i);
}

static const char *perf_notes(void)
{
	static struct buf all = BUF_INIT;
	buf_reset(&all);
	if (tma_notes.len)
		buf_add(&all, tma_notes.data, tma_notes.len);
	if (timer_notes.len)
		buf_add(&all, timer_notes.data, timer_notes.len);
	return all.len ? (const char *)all.data : "";
}

const struct launcher_source launcher_perf_source = {
	.name = "perf",
	.add = perf_add,
	.prepare = perf_prepare,
	.check = perf_check,
	.notes = perf_notes,
	.list = perf_list,
	.samples = true,
};
