/* SPDX-License-Identifier: MIT */
/*
 * model-trace.c: the trace timeline's model (model-trace.h).  A row is drawn from the level of
 * the thread's trace whose units are a small fraction of a bin (a unit that straddles bins is
 * read again one level down), each unit's samples credited to the scope at the depth of each
 * context it kept.  An empty bin between two samples is the earlier one's scope when the gap
 * between them is one a running thread has (at most GAP_RUNNING sampling periods), and idle
 * when it is longer: the thread slept, blocked, waited or was not scheduled.
 */
#include "compat.h"
#include "model-trace.h"
#include "model-internal.h"
#include "error.h"
#include "mfile.h"
#include "search.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define SCOPE_UNSET (DBFILE_NONE - 1)
#define SLOTS 8 /* scopes a bin of a row keeps */
#define SUMMARY_SLOTS 24
/* A gap between two samples longer than this many sampling periods (or, where the period is
 * not a time, median intervals) is a thread that was not running. */
#define GAP_RUNNING 4

/* The row last made of each thread, for the same window, bins and depth. */
struct trace_row_cache {
	uint64_t t0, t1;
	uint32_t nbins, depth;
	struct trace_cell *cells;
};

static bool is_function(uint8_t kind)
{
	return kind == DBFILE_FUNCTION || kind == DBFILE_INLINE;
}

/* The function (FUNCTION or INLINE) contexts from CTX up to the root: how many, and the one
 * SKIP of them above the innermost (DBFILE_NONE when there are not so many). */
static uint32_t path_functions(struct trace_model *m, uint32_t ctx, uint64_t skip,
			       uint32_t *found)
{
	uint32_t n = 0;
	*found = DBFILE_NONE;
	for (uint32_t c = ctx; c != DBFILE_NONE;) {
		struct dbfile_context x;
		if (dbfile_context(m->db, c, &x) < 0)
			break;
		if (is_function(x.kind) && n++ == skip)
			*found = c;
		c = x.parent;
	}
	return n;
}

uint32_t trace_model_scope(struct trace_model *m, uint32_t ctx)
{
	if (ctx >= m->db->ncontexts)
		return DBFILE_NONE;
	if (m->scope_of[ctx] != SCOPE_UNSET)
		return m->scope_of[ctx];
	/* Depth 0 is the outermost function: count the path's functions, then take the one at
	 * the depth (the innermost when the path is shorter). */
	uint32_t scope, len = path_functions(m, ctx, UINT64_MAX, &scope);
	if (len) {
		uint32_t d = m->depth < len ? m->depth : len - 1;
		path_functions(m, ctx, len - 1 - d, &scope);
		if (len - 1 > m->max_depth)
			m->max_depth = len - 1;
	}
	m->scope_of[ctx] = scope;
	return scope;
}

void trace_model_set_depth(struct trace_model *m, uint32_t depth)
{
	if (depth == m->depth)
		return;
	m->depth = depth;
	for (uint32_t i = 0; i < m->db->ncontexts; i++)
		m->scope_of[i] = SCOPE_UNSET;
}

struct intervals {
	uint64_t *v;
	size_t n, cap;
};

static int add_interval(void *ctx, const struct dbtrace_unit *u)
{
	struct intervals *iv = ctx;
	if (u->n > 1) {
		ALLOC_GROW(iv->v, iv->n + 1, iv->cap);
		iv->v[iv->n++] = (u->t_hi - u->t_lo) / (u->n - 1);
	}
	return 0;
}

/*
 * The sampling period in ns of the time a thread runs, when the samples come from a clock of it
 * (task-clock, cpu-clock, CPUTIME, REALTIME: a time unit and a period or a frequency), else 0.
 * Two samples of a thread that was running all along are about one period apart.
 */
static uint64_t time_period(const struct dbfile *db)
{
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		const struct dbfile_metric *x = &db->metrics[i];
		if (x->unit != MFILE_UNIT_NANOSECONDS || !x->samples || !x->rate)
			continue;
		if (x->rate_kind == MFILE_RATE_FREQUENCY)
			return 1000000000ull / x->rate;
		if (x->rate_kind == MFILE_RATE_PERIOD) /* the timers count microseconds */
			return !strcmp(x->name, "CPUTIME") || !strcmp(x->name, "REALTIME")
				       ? x->rate * 1000
				       : x->rate;
	}
	return 0;
}

