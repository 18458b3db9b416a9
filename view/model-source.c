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

void model_add_source_path(struct model *model, const char *dir)
{
	model->src_dirs = xreallocarray(model->src_dirs, model->nsrc_dirs + 1, sizeof(char *));
	model->src_dirs[model->nsrc_dirs++] = xstrdup(dir);
}

static char *find_file(struct model *model, const char *recorded)
{
	if (access(recorded, R_OK) == 0)
		return xstrdup(recorded);
	for (uint32_t i = 0; i < model->nsrc_dirs; i++) {
		const char *tries[2] = { recorded, base_name(recorded) };
		for (int k = 0; k < 2; k++) {
			const char *rel = tries[k];
			while (*rel == '/')
				rel++;
			size_t n = strlen(model->src_dirs[i]) + strlen(rel) + 2;
			char *p = xmalloc(n);
			snprintf(p, n, "%s/%s", model->src_dirs[i], rel);
			if (access(p, R_OK) == 0)
				return p;
			free(p);
		}
	}
	return NULL;
}

void source_scope_add(struct source_scope *s, uint32_t ctx, const struct dbfile_context *x,
		      bool once)
{
	ALLOC_GROW(s->items, s->nitems + 1, s->aitems);
	s->items[s->nitems++] = (struct source_item){ ctx, once, x->kind, x->file, x->line,
						      x->parent };
}

struct loop {
	uint32_t header, end;
};

int model_source(struct model *model, enum model_view view, model_node node, uint32_t metric,
		 struct model_source *out)
{
	const struct dbfile *db = &model->db;
	memset(out, 0, sizeof(*out));
	struct source_scope scope = { DBFILE_NONE, DBFILE_NONE, 0, NULL, 0, 0 };
	struct dbfile_context c;
	if (ops_of(view)->source_scope(model, view, node, &scope) < 0) {
		free(scope.items);
		return -1;
	}
	uint32_t f = scope.function, file = scope.file, focus = scope.focus;
	if (file == DBFILE_NONE && f < db->nfunctions)
		file = db->functions[f].file;
	for (uint32_t i = 0; file == DBFILE_NONE && i < scope.nitems; i++)
		if (scope.items[i].kind == DBFILE_LINE)
			file = scope.items[i].file;
	if (model->error || file == DBFILE_NONE) {
		free(scope.items);
		return model->error ? fth_error("%s", model->error)
				 : fth_error("%s: no source file is known", fn_name(model, f));
	}
	/* Values per line and loop extents. */
	struct hmap lines = HMAP_INIT, loops = HMAP_INIT;
	double *vals = NULL;
	uint32_t *line_no = NULL, nl = 0, al = 0;
	struct loop *lv = NULL;
	uint32_t nloops = 0, aloops = 0;
	for (uint32_t i = 0; i < scope.nitems; i++) {
		const struct source_item *it = &scope.items[i];
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
		double v = it->once ? model_value(model, MODEL_TOPDOWN, it->ctx, metric, true) : 0;
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
	for (uint32_t i = 0; i < scope.nitems; i++) {
		const struct source_item *it = &scope.items[i];
		if (it->file != file || !it->line)
			continue;
		for (uint32_t p = it->parent; p && p != DBFILE_NONE && ctx_get(model, p, &c) &&
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
	qsort(all, nall, sizeof(uint32_t), model_cmp_u32);
	out->lines = xcalloc(nall ? nall : 1, sizeof(*out->lines));
	double best = -INFINITY;
	for (uint32_t i = 0; i < nall; i++) {
		struct model_source_line *sl = &out->lines[out->nlines++];
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
	out->path = find_file(model, out->recorded);
	free(all);
	free(vals);
	free(line_no);
	free(lv);
	free(scope.items);
	hmap_release(&lines);
	hmap_release(&loops);
	if (model->error) {
		model_source_release(out);
		return fth_error("%s", model->error);
	}
	return 0;
}

void model_source_release(struct model_source *s)
{
	free(s->path);
	free(s->recorded);
	free(s->lines);
	memset(s, 0, sizeof(*s));
}
