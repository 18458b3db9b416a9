/* SPDX-License-Identifier: MIT */
/*
 * model.c: opening a database for view (compiled formulas), reader access that records
 * errors, metrics, values (summary sums or one thread's, derived metrics evaluated, the
 * top-down ones cached while shown), value marks, thread selection and per-thread values,
 * node descriptions and labels.
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "model-internal.h"
#include "model-trace.h"
#include "xalloc.h"

#include <libiberty/demangle.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* A C++ or Rust symbol as a person reads it (libiberty's demangler, as binutils uses), or
 * NULL when NAME is not a mangled name. */
static char *demangle_name(const char *name)
{
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI);
}

/* Whether module M of DB is the kernel (addresses are the kernel's own). */
bool module_is_kernel(const struct dbfile *db, uint32_t m)
{
	return m < db->nmodules && strcmp(dbfile_str(db, db->modules[m].path), MFILE_KERNEL_MODULE) == 0;
}

/* FUNCTION's name as shown: demangled unless asked not to; the kernel's as "[kernel] NAME";
 * a module's unknown code as "<unknown function> [MODULE]". */
static char *shown_name(const struct model *model, uint32_t function, const char *name)
{
	const struct dbfile *db = &model->db;
	uint32_t m = db->functions[function].module;
	char *d = model->raw_names ? NULL : demangle_name(name);
	const char *n = d ? d : name;
	struct buf b = BUF_INIT;
	if (module_is_kernel(db, m))
		buf_printf(&b, "[kernel] %s", n);
	else if (m < db->nmodules && !strcmp(name, DBFILE_UNKNOWN_FUNCTION))
		buf_printf(&b, "%s [%s]", n, base_name(dbfile_str(db, db->modules[m].path)));
	else
		return d;
	free(d);
	return (char *)b.data;
}

const char *model_function_name(void *model, uint32_t f)
{
	return fn_name(model, f);
}

const char *fn_name(const struct model *model, uint32_t function)
{
	if (function >= model->db.nfunctions)
		return "";
	const char *name = dbfile_str(&model->db, model->db.functions[function].name);
	if (!model->fn_tried)
		return name;
	if (!model->fn_tried[function]) {
		model->fn_tried[function] = true;
		model->fn_shown[function] = shown_name(model, function, name);
	}
	return model->fn_shown[function] ? model->fn_shown[function] : name;
}

void model_set_demangle(struct model *model, bool demangle_names)
{
	model->raw_names = !demangle_names;
	for (uint32_t f = 0; model->fn_shown && f < model->db.nfunctions; f++) {
		free(model->fn_shown[f]);
		model->fn_shown[f] = NULL;
		model->fn_tried[f] = false;
	}
	model->gen++;
}

/* ---- reader access ---- */

void model_fail(struct model *model)
{
	if (!model->error)
		model->error =
			xstrdup(fth_errmsg()[0] ? fth_errmsg() : "reading the database failed");
}

const char *model_error(const struct model *model)
{
	return model->error;
}

static void release_process(struct vsrc *p);

bool ctx_get(struct model *model, uint32_t ctx, struct dbfile_context *out)
{
	if (!model->error && dbfile_context(&model->db, ctx, out) == 0)
		return true;
	model_fail(model);
	memset(out, 0, sizeof(*out));
	out->parent = out->first_child = out->function = out->file = out->module = DBFILE_NONE;
	out->outer = DBFILE_NONE;
	out->kind = DBFILE_ROOT;
	return false;
}

bool model_context(struct model *model, uint32_t ctx, struct dbfile_context *out)
{
	return ctx < model->db.ncontexts && ctx_get(model, ctx, out);
}

bool row_get(struct model *model, const struct vsrc *src, uint32_t ctx, struct dbfile_row *out)
{
	if (src->nset && ctx < model->db.ncontexts) {
		uint32_t a = src->row_start[ctx];
		*out = (struct dbfile_row){ src->row_start[ctx + 1] - a, src->row_metric + a,
					    src->row_val + 2 * (size_t)a };
		return true;
	}
	if (!model->error &&
	    (src->thread < 0 ? dbfile_summary_row(&model->db, ctx, out)
			     : dbfile_thread_row(&model->db, (uint32_t)src->thread, ctx, out)) == 0)
		return true;
	model_fail(model);
	memset(out, 0, sizeof(*out));
	return false;
}

uint32_t ctx_list(struct model *model, uint32_t f, bool inlined, uint32_t **out)
{
	uint32_t n = 0;
	*out = NULL;
	if (f >= model->db.nfunctions)
		return 0;
	if (!model->error && (inlined ? dbfile_inlined_contexts(&model->db, f, out, &n)
				   : dbfile_function_contexts(&model->db, f, out, &n)) == 0)
		return n;
	model_fail(model);
	free(*out);
	*out = NULL;
	return 0;
}

/* ---- opening ---- */

struct cycle_check {
	struct model *model;
	uint8_t *state;
	bool cycle;
	bool multiplexed;
	int32_t sample;
};

