/* SPDX-License-Identifier: MIT */
/*
 * dbfile-index.c: what a database holds beside the caller's tree, derived in memory: the
 * breadth-first numbering, children ranges, outermost instances, groups, per-function lists and
 * flat profiles (for the writer, which then only encodes them); and the containers the reader,
 * the writer and prof fill and free (dbfile_values, dbfile_flat, a thread's and a metric's
 * strings).  No file is read or written here.
 */
#include "compat.h"
#include "dbfile.h"
#include "dbfile-index.h"
#include "error.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

static int cmp_pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

static bool is_instance(uint8_t kind)
{
	return kind == DBFILE_FUNCTION || kind == DBFILE_INLINE;
}

/* The module slot of function F: its module, or nmodules for none. */
static uint32_t module_slot(const struct dbfile *db, uint32_t f)
{
	uint32_t m = db->functions[f].module;
	return m == DBFILE_NONE ? db->nmodules : m;
}

uint32_t dbfile_block_size(uint32_t ncontexts)
{
	uint32_t least =
		(uint32_t)(((uint64_t)ncontexts + DBFILE_MAX_BLOCKS - 1) / DBFILE_MAX_BLOCKS);
	return least > DBFILE_BLOCK ? least : DBFILE_BLOCK;
}

uint32_t dbfile_block_end(uint32_t first, uint32_t block, uint32_t n)
{
	return n - first < block ? n : first + block;
}

static uint32_t list_block_size(uint32_t nfunctions)
{
	uint32_t least = (uint32_t)(((uint64_t)nfunctions + DBFILE_MAX_LIST_CHUNKS - 1) /
				    DBFILE_MAX_LIST_CHUNKS);
	return least > DBFILE_LIST_BLOCK ? least : DBFILE_LIST_BLOCK;
}

/* Per-key lists of items (ascending) from KEY_OF (DBFILE_NONE: in no list). */
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

void dbfile_index_release(struct dbfile_index *d)
{
	free(d->order);
	free(d->newid);
	free(d->ctx);
	free(d->fn_group);
	free(d->groups);
	free(d->fl_start);
	free(d->fl_list);
	free(d->inl_start);
	free(d->inl_list);
	dbfile_flats_release(&d->flat, &d->group_flat, &d->module_flat);
	memset(d, 0, sizeof(*d));
}

/* Breadth-first numbering: children in the order given. */
static int number_contexts(const struct dbfile *db, struct dbfile_index *d)
{
	uint32_t n = db->ncontexts;
	if (n == 0)
		return fth_error("no contexts");
	for (uint32_t i = 0; i < n; i++) {
		const struct dbfile_context *c = &db->contexts[i];
		if ((i == 0) != (c->parent == DBFILE_NONE) || (i && c->parent >= i))
			return fth_error("context %u: parent %u is not before it", i, c->parent);
		if ((i == 0) != (c->kind == DBFILE_ROOT) || c->kind >= DBFILE_KIND_COUNT)
			return fth_error("context %u: bad kind %u", i, c->kind);
		if ((c->function != DBFILE_NONE && c->function >= db->nfunctions) ||
		    (c->module != DBFILE_NONE && c->module >= db->nmodules) ||
		    (c->file != DBFILE_NONE && c->file >= db->nstrings))
			return fth_error("context %u: index out of range", i);
	}
	uint32_t *first = xcalloc((size_t)n + 1, sizeof(*first));
	uint32_t *child = xcalloc(n, sizeof(*child));
	for (uint32_t i = 1; i < n; i++)
		first[db->contexts[i].parent + 1]++;
	for (uint32_t i = 0; i < n; i++)
		first[i + 1] += first[i];
	uint32_t *fill = xmalloc(((size_t)n + 1) * sizeof(*fill));
	memcpy(fill, first, ((size_t)n + 1) * sizeof(*fill));
	for (uint32_t i = 1; i < n; i++)
		child[fill[db->contexts[i].parent]++] = i;
	free(fill);
	d->order = xmalloc((size_t)n * sizeof(uint32_t));
	d->newid = xmalloc((size_t)n * sizeof(uint32_t));
	d->ctx = xcalloc(n, sizeof(*d->ctx));
	d->order[0] = 0;
	uint32_t next = 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t old = d->order[i];
		d->newid[old] = i;
		struct dbfile_context *x = &d->ctx[i];
		*x = db->contexts[old];
		x->parent = i ? d->newid[x->parent] : DBFILE_NONE;
		x->first_child = next;
		x->nchildren = first[old + 1] - first[old];
		x->flags = 0;
		x->outer = DBFILE_NONE;
		for (uint32_t k = first[old]; k < first[old + 1]; k++)
			d->order[next++] = child[k];
	}
	free(first);
	free(child);
	return 0;
}

