/* SPDX-License-Identifier: MIT */
/*
 * model-tree.c: the bottom-up and flat trees, built lazily over the calling context tree, and
 * their values (doc/formats.md 8.4.9 and 8.6).  What they need over all contexts the database
 * holds: the contexts of each function, each instance's outermost instance and flags (a call
 * path counts once however deep the recursion), the (module, file) groups and the profiles of
 * functions, groups and modules, for the sums over threads and per thread.
 *
 * Bottom-up: the roots are the functions; below a node, its callers: each node keeps its
 * instances as (tip, context) pairs, the tip being the outermost instance of the root function
 * whose inclusive value is charged, the context the caller function's instance from which the
 * next caller is found.  Flat: module > file > function > loops > lines, call sites and inlined
 * calls, the static structure of each function merged over all its contexts.
 */
#include "compat.h"
#include "error.h"
#include "model-internal.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The module slot of group G: its module, or nmodules for none (the profiles' last row). */
static uint32_t group_module(const struct model *model, uint32_t g)
{
	uint32_t m = g < model->db.ngroups ? model->db.groups[g].module : DBFILE_NONE;
	return m == DBFILE_NONE || m >= model->db.nmodules ? model->db.nmodules : m;
}

/* ---- aggregates: functions, groups, modules ---- */

static void release_aggregates(struct aggregates *a)
{
	if (a->owned)
		dbfile_flats_release(&a->own_fn, &a->own_grp, &a->own_mod);
	memset(a, 0, sizeof(*a));
}

/* ACC += ADD, row by row (metrics ascending in both); FIRST: ACC is empty, ADD moves in. */
static void flat_add(struct dbfile_flat *acc, struct dbfile_flat *add, bool first)
{
	if (first) {
		*acc = *add;
		memset(add, 0, sizeof(*add));
		return;
	}
	uint32_t nrows = FTH_MAX(acc->nrows, add->nrows);
	struct dbfile_flat out = { .nrows = nrows };
	out.start = xcalloc((size_t)nrows + 1, sizeof(*out.start));
	size_t cap = acc->nvalues + add->nvalues;
	out.metric = xcalloc(cap ? cap : 1, sizeof(*out.metric));
	out.incl = xcalloc(cap ? cap : 1, sizeof(*out.incl));
	out.excl = xcalloc(cap ? cap : 1, sizeof(*out.excl));
	uint64_t n = 0;
	for (uint32_t r = 0; r < nrows; r++) {
		uint32_t i = r < acc->nrows ? acc->start[r] : 0, ie = r < acc->nrows ? acc->start[r + 1] : 0;
		uint32_t j = r < add->nrows ? add->start[r] : 0, je = r < add->nrows ? add->start[r + 1] : 0;
		while (i < ie || j < je) {
			bool take_i = j >= je || (i < ie && acc->metric[i] <= add->metric[j]);
			bool take_j = i >= ie || (j < je && add->metric[j] <= acc->metric[i]);
			out.metric[n] = take_i ? acc->metric[i] : add->metric[j];
			out.incl[n] = (take_i ? acc->incl[i] : 0) + (take_j ? add->incl[j] : 0);
			out.excl[n] = (take_i ? acc->excl[i] : 0) + (take_j ? add->excl[j] : 0);
			n++;
			i += take_i;
			j += take_j;
		}
		out.start[r + 1] = (uint32_t)n;
	}
	out.nvalues = n;
	dbfile_flat_release(acc);
	dbfile_flat_release(add);
	*acc = out;
}

/*
 * The profiles of SRC into A: the database's for the sums over threads, read from the
 * database for a thread (-1 when that fails).
 */
static int load_aggregates(struct model *model, const struct vsrc *src, struct aggregates *a)
{
	memset(a, 0, sizeof(*a));
	if (src->nset) {
		for (uint32_t i = 0; i < src->nset; i++) {
			struct dbfile_flat fn, grp, mod;
			if (dbfile_thread_flats(&model->db, src->set[i], &fn, &grp, &mod) < 0) {
				dbfile_flats_release(&fn, &grp, &mod);
				release_aggregates(a);
				return -1;
			}
			flat_add(&a->own_fn, &fn, i == 0);
			flat_add(&a->own_grp, &grp, i == 0);
			flat_add(&a->own_mod, &mod, i == 0);
			a->owned = true;
		}
		a->fn = &a->own_fn;
		a->grp = &a->own_grp;
		a->mod = &a->own_mod;
	} else if (src->thread >= 0) {
		if (model->error)
			return fth_error("%s", model->error);
		if (dbfile_thread_flats(&model->db, (uint32_t)src->thread, &a->own_fn, &a->own_grp,
					&a->own_mod) < 0) {
			dbfile_flats_release(&a->own_fn, &a->own_grp, &a->own_mod);
			return -1;
		}
		a->owned = true;
		a->fn = &a->own_fn;
		a->grp = &a->own_grp;
		a->mod = &a->own_mod;
	} else {
		a->fn = &model->db.flat;
		a->grp = &model->db.group_flat;
		a->mod = &model->db.module_flat;
	}
	a->ready = true;
	return 0;
}

void tree_release_aggregates(struct model *model)
{
	release_aggregates(&model->agg);
	model->agg_gen = 0;
}