static void visit_metric(void *vctx, uint32_t k);

static bool metric_multiplexed(const struct dbfile_metric *m)
{
	return (m->scale != 1 && !isnan(m->scale) && m->scale != 0) ||
	       m->time_running < m->time_enabled;
}

static void visit_metric(void *vctx, uint32_t k)
{
	struct cycle_check *c = vctx;
	const struct dbfile_metric *m = &c->model->db.metrics[k];
	if (c->state[k] == 1) {
		c->cycle = true;
		return;
	}
	if (c->state[k] == 2)
		return;
	if (m->kind != DBFILE_METRIC_DERIVED) {
		c->multiplexed |= metric_multiplexed(m);
		if (c->sample < 0)
			c->sample = (int32_t)k;
		return;
	}
	c->state[k] = 1;
	formula_refs(&c->model->formulas[k], visit_metric, c);
	c->state[k] = 2;
}

/*
 * The events of a top-down measurement are counted once per perf group and named so
 * ("cycles[R1]", "cycles[B1]"): each, scaled, estimates the whole run's count.  The first of
 * an event's copies is shown by the event's name ("cycles"), the others as
 * "cycles (group B1)", one key away from the default columns (GROUP_COPY).
 */
static void name_group_copies(struct model *model)
{
	struct dbfile *db = &model->db;
	bool tma = false;
	for (uint32_t k = 0; k < model->nm && !tma; k++)
		tma = model_metric_is_tma(model, k);
	model->group_copy = xcalloc(model->nm ? model->nm : 1, sizeof(bool));
	if (!tma)
		return;
	size_t *base = xcalloc(model->nm ? model->nm : 1, sizeof(*base));
	for (uint32_t k = 0; k < model->nm; k++) {
		const struct dbfile_metric *m = &db->metrics[k];
		const char *open = strrchr(m->name, '[');
		size_t len = strlen(m->name);
		if (m->kind == DBFILE_METRIC_RAW && open && open != m->name && m->name[len - 1] == ']')
			base[k] = (size_t)(open - m->name);
	}
	/* The primary copy of an event: its first sampled one (the default column), else its
	 * first. */
	for (uint32_t k = 0; k < model->nm; k++) {
		if (!base[k])
			continue;
		const struct dbfile_metric *m = &db->metrics[k];
		for (uint32_t j = 0; j < model->nm && !model->group_copy[k]; j++) {
			const struct dbfile_metric *o = &db->metrics[j];
			if (j == k || base[j] != base[k] || strncmp(o->name, m->name, base[k]) != 0)
				continue;
			bool o_sampled = !(o->flags & MFILE_METRIC_PROXY);
			bool k_sampled = !(m->flags & MFILE_METRIC_PROXY);
			/* J comes first: sampled before proxy, then in table order */
			if (o_sampled != k_sampled ? o_sampled : j < k)
				model->group_copy[k] = true;
		}
	}
	for (uint32_t k = 0; k < model->nm; k++) {
		if (!base[k])
			continue;
		struct dbfile_metric *m = &db->metrics[k];
		size_t len = strlen(m->name);
		struct buf b = BUF_INIT;
		buf_add(&b, m->name, base[k]);
		if (model->group_copy[k]) {
			buf_addstr(&b, " (group ");
			buf_add(&b, m->name + base[k] + 1, len - base[k] - 2);
			buf_addch(&b, ')');
		}
		free(m->name);
		m->name = buf_detach(&b, NULL);
	}
	free(base);
}

static int compile_formulas(struct model *model)
{
	struct dbfile *db = &model->db;
	model->formulas = xcalloc(model->nm ? model->nm : 1, sizeof(*model->formulas));
	model->multiplexed = xcalloc(model->nm ? model->nm : 1, sizeof(bool));
	model->sample_metric = xcalloc(model->nm ? model->nm : 1, sizeof(int32_t));
	model->tma = xcalloc(model->nm ? model->nm : 1, sizeof(bool));
	for (uint32_t k = 0; k < model->nm; k++) {
		int32_t parent = db->metrics[k].parent;
		if (parent >= 0) {
			model->tma[k] = true;
			if ((uint32_t)parent < model->nm)
				model->tma[parent] = true;
		}
	}
	for (uint32_t k = 0; k < model->nm; k++) {
		const struct dbfile_metric *m = &db->metrics[k];
		if (m->kind != DBFILE_METRIC_DERIVED)
			continue;
		if (formula_compile(m->formula ? m->formula : "", model->nm, &model->formulas[k]) <
		    0)
			return fth_error_prefix("%s: metric %s: malformed formula \"%s\"", db->dir,
						m->name, m->formula ? m->formula : "");
	}
	uint8_t *state = xcalloc(model->nm ? model->nm : 1, 1);
	for (uint32_t k = 0; k < model->nm; k++) {
		struct cycle_check c = { model, state, false, false, -1 };
		memset(state, 0, model->nm);
		visit_metric(&c, k);
		if (c.cycle) {
			free(state);
			return fth_error("%s: metric %s: its formula refers to itself", db->dir,
					 db->metrics[k].name);
		}
		model->multiplexed[k] = c.multiplexed;
		model->sample_metric[k] = c.sample;
	}
	free(state);
	return 0;
}

