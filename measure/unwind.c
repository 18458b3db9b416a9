/* SPDX-License-Identifier: MIT */
/*
 * unwind.c: call paths from the signal context.  Each step finds the module of the pc in the
 * load map and applies that module's CFI row (cfi.h); where no row applies it tries the frame
 * pointer, and every step is validated (the stack pointer must grow, stay inside the thread's
 * stack, and the return address must lie in a known module).  No malloc, no locks, no loader
 * calls.  A walk that ends before the outermost frame is reported as partial.
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

static uint32_t walk(struct cfi_regs regs, const struct cfi_stack *st, struct rt_frame *out,
		     uint32_t max, bool *complete)
{
	uint32_t n = 0;
	*complete = false;
	while (n < max) {
		uint64_t lookup = regs.exact ? regs.rip : regs.rip - 1;
		const struct lm_module *m = loadmap_find(lookup);
		if (!m) {
			out[n].module = MFILE_NO_MODULE;
			out[n].offset = regs.rip;
			n++;
			return n;
		}
		/* measure's own frames (thread start trampolines) are not the program's. */
		if (m->id != rt_self_module() || n == 0) {
			out[n].module = m->id;
			out[n].offset = regs.rip - m->bias;
			n++;
		}
		uint64_t old_rsp = regs.rsp;
		int rc = m->cfi.nrows ? cfi_step(&m->cfi, &regs, st) : CFI_STEP_NO_ROW;
		if (rc == CFI_STEP_END) {
			*complete = true;
			return n;
		}
		if (rc < 0 && fp_step(&regs, st) < 0)
			return n;
		if (rc != CFI_STEP_SIGNAL && regs.rsp <= old_rsp)
			return n; /* the stack must grow towards the caller */
		if (!regs.exact && loadmap_find(regs.rip - 1) == NULL) {
			/* A return address outside every module: record it and stop. */
			if (n < max) {
				out[n].module = MFILE_NO_MODULE;
				out[n].offset = regs.rip;
				n++;
			}
			return n;
		}
	}
	return n;
}

uint32_t rt_unwind(struct mthread *t, const ucontext_t *uc, struct rt_frame *out, uint32_t max,
		   bool *complete)
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
	if (!st.hi || regs.rsp < t->stack_lo || regs.rsp >= st.hi) {
		/* Not on the thread's known stack (an alternate signal stack, a coroutine):
		 * bound reads by a window above the stack pointer instead. */
		st.lo = regs.rsp;
		st.hi = regs.rsp + (8u << 20);
	}
	return walk(regs, &st, out, max, complete);
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
	if (t && t->stack_hi && regs.rsp >= t->stack_lo && regs.rsp < t->stack_hi) {
		st.lo = t->stack_lo;
		st.hi = t->stack_hi;
	}
	bool complete;
	return walk(regs, &st, out, max, &complete);
}