int tree_load_aggregates(struct model *model, const struct vsrc *src)
{
	release_aggregates(&model->agg);
	if (load_aggregates(model, src, &model->agg) < 0)
		return -1;
	model->agg_gen = model->vgen;
	return 0;
}

/* The aggregates of the current values (an empty set after a reader error). */
static const struct aggregates *current_aggregates(struct model *model)
{
	if (model->agg_gen != model->vgen || !model->agg.ready) {
		release_aggregates(&model->agg);
		if (load_aggregates(model, model->cur, &model->agg) < 0)
			model_fail(model);
		model->agg_gen = model->vgen;
	}
	return &model->agg;
}

/* Row R of profile P (2 per metric) into OUT, which holds zeros. */
static void profile_row(const struct model *model, const struct dbfile_flat *p, uint32_t r,
			double *out)
{
	if (!p || r >= p->nrows)
		return;
	for (uint32_t j = p->start[r]; j < p->start[r + 1]; j++) {
		if (p->metric[j] >= model->nm)
			continue;
		out[2 * p->metric[j]] = p->incl[j];
		out[2 * p->metric[j] + 1] = p->excl[j];
	}
}

static double profile_value(const struct dbfile_flat *p, uint32_t r, uint32_t metric,
			    bool inclusive)
{
	if (!p || r >= p->nrows)
		return 0;
	for (uint32_t j = p->start[r]; j < p->start[r + 1]; j++)
		if (p->metric[j] == metric)
			return inclusive ? p->incl[j] : p->excl[j];
	return 0;
}

/* Function, file and module nodes: their values are aggregates. */
static bool is_grouped(uint8_t kind)
{
	return kind == MODEL_KIND_FUNCTION || kind == MODEL_KIND_MODULE || kind == MODEL_KIND_FILE;
}

/* The value of a function, file or module node N from the aggregates A. */
static double aggregate_value(const struct aggregates *a, const struct vnode *n, uint32_t metric,
			      bool inclusive)
{
	if (n->kind == MODEL_KIND_FILE)
		return profile_value(a->grp, n->group, metric, inclusive);
	if (n->kind == MODEL_KIND_MODULE)
		return profile_value(a->mod, n->group, metric, inclusive);
	return profile_value(a->fn, n->function, metric, inclusive);
}

/* ---- nodes ---- */

struct vtree *tree_of(struct model *model, enum model_view view)
{
	return view == MODEL_BOTTOMUP ? &model->bu : &model->flat;
}

static uint32_t new_node(struct vtree *t, uint8_t kind, uint32_t parent)
{
	ALLOC_GROW(t->nodes, t->n + 1, t->cap);
	uint32_t id = t->n++;
	struct vnode *n = &t->nodes[id];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->parent = parent;
	n->depth = parent == MODEL_NONE ? 0 : t->nodes[parent].depth + 1;
	n->root = MODEL_NONE;
	n->function = n->module = n->file = n->group = DBFILE_NONE;
	if (parent != MODEL_NONE) {
		struct vnode *p = &t->nodes[parent];
		ALLOC_GROW(p->kids, p->nkids + 1, p->akids);
		p->kids[p->nkids++] = id;
	}
	return id;
}

/* Room for N more nodes, all children of PARENT. */
static void tree_reserve(struct vtree *t, uint32_t parent, uint32_t n)
{
	if (t->cap - t->n < n) {
		t->cap = t->n + n;
		t->nodes = xreallocarray(t->nodes, t->cap, sizeof(*t->nodes));
	}
	struct vnode *p = &t->nodes[parent];
	if (p->akids - p->nkids < n) {
		p->akids = p->nkids + n;
		p->kids = xreallocarray(p->kids, p->akids, sizeof(uint32_t));
	}
}

static uint32_t tree_root(struct model *model, enum model_view view)
{
	struct vtree *t = tree_of(model, view);
	if (t->root == MODEL_NONE) {
		t->root = new_node(t, MODEL_KIND_ROOT, MODEL_NONE);
	}
	return t->root;
}

static void set_function(struct model *model, struct vnode *n, uint32_t f)
{
	n->function = f;
	n->module = f < model->db.nfunctions ? model->db.functions[f].module : DBFILE_NONE;
}

static void add_inst(struct vnode *n, uint32_t a, uint32_t b, uint32_t *cap)
{
	if (n->ninst == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		n->inst_a = xreallocarray(n->inst_a, *cap, sizeof(uint32_t));
		n->inst_b = xreallocarray(n->inst_b, *cap, sizeof(uint32_t));
	}
	n->inst_a[n->ninst] = a;
	n->inst_b[n->ninst++] = b;
}

/* The nearest FUNCTION or INLINE context at or above C, or NONE. */
uint32_t instance_at_or_above(struct model *model, uint32_t c)
{
	struct dbfile_context x;
	while (c != DBFILE_NONE && c < model->db.ncontexts && ctx_get(model, c, &x) &&
	       !is_instance(x.kind))
		c = c ? x.parent : DBFILE_NONE;
	return c < model->db.ncontexts && !model->error ? c : DBFILE_NONE;
}

