/* SPDX-License-Identifier: MIT */
/*
 * cct.h: a thread's calling context tree, built in the signal handler.  Nodes live in the
 * thread's arena and are numbered in creation order, so a parent always has a smaller number
 * than its children (the order the measurement file wants).  Children are found through one
 * open-addressing hash table keyed by (parent, kind, module, offset).  No malloc, no locks: a
 * tree is touched only by its own thread (and by the writer once the thread has stopped).
 */
#ifndef FATHOM_MEASURE_CCT_H
#define FATHOM_MEASURE_CCT_H

#include "arena.h"

#define CCT_BLOCK_SHIFT 12
#define CCT_BLOCK_NODES (1u << CCT_BLOCK_SHIFT)
/* 33 million nodes: the most a thread's arena (1 GiB) holds, with one metric (32-byte nodes).
 * Its table of block pointers (64 KiB) and a thread's other first arrays then fit in the
 * arena's first block, mapped at the thread's first sample. */
#define CCT_MAX_BLOCKS (1u << 13)

struct cct_node {
	uint32_t parent;
	uint32_t module;
	uint64_t offset;
	uint8_t kind;
	uint64_t values[]; /* one per metric */
};

struct cct {
	struct arena *arena;	  /* borrowed: the thread's */
	unsigned nmetrics;
	size_t node_size;	  /* bytes of one node with its values */
	uint32_t nnodes;
	uint8_t **blocks;	  /* CCT_MAX_BLOCKS block pointers (arena) */
	uint64_t *table;	  /* hash slots: 32 bits of the key's hash, then node number + 1;
				     0 = empty (arena) */
	uint32_t table_mask;
	uint64_t nvalues;	  /* nonzero values, for the writer */
};

/* Set up an empty tree with its root (node 0).  Returns 0, or -1 when memory is exhausted. */
int cct_init(struct cct *t, struct arena *a, unsigned nmetrics);
static inline struct cct_node *cct_node(const struct cct *t, uint32_t id)
{
	return (struct cct_node *)(t->blocks[id >> CCT_BLOCK_SHIFT] +
				   (size_t)(id & (CCT_BLOCK_NODES - 1)) * t->node_size);
}
/* The child of PARENT with this key, created when absent; UINT32_MAX when out of memory. */
uint32_t cct_child(struct cct *t, uint32_t parent, uint8_t kind, uint32_t module, uint64_t offset);
/* Add DELTA to METRIC of node ID (keeping the count of nonzero values). */
static inline void cct_add(struct cct *t, uint32_t id, unsigned metric, uint64_t delta)
{
	struct cct_node *n = cct_node(t, id);
	if (!n->values[metric] && delta)
		t->nvalues++;
	n->values[metric] += delta;
}

#endif