static struct model *open_model(const char *dir, bool whole)
{
	struct model *model = xcalloc(1, sizeof(*model));
	if ((whole ? dbfile_open_whole(dir, &model->db) : dbfile_open(dir, &model->db)) < 0) {
		free(model);
		return NULL;
	}
	model->nm = model->db.nmetrics;
	model->gen = model->vgen = 1;
	model->agg_gen = 0;
	if (compile_formulas(model) < 0) {
		model_close(model);
		return NULL;
	}
	name_group_copies(model);
	/* The functions that the bottom-up and flat views show. */
	uint32_t nf = model->db.nfunctions;
	model->fn_nonzero = xcalloc((size_t)nf + 1, sizeof(bool));
	model->fn_shown = xcalloc((size_t)nf + 1, sizeof(char *));
	model->fn_tried = xcalloc((size_t)nf + 1, sizeof(bool));
	for (uint32_t f = 0; f < nf && f < model->db.flat.nrows; f++)
		for (uint32_t j = model->db.flat.start[f]; j < model->db.flat.start[f + 1]; j++)
			if (model->db.flat.incl[j] != 0 || model->db.flat.excl[j] != 0)
				model->fn_nonzero[f] = true;
	hmap_init(&model->td_expanded);
	hmap_init(&model->td_vis);
	hmap_init(&model->vcache.slot);
	for (int v = 0; v < MODEL_NVIEWS; v++)
		hmap_init(&model->min_seen[v]);
	model->sum = (struct vsrc){ .thread = -1, .rank = -1 };
	model->thread_src = (struct vsrc){ .thread = -1, .rank = -1 };
	model->process_src = (struct vsrc){ .thread = -1, .rank = -1 };
	model->cur = &model->sum;
	model->bu.root = model->flat.root = MODEL_NONE;
	model->sort = (struct model_sort){ model_default_metric(model), true, true, false, false };
	buf_init(&model->label);
	model->scratch_vals = xcalloc(2 * (size_t)(model->nm ? model->nm : 1), sizeof(double));
	return model;
}

struct model *model_open(const char *dir)
{
	return open_model(dir, false);
}

struct model *model_open_whole(const char *dir)
{
	return open_model(dir, true);
}

int model_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

void model_close(struct model *model)
{
	if (!model)
		return;
	if (model->traces) {
		trace_model_close(model->traces);
		free(model->traces);
	}
	for (uint32_t k = 0; model->formulas && k < model->nm; k++)
		formula_release(&model->formulas[k]);
	free(model->formulas);
	free(model->multiplexed);
	free(model->tma);
	free(model->sample_metric);
	free(model->group_copy);
	release_process(&model->process_src);
	hmap_release(&model->td_expanded);
	for (uint32_t i = 0; i < model->nvis_cache; i++)
		free(model->vis_cache[i].kids);
	free(model->vis_cache);
	hmap_release(&model->td_vis);
	hmap_release(&model->vcache.slot);
	for (int v = 0; v < MODEL_NVIEWS; v++)
		hmap_release(&model->min_seen[v]);
	free(model->vcache.vals);
	free(model->fn_nonzero);
	for (uint32_t f = 0; model->fn_shown && f < model->db.nfunctions; f++)
		free(model->fn_shown[f]);
	free(model->fn_shown);
	free(model->fn_tried);
	free(model->error);
	tree_release_aggregates(model);
	tree_release(&model->bu);
	tree_release(&model->flat);
	for (int v = 0; v < MODEL_NVIEWS; v++) {
		free(model->vs[v].zoom);
		free(model->vs[v].rows);
		free(model->vs[v].row_depth);
	}
	for (uint32_t i = 0; i < model->nfilters; i++)
		free(model->filters[i].pattern);
	free(model->filters);
	for (uint32_t i = 0; i < model->nsrc_dirs; i++)
		free(model->src_dirs[i]);
	free(model->src_dirs);
	free(model->tma_rows);
	buf_release(&model->label);
	free(model->scratch_vals);
	free(model->sort_keys);
	free(model->caller_sites);
	model_compare_release(model->cmp);
	dbfile_close(&model->db);
	free(model);
}

void model_load_blocks(struct model *model)
{
	uint32_t t = model->cur->thread >= 0 ? (uint32_t)model->cur->thread : DBFILE_NONE;
	if (!model->error && dbfile_load_blocks(&model->db, t) < 0)
		model_fail(model);
	model->all_blocks = !model->error;
}

const struct dbfile *model_db(const struct model *model)
{
	return &model->db;
}

/* ---- metrics ---- */

uint32_t model_nmetrics(const struct model *model)
{
	return model->nm;
}

const struct dbfile_metric *model_metric(const struct model *model, uint32_t metric)
{
	return metric < model->nm ? &model->db.metrics[metric] : NULL;
}

