/* SPDX-License-Identifier: MIT */
/*
 * model-nav.c: moving around the three trees: visible children (filter applied, sorted,
 * cached until the sort, filter, thread or flatten depth changes), expansion, the rows in
 * display order, hot path, zoom, flatten, search and filter.
 */
#include "compat.h"
#include "model-internal.h"
#include "xalloc.h"

#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void nav_invalidate(struct vm *vm)
{
	vm->gen++;
}

uint32_t raw_children(struct vm *vm, enum vm_view view, vm_node node, const uint32_t **out)
{
	if (view == VM_TOPDOWN) {
		if (node >= vm->db.ncontexts) {
			*out = NULL;
			return 0;
		}
		*out = vm->child_list + vm->child_start[node];
		return vm->child_start[node + 1] - vm->child_start[node];
	}
	struct vtree *t = tree_of(vm, view);
	tree_build_children(vm, view, node);
	if (node >= t->n) {
		*out = NULL;
		return 0;
	}
	*out = t->nodes[node].kids;
	return t->nodes[node].nkids;
}

vm_node node_parent(struct vm *vm, enum vm_view view, vm_node node)
{
	if (view == VM_TOPDOWN)
		return node && node < vm->db.ncontexts ? vm->db.contexts[node].parent : VM_NONE;
	struct vtree *t = tree_of(vm, view);
	return node < t->n ? t->nodes[node].parent : VM_NONE;
}

/* The name and module a filter looks at. */
static void filter_subject(struct vm *vm, enum vm_view view, vm_node node, const char **name,
			   const char **module)
{
	const struct dbfile *db = &vm->db;
	*name = "";
	*module = NULL;
	uint32_t f = DBFILE_NONE, m = DBFILE_NONE;
	if (view == VM_TOPDOWN) {
		const struct dbfile_context *c = &db->contexts[node];
		if (c->kind == DBFILE_FUNCTION || c->kind == DBFILE_INLINE)
			f = c->function;
		m = c->module;
	} else {
		const struct vnode *n = &tree_of(vm, view)->nodes[node];
		if (n->kind == VM_KIND_FUNCTION || n->kind == VM_KIND_CALLER ||
		    n->kind == VM_KIND_INLINE)
			f = n->function;
		else if (n->kind == VM_KIND_FILE && n->file != DBFILE_NONE)
			*name = dbfile_str(db, n->file);
		m = n->module;
	}
	if (f != DBFILE_NONE)
		*name = fn_name(vm, f);
	if (m != DBFILE_NONE && m < db->nmodules)
		*module = dbfile_str(db, db->modules[m].path);
}

bool node_hidden_by_filter(struct vm *vm, enum vm_view view, vm_node node)
{
	if (!vm->filter || node == tree_root_of_view(vm, view))
		return false;
	const char *name, *module;
	filter_subject(vm, view, node, &name, &module);
	if (name[0] && fnmatch(vm->filter, name, 0) == 0)
		return true;
	return module && (fnmatch(vm->filter, module, 0) == 0 ||
			  fnmatch(vm->filter, base_name(module), 0) == 0);
}

/* ---- visible children ---- */

struct ids {
	uint32_t *v;
	uint32_t n, cap;
};

static void ids_push(struct ids *s, uint32_t x)
{
	ALLOC_GROW(s->v, s->n + 1, s->cap);
	s->v[s->n++] = x;
}

static void collect_visible(struct vm *vm, enum vm_view view, vm_node node, bool build,
			    struct ids *out, uint32_t depth)
{
	const uint32_t *kids;
	uint32_t n;
	if (view == VM_BOTTOMUP && !build) {
		struct vtree *t = tree_of(vm, view);
		if (node >= t->n || !t->nodes[node].built)
			return;
	}
	n = raw_children(vm, view, node, &kids);
	/* Copy: building children may move the node arrays of bottom-up and flat. */
	uint32_t *copy = n ? xmalloc(n * sizeof(uint32_t)) : NULL;
	if (n)
		memcpy(copy, kids, n * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = copy[i];
		if (!node_hidden_by_filter(vm, view, k)) {
			ids_push(out, k);
		} else if (vm->filter_mode == VM_FILTER_SELF && depth < 4096) {
			collect_visible(vm, view, k, build, out, depth + 1);
		}
	}
	free(copy);
}