/* Function lists, then groups: (module, declaration file or that of the first line). */
static void index_functions(const struct dbfile *db, struct dbfile_index *d)
{
	uint32_t n = d->n, nf = d->nf;
	uint32_t *key = xmalloc((size_t)n * sizeof(uint32_t));
	for (uint32_t c = 0; c < n; c++) {
		uint8_t k = d->ctx[c].kind;
		key[c] = k == DBFILE_ROOT || k == DBFILE_ENTRY ? DBFILE_NONE : d->ctx[c].function;
	}
	csr_build(nf, n, key, &d->fl_start, &d->fl_list);
	for (uint32_t c = 0; c < n; c++) {
		const struct dbfile_context *x = &d->ctx[c];
		key[c] = x->kind == DBFILE_INLINE && c ? d->ctx[x->parent].function : DBFILE_NONE;
	}
	csr_build(nf, n, key, &d->inl_start, &d->inl_list);
	free(key);
	/* Groups in order of first appearance: sort (key, function), then the runs by function. */
	uint64_t(*pairs)[2] = xcalloc((size_t)nf + 1, sizeof(*pairs));
	for (uint32_t f = 0; f < nf; f++) {
		uint32_t file = db->functions[f].file;
		for (uint32_t i = d->fl_start[f]; file == DBFILE_NONE && i < d->fl_start[f + 1];
		     i++) {
			const struct dbfile_context *c = &d->ctx[d->fl_list[i]];
			if (c->kind == DBFILE_LINE || c->kind == DBFILE_LOOP ||
			    c->kind == DBFILE_CALL)
				file = c->file;
		}
		pairs[f][0] = (uint64_t)module_slot(db, f) << 32 | file;
		pairs[f][1] = f;
	}
	qsort(pairs, nf, sizeof(*pairs), cmp_pair);
	uint64_t(*runs)[2] = xcalloc((size_t)nf + 1, sizeof(*runs));
	uint32_t nruns = 0;
	for (uint32_t i = 0; i < nf; i++)
		if (i == 0 || pairs[i][0] != pairs[i - 1][0]) {
			runs[nruns][0] = pairs[i][1]; /* the first function */
			runs[nruns++][1] = pairs[i][0];
		}
	qsort(runs, nruns, sizeof(*runs), cmp_pair);
	d->fn_group = xcalloc((size_t)nf + 1, sizeof(uint32_t));
	d->groups = xcalloc((size_t)nruns + 1, sizeof(*d->groups));
	d->ngroups = nruns;
	for (uint32_t g = 0; g < nruns; g++) {
		uint32_t slot = (uint32_t)(runs[g][1] >> 32);
		d->groups[g].module = slot == db->nmodules ? DBFILE_NONE : slot;
		d->groups[g].file = (uint32_t)runs[g][1];
		runs[g][0] = runs[g][1];
		runs[g][1] = g;
	}
	qsort(runs, nruns, sizeof(*runs), cmp_pair); /* by key, for the look-ups */
	for (uint32_t i = 0, g = 0; i < nf; i++) {
		while (runs[g][0] != pairs[i][0])
			g++;
		d->fn_group[pairs[i][1]] = (uint32_t)runs[g][1];
	}
	free(pairs);
	free(runs);
}

/*
 * Outermost instances: a depth-first walk counting, on the current path, the instances of
 * every function, group and module.
 */
static void index_outer(const struct dbfile *db, struct dbfile_index *d)
{
	uint32_t n = d->n, nf = d->nf;
	uint32_t *cnt_fn = xcalloc((size_t)nf + 1, sizeof(uint32_t));
	uint32_t *cur_fn = xcalloc((size_t)nf + 1, sizeof(uint32_t));
	uint32_t *cnt_grp = xcalloc((size_t)d->ngroups + 1, sizeof(uint32_t));
	uint32_t *cnt_mod = xcalloc((size_t)db->nmodules + 1, sizeof(uint32_t));
	uint32_t *stack = xmalloc((size_t)n * sizeof(uint32_t));
	uint32_t *pos = xmalloc((size_t)n * sizeof(uint32_t));
	uint32_t sp = 0;
	stack[sp] = 0;
	pos[sp++] = 0;
	while (sp) {
		uint32_t c = stack[sp - 1];
		struct dbfile_context *p = &d->ctx[c];
		if (pos[sp - 1] < p->nchildren) {
			uint32_t k = p->first_child + pos[sp - 1]++;
			struct dbfile_context *x = &d->ctx[k];
			uint32_t f = x->function;
			if (is_instance(x->kind) && f < nf) {
				if (cnt_fn[f]++ == 0) {
					x->flags |= DBFILE_CTX_OUTER_FN;
					cur_fn[f] = k;
				}
				if (cnt_grp[d->fn_group[f]]++ == 0)
					x->flags |= DBFILE_CTX_OUTER_GRP;
				if (cnt_mod[module_slot(db, f)]++ == 0)
					x->flags |= DBFILE_CTX_OUTER_MOD;
			}
			x->outer = f < nf && cnt_fn[f] ? cur_fn[f] : DBFILE_NONE;
			stack[sp] = k;
			pos[sp++] = 0;
			continue;
		}
		if (c && is_instance(p->kind) && p->function < nf) {
			cnt_fn[p->function]--;
			cnt_grp[d->fn_group[p->function]]--;
			cnt_mod[module_slot(db, p->function)]--;
		}
		sp--;
	}
	free(stack);
	free(pos);
	free(cnt_fn);
	free(cur_fn);
	free(cnt_grp);
	free(cnt_mod);
}

