/* SPDX-License-Identifier: MIT */
/*
 * sampler.c: the sample sources of a thread and the signal handler.  Perf events deliver the
 * measurement signal to their own thread (F_SETOWN_EX, F_SETSIG, one overflow at a time with
 * PERF_EVENT_IOC_REFRESH); timers use SIGEV_THREAD_ID.  Every sample is credited with what was
 * measured since the thread's previous sample of that source: the counter's delta (group
 * members included, which is proxy sampling) or the clock's.  The handler saves errno, drops
 * reentrant samples, unwinds, and adds to the thread's tree; no malloc, no stdio, no locks.
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

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* mconfig_perf_attr() plus what the preloaded library needs: a wakeup (and so a signal) per
 * sample, and the kernel part of the call chain when allowed. */
static void fill_attr(const struct mevent *e, struct perf_event_attr *a, bool leader)
{
	mconfig_perf_attr(e, a, leader);
	if (e->sampling) {
		a->wakeup_events = 1;
		if (!e->exclude_kernel && (rt.cfg.flags & MCONFIG_KERNEL)) {
			/* The kernel part of the call chain; user frames are ours to unwind. */
			a->sample_type = PERF_SAMPLE_CALLCHAIN;
			a->exclude_callchain_user = 1;
			a->sample_max_stack = RT_MAX_KERNEL_FRAMES - 2;
		}
	}
}

/* Read a perf group (or a single event) led by event I: credit deltas to node LEAF. */
static void credit_perf(struct mthread *t, int i, uint32_t leaf, bool sample)
{
	const struct mconfig *c = &rt.cfg;
	uint64_t buf[3 + MCONFIG_MAX_EVENTS];
	bool group = c->ev[i].group >= 0;
	ssize_t n = read(t->fd[i], buf, sizeof(buf));
	if (n < (ssize_t)(3 * sizeof(uint64_t)))
		return;
	if (!group) {
		/* value, time_enabled, time_running */
		uint64_t v = buf[0];
		if (leaf != UINT32_MAX && v > t->last[i])
			cct_add(&t->cct, leaf, (unsigned)i, v - t->last[i]);
		t->last[i] = v;
		t->enabled[i] = buf[1];
		t->running[i] = buf[2];
		t->samples[i] += sample;
		return;
	}
	/* nr, time_enabled, time_running, values[nr] in group order */
	uint64_t nr = buf[0];
	for (uint64_t k = 0; k < nr && i + (int)k < c->nevents && 3 + k < (uint64_t)n / 8; k++) {
		int e = i + (int)k;
		uint64_t v = buf[3 + k];
		if (leaf != UINT32_MAX && v > t->last[e])
			cct_add(&t->cct, leaf, (unsigned)e, v - t->last[e]);
		t->last[e] = v;
		t->enabled[e] = buf[1];
		t->running[e] = buf[2];
		t->samples[e] += sample;
	}
}

/*
 * The kernel frames of the newest sample in event I's buffer, leaf first, into OUT; the
 * buffer is emptied.  Returns how many (0 when there are none or the record is damaged).
 */
static uint32_t kernel_frames(struct mthread *t, int i, struct rt_frame *out, uint32_t max)
{
	struct perf_event_mmap_page *pg = t->ring[i];
	if (!pg)
		return 0;
	const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
	uint64_t size = pg->data_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	uint64_t chain[RT_MAX_KERNEL_FRAMES + 2];
	uint32_t nchain = 0;
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		for (size_t k = 0; k < sizeof(h); k++)
			((uint8_t *)&h)[k] = data[(tail + k) % size];
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 8) {
			uint64_t nr = 0;
			for (size_t k = 0; k < 8; k++)
				((uint8_t *)&nr)[k] = data[(tail + sizeof(h) + k) % size];
			nchain = 0;
			for (uint64_t k = 0; k < nr && nchain < ARRAY_SIZE(chain) &&
					     sizeof(h) + 8 + (k + 1) * 8 <= h.size; k++) {
				uint64_t ip = 0;
				for (size_t b = 0; b < 8; b++)
					((uint8_t *)&ip)[b] =
						data[(tail + sizeof(h) + 8 + k * 8 + b) % size];
				chain[nchain++] = ip;
			}
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	uint32_t kernel = loadmap_kernel(), n = 0;
	for (uint32_t k = 0; k < nchain && n < max; k++) {
		if (chain[k] >= (uint64_t)PERF_CONTEXT_MAX)
			continue; /* a context marker */
		out[n].module = kernel;
		out[n].offset = chain[k];
		n++;
	}
	return n;
}

