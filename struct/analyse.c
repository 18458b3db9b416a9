/* SPDX-License-Identifier: MIT */
/*
 * analyse.c: turns one binary into a structure file.  Functions come from DWARF subprograms
 * (their ranges include cold parts) and from symbols that DWARF does not cover; clones are
 * linked to their parents by name.  A first parallel pass over the machine code finds the
 * functions that do not return (find_noreturn).  Each function is then analysed on its own,
 * in parallel: innermost DWARF scope of every address, CFG, loop forest, the inline depth and
 * header line of every loop (at the deepest scope holding all of its code), and finally a
 * tree of function > inline call sites > loops, built as a trie of the scope chains of the
 * function's address pieces.
 */
#include "compat.h"
#include "struct.h"
#include "cfg.h"
#include "error.h"
#include "search.h"
#include "xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct func {
	uint32_t scope; /* DWARF scope, or NONE32 */
	uint64_t die;	/* its DIE offset */
	struct span *ranges;
	uint32_t nranges, ranges_cap;
	uint64_t entry;
	uint32_t name, symbol, file, line; /* strings of the final table */
	uint32_t flags;
	uint32_t origin; /* function index */
};

struct fn_result {
	struct sfile_node *nodes;
	uint32_t nnodes;
	struct sfile_range *ranges;
	uint32_t nranges;
	struct sfile_range *blocks; /* each loop's own basic blocks, in address order */
	uint32_t nblocks;
	uint32_t nloops, nirreducible, unresolved;
};

struct job {
	const struct image *img;
	const struct dw_info *dw;
	struct func *funcs;
	uint32_t nfuncs;
	uint32_t *scope_start, *scope_list; /* CSR: the DWARF scopes of each DWARF function */
	uint32_t *block_start, *block_list; /* CSR: the DWARF lexical blocks of each function */
	struct fn_result *results;
	struct hmap noreturn; /* callees that do not return: entries, PLT entries, GOT slots */
	bool decode;
	bool prepass;	  /* workers find which functions return (find_noreturn) */
	bool *returns;	  /* prepass: per function, whether it may return */
	struct cfg *cfgs; /* prepass: per function, its callees (the rest released) */
	atomic_uint next;
};

/* ---- helpers ---- */

static int span_order(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Sort and merge SPANS in place; returns the new count. */
static uint32_t normalise_spans(struct span *s, uint32_t n)
{
	sort_array(s, n, sizeof(*s), span_order);
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (k && s[i].lo <= s[k - 1].hi) {
			s[k - 1].hi = FTH_MAX(s[k - 1].hi, s[i].hi);
			continue;
		}
		s[k++] = s[i];
	}
	return k;
}

static const struct sfile_line *line_at(const struct dw_info *dw, uint64_t addr)
{
	uint64_t i = FTH_UPPER_BOUND(dw->lines, dw->nlines, hi, addr);
	return i < dw->nlines && dw->lines[i].lo <= addr ? &dw->lines[i] : NULL;
}

/* ---- per function: innermost DWARF scope of every address ---- */

struct interval {
	uint64_t lo, hi;
	uint32_t scope; /* local scope index (0: the function itself) */
};

struct item {
	uint64_t lo, hi;
	uint32_t depth, scope, seq;
};

struct ctx {
	const struct job *job;
	const struct func *f;
	uint32_t nscopes;
	const uint32_t *scopes; /* local -> DWARF scope (NULL for symbol-only functions) */
	const uint32_t *blocks; /* the function's lexical blocks (dw_info.blocks) */
	uint32_t nblocks;
	uint32_t *parent;	/* local parents */
	uint32_t *depth;
	struct interval *iv;	/* innermost scope of every byte of the function, sorted */
	uint32_t niv, iv_cap;
};

