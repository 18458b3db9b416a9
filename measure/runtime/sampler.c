/* SPDX-License-Identifier: MIT */
/*
 * sampler.c: the sample sources of a thread and the signal handlers.  A perf event that
 * samples runs continuously and signals its own thread at each overflow: a synchronous SIGTRAP
 * where the kernel has perf's sigtrap, else the measurement signal (F_SETOWN_EX, F_SETSIG, a
 * wakeup per sample).  The kernel writes each sample into the event's ring buffer with the
 * group's counts (PERF_SAMPLE_READ) and, when allowed, the kernel call chain, so a sample
 * costs no system call.  Timers use SIGEV_THREAD_ID.  Every sample is credited with what was
 * measured since the thread's previous sample of that source: the counter's delta (group
 * members included, which is proxy sampling) or the clock's.  CPUTIME samples at the task
 * clock's overflows but is credited with the thread's own CPU clock (one system call), which,
 * unlike the task clock, leaves out the time the hypervisor or interrupts took from a
 * running thread.  BLOCKTIME credits the time a
 * thread was switched out, not preempted, to where it blocked.  The handlers save errno, drop
 * reentrant samples, unwind, and add to the thread's tree; no malloc, no stdio, no locks.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef F_SETSIG
#define F_SETSIG 10
#endif
#ifndef TRAP_PERF
#define TRAP_PERF 6 /* si_code of a perf event's SIGTRAP (Linux 5.13) */
#endif

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

/*
 * How a sampling perf event signals its thread.  Where the kernel has perf's sigtrap (Linux
 * 5.13), each overflow queues a synchronous SIGTRAP for the thread's return to user mode: no
 * interrupt is raised to deliver it, which in a virtual machine saves about as much as the
 * sample itself costs.  Elsewhere, a wakeup per sample sends the measurement signal through
 * F_SETSIG, which the kernel raises from an inter-processor interrupt.
 */
static bool trap_sampling;
/* The bytes of a perf ring: known before any thread starts, so that a forked child that lets go
 * of its parent's rings calls nothing of libc's that it would fault in. */
static size_t ring_bytes;
#define SAMPLE_SIGDATA 0x66746d53616d0000ull /* "ftmSam", then the event's index */

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
		if (i == rt.cputime_event)
			v = rt_thread_cpu_ns(t == rt_self() ? 0 : t->tid);
		if (leaf != UINT32_MAX && v > t->last[i])
			cct_add(&t->cct, leaf, (unsigned)i, v - t->last[i]);
		t->last[i] = v;
		t->enabled[i] = vals[1];
		t->running[i] = vals[2];
		t->samples[i] += sample;
		return;
	}
	uint64_t nr = vals[0];
	for (uint64_t k = 0; k < nr && i + (int)k < c->nevents && 3 + k < n; k++) {
		int e = i + (int)k;
		uint64_t v = vals[3 + k];
		if (leaf != UINT32_MAX && v > t->last[e])
			cct_add(&t->cct, leaf, (unsigned)e, v - t->last[e]);
		t->last[e] = v;
		t->enabled[e] = vals[1];
		t->running[e] = vals[2];
		t->samples[e] += sample;
	}
}

/* Read the group (or the single event) led by event I with a system call and credit it. */
static void credit_perf(struct mthread *t, int i, uint32_t leaf, bool sample)
{
	uint64_t buf[3 + MCONFIG_MAX_EVENTS];
	ssize_t n = read(t->fd[i], buf, sizeof(buf));
	if (n >= (ssize_t)(3 * sizeof(uint64_t)))
		credit_counts(t, i, leaf, buf, (size_t)n / 8, sample);
}

/* Copy LEN bytes at position POS of a ring of SIZE bytes (a power of two). */
static void ring_copy(const uint8_t *data, uint64_t size, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (size - 1);
	size_t first = off + len <= size ? len : (size_t)(size - off);
	memcpy(dst, data + off, first);
	if (first < len)
		memcpy((uint8_t *)dst + first, data, len - first);
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
		ring_copy(data, pg->data_size, from, &h, sizeof(h));
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
static bool ring_has_sample(const struct mthread *t, int i)
{
	const struct perf_event_mmap_page *pg = t->ring[i];
	if (!pg)
		return false;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = __atomic_load_n(&pg->data_tail, __ATOMIC_ACQUIRE);
	if (t->refused_head[i] > tail)
		tail = t->refused_head[i]; /* a refused sample's records: its signal is gone */
	return newest_sample(pg, tail, head) != head;
}

bool rt_sources_raised(const struct mthread *t)
{
	if (t->stopped)
		return false; /* it takes no more samples */
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < c->nevents; i++)
		if (c->ev[i].source == MSOURCE_PERF && is_leader(c->ev, i) && t->fd[i] >= 0 &&
		    ring_has_sample(t, i))
			return true;
	return false;
}

