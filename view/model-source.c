/* SPDX-License-Identifier: MIT */
/*
 * model-source.c: the source of a node's scope: the file found (the recorded path, then each
 * --source-path directory with the path and with its base name), the value of a metric per
 * line within the scope, and the loops of the scope as line extents (header line to the last
 * line of anything in the loop) for the gutter.
 */
#include "compat.h"
#include "error.h"
#include "model-internal.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vm_add_source_path(struct vm *vm, const char *dir)
{
	vm->src_dirs = xreallocarray(vm->src_dirs, vm->nsrc_dirs + 1, sizeof(char *));
	vm->src_dirs[vm->nsrc_dirs++] = xstrdup(dir);
}

static char *find_file(struct vm *vm, const char *recorded)
{
	if (access(recorded, R_OK) == 0)
		return xstrdup(recorded);
	for (uint32_t i = 0; i < vm->nsrc_dirs; i++) {
		const char *tries[2] = { recorded, base_name(recorded) };
		for (int k = 0; k < 2; k++) {
			const char *rel = tries[k];
			while (*rel == '/')
				rel++;
			size_t n = strlen(vm->src_dirs[i]) + strlen(rel) + 2;
			char *p = xmalloc(n);
			snprintf(p, n, "%s/%s", vm->src_dirs[i], rel);
			if (access(p, R_OK) == 0)
				return p;
			free(p);
		}
	}
	return NULL;
}

struct item {
	uint32_t ctx;
	bool once; /* counts in inclusive sums (a path once) */
	uint8_t kind;
	uint32_t file, line, parent;
};

struct items {
	struct item *v;
	uint32_t n, cap;
};

static void items_push(struct items *s, uint32_t ctx, const struct dbfile_context *x, bool once)
{
	ALLOC_GROW(s->v, s->n + 1, s->cap);
	s->v[s->n++] = (struct item){ ctx, once, x->kind, x->file, x->line, x->parent };
}

/* The body of instance INST in the top-down tree: its loops, lines, call sites and inlined
 * calls, not what they call. */
static void collect_instance(struct vm *vm, uint32_t inst, struct items *out)
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
			items_push(out, x.first_child + i, &k, true);
			if (k.kind == DBFILE_LOOP) {
				ALLOC_GROW(stack, sp + 1, cap);
				stack[sp++] = x.first_child + i;
			}
		}
	}
	free(stack);
}

struct loop {
	uint32_t header, end;
};

