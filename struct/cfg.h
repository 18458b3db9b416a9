/* SPDX-License-Identifier: MIT */
/*
 * cfg.h: control-flow graphs of one function (cfg.c) and their loop-nesting forest (loops.c).
 */
#ifndef FATHOM_CFG_H
#define FATHOM_CFG_H

#include "struct.h"
#include "decode.h"

struct block {
	uint64_t lo, hi;     /* [lo, hi): whole instructions */
	uint64_t last;	     /* address of the last instruction */
	uint8_t last_kind;   /* enum insn_kind of the last instruction */
	uint32_t succ_start; /* successors: graph.succ[succ_start .. succ_start + nsucc) */
	uint32_t nsucc;
};

/* A directed graph in CSR form; node ENTRY starts the function. */
struct graph {
	uint32_t nnodes, entry;
	uint32_t *succ_start; /* nnodes + 1 entries */
	uint32_t *succ;
};

struct cfg {
	struct block *blocks; /* sorted by address, disjoint */
	uint32_t nblocks;
	struct graph g;
	uint32_t unresolved_jumps; /* indirect jumps whose targets were not found */
	uint32_t jump_tables;
	bool returns; /* some path may return to the caller (see cfg_build) */
	uint64_t *callees; /* with CFG_CALLEES: targets and GOT slots of calls and tail calls */
	uint32_t ncallees;
};

/*
 * What cfg_build knows of calls that do not come back.  ADDRS holds callee addresses: entries
 * of functions, PLT entries and GOT slots (for "call [rip+slot]").  SITE, when set, judges
 * one call at CALL whose next instruction is at NEXT (the end of an inlined noreturn
 * function).  A call whose next instructions are only padding up to the end of the function
 * does not return either: the compiler knew that it does not.
 */
struct cfg_noreturn {
	const struct hmap *addrs;
	bool (*site)(const void *ctx, uint64_t call, uint64_t next);
	const void *ctx;
};

#define CFG_CALLEES 1u	/* collect cfg.callees */
#define CFG_NO_BLOCKS 2u /* only decode: returns and callees, no blocks nor graph */
/*
 * With CFG_NO_BLOCKS: stop decoding at the first path that may return.  The callees are then
 * those of the code decoded so far, which is all a new verdict can depend on: while none of
 * them turns out not to return, the same code is decoded and the same path found.
 */
#define CFG_UNTIL_RETURN 4u

/*
 * Build the CFG of the function made of RANGES (sorted, disjoint) entered at ENTRY, by
 * recursive descent from the entry and the start of each range: only code that is reached is
 * decoded, so padding and data in .text make no blocks.  Jumps and calls that leave the
 * ranges are calls (tail calls included); jump tables are followed.  A call that NR (may be
 * NULL) says does not return ends its block like a halt.  c->returns is false when no path
 * of the function can reach its caller again: none ends in a return, a tail call to what may
 * return, an indirect jump other than a jump table, or code that cannot be decoded.
 */
int cfg_build(struct cfg *c, const struct decoder *d, const struct image *img,
	      const struct span *ranges, uint32_t nranges, uint64_t entry,
	      const struct cfg_noreturn *nr, unsigned flags);
void cfg_release(struct cfg *c);
/* Block holding ADDR, or NONE32. */
uint32_t cfg_block_at(const struct cfg *c, uint64_t addr);

struct loop {
	uint32_t header; /* node */
	uint32_t parent; /* enclosing loop, or NONE32 */
	uint32_t entries; /* 1 for reducible loops */
	uint32_t preorder, nested; /* in a preorder of the forest; loops in its subtree, itself included */
};

struct loop_forest {
	struct loop *loops; /* inner loops come before the loops that contain them */
	uint32_t nloops;
	uint32_t *innermost; /* per node: innermost loop, or NONE32 */
	bool *is_back_source; /* per node: has an edge to the header of a loop containing it */
};

/*
 * Havlak's loop-nesting forest of G (iterative DFS, union-find); irreducible loops kept.  The
 * DFS starts at the entry, then at nodes the entry does not reach, so no loop is lost.
 */
int loops_find(const struct graph *g, struct loop_forest *f);
/* Whether loop INNER is OUTER or nested in it, in constant time. */
static inline bool loop_within(const struct loop_forest *f, uint32_t inner, uint32_t outer)
{
	return f->loops[inner].preorder - f->loops[outer].preorder < f->loops[outer].nested;
}
void loops_release(struct loop_forest *f);

#endif
