/* SPDX-License-Identifier: MIT */
/*
 * loops.c: the loop-nesting forest of a control-flow graph, after Havlak ("Nesting of
 * reducible and irreducible loops", 1997): number the nodes in depth-first preorder, then
 * visit them from the last to the first; a node with back-edge predecessors heads a loop whose
 * body is collected backwards through the union-find representatives of already collapsed
 * inner loops.  A body node reached from outside the header's DFS subtree makes the loop
 * irreducible: it is kept (with its number of entries), not dropped.  The DFS is iterative.
 */
#include "compat.h"
#include "cfg.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static uint32_t find(uint32_t *uf, uint32_t x)
{
	uint32_t root = x;
	while (uf[root] != root)
		root = uf[root];
	while (uf[x] != root) {
		uint32_t next = uf[x];
		uf[x] = root;
		x = next;
	}
	return root;
}

enum { NONHEADER, SELF, REDUCIBLE, IRREDUCIBLE };

int loops_find(const struct graph *g, struct loop_forest *f)
{
	memset(f, 0, sizeof(*f));
	uint32_t n = g->nnodes;
	f->innermost = xmalloc((n ? n : 1) * sizeof(uint32_t));
	f->is_back_source = xcalloc(n ? n : 1, sizeof(bool));
	for (uint32_t i = 0; i < n; i++)
		f->innermost[i] = NONE32;
	if (n == 0 || g->entry >= n)
		return 0;
	/* Predecessors (CSR). */
	uint32_t *pred_start = xcalloc((size_t)n + 1, sizeof(uint32_t));
	uint32_t nedges = g->succ_start[n];
	uint32_t *pred = xmalloc((nedges ? nedges : 1) * sizeof(uint32_t));
	for (uint32_t e = 0; e < nedges; e++)
		pred_start[g->succ[e] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		pred_start[i + 1] += pred_start[i];
	uint32_t *fill = xcalloc(n, sizeof(uint32_t));
	for (uint32_t v = 0; v < n; v++)
		for (uint32_t e = g->succ_start[v]; e < g->succ_start[v + 1]; e++) {
			uint32_t w = g->succ[e];
			pred[pred_start[w] + fill[w]++] = v;
		}
	/* Iterative DFS: preorder numbers NUM, node of each number, last descendant number. */
	uint32_t *num = xmalloc(n * sizeof(uint32_t)), *node = xmalloc(n * sizeof(uint32_t));
	uint32_t *last = xmalloc(n * sizeof(uint32_t)), *stack = xmalloc(n * sizeof(uint32_t));
	uint32_t *edge = xmalloc(n * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
		num[i] = NONE32;
	/*
	 * A DFS forest: the entry first, then code the entry does not reach (the targets of an
	 * unresolved jump table, say): nodes without predecessors first, then any left.
	 */
	uint32_t count = 0, next_root = 0;
	int root_pass = 0;
	for (uint32_t root = g->entry; root != NONE32;) {
		uint32_t depth = 0;
		num[root] = count;
		node[count++] = root;
		stack[depth] = root;
		edge[depth++] = g->succ_start[root];
		while (depth) {
			uint32_t v = stack[depth - 1];
			if (edge[depth - 1] < g->succ_start[v + 1]) {
				uint32_t w = g->succ[edge[depth - 1]++];
				if (num[w] == NONE32) {
					num[w] = count;
					node[count++] = w;
					stack[depth] = w;
					edge[depth++] = g->succ_start[w];
				}
			} else {
				last[num[v]] = count - 1;
				depth--;
			}
		}
		root = NONE32;
		while (root == NONE32 && root_pass < 2) {
			for (; next_root < n && root == NONE32; next_root++)
				if (num[next_root] == NONE32 &&
				    (root_pass == 1 || pred_start[next_root] == pred_start[next_root + 1]))
					root = next_root;
			if (root == NONE32) {
				root_pass++;
				next_root = 0;
			}
		}
	}
	/* Work on preorder numbers from here on. */
#define ANCESTOR(a, b) ((a) <= (b) && (b) <= last[a])
	uint32_t *uf = xmalloc(count * sizeof(uint32_t)), *header = xmalloc(count * sizeof(uint32_t));
	uint8_t *type = xcalloc(count, 1);
	uint32_t *entries = xcalloc(count, sizeof(uint32_t));
	bool *in_body = xcalloc(count, sizeof(bool));
	struct u32_vec *extra_preds = xcalloc(count, sizeof(*extra_preds)); /* Havlak's redirected edges */
	struct u32_vec body = { 0 }, work = { 0 };
	for (uint32_t i = 0; i < count; i++) {
		uf[i] = i;
		header[i] = NONE32;
	}
	for (uint32_t w = count; w-- > 0;) {
		uint32_t wn = node[w];
		body.n = work.n = 0;
		for (uint32_t e = pred_start[wn]; e < pred_start[wn + 1]; e++) {
			uint32_t v = num[pred[e]];
			if (v == NONE32 || !ANCESTOR(w, v))
				continue;
			f->is_back_source[node[v]] = true;
			if (v == w) {
				type[w] = SELF;
				continue;
			}
			uint32_t r = find(uf, v);
			if (!in_body[r] && r != w) {
				in_body[r] = true;
				u32_vec_push(&body, r);
				u32_vec_push(&work, r);
			}
		}
		if (body.n)
			type[w] = REDUCIBLE;
		while (work.n) {
			uint32_t x = work.v[--work.n];
			uint32_t xn = node[x];
			/* Non-back-edge predecessors of x, plus edges redirected to x earlier. */
			uint32_t e = pred_start[xn], end = pred_start[xn + 1];
			for (uint32_t k = 0; e < end || k < extra_preds[x].n;) {
				uint32_t y;
				if (e < end) {
					y = num[pred[e++]];
					if (y == NONE32 || ANCESTOR(x, y))
						continue;
				} else {
					y = extra_preds[x].v[k++];
				}
				uint32_t r = find(uf, y);
				if (!ANCESTOR(w, r)) {
					/* An entry from outside the DFS subtree of w. */
					type[w] = IRREDUCIBLE;
					entries[w]++;
					u32_vec_push(&extra_preds[w], r);
				} else if (!in_body[r] && r != w) {
					in_body[r] = true;
					u32_vec_push(&body, r);
					u32_vec_push(&work, r);
				}
			}
		}
		for (uint32_t i = 0; i < body.n; i++) {
			uint32_t x = body.v[i];
			header[x] = w;
			uf[x] = w;
			in_body[x] = false;
		}
	}
	/* Loops: one per header, numbered as found (inner loops first). */
	uint32_t *loop_of = xmalloc(count * sizeof(uint32_t)), cap = 0;
	for (uint32_t w = count; w-- > 0;) {
		loop_of[w] = NONE32;
		if (type[w] == NONHEADER)
			continue;
		ALLOC_GROW(f->loops, f->nloops + 1, cap);
		struct loop *l = &f->loops[f->nloops];
		l->header = node[w];
		l->parent = NONE32;
		l->entries = 1 + entries[w];
		l->preorder = l->nested = 0;
		loop_of[w] = f->nloops++;
	}
	for (uint32_t w = 0; w < count; w++) {
		uint32_t h = header[w];
		if (loop_of[w] != NONE32) {
			f->innermost[node[w]] = loop_of[w];
			if (h != NONE32)
				f->loops[loop_of[w]].parent = loop_of[h];
		} else if (h != NONE32) {
			f->innermost[node[w]] = loop_of[h];
		}
	}
#undef ANCESTOR
	/*
	 * A preorder of the forest, so that nesting is a range test: inner loops come first, so
	 * subtree sizes add up in index order and positions are handed out in reverse.
	 */
	for (uint32_t l = 0; l < f->nloops; l++) {
		f->loops[l].nested += 1;
		if (f->loops[l].parent != NONE32)
			f->loops[f->loops[l].parent].nested += f->loops[l].nested;
	}
	uint32_t *next_child = loop_of; /* reused: the next free position under each loop */
	uint32_t next_top = 0;
	for (uint32_t l = f->nloops; l-- > 0;) {
		struct loop *lp = &f->loops[l];
		if (lp->parent == NONE32) {
			lp->preorder = next_top;
			next_top += lp->nested;
		} else {
			lp->preorder = next_child[lp->parent];
			next_child[lp->parent] += lp->nested;
		}
		next_child[l] = lp->preorder + 1;
	}
	for (uint32_t i = 0; i < count; i++)
		free(extra_preds[i].v);
	free(extra_preds);
	free(body.v);
	free(work.v);
	free(loop_of);
	free(uf);
	free(header);
	free(type);
	free(entries);
	free(in_body);
	free(num);
	free(node);
	free(last);
	free(stack);
	free(edge);
	free(pred);
	free(pred_start);
	free(fill);
	return 0;
}

void loops_release(struct loop_forest *f)
{
	free(f->loops);
	free(f->innermost);
	free(f->is_back_source);
	memset(f, 0, sizeof(*f));
}
