/* SPDX-License-Identifier: MIT */
/*
 * model-topdown.c: the top-down tree, the database's calling context tree itself: its nodes
 * are the contexts (numbered breadth-first, so that children are consecutive), expansion is
 * kept in a set and the visible children of the contexts asked for are cached.
 */
#include "compat.h"
#include "error.h"
#include "model-internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static vm_node td_root(struct vm *vm, enum vm_view view)
{
	(void)vm;
	(void)view;
	return 0;
}

static bool td_valid(struct vm *vm, enum vm_view view, vm_node node)
{
	(void)view;
	return node < vm->db.ncontexts;
}

static uint32_t td_raw_children(struct vm *vm, enum vm_view view, vm_node node, uint32_t **out)
{
	(void)view;
	struct dbfile_context x;
	*out = NULL;
	if (node >= vm->db.ncontexts || !ctx_get(vm, node, &x) || !x.nchildren)
		return 0;
	uint32_t n = x.nchildren;
	*out = xmalloc(n * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
		(*out)[i] = x.first_child + i;
	return n;
}

static uint32_t td_children(struct vm *vm, enum vm_view view, vm_node node, const vm_node **out)
{
	struct dbfile_context x;
	if (node >= vm->db.ncontexts || !ctx_get(vm, node, &x) || !x.nchildren)
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
	uint32_t n = nav_visible(vm, view, node, true, &kids);
	e = &vm->vis_cache[at];
	e->kids = kids;
	e->n = n;
	e->gen = vm->gen;
	*out = kids;
	return n;
}

static vm_node td_parent(struct vm *vm, enum vm_view view, vm_node node)
{
	(void)view;
	struct dbfile_context x;
	return node && node < vm->db.ncontexts && ctx_get(vm, node, &x) ? x.parent : VM_NONE;
}

static void td_filter_subject(struct vm *vm, enum vm_view view, vm_node node, const char **name,
			      const char **module)
{
	(void)view;
	const struct dbfile *db = &vm->db;
	struct dbfile_context c;
	*name = "";
	*module = NULL;
	if (!ctx_get(vm, node, &c))
		return;
	if (c.kind == DBFILE_FUNCTION || c.kind == DBFILE_INLINE)
		*name = fn_name(vm, c.function);
	if (c.module != DBFILE_NONE && c.module < db->nmodules)
		*module = dbfile_str(db, db->modules[c.module].path);
}

/* Instances only have a function to sort by. */
static void td_sort_fields(struct vm *vm, enum vm_view view, vm_node node, uint32_t *function,
			   uint32_t *line)
{
	(void)view;
	struct dbfile_context x;
	ctx_get(vm, node, &x);
	*line = x.line;
	*function = is_instance(x.kind) ? x.function : DBFILE_NONE;
}

static bool td_is_expanded(struct vm *vm, enum vm_view view, vm_node node)
{
	(void)view;
	return hmap_get(&vm->td_expanded, node, NULL);
}

static void td_expand(struct vm *vm, enum vm_view view, vm_node node, bool expanded)
{
	(void)view;
	if (node >= vm->db.ncontexts)
		return;
	if (expanded)
		hmap_put(&vm->td_expanded, node, 1);
	else
		hmap_remove(&vm->td_expanded, node);
}

static void td_collapse_all(struct vm *vm, enum vm_view view)
{
	(void)view;
	hmap_release(&vm->td_expanded);
	hmap_init(&vm->td_expanded);
}

static double td_value(struct vm *vm, enum vm_view view, vm_node node, uint32_t metric,
		       bool inclusive, const struct vsrc *src)
{
	(void)view;
	return src_value(vm, src, node, metric, inclusive);
}

static uint32_t td_depth(struct vm *vm, vm_node node)
{
	vm_node root = vm_root(vm, VM_TOPDOWN);
	uint32_t d = 0;
	struct dbfile_context x;
	for (uint32_t c = node; c != root && c != 0 && c < vm->db.ncontexts && ctx_get(vm, c, &x);
	     c = x.parent)
		d++;
	return d;
}

static void td_info(struct vm *vm, enum vm_view view, vm_node node, struct vm_node_info *out)
{
	struct dbfile_context c;
	if (node >= vm->db.ncontexts || !ctx_get(vm, node, &c))
		return;
	context_info(vm, node, &c, c.kind == DBFILE_CALL ? callee_of(vm, &c) : DBFILE_NONE, out);
	out->depth = td_depth(vm, node);
	out->parent = node == vm_root(vm, view) ? VM_NONE : c.parent;
	out->expanded = hmap_get(&vm->td_expanded, node, NULL);
}

static void td_label(struct vm *vm, enum vm_view view, vm_node node, bool utf8, struct buf *out)
{
	struct vm_node_info in;
	struct dbfile_context x;
	if (node >= vm->db.ncontexts) {
		label_of_info(vm, view, node, utf8, out);
		return;
	}
	/* What the label needs, not the depth (a walk to the root). */
	if (!ctx_get(vm, node, &x))
		return;
	context_info(vm, node, &x, x.kind == DBFILE_CALL ? callee_of(vm, &x) : DBFILE_NONE, &in);
	info_label(&in, x.line, utf8, out);
}

static uint32_t td_context_of(struct vm *vm, enum vm_view view, vm_node node)
{
	(void)view;
	return node < vm->db.ncontexts ? node : DBFILE_NONE;
}

/* The body of instance INST: its loops, lines, call sites and inlined calls, not what they
 * call. */
static void collect_instance(struct vm *vm, uint32_t inst, struct source_scope *out)
{
	uint32_t *stack = NULL, sp = 0, cap = 0;
	ALLOC_GROW(stack, 1, cap);
	stack[sp++] = inst;
	struct dbfile_context x, k;
	while (sp) {
		uint32_t c = stack[--sp];
		if (!ctx_get(vm, c, &x))
			break;
		for (uint32_t i = 0; i < x.nchildren && ctx_get(vm, x.first_child + i, &k); i++) {
			if (k.kind == DBFILE_FUNCTION)
				continue;
			source_scope_add(out, x.first_child + i, &k, true);
			if (k.kind == DBFILE_LOOP) {
				ALLOC_GROW(stack, sp + 1, cap);
				stack[sp++] = x.first_child + i;
			}
		}
	}
	free(stack);
}

/* The scope of a context: the instance (function or inlined call) it is in. */
static int td_source_scope(struct vm *vm, enum vm_view view, vm_node node,
			   struct source_scope *out)
{
	(void)view;
	struct dbfile_context c, x;
	if (node >= vm->db.ncontexts)
		return fth_error("no such node");
	if (!ctx_get(vm, node, &c))
		return fth_error("%s", vm->error);
	uint32_t inst = instance_at_or_above(vm, node);
	if (inst == DBFILE_NONE || !ctx_get(vm, inst, &x))
		return vm->error ? fth_error("%s", vm->error)
				 : fth_error("%s has no source: it is not in a function",
					     node ? "this scope" : "the program root");
	out->function = x.function;
	if (c.kind == DBFILE_LINE || c.kind == DBFILE_LOOP || c.kind == DBFILE_CALL) {
		out->file = c.file;
		out->focus = c.line;
	}
	collect_instance(vm, inst, out);
	return 0;
}

const struct tree_ops topdown_ops = {
	.root = td_root,
	.valid = td_valid,
	.raw_children = td_raw_children,
	.children = td_children,
	.parent = td_parent,
	.filter_subject = td_filter_subject,
	.sort_fields = td_sort_fields,
	.is_expanded = td_is_expanded,
	.expand = td_expand,
	.collapse_all = td_collapse_all,
	.value = td_value,
	.info = td_info,
	.label = td_label,
	.context_of = td_context_of,
	.source_scope = td_source_scope,
	.search_budget = &search_walk_budget,
};
