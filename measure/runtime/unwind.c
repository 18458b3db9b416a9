/* SPDX-License-Identifier: MIT */
/*
 * unwind.c: call paths from the signal context.  Each step finds the module of the pc in the
 * load map and applies that module's CFI row (cfi.h); where no row applies it tries the frame
 * pointer, and every step is validated (the stack pointer must grow, stay inside the thread's
 * stack, and the return address must lie in a known module).  No malloc, no locks, no loader
 * calls.  A walk that ends before the outermost frame is reported as partial.  The synchronous
 * sources (IO, MEMLEAK) walk from their wrapper's own frame instead, dropping measure's frames.
 * A sample's walk stops stepping where it meets the outer frames of the thread's previous walk
 * unchanged, and reuses them (struct walk_reuse).
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"

#include <ucontext.h>

/* Frame-pointer step, for code without a usable row; validated by the caller. */
static int fp_step(struct cfi_regs *r, const struct cfi_stack *st)
{
	uint64_t fp = r->rbp;
	if (fp < r->rsp || fp + 16 > st->hi || fp < st->lo || (fp & 7))
		return -1;
	const uint64_t *slot = (const uint64_t *)fp;
	uint64_t ra = slot[1], caller_fp = slot[0];
	if (ra < 4096 || !loadmap_find(ra - 1))
		return -1;
	r->rip = ra;
	r->rsp = fp + 16;
	r->rbp = caller_fp;
	r->exact = false;
	return 0;
}

/*
 * What a walk for a synchronous source records besides the frames: where each return address
 * was read, and whether the path is a function of the first frame's pc and stack pointer and
 * of those stack words alone (every step from a recorded frame by a CFA = RSP + n row).
 */
struct walk_record {
	uint64_t *slots;
	bool cacheable;
};

/*
 * Reusing the thread's previous walk.  A step by a CFA = RSP + n row, with the return address
 * at CFA - 8, depends only on the pc, the stack pointer and the stack word the return address
 * is read from.  So when a walk reaches a frame of the previous walk (the same pc read from
 * the same stack address) and the previous walk went on from there by such steps only, the
 * rest of the path is the previous one as long as each of its return-address words still
 * holds the same value: comparing those words replaces the lookups and steps, which matters
 * for deep stacks whose outer part rarely changes between samples.  The previous walk is kept
 * outermost first (t->walk), so the part reused stays where it is: only the steps of this
 * walk inside it are written, reversed, after it, and the sampler's path[] does the same
 * with the frames.
 */
struct walk_reuse {
	struct mthread *t;
	uint32_t w;	    /* frames stepped through so far, recorded in t->walk_new */
	int32_t irregular;  /* the last of them whose step was not such a step, or -1 */
	int32_t p;	    /* cursor into t->walk: the innermost step still worth comparing */
	int32_t hit;	    /* the step of t->walk where this walk joined it, or -1 */
	bool usable;	    /* t->walk describes this thread and the same modules */
};

static void reuse_note(struct walk_reuse *ru, const struct cfi_regs *r, bool emitted)
{
	if (ru->w >= RT_MAX_FRAMES) {
		ru->irregular = RT_MAX_FRAMES; /* not recorded whole: never reused */
		return;
	}
	struct rt_walk_step *s = &ru->t->walk_new[ru->w++];
	s->slot = ru->w > 1 ? r->rsp - 8 : 0;
	s->pc = r->rip;
	s->emitted = emitted;
}

/* After the step from the frame last noted by module M's CFI (RC): was it a plain step? */
static void reuse_step(struct walk_reuse *ru, const struct lm_module *m, uint64_t lookup, int rc)
{
	if (rc == CFI_STEP_END)
		return; /* the outermost frame: a property of the pc */
	const struct cfi_row *row =
		rc == CFI_STEP_OK ? cfi_lookup(&m->cfi, lookup - m->bias) : NULL;
	if (!row || (row->kind != CFI_RSP && row->kind != CFI_PLT) || row->ra != -1)
		ru->irregular = (int32_t)ru->w - 1;
}

