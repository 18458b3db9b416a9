/* SPDX-License-Identifier: MIT */
/* t-cct.c: measure's calling context tree (measure/cct.h): numbering, keys, values, and a hash
 * table that grows from its first page to hundreds of thousands of contexts. */
#include "compat.h"
#include "arena.h"
#include "cct.h"
#include "mfile.h"
#include "tap.h"

#include <stdbool.h>
#include <stdint.h>

#define NKEYS 200000u
#define CHAIN 300u /* the first keys form a chain; the rest fan out below its nodes */

static uint32_t ids[NKEYS];

static uint32_t parent_of(uint32_t i)
{
	if (i == 0)
		return 0;
	return i < CHAIN ? ids[i - 1] : ids[i % CHAIN];
}

static uint32_t key_child(struct cct *t, uint32_t i)
{
	return cct_child(t, parent_of(i), i % 5 ? MFILE_NODE_FRAME : MFILE_NODE_SAMPLE, i % 7,
			 0x1000 + (uint64_t)i * 16);
}

int main(void)
{
	struct arena a;
	arena_init(&a, 1u << 20, 0);
	struct cct t;
	is_int(cct_init(&t, &a, 2), 0, "a tree with two metrics");
	is_int(t.nnodes, 1, "the root alone");
	is_int(cct_node(&t, 0)->kind, MFILE_NODE_ROOT, "node 0 is the root");
	ok(t.table_mask + 1 <= 512, "its table starts within a page (%u slots)", t.table_mask + 1);

	bool ordered = true;
	for (uint32_t i = 0; i < NKEYS; i++) {
		ids[i] = key_child(&t, i);
		if (ids[i] == UINT32_MAX || ids[i] <= parent_of(i))
			ordered = false;
	}
	ok(ordered, "every child is numbered after its parent");
	is_int(t.nnodes, NKEYS + 1, "one node per distinct key");
	ok(t.table_mask + 1 >= 2 * t.nnodes, "the table grew to stay at most half full (%u slots)",
	   t.table_mask + 1);

	bool found = true;
	for (uint32_t i = 0; i < NKEYS && found; i++)
		found = key_child(&t, i) == ids[i];
	ok(found, "every key is found again after the table grew");
	is_int(t.nnodes, NKEYS + 1, "and nothing was added");

	const struct cct_node *n = cct_node(&t, ids[12]);
	ok(n->parent == ids[11] && n->module == 12 % 7 && n->offset == 0x1000 + 12 * 16 &&
		   n->kind == MFILE_NODE_FRAME,
	   "a node keeps its key");
	uint32_t base = cct_child(&t, 0, MFILE_NODE_FRAME, 1, 0x42);
	uint32_t other_kind = cct_child(&t, 0, MFILE_NODE_SAMPLE, 1, 0x42);
	uint32_t other_module = cct_child(&t, 0, MFILE_NODE_FRAME, 2, 0x42);
	uint32_t other_parent = cct_child(&t, ids[0], MFILE_NODE_FRAME, 1, 0x42);
	ok(base != other_kind && base != other_module && base != other_parent &&
		   other_kind != other_module && other_kind != other_parent &&
		   other_module != other_parent,
	   "kind, module and parent are each part of the key");

	cct_add(&t, ids[5], 1, 7);
	cct_add(&t, ids[5], 1, 3);
	cct_add(&t, ids[6], 0, 0);
	is_uint(cct_node(&t, ids[5])->values[1], 10, "values add up");
	is_uint(cct_node(&t, ids[5])->values[0], 0, "the other metric stays 0");
	is_uint(t.nvalues, 1, "one nonzero value is counted, a zero delta is not");
	arena_release(&a);
	return done_testing();
}
