/* SPDX-License-Identifier: MIT */
/*
 * cfg.c: the control-flow graph of one function, by recursive descent over its address
 * ranges: decode from the entry, follow direct branches and jump tables that stay inside the
 * function, treat everything that leaves it as a call, end a block at a call that does not
 * return, tell whether any path may return to the caller, and cut the decoded instructions
 * into basic blocks at branch targets and after branches.
 */
#include "compat.h"
#include "cfg.h"
#include "error.h"
#include "search.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define MARK_START 1u  /* an instruction starts here */
#define MARK_LEADER 2u /* a block starts here */
#define MARK_BODY 4u   /* inside an instruction, not its first byte */

#define TRACE_LEN 24
#define MAX_TABLE_GUESS 512 /* entries read from a table without a bounding compare */
#define MAX_FUNCTION_BYTES (256u << 20)

struct decoded {
	uint64_t addr, target;
	uint8_t len, kind;
};

struct table_edge {
	uint64_t from, to;
};

struct builder {
	const struct decoder *d;
	const struct image *img;
	const struct cfg_noreturn *nr;
	unsigned flags;
	const struct span *ranges;
	uint32_t nranges;
	uint64_t *range_off; /* offset of each range in MARK */
	uint8_t *mark;
	uint32_t *insn_at; /* index in INSNS of the instruction starting at each offset */
	uint64_t total;
	struct decoded *insns;
	size_t ninsns, insns_cap;
	uint64_t *stack;
	size_t nstack, stack_cap;
	struct table_edge *tedges;
	size_t ntedges, tedges_cap;
	uint32_t unresolved, tables;
	bool returns;
	uint64_t *callees;
	uint32_t ncallees, callees_cap;
};

/* Offset of ADDR in the mark array, or -1 outside the function; *END: end of its range. */
static int64_t offset_of(const struct builder *b, uint64_t addr, uint64_t *end)
{
	uint32_t i = (uint32_t)FTH_UPPER_BOUND(b->ranges, b->nranges, hi, addr);
	if (i == b->nranges || addr < b->ranges[i].lo)
		return -1;
	if (end)
		*end = b->ranges[i].hi;
	return (int64_t)(b->range_off[i] + (addr - b->ranges[i].lo));
}

static void push(struct builder *b, uint64_t addr)
{
	int64_t off = offset_of(b, addr, NULL);
	if (off < 0)
		return;
	b->mark[off] |= MARK_LEADER;
	ALLOC_GROW(b->stack, b->nstack + 1, b->stack_cap);
	b->stack[b->nstack++] = addr;
}

static const uint8_t *read_code(const void *ctx, uint64_t addr, size_t *avail)
{
	return image_code(ctx, addr, avail);
}

/* Follow the jump table of the indirect jump at JMP_ADDR; false when there is none. */
static bool follow_table(struct builder *b, const uint64_t *trace, unsigned ntrace,
			 uint64_t jmp_addr)
{
	struct jump_table jt;
	if (!decode_jump_table(b->d, trace, ntrace, read_code, b->img, &jt)) {
		/* A jump through a function pointer is a tail call, not a switch. */
		if (!decode_indirect_tail_call(b->d, trace, ntrace, read_code, b->img))
			b->unresolved++;
		return false;
	}
	uint32_t limit = jt.count ? jt.count : MAX_TABLE_GUESS, found = 0;
	for (uint32_t k = 0; k < limit; k++) {
		uint64_t target;
		if (jt.entry_size == 4) {
			int32_t rel;
			if (!image_read(b->img, jt.table + 4ull * k, &rel, 4))
				break;
			target = jt.base + (uint64_t)(int64_t)rel;
		} else if (!image_read(b->img, jt.table + 8ull * k, &target, 8)) {
			break;
		}
		if (offset_of(b, target, NULL) < 0) {
			if (!jt.count)
				break; /* without a bound, the first foreign entry ends the table */
			continue;
		}
		ALLOC_GROW(b->tedges, b->ntedges + 1, b->tedges_cap);
		b->tedges[b->ntedges].from = jmp_addr;
		b->tedges[b->ntedges].to = target;
		b->ntedges++;
		push(b, target);
		found++;
	}
	if (found)
		b->tables++;
	else
		b->unresolved++;
	return found > 0;
}