/*
 * Take the newest sample record out of event I's ring into S (it holds PERF_SAMPLE_READ, then
 * PERF_SAMPLE_CALLCHAIN when asked for) and empty the ring.  Returns whether there was one.
 */
static bool ring_take(struct mthread *t, int i, struct ring_sample *s)
{
	struct perf_event_mmap_page *pg = t->ring[i];
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
		ring_copy(data, size, newest, &h, sizeof(h));
		uint64_t pos = newest + sizeof(h), end = newest + h.size;
		uint64_t nr = 1;
		if (e->group >= 0 && pos + 8 <= end)
			ring_copy(data, size, pos, &nr, 8);
		size_t words = e->group >= 0 ? 3 + (size_t)nr : 3;
		if (words <= ARRAY_SIZE(s->counts) && pos + words * 8 <= end) {
			ring_copy(data, size, pos, s->counts, words * 8);
			s->ncounts = words;
			pos += words * 8;
			if (t->ring_chain[i] && pos + 8 <= end) {
				ring_copy(data, size, pos, &nr, 8);
				pos += 8;
				if (nr > ARRAY_SIZE(s->chain))
					nr = ARRAY_SIZE(s->chain);
				if (pos + nr * 8 <= end) {
					ring_copy(data, size, pos, s->chain, (size_t)nr * 8);
					s->nchain = (uint32_t)nr;
				}
			}
		}
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	return s->ncounts > 0;
}

/* Whether event I's ring holds a record not yet taken. */
static bool ring_pending(const struct mthread *t, int i)
{
	const struct perf_event_mmap_page *pg = t->ring[i];
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

/*
 * Insert a sample's path under the root: path[0..REUSED) (outermost first, the previous
 * sample's, unchanged as rt_unwind found) and then T->frames[0..n) (leaf first).  The
 * previous sample's prefix is reused.  Returns the leaf's node, or UINT32_MAX.
 */
static uint32_t insert_path(struct mthread *t, uint32_t n, uint32_t reused, bool complete)
{
	struct cct *tree = &t->cct;
	uint32_t node = 0, total = reused + n;
	if (!n || (reused && (t->path_len < reused || t->path_partial == complete))) {
		/* nothing to insert, or rt_unwind and path[] disagree (never expected) */
		t->path_len = 0;
		rt_unwind_forget(t);
		return UINT32_MAX;
	}
	if (!complete) {
		node = cct_child(tree, 0, MFILE_NODE_PARTIAL, MFILE_NO_MODULE, 0);
		if (node == UINT32_MAX)
			goto failed;
	}
	uint32_t same = reused;
	if (!reused && t->path_partial == !complete) {
		while (same < t->path_len && same + 1 < total) {
			const struct rt_frame *f = &t->frames[total - 1 - same];
			if (t->path[same].module != f->module || t->path[same].offset != f->offset)
				break;
			same++;
		}
	}
	if (same)
		node = t->path_nodes[same - 1];
	for (uint32_t d = same; d < total; d++) {
		const struct rt_frame *f = &t->frames[total - 1 - d];
		uint8_t kind = d == total - 1 ? MFILE_NODE_SAMPLE : MFILE_NODE_FRAME;
		node = cct_child(tree, node, kind, f->module, f->offset);
		if (node == UINT32_MAX)
			goto failed;
		/* The leaf is not cached: the same pc as a caller frame is a different node. */
		if (d + 1 < total) {
			t->path[d] = *f;
			t->path_nodes[d] = node;
		}
	}
	t->path_len = total - 1;
	t->path_partial = !complete;
	return node;
failed:
	t->path_len = 0;
	rt_unwind_forget(t);
	return UINT32_MAX;
}

static void record_trace(struct mthread *t, uint32_t node)
{
	struct rt_trace_chunk *c = t->trace_tail;
	if (!c || c->n == RT_TRACE_CHUNK) {
		struct rt_trace_chunk *fresh = arena_alloc(&t->arena, sizeof(*fresh), 16);
		if (!fresh)
			return;
		if (c)
			c->next = fresh;
		else
			t->trace_head = fresh;
		t->trace_tail = c = fresh;
	}
	c->rec[c->n].time_ns = rt_monotonic_ns() - t->start_mono;
	c->rec[c->n].node = node;
	c->n++;
	t->ntrace++;
}

/* A sample T refused leaves its records in the rings, which the next sample skips: note where
 * they end, so that rt_sources_raised() does not wait for a signal already handled. */
static void mark_refused(struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < c->nevents; i++) {
		const struct perf_event_mmap_page *pg = t->ring[i];
		if (pg)
			t->refused_head[i] = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	}
}

