/* SPDX-License-Identifier: MIT */
/*
 * dbfile-dump.c: prints a database as text: descriptions, the context tree, functions with
 * their lists and flat profiles, groups, modules, threads.
 */
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
		if (m->flags & MFILE_METRIC_TMA)
			buf_printf(out, " level=%u", m->level);
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
	const char *name = dbfile_str(db, fn->name);
	buf_add_escaped(out, name, strlen(name));
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
				: c->line == DBFILE_ENTRY_PROGRAM   ? " program"
								    : " root");
		if (c->line == DBFILE_ENTRY_PROGRAM && c->module != DBFILE_NONE)
			buf_printf(out, " [%u]", c->module);
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

static int dump_row_stats(struct dbfile *db, uint32_t i, uint32_t d, struct buf *out)
{
	struct dbfile_row row;
	if (dbfile_summary_row(db, i, &row) < 0)
		return -1;
	/* The row is valid until the next row call: dbfile_stats may make one. */
	uint32_t n = row.n;
	uint16_t *metric = xmalloc(((size_t)n + 1) * sizeof(*metric));
	memcpy(metric, row.metric, (size_t)n * sizeof(*metric));
	for (uint32_t j = 0; j < n; j++) {
		struct dbfile_stat in, ex;
		if (dbfile_stats(db, i, metric[j], &in, &ex) < 0) {
			free(metric);
			return -1;
		}
		buf_printf(out, "%*s  m%u incl ", 2 * (int)FTH_MIN(d, MAX_INDENT), "", metric[j]);
		dump_stat(&in, out);
		buf_addstr(out, " excl ");
		dump_stat(&ex, out);
		buf_addch(out, '\n');
	}
	free(metric);
	return 0;
}

/*
 * The tree, depth-first (children in order), with every context's summary.  The reader keeps
 * a few blocks, and a depth-first walk of a breadth-first numbering visits every block again
 * and again: so every context's lines are made first, in context order (each block decoded
 * once), then printed depth-first.  A dump holds the whole text anyway.
 */
static int dump_contexts(struct dbfile *db, struct buf *out)
{
	buf_printf(out, "contexts %u (%u per block)\n", db->ncontexts, db->block);
	uint32_t n = db->ncontexts;
	uint32_t *first = xmalloc(((size_t)n + 1) * sizeof(*first));
	uint32_t *count = xmalloc(((size_t)n + 1) * sizeof(*count));
	uint32_t *depth = xmalloc(((size_t)n + 1) * sizeof(*depth));
	size_t *at = xmalloc(((size_t)n + 1) * sizeof(*at));
	struct buf text = BUF_INIT;
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct dbfile_context c;
		if (dbfile_context(db, i, &c) < 0) {
			rc = -1;
			break;
		}
		/* The reader checked at open that parents come first. */
		uint32_t d = i && c.parent < i ? depth[c.parent] + 1 : 0;
		depth[i] = d;
		first[i] = c.first_child;
		count[i] = c.nchildren;
		at[i] = text.len;
		if (d > MAX_INDENT)
			buf_printf(&text, "%*s[%u] ", 2 * MAX_INDENT, "", d);
		else
			buf_printf(&text, "%*s", 2 * (int)d, "");
		buf_printf(&text, "%u ", i);
		describe_context(db, &c, &text);
		if (c.outer != DBFILE_NONE && c.outer != i)
			buf_printf(&text, " in=%u", c.outer);
		if (c.flags)
			buf_printf(&text, " outer=%s%s%s", c.flags & DBFILE_CTX_OUTER_FN ? "f" : "",
				   c.flags & DBFILE_CTX_OUTER_GRP ? "g" : "",
				   c.flags & DBFILE_CTX_OUTER_MOD ? "m" : "");
		buf_addch(&text, '\n');
		rc = dump_row_stats(db, i, d, &text);
	}
	at[n] = text.len;
	uint32_t *stack = xmalloc(((size_t)n + 1) * sizeof(*stack));
	size_t sp = 0;
	if (n && rc == 0)
		stack[sp++] = 0;
	while (sp) {
		uint32_t i = stack[--sp];
		buf_add(out, text.data + at[i], at[i + 1] - at[i]);
		if (count[i] > n - sp || first[i] > n - count[i]) {
			rc = fth_error("%s: the tree is not a tree", db->dir ? db->dir : "database");
			break;
		}
		for (uint32_t k = count[i]; k > 0; k--)
			stack[sp++] = first[i] + k - 1;
	}
	buf_release(&text);
	free(stack);
	free(first);
	free(count);
	free(depth);
	free(at);
	return rc;
}