void dbfile_flat_acc_init(struct dbfile_flat_acc *a, const struct dbfile *db,
			  const struct dbfile_index *d)
{
	size_t w = 2 * (size_t)d->nm;
	a->fn = xcalloc(((size_t)d->nf + 1) * w + 1, sizeof(double));
	a->grp = xcalloc(((size_t)d->ngroups + 1) * w + 1, sizeof(double));
	a->mod = xcalloc(((size_t)db->nmodules + 1) * w + 1, sizeof(double));
}

void dbfile_flat_acc_clear(struct dbfile_flat_acc *a, const struct dbfile *db,
			   const struct dbfile_index *d)
{
	size_t w = 2 * (size_t)d->nm;
	memset(a->fn, 0, (size_t)d->nf * w * sizeof(double));
	memset(a->grp, 0, (size_t)d->ngroups * w * sizeof(double));
	memset(a->mod, 0, ((size_t)db->nmodules + 1) * w * sizeof(double));
}

void dbfile_flat_acc_release(struct dbfile_flat_acc *a)
{
	free(a->fn);
	free(a->grp);
	free(a->mod);
}

/* Add the value (INCL, EXCL) of context C (new number) for metric M. */
void dbfile_flat_acc_add(struct dbfile_flat_acc *a, const struct dbfile *db,
			 const struct dbfile_index *d, uint32_t c, uint16_t m, double incl,
			 double excl)
{
	const struct dbfile_context *x = &d->ctx[c];
	uint32_t f = x->function;
	if (c == 0 || f >= d->nf || x->kind == DBFILE_ENTRY)
		return;
	size_t w = 2 * (size_t)d->nm;
	a->fn[f * w + 2 * m + 1] += excl;
	if (x->flags & DBFILE_CTX_OUTER_FN)
		a->fn[f * w + 2 * m] += incl;
	if (x->flags & DBFILE_CTX_OUTER_GRP)
		a->grp[d->fn_group[f] * w + 2 * m] += incl;
	if (x->flags & DBFILE_CTX_OUTER_MOD)
		a->mod[module_slot(db, f) * w + 2 * m] += incl;
}

/* Sparse rows (entries where a value is not zero) from dense ROWS x NM pairs. */
static void flat_from_dense(struct dbfile_flat *out, const double *v, uint32_t rows, uint32_t nm)
{
	memset(out, 0, sizeof(*out));
	out->nrows = rows;
	out->start = xcalloc((size_t)rows + 1, sizeof(uint32_t));
	uint64_t cnt = 0;
	for (size_t i = 0; i < (size_t)rows * nm; i++)
		cnt += v[2 * i] != 0 || v[2 * i + 1] != 0;
	out->nvalues = cnt;
	out->metric = xcalloc(cnt ? cnt : 1, sizeof(uint16_t));
	out->incl = xcalloc(cnt ? cnt : 1, sizeof(double));
	out->excl = xcalloc(cnt ? cnt : 1, sizeof(double));
	uint64_t j = 0;
	for (uint32_t r = 0; r < rows; r++) {
		out->start[r] = (uint32_t)j;
		for (uint32_t m = 0; m < nm; m++) {
			const double *p = v + ((size_t)r * nm + m) * 2;
			if (p[0] == 0 && p[1] == 0)
				continue;
			out->metric[j] = (uint16_t)m;
			out->incl[j] = p[0];
			out->excl[j++] = p[1];
		}
	}
	out->start[rows] = (uint32_t)j;
}