static bool on_stack(const struct cfi_stack *st, uint64_t addr)
{
	return (addr >= st->lo && addr < st->hi) || (addr >= st->alt_lo && addr < st->alt_hi);
}

/* At a caller frame R, with N frames in the path so far: when the previous walk holds R and
 * the rest of it is unchanged, and the whole path fits in MAX, note where and return true. */
static bool reuse_rest(struct walk_reuse *ru, const struct cfi_regs *r, const struct cfi_stack *st,
		       uint32_t n, uint32_t max, bool *complete)
{
	struct mthread *t = ru->t;
	const struct rt_walk_step *prev = t->walk;
	uint64_t slot = r->rsp - 8;
	int32_t p = ru->p;
	while (p >= 0 && prev[p].slot < slot)
		p--;
	ru->p = p;
	if (p < 0 || prev[p].slot != slot || prev[p].pc != r->rip)
		return false;
	for (int32_t k = p - 1; k >= 0; k--) {
		uint64_t s = prev[k].slot;
		if (!on_stack(st, s) || !on_stack(st, s + 7) ||
		    *(const volatile uint64_t *)(uintptr_t)s != prev[k].pc) {
			ru->p = k; /* no frame inside this changed word can be reused either */
			return false;
		}
	}
	if (n + prev[p].depth > max)
		return false; /* too long: the walk goes on and stops at MAX */
	*complete = true; /* only a complete walk is kept reusable */
	ru->hit = p;
	return true;
}

/*
 * Walk from REGS, reading the stack within BOUNDS.  THREAD, when known, is the thread's own
 * stack: a walk that starts elsewhere (on an alternate signal stack) and crosses a signal frame
 * onto it reads it from the page of the interrupted stack pointer up (never further below: the
 * main thread's stack may not be mapped there).
 */
static uint32_t walk(struct cfi_regs regs, const struct cfi_stack *bounds,
		     const struct cfi_stack *thread, struct rt_frame *out, uint32_t max,
		     bool *complete, struct walk_record *rec, struct walk_reuse *ru)
{
	struct cfi_stack stack = *bounds;
	const struct cfi_stack *st = &stack;
	uint32_t n = 0;
	*complete = false;
	while (n < max) {
		if (ru && ru->usable && ru->w > 0 && !regs.exact &&
		    reuse_rest(ru, &regs, st, n, max, complete))
			return n;
		uint64_t lookup = regs.exact ? regs.rip : regs.rip - 1;
		const struct lm_module *m = loadmap_find(lookup);
		if (!m) {
			out[n].module = MFILE_NO_MODULE;
			out[n].offset = regs.rip;
			if (ru)
				reuse_note(ru, &regs, true);
			if (rec) {
				rec->slots[n] = regs.rsp - 8;
				rec->cacheable = false;
			}
			n++;
			return n;
		}
		/*
		 * measure's own frames (thread start trampolines) are not the program's; a walk for
		 * a synchronous source starts inside measure and drops all of them.
		 */
		bool own = m->id == rt_self_module();
		if (rec && (n || !own)) {
			const struct cfi_row *row = cfi_lookup(&m->cfi, lookup - m->bias);
			if (!row || (row->kind != CFI_RSP && row->kind != CFI_PLT) ||
			    (row->ra != -1 && !(row->flags & CFI_F_RA_UNDEF)))
				rec->cacheable = false;
		}
		bool emit = rec ? !own : !own || n == 0;
		if (emit) {
			out[n].module = m->id;
			out[n].offset = regs.rip - m->bias;
			if (rec)
				rec->slots[n] = regs.rsp - 8;
			n++;
		}
		if (ru)
			reuse_note(ru, &regs, emit);
		uint64_t old_rsp = regs.rsp;
		int rc = m->cfi.nrows ? cfi_step(&m->cfi, &regs, st) : CFI_STEP_NO_ROW;
		if (ru)
			reuse_step(ru, m, lookup, rc);
		if (rec && n && rc != CFI_STEP_OK && rc != CFI_STEP_END)
			rec->cacheable = false;
		if (rc == CFI_STEP_END) {
			*complete = true;
			return n;
		}
		if (rc < 0 && fp_step(&regs, st) < 0)
			return n;
		if (rc == CFI_STEP_SIGNAL && thread && !on_stack(st, regs.rsp) &&
		    regs.rsp >= thread->lo && regs.rsp < thread->hi) {
			/* The interrupted frame's red zone may hold saved registers, but no frame
			 * was pushed below it: only the page of its stack pointer is surely mapped. */
			uint64_t page = regs.rsp & ~(uint64_t)4095;
			stack.alt_lo = page > thread->lo ? page : thread->lo;
			stack.alt_hi = thread->hi;
		}
		if (rc != CFI_STEP_SIGNAL && regs.rsp <= old_rsp)
			return n; /* the stack must grow towards the caller */
		if (!regs.exact && loadmap_find(regs.rip - 1) == NULL) {
			/* A return address outside every module: record it and stop. */
			if (n < max) {
				out[n].module = MFILE_NO_MODULE;
				out[n].offset = regs.rip;
				if (rec)
					rec->slots[n] = regs.rsp - 8;
				if (ru)
					reuse_note(ru, &regs, true);
				n++;
			}
			return n;
		}
	}
	return n;
}

