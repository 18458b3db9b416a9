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

static model_node td_root(struct model *model, enum model_view view)
{
	(void)model;
	(void)view;
	return 0;
}

static bool td_valid(struct model *model, enum model_view view, model_node node)
{
	(void)view;
	return node < model->db.ncontexts;
}

static uint32_t td_raw_children(struct model *model, enum model_view view, model_node node,
				uint32_t **out)
{
	(void)view;
	struct dbfile_context x;
	*out = NULL;
	if (node >= model->db.ncontexts || !ctx_get(model, node, &x) || !x.nchildren)
		return 0;
	uint32_t n = x.nchildren;
	*out = xmalloc(n * sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
		(*out)[i] = x.first_child + i;
	return n;
}

static uint32_t td_children(struct model *model, enum model_view view, model_node node,
			    const model_node **out)
{
	struct dbfile_context x;
	if (node >= model->db.ncontexts || !ctx_get(model, node, &x) || !x.nchildren)
		return 0;
	uint64_t at;
	struct vis_entry *e;
	if (hmap_get(&model->td_vis, node, &at)) {
		e = &model->vis_cache[at];
		if (e->gen == model->gen) {
			*out = e->kids;
			return e->n;
		}
		free(e->kids);
	} else {
		ALLOC_GROW(model->vis_cache, model->nvis_cache + 1, model->avis_cache);
		at = model->nvis_cache++;
		hmap_put(&model->td_vis, node, at);
		e = &model->vis_cache[at];
	}
	uint32_t *kids;
	uint32_t n = nav_visible(model, view, node, true, &kids);
	e = &model->vis_cache[at];
	e->kids = kids;
	e->n = n;
	e->gen = model->gen;
	*out = kids;
	return n;
}

static model_node td_parent(struct model *model, enum model_view view, model_node node)
{
	(void)view;
	struct dbfile_context x;
	return node && node < model->db.ncontexts && ctx_get(model, node, &x) ? x.parent
									      : MODEL_NONE;
}

static void td_filter_subject(struct model *model, enum model_view view, model_node node,
			      const char **name, const char **module)
{
	(void)view;
	const struct dbfile *db = &model->db;
	struct dbfile_context c;
	*name = "";
	*module = NULL;
	if (!ctx_get(model, node, &c))
		return;
	if (c.kind == DBFILE_FUNCTION || c.kind == DBFILE_INLINE)
		*name = fn_name(model, c.function);
	if (c.module != DBFILE_NONE && c.module < db->nmodules)
		*module = dbfile_str(db, db->modules[c.module].path);
}

/* Instances only have a function to sort by. */
static void td_sort_fields(struct model *model, enum model_view view, model_node node,
			   uint32_t *function, uint32_t *line)
{
	(void)view;
	struct dbfile_context x;
	ctx_get(model, node, &x);
	*line = x.line;
	*function = is_instance(x.kind) ? x.function : DBFILE_NONE;
}

static bool td_is_expanded(struct model *model, enum model_view view, model_node node)
{
	(void)view;
	return hmap_get(&model->td_expanded, node, NULL);
}

static void td_expand(struct model *model, enum model_view view, model_node node, bool expanded)
{
	(void)view;
	if (node >= model->db.ncontexts)
		return;
	if (expanded)
		hmap_put(&model->td_expanded, node, 1);
	else
		hmap_remove(&model->td_expanded, node);
}

static void td_collapse_all(struct model *model, enum model_view view)
{
	(void)view;
	hmap_release(&model->td_expanded);
	hmap_init(&model->td_expanded);
}

static double td_value(struct model *model, enum model_view view, model_node node, uint32_t metric,
		       bool inclusive, const struct vsrc *src)
{
	(void)view;
	return src_value(model, src, node, metric, inclusive);
}

static uint32_t td_depth(struct model *model, model_node node)
{
	model_node root = model_root(model, MODEL_TOPDOWN);
	uint32_t d = 0;
	struct dbfile_context x;
	for (uint32_t c = node;
	     c != root && c != 0 && c < model->db.ncontexts && ctx_get(model, c, &x); c = x.parent)
		d++;
	return d;
}

static void td_info(struct model *model, enum model_view view, model_node node,
		    struct model_node_info *out)
{
	struct dbfile_context c;
	if (node >= model->db.ncontexts || !ctx_get(model, node, &c))
		return;
	context_info(model, node, &c, c.kind == DBFILE_CALL ? callee_of(model, &c) : DBFILE_NONE,
		     out);
	out->depth = td_depth(model, node);
	out->parent = node == model_root(model, view) ? MODEL_NONE : c.parent;
	out->expanded = hmap_get(&model->td_expanded, node, NULL);
}

static void td_label(struct model *model, enum model_view view, model_node node, bool utf8,
		     struct buf *out)
{
	struct model_node_info in;
	struct dbfile_context x;
	if (node >= model->db.ncontexts) {
		label_of_info(model, view, node, utf8, out);
		return;
	}
	/* What the label needs, not the depth (a walk to the root). */
	if (!ctx_get(model, node, &x))
		return;
	context_info(model, node, &x, x.kind == DBFILE_CALL ? callee_of(model, &x) : DBFILE_NONE,
		     &in);
	info_label(&in, x.line, utf8, out);
}

static uint32_t td_context_of(struct model *model, enum model_view view, model_node node)
{
	(void)view;
	return node < model->db.ncontexts ? node : DBFILE_NONE;
}

/* The body of instance INST: its loops, lines, call sites and inlined calls, not what they
 * call. */
static void collect_instance(struct model *model, uint32_t inst, struct source_scope *out)
{
	uint32_t *stack = NULL, sp = 0, cap = 0;
	ALLOC_GROW(stack, 1, cap);
	stack[sp++] = inst;
	struct dbfile_context x, k;
	while (sp) {
		uint32_t c = stack[--sp];
		if (!ctx_get(model, c, &x))
			break;
		for (uint32_t i = 0; i < x.nchildren && ctx_get(model, x.first_child + i, &k);
		     i++) {
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
static int td_source_scope(struct model *model, enum model_view view, model_node node,
			   struct source_scope *out)
{
	(void)view;
	struct dbfile_context c, x;
	if (node >= model->db.ncontexts)
		return fth_error("no such node");
	if (!ctx_get(model, node, &c))
		return fth_error("%s", model->error);
	uint32_t inst = instance_at_or_above(model, node);
	if (inst == DBFILE_NONE || !ctx_get(model, inst, &x))
		return model->error ? fth_error("%s", model->error)
				 : fth_error("%s has no source: it is not in a function",
					     node ? "this scope" : "the program root");
	out->function = x.function;
	if (c.kind == DBFILE_LINE || c.kind == DBFILE_LOOP || c.kind == DBFILE_CALL) {
		out->file = c.file;
		out->focus = c.line;
	}
	collect_instance(model, inst, out);
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
