/* SPDX-License-Identifier: MIT */
/*
 * sampler.c: the signal handlers and what every source's sample shares.  The measurement
 * signal (a timer's, or a perf event's through F_SETSIG), perf's SIGTRAP and the SIGIO of a
 * full signal queue reach the source they stand for through the registry (source.h); a
 * source's sample claims the thread, unwinds, inserts the path into the thread's tree and
 * credits what it measured since the thread's previous sample.  The handlers save errno, drop
 * reentrant samples, and use no malloc, no stdio, no locks.  The thread-level operations
 * (start, quiet, stop, release) run every source of the configuration in turn.
 */
#include "compat.h"
#include "source.h"

#include <errno.h>
#include <string.h>

/* Call HOOK ARGS (ARGS in parentheses) of each source the configuration uses that has one. */
#define CALL_USED_SOURCES(hook, args)                                                  \
	do {                                                                           \
		int n_;                                                                \
		const struct rt_source *const *s_ = rt_sources_used(&n_);              \
		for (int k_ = 0; k_ < n_; k_++)                                        \
			if (s_[k_]->hook)                                              \
				s_[k_]->hook args;                                     \
	} while (0)

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

/* Let every source note what a refused sample of T leaves (perf: records in its rings). */
static void note_refused(struct mthread *t)
{
	CALL_USED_SOURCES(sample_refused, (t));
}

void rt_sample_refuse(struct mthread *t, enum rt_drop why)
{
	t->drops[why]++;
	note_refused(t);
}

/*
 * Mark T busy for a sample, unless it is already (a sample inside measure) or stopped.  With
 * rt_sources_stop(), which sets stopped and then waits for busy to clear before the sources
 * release their rings, this makes sure a sample never reads a ring that another thread has
 * unmapped.  The sample clears T->busy when it is done.
 */
bool rt_sample_claim(struct mthread *t)
{
	t->taken++;
	if (t->busy) {
		t->drops[RT_DROP_REENTRANT]++;
		note_refused(t);
		return false;
	}
	t->busy = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (t->stopped) {
		t->busy = 0;
		t->drops[RT_DROP_STOPPED]++;
		note_refused(t);
		return false;
	}
	if (!rt_thread_tree(t)) {
		rt_sample_refuse(t, RT_DROP_MEMORY);
		t->busy = 0;
		return false;
	}
	return true;
}

uint32_t rt_sample_path(struct mthread *t, void *uc, uint32_t nkernel, bool *complete,
			uint32_t *n)
{
	uint32_t reused;
	*n = nkernel + rt_unwind(t, uc, t->frames + nkernel, RT_MAX_FRAMES - nkernel, complete,
				 &reused);
	return insert_path(t, *n, reused, *complete);
}

void rt_sample_recorded(struct mthread *t, uint32_t leaf, bool complete, uint32_t n, bool trace)
{
	if (leaf == UINT32_MAX) {
		t->drops[RT_DROP_MEMORY]++;
	} else {
		t->recorded++;
		if (!complete) {
			t->partial++;
			rt_unwind_note_partial(t, t->frames, n);
		}
		if (trace && (rt.cfg.flags & MCONFIG_TRACE))
			record_trace(t, leaf);
	}
}

static void handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	if (rt_forward_program_signal(sig, info, ucv)) {
		errno = saved_errno;
		return;
	}
	struct mthread *t = rt_self();
	if (t) {
		int n, src = -1;
		const struct rt_source *const *s = rt_sources_used(&n);
		for (int k = 0; k < n && src < 0; k++)
			if (s[k]->signalled)
				src = s[k]->signalled(t, info);
		if (src >= 0 && src < rt.cfg.nevents && rt_source_of(src)->sample)
			rt_source_of(src)->sample(t, src, ucv);
		else
			rt_sample_refuse(t, RT_DROP_SOURCE);
	}
	errno = saved_errno;
}

bool rt_sampler_overflow(void *ucv)
{
	struct mthread *t = rt_self();
	if (!t || t->stopped)
		return false;
	int n;
	const struct rt_source *const *s = rt_sources_used(&n);
	for (int k = 0; k < n; k++)
		if (s[k]->overflow && s[k]->overflow(t, ucv))
			return true;
	return false;
}

bool rt_sampler_traps(void)
{
	int n;
	const struct rt_source *const *s = rt_sources_used(&n);
	for (int k = 0; k < n; k++)
		if (s[k]->uses_sigtrap && s[k]->uses_sigtrap())
			return true;
	return false;
}

bool rt_sampler_trap(siginfo_t *info, void *ucv)
{
	int n;
	const struct rt_source *const *s = rt_sources_used(&n);
	bool ours = false;
	for (int k = 0; k < n && !ours; k++)
		ours = s[k]->traps && s[k]->traps(info);
	if (!ours)
		return false;
	int saved_errno = errno;
	struct mthread *t = rt_self();
	/* A SIGTRAP that is already pending absorbs the next one: every source looks. */
	for (int k = 0; k < n; k++)
		if (s[k]->trap)
			s[k]->trap(t, info, ucv);
	errno = saved_errno;
	return true;
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

void rt_sources_init(void)
{
	CALL_USED_SOURCES(process_init, ());
}

void rt_sources_finish(void)
{
	CALL_USED_SOURCES(process_finish, ());
}

void rt_sources_summary(void)
{
	CALL_USED_SOURCES(process_summary, ());
}

void rt_sources_thread_init(struct mthread *t)
{
	CALL_USED_SOURCES(thread_init, (t));
}

int rt_sources_start(struct mthread *t)
{
	for (int i = 0; i < rt.cfg.nevents; i++) {
		const struct rt_source *s = rt_source_of(i);
		if (s->thread_start && s->thread_start(t, i) < 0)
			return -1;
	}
	return 0;
}

void rt_sources_quiet(struct mthread *t)
{
	/* The thread itself and an exit in another thread may both come here: one disables. */
	if (__atomic_exchange_n(&t->quiet, true, __ATOMIC_ACQ_REL))
		return;
	CALL_USED_SOURCES(thread_quiet, (t));
}

bool rt_sources_raised(const struct mthread *t)
{
	if (t->stopped)
		return false; /* it takes no more samples */
	int n;
	const struct rt_source *const *s = rt_sources_used(&n);
	for (int k = 0; k < n; k++)
		if (s[k]->thread_raised && s[k]->thread_raised(t))
			return true;
	return false;
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
	CALL_USED_SOURCES(thread_stop, (t));
}

static void release_all(struct mthread *t, bool forget)
{
	CALL_USED_SOURCES(thread_release, (t, forget));
}

void rt_sources_release(struct mthread *t)
{
	release_all(t, false);
}

/* A forked child abandons the parent's records: writing to them would only copy their pages. */
void rt_sources_forget(struct mthread *t)
{
	release_all(t, true);
}

void rt_sources_written(const struct mthread *t)
{
	CALL_USED_SOURCES(thread_written, (t));
}

void rt_fd_moved(int oldfd, int newfd)
{
	int n;
	const struct rt_source *const *s = rt_sources_used(&n);
	for (struct mthread *t = rt.threads; t; t = t->next)
		for (int k = 0; k < n; k++)
			if (s[k]->fd_moved)
				s[k]->fd_moved(t, oldfd, newfd);
	rt_writer_fd_moved(oldfd, newfd);
}