static void refuse(struct mthread *t, enum rt_drop why)
{
	t->drops[why]++;
	mark_refused(t);
}

/*
 * Mark T busy for a sample, unless it is already (a sample inside measure) or stopped.  With
 * rt_sources_stop(), which sets stopped and then waits for busy to clear before unmapping the
 * rings, this makes sure a sample never reads a ring that another thread has unmapped.
 */
static bool claim(struct mthread *t)
{
	if (t->busy) {
		t->drops[RT_DROP_REENTRANT]++;
		return false;
	}
	t->busy = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (t->stopped) {
		t->busy = 0;
		t->drops[RT_DROP_STOPPED]++;
		return false;
	}
	return true;
}

/* One sample of source SRC on thread T, interrupted at UCV. */
static void take_sample(struct mthread *t, int src, void *ucv)
{
	const struct mconfig *c = &rt.cfg;
	t->taken++;
	if (!claim(t)) {
		mark_refused(t);
		return;
	}
	if (!rt_thread_tree(t)) {
		refuse(t, RT_DROP_MEMORY);
		t->busy = 0;
		return;
	}
	bool complete, perf = c->ev[src].source == MSOURCE_PERF;
	struct ring_sample rs;
	bool have_record = perf && ring_take(t, src, &rs);
	uint32_t nk = have_record ? kernel_frames(&rs, t->frames, RT_MAX_KERNEL_FRAMES) : 0;
	uint32_t reused;
	uint32_t n = nk + rt_unwind(t, ucv, t->frames + nk, RT_MAX_FRAMES - nk, &complete, &reused);
	uint32_t leaf = insert_path(t, n, reused, complete);
	if (leaf == UINT32_MAX)
		t->drops[RT_DROP_MEMORY]++;
	if (have_record) {
		credit_counts(t, leader_of(c, src), leaf, rs.counts, rs.ncounts, true);
	} else if (perf) {
		/* No record (the ring was full, or an earlier signal took it): read the counts. */
		credit_perf(t, leader_of(c, src), leaf, true);
	} else {
		uint64_t now = c->ev[src].source == MSOURCE_CPUTIME ? rt_thread_cpu_ns(0)
								     : rt_monotonic_ns();
		if (leaf != UINT32_MAX && now > t->last[src])
			cct_add(&t->cct, leaf, (unsigned)src, now - t->last[src]);
		t->last[src] = now;
		t->samples[src]++;
	}
	if (leaf != UINT32_MAX) {
		t->recorded++;
		if (!complete) {
			t->partial++;
			rt_unwind_note_partial(t, t->frames, n);
		}
		if (c->flags & MCONFIG_TRACE)
			record_trace(t, leaf);
	}
	t->busy = 0;
}

static void handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	if (rt_forward_program_signal(sig, info, ucv)) {
		errno = saved_errno;
		return;
	}
	struct mthread *t = rt_self();
	const struct mconfig *c = &rt.cfg;
	int src = -1;
	if (info->si_code == SI_TIMER) {
		src = info->si_value.sival_int;
	} else if (t) {
		for (int i = 0; i < c->nevents && src < 0; i++)
			if (t->fd[i] >= 0 && t->fd[i] == info->si_fd)
				src = i;
	}
	if (!t || src < 0 || src >= c->nevents) {
		if (t)
			refuse(t, RT_DROP_SOURCE);
		errno = saved_errno;
		return;
	}
	take_sample(t, src, ucv);
	errno = saved_errno;
}

bool rt_sampler_overflow(void *ucv)
{
	struct mthread *t = rt_self();
	if (!t || t->stopped)
		return false;
	const struct mconfig *c = &rt.cfg;
	int leaders = 0, src = -1;
	for (int i = 0; i < c->nevents; i++) {
		if (!is_leader(c->ev, i) || t->fd[i] < 0)
			continue;
		leaders++;
		int trig = trigger_of(c, i);
		/* The event whose ring holds a new record is the one that fired. */
		if (src < 0 || (ring_pending(t, trig) && !ring_pending(t, src)))
			src = trig;
	}
	if (leaders == 0)
		return false;
	if (leaders == 1 || ring_pending(t, src))
		take_sample(t, src, ucv);
	else
		refuse(t, RT_DROP_QUEUE); /* its counts go to the next sample */
	return true;
}

