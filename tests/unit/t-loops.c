/* SPDX-License-Identifier: MIT */
/*
 * t-loops.c: Havlak's loop-nesting forest on hand-made graphs: nested, sibling and self
 * loops, an irreducible region with two entries, unreachable nodes, a deep chain that a
 * recursive DFS would not survive, and a deep nest; loop_within agrees with the parent links.
 */
#include "compat.h"
#include "cfg.h"
#include "xalloc.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

/* Build a graph from an edge list "a>b a>c ..." over N nodes. */
static void make_graph(struct graph *g, uint32_t n, const uint32_t (*edges)[2], uint32_t nedges)
{
	g->nnodes = n;
	g->entry = 0;
	g->succ_start = xcalloc(n + 1, sizeof(uint32_t));
	g->succ = xmalloc((nedges ? nedges : 1) * sizeof(uint32_t));
	for (uint32_t e = 0; e < nedges; e++)
		g->succ_start[edges[e][0] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		g->succ_start[i + 1] += g->succ_start[i];
	uint32_t *fill = xcalloc(n, sizeof(uint32_t));
	for (uint32_t e = 0; e < nedges; e++) {
		uint32_t a = edges[e][0];
		g->succ[g->succ_start[a] + fill[a]++] = edges[e][1];
	}
	free(fill);
}

static void free_graph(struct graph *g)
{
	free(g->succ_start);
	free(g->succ);
}

/* The loop headed by node H, or NONE32. */
static uint32_t loop_headed_by(const struct loop_forest *f, uint32_t h)
{
	for (uint32_t l = 0; l < f->nloops; l++)
		if (f->loops[l].header == h)
			return l;
	return NONE32;
}

/* Whether loop_within(F, a, b) is "b is a or an ancestor of a" for every pair of loops. */
static bool nesting_agrees(const struct loop_forest *f)
{
	for (uint32_t a = 0; a < f->nloops; a++)
		for (uint32_t b = 0; b < f->nloops; b++) {
			bool up = false;
			for (uint32_t l = a; l != NONE32 && !up; l = f->loops[l].parent)
				up = l == b;
			if (loop_within(f, a, b) != up)
				return false;
		}
	return true;
}

static void test_nested_and_siblings(void)
{
	/* 0 -> 1 (outer header) -> 2 (inner header) -> 3 -> 2 ; 3 -> 4 -> 1 ; 1 -> 5 -> 6 <-> 6 ;
	 * 5 -> 7 -> 8 -> 7 (sibling of the self loop) ; 8 -> 9 (exit). */
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 2, 3 }, { 3, 2 }, { 3, 4 },
					 { 4, 1 }, { 1, 5 }, { 5, 6 }, { 6, 6 }, { 6, 7 },
					 { 7, 8 }, { 8, 7 }, { 8, 9 } };
	struct graph g;
	struct loop_forest f;
	make_graph(&g, 10, e, ARRAY_SIZE(e));
	ok(loops_find(&g, &f) == 0, "loops found");
	is_uint(f.nloops, 4, "four loops: outer, inner, self, sibling");
	uint32_t outer = loop_headed_by(&f, 1), inner = loop_headed_by(&f, 2);
	uint32_t self = loop_headed_by(&f, 6), sib = loop_headed_by(&f, 7);
	ok(outer != NONE32 && inner != NONE32 && self != NONE32 && sib != NONE32, "headers 1 2 6 7");
	is_uint(f.loops[inner].parent, outer, "inner loop nests in the outer loop");
	is_uint(f.loops[outer].parent, NONE32, "outer loop is a root");
	is_uint(f.loops[self].parent, NONE32, "self loop is a root");
	is_uint(f.loops[sib].parent, NONE32, "sibling loop is a root");
	is_uint(f.innermost[3], inner, "node 3 is in the inner loop");
	is_uint(f.innermost[4], outer, "node 4 is in the outer loop only");
	is_uint(f.innermost[0], NONE32, "entry is in no loop");
	is_uint(f.innermost[9], NONE32, "exit is in no loop");
	is_uint(f.innermost[8], sib, "node 8 is in the sibling loop");
	ok(f.is_back_source[3] && f.is_back_source[4] && f.is_back_source[6] && f.is_back_source[8],
	   "back-edge sources marked");
	ok(!f.is_back_source[2] && !f.is_back_source[5], "others are not");
	is_uint(f.loops[outer].entries + f.loops[inner].entries, 2, "reducible: one entry each");
	ok(nesting_agrees(&f), "loop_within follows the parent links");
	ok(loop_within(&f, inner, outer) && !loop_within(&f, outer, inner) &&
	   !loop_within(&f, self, sib) && loop_within(&f, sib, sib), "nesting tests");
	loops_release(&f);
	free_graph(&g);
}