/* The outermost instance of C's function on its path (the reader's OUTER), or NONE. */
static uint32_t outer_of(struct model *model, uint32_t c)
{
	struct dbfile_context x;
	return ctx_get(model, c, &x) ? x.outer : DBFILE_NONE;
}

/* Bottom-up: the roots, one per function with a non-zero flat value. */
static void build_bu_root(struct model *model, struct vtree *t, uint32_t root)
{
	uint32_t count = 0;
	for (uint32_t f = 0; f < model->db.nfunctions; f++)
		count += model->fn_nonzero[f];
	tree_reserve(t, root, count);
	for (uint32_t f = 0; f < model->db.nfunctions; f++) {
		if (!model->fn_nonzero[f])
			continue;
		uint32_t id = new_node(t, MODEL_KIND_FUNCTION, root);
		struct vnode *n = &t->nodes[id];
		set_function(model, n, f);
		n->root = id;
		n->group = f;
		n->file = model->db.functions[f].file;
		n->line = model->db.functions[f].line;
	}
}

struct site {
	uint32_t fn, module, file, line, tip, next;
};

static int site_cmp(const void *pa, const void *pb)
{
	const struct site *a = pa, *b = pb;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->line != b->line)
		return a->line < b->line ? -1 : 1;
	if (a->tip != b->tip)
		return a->tip < b->tip ? -1 : 1;
	return 0;
}

/*
 * Where instance CX (whose parent is P, and the instance at or above P is NEXT) was called
 * from: the caller's function, the call's file and line, and the caller's instance.  False
 * for an instance that has no caller (below the root or a program entry).
 */
static bool caller_site(const struct model *model, const struct dbfile_context *cx,
			const struct dbfile_context *p, uint32_t next, struct bu_site *s)
{
	s->fn = p->function;
	s->module = s->fn < model->db.nfunctions ? model->db.functions[s->fn].module : DBFILE_NONE;
	s->next = next;
	if (cx->kind == DBFILE_INLINE) {
		s->file = cx->file;
		s->line = cx->line;
		return true;
	}
	s->file = p->file;
	s->line = p->line;
	return cx->parent != 0 && p->kind != DBFILE_ROOT && p->kind != DBFILE_ENTRY;
}

/*
 * The caller sites of every context, in one pass in context order (a parent comes before its
 * children, so the instance above each is known when it is met): for a walk of the whole
 * bottom-up tree (model_load_blocks), which asks for every instance's site, each of them from
 * one compact array rather than from three or four scattered context reads.
 */
static void index_caller_sites(struct model *model)
{
	uint32_t n = model->db.ncontexts;
	uint32_t *above = xmalloc(((size_t)n ? n : 1) * sizeof(uint32_t));
	struct bu_site *sites = xmalloc(((size_t)n ? n : 1) * sizeof(*sites));
	struct dbfile_context cx, p;
	for (uint32_t c = 0; c < n && ctx_get(model, c, &cx); c++) {
		uint32_t up = DBFILE_NONE;
		if (c && cx.parent < c)
			up = above[cx.parent];
		else if (c)
			up = instance_at_or_above(model, cx.parent);
		above[c] = is_instance(cx.kind) ? c : up;
		sites[c].fn = DBFILE_NONE;
		if (c && is_instance(cx.kind) && ctx_get(model, cx.parent, &p) &&
		    !caller_site(model, &cx, &p, up, &sites[c]))
			sites[c].fn = DBFILE_NONE;
	}
	free(above);
	model->caller_sites = sites;
}

/* The caller site of instance X into *S; false when it has none (or on a reader error). */
static bool caller_site_of(struct model *model, uint32_t x, struct bu_site *s)
{
	if (x == DBFILE_NONE || x == 0 || x >= model->db.ncontexts)
		return false;
	if (model->all_blocks && !model->caller_sites && !model->error)
		index_caller_sites(model);
	if (model->caller_sites) {
		*s = model->caller_sites[x];
		return s->fn != DBFILE_NONE && !model->error;
	}
	struct dbfile_context cx, p;
	if (!ctx_get(model, x, &cx) || !ctx_get(model, cx.parent, &p))
		return false;
	return caller_site(model, &cx, &p,
			   cx.parent ? instance_at_or_above(model, cx.parent) : DBFILE_NONE, s) &&
	       !model->error;
}