bool rt_sampler_traps(void)
{
	return trap_sampling || rt_blocktime_event() >= 0;
}

int rt_sampler_install(void)
{
	ring_bytes = (size_t)(1 + RT_RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	trap_sampling = rt.cfg.flags & MCONFIG_SIGTRAP_PROBED ? (rt.cfg.flags & MCONFIG_SIGTRAP) != 0
								: mconfig_probe_sigtrap();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (rt_real_sigaction(rt.signo, &sa, NULL) < 0)
		return fth_error_errno(errno, "cannot install the handler for signal %d", rt.signo);
	return 0;
}

static int start_timer(struct mthread *t, int i)
{
	const struct mevent *e = &rt.cfg.ev[i];
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = rt.signo;
	sev.sigev_value.sival_int = i;
	sev._sigev_un._tid = t->tid;
	clockid_t clk = e->source == MSOURCE_CPUTIME ? CLOCK_THREAD_CPUTIME_ID : CLOCK_REALTIME;
	if (timer_create(clk, &sev, &t->timer) < 0)
		return fth_error_errno(errno, "%s: timer_create", e->name);
	t->has_timer = true;
	t->last[i] = e->source == MSOURCE_CPUTIME ? rt_thread_cpu_ns(0) : rt_monotonic_ns();
	struct itimerspec its;
	its.it_interval.tv_sec = (time_t)(e->rate / 1000000);
	its.it_interval.tv_nsec = (long)(e->rate % 1000000) * 1000;
	its.it_value = its.it_interval;
	if (timer_settime(t->timer, 0, &its, NULL) < 0)
		return fth_error_errno(errno, "%s: timer_settime", e->name);
	return 0;
}

/*
 * Keep our descriptors away from the low numbers that programs dup2() over or expect to be
 * free: move each to the first free number at or above HIGH_FD.
 */
#define HIGH_FD 512

static int high_fd(int fd)
{
	if (fd >= HIGH_FD)
		return fd;
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
	if (moved < 0)
		return fd; /* the limit is below HIGH_FD: keep it where it is */
	close(fd);
	return moved;
}

/* Out of descriptors: raise the soft limit towards the hard one, once, and say so. */
static int raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			rt_log("error: out of file descriptors for perf events (limit %llu is the "
			       "hard limit; raise it with ulimit -Hn): threads started from now "
			       "on may not be sampled", (unsigned long long)rl.rlim_cur);
		return -1;
	}
	rlim_t old = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max > old * 8 ? old * 8 : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	rt_log("raised the open-file limit from %llu to %llu for perf event descriptors",
	       (unsigned long long)old, (unsigned long long)rl.rlim_cur);
	return 0;
}

static int start_perf(struct mthread *t, int i)
{
	const struct mconfig *c = &rt.cfg;
	bool group = c->ev[i].group >= 0;
	int leader = i;
	for (int k = i; k < c->nevents; k++) {
		if (k > i && (!group || c->ev[k].group != c->ev[i].group))
			break;
		struct perf_event_attr a;
		fill_attr(&c->ev[k], &a, k == i);
		long fd = syscall(SYS_perf_event_open, &a, 0, -1, k == i ? -1 : t->fd[leader],
				  PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && errno == EMFILE && raise_fd_limit() == 0)
			fd = syscall(SYS_perf_event_open, &a, 0, -1, k == i ? -1 : t->fd[leader],
				     PERF_FLAG_FD_CLOEXEC);
		if (fd < 0)
			return fth_error_errno(errno, "%s: perf_event_open", c->ev[k].name);
		t->fd[k] = high_fd((int)fd);
		rt_fd_own(t->fd[k], true);
		if (!group)
			break;
	}
	int trig = trigger_of(c, leader);
	int fd = t->fd[trig];
	/* The ring of the event that samples: its records carry the counts and kernel frames. */
	if (c->ev[trig].sampling) {
		void *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
				  fd, 0);
		t->ring[trig] = ring == MAP_FAILED ? NULL : ring;
		t->ring_chain[trig] =
			!c->ev[trig].exclude_kernel && (rt.cfg.flags & MCONFIG_KERNEL);
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
	ioctl(t->fd[leader], PERF_EVENT_IOC_RESET, group ? PERF_IOC_FLAG_GROUP : 0);
	if (ioctl(t->fd[leader], PERF_EVENT_IOC_ENABLE, 0) < 0)
		return fth_error_errno(errno, "%s: cannot enable", c->ev[leader].name);
	if (leader == rt.cputime_event)
		t->last[leader] = rt_thread_cpu_ns(0);
	return 0;
}