/* The longest gap between two samples of traced thread T while it runs: GAP_RUNNING sampling
 * periods when the samples come from a clock of the thread (time_period), else GAP_RUNNING
 * times the median interval between its samples over its level-1 units. */
static uint64_t hold_of(struct trace_model *m, const struct dbtrace_thread *t)
{
	uint64_t period = time_period(m->db);
	if (period)
		return period * GAP_RUNNING;
	struct intervals iv = { 0 };
	if (t->nlevels > 1)
		dbtrace_scan(&m->tr, t->thread, 1, 0, UINT64_MAX, add_interval, &iv);
	uint64_t typical = t->nrecords > 1 ? (t->t_last - t->t_first) / (t->nrecords - 1) : 0;
	if (iv.n) {
		qsort(iv.v, iv.n, sizeof(*iv.v), fth_cmp_u64);
		typical = iv.v[iv.n / 2];
	}
	free(iv.v);
	uint64_t hold = typical * GAP_RUNNING * 2;
	return hold < 1000 ? 1000 : hold;
}

int trace_model_open(struct trace_model *m, struct dbfile *db, const char *dir)
{
	memset(m, 0, sizeof(*m));
	m->db = db;
	int rc = dbtrace_open(&m->tr, dir, db->ncontexts, db->nthreads);
	if (rc != 0)
		return rc;
	m->scope_of = xmalloc((db->ncontexts ? db->ncontexts : 1) * sizeof(*m->scope_of));
	for (uint32_t i = 0; i < db->ncontexts; i++)
		m->scope_of[i] = SCOPE_UNSET;
	m->hold = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*m->hold));
	m->rows = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*m->rows));
	/* From the first traced thread's start to the last one's end (or last sample). */
	m->t_begin = UINT64_MAX;
	for (uint32_t i = 0; i < db->nthreads; i++) {
		const struct dbtrace_thread *t = dbtrace_thread(&m->tr, i);
		if (!t)
			continue;
		const struct dbfile_thread *th = &db->threads[i];
		uint64_t end = th->start_ns + t->t_last;
		if (th->end_ns > end)
			end = th->end_ns;
		if (th->start_ns < m->t_begin)
			m->t_begin = th->start_ns;
		if (end > m->t_end)
			m->t_end = end;
		m->hold[i] = t->nrecords ? hold_of(m, t) : 0;
		m->ntraced++;
	}
	if (m->t_end <= m->t_begin)
		m->t_end = m->t_begin + 1;
	return 0;
}

void trace_model_close(struct trace_model *m)
{
	dbtrace_close(&m->tr);
	free(m->scope_of);
	free(m->hold);
	for (uint32_t i = 0; m->rows && i < m->db->nthreads; i++)
		free(m->rows[i].cells);
	free(m->rows);
	memset(m, 0, sizeof(*m));
}

struct straddler;

/* A bin being filled: the scopes credited in it with their samples, and its last sample. */
struct slot {
	uint32_t scope;
	double weight;
};

struct bins {
	struct trace_model *m;
	uint64_t t0, span; /* the window, absolute */
	uint64_t base;	   /* the thread's start: a unit's times are after it */
	uint32_t nbins, nslots;
	struct slot *slot; /* nbins × nslots */
	double *total;
	uint64_t *last;	 /* per bin: the time of its last sample + 1, or 0 */
	uint64_t *first; /* per bin: the time of its first sample, or UINT64_MAX */
	uint32_t *last_scope;
	uint32_t level;
	uint64_t bin_width;
	uint64_t lo, hi; /* only units inside these times: a straddling unit read again */
	struct straddler *todo;
	size_t ntodo, atodo;
};

static uint64_t bin_start(const struct bins *b, uint32_t i)
{
	return b->t0 + (uint64_t)((unsigned __int128)i * b->span / b->nbins);
}