/* Bottom-up: the callers of NODE, from its instances. */
static void build_bu_callers(struct model *model, struct vtree *t, uint32_t node)
{
	struct vnode *n = &t->nodes[node];
	struct dbfile_context cx;
	if (n->kind == MODEL_KIND_FUNCTION && !n->ninst) {
		uint32_t cap = 0, *list;
		uint32_t nl = ctx_list(model, n->function, false, &list);
		for (uint32_t i = 0; i < nl && ctx_get(model, list[i], &cx); i++)
			if (is_instance(cx.kind) && (cx.flags & DBFILE_CTX_OUTER_FN))
				add_inst(n, n->ninst, list[i], &cap);
		free(list);
	}
	struct site *sites = xmalloc(((size_t)n->ninst ? n->ninst : 1) * sizeof(*sites));
	uint32_t ns = 0;
	for (uint32_t i = 0; i < n->ninst; i++) {
		struct bu_site c;
		if (!caller_site_of(model, n->inst_b[i], &c))
			continue;
		sites[ns++] = (struct site){ c.fn, c.module, c.file, c.line, n->inst_a[i], c.next };
	}
	qsort(sites, ns, sizeof(*sites), site_cmp);
	uint32_t root = n->root;
	for (uint32_t i = 0; i < ns;) {
		uint32_t j = i + 1;
		while (j < ns && sites[j].fn == sites[i].fn && sites[j].file == sites[i].file &&
		       sites[j].line == sites[i].line)
			j++;
		uint32_t id = new_node(t, MODEL_KIND_CALLER, node);
		struct vnode *k = &t->nodes[id];
		k->function = sites[i].fn;
		k->module = sites[i].module;
		k->file = sites[i].file;
		k->line = sites[i].line;
		k->root = root;
		k->group = sites[i].fn;
		uint32_t cap = j - i;
		k->inst_a = xreallocarray(NULL, cap, sizeof(uint32_t));
		k->inst_b = xreallocarray(NULL, cap, sizeof(uint32_t));
		for (; i < j; i++)
			add_inst(k, sites[i].tip, sites[i].next, &cap);
	}
	free(sites);
}

/* Flat: modules, files and functions with a non-zero flat value. */
static void build_flat_level(struct model *model, struct vtree *t, uint32_t node)
{
	const struct dbfile *db = &model->db;
	uint8_t kind = t->nodes[node].kind;
	bool *used = xcalloc((size_t)(kind == MODEL_KIND_ROOT ? db->nmodules : db->ngroups) + 1,
			     sizeof(bool));
	for (uint32_t f = 0; f < db->nfunctions; f++) {
		uint32_t g = db->functions[f].group;
		if (!model->fn_nonzero[f] || g >= db->ngroups)
			continue;
		const struct vnode *n = &t->nodes[node];
		if (kind == MODEL_KIND_ROOT) {
			uint32_t m = group_module(model, g);
			if (used[m])
				continue;
			used[m] = true;
			uint32_t id = new_node(t, MODEL_KIND_MODULE, node);
			t->nodes[id].module = m == db->nmodules ? DBFILE_NONE : m;
			t->nodes[id].group = m;
		} else if (kind == MODEL_KIND_MODULE) {
			if (group_module(model, g) != n->group || used[g])
				continue;
			used[g] = true;
			uint32_t id = new_node(t, MODEL_KIND_FILE, node);
			t->nodes[id].module = n->module;
			t->nodes[id].file = db->groups[g].file;
			t->nodes[id].group = g;
		} else if (kind == MODEL_KIND_FILE) {
			if (g != n->group)
				continue;
			uint32_t id = new_node(t, MODEL_KIND_FUNCTION, node);
			struct vnode *k = &t->nodes[id];
			set_function(model, k, f);
			k->file = db->functions[f].file;
			k->line = db->functions[f].line;
			k->group = f;
			k->root = id;
		}
	}
	free(used);
}

/* The key of a static node of a function (kind, file, line, address, inlined function). */
static uint64_t static_key(uint32_t parent, const struct dbfile_context *c)
{
	uint64_t h = hmap_mix((uint64_t)parent << 8 | c->kind);
	h = hmap_mix(h ^ ((uint64_t)c->file << 32 | c->line));
	h = hmap_mix(h ^ (c->file == DBFILE_NONE ? c->addr : 0));
	if (c->kind == DBFILE_INLINE)
		h = hmap_mix(h ^ c->function);
	return h;
}

/* A static node is one loop, line or inlined call site of its function, or one (call site,
 * callee) pair: CALLEE, for a call site. */
static bool static_same(const struct vnode *n, const struct dbfile_context *c, uint32_t callee)
{
	return n->kind == c->kind && n->file == c->file && n->line == c->line &&
	       n->addr == (c->file == DBFILE_NONE ? c->addr : 0) &&
	       (c->kind != DBFILE_INLINE || n->function == c->function) &&
	       (c->kind != DBFILE_CALL || n->function == callee);
}

static uint32_t static_node(struct model *model, struct vtree *t, struct hmap *map, uint32_t parent,
			    uint32_t fnode, const struct dbfile_context *c, uint32_t callee)
{
	uint64_t key = static_key(parent, c) ^ (c->kind == DBFILE_CALL ? hmap_mix(callee) : 0);
	uint64_t v;
	while (hmap_get(map, key, &v)) {
		if (static_same(&t->nodes[v], c, callee) && t->nodes[v].parent == parent)
			return (uint32_t)v;
		key++;
	}
	uint32_t id = new_node(t, c->kind, parent);
	struct vnode *n = &t->nodes[id];
	n->file = c->file;
	n->line = c->line;
	n->addr = c->file == DBFILE_NONE ? c->addr : 0;
	n->module = c->module;
	n->function = c->kind == DBFILE_INLINE ? c->function
		      : c->kind == DBFILE_CALL ? callee
					       : t->nodes[fnode].function;
	n->root = fnode;
	n->built = c->kind != DBFILE_LOOP;
	hmap_put(map, key, id);
	return id;
}

/* Whether X (context C, in a recursive instance) has an ancestor that maps to the same static
 * node. */
