/* SPDX-License-Identifier: MIT */
/*
 * perf.c: the perf_events source of the preloaded library (CPUTIME's task clock, the
 * hardware and software events, the topdown groups).  A perf event that samples runs
 * continuously and signals its own thread at each overflow: a synchronous SIGTRAP where the
 * kernel has perf's sigtrap, else the measurement signal (F_SETOWN_EX, F_SETSIG, a wakeup per
 * sample).  The kernel writes each sample into the event's ring buffer with the group's counts
 * (PERF_SAMPLE_READ) and, when allowed, the kernel call chain, so a sample costs no system
 * call.  A sample is credited with the counters' deltas since the thread's previous one, group
 * members included (proxy sampling).  CPUTIME samples at the task clock's overflows but is
 * credited with the thread's own CPU clock (one system call), which, unlike the task clock,
 * leaves out the time the hypervisor or interrupts took from a running thread.
 */
#include "compat.h"
#include "loadmap.h"
#include "perf-ring.h"
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef F_SETSIG
#define F_SETSIG 10
#endif
#define SAMPLE_SIGDATA 0x66746d53616d0000ull /* "ftmSam", then the event's index */

/* A thread's perf events, by event index. */
struct perf_thread {
	int fd[MCONFIG_MAX_EVENTS];	   /* -1: not open */
	uint64_t last[MCONFIG_MAX_EVENTS]; /* the count at the previous sample */
	void *ring[MCONFIG_MAX_EVENTS];	   /* the sample buffer of an event that samples */
	uint64_t refused_head[MCONFIG_MAX_EVENTS]; /* ring position after a refused sample */
	bool ring_chain[MCONFIG_MAX_EVENTS]; /* its records carry the kernel call chain */
};

static struct perf_thread *state_of(const struct mthread *t)
{
	return rt_source_state(t, MSOURCE_PERF);
}

/*
 * How a sampling perf event signals its thread.  Where the kernel has perf's sigtrap (Linux
 * 5.13), each overflow queues a synchronous SIGTRAP for the thread's return to user mode: no
 * interrupt is raised to deliver it, which in a virtual machine saves about as much as the
 * sample itself costs.  Elsewhere, a wakeup per sample sends the measurement signal through
 * F_SETSIG, which the kernel raises from an inter-processor interrupt.
 */
static bool trap_sampling;
static int cputime_event = -1; /* the CPUTIME event sampled by the task clock, or -1 */

static bool is_leader(const struct mevent *ev, int i)
{
	return ev[i].source == MSOURCE_PERF &&
	       (ev[i].group < 0 || i == 0 || ev[i - 1].group != ev[i].group);
}

/*
 * The event of the group led by I that samples: the leader, or the member marked sampling
 * (a top-down group's cycles trigger: the kernel forbids sampling on its slots leader).
 */
static int trigger_of(const struct mconfig *c, int i)
{
	if (c->ev[i].group < 0 || c->ev[i].sampling)
		return i;
	for (int k = i + 1; k < c->nevents && c->ev[k].group == c->ev[i].group; k++)
		if (c->ev[k].sampling)
			return k;
	return i;
}

static int leader_of(const struct mconfig *c, int i)
{
	while (i > 0 && c->ev[i].group >= 0 && c->ev[i - 1].group == c->ev[i].group)
		i--;
	return i;
}

static void perf_process_init(void)
{
	rt_ring_init();
	trap_sampling = rt.cfg.flags & MCONFIG_SIGTRAP_PROBED ? (rt.cfg.flags & MCONFIG_SIGTRAP) != 0
								: mconfig_probe_sigtrap();
	cputime_event = -1;
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (mevent_is_cputime(&rt.cfg.ev[i]))
			cputime_event = i;
}

static void perf_thread_init(struct mthread *t)
{
	struct perf_thread *p = state_of(t);
	for (int i = 0; i < MCONFIG_MAX_EVENTS; i++)
		p->fd[i] = -1;
}

/*
 * mconfig_perf_attr() plus what the preloaded library needs from an event that samples: its
 * signal at each sample, and a ring record with the group's counts and, when allowed, the
 * kernel part of the call chain (user frames are ours to unwind).
 */
