/* SPDX-License-Identifier: MIT */
/* dbfile-dump.c: prints a database as text: descriptions, the context tree, flat, threads. */
#include "compat.h"
#include "dbfile.h"
#include "buf.h"
#include "error.h"
#include "mfile.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_INDENT 40

static void add_num(struct buf *out, double d)
{
	buf_printf(out, "%.17g", d);
}

static void add_str(struct buf *out, const char *s)
{
	buf_addch(out, '"');
	buf_add_escaped(out, s, strlen(s));
	buf_addch(out, '"');
}

static void add_build_id(struct buf *out, const uint8_t *b, uint32_t n)
{
	if (!n)
		buf_addstr(out, "-");
	for (uint32_t i = 0; i < n; i++)
		buf_printf(out, "%02x", b[i]);
}

static void dump_metrics(const struct dbfile *db, struct buf *out)
{
	buf_printf(out, "metrics %u\n", db->nmetrics);
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		const struct dbfile_metric *m = &db->metrics[i];
		buf_printf(out, "  m%u ", i);
		add_str(out, m->name);
		buf_printf(out, " %s unit=%s rate=%s:%llu flags=0x%x samples=%llu threads=%u",
			   m->kind == DBFILE_METRIC_DERIVED ? "derived" : "raw",
			   mfile_unit_name(m->unit),
			   m->rate_kind == MFILE_RATE_PERIOD      ? "period"
			   : m->rate_kind == MFILE_RATE_FREQUENCY ? "frequency"
								  : "exact",
			   (unsigned long long)m->rate, m->flags, (unsigned long long)m->samples,
			   m->nthreads);
		buf_printf(out, " enabled=%llu running=%llu coverage=",
			   (unsigned long long)m->time_enabled, (unsigned long long)m->time_running);
		if (m->time_enabled)
			add_num(out, (double)m->time_running / (double)m->time_enabled);
		else
			buf_addstr(out, "1");
		buf_addstr(out, " scale=");
		add_num(out, m->scale);
		buf_printf(out, " parent=%d threshold=", m->parent);
		if (isnan(m->threshold))
			buf_addstr(out, "-");
		else
			add_num(out, m->threshold);
		buf_addstr(out, " formula=");
		add_str(out, m->formula);
		buf_addstr(out, " description=");
		add_str(out, m->description);
		buf_addch(out, '\n');
	}
}

static void dump_stat(const struct dbfile_stat *s, struct buf *out)
{
	add_num(out, s->count ? s->sum : 0);
	if (!s->count)
		return;
	double mean = s->sum / s->count;
	buf_printf(out, " (n=%u min=", s->count);
	add_num(out, s->min);
	buf_addstr(out, " max=");
	add_num(out, s->max);
	buf_addstr(out, " mean=");
	add_num(out, mean);
	buf_addstr(out, " sd=");
	add_num(out, s->stddev);
	buf_addstr(out, " cv=");
	add_num(out, mean != 0 ? s->stddev / mean : 0);
	buf_addch(out, ')');
}

static void describe_function(const struct dbfile *db, uint32_t f, struct buf *out)
{
	if (f >= db->nfunctions) {
		buf_addstr(out, "?");
		return;
	}
	const struct dbfile_function *fn = &db->functions[f];
	buf_addstr(out, dbfile_str(db, fn->name));
	if (fn->module != DBFILE_NONE)
		buf_printf(out, " [%u]", fn->module);
}

static void describe_context(const struct dbfile *db, const struct dbfile_context *c,
			     struct buf *out)
{
	buf_addstr(out, dbfile_kind_name(c->kind));
	switch (c->kind) {
	case DBFILE_ENTRY:
		buf_addstr(out, c->line == DBFILE_ENTRY_PARTIAL	    ? " partial"
				: c->line == DBFILE_ENTRY_SYNTHETIC ? " synthetic"
								    : " root");
		if (c->line == DBFILE_ENTRY_SYNTHETIC)
			buf_printf(out, " %llu", (unsigned long long)c->addr);
		return;
	case DBFILE_FUNCTION:
	case DBFILE_INLINE:
		buf_addch(out, ' ');
		describe_function(db, c->function, out);
		break;
	default: break;
	}
	if (c->file != DBFILE_NONE)
		buf_printf(out, " %s:%u", dbfile_str(db, c->file), c->line);
	if ((c->kind == DBFILE_LINE || c->kind == DBFILE_CALL) && c->file == DBFILE_NONE) {
		if (c->module != DBFILE_NONE)
			buf_printf(out, " [%u]+0x%llx", c->module, (unsigned long long)c->addr);
		else
			buf_printf(out, " 0x%llx", (unsigned long long)c->addr);
	} else if (c->kind == DBFILE_LOOP) {
		buf_printf(out, " header=0x%llx", (unsigned long long)c->addr);
	}
}