static int u32_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int vm_source(struct vm *vm, enum vm_view view, vm_node node, uint32_t metric,
	      struct vm_source *out)
{
	const struct dbfile *db = &vm->db;
	memset(out, 0, sizeof(*out));
	struct items items = { 0 };
	struct dbfile_context c, x;
	uint32_t f = DBFILE_NONE, file = DBFILE_NONE, focus = 0;
	if (view == VM_TOPDOWN) {
		if (node >= db->ncontexts)
			return fth_error("no such node");
		if (!ctx_get(vm, node, &c))
			return fth_error("%s", vm->error);
		uint32_t inst = instance_at_or_above(vm, node);
		if (inst == DBFILE_NONE || !ctx_get(vm, inst, &x))
			return vm->error ? fth_error("%s", vm->error)
					 : fth_error("%s has no source: it is not in a function",
						     node ? "this scope" : "the program root");
		f = x.function;
		if (c.kind == DBFILE_LINE || c.kind == DBFILE_LOOP || c.kind == DBFILE_CALL) {
			file = c.file;
			focus = c.line;
		}
		collect_instance(vm, inst, &items);
	} else {
		f = tree_function_of(vm, view, node);
		if (f == DBFILE_NONE)
			return fth_error("this scope has no source: it is not a function or in one");
		const struct vnode *n = &tree_of(vm, view)->nodes[node];
		if (n->kind == VM_KIND_LINE || n->kind == VM_KIND_LOOP || n->kind == VM_KIND_CALL ||
		    n->kind == VM_KIND_CALLER) {
			file = n->file;
			focus = n->line;
		}
		if (n->kind == VM_KIND_CALLER)
			f = n->function;
		uint32_t *list, nl = ctx_list(vm, f, false, &list);
		for (uint32_t i = 0; i < nl && ctx_get(vm, list[i], &x); i++) {
			if (x.kind != DBFILE_LOOP && x.kind != DBFILE_LINE && x.kind != DBFILE_CALL)
				continue;
			uint32_t inst = instance_at_or_above(vm, list[i]);
			items_push(&items, list[i], &x,
				   x.kind == DBFILE_LINE || inst == DBFILE_NONE ||
					   (ctx_get(vm, inst, &c) && c.outer == inst));
		}
		free(list);
		nl = ctx_list(vm, f, true, &list);
		for (uint32_t i = 0; i < nl && ctx_get(vm, list[i], &x); i++) {
			uint32_t inst = instance_at_or_above(vm, x.parent);
			bool once = inst == DBFILE_NONE || (ctx_get(vm, inst, &c) && c.outer == inst);
			items_push(&items, list[i], &x, once);
		}
		free(list);
	}
	if (file == DBFILE_NONE && f < db->nfunctions)
		file = db->functions[f].file;
	for (uint32_t i = 0; file == DBFILE_NONE && i < items.n; i++)
		if (items.v[i].kind == DBFILE_LINE)
			file = items.v[i].file;
	if (vm->error || file == DBFILE_NONE) {
		free(items.v);
		return vm->error ? fth_error("%s", vm->error)
				 : fth_error("%s: no source file is known", fn_name(vm, f));
	}
	/* Values per line and loop extents. */
	struct hmap lines = HMAP_INIT, loops = HMAP_INIT;
	double *vals = NULL;
	uint32_t *line_no = NULL, nl = 0, al = 0;
	struct loop *lv = NULL;
	uint32_t nloops = 0, aloops = 0;
	for (uint32_t i = 0; i < items.n; i++) {
		const struct item *it = &items.v[i];
		if (it->file != file || !it->line)
			continue;
		if (it->kind == DBFILE_LOOP) {
			bool ins;
			hmap_upsert(&loops, it->line, nloops, &ins);
			if (ins) {
				ALLOC_GROW(lv, nloops + 1, aloops);
				lv[nloops++] = (struct loop){ it->line, it->line };
			}
			continue;
		}
		double v = it->once ? vm_value(vm, VM_TOPDOWN, it->ctx, metric, true) : 0;
		bool ins;
		uint64_t *at = hmap_upsert(&lines, it->line, nl, &ins);
		if (ins) {
			ALLOC_GROW(line_no, nl + 1, al);
			vals = xreallocarray(vals, al, sizeof(double));
			line_no[nl] = it->line;
			vals[nl++] = 0;
		}
		if (!isnan(v))
			vals[*at] += v;
	}
	/* Once every loop is known, each line extends the loops of its file around it. */
	for (uint32_t i = 0; i < items.n; i++) {
		const struct item *it = &items.v[i];
		if (it->file != file || !it->line)
			continue;
		for (uint32_t p = it->parent; p && p != DBFILE_NONE && ctx_get(vm, p, &c) &&
					     c.kind == DBFILE_LOOP;
		     p = c.parent) {
			uint64_t li;
			if (c.file == file && hmap_get(&loops, c.line, &li) &&
			    lv[li].end < it->line)
				lv[li].end = it->line;
		}
	}
	/* The lines that matter: with a value, or in a loop. */
	uint32_t *all = NULL, nall = 0, aall = 0;
	for (uint32_t i = 0; i < nl; i++) {
		ALLOC_GROW(all, nall + 1, aall);
		all[nall++] = line_no[i];
	}
	for (uint32_t l = 0; l < nloops; l++)
		for (uint32_t k = lv[l].header; k <= lv[l].end && k - lv[l].header < 100000; k++)
			if (!hmap_get(&lines, k, NULL)) {
				ALLOC_GROW(all, nall + 1, aall);
				all[nall++] = k;
				hmap_put(&lines, k, UINT32_MAX);
			}
	qsort(all, nall, sizeof(uint32_t), u32_cmp);
	out->lines = xcalloc(nall ? nall : 1, sizeof(*out->lines));
	double best = -INFINITY;
	for (uint32_t i = 0; i < nall; i++) {
		struct vm_source_line *sl = &out->lines[out->nlines++];
		sl->line = all[i];
		uint64_t at;
		sl->value = hmap_get(&lines, all[i], &at) && at != UINT32_MAX ? vals[at] : 0;
		for (uint32_t l = 0; l < nloops; l++) {
			if (all[i] >= lv[l].header && all[i] <= lv[l].end)
				sl->loop_depth++;
			if (all[i] == lv[l].header)
				sl->loop_header = true;
		}
		if (sl->value > best) {
			best = sl->value;
			if (!focus)
				out->focus = sl->line;
		}
	}
	if (focus)
		out->focus = focus;
	out->first = nall ? all[0] : 0;
	out->last = nall ? all[nall - 1] : 0;
	if (f < db->nfunctions && db->functions[f].file == file && db->functions[f].line &&
	    (!out->first || db->functions[f].line < out->first))
		out->first = db->functions[f].line;
	if (!out->focus)
		out->focus = out->first;
	out->recorded = xstrdup(dbfile_str(db, file));
	out->path = find_file(vm, out->recorded);
	free(all);
	free(vals);
	free(line_no);
	free(lv);
	free(items.v);
	hmap_release(&lines);
	hmap_release(&loops);
	if (vm->error) {
		vm_source_release(out);
		return fth_error("%s", vm->error);
	}
	return 0;
}

void vm_source_release(struct vm_source *s)
{
	free(s->path);
	free(s->recorded);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}