static int metric_by_base_name(const struct model *model, const char *name);

int model_metric_by_name(const struct model *model, const char *name)
{
	int base = metric_by_base_name(model, name);
	if (base >= 0)
		return base;
	for (uint32_t k = 0; k < model->nm; k++)
		if (!strcmp(model->db.metrics[k].name, name))
			return (int)k;
	for (uint32_t k = 0; k < model->nm; k++)
		if (!strcasecmp(model->db.metrics[k].name, name))
			return (int)k;
	int found = -1;
	size_t len = strlen(name);
	for (uint32_t k = 0; k < model->nm && len; k++)
		if (!strncasecmp(model->db.metrics[k].name, name, len)) {
			if (found >= 0)
				return -1;
			found = (int)k;
		}
	return found;
}

bool model_metric_is_tma(const struct model *model, uint32_t metric)
{
	return metric < model->nm && model->tma[metric];
}

uint32_t model_default_metric(const struct model *model)
{
	/* A sampled metric first (not one read at another's samples: a TMA input). */
	for (int pass = 0; pass < 2; pass++)
		for (uint32_t k = 0; k < model->nm; k++) {
			const struct dbfile_metric *m = &model->db.metrics[k];
			if (m->kind == DBFILE_METRIC_RAW && !(m->flags & MFILE_METRIC_TMA) &&
			    !model_metric_is_tma(model, k) &&
			    (pass || !(m->flags & MFILE_METRIC_PROXY)))
				return k;
		}
	return 0;
}

/* Whether METRIC is an input of a TMA node's formula ("$METRIC" in it): shown in the pane. */
static bool tma_input(const struct model *model, uint32_t metric)
{
	for (uint32_t k = 0; k < model->nm; k++) {
		const struct dbfile_metric *m = &model->db.metrics[k];
		if (!m->formula || !m->formula[0] || !model_metric_is_tma(model, k))
			continue;
		uint32_t ref;
		const char *end;
		for (const char *p = formula_next_ref(m->formula, &ref, &end); p;
		     p = formula_next_ref(end, &ref, &end))
			if (ref == metric)
				return true;
	}
	return false;
}

static uint32_t compare_default_metrics(struct model *model, const uint32_t *one, uint32_t n,
					uint32_t *out, uint32_t max);

uint32_t model_default_metrics(struct model *model, uint32_t *out, uint32_t max)
{
	if (model->cmp) {
		/* What one database would show, each metric then widened to its group. */
		uint32_t one[256];
		struct model_compare *cmp = model->cmp;
		model->cmp = NULL;
		uint32_t n = model_default_metrics(model, one, 256);
		model->cmp = cmp;
		return compare_default_metrics(model, one, n, out, max);
	}
	uint32_t first = model_default_metric(model), n = 0;
	if (max && first < model->nm)
		out[n++] = first;
	for (uint32_t k = 0; k < model->nm && n < max; k++) {
		const struct dbfile_metric *m = &model->db.metrics[k];
		if (k == first || m->kind != DBFILE_METRIC_RAW || (m->flags & MFILE_METRIC_TMA) ||
		    model_metric_is_tma(model, k) || tma_input(model, k) || model->group_copy[k])
			continue;
		double total = model_total(model, k);
		if (total != 0 && !isnan(total))
			out[n++] = k;
	}
	return n;
}

/* ---- values ---- */

/* The slot of CTX's values (current source) in the cache, filled on first use. */
static const double *cached_row(struct model *model, uint32_t ctx)
{
	struct value_cache *c = &model->vcache;
	size_t w = 2 * (size_t)model->nm;
	uint64_t at;
	if (c->gen != model->vgen || c->n >= VALUE_CACHE_MAX) {
		hmap_release(&c->slot);
		hmap_init(&c->slot);
		c->n = 0;
		c->gen = model->vgen;
	}
	if (hmap_get(&c->slot, ctx, &at))
		return c->vals + at * w;
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->vals = xreallocarray(c->vals, (size_t)c->cap * w + 1, sizeof(double));
	}
	at = c->n++;
	double *v = c->vals + at * w;
	memset(v, 0, w * sizeof(double));
	src_add_row(model, model->cur, ctx, v, 3);
	hmap_put(&c->slot, ctx, at);
	return v;
}

double src_value(struct model *model, const struct vsrc *src, uint32_t ctx, uint32_t metric,
		 bool inclusive)
{
	if (ctx >= model->db.ncontexts)
		return NAN;
	if (src == model->cur)
		return model->error ? NAN : cached_row(model, ctx)[2 * (size_t)metric + !inclusive];
	struct dbfile_row r;
	if (!row_get(model, src, ctx, &r))
		return NAN;
	for (uint32_t j = 0; j < r.n; j++)
		if (r.metric[j] == metric)
			return r.val[2 * (size_t)j + !inclusive];
	return 0;
}

