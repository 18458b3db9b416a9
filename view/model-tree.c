/* SPDX-License-Identifier: MIT */
/*
 * model-tree.c: the bottom-up and flat trees, built lazily over the calling context tree, and
 * their values (doc/formats.md 8.4.9 and 8.6).  One pass at first use indexes the contexts by
 * function and marks, for every function, (module, file) group and module, the instances with
 * no ancestor of the same (so that a call path counts once however deep the recursion).
 *
 * Bottom-up: the roots are the functions; below a node, its callers: each node keeps its
 * instances as (tip, context) pairs, the tip being the outermost instance of the root function
 * whose inclusive value is charged, the context the caller function's instance from which the
 * next caller is found.  Flat: module > file > function > loops > lines, call sites and inlined
 * calls, the static structure of each function merged over all its contexts.
 */
#include "compat.h"
#include "model-internal.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint32_t fn_module(const struct vm *vm, uint32_t f)
{
	uint32_t m = f < vm->db.nfunctions ? vm->db.functions[f].module : DBFILE_NONE;
	return m == DBFILE_NONE ? vm->db.nmodules : m; /* the last slot: no module */
}

/* ---- index ---- */

static void csr_build(uint32_t nkeys, uint32_t nitems, const uint32_t *key_of, uint32_t **start,
		      uint32_t **list)
{
	uint32_t *s = xcalloc((size_t)nkeys + 2, sizeof(uint32_t));
	uint32_t count = 0;
	for (uint32_t i = 0; i < nitems; i++)
		if (key_of[i] < nkeys) {
			s[key_of[i] + 2]++;
			count++;
		}
	for (uint32_t k = 0; k <= nkeys; k++)
		s[k + 1] += s[k];
	uint32_t *l = xmalloc(((size_t)count ? count : 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < nitems; i++)
		if (key_of[i] < nkeys)
			l[s[key_of[i] + 1]++] = i;
	*start = s;
	*list = l;
}

static void index_groups(struct vm *vm)
{
	const struct dbfile *db = &vm->db;
	uint32_t nf = db->nfunctions;
	vm->fn_group = xmalloc(((size_t)nf ? nf : 1) * sizeof(uint32_t));
	struct hmap groups = HMAP_INIT;
	uint32_t agroups = 0;
	for (uint32_t f = 0; f < nf; f++) {
		uint32_t file = db->functions[f].file;
		/* Without a declaration: the file of the function's first line. */
		for (uint32_t i = vm->fn_ctx_start[f]; file == DBFILE_NONE && i < vm->fn_ctx_start[f + 1];
		     i++) {
			const struct dbfile_context *c = &db->contexts[vm->fn_ctx[i]];
			if (c->kind == DBFILE_LINE || c->kind == DBFILE_LOOP || c->kind == DBFILE_CALL)
				file = c->file;
		}
		uint32_t module = fn_module(vm, f);
		uint64_t key = (uint64_t)module << 32 | file;
		bool inserted;
		uint64_t *g = hmap_upsert(&groups, key, vm->ngroups, &inserted);
		if (inserted) {
			ALLOC_GROW(vm->grp_module, vm->ngroups + 1, agroups);
			vm->grp_file = xreallocarray(vm->grp_file, agroups, sizeof(uint32_t));
			vm->grp_module[vm->ngroups] = module;
			vm->grp_file[vm->ngroups] = file;
			vm->ngroups++;
		}
		vm->fn_group[f] = (uint32_t)*g;
	}
	hmap_release(&groups);
	if (!vm->grp_module) {
		vm->grp_module = xcalloc(1, sizeof(uint32_t));
		vm->grp_file = xcalloc(1, sizeof(uint32_t));
	}
}

static void index_outer(struct vm *vm)
{
	const struct dbfile *db = &vm->db;
	uint32_t n = db->ncontexts, nf = db->nfunctions;
	uint32_t *cnt_fn = xcalloc((size_t)nf + 1, sizeof(uint32_t));
	uint32_t *cur_fn = xcalloc((size_t)nf + 1, sizeof(uint32_t));
	uint32_t *cnt_grp = xcalloc((size_t)vm->ngroups + 1, sizeof(uint32_t));
	uint32_t *cnt_mod = xcalloc((size_t)db->nmodules + 1, sizeof(uint32_t));
	uint32_t *stack = xmalloc(((size_t)n ? n : 1) * sizeof(uint32_t));
	uint32_t *pos = xmalloc(((size_t)n ? n : 1) * sizeof(uint32_t));
	vm->outer_inst = xmalloc(((size_t)n ? n : 1) * sizeof(uint32_t));
	vm->ctx_flags = xcalloc((size_t)n + 1, 1);
	uint32_t sp = 0;
	if (n) {
		stack[sp] = 0;
		pos[sp++] = vm->child_start[0];
		vm->outer_inst[0] = DBFILE_NONE;
	}
	while (sp) {
		uint32_t c = stack[sp - 1];
		if (pos[sp - 1] < vm->child_start[c + 1]) {
			uint32_t k = vm->child_list[pos[sp - 1]++];
			const struct dbfile_context *x = &db->contexts[k];
			uint32_t f = x->function;
			if (is_instance(x->kind) && f < nf) {
				if (cnt_fn[f]++ == 0) {
					vm->ctx_flags[k] |= CF_OUTER_FN;
					cur_fn[f] = k;
				}
				if (cnt_grp[vm->fn_group[f]]++ == 0)
					vm->ctx_flags[k] |= CF_OUTER_GRP;
				if (cnt_mod[fn_module(vm, f)]++ == 0)
					vm->ctx_flags[k] |= CF_OUTER_MOD;
			}
			vm->outer_inst[k] = f < nf && cnt_fn[f] ? cur_fn[f] : DBFILE_NONE;
			stack[sp] = k;
			pos[sp++] = vm->child_start[k];
			continue;
		}
		const struct dbfile_context *x = &db->contexts[c];
		if (c && is_instance(x->kind) && x->function < nf) {
			cnt_fn[x->function]--;
			cnt_grp[vm->fn_group[x->function]]--;
			cnt_mod[fn_module(vm, x->function)]--;
		}
		sp--;
	}
	/* The outermost instances of groups and modules, in context order (sequential reads). */
	uint32_t nouter = 0;
	for (uint32_t c = 0; c < n; c++)
		nouter += (vm->ctx_flags[c] & (CF_OUTER_GRP | CF_OUTER_MOD)) != 0;
	vm->outer_list = xmalloc(((size_t)nouter ? nouter : 1) * sizeof(uint32_t));
	for (uint32_t c = 0; c < n; c++)
		if (vm->ctx_flags[c] & (CF_OUTER_GRP | CF_OUTER_MOD))
			vm->outer_list[vm->nouter++] = c;
	free(stack);
	free(pos);
	free(cnt_fn);
	free(cur_fn);
	free(cnt_grp);
	free(cnt_mod);
}

void tree_index(struct vm *vm)
{
	if (vm->indexed)
		return;
	const struct dbfile *db = &vm->db;
	uint32_t n = db->ncontexts, nf = db->nfunctions;
	uint32_t *key = xmalloc(((size_t)n ? n : 1) * sizeof(uint32_t));
	for (uint32_t c = 0; c < n; c++) {
		uint8_t k = db->contexts[c].kind;
		key[c] = k == DBFILE_ROOT || k == DBFILE_ENTRY ? DBFILE_NONE : db->contexts[c].function;
	}
	csr_build(nf, n, key, &vm->fn_ctx_start, &vm->fn_ctx);
	for (uint32_t c = 0; c < n; c++) {
		const struct dbfile_context *x = &db->contexts[c];
		key[c] = x->kind == DBFILE_INLINE && c ? db->contexts[x->parent].function : DBFILE_NONE;
	}
	csr_build(nf, n, key, &vm->inl_start, &vm->inl_ctx);
	free(key);
	index_groups(vm);
	vm->fn_nonzero = xcalloc((size_t)nf + 1, sizeof(bool));
	for (uint32_t f = 0; f < nf; f++)
		for (uint32_t j = db->flat_start[f]; j < db->flat_start[f + 1]; j++)
			if (db->flat_incl[j] != 0 || db->flat_excl[j] != 0)
				vm->fn_nonzero[f] = true;
	index_outer(vm);
	vm->indexed = true;
}

/* ---- aggregates: functions, groups, modules ---- */

/*
 * The functions' values with SRC.  For the sums over threads they are the database's flat
 * profile, so that the bottom-up roots need no pass over the contexts; for one thread, one pass
 * over the contexts.
 */
static void aggregate_functions(struct vm *vm, const struct vsrc *src, struct aggregates *a)
{
	const struct dbfile *db = &vm->db;
	size_t w = 2 * (size_t)vm->nm;
	a->ready = true;
	if (src->thread < 0)
		return; /* the flat profile */
	a->fn = xcalloc(((size_t)db->nfunctions + 1) * w, sizeof(double));
	tree_index(vm);
	for (uint32_t c = 1; c < db->ncontexts; c++) {
		const struct dbfile_context *x = &db->contexts[c];
		uint32_t f = x->function;
		if (f >= db->nfunctions || x->kind == DBFILE_ENTRY)
			continue;
		src_add_row(vm, src, c, a->fn + f * w,
			    vm->ctx_flags[c] & CF_OUTER_FN ? 3 : 2);
	}
}

/*
 * The (module, file) groups' and modules' values (the flat view's upper levels): inclusive from
 * their outermost instances, exclusive from their functions'.  Needs the functions' first.
 */
static void aggregate_groups(struct vm *vm, const struct vsrc *src, struct aggregates *a)
{
	const struct dbfile *db = &vm->db;
	size_t w = 2 * (size_t)vm->nm;
	tree_index(vm);
	a->grp = xcalloc(((size_t)vm->ngroups + 1) * w, sizeof(double));
	a->mod = xcalloc(((size_t)db->nmodules + 1) * w, sizeof(double));
	for (uint32_t i = 0; i < vm->nouter; i++) {
		uint32_t c = vm->outer_list[i], f = db->contexts[c].function;
		if (vm->ctx_flags[c] & CF_OUTER_GRP)
			src_add_row(vm, src, c, a->grp + vm->fn_group[f] * w, 1);
		if (vm->ctx_flags[c] & CF_OUTER_MOD)
			src_add_row(vm, src, c, a->mod + fn_module(vm, f) * w, 1);
	}
	for (uint32_t f = 0; f < db->nfunctions; f++) {
		double *g = a->grp + vm->fn_group[f] * w, *m = a->mod + fn_module(vm, f) * w;
		if (a->fn) {
			for (uint32_t k = 0; k < vm->nm; k++) {
				g[2 * k + 1] += a->fn[f * w + 2 * k + 1];
				m[2 * k + 1] += a->fn[f * w + 2 * k + 1];
			}
			continue;
		}
		for (uint32_t j = db->flat_start[f]; j < db->flat_start[f + 1]; j++) {
			g[2 * db->flat_metric[j] + 1] += db->flat_excl[j];
			m[2 * db->flat_metric[j] + 1] += db->flat_excl[j];
		}
	}
}

/* The values of function F (2 per metric) into OUT, which holds zeros. */
static void function_row(const struct vm *vm, const struct aggregates *a, uint32_t f,
			 double *out)
{
	const struct dbfile *db = &vm->db;
	size_t w = 2 * (size_t)vm->nm;
	if (a->fn) {
		memcpy(out, a->fn + (size_t)f * w, w * sizeof(double));
		return;
	}
	for (uint32_t j = f < db->nfunctions ? db->flat_start[f] : 0;
	     f < db->nfunctions && j < db->flat_start[f + 1]; j++) {
		out[2 * db->flat_metric[j]] = db->flat_incl[j];
		out[2 * db->flat_metric[j] + 1] = db->flat_excl[j];
	}
}

static void free_aggregates(struct aggregates *a)
{
	free(a->fn);
	free(a->grp);
	free(a->mod);
	memset(a, 0, sizeof(*a));
}

/* The aggregates of the current values: the functions', and the groups' when GROUPS. */
static const struct aggregates *current_aggregates(struct vm *vm, bool groups)
{
	if (vm->agg_gen != vm->vgen || !vm->agg.ready) {
		free_aggregates(&vm->agg);
		aggregate_functions(vm, vm->cur, &vm->agg);
		vm->agg_gen = vm->vgen;
	}
	if (groups && !vm->agg.grp)
		aggregate_groups(vm, vm->cur, &vm->agg);
	return &vm->agg;
}

/* Function, file and module nodes: their values are aggregates. */
static bool is_grouped(uint8_t kind)
{
	return kind == VM_KIND_FUNCTION || kind == VM_KIND_MODULE || kind == VM_KIND_FILE;
}

/* The value of a function, file or module node N from the aggregates A. */
static double aggregate_value(const struct vm *vm, const struct aggregates *a,
			      const struct vnode *n, uint32_t metric, bool inclusive)
{
	const struct dbfile *db = &vm->db;
	size_t w = 2 * (size_t)vm->nm, at = 2 * (size_t)metric + !inclusive;
	if (n->kind == VM_KIND_FILE)
		return a->grp[(size_t)n->group * w + at];
	if (n->kind == VM_KIND_MODULE)
		return a->mod[(size_t)n->group * w + at];
	uint32_t f = n->function;
	if (a->fn)
		return a->fn[(size_t)f * w + at];
	for (uint32_t j = f < db->nfunctions ? db->flat_start[f] : 0;
	     f < db->nfunctions && j < db->flat_start[f + 1]; j++)
		if (db->flat_metric[j] == metric)
			return inclusive ? db->flat_incl[j] : db->flat_excl[j];
	return 0;
}

/* ---- nodes ---- */

struct vtree *tree_of(struct vm *vm, enum vm_view view)
{
	return view == VM_BOTTOMUP ? &vm->bu : &vm->flat;
}

static uint32_t new_node(struct vtree *t, uint8_t kind, uint32_t parent)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->nodes = xreallocarray(t->nodes, t->cap, sizeof(*t->nodes));
	}
	uint32_t id = t->n++;
	struct vnode *n = &t->nodes[id];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->parent = parent;
	n->depth = parent == VM_NONE ? 0 : t->nodes[parent].depth + 1;
	n->root = VM_NONE;
	n->function = n->module = n->file = n->group = DBFILE_NONE;
	if (parent != VM_NONE) {
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

uint32_t tree_root(struct vm *vm, enum vm_view view)
{
	struct vtree *t = tree_of(vm, view);
	if (t->root == VM_NONE) {
		tree_index(vm);
		t->root = new_node(t, VM_KIND_ROOT, VM_NONE);
	}
	return t->root;
}

static void set_function(struct vm *vm, struct vnode *n, uint32_t f)
{
	n->function = f;
	n->module = f < vm->db.nfunctions ? vm->db.functions[f].module : DBFILE_NONE;
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
uint32_t instance_at_or_above(const struct vm *vm, uint32_t c)
{
	while (c != DBFILE_NONE && c < vm->db.ncontexts && !is_instance(vm->db.contexts[c].kind))
		c = c ? vm->db.contexts[c].parent : DBFILE_NONE;
	return c < vm->db.ncontexts ? c : DBFILE_NONE;
}

/* Bottom-up: the roots, one per function with a non-zero flat value. */
static void build_bu_root(struct vm *vm, struct vtree *t, uint32_t root)
{
	uint32_t count = 0;
	for (uint32_t f = 0; f < vm->db.nfunctions; f++)
		count += vm->fn_nonzero[f];
	tree_reserve(t, root, count);
	for (uint32_t f = 0; f < vm->db.nfunctions; f++) {
		if (!vm->fn_nonzero[f])
			continue;
		uint32_t id = new_node(t, VM_KIND_FUNCTION, root);
		struct vnode *n = &t->nodes[id];
		set_function(vm, n, f);
		n->root = id;
		n->group = f;
		n->file = vm->db.functions[f].file;
		n->line = vm->db.functions[f].line;
	}
}

struct site {
	uint32_t fn, file, line, tip, next;
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

/* Bottom-up: the callers of NODE, from its instances. */
static void build_bu_callers(struct vm *vm, struct vtree *t, uint32_t node)
{
	const struct dbfile *db = &vm->db;
	struct vnode *n = &t->nodes[node];
	if (n->kind == VM_KIND_FUNCTION && !n->ninst) {
		uint32_t cap = 0, f = n->function;
		for (uint32_t i = vm->fn_ctx_start[f]; i < vm->fn_ctx_start[f + 1]; i++) {
			uint32_t c = vm->fn_ctx[i];
			if (is_instance(db->contexts[c].kind) && (vm->ctx_flags[c] & CF_OUTER_FN))
				add_inst(n, n->ninst, c, &cap);
		}
	}
	struct site *sites = xmalloc(((size_t)n->ninst ? n->ninst : 1) * sizeof(*sites));
	uint32_t ns = 0;
	for (uint32_t i = 0; i < n->ninst; i++) {
		uint32_t x = n->inst_b[i];
		if (x == DBFILE_NONE || x == 0)
			continue;
		const struct dbfile_context *cx = &db->contexts[x];
		struct site s = { DBFILE_NONE, DBFILE_NONE, 0, n->inst_a[i], DBFILE_NONE };
		if (cx->kind == DBFILE_INLINE) {
			const struct dbfile_context *p = &db->contexts[cx->parent];
			s.fn = p->function;
			s.file = cx->file;
			s.line = cx->line;
			s.next = cx->parent ? instance_at_or_above(vm, cx->parent) : DBFILE_NONE;
		} else {
			uint32_t pc = cx->parent;
			const struct dbfile_context *p = &db->contexts[pc];
			if (pc == 0 || p->kind == DBFILE_ROOT || p->kind == DBFILE_ENTRY)
				continue;
			s.fn = p->function;
			s.file = p->file;
			s.line = p->line;
			s.next = instance_at_or_above(vm, pc);
		}
		sites[ns++] = s;
	}
	qsort(sites, ns, sizeof(*sites), site_cmp);
	uint32_t root = n->root;
	for (uint32_t i = 0; i < ns;) {
		uint32_t id = new_node(t, VM_KIND_CALLER, node);
		struct vnode *k = &t->nodes[id];
		set_function(vm, k, sites[i].fn);
		k->file = sites[i].file;
		k->line = sites[i].line;
		k->root = root;
		k->group = sites[i].fn;
		uint32_t cap = 0, j = i;
		for (; j < ns && sites[j].fn == sites[i].fn && sites[j].file == sites[i].file &&
		       sites[j].line == sites[i].line;
		     j++)
			add_inst(k, sites[j].tip, sites[j].next, &cap);
		i = j;
	}
	free(sites);
}

/* Flat: modules, files and functions with a non-zero flat value. */
static void build_flat_level(struct vm *vm, struct vtree *t, uint32_t node)
{
	const struct dbfile *db = &vm->db;
	uint8_t kind = t->nodes[node].kind;
	bool *used = xcalloc((size_t)(kind == VM_KIND_ROOT ? db->nmodules : vm->ngroups) + 1,
			     sizeof(bool));
	for (uint32_t f = 0; f < db->nfunctions; f++) {
		if (!vm->fn_nonzero[f])
			continue;
		uint32_t g = vm->fn_group[f];
		const struct vnode *n = &t->nodes[node];
		if (kind == VM_KIND_ROOT) {
			uint32_t m = vm->grp_module[g];
			if (used[m])
				continue;
			used[m] = true;
			uint32_t id = new_node(t, VM_KIND_MODULE, node);
			t->nodes[id].module = m == db->nmodules ? DBFILE_NONE : m;
			t->nodes[id].group = m;
		} else if (kind == VM_KIND_MODULE) {
			if (vm->grp_module[g] != n->group || used[g])
				continue;
			used[g] = true;
			uint32_t id = new_node(t, VM_KIND_FILE, node);
			t->nodes[id].module = n->module;
			t->nodes[id].file = vm->grp_file[g];
			t->nodes[id].group = g;
		} else if (kind == VM_KIND_FILE) {
			if (g != n->group)
				continue;
			uint32_t id = new_node(t, VM_KIND_FUNCTION, node);
			struct vnode *k = &t->nodes[id];
			set_function(vm, k, f);
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

static bool static_same(const struct vnode *n, const struct dbfile_context *c)
{
	return n->kind == c->kind && n->file == c->file && n->line == c->line &&
	       n->addr == (c->file == DBFILE_NONE ? c->addr : 0) &&
	       (c->kind != DBFILE_INLINE || n->function == c->function);
}

static uint32_t static_node(struct vm *vm, struct vtree *t, struct hmap *map, uint32_t parent,
			    uint32_t fnode, const struct dbfile_context *c, uint32_t callee)
{
	uint64_t key = static_key(parent, c);
	uint64_t v;
	while (hmap_get(map, key, &v)) {
		if (static_same(&t->nodes[v], c) && t->nodes[v].parent == parent)
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

/* Whether C (in a recursive instance) has an ancestor that maps to the same static node. */
static bool repeats_above(const struct vm *vm, uint32_t c)
{
	const struct dbfile_context *x = &vm->db.contexts[c];
	for (uint32_t a = x->parent; a != DBFILE_NONE && a; a = vm->db.contexts[a].parent) {
		const struct dbfile_context *y = &vm->db.contexts[a];
		if (y->kind == x->kind && y->function == x->function && y->file == x->file &&
		    y->line == x->line && (x->file != DBFILE_NONE || y->addr == x->addr))
			return true;
	}
	return false;
}

static uint32_t first_callee(const struct vm *vm, uint32_t ctx)
{
	for (uint32_t i = vm->child_start[ctx]; i < vm->child_start[ctx + 1]; i++) {
		const struct dbfile_context *k = &vm->db.contexts[vm->child_list[i]];
		if (k->kind == DBFILE_FUNCTION)
			return k->function;
	}
	return DBFILE_NONE;
}

static void flat_add_context(struct vm *vm, struct vtree *t, struct hmap *map, uint32_t fnode,
			     uint32_t f, uint32_t c)
{
	const struct dbfile *db = &vm->db;
	/* The loops of F around C, outermost first. */
	uint32_t chain[64], nchain = 0;
	uint32_t p = db->contexts[c].parent;
	while (p && db->contexts[p].kind == DBFILE_LOOP && db->contexts[p].function == f) {
		if (nchain < 64)
			chain[nchain++] = p;
		p = db->contexts[p].parent;
	}
	uint32_t parent = fnode;
	while (nchain) {
		uint32_t l = chain[--nchain];
		parent = static_node(vm, t, map, parent, fnode, &db->contexts[l], DBFILE_NONE);
	}
	const struct dbfile_context *x = &db->contexts[c];
	uint32_t id = static_node(vm, t, map, parent, fnode, x,
				  x->kind == DBFILE_CALL ? first_callee(vm, c) : DBFILE_NONE);
	uint32_t inst = instance_at_or_above(vm, x->kind == DBFILE_INLINE ? x->parent : c);
	bool once = inst == DBFILE_NONE || vm->outer_inst[inst] == inst ||
		    x->kind == DBFILE_LINE || !repeats_above(vm, c);
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

static void build_flat_function(struct vm *vm, struct vtree *t, uint32_t fnode)
{
	const struct dbfile *db = &vm->db;
	uint32_t f = t->nodes[fnode].function, first = t->n;
	struct hmap map = HMAP_INIT;
	for (uint32_t i = vm->fn_ctx_start[f]; i < vm->fn_ctx_start[f + 1]; i++) {
		uint32_t c = vm->fn_ctx[i];
		uint8_t k = db->contexts[c].kind;
		if (k == DBFILE_LOOP || k == DBFILE_LINE || k == DBFILE_CALL)
			flat_add_context(vm, t, &map, fnode, f, c);
	}
	for (uint32_t i = vm->inl_start[f]; i < vm->inl_start[f + 1]; i++)
		flat_add_context(vm, t, &map, fnode, f, vm->inl_ctx[i]);
	hmap_release(&map);
	/* Every loop of the function is complete now. */
	for (uint32_t id = first; id < t->n; id++)
		t->nodes[id].built = true;
}

void tree_build_children(struct vm *vm, enum vm_view view, uint32_t node)
{
	struct vtree *t = tree_of(vm, view);
	tree_root(vm, view);
	if (node >= t->n || t->nodes[node].built)
		return;
	uint8_t kind = t->nodes[node].kind;
	if (view == VM_BOTTOMUP) {
		if (kind == VM_KIND_ROOT)
			build_bu_root(vm, t, node);
		else
			build_bu_callers(vm, t, node);
	} else if (kind == VM_KIND_ROOT || kind == VM_KIND_MODULE || kind == VM_KIND_FILE) {
		build_flat_level(vm, t, node);
	} else if (kind == VM_KIND_FUNCTION) {
		build_flat_function(vm, t, node);
	}
	t->nodes[node].built = true;
}

/* ---- values ---- */

/* Exclusive values of the root function's code below each tip, per metric. */
static void compute_tipx(struct vm *vm, struct vtree *t, uint32_t root, const struct vsrc *src,
			 double *out)
{
	const struct vnode *r = &t->nodes[root];
	struct hmap tips = HMAP_INIT;
	for (uint32_t i = 0; i < r->ninst; i++)
		hmap_put(&tips, r->inst_b[i], i);
	double *row = xcalloc(2 * (size_t)vm->nm, sizeof(double));
	uint32_t f = r->function;
	for (uint32_t i = vm->fn_ctx_start[f]; i < vm->fn_ctx_start[f + 1]; i++) {
		uint32_t c = vm->fn_ctx[i];
		uint64_t tip;
		if (!hmap_get(&tips, vm->outer_inst[c], &tip))
			continue;
		memset(row, 0, 2 * (size_t)vm->nm * sizeof(double));
		src_add_row(vm, src, c, row, 2);
		for (uint32_t m = 0; m < vm->nm; m++)
			out[tip * vm->nm + m] += row[2 * m + 1];
	}
	free(row);
	hmap_release(&tips);
}

void tree_node_values(struct vm *vm, enum vm_view view, uint32_t node, const struct vsrc *src,
		      double *out)
{
	struct vtree *t = tree_of(vm, view);
	const struct vnode *n = &t->nodes[node];
	size_t w = 2 * (size_t)vm->nm;
	memset(out, 0, w * sizeof(double));
	if (n->kind == VM_KIND_ROOT) {
		src_add_row(vm, src, 0, out, 1);
		return;
	}
	if (is_grouped(n->kind)) {
		struct aggregates tmp = { 0 };
		bool groups = n->kind != VM_KIND_FUNCTION;
		const struct aggregates *a = &tmp;
		if (src == vm->cur) {
			a = current_aggregates(vm, groups);
		} else {
			aggregate_functions(vm, src, &tmp);
			if (groups)
				aggregate_groups(vm, src, &tmp);
		}
		const double *g = n->kind == VM_KIND_FILE ? a->grp : a->mod;
		if (n->kind == VM_KIND_FUNCTION)
			function_row(vm, a, n->function, out);
		else
			memcpy(out, g + (size_t)n->group * w, w * sizeof(double));
		free_aggregates(&tmp);
		return;
	}
	if (view == VM_BOTTOMUP) {
		/* A caller: the tips' inclusive values and the function's own code below them. */
		struct vnode *r = &t->nodes[n->root];
		const double *tipx;
		double *own = NULL;
		if (src == vm->cur) {
			if (r->tipx_gen != vm->vgen) {
				free(r->tipx);
				r->tipx = xcalloc((size_t)r->ninst * vm->nm + 1, sizeof(double));
				compute_tipx(vm, t, n->root, src, r->tipx);
				r = &t->nodes[n->root];
				r->tipx_gen = vm->vgen;
			}
			tipx = r->tipx;
		} else {
			own = xcalloc((size_t)r->ninst * vm->nm + 1, sizeof(double));
			compute_tipx(vm, t, n->root, src, own);
			tipx = own;
		}
		n = &t->nodes[node];
		r = &t->nodes[n->root];
		for (uint32_t i = 0; i < n->ninst; i++) {
			uint32_t tip = n->inst_a[i];
			src_add_row(vm, src, r->inst_b[tip], out, 1);
			for (uint32_t m = 0; m < vm->nm; m++)
				out[2 * m + 1] += tipx[(size_t)tip * vm->nm + m];
		}
		free(own);
		return;
	}
	for (uint32_t i = 0; i < n->ninst; i++)
		src_add_row(vm, src, n->inst_a[i], out, n->inst_b[i] ? 3 : 2);
}

double tree_node_value(struct vm *vm, enum vm_view view, uint32_t node, uint32_t metric,
		       bool inclusive)
{
	struct vtree *t = tree_of(vm, view);
	/* Aggregates are shared, not copied into every node (the bottom-up roots are many). */
	if (is_grouped(t->nodes[node].kind)) {
		bool groups = t->nodes[node].kind != VM_KIND_FUNCTION;
		return aggregate_value(vm, current_aggregates(vm, groups), &t->nodes[node], metric,
				       inclusive);
	}
	if (t->nodes[node].vals_gen != vm->vgen || !t->nodes[node].vals) {
		double *v = t->nodes[node].vals;
		if (!v)
			v = xmalloc(2 * ((size_t)vm->nm ? vm->nm : 1) * sizeof(double));
		tree_node_values(vm, view, node, vm->cur, v);
		t->nodes[node].vals = v;
		t->nodes[node].vals_gen = vm->vgen;
	}
	return t->nodes[node].vals[2 * metric + !inclusive];
}

uint32_t tree_function_of(struct vm *vm, enum vm_view view, vm_node node)
{
	struct vtree *t = tree_of(vm, view);
	if (node >= t->n)
		return DBFILE_NONE;
	const struct vnode *n = &t->nodes[node];
	if (view == VM_FLAT && n->root != VM_NONE && n->root < t->n)
		return t->nodes[n->root].function;
	return n->function;
}

void tree_release(struct vtree *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		struct vnode *n = &t->nodes[i];
		free(n->inst_a);
		free(n->inst_b);
		free(n->kids);
		free(n->vals);
		free(n->tipx);
		free(n->vis);
	}
	free(t->nodes);
	memset(t, 0, sizeof(*t));
	t->root = VM_NONE;
}