static void fill_attr(const struct mevent *e, struct perf_event_attr *a, bool leader)
{
	mconfig_perf_attr(e, a, leader);
	if (e->sampling) {
		if (trap_sampling) {
			a->sigtrap = 1;
			a->remove_on_exec = 1; /* which sigtrap requires; exec restarts measuring */
			a->sig_data = SAMPLE_SIGDATA | (uint64_t)(e - rt.cfg.ev);
		} else {
			a->wakeup_events = 1;
		}
		a->sample_type = PERF_SAMPLE_READ;
		if (!e->exclude_kernel && (rt.cfg.flags & MCONFIG_KERNEL)) {
			a->sample_type |= PERF_SAMPLE_CALLCHAIN;
			a->exclude_callchain_user = 1;
			a->sample_max_stack = RT_MAX_KERNEL_FRAMES - 2;
		}
	}
}

/* Credit event E's count V (enabled and running TIMES) to node LEAF (none when UINT32_MAX). */
static void credit_one(struct mthread *t, int e, uint32_t leaf, uint64_t v, const uint64_t *times,
		       bool sample)
{
	struct perf_thread *p = state_of(t);
	if (leaf != UINT32_MAX && v > p->last[e])
		cct_add(&t->cct, leaf, (unsigned)e, v - p->last[e]);
	p->last[e] = v;
	t->enabled[e] = times[0];
	t->running[e] = times[1];
	t->samples[e] += sample;
}

/*
 * Credit the counts of event I's group (or of event I alone) to node LEAF (none when
 * UINT32_MAX): VALS is what a read() of the leader returns, N words: value, enabled, running
 * for one event; nr, enabled, running, values[nr] in group order for a group.
 */
static void credit_counts(struct mthread *t, int i, uint32_t leaf, const uint64_t *vals, size_t n,
			  bool sample)
{
	const struct mconfig *c = &rt.cfg;
	if (n < 3)
		return;
	if (c->ev[i].group < 0) {
		uint64_t v = vals[0];
		if (i == cputime_event)
			v = rt_thread_cpu_ns(t == rt_self() ? 0 : t->tid);
		credit_one(t, i, leaf, v, vals + 1, sample);
		return;
	}
	uint64_t nr = vals[0];
	for (uint64_t k = 0; k < nr && i + (int)k < c->nevents && 3 + k < n; k++)
		credit_one(t, i + (int)k, leaf, vals[3 + k], vals + 1, sample);
}

/* Read the group (or the single event) led by event I with a system call and credit it. */
static void credit_read(struct mthread *t, int i, uint32_t leaf, bool sample)
{
	uint64_t buf[3 + MCONFIG_MAX_EVENTS];
	ssize_t n = read(state_of(t)->fd[i], buf, sizeof(buf));
	if (n >= (ssize_t)(3 * sizeof(uint64_t)))
		credit_counts(t, i, leaf, buf, (size_t)n / 8, sample);
}

/* What the newest sample record of a ring holds. */
struct ring_sample {
	uint64_t counts[3 + MCONFIG_MAX_EVENTS]; /* as read() returns them */
	size_t ncounts;				 /* 0: no sample record was there */
	uint64_t chain[RT_MAX_KERNEL_FRAMES + 2]; /* kernel call chain, context markers included */
	uint32_t nchain;
};

/*
 * The position of the newest sample record in PG's ring between FROM and HEAD, or HEAD when
 * there is none; the other records (lost, throttle) are skipped.
 */
static uint64_t newest_sample(const struct perf_event_mmap_page *pg, uint64_t from, uint64_t head)
{
	const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
	uint64_t newest = head;
	struct perf_event_header h;
	while (from + sizeof(h) <= head) {
		rt_ring_copy(data, pg->data_size, from, &h, sizeof(h));
		if (h.size < sizeof(h) || from + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE)
			newest = from;
		from += h.size;
	}
	return newest;
}

/* Whether event I's ring holds a sample record that T has not taken yet.  Only read: T's
 * handler may be emptying the ring meanwhile, and the kernel writes no more to the ring of a
 * quiet thread. */
static bool ring_has_sample(const struct perf_thread *p, int i)
{
	const struct perf_event_mmap_page *pg = p->ring[i];
	if (!pg)
		return false;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&pg->data_tail, __ATOMIC_ACQUIRE);
	if (p->refused_head[i] > tail)
		tail = p->refused_head[i]; /* a refused sample's records: its signal is gone */
	return newest_sample(pg, tail, head) != head;
}