static uint32_t bin_of(const struct bins *b, uint64_t t)
{
	if (t < b->t0)
		return 0;
	unsigned __int128 k = (unsigned __int128)(t - b->t0) * b->nbins / b->span;
	return k >= b->nbins ? b->nbins - 1 : (uint32_t)k;
}

static void credit(struct bins *b, uint32_t bin, uint32_t scope, double w)
{
	struct slot *s = &b->slot[(size_t)bin * b->nslots];
	uint32_t least = 0;
	for (uint32_t i = 0; i < b->nslots; i++) {
		if (s[i].weight > 0 && s[i].scope == scope) {
			s[i].weight += w;
			return;
		}
		if (s[i].weight < s[least].weight)
			least = i;
	}
	if (s[least].weight < w)
		s[least] = (struct slot){ scope, w };
}

/* A unit that straddles bins, to be read again one level down. */
struct straddler {
	uint32_t level;
	uint64_t lo, hi;
};

/* Credit fraction F of unit U's samples to BIN, its samples there spanning LO .. HI. */
static void credit_unit(struct bins *b, const struct dbtrace_unit *u, uint32_t bin, double f,
			uint64_t lo, uint64_t hi)
{
	for (uint32_t k = 0; k < u->k; k++)
		credit(b, bin, trace_model_scope(b->m, u->context[k]), u->count[k] * f);
	b->total[bin] += u->n * f;
	if (hi + 1 > b->last[bin]) {
		b->last[bin] = hi + 1;
		b->last_scope[bin] = trace_model_scope(b->m, u->context[0]);
	}
	if (lo < b->first[bin])
		b->first[bin] = lo;
}

static int take_unit(void *ctx, const struct dbtrace_unit *u)
{
	struct bins *b = ctx;
	uint64_t lo = b->base + u->t_lo, hi = b->base + u->t_hi;
	if (hi < b->t0 || lo >= b->t0 + b->span)
		return 0;
	if (u->t_lo < b->lo || u->t_hi > b->hi)
		return 0; /* a neighbour of the unit being read again */
	uint32_t first = bin_of(b, lo), last = bin_of(b, hi);
	if (first == last || hi == lo) {
		credit_unit(b, u, first, 1, lo, hi);
	} else if (last == first + 1 || b->level == 0) {
		/* Across one boundary: shared by time, as if its samples were evenly spread. */
		uint64_t edge = bin_start(b, last);
		double f = (double)(edge - lo) / (double)(hi - lo);
		credit_unit(b, u, first, f, lo, edge - 1);
		credit_unit(b, u, last, 1 - f, edge, hi);
	} else {
		/* Across whole bins (a gap inside it, or bins finer than its span): its own
		 * units, one level down, fall where they are. */
		ALLOC_GROW(b->todo, b->ntodo + 1, b->atodo);
		b->todo[b->ntodo++] = (struct straddler){ b->level - 1, u->t_lo, u->t_hi };
	}
	return 0;
}

/* The coarsest level whose units hold no more samples than a bin, on average (a unit across a
 * bin's edge is shared by time). */
static uint32_t level_for(const struct dbtrace_thread *t, uint64_t bin_width)
{
	uint64_t span = t->t_last - t->t_first + 1;
	double per_bin = (double)t->nrecords * (double)bin_width / (double)span;
	uint32_t level = 0;
	for (uint32_t l = 1; l < t->nlevels; l++)
		if ((double)t->level[l].records_per_unit <= per_bin)
			level = l;
	return level;
}

/* Credit traced thread T's samples (it started at START) in the bins of B. */
static int fill_bins(struct bins *b, const struct dbtrace_thread *t, uint64_t start)
{
	b->ntodo = 0;
	b->lo = 0;
	b->hi = UINT64_MAX;
	b->base = start;
	b->level = level_for(t, b->bin_width);
	uint64_t end = b->t0 + b->span - 1;
	if (end < start)
		return 0;
	uint64_t a = b->t0 > start ? b->t0 - start : 0;
	if (dbtrace_scan(&b->m->tr, t->thread, b->level, a, end - start, take_unit, b) < 0)
		return -1;
	while (b->ntodo) {
		struct straddler st = b->todo[--b->ntodo];
		b->level = st.level;
		b->lo = st.lo;
		b->hi = st.hi;
		if (dbtrace_scan(&b->m->tr, t->thread, st.level, st.lo, st.hi, take_unit, b) < 0)
			return -1;
	}
	return 0;
}