void src_add_row(struct model *model, const struct vsrc *src, uint32_t ctx, double *out,
		 unsigned which)
{
	struct dbfile_row r;
	if (!row_get(model, src, ctx, &r))
		return;
	for (uint32_t j = 0; j < r.n; j++) {
		uint32_t m = r.metric[j];
		if (m >= model->nm)
			continue;
		if (which & 1)
			out[2 * m] += r.val[2 * (size_t)j];
		if (which & 2)
			out[2 * m + 1] += r.val[2 * (size_t)j + 1];
	}
}

struct eval_args {
	struct model *model;
	enum model_view view;
	model_node node;
	bool inclusive;
	const struct vsrc *src;
};

static double eval_ref(void *vctx, uint32_t k)
{
	struct eval_args *a = vctx;
	return value_with(a->model, a->view, a->node, k, a->inclusive, a->src);
}

double value_with(struct model *model, enum model_view view, model_node node, uint32_t metric,
		  bool inclusive, const struct vsrc *src)
{
	if (metric >= model->nm || node == MODEL_NONE)
		return NAN;
	if (model->db.metrics[metric].kind == DBFILE_METRIC_DERIVED) {
		if (model->eval_depth > 64)
			return NAN;
		struct eval_args a = { model, view, node, inclusive, src };
		model->eval_depth++;
		double v = formula_eval(&model->formulas[metric], eval_ref, &a);
		model->eval_depth--;
		return v;
	}
	return ops_of(view)->value(model, view, node, metric, inclusive, src);
}

double model_value(struct model *model, enum model_view view, model_node node, uint32_t metric,
		   bool inclusive)
{
	return value_with(model, view, node, metric, inclusive, model->cur);
}

double model_total(struct model *model, uint32_t metric)
{
	return value_with(model, MODEL_TOPDOWN, 0, metric, true, model->cur);
}

unsigned model_value_marks(struct model *model, enum model_view view, model_node node,
			   uint32_t metric)
{
	if (metric >= model->nm)
		return 0;
	unsigned marks = model->multiplexed[metric] ? MODEL_MARK_MULTIPLEXED : 0;
	int32_t sm = model->sample_metric[metric];
	if (sm >= 0 && model->db.metrics[sm].samples > 0) {
		double total = model_total(model, (uint32_t)sm);
		double here = model_value(model, view, node, (uint32_t)sm, true);
		double samples = (double)model->db.metrics[sm].samples;
		if (model->cur->thread >= 0 && model->db.metrics[sm].nthreads)
			samples /= model->db.metrics[sm].nthreads;
		else if (model->cur->nset && model->db.metrics[sm].nthreads)
			samples = samples * model->cur->nset / model->db.metrics[sm].nthreads;
		if (total > 0 && here > 0 && samples * here / total < 10)
			marks |= MODEL_MARK_LOW_SAMPLES;
	}
	return marks;
}

/* ---- threads ---- */

/* Whether thread THREAD's values can be shown (else -1 with the reason). */
static int check_thread(struct model *model, uint32_t thread)
{
	const struct dbfile *db = &model->db;
	if (db->flags & DBFILE_FLAG_NO_THREADS)
		return fth_error("%s: the database has no per-thread values (prof --metric-db=summary)",
				 db->dir);
	if (thread >= db->nthreads)
		return fth_error("%s: no thread %u (the database has %u)", db->dir, thread,
				 db->nthreads);
	return 0;
}

static void release_process(struct vsrc *p)
{
	free(p->set);
	free(p->row_start);
	free(p->row_metric);
	free(p->row_val);
	*p = (struct vsrc){ .thread = -1, .rank = -1 };
}

struct set_value {
	uint32_t ctx;
	uint16_t metric;
	double incl, excl;
};

static int by_ctx_metric(const void *a, const void *b)
{
	const struct set_value *x = a, *y = b;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	return (x->metric > y->metric) - (x->metric < y->metric);
}

/* The sums of every context over the threads of P (P->set), into P's rows. */
static int read_process_rows(struct model *model, struct vsrc *p)
{
	struct dbfile_values v = { 0 };
	struct set_value *all = NULL;
	size_t n = 0, cap = 0;
	for (uint32_t i = 0; i < p->nset; i++) {
		if (dbfile_read_thread(&model->db, p->set[i], &v) < 0) {
			free(v.ctx), free(v.metric), free(v.incl), free(v.excl);
			free(all);
			return -1;
		}
		for (uint64_t k = 0; k < v.nvalues; k++) {
			if (v.ctx[k] >= model->db.ncontexts)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				all = xreallocarray(all, cap, sizeof(*all));
			}
			all[n++] = (struct set_value){ v.ctx[k], v.metric[k], v.incl[k], v.excl[k] };
		}
	}
	free(v.ctx), free(v.metric), free(v.incl), free(v.excl);
	qsort(all, n, sizeof(*all), by_ctx_metric);
	uint32_t nc = model->db.ncontexts;
	p->row_start = xcalloc((size_t)nc + 1, sizeof(*p->row_start));
	p->row_metric = xcalloc(n ? n : 1, sizeof(*p->row_metric));
	p->row_val = xcalloc(2 * (n ? n : 1), sizeof(*p->row_val));
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		if (m && p->row_metric[m - 1] == all[i].metric && all[i].ctx == all[i - 1].ctx) {
			p->row_val[2 * (m - 1)] += all[i].incl;
			p->row_val[2 * (m - 1) + 1] += all[i].excl;
			continue;
		}
		p->row_start[all[i].ctx + 1]++;
		p->row_metric[m] = all[i].metric;
		p->row_val[2 * m] = all[i].incl;
		p->row_val[2 * m + 1] = all[i].excl;
		m++;
	}
	for (uint32_t c = 0; c < nc; c++)
		p->row_start[c + 1] += p->row_start[c];
	free(all);
	return 0;
}