static bool perf_thread_raised(const struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	const struct perf_thread *p = state_of(t);
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && p->fd[i] >= 0 && ring_has_sample(p, i))
			return true;
	return false;
}

/*
 * Take the newest sample record out of event I's ring into S (it holds PERF_SAMPLE_READ, then
 * PERF_SAMPLE_CALLCHAIN when asked for) and empty the ring.  Returns whether there was one.
 */
static bool ring_take(struct perf_thread *p, int i, struct ring_sample *s)
{
	struct perf_event_mmap_page *pg = p->ring[i];
	s->ncounts = 0;
	s->nchain = 0;
	if (!pg)
		return false;
	const struct mevent *e = &rt.cfg.ev[i];
	const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
	uint64_t size = pg->data_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t newest = newest_sample(pg, pg->data_tail, head);
	struct perf_event_header h;
	if (newest != head) {
		rt_ring_copy(data, size, newest, &h, sizeof(h));
		uint64_t pos = newest + sizeof(h), end = newest + h.size;
		uint64_t nr = 1;
		if (e->group >= 0 && pos + 8 <= end)
			rt_ring_copy(data, size, pos, &nr, 8);
		size_t words = e->group >= 0 ? 3 + (size_t)nr : 3;
		if (words <= ARRAY_SIZE(s->counts) && pos + words * 8 <= end) {
			rt_ring_copy(data, size, pos, s->counts, words * 8);
			s->ncounts = words;
			pos += words * 8;
			if (p->ring_chain[i] && pos + 8 <= end) {
				rt_ring_copy(data, size, pos, &nr, 8);
				pos += 8;
				if (nr > ARRAY_SIZE(s->chain))
					nr = ARRAY_SIZE(s->chain);
				if (pos + nr * 8 <= end) {
					rt_ring_copy(data, size, pos, s->chain, (size_t)nr * 8);
					s->nchain = (uint32_t)nr;
				}
			}
		}
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	return s->ncounts > 0;
}

/* Whether event I's ring holds a record not yet taken. */
static bool ring_pending(const struct perf_thread *p, int i)
{
	const struct perf_event_mmap_page *pg = p->ring[i];
	return pg && __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE) != pg->data_tail;
}

/* The kernel frames of a ring sample, leaf first, into OUT; returns how many. */
static uint32_t kernel_frames(const struct ring_sample *s, struct rt_frame *out, uint32_t max)
{
	uint32_t kernel = loadmap_kernel(), n = 0;
	for (uint32_t k = 0; k < s->nchain && n < max; k++) {
		if (s->chain[k] >= (uint64_t)PERF_CONTEXT_MAX)
			continue; /* a context marker */
		out[n].module = kernel;
		out[n].offset = s->chain[k];
		n++;
	}
	return n;
}

/* A sample T refused leaves its records in the rings, which the next sample skips: note where
 * they end, so that perf_thread_raised() does not wait for a signal already handled. */
static void perf_sample_refused(struct mthread *t)
{
	struct perf_thread *p = state_of(t);
	for (int i = 0; i < rt.cfg.nevents; i++) {
		const struct perf_event_mmap_page *pg = p->ring[i];
		if (pg)
			p->refused_head[i] = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	}
}

/* One sample of event SRC on thread T, interrupted at UC. */
static void perf_sample(struct mthread *t, int src, void *uc)
{
	const struct mconfig *c = &rt.cfg;
	if (!rt_sample_claim(t))
		return;
	struct perf_thread *p = state_of(t);
	struct ring_sample rs;
	bool have_record = ring_take(p, src, &rs);
	uint32_t nk = have_record ? kernel_frames(&rs, t->frames, RT_MAX_KERNEL_FRAMES) : 0;
	bool complete;
	uint32_t n;
	uint32_t leaf = rt_sample_path(t, uc, nk, &complete, &n);
	if (have_record)
		credit_counts(t, leader_of(c, src), leaf, rs.counts, rs.ncounts, true);
	else /* no record (the ring was full, or an earlier signal took it): read the counts */
		credit_read(t, leader_of(c, src), leaf, true);
	rt_sample_recorded(t, leaf, complete, n, true);
	t->busy = 0;
}