static void bins_init(struct bins *b, struct trace_model *m, uint64_t t0, uint64_t span,
		      uint32_t nbins, uint32_t nslots)
{
	memset(b, 0, sizeof(*b));
	b->m = m;
	b->t0 = t0;
	b->span = span ? span : 1;
	b->nbins = nbins;
	b->nslots = nslots;
	b->bin_width = b->span / nbins ? b->span / nbins : 1;
	b->slot = xcalloc((size_t)nbins * nslots, sizeof(*b->slot));
	b->total = xcalloc(nbins, sizeof(*b->total));
	b->last = xcalloc(nbins, sizeof(*b->last));
	b->first = xmalloc(nbins * sizeof(*b->first));
	for (uint32_t i = 0; i < nbins; i++)
		b->first[i] = UINT64_MAX;
	b->last_scope = xcalloc(nbins, sizeof(*b->last_scope));
}

static void bins_release(struct bins *b)
{
	free(b->slot);
	free(b->total);
	free(b->last);
	free(b->first);
	free(b->last_scope);
	free(b->todo);
}

/* The scope that took most of bin I (DBFILE_NONE: nothing there). */
static uint32_t bin_scope(const struct bins *b, uint32_t i)
{
	const struct slot *s = &b->slot[(size_t)i * b->nslots];
	uint32_t best = DBFILE_NONE;
	double w = 0;
	for (uint32_t k = 0; k < b->nslots; k++)
		if (s[k].weight > w || (s[k].weight == w && w > 0 && s[k].scope < best)) {
			w = s[k].weight;
			best = s[k].scope;
		}
	return w > 0 ? best : DBFILE_NONE;
}

static int make_row(struct trace_model *m, uint32_t thread, uint64_t t0, uint64_t t1,
		    uint32_t nbins, struct trace_cell *out);

int trace_model_row(struct trace_model *m, uint32_t thread, uint64_t t0, uint64_t t1,
		    uint32_t nbins, struct trace_cell *out)
{
	if (!m->rows)
		return make_row(m, thread, t0, t1, nbins, out);
	struct trace_row_cache *c = &m->rows[thread];
	if (c->cells && c->t0 == t0 && c->t1 == t1 && c->nbins == nbins && c->depth == m->depth) {
		memcpy(out, c->cells, nbins * sizeof(*out));
		return 0;
	}
	int rc = make_row(m, thread, t0, t1, nbins, out);
	if (rc == 0) {
		if (c->nbins != nbins || !c->cells) {
			free(c->cells);
			c->cells = xmalloc(nbins * sizeof(*c->cells));
		}
		memcpy(c->cells, out, nbins * sizeof(*out));
		*c = (struct trace_row_cache){ t0, t1, nbins, m->depth, c->cells };
	}
	return rc;
}