/* 16 bytes: the keys of many children are sorted on every change of the sort. */
struct sort_key {
	double v;
	uint32_t id;
	uint32_t name; /* by name: index in the names; else unused */
};

struct sort_ctx {
	struct vm *vm;
	enum vm_view view;
	bool descending;
	char **names; /* by name: the labels */
};

/* The name and line a node sorts by among equal values: its function's, its line. */
static const char *key_name(const struct sort_ctx *c, const struct sort_key *k, uint32_t *line)
{
	if (c->view == VM_TOPDOWN) {
		const struct dbfile_context *x = &c->vm->db.contexts[k->id];
		*line = x->line;
		if (c->names)
			return c->names[k->name];
		return is_instance(x->kind) ? fn_name(c->vm, x->function) : "";
	}
	const struct vnode *x = &tree_of(c->vm, c->view)->nodes[k->id];
	*line = x->line;
	if (c->names)
		return c->names[k->name];
	return x->function != DBFILE_NONE ? fn_name(c->vm, x->function) : "";
}

/* Value (NaN last), then name, line and id: a total order, so that sorting is deterministic. */
static int key_cmp(const struct sort_ctx *c, const struct sort_key *a, const struct sort_key *b)
{
	bool na = isnan(a->v), nb = isnan(b->v);
	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->v != b->v) {
		int d = a->v < b->v ? -1 : 1;
		return c->descending ? -d : d;
	}
	uint32_t la, lb;
	int d = strcmp(key_name(c, a, &la), key_name(c, b, &lb));
	if (d)
		return d;
	if (la != lb)
		return la < lb ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Merge sort of KEYS (N) with TMP (N) as room: no allocation, O(n log n) whatever the input. */
static void sort_keys(const struct sort_ctx *c, struct sort_key *keys, struct sort_key *tmp,
		      uint32_t n)
{
	enum { RUN = 16 };
	for (uint32_t lo = 0; lo < n; lo += RUN) {
		uint32_t hi = lo + RUN < n ? lo + RUN : n;
		for (uint32_t i = lo + 1; i < hi; i++) {
			struct sort_key k = keys[i];
			uint32_t j = i;
			for (; j > lo && key_cmp(c, &keys[j - 1], &k) > 0; j--)
				keys[j] = keys[j - 1];
			keys[j] = k;
		}
	}
	struct sort_key *from = keys, *to = tmp;
	for (uint32_t width = RUN; width < n; width *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * width) {
			uint32_t mid = lo + width < n ? lo + width : n;
			uint32_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			uint32_t i = lo, j = mid, o = lo;
			while (i < mid && j < hi) /* stable: the left run first among equals */
				to[o++] = key_cmp(c, &from[j], &from[i]) < 0 ? from[j++]
									     : from[i++];
			while (i < mid)
				to[o++] = from[i++];
			while (j < hi)
				to[o++] = from[j++];
		}
		struct sort_key *swap = from;
		from = to;
		to = swap;
	}
	if (from != keys)
		memcpy(keys, from, (size_t)n * sizeof(*keys));
}

static void sort_nodes(struct vm *vm, enum vm_view view, uint32_t *ids, uint32_t n)
{
	if (n < 2)
		return;
	if (vm->asort_keys < n) {
		vm->asort_keys = n;
		vm->sort_keys = xreallocarray(vm->sort_keys, 2 * (size_t)n,
					      sizeof(struct sort_key));
	}
	struct sort_key *keys = vm->sort_keys, *tmp = keys + n;
	struct sort_ctx c = { vm, view, vm->sort.descending && !vm->sort.by_name, NULL };
	if (vm->sort.by_name)
		c.names = xcalloc(n, sizeof(char *));
	for (uint32_t i = 0; i < n; i++) {
		struct sort_key *k = &keys[i];
		k->id = ids[i];
		k->name = i;
		if (vm->sort.by_name) {
			buf_reset(&vm->label);
			vm_node_label(vm, view, ids[i], true, &vm->label);
			c.names[i] = xstrndup((const char *)vm->label.data, vm->label.len);
			k->v = 0;
		} else {
			k->v = vm_value(vm, view, ids[i], vm->sort.metric, vm->sort.inclusive);
		}
	}
	sort_keys(&c, keys, tmp, n);
	/* By name, descending: the reverse of the name order. */
	bool reverse = vm->sort.by_name && vm->sort.descending;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = keys[reverse ? n - 1 - i : i].id;
	for (uint32_t i = 0; c.names && i < n; i++)
		free(c.names[i]);
	free(c.names);
}

