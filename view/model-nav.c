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

void nav_invalidate(struct model *model)
{
	model->gen++;
}

static bool filter_matches(const char *pattern, const char *name, const char *module)
{
	if (name[0] && fnmatch(pattern, name, 0) == 0)
		return true;
	return module && (fnmatch(pattern, module, 0) == 0 ||
			  fnmatch(pattern, base_name(module), 0) == 0);
}

const struct tree_ops *ops_of(enum model_view view)
{
	static const struct tree_ops *const table[MODEL_NVIEWS] = {
		[MODEL_TOPDOWN] = &topdown_ops,
		[MODEL_BOTTOMUP] = &bottomup_ops,
		[MODEL_FLAT] = &flat_ops,
	};
	return table[view];
}

bool model_view_flattens(enum model_view view)
{
	return ops_of(view)->skipped_levels != NULL;
}

/* How the filters hide NODE: -1 not at all, else the mode (MODEL_FILTER_SUBTREE wins). */
static int node_filtered(struct model *model, enum model_view view, model_node node)
{
	int how = -1;
	if (!model->nfilters || node == ops_of(view)->root(model, view))
		return -1;
	const char *name, *module;
	ops_of(view)->filter_subject(model, view, node, &name, &module);
	for (uint32_t i = 0; i < model->nfilters && how != MODEL_FILTER_SUBTREE; i++)
		if (filter_matches(model->filters[i].pattern, name, module))
			how = (int)model->filters[i].mode;
	return how;
}

/* ---- visible children ---- */

/*
 * With a thread or process selected, a scope that it has no value in (every measured metric
 * zero, inclusive, so its whole subtree too): left out, as the selection never ran there.
 */
static bool empty_in_selection(struct model *model, enum model_view view, model_node node)
{
	if (model->cur == &model->sum)
		return false;
	for (uint32_t m = 0; m < model->nm; m++)
		if (model->db.metrics[m].kind == DBFILE_METRIC_RAW &&
		    model_value(model, view, node, m, true) != 0)
			return false;
	return true;
}

/* model_set_min_change: whether NODE changed enough, or something below it did. */
static bool changed_enough(struct model *model, enum model_view view, model_node node,
			   uint32_t depth)
{
	double min = model->min_change;
	if (fabs(model_value(model, view, node, model->min_metric, true)) >= min ||
	    fabs(model_value(model, view, node, model->min_metric, false)) >= min ||
	    depth > 64)
		return true;
	struct hmap *seen = &model->min_seen[view];
	if (model->min_vgen != model->vgen) {
		for (int v = 0; v < MODEL_NVIEWS; v++) {
			hmap_release(&model->min_seen[v]);
			hmap_init(&model->min_seen[v]);
		}
		model->min_vgen = model->vgen;
	}
	uint64_t known;
	if (hmap_get(seen, node, &known))
		return known == 1;
	uint32_t *kids, n = ops_of(view)->raw_children(model, view, node, &kids);
	bool shown = false;
	for (uint32_t i = 0; i < n && !shown; i++)
		shown = changed_enough(model, view, kids[i], depth + 1);
	free(kids);
	hmap_put(seen, node, shown ? 1 : 2);
	return shown;
}

void model_set_min_change(struct model *model, uint32_t metric, double min)
{
	model->min_metric = metric < model->nm ? metric : 0;
	model->min_change = min > 0 ? min : 0;
	model->min_vgen = model->vgen - 1;
	nav_invalidate(model);
}

static void collect_visible(struct model *model, enum model_view view, model_node node, bool build,
			    struct u32_vec *out, uint32_t depth)
{
	const struct tree_ops *ops = ops_of(view);
	uint32_t *copy, n;
	if (!build && ops->unbuilt && ops->unbuilt(model, view, node))
		return;
	n = ops->raw_children(model, view, node, &copy);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = copy[i];
		if (empty_in_selection(model, view, k) ||
		    (model->min_change > 0 && !changed_enough(model, view, k, 0)))
			continue;
		int how = node_filtered(model, view, k);
		if (how < 0) {
			u32_vec_push(out, k);
		} else if (how == MODEL_FILTER_SELF && depth < 4096) {
			collect_visible(model, view, k, build, out, depth + 1);
		}
	}
	free(copy);
}