static bool repeats_above(struct model *model, const struct dbfile_context *x)
{
	struct dbfile_context y;
	for (uint32_t a = x->parent; a != DBFILE_NONE && a; a = y.parent) {
		if (!ctx_get(model, a, &y))
			return false;
		if (y.kind == x->kind && y.function == x->function && y.file == x->file &&
		    y.line == x->line && (x->file != DBFILE_NONE || y.addr == x->addr))
			return true;
	}
	return false;
}

static void add_static_instance(struct model *model, struct vtree *t, struct hmap *map,
				uint32_t parent, uint32_t fnode, const struct dbfile_context *x,
				uint32_t callee, uint32_t c, bool once);

/* Add context C (X) of function F to the static tree of F's flat node FNODE. */
static void flat_add_context(struct model *model, struct vtree *t, struct hmap *map, uint32_t fnode,
			     uint32_t f, uint32_t c, const struct dbfile_context *x)
{
	/* The loops of F around C, outermost first. */
	struct dbfile_context chain[64], l;
	uint32_t nchain = 0;
	for (uint32_t p = x->parent; p && p != DBFILE_NONE; p = l.parent) {
		if (!ctx_get(model, p, &l) || l.kind != DBFILE_LOOP || l.function != f)
			break;
		if (nchain < 64)
			chain[nchain++] = l;
	}
	uint32_t parent = fnode;
	while (nchain) {
		nchain--;
		parent = static_node(model, t, map, parent, fnode, &chain[nchain], DBFILE_NONE);
	}
	uint32_t inst = instance_at_or_above(model, x->kind == DBFILE_INLINE ? x->parent : c);
	bool once = inst == DBFILE_NONE || x->kind == DBFILE_LINE ||
		    outer_of(model, inst) == inst || !repeats_above(model, x);
	if (x->kind != DBFILE_CALL || !x->nchildren) {
		add_static_instance(model, t, map, parent, fnode, x, DBFILE_NONE, c, once);
		return;
	}
	/* A call site is one row per callee, each with what was measured in that callee. */
	struct dbfile_context k;
	for (uint32_t i = 0; i < x->nchildren && ctx_get(model, x->first_child + i, &k); i++)
		add_static_instance(model, t, map, parent, fnode, x,
				    k.kind == DBFILE_FUNCTION ? k.function : DBFILE_NONE,
				    x->first_child + i, once);
}

/* Count context C (whose static node is X's, with CALLEE for a call site) in that node. */
static void add_static_instance(struct model *model, struct vtree *t, struct hmap *map,
				uint32_t parent, uint32_t fnode, const struct dbfile_context *x,
				uint32_t callee, uint32_t c, bool once)
{
	uint32_t id = static_node(model, t, map, parent, fnode, x, callee);
	/* Grown at powers of two: the capacity follows from the count. */
	struct vnode *n = &t->nodes[id];
	if ((n->ninst & (n->ninst - 1)) == 0) {
		uint32_t cap = n->ninst ? n->ninst * 2 : 1;
		n->inst_a = xreallocarray(n->inst_a, cap, sizeof(uint32_t));
		n->inst_b = xreallocarray(n->inst_b, cap, sizeof(uint32_t));
	}
	n->inst_a[n->ninst] = c;
	n->inst_b[n->ninst++] = once;
}

static void build_flat_function(struct model *model, struct vtree *t, uint32_t fnode)
{
	uint32_t f = t->nodes[fnode].function, first = t->n;
	struct hmap map = HMAP_INIT;
	struct dbfile_context x;
	for (int inlined = 0; inlined < 2; inlined++) {
		uint32_t *list, n = ctx_list(model, f, inlined, &list);
		for (uint32_t i = 0; i < n && ctx_get(model, list[i], &x); i++)
			if (inlined || x.kind == DBFILE_LOOP || x.kind == DBFILE_LINE ||
			    x.kind == DBFILE_CALL)
				flat_add_context(model, t, &map, fnode, f, list[i], &x);
		free(list);
	}
	hmap_release(&map);
	/* Every loop of the function is complete now. */
	for (uint32_t id = first; id < t->n; id++)
		t->nodes[id].built = true;
}

static void tree_build_children(struct model *model, enum model_view view, uint32_t node)
{
	struct vtree *t = tree_of(model, view);
	tree_root(model, view);
	if (node >= t->n || t->nodes[node].built)
		return;
	uint8_t kind = t->nodes[node].kind;
	if (view == MODEL_BOTTOMUP) {
		if (kind == MODEL_KIND_ROOT)
			build_bu_root(model, t, node);
		else
			build_bu_callers(model, t, node);
	} else if (kind == MODEL_KIND_ROOT || kind == MODEL_KIND_MODULE ||
		   kind == MODEL_KIND_FILE) {
		build_flat_level(model, t, node);
	} else if (kind == MODEL_KIND_FUNCTION) {
		build_flat_function(model, t, node);
	}
	t->nodes[node].built = true;
}

/* ---- values ---- */

