/* SPDX-License-Identifier: MIT */
/*
 * callsite.c: calling contexts for the synchronous sources (IO, MEMLEAK).  A wrapper credits
 * its metric to a leaf node, the real function it called (kind "sample", at that function's
 * address), under the program's frames that led to the call.  Those frames come from an unwind
 * that starts in measure's own frame (rt_unwind_caller), which would make every call cost a
 * whole unwind; to keep many small calls cheap, each thread keeps its last call path when every
 * step of it was CFA = RSP + n, and a new call is unwound only until it meets a frame of that
 * path with the same pc and stack pointer whose return addresses above are all still in place:
 * such an unwind is determined by that frame's pc and stack pointer and by those stack words,
 * so the rest of the path is the last one's, nodes included.  Per thread, small direct-mapped
 * memos keep what the load map and unwind tables said about recent return addresses and which
 * node recent tree edges lead to, so that a call that differs from the last in a frame or two
 * looks nothing up; and a few recent calls are kept whole (their return address, frame address
 * and the return-address words of their path), so that call sites taking turns find their leaf
 * by comparing those words, without stepping at all.  No malloc, no locks: memory comes from
 * the thread's arena, and a thread's tree is touched only by its own thread while it is claimed
 * through its busy flag (which makes the sample handler drop a sample, not race).
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"

#include <string.h>
#include <sys/single_threaded.h>

#define PATH_FRAMES 1024 /* a deeper last path is not kept: such calls unwind in full */
#define STEP_MEMO 64	 /* return addresses whose CFA = RSP + n step is remembered */
#define CHILD_MEMO 256	 /* tree edges remembered in front of cct_child */
#define CALLEE_MEMO 8	 /* real functions whose module is remembered */
#define RECENT_CALLS 16	 /* whole recent calls remembered, direct-mapped by call site */
#define RECENT_FRAMES 16 /* a deeper call is not remembered (deep recursions rarely repeat) */
#define RECENT_CREDIT 64 /* at most this many remembered calls without a hit */
#define RECENT_RETRY 16

/* The step from a frame whose pc is the return address RIP: CFA = RSP + CFA_OFF. */
struct step_memo {
	uint64_t rip; /* 0: empty */
	uint64_t offset; /* RIP from the module's bias */
	uint32_t module;
	int32_t cfa_off;
};

/* An edge of the thread's tree (never removed, so always valid for this tree). */
struct child_memo {
	uint64_t offset;
	uint32_t parent, module, child;
	uint8_t kind;
};

/* A frame of a kept path: its return address RIP was read at RSP - 8; NODE is its node. */
struct path_frame {
	uint64_t rip, rsp;
	uint64_t offset; /* RIP from its module's bias */
	uint32_t module, node;
};

/* Where a return address was read (SLOT) and what it was (RIP): a frame of a recent call. */
struct saved_word {
	uint64_t slot, rip;
};

/*
 * A recent call, whole: the caller's return address RA and frame address CFA, the real
 * function CALLEE, the LEAF it was credited to, and the return-address words of its LEN frames
 * (all CFA = RSP + n steps).  A call with the same RA, CFA and CALLEE whose words are all
 * unchanged has the same path, so the same leaf: a few call sites that take turns (a loop
 * calling malloc from two functions) find their leaf without stepping or tree lookups.
 */
struct recent_call {
	uint64_t ra, cfa;
	const void *callee;
	uint32_t leaf, len; /* len 0: empty */
	uint32_t generation; /* loadmap_count() when made */
	struct saved_word *words; /* RECENT_FRAMES, outermost first */
};

/*
 * The thread's last call path, outermost frame first, kept when every step of its unwind was
 * CFA = RSP + n (one array, so that a walk along it reads consecutive lines).  LEAF is the
 * node of the call LEAF_CALLEE under the innermost frame.
 */
