/* SPDX-License-Identifier: MIT */
/*
 * unwind-check.c: measure's unwinder offered to a program that checks it against another
 * unwinder (tests/measure-workloads/unwind-ref.c compares it with libunwind).  The one symbol
 * the preloaded library exports besides its interposers; it is never called by measure itself.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"

#include <string.h>
#include <ucontext.h>

/* One private walk state per checked thread, so that its walks reuse each other's outer
 * frames as the sampler's walks of that thread do (unwind.c, struct walk_reuse). */
#define CHECK_THREADS 16

static struct {
	pid_t tid;
	struct mthread t;
} checked[CHECK_THREADS];
static struct rt_frame check_frames[RT_MAX_FRAMES];

static struct mthread *check_state(pid_t tid)
{
	struct mthread *src = NULL;
	for (struct mthread *t = rt.threads; t && !src; t = t->next)
		if (t->tid == tid)
			src = t;
	if (!src)
		return NULL;
	for (size_t i = 0; i < CHECK_THREADS; i++) {
		if (checked[i].tid == tid || !checked[i].tid) {
			struct mthread *t = &checked[i].t;
			if (!checked[i].tid) {
				checked[i].tid = tid;
				arena_init(&t->arena, 1u << 20, 0);
			}
			t->tid = tid;
			t->stack_lo = src->stack_lo;
			t->stack_hi = src->stack_hi;
			return t;
		}
	}
	return NULL;
}

static bool own_frame(uint64_t pc, bool exact)
{
	const struct lm_module *m = loadmap_find(exact ? pc : pc - 1);
	return m && m->id == rt_self_module();
}

/*
 * The call path of UC, a context of thread TID of this process that holds still (stopped in a
 * signal handler that waits), walked by rt_unwind() as a sample of TID would be, but outside
 * any handler and from any thread, one caller at a time.  Writes up to MAX frames, innermost
 * first: PC[i], SP[i] (the stack pointer in frame i: for i > 0 the canonical frame address of
 * frame i - 1; 0 when unknown) and OWN[i] (the frame is measure's own, which samples do not
 * record but for a first frame).  *COMPLETE is whether the walk reached the outermost frame,
 * *REUSED how many frames came from the previous walk of TID.  Returns the number of frames,
 * -1 when TID is not a thread measure knows (or more threads are checked than it keeps), -2
 * when the walk's record of its steps disagrees with the frames it returned.
 */
__attribute__((visibility("default"))) int
fathom_measure_unwind(pid_t tid, const ucontext_t *uc, uint64_t *pc, uint64_t *sp, bool *own,
		      uint32_t max, bool *complete, uint32_t *reused);

int fathom_measure_unwind(pid_t tid, const ucontext_t *uc, uint64_t *pc, uint64_t *sp, bool *own,
			  uint32_t max, bool *complete, uint32_t *reused)
{
	struct mthread *t = rt.active ? check_state(tid) : NULL;
	if (!t)
		return -1;
	uint32_t n = rt_unwind(t, uc, check_frames, RT_MAX_FRAMES, complete, reused);
	uint32_t k = 0;
	if (!t->walk_n) {
		/* Not recorded (too long to keep): the frames alone, without stack pointers. */
		for (; k < n && k < max; k++) {
			const struct rt_frame *f = &check_frames[k];
			const struct lm_module *m =
				f->module == MFILE_NO_MODULE ? NULL : loadmap_get(f->module);
			pc[k] = m ? m->bias + f->offset : f->offset;
			sp[k] = 0;
			own[k] = own_frame(pc[k], k == 0);
		}
		return (int)k;
	}
	/* The record holds the whole path, the reused outer part included; the frames returned
	 * are this walk's own steps, its innermost ones. */
	uint32_t emitted = 0;
	for (int32_t i = (int32_t)t->walk_n - 1; i >= 0 && k < max; i--, k++) {
		const struct rt_walk_step *s = &t->walk[i];
		pc[k] = s->pc;
		sp[k] = k ? s->slot + 8 : (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
		own[k] = own_frame(s->pc, k == 0);
		if (!s->emitted || emitted++ >= n)
			continue;
		const struct rt_frame *f = &check_frames[emitted - 1];
		const struct lm_module *m =
			f->module == MFILE_NO_MODULE ? NULL : loadmap_get(f->module);
		if ((m ? m->bias + f->offset : f->offset) != s->pc)
			return -2;
	}
	if (k == t->walk_n && emitted != n + *reused)
		return -2;
	return (int)k;
}