/* Exclusive values of the root function's code below each tip, per metric. */
static void compute_tipx(struct model *model, struct vtree *t, uint32_t root,
			 const struct vsrc *src, double *out)
{
	const struct vnode *r = &t->nodes[root];
	struct hmap tips = HMAP_INIT;
	for (uint32_t i = 0; i < r->ninst; i++)
		hmap_put(&tips, r->inst_b[i], i);
	double *row = xcalloc(2 * (size_t)model->nm, sizeof(double));
	uint32_t *list, n = ctx_list(model, r->function, false, &list);
	struct dbfile_context x;
	for (uint32_t i = 0; i < n && ctx_get(model, list[i], &x); i++) {
		uint32_t c = list[i];
		uint64_t tip;
		if (!hmap_get(&tips, x.outer, &tip))
			continue;
		memset(row, 0, 2 * (size_t)model->nm * sizeof(double));
		src_add_row(model, src, c, row, 2);
		for (uint32_t m = 0; m < model->nm; m++)
			out[tip * model->nm + m] += row[2 * m + 1];
	}
	free(row);
	free(list);
	hmap_release(&tips);
}

static void tree_node_values(struct model *model, enum model_view view, uint32_t node,
			     const struct vsrc *src, double *out)
{
	struct vtree *t = tree_of(model, view);
	const struct vnode *n = &t->nodes[node];
	size_t w = 2 * (size_t)model->nm;
	memset(out, 0, w * sizeof(double));
	if (n->kind == MODEL_KIND_ROOT) {
		src_add_row(model, src, 0, out, 1);
		return;
	}
	if (is_grouped(n->kind)) {
		struct aggregates tmp = { 0 };
		const struct aggregates *a = &tmp;
		if (src == model->cur)
			a = current_aggregates(model);
		else if (load_aggregates(model, src, &tmp) < 0)
			model_fail(model);
		if (n->kind == MODEL_KIND_FUNCTION)
			profile_row(model, a->fn, n->function, out);
		else
			profile_row(model, n->kind == MODEL_KIND_FILE ? a->grp : a->mod, n->group,
				    out);
		release_aggregates(&tmp);
		return;
	}
	if (view == MODEL_BOTTOMUP) {
		/* A caller: the tips' inclusive values and the function's own code below them. */
		struct vnode *r = &t->nodes[n->root];
		const double *tipx;
		double *own = NULL;
		if (src == model->cur) {
			if (r->tipx_gen != model->vgen) {
				free(r->tipx);
				r->tipx = xcalloc((size_t)r->ninst * model->nm + 1, sizeof(double));
				compute_tipx(model, t, n->root, src, r->tipx);
				r = &t->nodes[n->root];
				r->tipx_gen = model->vgen;
			}
			tipx = r->tipx;
		} else {
			own = xcalloc((size_t)r->ninst * model->nm + 1, sizeof(double));
			compute_tipx(model, t, n->root, src, own);
			tipx = own;
		}
		n = &t->nodes[node];
		r = &t->nodes[n->root];
		for (uint32_t i = 0; i < n->ninst; i++) {
			uint32_t tip = n->inst_a[i];
			src_add_row(model, src, r->inst_b[tip], out, 1);
			for (uint32_t m = 0; m < model->nm; m++)
				out[2 * m + 1] += tipx[(size_t)tip * model->nm + m];
		}
		free(own);
		return;
	}
	for (uint32_t i = 0; i < n->ninst; i++)
		src_add_row(model, src, n->inst_a[i], out, n->inst_b[i] ? 3 : 2);
}

static double tree_node_value(struct model *model, enum model_view view, uint32_t node,
			      uint32_t metric, bool inclusive)
{
	struct vtree *t = tree_of(model, view);
	/* Aggregates are shared, not copied into every node (the bottom-up roots are many). */
	if (is_grouped(t->nodes[node].kind))
		return aggregate_value(current_aggregates(model), &t->nodes[node], metric,
				       inclusive);
	if (t->nodes[node].vals_gen != model->vgen || !t->nodes[node].vals) {
		double *v = t->nodes[node].vals;
		if (!v)
			v = xmalloc(2 * ((size_t)model->nm ? model->nm : 1) * sizeof(double));
		tree_node_values(model, view, node, model->cur, v);
		t->nodes[node].vals = v;
		t->nodes[node].vals_gen = model->vgen;
	}
	return t->nodes[node].vals[2 * metric + !inclusive];
}

static uint32_t tree_function_of(struct model *model, enum model_view view, model_node node)
{
	struct vtree *t = tree_of(model, view);
	if (node >= t->n)
		return DBFILE_NONE;
	const struct vnode *n = &t->nodes[node];
	if (view == MODEL_FLAT && n->root != MODEL_NONE && n->root < t->n)
		return t->nodes[n->root].function;
	return n->function;
}

static void node_release(struct vnode *n)
{
	free(n->inst_a);
	free(n->inst_b);
	free(n->kids);
	free(n->vals);
	free(n->tipx);
	free(n->vis);
}