/* Insert T->frames[0..n) (leaf first) under ROOT, reusing the previous sample's prefix. */
static uint32_t insert_path(struct mthread *t, uint32_t n, bool complete)
{
	struct cct *tree = &t->cct;
	uint32_t node = 0;
	if (!complete) {
		node = cct_child(tree, 0, MFILE_NODE_PARTIAL, MFILE_NO_MODULE, 0);
		if (node == UINT32_MAX)
			return node;
	}
	uint32_t same = 0;
	if (t->path_partial == !complete) {
		while (same < t->path_len && same + 1 < n) {
			const struct rt_frame *f = &t->frames[n - 1 - same];
			if (t->path[same].module != f->module || t->path[same].offset != f->offset)
				break;
			same++;
		}
	}
	if (same)
		node = t->path_nodes[same - 1];
	for (uint32_t d = same; d < n; d++) {
		const struct rt_frame *f = &t->frames[n - 1 - d];
		uint8_t kind = d == n - 1 ? MFILE_NODE_SAMPLE : MFILE_NODE_FRAME;
		node = cct_child(tree, node, kind, f->module, f->offset);
		if (node == UINT32_MAX) {
			t->path_len = 0;
			return node;
		}
		/* The leaf is not cached: the same pc as a caller frame is a different node. */
		if (d + 1 < n) {
			t->path[d] = *f;
			t->path_nodes[d] = node;
		}
	}
	t->path_len = n ? n - 1 : 0;
	t->path_partial = !complete;
	return node;
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

/* One sample of source SRC on thread T, interrupted at UCV. */
static void take_sample(struct mthread *t, int src, void *ucv)
{
	const struct mconfig *c = &rt.cfg;
	t->taken++;
	if (t->busy || t->stopped) {
		t->drops[t->busy ? RT_DROP_REENTRANT : RT_DROP_STOPPED]++;
	} else {
		t->busy = 1;
		bool complete;
		uint32_t nk = 0;
		if (c->ev[src].source == MSOURCE_PERF && t->ring[src])
			nk = kernel_frames(t, src, t->frames, RT_MAX_KERNEL_FRAMES);
		uint32_t n = nk + rt_unwind(t, ucv, t->frames + nk, RT_MAX_FRAMES - nk, &complete);
		uint32_t leaf = n ? insert_path(t, n, complete) : UINT32_MAX;
		if (leaf == UINT32_MAX)
			t->drops[RT_DROP_MEMORY]++;
		if (c->ev[src].source == MSOURCE_PERF) {
			credit_perf(t, leader_of(c, src), leaf, true);
		} else {
			uint64_t now = c->ev[src].source == MSOURCE_CPUTIME ? thread_cpu_ns()
									     : rt_monotonic_ns();
			if (leaf != UINT32_MAX && now > t->last[src])
				cct_add(&t->cct, leaf, (unsigned)src, now - t->last[src]);
			t->last[src] = now;
			t->samples[src]++;
		}
		if (leaf != UINT32_MAX) {
			t->recorded++;
			if (!complete)
				t->partial++;
			if (c->flags & MCONFIG_TRACE)
				record_trace(t, leaf);
		}
		t->busy = 0;
	}
	if (c->ev[src].source == MSOURCE_PERF && !t->stopped)
		ioctl(t->fd[src], PERF_EVENT_IOC_REFRESH, 1);
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
		for (int i = 0; i < c->nevents; i++)
			if (t->fd[i] >= 0 && t->fd[i] == info->si_fd)
				src = i;
	}
	if (!t || src < 0 || src >= c->nevents) {
		if (t)
			t->drops[RT_DROP_SOURCE]++;
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
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && t->fd[i] >= 0) {
			leaders++;
			src = i;
		}
	if (leaders == 1) {
		take_sample(t, trigger_of(c, src), ucv); /* the only event that can have fired */
		return true;
	}
	/* Several events: which one fired is unknown; re-arm them all and count a drop. */
	for (int i = 0; i < c->nevents; i++)
		if (is_leader(c->ev, i) && t->fd[i] >= 0)
			ioctl(t->fd[trigger_of(c, i)], PERF_EVENT_IOC_REFRESH, 1);
	if (leaders)
		t->drops[RT_DROP_QUEUE]++;
	return leaders > 0;
}

