/* SPDX-License-Identifier: MIT */
/*
 * cct.c: the per-thread calling context tree of cct.h (arena memory, one hash table whose
 * slots carry 32 bits of the key's hash, so that a probe reads a node only when they match).
 */
#include "compat.h"
#include "cct.h"
#include "hmap.h"
#include "mfile.h"

#include <string.h>

/* One page of slots, mapped ahead at a thread's first sample: room for 256 contexts before the
 * table doubles.  (Eight pages cost every thread, however short, 28 KB and 7 page faults.) */
#define INITIAL_SLOTS 512

#define TAG_MASK 0xffffffff00000000ull /* the hash bits kept in a slot, above the node + 1 */

static uint64_t *new_table(struct arena *a, uint32_t slots)
{
	return arena_alloc(a, (size_t)slots * sizeof(uint64_t), 64);
}

static struct cct_node *new_node(struct cct *t, uint32_t *id)
{
	uint32_t n = t->nnodes;
	uint32_t b = n >> CCT_BLOCK_SHIFT;
	if (b >= CCT_MAX_BLOCKS)
		return NULL;
	if (!t->blocks[b]) {
		t->blocks[b] = arena_alloc(t->arena, t->node_size * CCT_BLOCK_NODES, 64);
		if (!t->blocks[b])
			return NULL;
	}
	t->nnodes = n + 1;
	*id = n;
	return cct_node(t, n);
}

int cct_init(struct cct *t, struct arena *a, unsigned nmetrics)
{
	memset(t, 0, sizeof(*t));
	t->arena = a;
	t->nmetrics = nmetrics;
	t->node_size = (sizeof(struct cct_node) + nmetrics * sizeof(uint64_t) + 7) & ~(size_t)7;
	t->blocks = arena_alloc(a, CCT_MAX_BLOCKS * sizeof(uint8_t *), 64);
	t->table = new_table(a, INITIAL_SLOTS);
	if (!t->blocks || !t->table)
		return -1;
	t->table_mask = INITIAL_SLOTS - 1;
	/* What the first samples write: the slots (spread by hashing), the first block pointer
	 * and the first nodes. */
	arena_prefault(t->table, INITIAL_SLOTS * sizeof(uint64_t));
	arena_prefault(t->blocks, sizeof(*t->blocks));
	uint32_t root;
	struct cct_node *n = new_node(t, &root);
	if (!n)
		return -1;
	arena_prefault(n, 4096);
	n->parent = MFILE_NO_PARENT;
	n->module = MFILE_NO_MODULE;
	n->kind = MFILE_NODE_ROOT;
	return 0;
}

static inline uint64_t key_hash(uint32_t parent, uint8_t kind, uint32_t module, uint64_t offset)
{
	return hmap_mix(offset ^ ((uint64_t)parent << 24) ^ ((uint64_t)module << 48) ^
			 ((uint64_t)kind << 56) ^ parent);
}

/* Double the table when half full; the old one stays in the arena (never freed). */
static int grow(struct cct *t)
{
	uint32_t slots = (t->table_mask + 1) * 2;
	uint64_t *fresh = new_table(t->arena, slots);
	if (!fresh)
		return -1;
	for (uint32_t id = 1; id < t->nnodes; id++) {
		struct cct_node *n = cct_node(t, id);
		uint64_t h = key_hash(n->parent, n->kind, n->module, n->offset);
		uint32_t i = (uint32_t)h & (slots - 1);
		while (fresh[i])
			i = (i + 1) & (slots - 1);
		fresh[i] = (h & TAG_MASK) | (id + 1);
	}
	t->table = fresh;
	t->table_mask = slots - 1;
	return 0;
}

uint32_t cct_child(struct cct *t, uint32_t parent, uint8_t kind, uint32_t module, uint64_t offset)
{
	uint64_t h = key_hash(parent, kind, module, offset), tag = h & TAG_MASK;
	uint32_t i = (uint32_t)h & t->table_mask;
	for (;;) {
		uint64_t slot = t->table[i];
		if (!slot)
			break;
		if ((slot & TAG_MASK) == tag) {
			uint32_t id = (uint32_t)slot - 1;
			struct cct_node *n = cct_node(t, id);
			if (n->offset == offset && n->parent == parent && n->module == module &&
			    n->kind == kind)
				return id;
		}
		i = (i + 1) & t->table_mask;
	}
	if ((t->nnodes + 1) * 2 > t->table_mask + 1) {
		if (grow(t) < 0)
			return UINT32_MAX;
		return cct_child(t, parent, kind, module, offset);
	}
	uint32_t id;
	struct cct_node *n = new_node(t, &id);
	if (!n)
		return UINT32_MAX;
	n->parent = parent;
	n->kind = kind;
	n->module = module;
	n->offset = offset;
	t->table[i] = tag | (id + 1);
	return id;
}