static void dump_contexts(const struct dbfile *db, struct buf *out)
{
	buf_printf(out, "contexts %u\n", db->ncontexts);
	uint32_t n = db->ncontexts;
	/* Children lists in id order: counting sort by parent. */
	uint32_t *first = xcalloc((size_t)n + 1, sizeof(*first));
	uint32_t *child = xcalloc(n ? n : 1, sizeof(*child));
	uint32_t *depth = xcalloc(n ? n : 1, sizeof(*depth));
	for (uint32_t i = 1; i < n; i++)
		first[db->contexts[i].parent + 1]++;
	for (uint32_t i = 0; i < n; i++)
		first[i + 1] += first[i];
	uint32_t *fill = xmalloc(((size_t)n + 1) * sizeof(*fill));
	memcpy(fill, first, ((size_t)n + 1) * sizeof(*fill));
	for (uint32_t i = 1; i < n; i++)
		child[fill[db->contexts[i].parent]++] = i;
	free(fill);
	uint32_t *stack = xmalloc((n ? n : 1) * sizeof(*stack));
	size_t sp = 0;
	if (n)
		stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		const struct dbfile_context *c = &db->contexts[i];
		uint32_t d = c->parent == DBFILE_NONE ? 0 : depth[c->parent] + 1;
		depth[i] = d;
		if (d > MAX_INDENT)
			buf_printf(out, "%*s[%u] ", 2 * MAX_INDENT, "", d);
		else
			buf_printf(out, "%*s", 2 * (int)d, "");
		buf_printf(out, "%u ", i);
		describe_context(db, c, out);
		buf_addch(out, '\n');
		for (uint64_t j = db->sum_start[i]; j < db->sum_start[i + 1]; j++) {
			buf_printf(out, "%*s  m%u incl ", 2 * (int)FTH_MIN(d, MAX_INDENT), "",
				   db->sum_metric[j]);
			dump_stat(&db->sum_incl[j], out);
			buf_addstr(out, " excl ");
			dump_stat(&db->sum_excl[j], out);
			buf_addch(out, '\n');
		}
		for (uint32_t k = first[i + 1]; k > first[i]; k--)
			stack[sp++] = child[k - 1];
	}
	free(stack);
	free(first);
	free(child);
	free(depth);
}

static void dump_flat(const struct dbfile *db, struct buf *out)
{
	buf_printf(out, "functions %u\n", db->nfunctions);
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		const struct dbfile_function *f = &db->functions[i];
		buf_printf(out, "  f%u ", i);
		describe_function(db, i, out);
		if (f->file != DBFILE_NONE)
			buf_printf(out, " %s:%u", dbfile_str(db, f->file), f->line);
		buf_printf(out, " entry=0x%llx", (unsigned long long)f->addr);
		for (uint64_t j = db->flat_start[i]; j < db->flat_start[i + 1]; j++) {
			buf_printf(out, " m%u=", db->flat_metric[j]);
			add_num(out, db->flat_incl[j]);
			buf_addch(out, '/');
			add_num(out, db->flat_excl[j]);
		}
		buf_addch(out, '\n');
	}
}

static int cmp_value(const void *a, const void *b, void *arg)
{
	const struct dbfile_values *v = arg;
	uint64_t i = *(const uint64_t *)a, j = *(const uint64_t *)b;
	if (v->ctx[i] != v->ctx[j])
		return v->ctx[i] < v->ctx[j] ? -1 : 1;
	return (v->metric[i] > v->metric[j]) - (v->metric[i] < v->metric[j]);
}

int dbfile_dump(struct dbfile *db, struct buf *out, bool threads)
{
	buf_printf(out, "fathom database %u.%u\nprogram ", db->major, db->minor);
	add_str(out, db->program);
	buf_addstr(out, "\nflags");
#define X(e, b, n)                                   \
	if (db->flags & DBFILE_FLAG_##e)             \
		buf_addstr(out, " " n);
	DBFILE_FLAGS(X)
#undef X
	buf_printf(out, "\nmodules %u\n", db->nmodules);
	for (uint32_t i = 0; i < db->nmodules; i++) {
		const struct dbfile_module *m = &db->modules[i];
		buf_printf(out, "  [%u] %s build-id ", i, dbfile_str(db, m->path));
		add_build_id(out, m->build_id, m->build_id_len);
		buf_printf(out, "%s%s%s\n", m->flags & DBFILE_MODULE_SAMPLED ? " sampled" : "",
			   m->flags & DBFILE_MODULE_STRUCT ? " struct" : "",
			   m->flags & DBFILE_MODULE_LOOPS ? " loops" : "");
	}
	dump_metrics(db, out);
	buf_printf(out, "threads %u (%u per chunk)\n", db->nthreads, db->thread_group);
	for (uint32_t i = 0; i < db->nthreads; i++) {
		const struct dbfile_thread *t = &db->threads[i];
		buf_printf(out, "  t%u %s host=%s pid=%u tid=%u thread=%u rank=%d start=%llu "
				"end=%llu\n",
			   i, t->file, t->host, t->pid, t->tid, t->thread_index, t->rank,
			   (unsigned long long)t->start_ns, (unsigned long long)t->end_ns);
	}
	/* The statistics of every context: read them all (the dump is of the whole file). */
	if (dbfile_load_stats(db) < 0)
		return -1;
	dump_contexts(db, out);
	dump_flat(db, out);
	if (!threads || (db->flags & DBFILE_FLAG_NO_THREADS))
		return 0;
	struct dbfile_values v = { 0 };
	int rc = 0;
	for (uint32_t t = 0; t < db->nthreads; t++) {
		if (dbfile_read_thread(db, t, &v) < 0) {
			rc = -1;
			break;
		}
		buf_printf(out, "thread t%u: %llu values\n", t, (unsigned long long)v.nvalues);
		uint64_t *order = xmalloc((v.nvalues ? v.nvalues : 1) * sizeof(*order));
		for (uint64_t i = 0; i < v.nvalues; i++)
			order[i] = i;
		qsort_r(order, v.nvalues, sizeof(*order), cmp_value, &v);
		for (uint64_t k = 0; k < v.nvalues; k++) {
			uint64_t i = order[k];
			buf_printf(out, "  %u m%u ", v.ctx[i], v.metric[i]);
			add_num(out, v.incl[i]);
			buf_addch(out, ' ');
			add_num(out, v.excl[i]);
			buf_addch(out, '\n');
		}
		free(order);
	}
	dbfile_values_release(&v);
	return rc;
}