int rt_sampler_install(void)
{
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
	t->last[i] = e->source == MSOURCE_CPUTIME ? thread_cpu_ns() : rt_monotonic_ns();
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
	if (!c->ev[trig].exclude_kernel && (rt.cfg.flags & MCONFIG_KERNEL)) {
		size_t bytes = (size_t)(1 + RT_RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
		void *ring = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		t->ring[trig] = ring == MAP_FAILED ? NULL : ring;
	}
	struct f_owner_ex owner = { F_OWNER_TID, t->tid };
	if (fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0 || fcntl(fd, F_SETSIG, rt.signo) < 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) < 0)
		return fth_error_errno(errno, "%s: cannot route its signal", c->ev[i].name);
	ioctl(t->fd[leader], PERF_EVENT_IOC_RESET, group ? PERF_IOC_FLAG_GROUP : 0);
	if (ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0)
		return fth_error_errno(errno, "%s: cannot enable", c->ev[trig].name);
	/* A member that samples was armed above; the group starts with its leader. */
	if (trig != leader && ioctl(t->fd[leader], PERF_EVENT_IOC_ENABLE, 0) < 0)
		return fth_error_errno(errno, "%s: cannot enable", c->ev[leader].name);
	return 0;
}

int rt_sources_start(struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < MCONFIG_MAX_EVENTS; i++)
		t->fd[i] = -1;
	for (int i = 0; i < c->nevents; i++) {
		int rc = 0;
		if (c->ev[i].source != MSOURCE_PERF)
			rc = start_timer(t, i);
		else if (is_leader(c->ev, i))
			rc = start_perf(t, i);
		if (rc < 0)
			return -1;
	}
	return 0;
}

void rt_sources_stop(struct mthread *t)
{
	t->stopped = 1;
	if (t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = false;
	}
	const struct mconfig *c = &rt.cfg;
	for (int i = 0; i < c->nevents; i++) {
		if (!is_leader(c->ev, i) || t->fd[i] < 0)
			continue;
		ioctl(t->fd[i], PERF_EVENT_IOC_DISABLE, 0);
		/* Enabled and running times only: counts after the last sample have no context. */
		credit_perf(t, i, UINT32_MAX, false);
	}
	size_t bytes = (size_t)(1 + RT_RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	for (int i = 0; i < c->nevents; i++) {
		if (t->ring[i])
			munmap(t->ring[i], bytes);
		t->ring[i] = NULL;
		if (t->fd[i] >= 0)
			rt_close(t->fd[i]);
		t->fd[i] = -1;
	}
}

void rt_fd_moved(int oldfd, int newfd)
{
	for (struct mthread *t = rt.threads; t; t = t->next)
		for (int i = 0; i < rt.cfg.nevents; i++)
			if (t->fd[i] == oldfd)
				t->fd[i] = newfd;
	rt_writer_fd_moved(oldfd, newfd);
}