struct rt_sync {
	uint32_t len; /* 0: none */
	uint32_t generation; /* loadmap_count() when kept: a new module forgets it */
	struct path_frame *path;
	uint32_t leaf;
	const void *leaf_callee;
	/* scratch: the frames of a new call below the part it shares with the last path */
	struct path_frame *fresh;
	uint64_t *slots; /* RT_MAX_FRAMES: the full unwinder's slots, or a copied path's nodes */
	/* what the lookups of the load map and unwind tables said, while it is unchanged */
	uint32_t memo_generation;
	struct step_memo *steps; /* STEP_MEMO, direct-mapped by return address */
	struct child_memo *children; /* CHILD_MEMO, direct-mapped by edge */
	struct step_memo callees[CALLEE_MEMO]; /* by the function's address (no step) */
	uint32_t next_callee; /* the entry of callees replaced next */
	struct recent_call recent[RECENT_CALLS];
	uint32_t recent_mru; /* bit I: which entry of set I was used last */
	/*
	 * Whether remembering calls pays: a hit earns credit, a call remembered spends it.
	 * Without credit (every call in a context of its own, as in a recursion that allocates),
	 * only one call in RECENT_RETRY looks and remembers, so that a change is noticed.
	 */
	int32_t recent_credit;
	uint32_t recent_tick;
};

static uint64_t own_lo, own_hi; /* measure's executable code */

void rt_sync_init(void)
{
	const struct lm_module *m = rt_self_module() == MFILE_NO_MODULE
					    ? NULL
					    : loadmap_get(rt_self_module());
	own_lo = UINT64_MAX;
	own_hi = 0;
	for (uint32_t i = 0; m && i < m->nranges; i++) {
		if (!(m->ranges[i].prot & 4 /* PROT_EXEC */))
			continue;
		if (m->ranges[i].start < own_lo)
			own_lo = m->ranges[i].start;
		if (m->ranges[i].end > own_hi)
			own_hi = m->ranges[i].end;
	}
}

bool rt_sync_from_measure(uint64_t ra)
{
	return ra - 1 >= own_lo && ra - 1 < own_hi;
}