void rt_unwind_prepare(struct mthread *t)
{
	t->walk = arena_alloc(&t->arena, RT_MAX_FRAMES * sizeof(*t->walk), 16);
	t->walk_new = arena_alloc(&t->arena, RT_MAX_FRAMES * sizeof(*t->walk_new), 16);
	t->walk_n = 0;
	/* The first page of each: enough for paths of 170 frames. */
	arena_prefault(t->walk, 4096);
	arena_prefault(t->walk_new, 4096);
}

uint32_t rt_unwind(struct mthread *t, const ucontext_t *uc, struct rt_frame *out, uint32_t max,
		   bool *complete, uint32_t *reused)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	struct cfi_regs regs = { (uint64_t)g[REG_RIP], (uint64_t)g[REG_RSP], (uint64_t)g[REG_RBP],
				 (uint64_t)g[REG_RBX], true };
	/*
	 * Every caller frame lies above the interrupted stack pointer, and below it the stack
	 * may not even be mapped (the main thread's grows on demand): never read below it, but
	 * for the 128-byte red zone of a leaf function.
	 */
	struct cfi_stack st = { regs.rsp - 128, t->stack_hi, 0, 0 };
	struct cfi_stack thread = { t->stack_lo, t->stack_hi, 0, 0 };
	if (!st.hi || regs.rsp < t->stack_lo || regs.rsp >= st.hi) {
		/* Not on the thread's known stack (an alternate signal stack, a coroutine):
		 * bound reads by a window above the stack pointer instead, with the red zone
		 * below it (the handler runs on the same stack: its frame lies below that). */
		st.lo = regs.rsp - 128;
		st.hi = regs.rsp + (8u << 20);
	}
	const struct cfi_stack *own = t->stack_hi ? &thread : NULL;
	*reused = 0;
	if (!t->walk)
		rt_unwind_prepare(t);
	if (!t->walk || !t->walk_new)
		return walk(regs, &st, own, out, max, complete, NULL, NULL);
	uint32_t modules = loadmap_count();
	struct walk_reuse ru = { t, 0, -1, (int32_t)t->walk_reusable - 1, -1,
				 t->walk_n && t->walk_modules == modules };
	uint32_t n = walk(regs, &st, own, out, max, complete, NULL, &ru);
	/* The new walk, outermost first: the steps kept, then this walk's own, reversed. */
	uint32_t keep = ru.hit >= 0 ? (uint32_t)ru.hit + 1 : 0;
	if (keep)
		*reused = t->walk[keep - 1].depth;
	if (ru.irregular == RT_MAX_FRAMES || keep + ru.w > RT_MAX_FRAMES) {
		t->walk_n = 0;
		return n;
	}
	uint32_t depth = *reused;
	for (uint32_t i = 0; i < ru.w; i++) {
		struct rt_walk_step *s = &t->walk[keep + i];
		*s = t->walk_new[ru.w - 1 - i];
		depth += s->emitted;
		s->depth = depth;
	}
	t->walk_n = keep + ru.w;
	/* An incomplete walk is never reused: how it ended depended on more than the pcs. */
	t->walk_reusable =
		*complete ? t->walk_n - 1 - (uint32_t)(ru.irregular > 0 ? ru.irregular : 0) : 0;
	t->walk_modules = modules;
	return n;
}