static int item_order(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Max-heap on (depth, seq): the deepest scope, the later one among equals. */
static bool heap_less(const struct item *a, const struct item *b)
{
	return a->depth != b->depth ? a->depth < b->depth : a->seq < b->seq;
}

static void heap_push(struct item *h, uint32_t *n, struct item x)
{
	uint32_t i = (*n)++;
	h[i] = x;
	while (i && heap_less(&h[(i - 1) / 2], &h[i])) {
		struct item t = h[i];
		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void heap_pop(struct item *h, uint32_t *n)
{
	h[0] = h[--*n];
	uint32_t i = 0;
	for (;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && heap_less(&h[m], &h[l]))
			m = l;
		if (r < *n && heap_less(&h[m], &h[r]))
			m = r;
		if (m == i)
			break;
		struct item t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void add_interval(struct ctx *c, uint64_t lo, uint64_t hi, uint32_t scope)
{
	if (c->niv && c->iv[c->niv - 1].hi == lo && c->iv[c->niv - 1].scope == scope) {
		c->iv[c->niv - 1].hi = hi;
		return;
	}
	ALLOC_GROW(c->iv, c->niv + 1, c->iv_cap);
	c->iv[c->niv].lo = lo;
	c->iv[c->niv].hi = hi;
	c->iv[c->niv].scope = scope;
	c->niv++;
}

static int u64_order(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void innermost_scopes(struct ctx *c)
{
	const struct func *f = c->f;
	const struct dw_info *dw = c->job->dw;
	struct item *items = NULL;
	uint32_t nitems = 0, cap = 0;
	for (uint32_t s = 1; s < c->nscopes; s++) {
		const struct dw_scope *ds = &dw->scopes[c->scopes[s]];
		for (uint32_t r = 0; r < ds->nranges; r++) {
			ALLOC_GROW(items, nitems + 1, cap);
			items[nitems].lo = dw->ranges[ds->range_start + r].lo;
			items[nitems].hi = dw->ranges[ds->range_start + r].hi;
			items[nitems].depth = c->depth[s];
			items[nitems].scope = s;
			items[nitems].seq = nitems;
			nitems++;
		}
	}
	sort_array(items, nitems, sizeof(*items), item_order);
	/* Elementary intervals between all boundaries, inside the function's ranges. */
	uint64_t *cut = xmalloc((2 * (size_t)nitems + 2 * f->nranges + 1) * sizeof(uint64_t));
	uint32_t ncut = 0;
	for (uint32_t i = 0; i < nitems; i++) {
		cut[ncut++] = items[i].lo;
		cut[ncut++] = items[i].hi;
	}
	for (uint32_t i = 0; i < f->nranges; i++) {
		cut[ncut++] = f->ranges[i].lo;
		cut[ncut++] = f->ranges[i].hi;
	}
	sort_array(cut, ncut, sizeof(*cut), u64_order);
	struct item *heap = xmalloc((nitems ? nitems : 1) * sizeof(*heap));
	uint32_t nheap = 0, next_item = 0, fr = 0;
	for (uint32_t i = 0; i + 1 < ncut; i++) {
		uint64_t lo = cut[i], hi = cut[i + 1];
		if (lo == hi)
			continue;
		while (next_item < nitems && items[next_item].lo <= lo)
			heap_push(heap, &nheap, items[next_item++]);
		while (nheap && heap[0].hi <= lo)
			heap_pop(heap, &nheap);
		while (fr < f->nranges && f->ranges[fr].hi <= lo)
			fr++;
		if (fr == f->nranges || f->ranges[fr].lo > lo)
			continue; /* not part of this function */
		add_interval(c, lo, hi, nheap ? heap[0].scope : 0);
	}
	free(cut);
	free(heap);
	free(items);
}

static uint32_t scope_at(const struct ctx *c, uint64_t addr)
{
	uint32_t lo = (uint32_t)FTH_UPPER_BOUND(c->iv, c->niv, hi, addr);
	return lo < c->niv && c->iv[lo].lo <= addr ? c->iv[lo].scope : 0;
}

static uint32_t lca(const struct ctx *c, uint32_t a, uint32_t b)
{
	if (a == NONE32)
		return b;
	if (b == NONE32)
		return a;
	while (c->depth[a] > c->depth[b])
		a = c->parent[a];
	while (c->depth[b] > c->depth[a])
		b = c->parent[b];
	while (a != b) {
		a = c->parent[a];
		b = c->parent[b];
	}
	return a;
}

/* The deepest scope that holds every byte of block B. */
static uint32_t block_scope(const struct ctx *c, const struct block *b)
{
	uint32_t s = NONE32;
	uint32_t first = (uint32_t)FTH_UPPER_BOUND(c->iv, c->niv, hi, b->lo);
	for (uint32_t i = first; i < c->niv && c->iv[i].lo < b->hi; i++)
		s = lca(c, s, c->iv[i].scope);
	return s == NONE32 ? 0 : s;
}

/* ---- per function: the tree of scopes as a trie of chains ---- */

struct trie {
	struct sfile_node *nodes;
	uint32_t n, cap;
	uint32_t *ref; /* per node: local scope or loop index */
	uint32_t ref_cap;
	struct hmap children; /* hash of (parent, kind, ref) -> node, probing on collision */
};

static uint32_t trie_child(struct trie *t, uint32_t parent, uint8_t kind, uint32_t ref)
{
	uint64_t key = hmap_mix(((uint64_t)parent << 32) ^ ((uint64_t)kind << 29) ^ ref), v;
	while (hmap_get(&t->children, key, &v)) {
		if (t->nodes[v].parent == parent && t->nodes[v].kind == kind && t->ref[v] == ref)
			return (uint32_t)v;
		key = hmap_mix(key + 1);
	}
	ALLOC_GROW(t->nodes, t->n + 1, t->cap);
	ALLOC_GROW(t->ref, t->n + 1, t->ref_cap);
	memset(&t->nodes[t->n], 0, sizeof(t->nodes[t->n]));
	t->nodes[t->n].kind = kind;
	t->nodes[t->n].parent = parent;
	t->ref[t->n] = ref;
	hmap_put(&t->children, key, t->n);
	return t->n++;
}

struct loop_info {
	uint32_t scope; /* local scope the loop sits in */
	uint32_t file, line, column; /* its label: the loop statement's line where known */
	uint32_t latch_file, latch_line, latch_column; /* its condition or back edge */
	uint32_t latch_scope; /* the local scope of that branch */
	uint32_t label_scope; /* the scope whose lines name the loop (label_loops) */
	uint64_t header;
	uint32_t entries;
};

/*
 * Header line and inline level of every loop.  The candidates are the loop's branches: first
 * conditional back edges and exits (the loop's condition), then other back edges, then the
 * header block's first instruction; among a class the shallowest inline level wins, then the
 * smallest line.  The loop sits at the deepest scope that holds all of its bytes.
 */
struct header_pick {
	int cls;
	uint32_t depth;
	uint32_t scope;
	const struct sfile_line *row;
};

static void consider(struct header_pick *p, int cls, uint32_t depth, uint32_t scope,
		     const struct sfile_line *row)
{
	uint32_t line = row ? row->line : 0;
	if (line == 0 && cls < 2)
		return;
	if (p->cls < 0 || cls < p->cls || (cls == p->cls && depth < p->depth) ||
	    (cls == p->cls && depth == p->depth && line && (!p->row || line < p->row->line))) {
		p->cls = cls;
		p->depth = depth;
		p->scope = scope;
		p->row = line ? row : NULL;
	}
}

/* ---- per loop: the line of its loop statement ---- */

struct src_line {
	uint32_t file, line, column;
	bool seen; /* also inside the loop */
};

struct src_lines {
	struct src_line *v;
	uint32_t n, cap;
};

static void push_line(struct src_lines *o, uint32_t file, uint32_t line, uint32_t column)
{
	if (!line || (o->n && o->v[o->n - 1].file == file && o->v[o->n - 1].line == line))
		return;
	ALLOC_GROW(o->v, o->n + 1, o->cap);
	o->v[o->n++] = (struct src_line){ file, line, column, false };
}

/* The scope just below L on the chain of S: L itself when S is L, NONE32 when S is not in L. */
static uint32_t child_toward(const struct ctx *c, uint32_t s, uint32_t l)
{
	if (s == l)
		return l;
	if (c->depth[s] <= c->depth[l])
		return NONE32;
	while (c->depth[s] > c->depth[l] + 1)
		s = c->parent[s];
	return c->parent[s] == l ? s : NONE32;
}

/*
 * Append the source lines of [LO, HI) as seen from scope L: the line rows of L's own bytes
 * and, for bytes of inlined code inside L, the line of the call site in L.  Bytes outside L
 * give nothing.
 */
static void lines_in_scope(const struct ctx *c, uint64_t lo, uint64_t hi, uint32_t l,
			   struct src_lines *out)
{
	const struct dw_info *dw = c->job->dw;
	uint32_t first = (uint32_t)FTH_UPPER_BOUND(c->iv, c->niv, hi, lo);
	for (uint32_t i = first; i < c->niv && c->iv[i].lo < hi; i++) {
		uint64_t x = FTH_MAX(lo, c->iv[i].lo), y = FTH_MIN(hi, c->iv[i].hi);
		uint32_t k = child_toward(c, c->iv[i].scope, l);
		if (k == NONE32)
			continue;
		if (k != l) {
			const struct dw_scope *ds = &dw->scopes[c->scopes[k]];
			push_line(out, ds->file, ds->line, ds->column);
			continue;
		}
		uint64_t r0 = 0, r1 = dw->nlines;
		while (r0 < r1) {
			uint64_t mid = r0 + (r1 - r0) / 2;
			if (dw->lines[mid].hi <= x)
				r0 = mid + 1;
			else
				r1 = mid;
		}
		for (; r0 < dw->nlines && dw->lines[r0].lo < y; r0++)
			push_line(out, dw->lines[r0].file, dw->lines[r0].line, dw->lines[r0].column);
	}
}

static int src_line_order(const void *a, const void *b)
{
	const struct src_line *x = a, *y = b;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

static struct src_line *find_line(struct src_lines *s, uint32_t file, uint32_t line)
{
	struct src_line key = { file, line, 0, false };
	return s->n ? bsearch(&key, s->v, s->n, sizeof(*s->v), src_line_order) : NULL;
}

/* The local scope of DWARF scope S (the function's list is sorted), or NONE32. */
static uint32_t local_scope(const struct ctx *c, uint32_t s)
{
	uint32_t lo = 0, hi = c->nscopes;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (c->scopes[mid] < s)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->nscopes && c->scopes[lo] == s ? lo : NONE32;
}

static bool block_holds(const struct dw_info *dw, const struct dw_block *b, uint64_t addr)
{
	for (uint32_t r = 0; r < b->nranges; r++)
		if (dw->ranges[b->range_start + r].lo <= addr && addr < dw->ranges[b->range_start + r].hi)
			return true;
	return false;
}

/*
 * The line of the lexical block that a for statement's own variable makes, for loop L whose
 * lines give none (an OpenMP work-shared loop: the outlined function has no code at the for's
 * line): of the blocks of the loop's scope around a block that holds its header (a for's own
 * block around the block of its body's declarations, not a do-while's or a for (;;)'s body)
 * whose declaration line lies after the code on the entry edge (ENTRY_MAX) and before all of
 * the loop's code (LOOP_MIN), in the file of the latch, the first one.  0 when none.
 */
static uint32_t declaring_block_line(const struct ctx *c, const struct loop_info *l,
				     uint32_t entry_max, uint32_t loop_min)
{
	const struct dw_info *dw = c->job->dw;
	uint32_t best = 0;
	for (uint32_t i = 0; i < c->nblocks; i++) {
		const struct dw_block *inner = &dw->blocks[c->blocks[i]];
		if (inner->parent == NONE32 || !block_holds(dw, inner, l->header))
			continue;
		const struct dw_block *b = &dw->blocks[inner->parent];
		if (b->file != l->latch_file || b->line <= entry_max || b->line >= loop_min ||
		    (best && b->line >= best) || local_scope(c, b->scope) != l->label_scope ||
		    !block_holds(dw, b, l->header))
			continue;
		best = b->line;
	}
	return best;
}

/*
 * Label every loop with the line of its loop statement where the lines allow it.  The latch
 * (the pick of place_loops) of a rotated or work-shared loop may be a line at the bottom of
 * its body; the statement of a for or while loop is also where the loop is entered (its guard,
 * its initialisation, the jump to its test) and where it is continued (its test, its
 * increment), so the label is the smallest line that both the entry edge (the blocks outside
 * the loop that lead into its header, and the one block before such a block when it has no
 * other way in) and a block that controls the loop (a back edge, a conditional exit) have, as
 * seen from the scope whose code the loop is, and that does not come after the latch's line.
 * Only controlling blocks count, and never a line after the latch: a compiler that copies the
 * first statement of a body before the loop does not make it the loop's line.  Failing that,
 * a lexical block that declares the loop's variable between the entry and the loop's code
 * gives the line (declaring_block_line).  A loop without either (a do-while) keeps its
 * latch's line.
 */
static void label_loops(const struct ctx *c, const struct cfg *g, const struct loop_forest *lf,
			struct loop_info *li)
{
	uint32_t n = g->nblocks, nl = lf->nloops;
	const struct graph *gr = &g->g;
	uint32_t *pstart = xcalloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t nedges = gr->succ_start[n];
	uint32_t *pred = xmalloc((nedges ? nedges : 1) * sizeof(uint32_t));
	uint32_t *fill = xcalloc(n ? n : 1, sizeof(uint32_t));
	for (uint32_t e = 0; e < nedges; e++)
		pstart[gr->succ[e] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		pstart[i + 1] += pstart[i];
	for (uint32_t v = 0; v < n; v++)
		for (uint32_t e = gr->succ_start[v]; e < gr->succ_start[v + 1]; e++) {
			uint32_t w = gr->succ[e];
			pred[pstart[w] + fill[w]++] = v;
		}
	/*
	 * The loop is the code of the scope it sits in when a back edge is a jump in that scope's
	 * own bytes; when every back edge is inside one inlined callee (a loop of the callee
	 * into which the caller scheduled a few instructions), the callee's lines name it.
	 */
	for (uint32_t l = 0; l < nl; l++)
		li[l].label_scope = li[l].latch_scope;
	for (uint32_t b = 0; b < n; b++) {
		const struct block *bl = &g->blocks[b];
		uint32_t s = scope_at(c, bl->last);
		if (bl->last_kind != INSN_JMP && bl->last_kind != INSN_JCC)
			continue; /* falling into the header is no branch of the scope */
		for (uint32_t l = lf->innermost[b]; l != NONE32; l = lf->loops[l].parent)
			for (uint32_t e = bl->succ_start; e < bl->succ_start + bl->nsucc; e++)
				if (gr->succ[e] == lf->loops[l].header && s == li[l].scope)
					li[l].label_scope = li[l].scope;
	}
	for (uint32_t l = 0; l < nl; l++)
		if (child_toward(c, li[l].label_scope, li[l].scope) == NONE32)
			li[l].label_scope = li[l].scope; /* the latch is not inside the loop's scope */
	struct src_lines *cand = xcalloc(nl ? nl : 1, sizeof(*cand));
	for (uint32_t l = 0; l < nl; l++) {
		uint32_t h = lf->loops[l].header;
		for (uint32_t e = pstart[h]; e < pstart[h + 1]; e++) {
			uint32_t p = pred[e];
			if (lf->innermost[p] != NONE32 && loop_within(lf, lf->innermost[p], l))
				continue;
			lines_in_scope(c, g->blocks[p].lo, g->blocks[p].hi, li[l].label_scope,
				       &cand[l]);
			if (pstart[p + 1] - pstart[p] == 1) {
				uint32_t q = pred[pstart[p]];
				if (lf->innermost[q] == NONE32 || !loop_within(lf, lf->innermost[q], l))
					lines_in_scope(c, g->blocks[q].lo, g->blocks[q].hi,
						       li[l].label_scope, &cand[l]);
			}
		}
		sort_array(cand[l].v, cand[l].n, sizeof(*cand[l].v), src_line_order);
		uint32_t k = 0;
		for (uint32_t i = 0; i < cand[l].n; i++)
			if (!k || src_line_order(&cand[l].v[k - 1], &cand[l].v[i]))
				cand[l].v[k++] = cand[l].v[i];
		cand[l].n = k;
	}
	/* Which of them the loop's controlling blocks have: each block, seen from each loop. */
	struct src_lines here = { 0 };
	uint32_t *loop_min = xcalloc(nl ? nl : 1, sizeof(uint32_t)); /* in the latch's file */
	for (uint32_t b = 0; b < n; b++)
		for (uint32_t l = lf->innermost[b]; l != NONE32; l = lf->loops[l].parent) {
			here.n = 0;
			lines_in_scope(c, g->blocks[b].lo, g->blocks[b].hi, li[l].label_scope, &here);
			bool controls = false; /* a back edge or a conditional exit of L */
			const struct block *bl = &g->blocks[b];
			for (uint32_t e = bl->succ_start; e < bl->succ_start + bl->nsucc; e++) {
				uint32_t t = gr->succ[e];
				controls |= t == lf->loops[l].header ||
					    (bl->last_kind == INSN_JCC &&
					     (lf->innermost[t] == NONE32 ||
					      !loop_within(lf, lf->innermost[t], l)));
			}
			for (uint32_t i = 0; i < here.n; i++) {
				if (here.v[i].file == li[l].latch_file &&
				    (!loop_min[l] || here.v[i].line < loop_min[l]))
					loop_min[l] = here.v[i].line;
				if (!cand[l].n || !controls)
					continue;
				struct src_line *x = find_line(&cand[l], here.v[i].file, here.v[i].line);
				if (x && !x->seen) {
					x->seen = true;
					x->column = here.v[i].column;
				}
			}
		}
	for (uint32_t l = 0; l < nl; l++) {
		const struct src_line *best = NULL;
		for (uint32_t i = 0; i < cand[l].n; i++) {
			const struct src_line *x = &cand[l].v[i];
			/*
			 * The statement comes before the body: a line after the latch's (both seen
			 * from one scope) is body code that the compiler copied before the loop.
			 */
			if (!x->seen || (li[l].latch_scope == li[l].label_scope &&
					 x->file == li[l].latch_file && x->line > li[l].latch_line))
				continue;
			/* The latch's file first, then the smallest line. */
			bool same = x->file == li[l].latch_file;
			bool best_same = best && best->file == li[l].latch_file;
			if (!best || (same && !best_same) ||
			    (same == best_same && x->line < best->line))
				best = x;
		}
		if (best) {
			li[l].file = best->file;
			li[l].line = best->line;
			li[l].column = best->file == li[l].latch_file && best->line == li[l].latch_line
					       ? li[l].latch_column
					       : best->column;
		} else if (loop_min[l] && c->nblocks) {
			uint32_t entry_max = 0;
			for (uint32_t i = 0; i < cand[l].n; i++)
				if (cand[l].v[i].file == li[l].latch_file)
					entry_max = FTH_MAX(entry_max, cand[l].v[i].line);
			uint32_t line = entry_max ? declaring_block_line(c, &li[l], entry_max,
									 loop_min[l])
						  : 0;
			if (line) {
				li[l].file = li[l].latch_file;
				li[l].line = line;
				li[l].column = 0;
			}
		}
		free(cand[l].v);
	}
	free(loop_min);
	free(here.v);
	free(cand);
	free(pstart);
	free(pred);
	free(fill);
}

static void place_loops(struct ctx *c, const struct cfg *g, const struct loop_forest *lf,
			struct loop_info *li)
{
	uint32_t nl = lf->nloops;
	const struct dw_info *dw = c->job->dw;
	struct header_pick *pick = xmalloc((nl ? nl : 1) * sizeof(*pick));
	for (uint32_t l = 0; l < nl; l++)
		pick[l] = (struct header_pick){ -1, 0, 0, NULL };
	for (uint32_t b = 0; b < g->nblocks; b++) {
		const struct block *bl = &g->blocks[b];
		uint32_t inner = lf->innermost[b];
		if (inner == NONE32)
			continue;
		uint32_t s = scope_at(c, bl->last);
		const struct sfile_line *row = line_at(dw, bl->last);
		for (uint32_t l = inner; l != NONE32; l = lf->loops[l].parent) {
			bool back = false, exits = false;
			for (uint32_t e = bl->succ_start; e < bl->succ_start + bl->nsucc; e++) {
				uint32_t t = g->g.succ[e];
				if (t == lf->loops[l].header)
					back = true;
				else if (lf->innermost[t] == NONE32 ||
					 !loop_within(lf, lf->innermost[t], l))
					exits = true;
			}
			if ((back || exits) && bl->last_kind == INSN_JCC)
				consider(&pick[l], 0, c->depth[s], s, row);
			else if (back)
				consider(&pick[l], 1, c->depth[s], s, row);
		}
	}
	for (uint32_t l = 0; l < nl; l++) {
		const struct block *h = &g->blocks[lf->loops[l].header];
		uint32_t s = scope_at(c, h->lo);
		consider(&pick[l], 2, c->depth[s], s, line_at(dw, h->lo));
		li[l].header = h->lo;
		li[l].entries = lf->loops[l].entries;
		li[l].latch_scope = pick[l].scope;
		li[l].latch_file = li[l].file = pick[l].row ? pick[l].row->file : NONE32;
		li[l].latch_line = li[l].line = pick[l].row ? pick[l].row->line : 0;
		li[l].latch_column = li[l].column = pick[l].row ? pick[l].row->column : 0;
		li[l].scope = NONE32;
	}
	/*
	 * The loop sits at the deepest scope that holds every byte of its blocks (subloops
	 * included), so that no byte of the loop gets a frame DWARF does not give it or loses
	 * one it gives: a loop whose condition is an inlined comparator sits in its caller,
	 * with the comparator's and the body's inline call sites inside it.
	 */
	for (uint32_t b = 0; b < g->nblocks; b++) {
		uint32_t inner = lf->innermost[b];
		if (inner == NONE32)
			continue;
		uint32_t s = block_scope(c, &g->blocks[b]);
		for (uint32_t l = inner; l != NONE32; l = lf->loops[l].parent)
			li[l].scope = lca(c, li[l].scope, s);
	}
	for (uint32_t l = 0; l < nl; l++)
		if (li[l].scope == NONE32)
			li[l].scope = 0;
	label_loops(c, g, lf, li);
	free(pick);
}

/* The node for bytes in local scope S inside loop L (NONE32: none). */
static uint32_t chain_node(struct ctx *c, struct trie *t, const struct loop_forest *lf,
			   const struct loop_info *li, uint32_t s, uint32_t l)
{
	uint32_t scopes[1024], loops[1024];
	uint32_t ns = 0, nl = 0;
	for (uint32_t x = s; x != 0 && ns < ARRAY_SIZE(scopes) - 1; x = c->parent[x])
		scopes[ns++] = x;
	scopes[ns++] = 0;
	for (uint32_t x = l; x != NONE32 && nl < ARRAY_SIZE(loops); x = lf->loops[x].parent)
		loops[nl++] = x;
	uint32_t node = 0, next_loop = nl; /* loops[nl-1] is the outermost */
	for (uint32_t j = ns; j-- > 0;) {
		uint32_t scope = scopes[j];
		if (scope != 0)
			node = trie_child(t, node, SFILE_INLINE, scope);
		while (next_loop > 0 && (li[loops[next_loop - 1]].scope == scope ||
					 c->depth[li[loops[next_loop - 1]].scope] < c->depth[scope]))
			node = trie_child(t, node, SFILE_LOOP, loops[--next_loop]);
	}
	while (next_loop > 0) /* loops whose scope is not on this chain (should not happen) */
		node = trie_child(t, node, SFILE_LOOP, loops[--next_loop]);
	return node;
}

static void add_range(struct fn_result *r, uint32_t *cap, uint64_t lo, uint64_t hi, uint32_t node)
{
	if (r->nranges && r->ranges[r->nranges - 1].hi == lo && r->ranges[r->nranges - 1].node == node) {
		r->ranges[r->nranges - 1].hi = hi;
		return;
	}
	ALLOC_GROW(r->ranges, r->nranges + 1, *cap);
	r->ranges[r->nranges].lo = lo;
	r->ranges[r->nranges].hi = hi;
	r->ranges[r->nranges].node = node;
	r->nranges++;
}

/*
 * cfg_noreturn.site: the call at CALL ends an inlined instance of a noreturn function (its
 * next instruction lies outside the instance), as a call to glibc's __libc_message ends an
 * inlined malloc_printerr.  Control cannot leave a function that does not return, so the
 * call does not come back, whatever the callee is.
 */
static bool ends_noreturn_inline(const void *ctx, uint64_t call, uint64_t next)
{
	const struct ctx *c = ctx;
	const struct dw_info *dw = c->job->dw;
	if (c->f->scope == NONE32)
		return false;
	uint32_t s = scope_at(c, call), t = 0; /* 0: the function itself, or outside it */
	bool looked = false;
	for (uint32_t x = s; x != 0; x = c->parent[x]) {
		const struct dw_scope *ds = &dw->scopes[c->scopes[x]];
		if (ds->kind != SFILE_INLINE || !ds->noreturn)
			continue;
		if (!looked) {
			t = scope_at(c, next);
			looked = true;
		}
		if (lca(c, x, t) != x) /* NEXT is outside the instance */
			return true;
	}
	return false;
}

static void analyse_function(const struct job *job, const struct decoder *dec, uint32_t fi)
{
	const struct func *f = &job->funcs[fi];
	const struct dw_info *dw = job->dw;
	struct fn_result *res = &job->results[fi];
	struct ctx c = { .job = job, .f = f };
	uint32_t one = 0;
	if (f->scope != NONE32) {
		uint32_t start = job->scope_start[f->scope], end = job->scope_start[f->scope + 1];
		c.scopes = job->scope_list + start;
		c.nscopes = end - start;
		c.blocks = job->block_list + job->block_start[f->scope];
		c.nblocks = job->block_start[f->scope + 1] - job->block_start[f->scope];
	} else {
		c.scopes = &one;
		c.nscopes = 1;
	}
	c.parent = xmalloc(c.nscopes * sizeof(uint32_t));
	c.depth = xmalloc(c.nscopes * sizeof(uint32_t));
	c.parent[0] = 0;
	c.depth[0] = 0;
	for (uint32_t s = 1; s < c.nscopes; s++) {
		/* Parents come before children in the list (sorted by DWARF scope id). */
		uint32_t p = dw->scopes[c.scopes[s]].parent, lo = 0, hi = s;
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (c.scopes[mid] < p)
				lo = mid + 1;
			else
				hi = mid;
		}
		c.parent[s] = lo < s && c.scopes[lo] == p ? lo : 0;
		c.depth[s] = c.depth[c.parent[s]] + 1;
	}
	innermost_scopes(&c);

	struct cfg g = { 0 };
	struct loop_forest lf = { 0 };
	struct loop_info *li = NULL;
	bool decodable = job->decode && !(f->flags & SFILE_NODE_PLT);
	struct cfg_noreturn nr = { .addrs = &job->noreturn, .site = ends_noreturn_inline, .ctx = &c };
	if (decodable && cfg_build(&g, dec, job->img, f->ranges, f->nranges, f->entry, &nr, 0) == 0) {
		loops_find(&g.g, &lf);
		li = xmalloc((lf.nloops ? lf.nloops : 1) * sizeof(*li));
		place_loops(&c, &g, &lf, li);
		res->nloops = lf.nloops;
		for (uint32_t l = 0; l < lf.nloops; l++)
			if (lf.loops[l].entries > 1)
				res->nirreducible++;
		res->unresolved = g.unresolved_jumps;
	}

	struct trie t = { 0 };
	hmap_init(&t.children);
	ALLOC_GROW(t.nodes, 1, t.cap);
	ALLOC_GROW(t.ref, 1, t.ref_cap);
	memset(&t.nodes[0], 0, sizeof(t.nodes[0]));
	t.nodes[0].kind = SFILE_FUNCTION;
	t.nodes[0].parent = SFILE_NONE;
	t.ref[0] = 0;
	t.n = 1;
	uint32_t rcap = 0, b = 0;
	for (uint32_t i = 0; i < c.niv; i++) {
		const struct interval *iv = &c.iv[i];
		uint64_t at = iv->lo;
		while (b < g.nblocks && g.blocks[b].hi <= at)
			b++;
		while (at < iv->hi) {
			uint64_t end;
			uint32_t loop = NONE32;
			if (b < g.nblocks && g.blocks[b].lo <= at) {
				end = FTH_MIN(iv->hi, g.blocks[b].hi);
				loop = lf.innermost ? lf.innermost[b] : NONE32;
			} else {
				end = b < g.nblocks ? FTH_MIN(iv->hi, g.blocks[b].lo) : iv->hi;
			}
			uint32_t node = chain_node(&c, &t, &lf, li, iv->scope, loop);
			add_range(res, &rcap, at, end, node);
			at = end;
			if (b < g.nblocks && g.blocks[b].hi <= at)
				b++;
		}
	}
	/* Fill in the nodes. */
	for (uint32_t n = 0; n < t.n; n++) {
		struct sfile_node *x = &t.nodes[n];
		x->name = x->symbol = x->file = x->origin = x->decl_file = x->latch_file = SFILE_NONE;
		if (x->kind == SFILE_FUNCTION) {
			x->name = f->name;
			x->symbol = f->symbol;
			x->file = f->file;
			x->line = f->line;
			x->addr = f->entry;
			x->flags = f->flags;
			x->origin = f->origin; /* a function index until the assembly */
			if (g.unresolved_jumps)
				x->flags |= SFILE_NODE_UNRESOLVED_JUMP;
		} else if (x->kind == SFILE_INLINE) {
			const struct dw_scope *ds = &dw->scopes[c.scopes[t.ref[n]]];
			x->name = ds->name;
			x->file = ds->file;
			x->line = ds->line;
			x->column = ds->column;
			x->decl_file = ds->decl_file;
			x->decl_line = ds->decl_line;
		} else {
			const struct loop_info *l = &li[t.ref[n]];
			x->file = l->file;
			x->line = l->line;
			x->column = l->column;
			x->latch_file = l->latch_file;
			x->latch_line = l->latch_line;
			x->latch_column = l->latch_column;
			x->addr = l->header;
			x->entries = l->entries;
			if (l->entries > 1)
				x->flags |= SFILE_NODE_IRREDUCIBLE;
		}
	}
	/* Each loop's own blocks (not its inner loops'), for what rebuilds its code. */
	uint32_t *loop_node = xmalloc((lf.nloops ? lf.nloops : 1) * sizeof(uint32_t));
	for (uint32_t l = 0; l < lf.nloops; l++)
		loop_node[l] = NONE32;
	for (uint32_t n = 0; n < t.n; n++)
		if (t.nodes[n].kind == SFILE_LOOP && t.ref[n] < lf.nloops && loop_node[t.ref[n]] == NONE32)
			loop_node[t.ref[n]] = n;
	uint32_t bcap = 0;
	for (uint32_t k = 0; lf.innermost && k < g.nblocks; k++) {
		uint32_t l = lf.innermost[k];
		if (l == NONE32 || loop_node[l] == NONE32 || g.blocks[k].hi <= g.blocks[k].lo)
			continue;
		ALLOC_GROW(res->blocks, res->nblocks + 1, bcap);
		res->blocks[res->nblocks++] =
			(struct sfile_range){ g.blocks[k].lo, g.blocks[k].hi, loop_node[l] };
	}
	free(loop_node);
	res->nodes = t.nodes;
	res->nnodes = t.n;
	free(t.ref);
	hmap_release(&t.children);
	free(li);
	loops_release(&lf);
	cfg_release(&g);
	free(c.iv);
	free(c.parent);
	free(c.depth);
}

/* Whether function FI may return, with the callees known now not to; its callees kept. */
static void prepass_function(const struct job *job, const struct decoder *dec, uint32_t fi)
{
	const struct func *f = &job->funcs[fi];
	struct cfg *g = &job->cfgs[fi];
	cfg_release(g);
	job->returns[fi] = true;
	if (f->flags & SFILE_NODE_PLT)
		return;
	struct cfg_noreturn nr = { .addrs = &job->noreturn };
	if (cfg_build(g, dec, job->img, f->ranges, f->nranges, f->entry, &nr,
		      CFG_CALLEES | CFG_NO_BLOCKS | CFG_UNTIL_RETURN) < 0)
		return;
	job->returns[fi] = g->returns;
	uint64_t *callees = g->callees;
	uint32_t ncallees = g->ncallees;
	g->callees = NULL;
	cfg_release(g);
	g->callees = callees;
	g->ncallees = ncallees;
}

static void *worker(void *arg)
{
	struct job *job = arg;
	struct decoder dec;
	if (job->decode && decoder_init(&dec, job->img->machine) < 0)
		return NULL;
	for (;;) {
		uint32_t fi = atomic_fetch_add(&job->next, 1);
		if (fi >= job->nfuncs)
			break;
		if (job->prepass)
			prepass_function(job, &dec, fi);
		else
			analyse_function(job, &dec, fi);
	}
	return NULL;
}

/* ---- functions from DWARF and symbols ---- */

/* Functions that never return, by name (C library, C++ runtime, unwinder). */
static const char *const noreturn_names[] = {
	"abort", "exit", "_exit", "_Exit", "quick_exit", "__stack_chk_fail", "__stack_chk_fail_local",
	"__assert_fail", "__assert_perror_fail", "__assert", "__fortify_fail", "__fortify_fail_abort",
	"__chk_fail", "__libc_fatal", "longjmp", "siglongjmp", "_longjmp", "__longjmp_chk",
	"____longjmp_chk", "__longjmp", "__longjmp_cancel", "__libc_longjmp", "__libc_siglongjmp",
	"pthread_exit", "__pthread_unwind", "__pthread_unwind_next", "_dl_signal_error",
	"_dl_signal_exception", "err", "errx", "verr", "verrx", "__cxa_throw", "__cxa_rethrow",
	"__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length",
	"__cxa_call_unexpected", "__cxa_pure_virtual", "__cxa_deleted_virtual", "_Unwind_Resume",
	"_ZSt9terminatev", "__ubsan_handle_builtin_unreachable", "_gfortran_stop_string",
	"_gfortran_error_stop_string", "_gfortran_runtime_error", "_gfortran_runtime_error_at",
	"_gfortran_os_error", "rust_panic", "rust_begin_unwind", "__rust_alloc_error_handler",
	"__rg_oom", "__rdl_oom", "__rust_abort",
};

/* Rust paths (demangled, without hash) that never return: "PREFIX*" or exact. */
static const char *const rust_noreturn[] = {
	"core::panicking::*", "std::panicking::begin_panic*", "std::panicking::rust_panic*",
	"std::process::abort", "std::process::exit", "std::sys::abort_internal",
	"std::sys::pal::unix::abort_internal", "core::result::unwrap_failed",
	"core::option::unwrap_failed", "core::option::expect_failed",
	"core::slice::index::slice_*_fail*", "core::str::slice_error_fail*",
	"core::cell::panic_already_*", "alloc::alloc::handle_alloc_error*",
	"alloc::raw_vec::capacity_overflow", "alloc::raw_vec::handle_error", "std::alloc::rust_oom",
	/* v0 names of the runtime's unmangled symbols live in the crate __rustc */
	"__rustc::rust_panic", "__rustc::rust_begin_unwind", "__rustc::__rust_alloc_error_handler",
	"__rustc::__rg_oom", "__rustc::__rdl_oom", "__rustc::__rust_abort",
};

/* Append the "<decimal length><identifier>" run at *P to OUT ("a::b"); false when none. */
static bool rust_idents(const char **p, char *out, size_t cap, size_t *len)
{
	const char *s = *p;
	bool any = false;
	for (;;) {
		if (*s == 's' && s[1] && s[1] != '_') { /* v0 disambiguator: s<base62>_ */
			const char *q = s + 1;
			while ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z'))
				q++;
			if (*q != '_')
				break;
			s = q + 1;
			continue;
		}
		if (*s < '1' || *s > '9')
			break;
		size_t n = 0;
		while (*s >= '0' && *s <= '9' && n < 4096)
			n = n * 10 + (size_t)(*s++ - '0');
		if (*s == '_')
			s++; /* v0: an identifier that starts with a digit or '_' */
		if (strnlen(s, n) < n || *len + n + 3 > cap)
			return false;
		if (any || *len)
			out[(*len)++] = ':', out[(*len)++] = ':';
		memcpy(out + *len, s, n);
		*len += n;
		out[*len] = 0;
		s += n;
		any = true;
	}
	*p = s;
	return any;
}

/*
 * The path of a Rust symbol, legacy (_ZN...17h<hash>E) or v0 (_R...: the crate and the names
 * of the nested path, which v0 writes innermost last), without hash: "core::panicking::panic".
 */
static bool rust_path(const char *name, char *out, size_t cap)
{
	size_t len = 0;
	out[0] = 0;
	if (!strncmp(name, "_ZN", 3)) {
		const char *p = name + 3;
		if (!rust_idents(&p, out, cap, &len) || *p != 'E')
			return false;
		char *last = strrchr(out, ':');
		if (last && last[1] == 'h' && strlen(last + 1) == 17)
			last[-1] = 0; /* the hash */
		return true;
	}
	if (strncmp(name, "_R", 2) != 0)
		return false;
	const char *c = strchr(name + 2, 'C'); /* the crate root */
	if (!c)
		return false;
	c++;
	return rust_idents(&c, out, cap, &len);
}

/* Whether NAME matches PATTERN, whose '*' match any run of characters. */
static bool glob_match(const char *pat, const char *name)
{
	if (!*pat)
		return !*name;
	if (*pat == '*')
		return glob_match(pat + 1, name) || (*name && glob_match(pat, name + 1));
	return *name == *pat && glob_match(pat + 1, name + 1);
}

/*
 * Whether NAME (a symbol, with any @version or @plt cut) is a function that does not return.
 * Plain words (exit, err) are taken only from symbols that can be the C library's (GLOBAL):
 * a program's own static err() may well return.
 */
static bool is_noreturn_name(const char *name, bool global)
{
	size_t n = strlen(name);
	const char *at = strchr(name, '@');
	if (at)
		n = (size_t)(at - name);
	if (n > 13 && !strncmp(name, "_ZSt", 4) && strstr(name, "__throw_"))
		return true; /* std::__throw_logic_error and its kin */
	if (!strncmp(name, "__GI_", 5) && n > 5) /* glibc's internal aliases */
		name += 5, n -= 5;
	if (n > 15 && !strncmp(name, "__ubsan_handle_", 15) && n > 6 &&
	    !strncmp(name + n - 6, "_abort", 6))
		return true;
	if (global || name[0] == '_')
		for (size_t i = 0; i < ARRAY_SIZE(noreturn_names); i++)
			if (strlen(noreturn_names[i]) == n && !strncmp(name, noreturn_names[i], n))
				return true;
	char path[512];
	if ((name[0] == '_' && (name[1] == 'Z' || name[1] == 'R')) && n < sizeof(path)) {
		char copy[512];
		memcpy(copy, name, n);
		copy[n] = 0;
		if (rust_path(copy, path, sizeof(path)))
			for (size_t i = 0; i < ARRAY_SIZE(rust_noreturn); i++)
				if (glob_match(rust_noreturn[i], path))
					return true;
	}
	return false;
}

static void run_workers(struct job *job, unsigned nthreads)
{
	if (nthreads < 1)
		nthreads = 1;
	atomic_store(&job->next, 0);
	pthread_t *tids = xcalloc(nthreads, sizeof(pthread_t));
	bool *started = xcalloc(nthreads, sizeof(bool));
	for (unsigned i = 1; i < nthreads; i++)
		started[i] = pthread_create(&tids[i], NULL, worker, job) == 0;
	worker(job);
	for (unsigned i = 1; i < nthreads; i++)
		if (started[i])
			pthread_join(tids[i], NULL);
	free(tids);
	free(started);
}

/* A PLT entry or GOT slot FROM that leads to code of this binary at TO. */
struct alias {
	uint64_t from, to;
};

static int got_by_name(const void *a, const void *b)
{
	const struct got_slot *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

/* The noreturn callees known without analysis: by name, from DW_AT_noreturn. */
static void seed_noreturn(struct job *job, const struct strtab *st, struct alias **aliases,
			  uint32_t *naliases)
{
	const struct image *img = job->img;
	const struct dw_info *dw = job->dw;
	struct hmap *out = &job->noreturn;
	uint32_t cap = 0;
	for (uint32_t i = 0; i < img->nsyms; i++)
		if (is_noreturn_name(img->syms[i].name, img->syms[i].flags & SYM_GLOBAL))
			hmap_put(out, img->syms[i].addr, 1);
	for (uint32_t s = 0; s < dw->nscopes; s++)
		if (dw->scopes[s].kind == SFILE_FUNCTION && dw->scopes[s].noreturn)
			hmap_put(out, dw->scopes[s].entry, 1);
	for (uint32_t i = 0; i < job->nfuncs; i++)
		if (job->funcs[i].scope != NONE32 && is_noreturn_name(st->v[job->funcs[i].name], false))
			hmap_put(out, job->funcs[i].entry, 1);
	/* GOT slots by their symbol; slots and PLT entries bound to code here are aliases. */
	const struct got_slot **named = xmalloc((img->ngot ? img->ngot : 1) * sizeof(*named));
	uint32_t nnamed = 0;
	for (uint32_t i = 0; i < img->ngot; i++) {
		const struct got_slot *g = &img->got[i];
		if (g->name && is_noreturn_name(g->name, true))
			hmap_put(out, g->slot, 1);
		if (g->addr) {
			ALLOC_GROW(*aliases, *naliases + 1, cap);
			(*aliases)[(*naliases)++] = (struct alias){ g->slot, g->addr };
			if (g->name)
				named[nnamed++] = g;
		}
	}
	sort_array(named, nnamed, sizeof(*named), got_by_name);
	for (uint32_t i = 0; i < img->nsyms && nnamed; i++) {
		const struct symbol *sym = &img->syms[i];
		const char *at = strstr(sym->name, "@plt");
		if (!(sym->flags & SYM_PLT) || !at || (size_t)(at - sym->name) >= 512)
			continue;
		char name[512];
		memcpy(name, sym->name, (size_t)(at - sym->name));
		name[at - sym->name] = 0;
		struct got_slot key = { .name = name };
		const struct got_slot *pkey = &key;
		const struct got_slot **hit = bsearch(&pkey, named, nnamed, sizeof(*named), got_by_name);
		if (hit) {
			ALLOC_GROW(*aliases, *naliases + 1, cap);
			(*aliases)[(*naliases)++] = (struct alias){ sym->addr, (*hit)->addr };
		}
	}
	free(named);
}

/*
 * Which callees do not return: the known ones (seed_noreturn), then the functions of this
 * binary with no path back to their caller, to a fixed point: a function that calls one
 * found in a round is looked at again in the next.
 */
static void find_noreturn(struct job *job, unsigned nthreads)
{
	struct alias *aliases = NULL;
	uint32_t naliases = 0;
	seed_noreturn(job, &job->dw->strings, &aliases, &naliases);
	struct decoder dec;
	if (!job->decode || decoder_init(&dec, job->img->machine) < 0) {
		free(aliases);
		return;
	}
	uint32_t n = job->nfuncs;
	job->returns = xcalloc(n ? n : 1, sizeof(bool));
	job->cfgs = xcalloc(n ? n : 1, sizeof(struct cfg));
	job->prepass = true;
	run_workers(job, nthreads);
	for (;;) {
		struct hmap fresh = HMAP_INIT;
		for (uint32_t i = 0; i < n; i++)
			if (!job->returns[i] && !hmap_get(&job->noreturn, job->funcs[i].entry, NULL)) {
				hmap_put(&job->noreturn, job->funcs[i].entry, 1);
				hmap_put(&fresh, job->funcs[i].entry, 1);
			}
		for (uint32_t i = 0; i < naliases; i++)
			if (hmap_get(&job->noreturn, aliases[i].to, NULL) &&
			    !hmap_get(&job->noreturn, aliases[i].from, NULL)) {
				hmap_put(&job->noreturn, aliases[i].from, 1);
				hmap_put(&fresh, aliases[i].from, 1);
			}
		if (hmap_size(&fresh) == 0) {
			hmap_release(&fresh);
			break;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (!job->returns[i])
				continue;
			const struct cfg *g = &job->cfgs[i];
			for (uint32_t k = 0; k < g->ncallees; k++)
				if (hmap_get(&fresh, g->callees[k], NULL)) {
					prepass_function(job, &dec, i);
					break;
				}
		}
		hmap_release(&fresh);
	}
	for (uint32_t i = 0; i < n; i++)
		cfg_release(&job->cfgs[i]);
	free(job->cfgs);
	free(job->returns);
	job->cfgs = NULL;
	job->returns = NULL;
	job->prepass = false;
	free(aliases);
}

static const char *const clone_suffixes[] = { ".constprop.", ".isra.", ".part.", ".cold",
					      ".clone.", ".lto_priv.", ".localalias" };

/* Length of the name before a clone suffix, or 0 when NAME is no clone. */
static size_t clone_base_len(const char *name)
{
	size_t best = 0;
	for (size_t i = 0; i < ARRAY_SIZE(clone_suffixes); i++) {
		const char *p = strstr(name, clone_suffixes[i]);
		if (p && p > name && (!best || (size_t)(p - name) < best))
			best = (size_t)(p - name);
	}
	return best;
}

struct owner {
	uint64_t lo, hi;
	uint32_t func;
};

static int owner_order(const void *a, const void *b)
{
	const struct owner *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->func < y->func ? -1 : x->func > y->func;
}

static void add_func_range(struct func *f, uint64_t lo, uint64_t hi)
{
	ALLOC_GROW(f->ranges, f->nranges + 1, f->ranges_cap);
	f->ranges[f->nranges].lo = lo;
	f->ranges[f->nranges].hi = hi;
	f->nranges++;
}

static uint32_t symbol_at(const struct image *img, uint64_t addr)
{
	uint32_t lo = (uint32_t)FTH_LOWER_BOUND(img->syms, img->nsyms, addr, addr);
	return lo < img->nsyms && img->syms[lo].addr == addr ? lo : NONE32;
}

static int func_order(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	uint64_t xl = x->nranges ? x->ranges[0].lo : 0, yl = y->nranges ? y->ranges[0].lo : 0;
	uint64_t xh = x->nranges ? x->ranges[x->nranges - 1].hi : 0;
	uint64_t yh = y->nranges ? y->ranges[y->nranges - 1].hi : 0;
	const uint64_t kx[] = { xl, xh, x->name, x->entry, x->nranges, x->file, x->line, x->die };
	const uint64_t ky[] = { yl, yh, y->name, y->entry, y->nranges, y->file, y->line, y->die };
	return fth_compare_keys(kx, ky, ARRAY_SIZE(kx));
}

static struct func *collect_functions(const struct image *img, struct dw_info *dw,
				      struct strtab *st, uint32_t *nfuncs)
{
	struct func *funcs = NULL;
	uint32_t n = 0, cap = 0;
	for (uint32_t s = 0; s < dw->nscopes; s++) {
		const struct dw_scope *ds = &dw->scopes[s];
		if (ds->kind != SFILE_FUNCTION)
			continue;
		ALLOC_GROW(funcs, n + 1, cap);
		struct func *f = &funcs[n++];
		memset(f, 0, sizeof(*f));
		f->scope = s;
		f->die = ds->die;
		for (uint32_t r = 0; r < ds->nranges; r++)
			add_func_range(f, dw->ranges[ds->range_start + r].lo,
				       dw->ranges[ds->range_start + r].hi);
		f->nranges = normalise_spans(f->ranges, f->nranges);
		f->entry = ds->entry;
		f->name = ds->name;
		f->file = ds->file;
		f->line = ds->line;
	}
	/* A canonical order (not the order in which threads read units), then give every
	 * address to one function: the first by address wins. */
	sort_array(funcs, n, sizeof(*funcs), func_order);
	struct owner *own = NULL;
	uint32_t nown = 0, own_cap = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t r = 0; r < funcs[i].nranges; r++) {
			ALLOC_GROW(own, nown + 1, own_cap);
			own[nown++] = (struct owner){ funcs[i].ranges[r].lo, funcs[i].ranges[r].hi, i };
		}
	sort_array(own, nown, sizeof(*own), owner_order);
	for (uint32_t i = 0; i < n; i++)
		funcs[i].nranges = 0;
	uint64_t covered = 0;
	for (uint32_t i = 0; i < nown; i++) {
		uint64_t lo = FTH_MAX(own[i].lo, covered);
		if (lo < own[i].hi) {
			add_func_range(&funcs[own[i].func], lo, own[i].hi);
			covered = own[i].hi;
		}
	}
	/* Symbols at addresses DWARF does not cover become functions of their own. */
	nown = 0;
	for (uint32_t i = 0; i < n; i++)
		for (uint32_t r = 0; r < funcs[i].nranges; r++)
			own[nown++] = (struct owner){ funcs[i].ranges[r].lo, funcs[i].ranges[r].hi, i };
	sort_array(own, nown, sizeof(*own), owner_order);
	uint32_t oi = 0;
	uint32_t ndwarf = n;
	uint32_t *sym_func = xmalloc((img->nsyms ? img->nsyms : 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < img->nsyms; i++) {
		const struct symbol *sym = &img->syms[i];
		sym_func[i] = NONE32;
		while (oi < nown && own[oi].hi <= sym->addr)
			oi++;
		if (oi < nown && own[oi].lo <= sym->addr)
			continue; /* inside a DWARF function */
		if (i && img->syms[i - 1].addr == sym->addr) {
			sym_func[i] = sym_func[i - 1]; /* an alias */
			continue;
		}
		size_t avail;
		image_code(img, sym->addr, &avail);
		uint64_t end = sym->size ? sym->addr + FTH_MIN(sym->size, avail) : 0;
		if (!end) { /* no size: up to the next symbol in the same section */
			end = sym->addr + avail;
			for (uint32_t j = i + 1; j < img->nsyms; j++)
				if (img->syms[j].addr > sym->addr) {
					end = FTH_MIN(end, img->syms[j].addr);
					break;
				}
		}
		if (oi < nown && own[oi].lo < end)
			end = own[oi].lo;
		ALLOC_GROW(funcs, n + 1, cap);
		struct func *f = &funcs[n];
		memset(f, 0, sizeof(*f));
		f->scope = NONE32;
		f->entry = sym->addr;
		f->name = strtab_intern(st, sym->name);
		f->symbol = SFILE_NONE;
		f->file = SFILE_NONE;
		f->flags = SFILE_NODE_NO_DWARF | ((sym->flags & SYM_PLT) ? SFILE_NODE_PLT : 0);
		add_func_range(f, sym->addr, end);
		sym_func[i] = n++;
	}
	/* Symbol-only functions must not overlap each other either. */
	for (uint32_t i = ndwarf; i < n; i++) {
		for (uint32_t j = i + 1; j < n && funcs[j].ranges[0].lo < funcs[i].ranges[0].hi; j++)
			if (funcs[j].ranges[0].lo > funcs[i].ranges[0].lo) {
				funcs[i].ranges[0].hi = funcs[j].ranges[0].lo;
				break;
			}
	}
	/* Names: the symbol at a DWARF function's entry; clones and their origins. */
	struct hmap by_name = HMAP_INIT;
	for (uint32_t i = 0; i < n; i++) {
		struct func *f = &funcs[i];
		f->origin = NONE32;
		if (f->scope != NONE32) {
			f->symbol = SFILE_NONE;
			uint32_t si = symbol_at(img, f->entry);
			if (si != NONE32) {
				uint32_t id = strtab_intern(st, img->syms[si].name);
				if (id != f->name)
					f->symbol = id;
			}
		}
		uint32_t label = f->symbol != SFILE_NONE ? f->symbol : f->name;
		if (!clone_base_len(st->v[label]) && !(f->flags & SFILE_NODE_PLT))
			hmap_put(&by_name, label, i);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct func *f = &funcs[i];
		uint32_t label = f->symbol != SFILE_NONE ? f->symbol : f->name;
		size_t base = clone_base_len(st->v[label]);
		if (!base)
			continue;
		f->flags |= SFILE_NODE_CLONE;
		char *parent = xstrndup(st->v[label], base);
		uint32_t pid = strtab_intern(st, parent);
		uint64_t pf;
		if (hmap_get(&by_name, pid, &pf) && pf != i)
			f->origin = (uint32_t)pf;
		free(parent);
	}
	/* Without DWARF, a .cold part joins its parent's ranges. */
	for (uint32_t i = ndwarf; i < n; i++) {
		struct func *f = &funcs[i];
		if (f->origin == NONE32 || !strstr(st->v[f->name], ".cold") ||
		    funcs[f->origin].scope != NONE32)
			continue;
		struct func *p = &funcs[f->origin];
		for (uint32_t r = 0; r < f->nranges; r++)
			add_func_range(p, f->ranges[r].lo, f->ranges[r].hi);
		p->nranges = normalise_spans(p->ranges, p->nranges);
		f->nranges = 0;
	}
	hmap_release(&by_name);
	/* Drop functions left without code. */
	uint32_t k = 0;
	uint32_t *renum = xmalloc((n ? n : 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++) {
		renum[i] = NONE32;
		if (funcs[i].nranges) {
			renum[i] = k;
			funcs[k++] = funcs[i];
		} else {
			free(funcs[i].ranges);
		}
	}
	for (uint32_t i = 0; i < k; i++)
		if (funcs[i].origin != NONE32)
			funcs[i].origin = renum[funcs[i].origin];
	free(renum);
	free(sym_func);
	free(own);
	*nfuncs = k;
	return funcs;
}

static int range_order(const void *a, const void *b)
{
	const struct sfile_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

int analyse_image(const struct image *img, unsigned nthreads, struct sfile *sf,
		  struct analyse_stats *stats)
{
	struct timespec t0, t1, c0, c1, c2, c3;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	memset(sf, 0, sizeof(*sf));
	memset(stats, 0, sizeof(*stats));
	struct dw_info dw;
	if (dw_read(img, nthreads, &dw) < 0) {
		/* Functions from the symbol table and loops from the machine code remain. */
		stats->dwarf_error = xstrdup(fth_errmsg());
		fth_error_clear();
		dw_release(&dw);
		strtab_init(&dw.strings);
	}
	struct strtab *st = &dw.strings;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	stats->dwarf_seconds = seconds_between(&t0, &t1);
	uint32_t nfuncs;
	struct func *funcs = collect_functions(img, &dw, st, &nfuncs);

	struct job job = { .img = img, .dw = &dw, .funcs = funcs, .nfuncs = nfuncs };
	job.decode = img->machine == EM_X86_64;
	hmap_init(&job.noreturn);
	job.results = xcalloc(nfuncs ? nfuncs : 1, sizeof(*job.results));
	/* The DWARF scopes of each function, as CSR lists in scope order. */
	job.scope_start = xcalloc((size_t)dw.nscopes + 1, sizeof(uint32_t));
	job.scope_list = xmalloc((dw.nscopes ? dw.nscopes : 1) * sizeof(uint32_t));
	job.block_start = xcalloc((size_t)dw.nscopes + 1, sizeof(uint32_t));
	job.block_list = xmalloc((dw.nblocks ? dw.nblocks : 1) * sizeof(uint32_t));
	for (uint32_t s = 0; s < dw.nscopes; s++)
		job.scope_start[dw.scopes[s].func + 1]++;
	for (uint32_t s = 0; s < dw.nscopes; s++)
		job.scope_start[s + 1] += job.scope_start[s];
	uint32_t *fill = xcalloc(dw.nscopes ? dw.nscopes : 1, sizeof(uint32_t));
	for (uint32_t s = 0; s < dw.nscopes; s++) {
		uint32_t fs = dw.scopes[s].func;
		job.scope_list[job.scope_start[fs] + fill[fs]++] = s;
	}
	for (uint32_t b = 0; b < dw.nblocks; b++)
		job.block_start[dw.scopes[dw.blocks[b].scope].func + 1]++;
	for (uint32_t s = 0; s < dw.nscopes; s++)
		job.block_start[s + 1] += job.block_start[s];
	memset(fill, 0, (dw.nscopes ? dw.nscopes : 1) * sizeof(uint32_t));
	for (uint32_t b = 0; b < dw.nblocks; b++) {
		uint32_t fs = dw.scopes[dw.blocks[b].scope].func;
		job.block_list[job.block_start[fs] + fill[fs]++] = b;
	}
	free(fill);

	find_noreturn(&job, nthreads);
	struct timespec t_noreturn, c_noreturn, t2;
	clock_gettime(CLOCK_MONOTONIC, &t_noreturn);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c_noreturn);
	stats->noreturn_seconds = seconds_between(&t1, &t_noreturn);
	run_workers(&job, nthreads);
	clock_gettime(CLOCK_MONOTONIC, &t2);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c2);
	stats->cfg_seconds = seconds_between(&t_noreturn, &t2);

	/* Assemble: nodes function by function, then one sorted range table. */
	uint32_t *first_node = xmalloc((nfuncs ? nfuncs : 1) * sizeof(uint32_t));
	uint64_t nnodes = 0, nranges = 0, nblocks = 0;
	for (uint32_t i = 0; i < nfuncs; i++) {
		first_node[i] = (uint32_t)nnodes;
		nnodes += job.results[i].nnodes;
		nranges += job.results[i].nranges;
		nblocks += job.results[i].nblocks;
		stats->loops += job.results[i].nloops;
		stats->irreducible += job.results[i].nirreducible;
		stats->unresolved_jumps += job.results[i].unresolved;
	}
	int rc = 0;
	if (nnodes >= UINT32_MAX) {
		rc = fth_error("%s: too many scopes (%llu)", img->path, (unsigned long long)nnodes);
		nnodes = nranges = nblocks = 0;
	}
	sf->nodes = xmalloc((nnodes ? nnodes : 1) * sizeof(*sf->nodes));
	sf->ranges = xmalloc((nranges ? nranges : 1) * sizeof(*sf->ranges));
	sf->blocks = xmalloc((nblocks ? nblocks : 1) * sizeof(*sf->blocks));
	for (uint32_t i = 0; i < nfuncs && rc == 0; i++) {
		struct fn_result *r = &job.results[i];
		uint32_t base = first_node[i];
		for (uint32_t n = 0; n < r->nnodes; n++) {
			struct sfile_node x = r->nodes[n];
			if (x.parent != SFILE_NONE)
				x.parent += base;
			if (x.kind == SFILE_FUNCTION && x.origin != SFILE_NONE)
				x.origin = first_node[x.origin];
			sf->nodes[sf->nnodes++] = x;
		}
		for (uint32_t k = 0; k < r->nranges; k++) {
			struct sfile_range x = r->ranges[k];
			x.node += base;
			sf->ranges[sf->nranges++] = x;
		}
		for (uint32_t k = 0; k < r->nblocks; k++) {
			struct sfile_range x = r->blocks[k];
			x.node += base;
			sf->blocks[sf->nblocks++] = x;
		}
	}
	for (uint32_t i = 0; i < nfuncs; i++) {
		free(job.results[i].nodes);
		free(job.results[i].ranges);
		free(job.results[i].blocks);
		free(funcs[i].ranges);
	}
	sort_array(sf->ranges, sf->nranges, sizeof(*sf->ranges), range_order);
	sort_array(sf->blocks, sf->nblocks, sizeof(*sf->blocks), range_order);
	/* Functions that share code (a cold part, a clone) may give a block twice: once kept. */
	uint64_t kept = 0;
	for (uint64_t k = 0; k < sf->nblocks; k++)
		if (!kept || sf->blocks[k].lo >= sf->blocks[kept - 1].hi)
			sf->blocks[kept++] = sf->blocks[k];
	sf->nblocks = kept;
	stats->functions = nfuncs;
	free(first_node);
	free(job.results);
	free(job.scope_start);
	free(job.scope_list);
	free(job.block_start);
	free(job.block_list);
	hmap_release(&job.noreturn);
	free(funcs);

	sf->path = xstrdup(img->path);
	if (dw.debug_path)
		sf->debug_path = xstrdup(dw.debug_path);
	if (img->build_id_len) {
		sf->build_id = xmalloc(img->build_id_len);
		memcpy(sf->build_id, img->build_id, img->build_id_len);
		sf->build_id_len = img->build_id_len;
	}
	sf->machine = img->machine;
	sf->text_bytes = img->text_bytes;
	sf->flags = (dw.found ? SFILE_MODULE_DWARF : 0) | (dw.nlines ? SFILE_MODULE_LINES : 0) |
		    (job.decode ? SFILE_MODULE_LOOPS : 0) |
		    (img->has_symtab ? 0 : SFILE_MODULE_STRIPPED);
	sf->lines = dw.lines;
	sf->nlines = dw.nlines;
	dw.lines = NULL;
	dw.nlines = 0;
	/* Strings in sorted order, so that the file does not depend on the thread count. */
	uint32_t *rank;
	strtab_sort(st, &rank);
#define RANK(x) ((x) == SFILE_NONE ? SFILE_NONE : rank[x])
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		sf->nodes[i].name = RANK(sf->nodes[i].name);
		sf->nodes[i].symbol = RANK(sf->nodes[i].symbol);
		sf->nodes[i].file = RANK(sf->nodes[i].file);
		sf->nodes[i].decl_file = RANK(sf->nodes[i].decl_file);
		sf->nodes[i].latch_file = RANK(sf->nodes[i].latch_file);
	}
	for (uint64_t i = 0; i < sf->nlines; i++)
		sf->lines[i].file = RANK(sf->lines[i].file);
#undef RANK
	free(rank);
	sf->strings = strtab_detach(st, &sf->nstrings);
	dw_release(&dw);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c3);
	stats->seconds = seconds_between(&t0, &t1);
	stats->dwarf_cpu = seconds_between(&c0, &c1);
	stats->noreturn_cpu = seconds_between(&c1, &c_noreturn);
	stats->cfg_cpu = seconds_between(&c_noreturn, &c2);
	stats->cpu_seconds = seconds_between(&c0, &c3);
	if (rc < 0) {
		sfile_release(sf);
		free(stats->dwarf_error);
		stats->dwarf_error = NULL;
	}
	return rc;
}