/* The groups' and modules' exclusive values (their functions'), then the sparse profiles. */
void dbfile_flat_acc_finish(struct dbfile_flat_acc *a, const struct dbfile *db,
			    const struct dbfile_index *d, struct dbfile_flat *fn,
			    struct dbfile_flat *grp, struct dbfile_flat *mod)
{
	size_t w = 2 * (size_t)d->nm;
	for (uint32_t f = 0; f < d->nf; f++) {
		double *g = a->grp + d->fn_group[f] * w, *m = a->mod + module_slot(db, f) * w;
		for (uint32_t k = 0; k < d->nm; k++) {
			g[2 * k + 1] += a->fn[f * w + 2 * k + 1];
			m[2 * k + 1] += a->fn[f * w + 2 * k + 1];
		}
	}
	flat_from_dense(fn, a->fn, d->nf, d->nm);
	flat_from_dense(grp, a->grp, d->ngroups, d->nm);
	flat_from_dense(mod, a->mod, db->nmodules + 1, d->nm);
}

int dbfile_index_build(const struct dbfile *db, struct dbfile_index *d)
{
	memset(d, 0, sizeof(*d));
	d->n = db->ncontexts;
	d->nf = db->nfunctions;
	d->nm = db->nmetrics;
	if (number_contexts(db, d) < 0) {
		dbfile_index_release(d);
		return -1;
	}
	index_functions(db, d);
	index_outer(db, d);
	d->block = db->block && (uint64_t)db->block * DBFILE_MAX_BLOCKS >= d->n
			   ? db->block
			   : dbfile_block_size(d->n);
	d->nblocks = (uint32_t)(((uint64_t)d->n + d->block - 1) / d->block);
	d->list_block = list_block_size(d->nf);
	d->nlists = (uint32_t)(((uint64_t)d->nf + d->list_block - 1) / d->list_block);
	/* The flat profiles of the sums. */
	struct dbfile_flat_acc a;
	dbfile_flat_acc_init(&a, db, d);
	for (uint32_t c = 0; c < d->n; c++) {
		uint32_t old = d->order[c];
		for (uint64_t j = db->sum_start[old]; j < db->sum_start[old + 1]; j++) {
			const struct dbfile_stat *in = &db->sum_incl[j], *ex = &db->sum_excl[j];
			if (db->sum_metric[j] >= d->nm) {
				dbfile_flat_acc_release(&a);
				dbfile_index_release(d);
				return fth_error("context %u: metric %u out of range", old,
						 db->sum_metric[j]);
			}
			dbfile_flat_acc_add(&a, db, d, c, db->sum_metric[j],
					    in->count ? in->sum : 0, ex->count ? ex->sum : 0);
		}
	}
	d->nsum = db->sum_start[d->n];
	dbfile_flat_acc_finish(&a, db, d, &d->flat, &d->group_flat, &d->module_flat);
	dbfile_flat_acc_release(&a);
	return 0;
}

void dbfile_flat_release(struct dbfile_flat *f)
{
	free(f->start);
	free(f->metric);
	free(f->incl);
	free(f->excl);
	memset(f, 0, sizeof(*f));
}

void dbfile_flats_release(struct dbfile_flat *fn, struct dbfile_flat *grp, struct dbfile_flat *mod)
{
	dbfile_flat_release(fn);
	dbfile_flat_release(grp);
	dbfile_flat_release(mod);
}

void dbfile_values_reset(struct dbfile_values *v)
{
	v->nvalues = 0;
}

void dbfile_values_push(struct dbfile_values *v, uint32_t ctx, uint16_t metric, double incl,
			double excl)
{
	if (v->nvalues == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 256;
		v->ctx = xreallocarray(v->ctx, v->cap, sizeof(*v->ctx));
		v->metric = xreallocarray(v->metric, v->cap, sizeof(*v->metric));
		v->incl = xreallocarray(v->incl, v->cap, sizeof(*v->incl));
		v->excl = xreallocarray(v->excl, v->cap, sizeof(*v->excl));
	}
	v->ctx[v->nvalues] = ctx;
	v->metric[v->nvalues] = metric;
	v->incl[v->nvalues] = incl;
	v->excl[v->nvalues] = excl;
	v->nvalues++;
}

void dbfile_values_release(struct dbfile_values *v)
{
	free(v->ctx);
	free(v->metric);
	free(v->incl);
	free(v->excl);
	memset(v, 0, sizeof(*v));
}

void dbfile_thread_release(struct dbfile_thread *t)
{
	free(t->file);
	free(t->host);
	free(t->program);
	free(t->name);
	free(t->entry);
	free(t->cpu);
	free_strings(t->argv, t->argc);
	memset(t, 0, sizeof(*t));
}

void dbfile_metric_release(struct dbfile_metric *m)
{
	free(m->name);
	free(m->description);
	free(m->formula);
	memset(m, 0, sizeof(*m));
}

void dbfile_threads_free(struct dbfile_thread *t, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dbfile_thread_release(&t[i]);
	free(t);
}

void dbfile_metrics_free(struct dbfile_metric *m, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dbfile_metric_release(&m[i]);
	free(m);
}