/* Visible children of NODE, sorted, into a new array (flat root: the flattened level). */
static uint32_t compute_visible(struct vm *vm, enum vm_view view, vm_node node, bool build,
				uint32_t **out)
{
	struct ids s = { 0 };
	collect_visible(vm, view, node, build, &s, 0);
	if (view == VM_FLAT && vm->flatten > 0 && node == tree_root(vm, VM_FLAT)) {
		for (int level = 0; level < vm->flatten; level++) {
			struct ids next = { 0 };
			for (uint32_t i = 0; i < s.n; i++) {
				struct ids sub = { 0 };
				collect_visible(vm, view, s.v[i], true, &sub, 0);
				if (!sub.n)
					ids_push(&next, s.v[i]);
				for (uint32_t j = 0; j < sub.n; j++)
					ids_push(&next, sub.v[j]);
				free(sub.v);
			}
			free(s.v);
			s = next;
		}
	}
	sort_nodes(vm, view, s.v, s.n);
	*out = s.v;
	return s.n;
}

uint32_t vm_children(struct vm *vm, enum vm_view view, vm_node node, const vm_node **out)
{
	*out = NULL;
	if (view == VM_TOPDOWN) {
		if (node >= vm->db.ncontexts)
			return 0;
		if (vm->child_start[node + 1] == vm->child_start[node])
			return 0;
		uint64_t at;
		struct vis_entry *e;
		if (hmap_get(&vm->td_vis, node, &at)) {
			e = &vm->vis_cache[at];
			if (e->gen == vm->gen) {
				*out = e->kids;
				return e->n;
			}
			free(e->kids);
		} else {
			ALLOC_GROW(vm->vis_cache, vm->nvis_cache + 1, vm->avis_cache);
			at = vm->nvis_cache++;
			hmap_put(&vm->td_vis, node, at);
			e = &vm->vis_cache[at];
		}
		uint32_t *kids;
		uint32_t n = compute_visible(vm, view, node, true, &kids);
		e = &vm->vis_cache[at];
		e->kids = kids;
		e->n = n;
		e->gen = vm->gen;
		*out = kids;
		return n;
	}
	struct vtree *t = tree_of(vm, view);
	tree_root(vm, view);
	if (node >= t->n)
		return 0;
	if (t->nodes[node].vis_gen != vm->gen || (!t->nodes[node].vis && !t->nodes[node].built)) {
		uint32_t *kids;
		uint32_t n = compute_visible(vm, view, node, true, &kids);
		free(t->nodes[node].vis);
		t->nodes[node].vis = kids;
		t->nodes[node].nvis = n;
		t->nodes[node].vis_gen = vm->gen;
	}
	*out = t->nodes[node].vis;
	return t->nodes[node].nvis;
}

/* ---- sorting ---- */

void vm_set_sort(struct vm *vm, const struct vm_sort *sort)
{
	vm->sort = *sort;
	if (vm->sort.metric >= vm->nm)
		vm->sort.metric = 0;
	nav_invalidate(vm);
}

struct vm_sort vm_get_sort(const struct vm *vm)
{
	return vm->sort;
}

/* ---- expansion ---- */

static bool is_expanded(struct vm *vm, enum vm_view view, vm_node node)
{
	if (view == VM_TOPDOWN)
		return node < vm->db.ncontexts && (vm->td_expanded[node / 8] >> (node % 8) & 1);
	struct vtree *t = tree_of(vm, view);
	return node < t->n && t->nodes[node].expanded;
}

void vm_expand(struct vm *vm, enum vm_view view, vm_node node, bool expanded)
{
	if (view == VM_TOPDOWN) {
		if (node >= vm->db.ncontexts)
			return;
		if (expanded)
			vm->td_expanded[node / 8] |= (uint8_t)(1u << (node % 8));
		else
			vm->td_expanded[node / 8] &= (uint8_t)~(1u << (node % 8));
		return;
	}
	struct vtree *t = tree_of(vm, view);
	tree_root(vm, view);
	if (node < t->n)
		t->nodes[node].expanded = expanded;
}

/* Bottom-up caller chains can be long: expanding a subtree stops this deep. */
#define MAX_EXPAND_DEPTH 256