static int perf_signalled(const struct mthread *t, const siginfo_t *info)
{
	const struct perf_thread *p = state_of(t);
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (p->fd[i] >= 0 && p->fd[i] == info->si_fd)
			return i;
	return -1;
}

static bool perf_overflow(struct mthread *t, void *uc)
{
	const struct mconfig *c = &rt.cfg;
	struct perf_thread *p = state_of(t);
	int leaders = 0, src = -1;
	for (int i = 0; i < c->nevents; i++) {
		if (!is_leader(c->ev, i) || p->fd[i] < 0)
			continue;
		leaders++;
		int trig = trigger_of(c, i);
		/* The event whose ring holds a new record is the one that fired. */
		if (src < 0 || (ring_pending(p, trig) && !ring_pending(p, src)))
			src = trig;
	}
	if (leaders == 0)
		return false;
	if (leaders == 1 || ring_pending(p, src))
		perf_sample(t, src, uc);
	else
		rt_sample_refuse(t, RT_DROP_QUEUE); /* its counts go to the next sample */
	return true;
}

static bool perf_traps(const siginfo_t *info)
{
	return (rt_perf_sig_data(info) & ~0xffffull) == SAMPLE_SIGDATA;
}

/*
 * A SIGTRAP that is already pending absorbs the next one, so one trap may stand for several
 * events: each event whose ring holds a new record is handled.
 */
static void perf_trap(struct mthread *t, const siginfo_t *info, void *uc)
{
	const struct mconfig *c = &rt.cfg;
	if (!t)
		return;
	int src = perf_traps(info) ? (int)(rt_perf_sig_data(info) & 0xffff) : -1;
	if (src >= 0 && src < c->nevents && c->ev[src].source == MSOURCE_PERF)
		perf_sample(t, src, uc);
	else if (src >= 0)
		rt_sample_refuse(t, RT_DROP_SOURCE);
	const struct perf_thread *p = state_of(t);
	for (int i = 0; trap_sampling && i < c->nevents; i++)
		if (i != src && c->ev[i].sampling && c->ev[i].source == MSOURCE_PERF &&
		    p->fd[i] >= 0 && ring_pending(p, i))
			perf_sample(t, i, uc);
}

static bool perf_uses_sigtrap(void)
{
	return trap_sampling;
}

/* Open the group led by event I (or event I alone) on T and start it counting. */
static int perf_thread_start(struct mthread *t, int i)
{
	const struct mconfig *c = &rt.cfg;
	struct perf_thread *p = state_of(t);
	if (!is_leader(c->ev, i))
		return 0; /* opened with its leader */
	bool group = c->ev[i].group >= 0;
	int leader = i;
	for (int k = i; k < c->nevents; k++) {
		if (k > i && (!group || c->ev[k].group != c->ev[i].group))
			break;
		struct perf_event_attr a;
		fill_attr(&c->ev[k], &a, k == i);
		int fd = rt_perf_open(&a, k == i ? -1 : p->fd[leader]);
		if (fd < 0)
			return fth_error_errno(errno, "%s: perf_event_open", c->ev[k].name);
		p->fd[k] = fd;
		if (!group)
			break;
	}
	int trig = trigger_of(c, leader);
	int fd = p->fd[trig];
	/* The ring of the event that samples: its records carry the counts and kernel frames. */
	if (c->ev[trig].sampling) {
		p->ring[trig] = rt_ring_map(fd, true);
		p->ring_chain[trig] = !c->ev[trig].exclude_kernel && (rt.cfg.flags & MCONFIG_KERNEL);
	}
	struct f_owner_ex owner = { F_OWNER_TID, t->tid };
	if (!trap_sampling &&
	    (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, rt.signo) < 0 ||
	     fcntl(fd, F_SETOWN_EX, &owner) < 0))
		return fth_error_errno(errno, "%s: cannot route its signal", c->ev[i].name);
	/*
	 * The group counts from here on.  Its trigger signals each overflow (SIGTRAP or the
	 * measurement signal, see trap_sampling) and keeps running:
	 * no PERF_EVENT_IOC_REFRESH.  Once the overflow limit has disabled a group member (a
	 * top-down cycles trigger under a counting slots leader), the refresh does not put it
	 * back on the PMU: on Linux 6.18 such a task-clock member counted 26 ms of a 1 s run and
	 * gave 52 samples instead of 2000.
	 */
	ioctl(p->fd[leader], PERF_EVENT_IOC_RESET, group ? PERF_IOC_FLAG_GROUP : 0);
	if (ioctl(p->fd[leader], PERF_EVENT_IOC_ENABLE, 0) < 0)
		return fth_error_errno(errno, "%s: cannot enable", c->ev[leader].name);
	if (leader == cputime_event)
		p->last[leader] = rt_thread_cpu_ns(0);
	return 0;
}