void rt_unwind_forget(struct mthread *t)
{
	t->walk_n = 0;
}

void rt_unwind_note_partial(struct mthread *t, const struct rt_frame *out, uint32_t n)
{
	/* The last frame in a module: the step from it (or to the next) is the one that failed. */
	for (uint32_t i = n; i-- > 0;) {
		if (out[i].module == MFILE_NO_MODULE)
			continue;
		const struct lm_module *m = loadmap_get(out[i].module);
		if (m && m->table_shared) {
			t->partial_shared++;
			t->partial_shared_module = m->id;
		}
		return;
	}
}

uint32_t rt_unwind_here(struct rt_frame *out, uint32_t max)
{
	ucontext_t uc;
	if (getcontext(&uc) < 0)
		return 0;
	struct mthread *t = rt_self();
	const greg_t *g = uc.uc_mcontext.gregs;
	struct cfi_regs regs = { (uint64_t)g[REG_RIP], (uint64_t)g[REG_RSP], (uint64_t)g[REG_RBP],
				 (uint64_t)g[REG_RBX], true };
	struct cfi_stack st = { regs.rsp, regs.rsp + (8u << 20), 0, 0 };
	struct cfi_stack thread = { t ? t->stack_lo : 0, t ? t->stack_hi : 0, 0, 0 };
	if (thread.hi && regs.rsp >= thread.lo && regs.rsp < thread.hi)
		st = thread;
	bool complete;
	return walk(regs, &st, thread.hi ? &thread : NULL, out, max, &complete, NULL, NULL);
}

__attribute__((noinline)) uint32_t rt_unwind_caller(struct mthread *t, struct rt_frame *out,
						    uint64_t *slots, uint32_t max, bool *complete,
						    bool *cacheable)
{
	/* This frame's registers, through memory so that no output register aliases them. */
	uint64_t r[4];
	__asm__ volatile("lea 0(%%rip), %%rax\n\t"
			 "mov %%rax, 0(%0)\n\t"
			 "mov %%rsp, 8(%0)\n\t"
			 "mov %%rbp, 16(%0)\n\t"
			 "mov %%rbx, 24(%0)"
			 :
			 : "r"(r)
			 : "rax", "memory");
	struct cfi_regs regs = { r[0], r[1], r[2], r[3], true };
	struct cfi_stack st = { regs.rsp, regs.rsp + (8u << 20), 0, 0 };
	struct cfi_stack thread = { t->stack_lo, t->stack_hi, 0, 0 };
	if (thread.hi && regs.rsp >= thread.lo && regs.rsp < thread.hi)
		st = thread;
	struct walk_record rec = { slots, true };
	uint32_t n = walk(regs, &st, thread.hi ? &thread : NULL, out, max, complete, &rec, NULL);
	*cacheable = rec.cacheable && *complete && n > 0;
	return n;
}