void vm_expand_subtree(struct vm *vm, enum vm_view view, vm_node node, bool expanded)
{
	struct frame {
		vm_node node;
		uint32_t depth;
	};
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0;
	ALLOC_GROW(stack, 1, cap);
	stack[sp++] = (struct frame){ node, 0 };
	while (sp) {
		struct frame f = stack[--sp];
		vm_expand(vm, view, f.node, expanded);
		if (!expanded && view == VM_BOTTOMUP) {
			struct vtree *t = tree_of(vm, view);
			if (f.node >= t->n || !t->nodes[f.node].built)
				continue;
		}
		if (f.depth >= MAX_EXPAND_DEPTH)
			continue;
		const uint32_t *kids;
		uint32_t n = raw_children(vm, view, f.node, &kids);
		for (uint32_t i = 0; i < n; i++) {
			ALLOC_GROW(stack, sp + 1, cap);
			stack[sp++] = (struct frame){ kids[i], f.depth + 1 };
		}
	}
	free(stack);
}

void vm_expand_all(struct vm *vm, enum vm_view view, bool expanded)
{
	if (!expanded) {
		if (view == VM_TOPDOWN) {
			memset(vm->td_expanded, 0, vm->db.ncontexts / 8 + 1);
		} else {
			struct vtree *t = tree_of(vm, view);
			for (uint32_t i = 0; i < t->n; i++)
				t->nodes[i].expanded = false;
		}
		return;
	}
	vm_expand_subtree(vm, view, vm_root(vm, view), true);
}

void vm_reveal(struct vm *vm, enum vm_view view, vm_node node)
{
	vm_node root = vm_root(vm, view);
	for (vm_node p = node_parent(vm, view, node); p != VM_NONE; p = node_parent(vm, view, p)) {
		vm_expand(vm, view, p, true);
		if (p == root)
			break;
	}
}

/* ---- rows ---- */

vm_node tree_root_of_view(struct vm *vm, enum vm_view view)
{
	return view == VM_TOPDOWN ? 0 : tree_root(vm, view);
}

vm_node vm_root(struct vm *vm, enum vm_view view)
{
	struct view_state *vs = &vm->vs[view];
	if (vs->nzoom)
		return vs->zoom[vs->nzoom - 1];
	return tree_root_of_view(vm, view);
}

uint32_t vm_rows(struct vm *vm, enum vm_view view, const vm_node **rows)
{
	struct view_state *vs = &vm->vs[view];
	struct frame {
		const vm_node *kids;
		uint32_t n, i;
	};
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0;
	vs->nrows = 0;
	vm_node root = vm_root(vm, view);
	ALLOC_GROW(vs->rows, 1, vs->arows);
	vs->row_depth = xreallocarray(vs->row_depth, vs->arows, sizeof(uint32_t));
	vs->rows[vs->nrows] = root;
	vs->row_depth[vs->nrows++] = 0;
	if (is_expanded(vm, view, root)) {
		ALLOC_GROW(stack, 1, cap);
		stack[sp].n = vm_children(vm, view, root, &stack[sp].kids);
		stack[sp++].i = 0;
	}
	while (sp) {
		struct frame *f = &stack[sp - 1];
		if (f->i == f->n) {
			sp--;
			continue;
		}
		vm_node k = f->kids[f->i++];
		if (vs->nrows == vs->arows) {
			ALLOC_GROW(vs->rows, vs->nrows + 1, vs->arows);
			vs->row_depth = xreallocarray(vs->row_depth, vs->arows, sizeof(uint32_t));
		}
		vs->rows[vs->nrows] = k;
		vs->row_depth[vs->nrows++] = sp;
		if (is_expanded(vm, view, k)) {
			const vm_node *kids;
			uint32_t n = vm_children(vm, view, k, &kids);
			if (n) {
				ALLOC_GROW(stack, sp + 1, cap);
				stack[sp++] = (struct frame){ kids, n, 0 };
			}
		}
	}
	free(stack);
	*rows = vs->rows;
	return vs->nrows;
}

const uint32_t *vm_row_depths(struct vm *vm, enum vm_view view)
{
	return vm->vs[view].row_depth;
}

/* ---- hot path ---- */