/* Show the sums over the threads of process PID, or of MPI rank RANK when RANK >= 0. */
static int select_thread_set(struct model *model, uint32_t pid, int32_t rank)
{
	const struct dbfile *db = &model->db;
	if (model->cur == &model->process_src && model->process_src.rank == rank &&
	    (rank >= 0 || model->process_src.pid == pid))
		return 0;
	if (model_select_thread(model, -1) < 0)
		return -1;
	struct vsrc p = { .thread = -1, .pid = rank >= 0 ? 0 : pid, .rank = rank };
	p.set = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*p.set));
	for (uint32_t t = 0; t < db->nthreads; t++)
		if (rank >= 0 ? db->threads[t].rank == rank : db->threads[t].pid == pid) {
			if (check_thread(model, t) < 0) {
				release_process(&p);
				return -1;
			}
			p.set[p.nset++] = t;
		}
	if (p.nset == 0) {
		release_process(&p);
		if (rank >= 0)
			return fth_error("%s: no MPI rank %d (the threads pane lists them)", db->dir,
					 rank);
		return fth_error("%s: no process %u (the threads pane lists them)", db->dir, pid);
	}
	if (read_process_rows(model, &p) < 0 || tree_load_aggregates(model, &p) < 0) {
		release_process(&p);
		return -1;
	}
	model->process_src = p;
	model->cur = &model->process_src;
	model->vgen++;
	nav_invalidate(model);
	return 0;
}

int model_select_process(struct model *model, uint32_t pid)
{
	return select_thread_set(model, pid, -1);
}

int model_select_rank(struct model *model, int32_t rank)
{
	if (rank < 0)
		return fth_error("rank %d: ranks are numbered from 0", rank);
	return select_thread_set(model, 0, rank);
}

int64_t model_selected_process(const struct model *model)
{
	return model->cur == &model->process_src && model->process_src.rank < 0
		       ? (int64_t)model->process_src.pid
		       : -1;
}

int32_t model_selected_rank(const struct model *model)
{
	return model->cur == &model->process_src ? model->process_src.rank : -1;
}

bool model_has_ranks(const struct model *model)
{
	const struct dbfile *db = &model->db;
	for (uint32_t t = 0; t < db->nthreads; t++)
		if (db->threads[t].rank >= 0)
			return true;
	return false;
}

int model_select_thread(struct model *model, int32_t thread)
{
	if (thread == model->cur->thread && model->cur != &model->process_src)
		return 0;
	tree_release_aggregates(model);
	model->cur = &model->sum;
	model->thread_src.thread = -1;
	release_process(&model->process_src);
	model->vgen++;
	nav_invalidate(model);
	if (thread < 0)
		return 0;
	if (check_thread(model, (uint32_t)thread) < 0)
		return -1;
	/* The thread's profiles now: a failure leaves the sums shown. */
	model->thread_src.thread = thread;
	if (tree_load_aggregates(model, &model->thread_src) < 0) {
		model->thread_src.thread = -1;
		return -1;
	}
	model->cur = &model->thread_src;
	return 0;
}

int model_stats(struct model *model, enum model_view view, model_node node, uint32_t metric,
		struct dbfile_stat *incl, struct dbfile_stat *excl)
{
	memset(incl, 0, sizeof(*incl));
	memset(excl, 0, sizeof(*excl));
	if (ops_of(view)->context_of(model, view, node) == DBFILE_NONE || metric >= model->nm)
		return fth_error("statistics over threads are kept for top-down contexts only");
	return dbfile_stats(&model->db, node, (uint16_t)metric, incl, excl);
}

int32_t model_selected_thread(const struct model *model)
{
	return model->cur->thread;
}

int model_thread_values(struct model *model, enum model_view view, model_node node, uint32_t metric,
			bool inclusive, double *out)
{
	/* Every other thread in turn: its rows of the node's contexts, its profiles. */
	for (uint32_t t = 0; t < model->db.nthreads; t++) {
		if ((int32_t)t == model->cur->thread) {
			out[t] = value_with(model, view, node, metric, inclusive, model->cur);
			continue;
		}
		if (check_thread(model, t) < 0)
			return -1;
		struct vsrc s = { .thread = (int32_t)t };
		out[t] = value_with(model, view, node, metric, inclusive, &s);
		if (model->error)
			return fth_error("%s", model->error);
	}
	return 0;
}