static int make_row(struct trace_model *m, uint32_t thread, uint64_t t0, uint64_t t1,
		    uint32_t nbins, struct trace_cell *out)
{
	memset(out, 0, nbins * sizeof(*out));
	if (!nbins || t1 <= t0)
		return 0;
	const struct dbfile_thread *th = &m->db->threads[thread];
	const struct dbtrace_thread *t = m->scope_of ? dbtrace_thread(&m->tr, thread) : NULL;
	struct bins b;
	bins_init(&b, m, t0, t1 - t0, nbins, SLOTS);
	for (uint32_t i = 0; i < nbins; i++) {
		uint64_t mid = bin_start(&b, i) + b.bin_width / 2;
		out[i].kind = mid < th->start_ns		 ? TRACE_UNBORN
			      : th->end_ns && mid > th->end_ns ? TRACE_ENDED
			      : t			 ? TRACE_IDLE
							 : TRACE_UNTRACED;
		out[i].scope = DBFILE_NONE;
	}
	int rc = t ? fill_bins(&b, t, th->start_ns) : 0;
	/* The next sample after each bin (the thread's end after its last one). */
	uint64_t *next = xmalloc(nbins * sizeof(*next));
	uint64_t after = th->end_ns ? th->end_ns : UINT64_MAX;
	for (uint32_t i = nbins; i-- > 0;) {
		next[i] = after;
		if (b.first[i] != UINT64_MAX)
			after = b.first[i];
	}
	uint64_t last = 0;
	uint32_t last_scope = DBFILE_NONE;
	for (uint32_t i = 0; t && rc == 0 && i < nbins; i++) {
		struct trace_cell *c = &out[i];
		uint32_t scope = bin_scope(&b, i);
		if (scope != DBFILE_NONE) {
			c->kind = TRACE_WORK;
			c->scope = scope;
			c->samples = (uint32_t)(b.total[i] + 0.5);
		} else if (c->kind == TRACE_IDLE && last && last_scope != DBFILE_NONE &&
			   next[i] - (last - 1) <= m->hold[thread]) {
			c->kind = TRACE_WORK; /* between two samples of a running thread */
			c->scope = last_scope;
		}
		if (b.last[i]) {
			last = b.last[i];
			last_scope = b.last_scope[i];
		}
	}
	free(next);
	bins_release(&b);
	return rc;
}

static int cmp_share(const void *a, const void *b)
{
	const struct trace_share *x = a, *y = b;
	return x->share < y->share ? 1 : x->share > y->share ? -1 : (x->scope > y->scope) - (x->scope < y->scope);
}

int trace_model_summary(struct trace_model *m, uint64_t t0, uint64_t t1, uint32_t nbins,
			uint32_t maxk, struct trace_share *out, uint32_t *nout)
{
	return trace_model_summary_of(m, t0, t1, nbins, maxk, out, nout, NULL);
}

int trace_model_summary_of(struct trace_model *m, uint64_t t0, uint64_t t1, uint32_t nbins,
			   uint32_t maxk, struct trace_share *out, uint32_t *nout,
			   const bool *include)
{
	memset(nout, 0, nbins * sizeof(*nout));
	if (!nbins || t1 <= t0 || !m->scope_of)
		return 0;
	/* Each thread's row, a thread a vote per bin: the share of the threads alive there. */
	struct bins sum;
	bins_init(&sum, m, t0, t1 - t0, nbins, SUMMARY_SLOTS);
	struct trace_cell *row = xcalloc(nbins, sizeof(*row));
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < m->db->nthreads; i++) {
		if (!dbtrace_thread(&m->tr, i) || (include && !include[i]))
			continue;
		rc = trace_model_row(m, i, t0, t1, nbins, row);
		for (uint32_t k = 0; rc == 0 && k < nbins; k++) {
			if (row[k].kind == TRACE_WORK)
				credit(&sum, k, row[k].scope, 1);
			if (row[k].kind == TRACE_WORK || row[k].kind == TRACE_IDLE)
				sum.total[k] += 1;
		}
	}
	free(row);
	for (uint32_t k = 0; rc == 0 && k < nbins; k++) {
		struct trace_share *o = &out[(size_t)k * maxk];
		struct trace_share all[SUMMARY_SLOTS];
		uint32_t n = 0;
		for (uint32_t j = 0; j < SUMMARY_SLOTS; j++) {
			const struct slot *sl = &sum.slot[(size_t)k * SUMMARY_SLOTS + j];
			if (sl->weight > 0 && sum.total[k] > 0)
				all[n++] = (struct trace_share){ sl->scope, sl->weight / sum.total[k] };
		}
		qsort(all, n, sizeof(*all), cmp_share);
		nout[k] = n < maxk ? n : maxk;
		memcpy(o, all, nout[k] * sizeof(*o));
	}
	bins_release(&sum);
	return rc;
}

struct nearest {
	uint64_t t, best_dist, when;
	uint32_t ctx;
	bool found;
};