/*
 * BLOCKTIME.  The thread's context-switch counter overflows at every switch-out; the kernel
 * then queues a SIGTRAP for the thread's next return to user mode (attr.sigtrap), so the
 * sleep itself is never interrupted, and the trap arrives when the blocking call returns, with
 * the thread still in that call: its context is the blocking call path.  The time comes from
 * the PERF_RECORD_SWITCH records in the ring: from a switch-out that was not a preemption to
 * the next switch-in.  A preemption (the thread could run) is not blocked time.
 */
int rt_blocktime_event(void)
{
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (rt.cfg.ev[i].source == MSOURCE_BLOCKTIME)
			return i;
	return -1;
}

/* Read the switch records of event I's ring; returns the time blocked they complete (ns). */
static uint64_t blocked_time(struct mthread *t, int i)
{
	struct perf_event_mmap_page *pg = t->ring[i];
	if (!pg)
		return 0;
	const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
	uint64_t size = pg->data_size, total = 0;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	struct perf_event_header h;
	while (tail + sizeof(h) <= head) {
		ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_SWITCH && h.size >= sizeof(h) + 8) {
			uint64_t when;
			ring_copy(data, size, tail + h.size - 8, &when, 8); /* sample_id: time */
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				t->blocked_since =
					h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? 0 : when;
			} else {
				if (t->blocked_since && when > t->blocked_since)
					total += when - t->blocked_since;
				t->blocked_since = 0;
			}
		} else if (h.type == PERF_RECORD_LOST) {
			t->blocked_since = 0; /* switches were lost: this interval is unknown */
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return total;
}

/* The kernel's si_perf_data, which glibc's siginfo_t does not name: the word after si_addr. */
static uint64_t perf_sig_data(const siginfo_t *info)
{
	uint64_t v;
	memcpy(&v, (const char *)info + offsetof(siginfo_t, si_addr) + sizeof(void *), sizeof(v));
	return v;
}

/* A BLOCKTIME trap on T: credit the blocked time its ring completes to the context UCV. */
static void blocktime_trap(struct mthread *t, void *ucv)
{
	int i = rt_blocktime_event();
	/* Inside measure (a wrapper's unwind): the records wait for the next trap. */
	if (i < 0 || t->busy)
		return;
	t->busy = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (t->stopped || t->fd[i] < 0) {
		t->busy = 0;
		return;
	}
	uint64_t blocked = blocked_time(t, i);
	if (blocked && !rt_thread_tree(t)) {
		t->drops[RT_DROP_MEMORY]++;
	} else if (blocked) {
		t->taken++;
		bool complete;
		uint32_t reused;
		uint32_t n = rt_unwind(t, ucv, t->frames, RT_MAX_FRAMES, &complete, &reused);
		uint32_t leaf = insert_path(t, n, reused, complete);
		if (leaf == UINT32_MAX) {
			t->drops[RT_DROP_MEMORY]++;
		} else {
			cct_add(&t->cct, leaf, (unsigned)i, blocked);
			t->samples[i]++;
			t->recorded++;
			if (!complete) {
				t->partial++;
				rt_unwind_note_partial(t, t->frames, n);
			}
		}
	}
	t->busy = 0;
}

bool rt_sampler_trap(siginfo_t *info, void *ucv)
{
	uint64_t data = info->si_code == TRAP_PERF ? perf_sig_data(info) : 0;
	bool blocktime = data == MCONFIG_BLOCKTIME_SIGDATA;
	bool sample = (data & ~0xffffull) == SAMPLE_SIGDATA;
	if (!blocktime && !sample)
		return false;
	int saved_errno = errno;
	struct mthread *t = rt_self();
	const struct mconfig *c = &rt.cfg;
	if (t) {
		/*
		 * A SIGTRAP that is already pending absorbs the next one, so one trap may stand
		 * for several events: each event whose ring holds a new record is handled.
		 */
		if (blocktime || rt_blocktime_event() >= 0)
			blocktime_trap(t, ucv);
		int src = sample ? (int)(data & 0xffff) : -1;
		if (src >= 0 && src < c->nevents && c->ev[src].source == MSOURCE_PERF)
			take_sample(t, src, ucv);
		else if (sample)
			refuse(t, RT_DROP_SOURCE);
		for (int i = 0; trap_sampling && i < c->nevents; i++)
			if (i != src && c->ev[i].sampling && c->ev[i].source == MSOURCE_PERF &&
			    t->fd[i] >= 0 && ring_pending(t, i))
				take_sample(t, i, ucv);
	}
	errno = saved_errno;
	return true;
}