static void perf_thread_quiet(struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	const struct perf_thread *p = state_of(t);
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && p->fd[i] >= 0)
			ioctl(p->fd[i], PERF_EVENT_IOC_DISABLE, 0);
}

/* Unmap the rings and close the descriptors of T's first N events (see rt_source). */
static void release_events(struct mthread *t, int n, bool forget)
{
	struct perf_thread *p = state_of(t);
	for (int i = 0; i < n; i++) {
		/* A forked child has no copy of its parent's rings: perf maps them VM_DONTCOPY. */
		if (p->ring[i] && !forget) {
			munmap(p->ring[i], rt_ring_bytes());
			p->ring[i] = NULL;
		}
		if (p->fd[i] >= 0) {
			rt_close(p->fd[i]);
			if (!forget)
				p->fd[i] = -1;
		}
	}
}

static void perf_thread_stop(struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	const struct perf_thread *p = state_of(t);
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && p->fd[i] >= 0)
			/* Enabled and running times only: counts after the last sample have no
			 * context. */
			credit_read(t, i, UINT32_MAX, false);
	if (!rt.finished)
		release_events(t, c->nevents, false);
}

static void perf_thread_release(struct mthread *t, bool forget)
{
	release_events(t, forget ? MCONFIG_MAX_EVENTS : rt.cfg.nevents, forget);
}

static void perf_fd_moved(struct mthread *t, int oldfd, int newfd)
{
	struct perf_thread *p = state_of(t);
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (p->fd[i] == oldfd)
			p->fd[i] = newfd;
}

static void perf_describe(const struct mevent *e, struct mfile_metric *x, char *desc,
			  size_t size)
{
	static const char *const roles[] = { "", "pipeline slots, the group leader",
					     "PERF_METRICS slot count", "the cycles trigger that samples",
					     "counted in the group" };
	if (mevent_is_cputime(e)) {
		fth_format(desc, size, "CPU time, the kernel's task clock, a sample every %llu us "
				       "of the thread's CPU time", (unsigned long long)e->rate / 1000);
		x->rate /= 1000; /* a timer source's period is in microseconds */
	} else if (e->tma_role && e->tma_role < ARRAY_SIZE(roles)) {
		fth_format(desc, size, "TMA input: %s; perf event type %u config %#llx config1 %#llx",
			   roles[e->tma_role], e->type, (unsigned long long)e->config,
			   (unsigned long long)e->config1);
	} else {
		fth_format(desc, size, "perf event type %u config %#llx%s", e->type,
			   (unsigned long long)e->config,
			   e->sampling ? "" : ", read at its group leader's samples");
	}
	if (!e->exclude_kernel)
		x->flags |= MFILE_METRIC_KERNEL;
}

const struct rt_source rt_perf_source = {
	.name = "perf",
	.thread_bytes = sizeof(struct perf_thread),
	.process_init = perf_process_init,
	.thread_init = perf_thread_init,
	.thread_start = perf_thread_start,
	.thread_quiet = perf_thread_quiet,
	.thread_raised = perf_thread_raised,
	.thread_stop = perf_thread_stop,
	.thread_release = perf_thread_release,
	.sample_refused = perf_sample_refused,
	.signalled = perf_signalled,
	.sample = perf_sample,
	.traps = perf_traps,
	.trap = perf_trap,
	.uses_sigtrap = perf_uses_sigtrap,
	.overflow = perf_overflow,
	.fd_moved = perf_fd_moved,
	.describe = perf_describe,
};