/* ---- nodes ---- */

uint32_t callee_of(struct model *model, const struct dbfile_context *x)
{
	struct dbfile_context k;
	/* A call site names its callee only when it has one (an indirect call may have many). */
	if (x->nchildren != 1 || !ctx_get(model, x->first_child, &k) || k.kind != DBFILE_FUNCTION)
		return DBFILE_NONE;
	return k.function;
}

void context_info(struct model *model, uint32_t ctx, const struct dbfile_context *c,
		  uint32_t callee, struct model_node_info *out)
{
	const struct dbfile *db = &model->db;
	memset(out, 0, sizeof(*out));
	out->parent = MODEL_NONE;
	out->name = "";
	out->kind = c->kind;
	if (c->kind == DBFILE_FUNCTION || c->kind == DBFILE_INLINE)
		out->name = fn_name(model, c->function);
	else if (c->kind == DBFILE_CALL)
		out->name = callee != DBFILE_NONE ? fn_name(model, callee) : "";
	else if (c->kind == DBFILE_ENTRY && c->line == DBFILE_ENTRY_PROGRAM &&
		 c->module != DBFILE_NONE && c->module < db->nmodules)
		out->name = dbfile_str(db, db->modules[c->module].path);
	out->file = c->file != DBFILE_NONE ? dbfile_str(db, c->file) : NULL;
	out->line = c->kind == DBFILE_ENTRY ? 0 : c->line;
	out->module = c->module != DBFILE_NONE && c->module < db->nmodules
			      ? dbfile_str(db, db->modules[c->module].path)
			      : NULL;
	out->addr = c->file == DBFILE_NONE ? c->addr : 0;
	out->context = ctx;
	out->has_children = c->nchildren > 0;
}

void model_node_info(struct model *model, enum model_view view, model_node node,
		     struct model_node_info *out)
{
	memset(out, 0, sizeof(*out));
	out->parent = MODEL_NONE;
	out->name = "";
	out->context = DBFILE_NONE;
	ops_of(view)->info(model, view, node, out);
}

static void add_file_line(struct buf *out, const char *file, uint32_t line)
{
	buf_addstr(out, file ? base_name(file) : "?");
	if (!line)
		return;
	/* ":LINE" without printf: batch output makes a label for every row */
	char tmp[16];
	size_t n = sizeof(tmp);
	do
		tmp[--n] = (char)('0' + line % 10);
	while (line /= 10);
	tmp[--n] = ':';
	buf_add(out, tmp + n, sizeof(tmp) - n);
}

/* Where a line or a call is: "file.c:12", else "libc.so.6+0x27304" ("[kernel] 0xffff..." in
 * the kernel, whose addresses are its own). */
static void add_place(struct buf *out, const struct model_node_info *in)
{
	if (in->file)
		add_file_line(out, in->file, in->line);
	else if (in->module && !strcmp(in->module, MFILE_KERNEL_MODULE))
		buf_printf(out, "0x%llx", (unsigned long long)in->addr);
	else
		buf_printf(out, "%s+0x%llx", in->module ? base_name(in->module) : "?",
			   (unsigned long long)in->addr);
}

void label_of_info(struct model *model, enum model_view view, model_node node, bool utf8,
		   struct buf *out)
{
	struct model_node_info in;
	model_node_info(model, view, node, &in);
	info_label(&in, 0, utf8, out);
}

void model_node_label(struct model *model, enum model_view view, model_node node, bool utf8,
		      struct buf *out)
{
	const struct tree_ops *ops = ops_of(view);
	if (ops->label)
		ops->label(model, view, node, utf8, out);
	else
		label_of_info(model, view, node, utf8, out);
}