/* 24 bytes: the keys of many children are sorted on every change of the sort. */
struct sort_key {
	double v;
	uint32_t id;
	uint32_t name; /* by name: index in the names; else the function, or NONE */
	uint32_t line;
	uint32_t pad;
};

struct sort_ctx {
	struct model *model;
	enum model_view view;
	bool descending;
	char **names; /* by name: the labels */
};

/* The name a node sorts by among equal values: its label, or its function's name. */
static const char *sort_key_name(const struct sort_ctx *c, const struct sort_key *k)
{
	if (c->names)
		return c->names[k->name];
	return k->name != DBFILE_NONE ? fn_name(c->model, k->name) : "";
}

/* Value (NaN last), then name, line and id: a total order, so that sorting is deterministic. */
static int sort_key_cmp(const struct sort_ctx *c, const struct sort_key *a,
			const struct sort_key *b)
{
	bool na = isnan(a->v), nb = isnan(b->v);
	if (na != nb)
		return na ? 1 : -1;
	if (!na && a->v != b->v) {
		int d = a->v < b->v ? -1 : 1;
		return c->descending ? -d : d;
	}
	int d = strcmp(sort_key_name(c, a), sort_key_name(c, b));
	if (d)
		return d;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
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
			for (; j > lo && sort_key_cmp(c, &keys[j - 1], &k) > 0; j--)
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
				to[o++] = sort_key_cmp(c, &from[j], &from[i]) < 0 ? from[j++]
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

static void sort_nodes(struct model *model, enum model_view view, uint32_t *ids, uint32_t n)
{
	if (n < 2)
		return;
	if (model->asort_keys < n) {
		model->asort_keys = n;
		model->sort_keys = xreallocarray(model->sort_keys, 2 * (size_t)n,
						 sizeof(struct sort_key));
	}
	struct sort_key *keys = model->sort_keys, *tmp = keys + n;
	struct sort_ctx c = { model, view, model->sort.descending && !model->sort.by_name, NULL };
	if (model->sort.by_name)
		c.names = xcalloc(n, sizeof(char *));
	for (uint32_t i = 0; i < n; i++) {
		struct sort_key *k = &keys[i];
		k->id = ids[i];
		ops_of(view)->sort_fields(model, view, ids[i], &k->name, &k->line);
		k->pad = 0;
		if (model->sort.by_name) {
			k->name = i;
			buf_reset(&model->label);
			model_node_label(model, view, ids[i], true, &model->label);
			c.names[i] = xstrndup((const char *)model->label.data, model->label.len);
			k->v = 0;
		} else {
			k->v = model_value(model, view, ids[i], model->sort.metric,
					   model->sort.inclusive);
			if (model->sort.by_magnitude)
				k->v = fabs(k->v);
		}
	}
	sort_keys(&c, keys, tmp, n);
	/* By name, descending: the reverse of the name order. */
	bool reverse = model->sort.by_name && model->sort.descending;
	for (uint32_t i = 0; i < n; i++)
		ids[i] = keys[reverse ? n - 1 - i : i].id;
	for (uint32_t i = 0; c.names && i < n; i++)
		free(c.names[i]);
	free(c.names);
}

uint32_t nav_visible(struct model *model, enum model_view view, model_node node, bool build,
		     uint32_t **out)
{
	const struct tree_ops *ops = ops_of(view);
	struct u32_vec s = { 0 };
	collect_visible(model, view, node, build, &s, 0);
	int levels = ops->skipped_levels ? ops->skipped_levels(model, view, node) : 0;
	if (levels > 0) {
		for (int level = 0; level < levels; level++) {
			struct u32_vec next = { 0 };
			for (uint32_t i = 0; i < s.n; i++) {
				struct u32_vec sub = { 0 };
				collect_visible(model, view, s.v[i], true, &sub, 0);
				if (!sub.n)
					u32_vec_push(&next, s.v[i]);
				for (uint32_t j = 0; j < sub.n; j++)
					u32_vec_push(&next, sub.v[j]);
				free(sub.v);
			}
			free(s.v);
			s = next;
		}
	}
	sort_nodes(model, view, s.v, s.n);
	*out = s.v;
	return s.n;
}

uint32_t model_children(struct model *model, enum model_view view, model_node node,
			const model_node **out)
{
	*out = NULL;
	return ops_of(view)->children(model, view, node, out);
}

uint32_t model_children_copy(struct model *model, enum model_view view, model_node node,
			     model_node **out)
{
	*out = NULL;
	if (!ops_of(view)->valid(model, view, node))
		return 0;
	return nav_visible(model, view, node, true, out);
}

void model_forget(struct model *model, enum model_view view, model_node node)
{
	if (ops_of(view)->forget)
		ops_of(view)->forget(model, view, node);
}

/* ---- sorting ---- */

void model_set_sort(struct model *model, const struct model_sort *sort)
{
	model->sort = *sort;
	if (model->sort.metric >= model->nm)
		model->sort.metric = 0;
	nav_invalidate(model);
}

struct model_sort model_get_sort(const struct model *model)
{
	return model->sort;
}

/* ---- expansion ---- */

void model_expand(struct model *model, enum model_view view, model_node node, bool expanded)
{
	ops_of(view)->expand(model, view, node, expanded);
}

/* Bottom-up caller chains can be long: expanding a subtree stops this deep. */
#define MAX_EXPAND_DEPTH 256

void model_expand_subtree(struct model *model, enum model_view view, model_node node, bool expanded)
{
	struct frame {
		model_node node;
		uint32_t depth;
	};
	const struct tree_ops *ops = ops_of(view);
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0;
	ALLOC_GROW(stack, 1, cap);
	stack[sp++] = (struct frame){ node, 0 };
	while (sp) {
		struct frame f = stack[--sp];
		model_expand(model, view, f.node, expanded);
		if (!expanded && ops->unbuilt && ops->unbuilt(model, view, f.node))
			continue;
		if (f.depth >= MAX_EXPAND_DEPTH)
			continue;
		uint32_t *kids;
		uint32_t n = ops->raw_children(model, view, f.node, &kids);
		for (uint32_t i = 0; i < n; i++) {
			ALLOC_GROW(stack, sp + 1, cap);
			stack[sp++] = (struct frame){ kids[i], f.depth + 1 };
		}
		free(kids);
	}
	free(stack);
}

void model_expand_all(struct model *model, enum model_view view, bool expanded)
{
	if (!expanded) {
		ops_of(view)->collapse_all(model, view);
		return;
	}
	model_expand_subtree(model, view, model_root(model, view), true);
}

void model_reveal(struct model *model, enum model_view view, model_node node)
{
	model_node root = model_root(model, view);
	model_node (*parent)(struct model *, enum model_view, model_node) = ops_of(view)->parent;
	for (model_node p = parent(model, view, node); p != MODEL_NONE;
	     p = parent(model, view, p)) {
		model_expand(model, view, p, true);
		if (p == root)
			break;
	}
}

/* ---- rows ---- */

model_node model_root(struct model *model, enum model_view view)
{
	struct view_state *vs = &model->vs[view];
	if (vs->nzoom)
		return vs->zoom[vs->nzoom - 1];
	return ops_of(view)->root(model, view);
}

uint32_t model_rows(struct model *model, enum model_view view, const model_node **rows)
{
	struct view_state *vs = &model->vs[view];
	struct frame {
		const model_node *kids;
		uint32_t n, i;
	};
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0;
	vs->nrows = 0;
	model_node root = model_root(model, view);
	ALLOC_GROW(vs->rows, 1, vs->arows);
	vs->row_depth = xreallocarray(vs->row_depth, vs->arows, sizeof(uint32_t));
	vs->rows[vs->nrows] = root;
	vs->row_depth[vs->nrows++] = 0;
	if (ops_of(view)->is_expanded(model, view, root)) {
		ALLOC_GROW(stack, 1, cap);
		stack[sp].n = model_children(model, view, root, &stack[sp].kids);
		stack[sp++].i = 0;
	}
	while (sp) {
		struct frame *f = &stack[sp - 1];
		if (f->i == f->n) {
			sp--;
			continue;
		}
		model_node k = f->kids[f->i++];
		if (vs->nrows == vs->arows) {
			ALLOC_GROW(vs->rows, vs->nrows + 1, vs->arows);
			vs->row_depth = xreallocarray(vs->row_depth, vs->arows, sizeof(uint32_t));
		}
		vs->rows[vs->nrows] = k;
		vs->row_depth[vs->nrows++] = sp;
		if (ops_of(view)->is_expanded(model, view, k)) {
			const model_node *kids;
			uint32_t n = model_children(model, view, k, &kids);
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

const uint32_t *model_row_depths(struct model *model, enum model_view view)
{
	return model->vs[view].row_depth;
}

/* ---- hot path ---- */

model_node model_hot_path(struct model *model, enum model_view view, model_node node,
			  uint32_t metric, double threshold)
{
	model_node cur = node;
	for (uint32_t steps = 0; steps < 100000; steps++) {
		const model_node *kids;
		uint32_t n = model_children(model, view, cur, &kids);
		/* A change (B - A) can be negative: the path follows what moved the most in the
		 * direction of the scope's own change. */
		double total = model_value(model, view, cur, metric, true);
		double sign = total < 0 ? -1 : 1;
		total *= sign;
		model_node best = MODEL_NONE;
		double bv = -INFINITY;
		for (uint32_t i = 0; i < n; i++) {
			double v = sign * model_value(model, view, kids[i], metric, true);
			if (!isnan(v) && v > bv) {
				bv = v;
				best = kids[i];
			}
		}
		if (best == MODEL_NONE || !(total > 0) || !(bv >= threshold * total) || !(bv > 0))
			break;
		model_expand(model, view, cur, true);
		cur = best;
	}
	return cur;
}

/* ---- zoom ---- */

void model_zoom(struct model *model, enum model_view view, model_node node)
{
	struct view_state *vs = &model->vs[view];
	if (node == MODEL_NONE || node == model_root(model, view))
		return;
	ALLOC_GROW(vs->zoom, vs->nzoom + 1, vs->azoom);
	vs->zoom[vs->nzoom++] = node;
	model_expand(model, view, node, true);
}

bool model_unzoom(struct model *model, enum model_view view)
{
	struct view_state *vs = &model->vs[view];
	if (!vs->nzoom)
		return false;
	vs->nzoom--;
	return true;
}

/* ---- filter ---- */

void model_set_filter(struct model *model, const char *pattern, enum model_filter_mode mode)
{
	for (uint32_t i = 0; i < model->nfilters; i++)
		free(model->filters[i].pattern);
	model->nfilters = 0;
	model_add_filter(model, pattern, mode);
	nav_invalidate(model);
}

void model_add_filter(struct model *model, const char *pattern, enum model_filter_mode mode)
{
	if (!pattern || !pattern[0])
		return;
	model->filters =
		xreallocarray(model->filters, model->nfilters + 1, sizeof(*model->filters));
	model->filters[model->nfilters++] = (struct model_filter){ xstrdup(pattern), mode };
	nav_invalidate(model);
}

/* ---- search ---- */

static bool label_matches(const char *label, const char *pattern, bool glob)
{
	if (glob)
		return fnmatch(pattern, label, FNM_CASEFOLD) == 0;
	return strcasestr(label, pattern) != NULL;
}

/* Top-down: visited nodes after which a search streams the contexts instead (see model_search). */
uint32_t search_walk_budget = 2000;
/* Top-down: matches up to which the streamed search prunes the walk to their ancestors. */
#define SEARCH_MAX_MATCHES 65536

enum { KEEP_MATCH = 1, KEEP_ABOVE = 2 };

struct search {
	struct model *model;
	enum model_view view;
	const char *pattern;
	bool glob, forward;
	model_node from;
	struct hmap *keep;    /* pruned walk: context -> KEEP_*; NULL: every node, labels tested */
	uint32_t budget;      /* nodes the walk may visit; 0: no limit */
	model_node first, last_before, last, found;
	bool passed;
	struct buf label;
};

static bool node_matches(struct search *s, model_node node)
{
	if (s->keep) {
		uint64_t k;
		return hmap_get(s->keep, node, &k) && (k & KEEP_MATCH);
	}
	buf_reset(&s->label);
	model_node_label(s->model, s->view, node, true, &s->label);
	buf_addch(&s->label, '\0');
	return label_matches((const char *)s->label.data, s->pattern, s->glob);
}

/* The visible children of NODE that the walk enters (pruned: those kept) into *KIDS. */
static uint32_t walk_children(struct search *s, model_node node, uint32_t **kids)
{
	uint64_t k = KEEP_ABOVE;
	*kids = NULL;
	if (s->keep && !(hmap_get(s->keep, node, &k) && (k & KEEP_ABOVE)))
		return 0;
	uint32_t n = nav_visible(s->model, s->view, node, false, kids), m = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!s->keep || hmap_get(s->keep, (*kids)[i], NULL))
			(*kids)[m++] = (*kids)[i];
	return m;
}

/*
 * Pre-order over the visible tree from the view's root, children in the current order: the
 * first match after FROM (forward), or the last before it, and the first and last overall.
 * Returns false when the budget ran out before the answer was known.
 */
static bool search_walk(struct search *s)
{
	struct frame {
		uint32_t *kids;
		uint32_t n, i;
	};
	struct frame *stack = NULL;
	uint32_t sp = 0, cap = 0, visited = 0;
	bool done = true;
	model_node node = model_root(s->model, s->view);
	for (;;) {
		if (s->budget && ++visited > s->budget) {
			done = false;
			break;
		}
		if (node == s->from) {
			s->passed = true;
		} else if (node_matches(s, node)) {
			if (s->first == MODEL_NONE)
				s->first = node;
			if (s->passed && s->forward) {
				s->found = node;
				break;
			}
			if (!s->passed)
				s->last_before = node;
			s->last = node;
		}
		uint32_t *kids;
		uint32_t n = walk_children(s, node, &kids);
		ALLOC_GROW(stack, sp + 1, cap);
		stack[sp++] = (struct frame){ kids, n, 0 };
		node = MODEL_NONE;
		while (sp) {
			struct frame *f = &stack[sp - 1];
			if (f->i < f->n) {
				node = f->kids[f->i++];
				break;
			}
			free(f->kids);
			sp--;
		}
		if (node == MODEL_NONE || s->model->error)
			break;
	}
	while (sp)
		free(stack[--sp].kids);
	free(stack);
	return done;
}

/*
 * Mark the contexts of FRONTIER (N, owned) and all their ancestors KEEP_ABOVE, a level at a
 * time in ascending order, so that each level reads its blocks in order and once.
 */
static void keep_ancestors(struct model *model, struct hmap *keep, uint32_t *frontier, uint32_t n)
{
	struct dbfile_context x;
	while (n && !model->error) {
		uint32_t *next = NULL, nn = 0, an = 0;
		qsort(frontier, n, sizeof(uint32_t), model_cmp_u32);
		for (uint32_t i = 0; i < n; i++) {
			if (i && frontier[i] == frontier[i - 1])
				continue;
			bool inserted;
			uint64_t *k = hmap_upsert(keep, frontier[i], KEEP_ABOVE, &inserted);
			if (!inserted && (*k & KEEP_ABOVE))
				continue; /* its ancestors are marked already */
			*k |= KEEP_ABOVE;
			if (!ctx_get(model, frontier[i], &x))
				break;
			if (x.parent != DBFILE_NONE) {
				ALLOC_GROW(next, nn + 1, an);
				next[nn++] = x.parent;
			}
		}
		free(frontier);
		frontier = next;
		n = nn;
	}
	free(frontier);
}

struct stream {
	struct model *model;
	const char *pattern;
	bool glob;
	uint32_t nmatches, amatches;
	uint32_t *matches, *parents;
	struct buf label;
};

static void stream_test(struct stream *st, uint32_t ctx, const struct dbfile_context *x,
			uint32_t callee)
{
	struct model_node_info in;
	context_info(st->model, ctx, x, callee, &in);
	buf_reset(&st->label);
	info_label(&in, x->line, true, &st->label);
	buf_addch(&st->label, '\0');
	if (!label_matches((const char *)st->label.data, st->pattern, st->glob))
		return;
	if (st->nmatches == st->amatches) {
		ALLOC_GROW(st->matches, st->nmatches + 1, st->amatches);
		st->parents = xreallocarray(st->parents, st->amatches, sizeof(uint32_t));
	}
	st->parents[st->nmatches] = x->parent;
	st->matches[st->nmatches++] = ctx;
}

/*
 * Every context whose label matches, in one pass in context order (the reader reads each block
 * once).  A call site's label names its callee, its first FUNCTION child: children follow
 * their parents and are consecutive, so the call site is tested when its children go by,
 * the parents read in order too.  Returns false when there are more than SEARCH_MAX_MATCHES.
 */
static bool search_stream(struct stream *st)
{
	struct model *model = st->model;
	struct dbfile_context x, call;
	uint32_t parent = DBFILE_NONE, call_id = DBFILE_NONE;
	for (uint32_t c = 0; c < model->db.ncontexts && !model->error; c++) {
		if (!ctx_get(model, c, &x))
			break;
		if (c && x.parent != parent) {
			/* The previous parent's children are done. */
			if (call_id != DBFILE_NONE)
				stream_test(st, call_id, &call, DBFILE_NONE);
			parent = x.parent;
			call_id = DBFILE_NONE;
			if (ctx_get(model, parent, &call) && call.kind == DBFILE_CALL)
				call_id = parent;
		}
		if (call_id != DBFILE_NONE && x.kind == DBFILE_FUNCTION) {
			stream_test(st, call_id, &call, x.function);
			call_id = DBFILE_NONE;
		}
		if (x.kind != DBFILE_CALL || !x.nchildren)
			stream_test(st, c, &x, DBFILE_NONE);
		if (st->nmatches > SEARCH_MAX_MATCHES)
			return false;
	}
	if (call_id != DBFILE_NONE)
		stream_test(st, call_id, &call, DBFILE_NONE);
	return st->nmatches <= SEARCH_MAX_MATCHES;
}

model_node model_search(struct model *model, enum model_view view, model_node from,
			const char *pattern, bool forward)
{
	if (!pattern || !pattern[0])
		return MODEL_NONE;
	struct search s = {
		.model = model,
		.view = view,
		.pattern = pattern,
		.forward = forward,
		.from = from,
		.glob = strpbrk(pattern, "*?") != NULL,
		.passed = from == MODEL_NONE,
		.first = MODEL_NONE,
		.last_before = MODEL_NONE,
		.last = MODEL_NONE,
		.found = MODEL_NONE,
		.label = BUF_INIT,
	};
	/*
	 * Top-down, a match is usually near: the walk labels nodes as it goes, for a while.  Past
	 * that, the contexts are streamed in order once to find the matches, and the walk only
	 * enters their ancestors (and FROM's), so that a search of the whole tree reads each
	 * block once instead of following the tree across blocks.
	 */
	if (ops_of(view)->search_budget)
		s.budget = *ops_of(view)->search_budget;
	bool done = search_walk(&s);
	if (!done) {
		struct stream st = { model, pattern, s.glob, 0, 0, NULL, NULL, BUF_INIT };
		struct hmap keep = HMAP_INIT;
		bool pruned = search_stream(&st);
		if (pruned) {
			/* The matches, and above them their parents' and FROM's ancestors. */
			uint32_t n = 0, *frontier = xmalloc(((size_t)st.nmatches + 1) *
							    sizeof(uint32_t));
			for (uint32_t i = 0; i < st.nmatches; i++) {
				bool inserted;
				*hmap_upsert(&keep, st.matches[i], 0, &inserted) |= KEEP_MATCH;
				if (st.parents[i] != DBFILE_NONE)
					frontier[n++] = st.parents[i];
			}
			if (from != MODEL_NONE && from < model->db.ncontexts)
				frontier[n++] = from;
			keep_ancestors(model, &keep, frontier, n);
		}
		/* Many matches: they are dense, the plain walk meets them soon. */
		s.keep = pruned ? &keep : NULL;
		s.budget = 0;
		s.first = s.last_before = s.last = s.found = MODEL_NONE;
		s.passed = from == MODEL_NONE;
		search_walk(&s);
		hmap_release(&keep);
		free(st.matches);
		free(st.parents);
		buf_release(&st.label);
	}
	buf_release(&s.label);
	if (model->error)
		return MODEL_NONE;
	if (forward)
		return s.found != MODEL_NONE ? s.found : s.first;
	return s.last_before != MODEL_NONE ? s.last_before : s.last;
}