static bool is_noreturn(const struct builder *b, uint64_t addr)
{
	return addr && b->nr && b->nr->addrs && hmap_get(b->nr->addrs, addr, NULL);
}

static void add_callee(struct builder *b, uint64_t addr)
{
	if (!(b->flags & CFG_CALLEES) || !addr)
		return;
	ALLOC_GROW(b->callees, b->ncallees + 1, b->callees_cap);
	b->callees[b->ncallees++] = addr;
}

/* A jump or call that leaves the function: it returns when its target may. */
static void tail_call(struct builder *b, uint64_t addr)
{
	add_callee(b, addr);
	if (!is_noreturn(b, addr))
		b->returns = true;
}

/*
 * The first instruction from ADDR on that is not padding (no-ops, or traps, which the block
 * would stop at anyway), or 0 when only padding follows up to the end of the function.
 */
static uint64_t skip_padding(const struct builder *b, uint64_t addr)
{
	for (unsigned n = 0; n < 64; n++) {
		uint64_t range_end;
		if (offset_of(b, addr, &range_end) < 0)
			return 0;
		size_t avail;
		const uint8_t *p = image_code(b->img, addr, &avail);
		struct insn in;
		if (!p || decode(b->d, addr, p, FTH_MIN(avail, range_end - addr), &in) < 0)
			return addr;
		if (!in.nop && in.kind != INSN_HALT)
			return addr;
		addr += in.len;
	}
	return addr;
}

/* Whether the call at CALL returns; *AFTER: its first instruction after padding, or 0. */
static bool call_returns(const struct builder *b, uint64_t call, const struct insn *in,
			 uint64_t *after)
{
	*after = skip_padding(b, call + in->len);
	if (is_noreturn(b, in->kind == INSN_CALL ? in->target : in->slot) || !*after)
		return false;
	return !(b->nr && b->nr->site && b->nr->site(b->nr->ctx, call, *after));
}

/* Decode the straight-line run starting at ADDR. */
static void run(struct builder *b, uint64_t addr)
{
	uint64_t trace[TRACE_LEN];
	unsigned ntrace = 0;
	for (;;) {
		uint64_t range_end;
		int64_t off = offset_of(b, addr, &range_end);
		if (off < 0) {
			b->returns = true; /* runs off the end (not after a call: see call_returns) */
			return;
		}
		if (b->mark[off] & (MARK_START | MARK_BODY))
			return;
		size_t avail;
		const uint8_t *p = image_code(b->img, addr, &avail);
		if (!p) {
			b->returns = true; /* cannot tell */
			return;
		}
		avail = FTH_MIN(avail, range_end - addr);
		struct insn in;
		if (decode(b->d, addr, p, avail, &in) < 0) {
			b->returns = true;
			return;
		}
		b->mark[off] |= MARK_START;
		for (unsigned i = 1; i < in.len; i++)
			b->mark[off + i] |= MARK_BODY;
		b->insn_at[off] = (uint32_t)b->ninsns;
		ALLOC_GROW(b->insns, b->ninsns + 1, b->insns_cap);
		struct decoded *x = &b->insns[b->ninsns++];
		x->addr = addr;
		x->target = in.target;
		x->len = in.len;
		x->kind = in.kind;
		if (ntrace == TRACE_LEN) {
			memmove(trace, trace + 1, (TRACE_LEN - 1) * sizeof(*trace));
			ntrace--;
		}
		trace[ntrace++] = addr;
		uint64_t next = addr + in.len;
		switch (in.kind) {
		case INSN_JCC:
			if (offset_of(b, in.target, NULL) < 0)
				tail_call(b, in.target);
			push(b, in.target);
			push(b, next);
			addr = next;
			break;
		case INSN_JMP:
			if (offset_of(b, in.target, NULL) < 0)
				tail_call(b, in.target);
			push(b, in.target);
			return;
		case INSN_IJMP:
			if (!follow_table(b, trace, ntrace, addr) &&
			    !decode_stack_switch(b->d, trace, ntrace, read_code, b->img))
				tail_call(b, in.slot);
			return;
		case INSN_RET:
			b->returns = true;
			return;
		case INSN_HALT:
			return;
		case INSN_CALL:
		case INSN_ICALL:
			add_callee(b, in.kind == INSN_CALL ? in.target : in.slot);
			uint64_t after;
			if (!call_returns(b, addr, &in, &after)) {
				x->kind = INSN_HALT; /* control does not come back */
				/*
				 * What follows is still code of the function, entered some other
				 * way (a jump, or an exception's landing pad, which the CFG does
				 * not see): decode it, as a block without this edge into it.
				 */
				if (after)
					push(b, after);
				return;
			}
			addr = next;
			break;
		default:
			addr = next;
			break;
		}
	}
}