static void tree_forget(struct model *model, enum model_view view, uint32_t node)
{
	struct vtree *t = tree_of(model, view);
	if (node >= t->n)
		return;
	struct vnode *x = &t->nodes[node];
	/* Flat loops and lines are built with their function: only what builds again. */
	if (!x->built || !x->nkids ||
	    (view == MODEL_FLAT && x->kind != MODEL_KIND_ROOT && x->kind != MODEL_KIND_MODULE &&
	     x->kind != MODEL_KIND_FILE && x->kind != MODEL_KIND_FUNCTION))
		return;
	/* The first child is the first node built below NODE: are all from it below NODE? */
	uint32_t first = x->kids[0];
	if (first <= node)
		return;
	for (uint32_t id = first; id < t->n; id++) {
		uint32_t p = t->nodes[id].parent;
		if (p != node && (p < first || p >= id))
			return;
	}
	for (uint32_t id = first; id < t->n; id++)
		node_release(&t->nodes[id]);
	t->n = first;
	x->built = false;
	x->nkids = 0;
	free(x->vis);
	x->vis = NULL;
	x->nvis = x->vis_gen = 0;
	if (view == MODEL_BOTTOMUP && x->root == node) {
		free(x->tipx); /* the callers' values: computed again with them */
		x->tipx = NULL;
		x->tipx_gen = 0;
	}
}

void tree_release(struct vtree *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		node_release(&t->nodes[i]);
	free(t->nodes);
	memset(t, 0, sizeof(*t));
	t->root = MODEL_NONE;
}

/* ---- the operations of the bottom-up and flat trees ---- */

static bool tree_valid(struct model *model, enum model_view view, model_node node)
{
	tree_root(model, view);
	return node < tree_of(model, view)->n;
}

static uint32_t tree_raw_children(struct model *model, enum model_view view, model_node node,
				  uint32_t **out)
{
	struct vtree *t = tree_of(model, view);
	*out = NULL;
	tree_build_children(model, view, node);
	if (node >= t->n || !t->nodes[node].nkids)
		return 0;
	/* A copy: building children may move the node arrays of bottom-up and flat. */
	uint32_t n = t->nodes[node].nkids;
	*out = xmalloc(n * sizeof(uint32_t));
	memcpy(*out, t->nodes[node].kids, n * sizeof(uint32_t));
	return n;
}

/* Bottom-up caller chains are built only as far as they are asked for. */
static bool bu_unbuilt(struct model *model, enum model_view view, model_node node)
{
	struct vtree *t = tree_of(model, view);
	return node >= t->n || !t->nodes[node].built;
}

static uint32_t tree_children(struct model *model, enum model_view view, model_node node,
			      const model_node **out)
{
	struct vtree *t = tree_of(model, view);
	tree_root(model, view);
	if (node >= t->n)
		return 0;
	if (t->nodes[node].vis_gen != model->gen ||
	    (!t->nodes[node].vis && !t->nodes[node].built)) {
		uint32_t *kids;
		uint32_t n = nav_visible(model, view, node, true, &kids);
		free(t->nodes[node].vis);
		t->nodes[node].vis = kids;
		t->nodes[node].nvis = n;
		t->nodes[node].vis_gen = model->gen;
	}
	*out = t->nodes[node].vis;
	return t->nodes[node].nvis;
}

/* The flat root's visible children are the level model_flatten went down to. */
static int flat_skipped_levels(struct model *model, enum model_view view, model_node node)
{
	return model->flatten > 0 && node == tree_root(model, view) ? model->flatten : 0;
}

static model_node tree_parent(struct model *model, enum model_view view, model_node node)
{
	struct vtree *t = tree_of(model, view);
	return node < t->n ? t->nodes[node].parent : MODEL_NONE;
}

static void tree_filter_subject(struct model *model, enum model_view view, model_node node,
				const char **name, const char **module)
{
	const struct dbfile *db = &model->db;
	const struct vnode *n = &tree_of(model, view)->nodes[node];
	*name = "";
	*module = NULL;
	if (n->kind == MODEL_KIND_FUNCTION || n->kind == MODEL_KIND_CALLER ||
	    n->kind == MODEL_KIND_INLINE) {
		if (n->function != DBFILE_NONE)
			*name = fn_name(model, n->function);
	} else if (n->kind == MODEL_KIND_FILE && n->file != DBFILE_NONE) {
		*name = dbfile_str(db, n->file);
	}
	if (n->module != DBFILE_NONE && n->module < db->nmodules)
		*module = dbfile_str(db, db->modules[n->module].path);
}

static void tree_sort_fields(struct model *model, enum model_view view, model_node node,
			     uint32_t *function, uint32_t *line)
{
	const struct vnode *x = &tree_of(model, view)->nodes[node];
	*line = x->line;
	*function = x->function;
}

static bool tree_is_expanded(struct model *model, enum model_view view, model_node node)
{
	struct vtree *t = tree_of(model, view);
	return node < t->n && t->nodes[node].expanded;
}

static void tree_expand(struct model *model, enum model_view view, model_node node, bool expanded)
{
	struct vtree *t = tree_of(model, view);
	tree_root(model, view);
	if (node < t->n)
		t->nodes[node].expanded = expanded;
}

static void tree_collapse_all(struct model *model, enum model_view view)
{
	struct vtree *t = tree_of(model, view);
	for (uint32_t i = 0; i < t->n; i++)
		t->nodes[i].expanded = false;
}

static double tree_value(struct model *model, enum model_view view, model_node node,
			 uint32_t metric, bool inclusive, const struct vsrc *src)
{
	struct vtree *t = tree_of(model, view);
	if (node >= t->n)
		return NAN;
	if (src == model->cur)
		return tree_node_value(model, view, node, metric, inclusive);
	double *tmp = xcalloc(2 * (size_t)model->nm, sizeof(double));
	tree_node_values(model, view, node, src, tmp);
	double v = tmp[2 * metric + !inclusive];
	free(tmp);
	return v;
}