static int start_blocktime(struct mthread *t, int i)
{
	struct perf_event_attr a;
	mconfig_blocktime_attr(&a);
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EMFILE && raise_fd_limit() == 0)
		fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return fth_error_errno(errno, "BLOCKTIME: perf_event_open");
	t->fd[i] = high_fd((int)fd);
	rt_fd_own(t->fd[i], true);
	void *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd[i], 0);
	if (ring == MAP_FAILED)
		return fth_error_errno(errno, "BLOCKTIME: cannot map its ring buffer");
	t->ring[i] = ring;
	t->blocked_since = 0;
	if (ioctl(t->fd[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
		return fth_error_errno(errno, "BLOCKTIME: cannot enable");
	return 0;
}

int rt_sources_start(struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < MCONFIG_MAX_EVENTS; i++)
		t->fd[i] = -1;
	for (int i = 0; i < c->nevents; i++) {
		int rc = 0;
		if (mevent_is_synchronous(c->ev[i].source))
			continue; /* counted by wrappers (io.c, memleak.c) */
		if (c->ev[i].source == MSOURCE_BLOCKTIME)
			rc = start_blocktime(t, i);
		else if (c->ev[i].source != MSOURCE_PERF)
			rc = start_timer(t, i);
		else if (is_leader(c->ev, i))
			rc = start_perf(t, i);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Unmap the rings and close the fds of T's first N events; FORGET: leave T's record as it is
 * (see below). */
static void release_events(struct mthread *t, int n, bool forget)
{
	for (int i = 0; i < n; i++) {
		/* A forked child has no copy of its parent's rings: perf maps them VM_DONTCOPY. */
		if (t->ring[i] && !forget) {
			munmap(t->ring[i], ring_bytes);
			t->ring[i] = NULL;
		}
		if (t->fd[i] >= 0) {
			rt_close(t->fd[i]);
			if (!forget)
				t->fd[i] = -1;
		}
	}
}

void rt_sources_quiet(struct mthread *t)
{
	/* The thread itself and an exit in another thread may both come here: one disables. */
	if (__atomic_exchange_n(&t->quiet, true, __ATOMIC_ACQ_REL))
		return;
	if (t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = false;
	}
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && t->fd[i] >= 0)
			ioctl(t->fd[i], PERF_EVENT_IOC_DISABLE, 0);
}

void rt_sources_stop(struct mthread *t)
{
	/*
	 * Disable the sources before refusing samples: a sample the kernel raised just before
	 * the disable reaches this thread as that system call returns, and is recorded rather
	 * than dropped.
	 */
	rt_sources_quiet(t);
	t->stopped = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* A sample running on T (another thread) reads its rings: let it finish first. */
	for (int spin = 0; t != rt_self() && t->busy && spin < 1000000; spin++)
		__builtin_ia32_pause();
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && t->fd[i] >= 0)
			/* Enabled and running times only: counts after the last sample have no
			 * context. */
			credit_perf(t, i, UINT32_MAX, false);
	/* When the whole process is ending (exit, exec, a fatal signal), its exit or exec drops
	 * the rings and closes the descriptors (close-on-exec) at less cost than an munmap and a
	 * close each; a failed exec releases them (rt_sources_release). */
	if (!rt.finished)
		release_events(t, c->nevents, false);
}

void rt_sources_release(struct mthread *t)
{
	release_events(t, rt.cfg.nevents, false);
}

/* A forked child abandons the parent's records: writing to them would only copy their pages. */
void rt_sources_forget(struct mthread *t)
{
	release_events(t, MCONFIG_MAX_EVENTS, true);
}

void rt_fd_moved(int oldfd, int newfd)
{
	for (struct mthread *t = rt.threads; t; t = t->next)
		for (int i = 0; i < rt.cfg.nevents; i++)
			if (t->fd[i] == oldfd)
				t->fd[i] = newfd;
	rt_writer_fd_moved(oldfd, newfd);
}