static void test_irreducible(void)
{
	/* 0 -> 1, 0 -> 2, 1 <-> 2: a cycle entered at both nodes. */
	static const uint32_t e[][2] = { { 0, 1 }, { 0, 2 }, { 1, 2 }, { 2, 1 }, { 2, 3 } };
	struct graph g;
	struct loop_forest f;
	make_graph(&g, 4, e, ARRAY_SIZE(e));
	loops_find(&g, &f);
	is_uint(f.nloops, 1, "one loop");
	ok(f.nloops == 1 && f.loops[0].entries == 2, "irreducible: two entries");
	ok(f.innermost[1] == 0 && f.innermost[2] == 0, "both nodes in it");
	is_uint(f.innermost[3], NONE32, "exit outside");
	loops_release(&f);
	free_graph(&g);
}

static void test_unreachable_and_deep(void)
{
	/* Node 1 is not reached from the entry and loops on itself; 0 -> 2 -> ... a chain of
	 * 200000 nodes with a back edge to 2. */
	const uint32_t n = 200000;
	uint32_t (*e)[2] = xmalloc((n + 2) * sizeof(*e));
	uint32_t ne = 0;
	e[ne][0] = 1, e[ne][1] = 1, ne++;
	e[ne][0] = 0, e[ne][1] = 2, ne++;
	for (uint32_t i = 2; i + 1 < n; i++)
		e[ne][0] = i, e[ne][1] = i + 1, ne++;
	e[ne][0] = n - 1, e[ne][1] = 2, ne++;
	struct graph g;
	struct loop_forest f;
	make_graph(&g, n, (const uint32_t(*)[2])e, ne);
	loops_find(&g, &f);
	is_uint(f.nloops, 2, "deep chain: its loop, and the self loop the entry does not reach");
	uint32_t chain = loop_headed_by(&f, 2), self = loop_headed_by(&f, 1);
	ok(chain != NONE32 && self != NONE32, "headers 2 and 1");
	is_uint(f.innermost[1], self, "the unreached node is in its own loop");
	is_uint(f.innermost[n - 1], chain, "last node in the chain's loop");
	is_uint(f.innermost[0], NONE32, "entry in no loop");
	ok(nesting_agrees(&f), "loop_within: two roots");
	loops_release(&f);
	free_graph(&g);
	free(e);
}

static void test_deep_nest(void)
{
	/* 0 -> 1 -> ... -> K, and K back to every node 1..K: K loops, each inside the one before
	 * (a Rust state machine's nest is this deep); then 0 -> K+1 -> K+2 -> K+1 beside them. */
	enum { K = 300 };
	uint32_t(*e)[2] = xmalloc((2 * K + 4) * sizeof(*e));
	uint32_t ne = 0;
	for (uint32_t i = 0; i < K; i++)
		e[ne][0] = i, e[ne][1] = i + 1, ne++;
	for (uint32_t i = 1; i <= K; i++)
		e[ne][0] = K, e[ne][1] = i, ne++;
	e[ne][0] = 0, e[ne][1] = K + 1, ne++;
	e[ne][0] = K + 1, e[ne][1] = K + 2, ne++;
	e[ne][0] = K + 2, e[ne][1] = K + 1, ne++;
	struct graph g;
	struct loop_forest f;
	make_graph(&g, K + 3, (const uint32_t(*)[2])e, ne);
	loops_find(&g, &f);
	is_uint(f.nloops, K + 1, "deep nest: K nested loops and one beside them");
	uint32_t top = loop_headed_by(&f, 1), bottom = loop_headed_by(&f, K);
	uint32_t beside = loop_headed_by(&f, K + 1);
	uint32_t depth = 0;
	for (uint32_t l = bottom; l != NONE32; l = f.loops[l].parent)
		depth++;
	is_uint(depth, K, "the innermost loop is K deep");
	ok(loop_within(&f, bottom, top) && !loop_within(&f, top, bottom), "inner within outer");
	ok(!loop_within(&f, bottom, beside) && !loop_within(&f, beside, top), "siblings apart");
	ok(nesting_agrees(&f), "loop_within follows the parent links at every depth");
	loops_release(&f);
	free_graph(&g);
	free(e);
}

static void test_unreached_region(void)
{
	/* 0 -> 1 -> 2 (exit); 3 -> 4 -> 5 -> 4: a region without predecessors (the target of an
	 * unresolved jump table) still yields its loop, reducible, with 3 outside it. */
	static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 3, 4 }, { 4, 5 }, { 5, 4 } };
	struct graph g;
	struct loop_forest f;
	make_graph(&g, 6, e, ARRAY_SIZE(e));
	loops_find(&g, &f);
	is_uint(f.nloops, 1, "one loop in the unreached region");
	ok(f.nloops == 1 && f.loops[0].header == 4 && f.loops[0].entries == 1,
	   "headed by 4, reducible");
	is_uint(f.innermost[3], NONE32, "its entry is outside");
	loops_release(&f);
	free_graph(&g);
}

static void test_empty(void)
{
	struct graph g = { 0 };
	struct loop_forest f;
	uint32_t start = 0;
	g.succ_start = &start;
	ok(loops_find(&g, &f) == 0 && f.nloops == 0, "empty graph: no loops");
	loops_release(&f);
}

int main(void)
{
	test_nested_and_siblings();
	test_irreducible();
	test_unreachable_and_deep();
	test_unreached_region();
	test_deep_nest();
	test_empty();
	return done_testing();
}