static void tree_info(struct model *model, enum model_view view, model_node node,
		      struct model_node_info *out)
{
	const struct dbfile *db = &model->db;
	struct vtree *t = tree_of(model, view);
	uint32_t root = tree_root(model, view);
	if (node >= t->n)
		return;
	const struct vnode *n = &t->nodes[node];
	out->kind = n->kind;
	uint32_t zroot = model_root(model, view);
	uint32_t d = 0;
	for (uint32_t p = node; p != zroot && p != root && p != MODEL_NONE; p = t->nodes[p].parent)
		d++;
	out->depth = d;
	out->parent = node == zroot ? MODEL_NONE : n->parent;
	switch (n->kind) {
	case MODEL_KIND_MODULE:
		out->name = n->module != DBFILE_NONE ? dbfile_str(db, db->modules[n->module].path)
						     : "<unknown module>";
		break;
	case MODEL_KIND_FILE:
		out->name = n->file != DBFILE_NONE ? dbfile_str(db, n->file) : "<unknown file>";
		break;
	case MODEL_KIND_ROOT:
		break;
	default:
		out->name = n->function != DBFILE_NONE ? fn_name(model, n->function) : "";
	}
	if (n->kind != MODEL_KIND_MODULE)
		out->file = n->file != DBFILE_NONE ? dbfile_str(db, n->file) : NULL;
	out->line = n->line;
	out->module = n->module != DBFILE_NONE ? dbfile_str(db, db->modules[n->module].path) : NULL;
	out->addr = n->addr;
	out->has_children = !n->built || n->nkids > 0;
	out->expanded = n->expanded;
}

static uint32_t tree_context_of(struct model *model, enum model_view view, model_node node)
{
	(void)model;
	(void)view;
	(void)node;
	return DBFILE_NONE;
}

/* The scope of a node: its function (a caller's: the calling function), every place of it. */
static int tree_source_scope(struct model *model, enum model_view view, model_node node,
			     struct source_scope *out)
{
	struct dbfile_context c, x;
	uint32_t f = tree_function_of(model, view, node);
	if (f == DBFILE_NONE)
		return fth_error("this scope has no source: it is not a function or in one");
	const struct vnode *n = &tree_of(model, view)->nodes[node];
	if (n->kind == MODEL_KIND_LINE || n->kind == MODEL_KIND_LOOP ||
	    n->kind == MODEL_KIND_CALL || n->kind == MODEL_KIND_CALLER) {
		out->file = n->file;
		out->focus = n->line;
	}
	if (n->kind == MODEL_KIND_CALLER)
		f = n->function;
	out->function = f;
	uint32_t *list, nl = ctx_list(model, f, false, &list);
	for (uint32_t i = 0; i < nl && ctx_get(model, list[i], &x); i++) {
		if (x.kind != DBFILE_LOOP && x.kind != DBFILE_LINE && x.kind != DBFILE_CALL)
			continue;
		uint32_t inst = instance_at_or_above(model, list[i]);
		source_scope_add(out, list[i], &x,
				 x.kind == DBFILE_LINE || inst == DBFILE_NONE ||
					 (ctx_get(model, inst, &c) && c.outer == inst));
	}
	free(list);
	nl = ctx_list(model, f, true, &list);
	for (uint32_t i = 0; i < nl && ctx_get(model, list[i], &x); i++) {
		uint32_t inst = instance_at_or_above(model, x.parent);
		bool once = inst == DBFILE_NONE || (ctx_get(model, inst, &c) && c.outer == inst);
		source_scope_add(out, list[i], &x, once);
	}
	free(list);
	return 0;
}

#define TREE_OPS                                                                              \
	.root = tree_root, .valid = tree_valid, .raw_children = tree_raw_children,            \
	.children = tree_children, .parent = tree_parent, .filter_subject = tree_filter_subject, \
	.sort_fields = tree_sort_fields, .is_expanded = tree_is_expanded, .expand = tree_expand, \
	.collapse_all = tree_collapse_all, .value = tree_value, .info = tree_info,            \
	.forget = tree_forget, .context_of = tree_context_of, .source_scope = tree_source_scope

const struct tree_ops bottomup_ops = { TREE_OPS, .unbuilt = bu_unbuilt };
const struct tree_ops flat_ops = { TREE_OPS, .skipped_levels = flat_skipped_levels };

/* ---- flatten ---- */

int model_flatten(struct model *model)
{
	model_node root = tree_root(model, MODEL_FLAT);
	const model_node *kids;
	uint32_t n = model_children(model, MODEL_FLAT, root, &kids);
	bool deeper = false;
	for (uint32_t i = 0; i < n && !deeper; i++) {
		uint32_t *sub;
		deeper = tree_raw_children(model, MODEL_FLAT, kids[i], &sub) > 0;
		free(sub);
		n = model_children(model, MODEL_FLAT, root, &kids);
	}
	if (deeper) {
		model->flatten++;
		nav_invalidate(model);
	}
	return model->flatten;
}

int model_unflatten(struct model *model)
{
	if (model->flatten > 0) {
		model->flatten--;
		nav_invalidate(model);
	}
	return model->flatten;
}