void info_label(const struct model_node_info *info, uint32_t entry, bool utf8, struct buf *out)
{
	const struct model_node_info in = *info;
	const char *right = utf8 ? "\xc2\xbb" : ">>", *left = utf8 ? "\xc2\xab" : "<<";
	switch (in.kind) {
	case MODEL_KIND_ROOT:
		buf_addstr(out, "<program root>");
		break;
	case MODEL_KIND_ENTRY:
		if (entry == DBFILE_ENTRY_PROGRAM)
			buf_printf(out, "program %s", in.module ? base_name(in.module) : "?");
		else
			buf_addstr(out, entry == DBFILE_ENTRY_PARTIAL	  ? "<partial call paths>"
					: entry == DBFILE_ENTRY_SYNTHETIC ? "<synthetic>"
									  : "<thread root>");
		break;
	case MODEL_KIND_FUNCTION:
		buf_addstr(out, in.name[0] ? in.name : "<unknown function>");
		break;
	case MODEL_KIND_INLINE:
		buf_addstr(out, "inlined ");
		buf_addstr(out, in.name);
		buf_addstr(out, " at ");
		add_file_line(out, in.file, in.line);
		break;
	case MODEL_KIND_LOOP:
		buf_addstr(out, "loop at ");
		if (in.file)
			add_file_line(out, in.file, in.line);
		else
			buf_printf(out, "0x%llx", (unsigned long long)in.addr);
		break;
	case MODEL_KIND_LINE:
		add_place(out, &in);
		break;
	case MODEL_KIND_CALL:
		/* "matmul.c:14 » dgemm"; "call at pthread_create.c:442" when not one callee */
		if (!in.name[0])
			buf_addstr(out, "call at ");
		add_place(out, &in);
		if (in.name[0]) {
			buf_addch(out, ' ');
			buf_addstr(out, right);
			buf_addch(out, ' ');
			buf_addstr(out, in.name);
		}
		break;
	case MODEL_KIND_MODULE:
		buf_addstr(out, base_name(in.name));
		break;
	case MODEL_KIND_FILE:
		buf_addstr(out, in.name);
		break;
	case MODEL_KIND_CALLER:
		buf_addstr(out, left);
		buf_addch(out, ' ');
		buf_addstr(out, in.name[0] ? in.name : "<unknown function>");
		if (in.file) {
			buf_addstr(out, " at ");
			add_file_line(out, in.file, in.line);
		}
		break;
	default:
		buf_addstr(out, "?");
	}
}

/* ---- comparing two runs ---- */

void model_set_comparison(struct model *model, struct model_compare *cmp)
{
	model_compare_release(model->cmp);
	model->cmp = cmp;
	/* The changes named after their run's metrics as the model names them (an event of one
	 * perf group loses its "[T1]", name_group_copies). */
	for (uint32_t k = 0; k < model->nm; k++) {
		const struct model_compare_metric *c = &cmp->metrics[k];
		if (c->role != MODEL_ROLE_DELTA && c->role != MODEL_ROLE_RATIO)
			continue;
		struct dbfile_metric *m = &model->db.metrics[k];
		struct buf b = BUF_INIT;
		buf_addstr(&b, c->role == MODEL_ROLE_DELTA ? "B-A:" : "B/A:");
		buf_addstr(&b, model_metric_base_name(model, c->a));
		buf_addch(&b, '\0');
		free(m->name);
		m->name = buf_detach(&b, NULL);
	}
	/* The default order: the largest change of the first metric measured in both runs. */
	for (uint32_t k = 0; k < model->nm; k++)
		if (cmp->metrics[k].role == MODEL_ROLE_DELTA) {
			model->sort = (struct model_sort){ k, true, true, false, true };
			break;
		}
	model->gen++;
}

const struct model_compare *model_comparison(const struct model *model)
{
	return model->cmp;
}

enum model_role model_metric_role(const struct model *model, uint32_t metric)
{
	return model->cmp && metric < model->nm ? model->cmp->metrics[metric].role
						: MODEL_ROLE_NONE;
}

const char *model_metric_base_name(const struct model *model, uint32_t metric)
{
	if (metric >= model->nm)
		return "";
	const char *name = model->db.metrics[metric].name, *colon = strchr(name, ':');
	return model->cmp && colon ? colon + 1 : name;
}

static int metric_by_base_name(const struct model *model, const char *name)
{
	for (uint32_t k = 0; model->cmp && k < model->nm; k++) {
		enum model_role r = model->cmp->metrics[k].role;
		if ((r == MODEL_ROLE_A || r == MODEL_ROLE_ONLY) &&
		    !strcasecmp(model_metric_base_name(model, k), name))
			return (int)k;
	}
	return -1;
}

/* The columns of a comparison: for each metric ONE would show, its group (A, B, B - A,
 * B / A), or itself when one run measured it. */
static uint32_t compare_default_metrics(struct model *model, const uint32_t *one, uint32_t n,
					uint32_t *out, uint32_t max)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct model_compare_metric *c = &model->cmp->metrics[one[i]];
		if (c->role == MODEL_ROLE_ONLY) {
			if (k < max)
				out[k++] = one[i];
			continue;
		}
		bool seen = false;
		for (uint32_t j = 0; j < k; j++)
			seen |= out[j] == c->a;
		if (seen || c->delta == DBFILE_NONE)
			continue;
		const uint32_t group[4] = { c->a, c->b, c->delta, c->ratio };
		for (int g = 0; g < 4 && k < max; g++)
			out[k++] = group[g];
	}
	return k;
}

unsigned model_node_runs(struct model *model, enum model_view view, model_node node)
{
	if (!model->cmp)
		return 3;
	unsigned runs = 0;
	for (uint32_t k = 0; k < model->nm && runs != 3; k++) {
		const struct model_compare_metric *c = &model->cmp->metrics[k];
		if (model->db.metrics[k].kind != DBFILE_METRIC_RAW || (runs & c->run))
			continue;
		double v = model_value(model, view, node, k, true);
		if (v != 0 && !isnan(v))
			runs |= c->run;
	}
	return runs;
}

int model_open_threads(struct model *model)
{
	return dbfile_open_threads(&model->db);
}