static void dump_values(const struct dbfile_flat *fl, uint32_t r, struct buf *out)
{
	for (uint64_t j = fl->start[r]; j < fl->start[r + 1]; j++) {
		buf_printf(out, " m%u=", fl->metric[j]);
		add_num(out, fl->incl[j]);
		buf_addch(out, '/');
		add_num(out, fl->excl[j]);
	}
}

static void dump_list(const char *what, const uint32_t *list, uint32_t n, struct buf *out)
{
	if (!n)
		return;
	buf_printf(out, " %s", what);
	for (uint32_t i = 0; i < n; i++)
		buf_printf(out, "%c%u", i ? ',' : '=', list[i]);
}

static void describe_group(const struct dbfile *db, uint32_t g, struct buf *out)
{
	const struct dbfile_group *x = &db->groups[g];
	if (x->module != DBFILE_NONE)
		buf_printf(out, "[%u] ", x->module);
	const char *file = x->file != DBFILE_NONE ? dbfile_str(db, x->file) : "-";
	buf_add_escaped(out, file, strlen(file));
}

/* Functions (with their group, lists and flat profile), groups, modules. */
static int dump_flat(struct dbfile *db, struct buf *out)
{
	buf_printf(out, "functions %u\n", db->nfunctions);
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		const struct dbfile_function *f = &db->functions[i];
		buf_printf(out, "  f%u ", i);
		describe_function(db, i, out);
		if (f->file != DBFILE_NONE)
			buf_printf(out, " %s:%u", dbfile_str(db, f->file), f->line);
		buf_printf(out, " entry=0x%llx g%u", (unsigned long long)f->addr, f->group);
		dump_values(&db->flat, i, out);
		uint32_t *list, n;
		if (dbfile_function_contexts(db, i, &list, &n) < 0)
			return -1;
		dump_list("contexts", list, n, out);
		free(list);
		if (dbfile_inlined_contexts(db, i, &list, &n) < 0)
			return -1;
		dump_list("inlined", list, n, out);
		free(list);
		buf_addch(out, '\n');
	}
	buf_printf(out, "groups %u\n", db->ngroups);
	for (uint32_t g = 0; g < db->ngroups; g++) {
		buf_printf(out, "  g%u ", g);
		describe_group(db, g, out);
		dump_values(&db->group_flat, g, out);
		buf_addch(out, '\n');
	}
	buf_printf(out, "module profiles %u\n", db->nmodules + 1);
	for (uint32_t m = 0; m <= db->nmodules; m++) {
		if (m < db->nmodules)
			buf_printf(out, "  [%u]", m);
		else
			buf_addstr(out, "  none");
		dump_values(&db->module_flat, m, out);
		buf_addch(out, '\n');
	}
	return 0;
}

/* A thread's flat profiles: the rows that have values. */
static void dump_thread_flats(const struct dbfile_flat *fl, const char *prefix, struct buf *out)
{
	for (uint32_t r = 0; r < fl->nrows; r++) {
		if (fl->start[r] == fl->start[r + 1])
			continue;
		buf_printf(out, "  %s%u", prefix, r);
		dump_values(fl, r, out);
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
	for (uint32_t i = 0; i < db->nnotes; i++) {
		buf_addstr(out, "\nnote ");
		add_str(out, db->notes[i]);
	}
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
		buf_printf(out, "    ppid=%u", t->ppid);
		if (t->name[0]) {
			buf_addstr(out, " name=");
			buf_add_escaped(out, t->name, strlen(t->name));
		}
		if (t->entry[0]) {
			buf_addstr(out, " entry=");
			buf_add_escaped(out, t->entry, strlen(t->entry));
		}
		for (uint32_t a = 0; a < t->argc; a++) {
			buf_addstr(out, a ? " " : " args=");
			buf_add_escaped(out, t->argv[a], strlen(t->argv[a]));
		}
		if (t->cpu[0]) {
			buf_addstr(out, " cpu=");
			buf_add_escaped(out, t->cpu, strlen(t->cpu));
		}
		buf_addch(out, '\n');
	}
	if (dump_contexts(db, out) < 0 || dump_flat(db, out) < 0)
		return -1;
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
		struct dbfile_flat fl[3];
		if (dbfile_thread_flats(db, t, &fl[0], &fl[1], &fl[2]) < 0) {
			rc = -1;
			break;
		}
		buf_printf(out, "thread t%u flat profiles:\n", t);
		dump_thread_flats(&fl[0], "f", out);
		dump_thread_flats(&fl[1], "g", out);
		dump_thread_flats(&fl[2], "module ", out);
		for (int k = 0; k < 3; k++)
			dbfile_flat_release(&fl[k]);
	}
	dbfile_values_release(&v);
	return rc;
}