bool rt_sync_claim(struct mthread *t)
{
	if (__libc_single_threaded) {
		/*
		 * No other thread can end this one: only this thread's own code and its signal
		 * handlers run, in order, so plain accesses do (and spare the locked exchange).
		 */
		if (t->busy)
			return false;
		t->busy = 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (t->stopped || t->written) {
			t->busy = 0;
			return false;
		}
		return true;
	}
	/* Pairs with rt_thread_end(): it marks the thread written, then waits for busy. */
	if (__atomic_exchange_n(&t->busy, 1, __ATOMIC_SEQ_CST))
		return false; /* already busy: leave the flag to its owner */
	if (t->stopped || __atomic_load_n(&t->written, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
		return false;
	}
	return true;
}

void rt_sync_release(struct mthread *t)
{
	__atomic_store_n(&t->busy, 0, __ATOMIC_RELEASE);
}

static struct rt_sync *state_of(struct mthread *t)
{
	if (t->sync)
		return t->sync;
	if (!rt_thread_tree(t))
		return NULL;
	struct arena *a = &t->arena;
	struct rt_sync *s = arena_alloc(a, sizeof(*s), 64);
	if (!s)
		return NULL;
	s->path = arena_alloc(a, PATH_FRAMES * sizeof(*s->path), 64);
	s->fresh = arena_alloc(a, PATH_FRAMES * sizeof(*s->fresh), 64);
	s->slots = arena_alloc(a, RT_MAX_FRAMES * sizeof(*s->slots), 16);
	s->steps = arena_alloc(a, STEP_MEMO * sizeof(*s->steps), 64);
	s->children = arena_alloc(a, CHILD_MEMO * sizeof(*s->children), 64);
	if (!s->path || !s->fresh || !s->slots || !s->steps || !s->children)
		return NULL;
	for (uint32_t i = 0; i < RECENT_CALLS; i++) {
		s->recent[i].words = arena_alloc(a, RECENT_FRAMES * sizeof(struct saved_word), 64);
		if (!s->recent[i].words)
			return NULL;
	}
	s->memo_generation = loadmap_count();
	s->recent_credit = RECENT_CREDIT / 4;
	t->sync = s;
	return s;
}

/* cct_child of T's tree, through the memo of recent edges. */
static uint32_t child_of(struct mthread *t, struct rt_sync *s, uint32_t parent, uint8_t kind,
			 uint32_t module, uint64_t offset)
{
	uint64_t h = (offset ^ ((uint64_t)parent << 20) ^ module) * 0x9e3779b97f4a7c15ull;
	struct child_memo *c = &s->children[h >> (64 - 8)];
	_Static_assert(CHILD_MEMO == 1u << 8, "the memo's index has 8 bits");
	if (c->offset == offset && c->parent == parent && c->module == module && c->kind == kind &&
	    c->child)
		return c->child;
	uint32_t child = cct_child(&t->cct, parent, kind, module, offset);
	if (child != UINT32_MAX)
		*c = (struct child_memo){ offset, parent, module, child, kind };
	return child;
}

/* The load map changed (now G modules): what the memos say about modules may be wrong now. */
static void check_memo_generation(struct rt_sync *s, uint32_t g)
{
	if (likely(s->memo_generation == g))
		return;
	memset(s->steps, 0, STEP_MEMO * sizeof(*s->steps));
	memset(s->callees, 0, sizeof(s->callees));
	s->memo_generation = g;
}

/*
 * The step from the frame whose pc is the return address RIP when it is CFA = RSP + n with
 * the return address at CFA - 8: the memo entry, made on first use; NULL otherwise.
 */
static const struct step_memo *plain_step(struct rt_sync *s, uint64_t rip)
{
	struct step_memo *m = &s->steps[(rip * 0x9e3779b97f4a7c15ull) >> (64 - 6)];
	_Static_assert(STEP_MEMO == 1u << 6, "the memo's index has 6 bits");
	if (m->rip == rip)
		return m;
	const struct lm_module *mod = loadmap_find(rip - 1);
	const struct cfi_row *row = mod ? cfi_lookup(&mod->cfi, rip - 1 - mod->bias) : NULL;
	if (!row || row->kind != CFI_RSP || row->ra != -1 || (row->flags & CFI_F_RA_UNDEF))
		return NULL;
	*m = (struct step_memo){ rip, rip - mod->bias, mod->id, row->cfa_off };
	return m;
}

static uint32_t leaf_under(struct mthread *t, struct rt_sync *s, uint32_t node, const void *callee)
{
	uint64_t addr = (uint64_t)(uintptr_t)callee;
	/* The real functions are few: where each lies is remembered (all of them side by side:
	 * their addresses may share any bits). */
	struct step_memo *m = NULL;
	for (uint32_t i = 0; i < CALLEE_MEMO; i++)
		if (s->callees[i].rip == addr) {
			m = &s->callees[i];
			break;
		}
	if (!m) {
		const struct lm_module *mod = loadmap_find(addr);
		m = &s->callees[s->next_callee++ % CALLEE_MEMO];
		*m = (struct step_memo){ addr, mod ? addr - mod->bias : addr,
					 mod ? mod->id : MFILE_NO_MODULE, 0 };
	}
	return child_of(t, s, node, MFILE_NODE_SAMPLE, m->module, m->offset);
}

/* Frames 0..K of the last path are still on the stack: their return addresses are unchanged. */
static bool intact(const struct rt_sync *s, uint32_t k)
{
	for (uint32_t q = 0; q <= k; q++)
		if (*(const volatile uint64_t *)(uintptr_t)(s->path[q].rsp - 8) != s->path[q].rip)
			return false;
	return true;
}

/*
 * The fast way: unwind from the caller (RA, CFA) by CFA = RSP + n rows only, until a frame
 * of the last path (same pc, same stack pointer, everything above it unchanged); the rest of
 * the path is the last path's.  UINT32_MAX - 1 when this does not apply (the caller then
 * unwinds in full); UINT32_MAX when out of memory.
 */
#define NOT_FAST (UINT32_MAX - 1)

static uint32_t fast_context(struct mthread *t, struct rt_sync *s, const void *callee,
			     uint64_t ra, uint64_t cfa)
{
	if (!s->len || s->generation != loadmap_count())
		return NOT_FAST;
	uint64_t rip = ra, rsp = cfa;
	int32_t k = (int32_t)s->len - 1;
	uint32_t n = 0;
	for (;;) {
		while (k >= 0 && s->path[k].rsp < rsp)
			k--;
		if (k < 0)
			return NOT_FAST; /* nothing in common: a path of its own */
		if (s->path[k].rsp == rsp && s->path[k].rip == rip && intact(s, (uint32_t)k))
			break;
		if (n == PATH_FRAMES)
			return NOT_FAST;
		const struct step_memo *step = plain_step(s, rip);
		if (!step)
			return NOT_FAST;
		uint64_t next = rsp + (uint64_t)(int64_t)step->cfa_off;
		if (next <= rsp || next > t->stack_hi)
			return NOT_FAST;
		s->fresh[n] = (struct path_frame){ rip, rsp, step->offset, step->module, 0 };
		n++;
		rip = *(const uint64_t *)(uintptr_t)(next - 8);
		rsp = next;
	}
	uint32_t top = (uint32_t)k, len = top + 1 + n;
	if (len > PATH_FRAMES)
		return NOT_FAST;
	if (n == 0 && top == s->len - 1 && callee == s->leaf_callee)
		return s->leaf; /* the very same call */
	uint32_t node = s->path[top].node;
	for (uint32_t d = top + 1; d < len; d++) {
		struct path_frame *f = &s->path[d];
		*f = s->fresh[top + n - d]; /* new frame i (leaf first) goes to depth top + n - i */
		node = child_of(t, s, node, MFILE_NODE_FRAME, f->module, f->offset);
		if (node == UINT32_MAX) {
			s->len = 0;
			return node;
		}
		f->node = node;
	}
	s->len = len;
	s->leaf = leaf_under(t, s, node, callee);
	s->leaf_callee = callee;
	if (s->leaf == UINT32_MAX)
		s->len = 0;
	return s->leaf;
}

static uint32_t full_context(struct mthread *t, struct rt_sync *s, const void *callee,
			     uint64_t ra, uint64_t cfa);

/* The two entries of the recent calls where a call from RA with CFA to CALLEE may be. */
static inline struct recent_call *recent_set(struct rt_sync *s, uint64_t ra, uint64_t cfa,
					     const void *callee)
{
	uint64_t h = (ra ^ (cfa << 12) ^ (uint64_t)(uintptr_t)callee) * 0x9e3779b97f4a7c15ull;
	_Static_assert(RECENT_CALLS == 2u << 3, "sets of two, picked by 3 bits");
	return &s->recent[(h >> (64 - 3)) * 2];
}

static inline bool recent_holds(const struct recent_call *r, uint64_t ra, uint64_t cfa,
				const void *callee, uint32_t generation)
{
	if (r->ra != ra || r->cfa != cfa || r->callee != callee || !r->len ||
	    r->generation != generation)
		return false;
	/* Innermost first: that is where paths change. */
	for (uint32_t q = r->len; q-- > 0;)
		if (*(const volatile uint64_t *)(uintptr_t)r->words[q].slot != r->words[q].rip)
			return false;
	return true;
}

/* Remember the call just resolved (the thread's kept path, ending at RA and CFA). */
static void remember_call(struct rt_sync *s, struct recent_call *set, uint64_t ra, uint64_t cfa)
{
	uint32_t len = s->len;
	if (!len || len > RECENT_FRAMES || s->path[len - 1].rip != ra ||
	    s->path[len - 1].rsp != cfa)
		return;
	/* The entry not used last in its set. */
	uint32_t which = (uint32_t)(set - s->recent) / 2;
	struct recent_call *r = &set[!((s->recent_mru >> which) & 1)];
	for (uint32_t q = 0; q < len; q++)
		r->words[q] = (struct saved_word){ s->path[q].rsp - 8, s->path[q].rip };
	r->ra = ra;
	r->cfa = cfa;
	r->callee = s->leaf_callee;
	r->leaf = s->leaf;
	r->len = len;
	r->generation = s->generation;
	s->recent_mru = (s->recent_mru & ~(1u << which)) | ((uint32_t)(r - set) << which);
}

static uint32_t sync_context(struct mthread *t, const void *callee, uint64_t ra, uint64_t cfa)
{
	struct rt_sync *s = state_of(t);
	if (!s)
		return UINT32_MAX;
	uint32_t generation = loadmap_count(), which;
	check_memo_generation(s, generation);
	if (t->stack_hi && cfa > t->stack_lo && cfa < t->stack_hi) {
		struct recent_call *set = recent_set(s, ra, cfa, callee);
		bool recall = s->recent_credit > 0 || ++s->recent_tick % RECENT_RETRY == 0;
		for (uint32_t i = 0; recall && i < 2; i++) {
			if (!recent_holds(&set[i], ra, cfa, callee, generation))
				continue;
			which = (uint32_t)(set - s->recent) / 2;
			s->recent_mru = (s->recent_mru & ~(1u << which)) | (i << which);
			if (s->recent_credit < RECENT_CREDIT)
				s->recent_credit++;
			return set[i].leaf;
		}
		uint32_t leaf = fast_context(t, s, callee, ra, cfa);
		if (leaf == NOT_FAST)
			leaf = full_context(t, s, callee, ra, cfa);
		if (recall && leaf != UINT32_MAX && s->leaf == leaf && s->leaf_callee == callee) {
			remember_call(s, set, ra, cfa);
			if (s->recent_credit > 0)
				s->recent_credit--;
		}
		return leaf;
	}
	return full_context(t, s, callee, ra, cfa);
}

uint32_t rt_sync_context(struct mthread *t, const void *callee, uint64_t ra, uint64_t cfa)
{
	uint32_t leaf = sync_context(t, callee, ra, cfa);
	if (leaf != UINT32_MAX)
		t->calls++; /* for the log's summary: "N calls recorded" */
	return leaf;
}

/* The call path unwound in full, from this frame: measure's frames are dropped. */
static __attribute__((noinline)) uint32_t full_context(struct mthread *t, struct rt_sync *s,
							const void *callee, uint64_t ra,
							uint64_t cfa)
{
	bool complete, cacheable;
	uint32_t n = rt_unwind_caller(t, t->frames, s->slots, RT_MAX_FRAMES, &complete, &cacheable);
	bool keep = cacheable && n <= PATH_FRAMES && t->stack_hi && s->slots[0] + 8 == cfa;
	s->len = 0;
	uint32_t node = 0;
	if (!complete)
		node = cct_child(&t->cct, 0, MFILE_NODE_PARTIAL, MFILE_NO_MODULE, 0);
	for (uint32_t d = 0; d < n && node != UINT32_MAX; d++) {
		const struct rt_frame *f = &t->frames[n - 1 - d];
		node = child_of(t, s, node, MFILE_NODE_FRAME, f->module, f->offset);
		if (!keep || d >= PATH_FRAMES)
			continue;
		/* Kept only when each return address is where the rows said, on this stack. */
		const struct lm_module *m = f->module == MFILE_NO_MODULE ? NULL
									  : loadmap_get(f->module);
		uint64_t slot = s->slots[n - 1 - d];
		if (!m || slot < t->stack_lo || slot + 8 > t->stack_hi ||
		    *(const uint64_t *)(uintptr_t)slot != f->offset + m->bias) {
			keep = false;
			continue;
		}
		s->path[d] = (struct path_frame){ f->offset + m->bias, slot + 8, f->offset,
						  f->module, node };
	}
	if (node == UINT32_MAX)
		return node;
	uint32_t leaf = leaf_under(t, s, node, callee);
	if (keep && leaf != UINT32_MAX && s->path[n - 1].rip == ra) {
		s->len = n;
		s->generation = loadmap_count();
		s->leaf = leaf;
		s->leaf_callee = callee;
	}
	return leaf;
}

uint32_t rt_sync_copy_context(struct mthread *t, const struct mthread *from, uint32_t node)
{
	if (from == t)
		return node;
	struct rt_sync *s = state_of(t);
	if (!s)
		return UINT32_MAX;
	/* The nodes of FROM's path, leaf first; they never change once made, so reading another
	 * thread's tree is safe (its arena is never unmapped). */
	uint32_t n = 0;
	for (uint32_t p = node; p != 0 && p != MFILE_NO_PARENT; p = cct_node(&from->cct, p)->parent) {
		if (n == RT_MAX_FRAMES)
			return UINT32_MAX;
		s->slots[n++] = p;
	}
	uint32_t mine = 0;
	while (n-- > 0 && mine != UINT32_MAX) {
		const struct cct_node *x = cct_node(&from->cct, (uint32_t)s->slots[n]);
		mine = child_of(t, s, mine, x->kind, x->module, x->offset);
	}
	return mine;
}

void rt_sync_credit(struct mthread *t, uint32_t node, int metric, uint64_t v)
{
	if (node == UINT32_MAX || metric < 0)
		return;
	cct_add(&t->cct, node, (unsigned)metric, v);
	t->samples[metric]++;
}