static int by_edge(const void *a, const void *b)
{
	const struct table_edge *x = a, *y = b;
	if (x->from != y->from)
		return x->from < y->from ? -1 : 1;
	return x->to < y->to ? -1 : x->to > y->to;
}

uint32_t cfg_block_at(const struct cfg *c, uint64_t addr)
{
	uint32_t i = (uint32_t)FTH_UPPER_BOUND(c->blocks, c->nblocks, hi, addr);
	return i < c->nblocks && c->blocks[i].lo <= addr ? i : NONE32;
}

static bool ends_block(uint8_t kind)
{
	return kind == INSN_JCC || kind == INSN_JMP || kind == INSN_IJMP || kind == INSN_RET ||
	       kind == INSN_HALT;
}

static void add_succ(const struct cfg *c, uint32_t **succ, uint32_t *n, uint32_t *cap,
		     uint64_t target)
{
	uint32_t t = cfg_block_at(c, target);
	if (t == NONE32 || c->blocks[t].lo != target)
		return;
	ALLOC_GROW(*succ, *n + 1, *cap);
	(*succ)[(*n)++] = t;
}

static void make_blocks(struct builder *b, struct cfg *c)
{
	/* Instructions in address order, from the marks: no sort needed. */
	struct decoded *sorted = xmalloc((b->ninsns ? b->ninsns : 1) * sizeof(*sorted));
	size_t k = 0;
	for (uint64_t off = 0; off < b->total; off++)
		if (b->mark[off] & MARK_START)
			sorted[k++] = b->insns[b->insn_at[off]];
	free(b->insns);
	b->insns = sorted;
	b->ninsns = k;
	sort_array(b->tedges, b->ntedges, sizeof(*b->tedges), by_edge);
	uint32_t cap = 0;
	for (size_t i = 0; i < b->ninsns; i++) {
		const struct decoded *x = &b->insns[i];
		int64_t off = offset_of(b, x->addr, NULL);
		bool start = i == 0 || (b->mark[off] & MARK_LEADER) ||
			     b->insns[i - 1].addr + b->insns[i - 1].len != x->addr ||
			     ends_block(b->insns[i - 1].kind);
		if (start) {
			ALLOC_GROW(c->blocks, c->nblocks + 1, cap);
			c->blocks[c->nblocks].lo = x->addr;
			c->nblocks++;
		}
		struct block *bl = &c->blocks[c->nblocks - 1];
		bl->hi = x->addr + x->len;
		bl->last = x->addr;
		bl->last_kind = x->kind;
	}
	/* Overlapping instructions (a jump into the middle of another) would overlap blocks. */
	for (uint32_t i = 1; i < c->nblocks; i++)
		if (c->blocks[i - 1].hi > c->blocks[i].lo)
			c->blocks[i - 1].hi = c->blocks[i].lo;
	uint32_t *succ = NULL, nsucc = 0, succ_cap = 0;
	size_t ti = 0, ii = 0;
	for (uint32_t i = 0; i < c->nblocks; i++) {
		struct block *bl = &c->blocks[i];
		bl->succ_start = nsucc;
		while (ii < b->ninsns && b->insns[ii].addr < bl->last)
			ii++;
		const struct decoded *x = ii < b->ninsns ? &b->insns[ii] : NULL;
		uint64_t next = x ? x->addr + x->len : bl->hi;
		switch (bl->last_kind) {
		case INSN_JCC:
			add_succ(c, &succ, &nsucc, &succ_cap, x->target);
			add_succ(c, &succ, &nsucc, &succ_cap, next);
			break;
		case INSN_JMP:
			add_succ(c, &succ, &nsucc, &succ_cap, x->target);
			break;
		case INSN_IJMP:
			while (ti < b->ntedges && b->tedges[ti].from < bl->last)
				ti++;
			for (; ti < b->ntedges && b->tedges[ti].from == bl->last; ti++)
				if (!ti || b->tedges[ti - 1].from != bl->last ||
				    b->tedges[ti - 1].to != b->tedges[ti].to)
					add_succ(c, &succ, &nsucc, &succ_cap, b->tedges[ti].to);
			break;
		case INSN_RET:
		case INSN_HALT:
			break;
		default:
			add_succ(c, &succ, &nsucc, &succ_cap, next);
			break;
		}
		bl->nsucc = nsucc - bl->succ_start;
	}
	c->g.nnodes = c->nblocks;
	c->g.succ = succ ? succ : xmalloc(sizeof(uint32_t));
	c->g.succ_start = xmalloc(((size_t)c->nblocks + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < c->nblocks; i++)
		c->g.succ_start[i] = c->blocks[i].succ_start;
	c->g.succ_start[c->nblocks] = nsucc;
}

int cfg_build(struct cfg *c, const struct decoder *d, const struct image *img,
	      const struct span *ranges, uint32_t nranges, uint64_t entry,
	      const struct cfg_noreturn *nr, unsigned flags)
{
	memset(c, 0, sizeof(*c));
	struct builder b = { .d = d, .img = img, .ranges = ranges, .nranges = nranges,
			     .nr = nr, .flags = flags };
	uint64_t total = 0;
	b.range_off = xmalloc((nranges ? nranges : 1) * sizeof(uint64_t));
	for (uint32_t i = 0; i < nranges; i++) {
		b.range_off[i] = total;
		total += ranges[i].hi - ranges[i].lo;
	}
	if (total > MAX_FUNCTION_BYTES) {
		free(b.range_off);
		return fth_error("function at 0x%llx has %llu bytes of code",
				 (unsigned long long)entry, (unsigned long long)total);
	}
	b.mark = xcalloc(total ? total : 1, 1);
	b.insn_at = xmalloc((total ? total : 1) * sizeof(uint32_t));
	b.total = total;
	for (uint32_t i = nranges; i-- > 0;)
		push(&b, ranges[i].lo);
	push(&b, entry);
	bool until_return = (flags & (CFG_NO_BLOCKS | CFG_UNTIL_RETURN)) ==
			    (CFG_NO_BLOCKS | CFG_UNTIL_RETURN);
	while (b.nstack && !(until_return && b.returns))
		run(&b, b.stack[--b.nstack]);
	if (!(flags & CFG_NO_BLOCKS))
		make_blocks(&b, c);
	c->unresolved_jumps = b.unresolved;
	c->jump_tables = b.tables;
	c->returns = b.returns;
	c->callees = b.callees;
	c->ncallees = b.ncallees;
	c->g.entry = cfg_block_at(c, entry);
	if (c->g.entry == NONE32)
		c->g.entry = 0;
	free(b.range_off);
	free(b.mark);
	free(b.insn_at);
	free(b.insns);
	free(b.stack);
	free(b.tedges);
	return 0;
}

void cfg_release(struct cfg *c)
{
	free(c->blocks);
	free(c->g.succ);
	free(c->g.succ_start);
	free(c->callees);
	memset(c, 0, sizeof(*c));
}
