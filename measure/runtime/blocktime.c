/* SPDX-License-Identifier: MIT */
/*
 * blocktime.c: the BLOCKTIME source of the preloaded library.  The thread's context-switch
 * counter overflows at every switch-out; the kernel then queues a SIGTRAP for the thread's
 * next return to user mode (attr.sigtrap), so the sleep itself is never interrupted, and the
 * trap arrives when the blocking call returns, with the thread still in that call: its context
 * is the blocking call path.  The time comes from the PERF_RECORD_SWITCH records in the ring:
 * from a switch-out that was not a preemption to the next switch-in.  A preemption (the thread
 * could run) is not blocked time.
 */
#include "compat.h"
#include "perf-ring.h"
#include "source.h"

#include <errno.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

struct blocktime_thread {
	int fd; /* -1: not open */
	void *ring;
	uint64_t blocked_since; /* monotonic time of a blocking switch-out, or 0 */
};

static struct blocktime_thread *state_of(const struct mthread *t)
{
	return rt_source_state(t, MSOURCE_BLOCKTIME);
}

static int blocktime_event = -1; /* its index in the configuration */

static void blocktime_process_init(void)
{
	rt_ring_init();
	blocktime_event = -1;
	for (int i = 0; i < rt.cfg.nevents; i++)
		if (rt.cfg.ev[i].source == MSOURCE_BLOCKTIME)
			blocktime_event = i;
}

static void blocktime_thread_init(struct mthread *t)
{
	state_of(t)->fd = -1;
}

static int blocktime_thread_start(struct mthread *t, int i)
{
	(void)i;
	struct blocktime_thread *b = state_of(t);
	struct perf_event_attr a;
	mconfig_blocktime_attr(&a);
	int fd = rt_perf_open(&a, -1);
	if (fd < 0)
		return fth_error_errno(errno, "BLOCKTIME: perf_event_open");
	b->fd = fd;
	b->ring = rt_ring_map(fd, false);
	if (!b->ring)
		return fth_error_errno(errno, "BLOCKTIME: cannot map its ring buffer");
	b->blocked_since = 0;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return fth_error_errno(errno, "BLOCKTIME: cannot enable");
	return 0;
}

/* Read the switch records of B's ring; returns the time blocked they complete (ns). */
static uint64_t blocked_time(struct blocktime_thread *b)
{
	struct perf_event_mmap_page *pg = b->ring;
	if (!pg)
		return 0;
	const uint8_t *data = (const uint8_t *)pg + pg->data_offset;
	uint64_t size = pg->data_size, total = 0;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;
	struct perf_event_header h;
	while (tail + sizeof(h) <= head) {
		rt_ring_copy(data, size, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || tail + h.size > head)
			break;
		if (h.type == PERF_RECORD_SWITCH && h.size >= sizeof(h) + 8) {
			uint64_t when;
			rt_ring_copy(data, size, tail + h.size - 8, &when, 8); /* sample_id: time */
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT) {
				b->blocked_since =
					h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? 0 : when;
			} else {
				if (b->blocked_since && when > b->blocked_since)
					total += when - b->blocked_since;
				b->blocked_since = 0;
			}
		} else if (h.type == PERF_RECORD_LOST) {
			b->blocked_since = 0; /* switches were lost: this interval is unknown */
		}
		tail += h.size;
	}
	__atomic_store_n(&pg->data_tail, tail, __ATOMIC_RELEASE);
	return total;
}

static bool blocktime_traps(const siginfo_t *info)
{
	return rt_perf_sig_data(info) == MCONFIG_BLOCKTIME_SIGDATA;
}

/*
 * Any of measure's traps on T (a SIGTRAP already pending absorbs the next one, so a sample's
 * trap may stand for a switch-in too): credit the blocked time the ring completes to UC.
 */
static void blocktime_trap(struct mthread *t, const siginfo_t *info, void *uc)
{
	(void)info;
	int i = blocktime_event;
	/* Inside measure (a wrapper's unwind): the records wait for the next trap. */
	if (!t || i < 0 || t->busy)
		return;
	t->busy = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	struct blocktime_thread *b = state_of(t);
	if (t->stopped || b->fd < 0) {
		t->busy = 0;
		return;
	}
	uint64_t blocked = blocked_time(b);
	if (blocked && !rt_thread_tree(t)) {
		t->drops[RT_DROP_MEMORY]++;
	} else if (blocked) {
		t->taken++;
		bool complete;
		uint32_t n;
		uint32_t leaf = rt_sample_path(t, uc, 0, &complete, &n);
		if (leaf != UINT32_MAX) {
			cct_add(&t->cct, leaf, (unsigned)i, blocked);
			t->samples[i]++;
		}
		rt_sample_recorded(t, leaf, complete, n, false);
	}
	t->busy = 0;
}

static bool blocktime_uses_sigtrap(void)
{
	return blocktime_event >= 0;
}

static void blocktime_thread_release(struct mthread *t, bool forget)
{
	struct blocktime_thread *b = state_of(t);
	/* A forked child has no copy of its parent's ring: perf maps it VM_DONTCOPY. */
	if (b->ring && !forget) {
		munmap(b->ring, rt_ring_bytes());
		b->ring = NULL;
	}
	if (b->fd >= 0) {
		rt_close(b->fd);
		if (!forget)
			b->fd = -1;
	}
}

static void blocktime_thread_stop(struct mthread *t)
{
	if (!rt.finished)
		blocktime_thread_release(t, false);
}

static void blocktime_fd_moved(struct mthread *t, int oldfd, int newfd)
{
	struct blocktime_thread *b = state_of(t);
	if (b->fd == oldfd)
		b->fd = newfd;
}

static void blocktime_describe(const struct mevent *e, struct mfile_metric *x, char *desc,
			       size_t size)
{
	(void)e;
	fth_format(desc, size, "time blocked (switched out, not preempted) by the calling context "
			       "where the thread blocked, from perf context-switch records");
	rt_describe_every_event(x);
}

const struct rt_source rt_blocktime_source = {
	.name = "BLOCKTIME",
	.thread_bytes = sizeof(struct blocktime_thread),
	.process_init = blocktime_process_init,
	.thread_init = blocktime_thread_init,
	.thread_start = blocktime_thread_start,
	.thread_stop = blocktime_thread_stop,
	.thread_release = blocktime_thread_release,
	.traps = blocktime_traps,
	.trap = blocktime_trap,
	.uses_sigtrap = blocktime_uses_sigtrap,
	.fd_moved = blocktime_fd_moved,
	.describe = blocktime_describe,
};