static int take_nearest(void *ctx, const struct dbtrace_unit *u)
{
	struct nearest *n = ctx;
	uint64_t d = u->t_lo > n->t ? u->t_lo - n->t : n->t - u->t_lo;
	/* The sample that stands at T: the last one at or before it, else the next. */
	if (!n->found || (u->t_lo <= n->t) || d < n->best_dist) {
		if (n->found && u->t_lo > n->t && n->when <= n->t)
			return 1;
		n->found = true;
		n->best_dist = d;
		n->when = u->t_lo;
		n->ctx = u->context[0];
	}
	return u->t_lo > n->t ? 1 : 0;
}

int trace_model_sample_at(struct trace_model *m, uint32_t thread, uint64_t t, uint32_t *ctx,
			  uint64_t *when)
{
	const struct dbtrace_thread *tt = m->scope_of ? dbtrace_thread(&m->tr, thread) : NULL;
	uint64_t start = m->db->threads[thread].start_ns;
	if (!tt || t < start)
		return 1;
	uint64_t rel = t - start, hold = m->hold[thread];
	struct nearest n = { .t = rel };
	if (dbtrace_scan(&m->tr, thread, 0, rel > hold ? rel - hold : 0, rel + hold, take_nearest,
			 &n) < 0)
		return -1;
	if (!n.found || n.best_dist > hold)
		return 1;
	*ctx = n.ctx;
	*when = start + n.when;
	return 0;
}

int model_traces(struct model *model, struct trace_model **out)
{
	*out = model->traces;
	if (model->traces_state == 2)
		return 0;
	if (model->traces_state)
		return model->traces_state > 0 ? 1 : fth_error("%s", model->error ? model->error : "traces");
	struct trace_model *m = xcalloc(1, sizeof(*m));
	int rc = trace_model_open(m, &model->db, model->db.dir);
	if (rc != 0) {
		free(m);
		model->traces_state = rc;
		return rc;
	}
	model->traces = *out = m;
	model->traces_state = 2;
	return 0;
}

/* Whether thread rows at DEPTH show more than one scope in [T0, T1). */
static bool depth_varies(struct trace_model *m, uint64_t t0, uint64_t t1)
{
	enum { PROBE_BINS = 64 };
	struct trace_cell cells[PROBE_BINS];
	for (uint32_t i = 0; i < m->db->nthreads; i++) {
		if (!dbtrace_thread(&m->tr, i) || trace_model_row(m, i, t0, t1, PROBE_BINS, cells) < 0)
			continue;
		uint32_t first = DBFILE_NONE;
		for (uint32_t k = 0; k < PROBE_BINS; k++)
			if (cells[k].kind == TRACE_WORK) {
				if (first == DBFILE_NONE)
					first = cells[k].scope;
				else if (cells[k].scope != first)
					return true;
			}
	}
	return false;
}

uint32_t trace_model_default_depth(struct trace_model *m, uint64_t t0, uint64_t t1)
{
	uint32_t saved = m->depth;
	for (uint32_t d = 0; d < 32; d++) {
		trace_model_set_depth(m, d);
		if (depth_varies(m, t0, t1))
			return d;
		if (d >= m->max_depth)
			break;
	}
	trace_model_set_depth(m, saved);
	return saved;
}

static int cmp_threads(const void *a, const void *b, void *ctx)
{
	const struct dbfile *db = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct dbfile_thread *tx = &db->threads[x], *ty = &db->threads[y];
	int hc = strcmp(tx->host, ty->host);
	if (hc)
		return hc;
	if (tx->pid != ty->pid)
		return tx->pid < ty->pid ? -1 : 1;
	return (x > y) - (x < y);
}

uint32_t *trace_model_thread_order(const struct trace_model *m)
{
	const struct dbfile *db = m->db;
	uint32_t *order = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*order));
	for (uint32_t i = 0; i < db->nthreads; i++)
		order[i] = i;
	qsort_r(order, db->nthreads, sizeof(*order), cmp_threads, (void *)db);
	return order;
}