vm_node vm_hot_path(struct vm *vm, enum vm_view view, vm_node node, uint32_t metric,
		    double threshold)
{
	vm_node cur = node;
	for (uint32_t steps = 0; steps < 100000; steps++) {
		const vm_node *kids;
		uint32_t n = vm_children(vm, view, cur, &kids);
		double total = vm_value(vm, view, cur, metric, true);
		vm_node best = VM_NONE;
		double bv = -INFINITY;
		for (uint32_t i = 0; i < n; i++) {
			double v = vm_value(vm, view, kids[i], metric, true);
			if (!isnan(v) && v > bv) {
				bv = v;
				best = kids[i];
			}
		}
		if (best == VM_NONE || !(total > 0) || !(bv >= threshold * total) || !(bv > 0))
			break;
		vm_expand(vm, view, cur, true);
		cur = best;
	}
	return cur;
}

/* ---- zoom and flatten ---- */

void vm_zoom(struct vm *vm, enum vm_view view, vm_node node)
{
	struct view_state *vs = &vm->vs[view];
	if (node == VM_NONE || node == vm_root(vm, view))
		return;
	ALLOC_GROW(vs->zoom, vs->nzoom + 1, vs->azoom);
	vs->zoom[vs->nzoom++] = node;
	vm_expand(vm, view, node, true);
}

bool vm_unzoom(struct vm *vm, enum vm_view view)
{
	struct view_state *vs = &vm->vs[view];
	if (!vs->nzoom)
		return false;
	vs->nzoom--;
	return true;
}

int vm_flatten(struct vm *vm)
{
	vm_node root = tree_root(vm, VM_FLAT);
	const vm_node *kids;
	uint32_t n = vm_children(vm, VM_FLAT, root, &kids);
	bool deeper = false;
	for (uint32_t i = 0; i < n && !deeper; i++) {
		const uint32_t *sub;
		deeper = raw_children(vm, VM_FLAT, kids[i], &sub) > 0;
		n = vm_children(vm, VM_FLAT, root, &kids);
	}
	if (deeper) {
		vm->flatten++;
		nav_invalidate(vm);
	}
	return vm->flatten;
}

int vm_unflatten(struct vm *vm)
{
	if (vm->flatten > 0) {
		vm->flatten--;
		nav_invalidate(vm);
	}
	return vm->flatten;
}

/* ---- filter ---- */

void vm_set_filter(struct vm *vm, const char *pattern, enum vm_filter_mode mode)
{
	free(vm->filter);
	vm->filter = pattern && pattern[0] ? xstrdup(pattern) : NULL;
	vm->filter_mode = mode;
	nav_invalidate(vm);
}

/* ---- search ---- */

static bool matches(const char *label, const char *pattern, bool glob)
{
	if (glob)
		return fnmatch(pattern, label, FNM_CASEFOLD) == 0;
	return strcasestr(label, pattern) != NULL;
}

vm_node vm_search(struct vm *vm, enum vm_view view, vm_node from, const char *pattern,
		  bool forward)
{
	if (!pattern || !pattern[0])
		return VM_NONE;
	bool glob = strpbrk(pattern, "*?") != NULL;
	struct frame {
		uint32_t *kids;
		uint32_t n, i;
	};
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0;
	vm_node root = vm_root(vm, view);
	vm_node first = VM_NONE, last_before = VM_NONE, last = VM_NONE, found = VM_NONE;
	bool passed = from == VM_NONE;
	vm_node node = root;
	struct buf label = BUF_INIT;
	for (;;) {
		if (node == from) {
			passed = true;
		} else {
			buf_reset(&label);
			vm_node_label(vm, view, node, true, &label);
			buf_addch(&label, '\0');
			if (matches((const char *)label.data, pattern, glob)) {
				if (first == VM_NONE)
					first = node;
				if (passed && forward) {
					found = node;
					break;
				}
				if (!passed)
					last_before = node;
				last = node;
			}
		}
		uint32_t *kids;
		uint32_t n = compute_visible(vm, view, node, view != VM_BOTTOMUP, &kids);
		ALLOC_GROW(stack, sp + 1, cap);
		stack[sp++] = (struct frame){ kids, n, 0 };
		node = VM_NONE;
		while (sp) {
			struct frame *f = &stack[sp - 1];
			if (f->i < f->n) {
				node = f->kids[f->i++];
				break;
			}
			free(f->kids);
			sp--;
		}
		if (node == VM_NONE)
			break;
	}
	while (sp)
		free(stack[--sp].kids);
	free(stack);
	buf_release(&label);
	if (forward)
		return found != VM_NONE ? found : first;
	return last_before != VM_NONE ? last_before : last;
}
