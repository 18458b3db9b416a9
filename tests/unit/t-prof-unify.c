/* SPDX-License-Identifier: MIT */
/*
 * t-prof-unify.c: prof's unification on synthetic measurement files with exactly known values:
 * a 3:1 split between two functions called from two call sites, a loop and an inlined call
 * (from a structure file built through lib/), four threads with known statistics, recursion,
 * and the additivity of inclusive and exclusive values at every context and in every view.
 */
#include "compat.h"
#include "tap.h"
#include "buf.h"
#include "dbfile.h"
#include "error.h"
#include "mfile.h"
#include "prof.h"
#include "sample.h"
#include "sfile.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MODPATH "/nonexistent/split"

static const uint8_t build_id[4] = { 0xde, 0xad, 0xbe, 0xef };

/* The structure of "split": main calls work_three (line 41) and work_one (line 42);
 * work_three has a loop (line 20) that calls the inlined helper (line 21). */
static void make_sfile(const char *path)
{
	static const char *strs[] = { "helper", "main", "split.c", "work_one", "work_three" };
	struct sfile sf;
	memset(&sf, 0, sizeof(sf));
	sf.path = xstrdup(MODPATH);
	sf.build_id = xmalloc(sizeof(build_id));
	memcpy(sf.build_id, build_id, sizeof(build_id));
	sf.build_id_len = sizeof(build_id);
	sf.machine = 62;
	sf.flags = 7; /* dwarf, lines, loops */
	sf.nstrings = 5;
	sf.strings = tap_strdup_array(strs, 5);
	sf.nnodes = 5;
	sf.nodes = xcalloc(5, sizeof(*sf.nodes));
	sf.nodes[0] = (struct sfile_node){ SFILE_FUNCTION, SFILE_NONE, 1, SFILE_NONE, 2, 39, 0, 0,
					   0x100, SFILE_NONE, 0, SFILE_NONE, 0,
					   SFILE_NONE, 0, 0 };
	sf.nodes[1] = (struct sfile_node){ SFILE_FUNCTION, SFILE_NONE, 4, SFILE_NONE, 2, 17, 0, 0,
					   0x200, SFILE_NONE, 0, SFILE_NONE, 0,
					   SFILE_NONE, 0, 0 };
	sf.nodes[2] = (struct sfile_node){ SFILE_LOOP, 1, SFILE_NONE, SFILE_NONE, 2, 20, 0, 0,
					   0x210, SFILE_NONE, 1, SFILE_NONE, 0,
					   SFILE_NONE, 0, 0 };
	sf.nodes[3] = (struct sfile_node){ SFILE_INLINE, 2, 0, SFILE_NONE, 2, 21, 0, 0,
					   0, SFILE_NONE, 0, SFILE_NONE, 0,
					   SFILE_NONE, 0, 0 };
	sf.nodes[4] = (struct sfile_node){ SFILE_FUNCTION, SFILE_NONE, 3, SFILE_NONE, 2, 29, 0, 0,
					   0x300, SFILE_NONE, 0, SFILE_NONE, 0,
					   SFILE_NONE, 0, 0 };
	static const struct sfile_range ranges[] = {
		{ 0x100, 0x140, 0 }, { 0x200, 0x210, 1 }, { 0x210, 0x220, 2 },
		{ 0x220, 0x230, 3 }, { 0x230, 0x240, 1 }, { 0x300, 0x340, 4 },
	};
	sf.nranges = ARRAY_SIZE(ranges);
	sf.ranges = xcalloc(sf.nranges, sizeof(*sf.ranges));
	memcpy(sf.ranges, ranges, sizeof(ranges));
	static const struct sfile_line lines[] = {
		{ 0x100, 0x110, 2, 40, 0 }, { 0x110, 0x118, 2, 41, 0 }, { 0x118, 0x120, 2, 42, 0 },
		{ 0x120, 0x140, 2, 43, 0 }, { 0x200, 0x210, 2, 18, 0 }, { 0x210, 0x220, 2, 20, 0 },
		{ 0x220, 0x230, 2, 10, 0 }, { 0x230, 0x240, 2, 25, 0 }, { 0x300, 0x340, 2, 30, 0 },
	};
	sf.nlines = ARRAY_SIZE(lines);
	sf.lines = xcalloc(sf.nlines, sizeof(*sf.lines));
	memcpy(sf.lines, lines, sizeof(lines));
	if (sfile_write(path, &sf, 0) < 0)
		diag("sfile_write: %s", fth_errmsg());
	sfile_release(&sf);
}

struct node {
	uint32_t parent;
	uint8_t kind;
	uint64_t offset;
	uint64_t value; /* metric 0; 0 = none */
};

static void make_mfile(struct mfile *m, const struct node *nodes, uint32_t n, uint32_t tid)
{
	memset(m, 0, sizeof(*m));
	m->id.host = xstrdup("host");
	m->id.program = xstrdup(MODPATH);
	m->id.cwd = xstrdup("/");
	m->id.end_reason = xstrdup("exit");
	m->id.pid = 100;
	m->id.tid = tid;
	m->id.thread_index = tid - 100;
	m->id.rank = -1;
	m->id.parent_thread = -1;
	m->nmodules = 1;
	m->modules = xcalloc(1, sizeof(*m->modules));
	m->modules[0].path = xstrdup(MODPATH);
	m->modules[0].build_id = xmalloc(sizeof(build_id));
	memcpy(m->modules[0].build_id, build_id, sizeof(build_id));
	m->modules[0].build_id_len = sizeof(build_id);
	m->nmetrics = 1;
	m->metrics = xcalloc(1, sizeof(*m->metrics));
	m->metrics[0] = (struct mfile_metric){ .name = xstrdup("cpu-clock"),
					       .description = xstrdup("CPU time"),
					       .unit = MFILE_UNIT_NANOSECONDS,
					       .rate_kind = MFILE_RATE_PERIOD, .rate = 1000,
					       .parent = -1, .threshold = NAN,
					       .formula = xstrdup(""), .samples = 10 };
	struct mfile_cct *c = &m->cct;
	uint32_t nv = 0;
	for (uint32_t i = 0; i < n; i++)
		nv += nodes[i].value != 0;
	sample_alloc_cct(c, n, nv);
	uint32_t v = 0;
	for (uint32_t i = 0; i < n; i++) {
		c->parent[i] = nodes[i].parent;
		c->kind[i] = nodes[i].kind;
		c->module[i] = i ? 0 : MFILE_NO_MODULE;
		c->offset[i] = nodes[i].offset;
		c->val_start[i] = v;
		if (nodes[i].value) {
			c->val_metric[v] = 0;
			c->val[v++] = nodes[i].value;
		}
	}
	c->val_start[n] = v;
}

/* Thread with weight K: line 40 of main 500K; work_three 3000K (loop 2000K, inline 1000K);
 * work_one 1000K. */
static void split_thread(struct mfile *m, uint64_t k, uint32_t tid)
{
	const struct node nodes[] = {
		{ MFILE_NO_PARENT, MFILE_NODE_ROOT, 0, 0 },
		{ 0, MFILE_NODE_FRAME, 0x112, 0 },	    /* main, call at 0x111 (line 41) */
		{ 1, MFILE_NODE_SAMPLE, 0x215, 2000 * k }, /* work_three, loop line 20 */
		{ 1, MFILE_NODE_SAMPLE, 0x225, 1000 * k }, /* helper inlined in the loop */
		{ 0, MFILE_NODE_FRAME, 0x119, 0 },	    /* main, call at 0x118 (line 42) */
		{ 4, MFILE_NODE_SAMPLE, 0x305, 600 * k },  /* work_one line 30 */
		{ 4, MFILE_NODE_SAMPLE, 0x306, 400 * k },  /* same line, another address */
		{ 0, MFILE_NODE_SAMPLE, 0x105, 500 * k },  /* main line 40 */
	};
	make_mfile(m, nodes, ARRAY_SIZE(nodes), tid);
}

/* T[0] and T[1]: the split program's threads 100 and 101, each with its values once. */
static void two_threads(struct mfile t[2])
{
	split_thread(&t[0], 1, 100);
	split_thread(&t[1], 1, 101);
}

static uint32_t find_ctx(const struct dbfile *db, uint8_t kind, const char *fname,
			 uint32_t line, uint32_t nth)
{
	for (uint32_t i = 0; i < db->ncontexts; i++) {
		const struct dbfile_context *c = &db->contexts[i];
		if (c->kind != kind || (line && c->line != line))
			continue;
		if (fname && (c->function == DBFILE_NONE ||
			      strcmp(dbfile_str(db, db->functions[c->function].name), fname)))
			continue;
		if (nth-- == 0)
			return i;
	}
	return DBFILE_NONE;
}

static int64_t find_summary(const struct dbfile *db, uint32_t ctx, uint16_t metric)
{
	for (uint64_t j = db->sum_start[ctx]; j < db->sum_start[ctx + 1]; j++)
		if (db->sum_metric[j] == metric)
			return (int64_t)j;
	return -1;
}

/*
 * Every context and statistic of an open DB into its writer-side arrays (contexts, sum_*),
 * through the block reader, as the checks below read them.
 */
static int load_all(struct dbfile *db)
{
	uint32_t n = db->ncontexts;
	db->contexts = xcalloc(n, sizeof(*db->contexts));
	db->sum_start = xcalloc((size_t)n + 1, sizeof(uint32_t));
	db->sum_metric = xcalloc(db->nsum + 1, sizeof(uint16_t));
	db->sum_incl = xcalloc(db->nsum + 1, sizeof(struct dbfile_stat));
	db->sum_excl = xcalloc(db->nsum + 1, sizeof(struct dbfile_stat));
	uint64_t j = 0;
	for (uint32_t c = 0; c < n; c++) {
		struct dbfile_row row;
		if (dbfile_context(db, c, &db->contexts[c]) < 0 ||
		    dbfile_summary_row(db, c, &row) < 0)
			return -1;
		db->sum_start[c] = (uint32_t)j;
		if (row.n > db->nsum - j)
			return -1;
		for (uint32_t k = 0; k < row.n; k++)
			db->sum_metric[j + k] = row.metric[k];
		for (uint32_t k = 0; k < row.n; k++, j++)
			if (dbfile_stats(db, c, db->sum_metric[j], &db->sum_incl[j],
					 &db->sum_excl[j]) < 0)
				return -1;
	}
	db->sum_start[n] = (uint32_t)j;
	return 0;
}

static struct dbfile_stat incl_of(const struct dbfile *db, uint32_t ctx)
{
	struct dbfile_stat none = { 0 };
	int64_t j = find_summary(db, ctx, 0);
	return j < 0 ? none : db->sum_incl[j];
}

static double excl_sum(const struct dbfile *db, uint32_t ctx)
{
	int64_t j = find_summary(db, ctx, 0);
	return j < 0 || !db->sum_excl[j].count ? 0 : db->sum_excl[j].sum;
}

static double incl_sum(const struct dbfile *db, uint32_t ctx)
{
	struct dbfile_stat s = incl_of(db, ctx);
	return s.count ? s.sum : 0;
}

/* At every context: exclusive + the children's inclusive = inclusive, exactly. */
static bool additive(const struct dbfile *db)
{
	double *kids = xcalloc(db->ncontexts, sizeof(double));
	for (uint32_t i = 1; i < db->ncontexts; i++)
		kids[db->contexts[i].parent] += incl_sum(db, i);
	bool good = true;
	for (uint32_t i = 0; i < db->ncontexts; i++)
		if (excl_sum(db, i) + kids[i] != incl_sum(db, i)) {
			diag("context %u: %.17g + %.17g != %.17g", i, excl_sum(db, i), kids[i],
			     incl_sum(db, i));
			good = false;
		}
	free(kids);
	return good;
}

static bool thread_additive(const struct dbfile *db, const struct dbfile_values *v)
{
	double *in = xcalloc(db->ncontexts, sizeof(double));
	double *ex = xcalloc(db->ncontexts, sizeof(double));
	double *kids = xcalloc(db->ncontexts, sizeof(double));
	for (uint64_t i = 0; i < v->nvalues; i++) {
		in[v->ctx[i]] = v->incl[i];
		ex[v->ctx[i]] = v->excl[i];
	}
	for (uint32_t i = 1; i < db->ncontexts; i++)
		kids[db->contexts[i].parent] += in[i];
	bool good = true;
	for (uint32_t i = 0; i < db->ncontexts; i++)
		if (ex[i] + kids[i] != in[i])
			good = false;
	free(in);
	free(ex);
	free(kids);
	return good;
}

static double flat(const struct dbfile *db, const char *fname, bool incl)
{
	for (uint32_t f = 0; f < db->nfunctions; f++) {
		if (strcmp(dbfile_str(db, db->functions[f].name), fname))
			continue;
		for (uint32_t j = db->flat.start[f]; j < db->flat.start[f + 1]; j++)
			if (db->flat.metric[j] == 0)
				return incl ? db->flat.incl[j] : db->flat.excl[j];
	}
	return -1;
}

/* Add FL's values of metric 0 into IN and EX (one per row). */
static void add_flat(const struct dbfile_flat *fl, double *in, double *ex)
{
	for (uint32_t r = 0; r < fl->nrows; r++)
		for (uint32_t j = fl->start[r]; j < fl->start[r + 1]; j++)
			if (fl->metric[j] == 0) {
				in[r] += fl->incl[j];
				ex[r] += fl->excl[j];
			}
}

/* The sums over threads of the threads' flat profiles equal the summary's (exactly). */
static bool flats_add_up(struct dbfile *db)
{
	const struct dbfile_flat *sum[3] = { &db->flat, &db->group_flat, &db->module_flat };
	double *in[3], *ex[3], *want_in[3], *want_ex[3];
	bool good = true;
	for (int k = 0; k < 3; k++) {
		uint32_t n = sum[k]->nrows + 1;
		in[k] = xcalloc(n, sizeof(double));
		ex[k] = xcalloc(n, sizeof(double));
		want_in[k] = xcalloc(n, sizeof(double));
		want_ex[k] = xcalloc(n, sizeof(double));
		add_flat(sum[k], want_in[k], want_ex[k]);
	}
	for (uint32_t t = 0; t < db->nthreads; t++) {
		struct dbfile_flat fl[3];
		if (dbfile_thread_flats(db, t, &fl[0], &fl[1], &fl[2]) < 0) {
			diag("%s", fth_errmsg());
			good = false;
			break;
		}
		for (int k = 0; k < 3; k++) {
			add_flat(&fl[k], in[k], ex[k]);
			dbfile_flat_release(&fl[k]);
		}
	}
	for (int k = 0; k < 3; k++) {
		for (uint32_t r = 0; r < sum[k]->nrows; r++)
			if (in[k][r] != want_in[k][r] || ex[k][r] != want_ex[k][r]) {
				diag("profile %d row %u: %g/%g, summary %g/%g", k, r, in[k][r],
				     ex[k][r], want_in[k][r], want_ex[k][r]);
				good = false;
			}
		free(in[k]);
		free(ex[k]);
		free(want_in[k]);
		free(want_ex[k]);
	}
	return good;
}

/* Merge THREADS into a database in DIR (written and read back). */
static void build(const char *dir, struct mfile *threads, int n, struct structs *ss,
		  struct dbfile *out)
{
	struct prof_problems probs = { 0 };
	struct unifier *u = unifier_new(ss, &probs);
	struct dbfile_thread_writer tw;
	struct dbfile_values v = { 0 };
	if (dbfile_threads_open(&tw, dir, (uint32_t)n, 1, 3) < 0)
		diag("%s", fth_errmsg());
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%d.fthm", i);
		if (unifier_add(u, &threads[i], name, &v) < 0 || dbfile_threads_add(&tw, &v) < 0)
			diag("%s", fth_errmsg());
	}
	if (dbfile_threads_finish(&tw) < 0)
		diag("%s", fth_errmsg());
	struct dbfile db;
	unifier_finish(u, &db, MODPATH);
	if (dbfile_write_summary(dir, &db, 3) < 0)
		diag("%s", fth_errmsg());
	dbfile_close(&db);
	unifier_free(u);
	dbfile_values_release(&v);
	for (size_t i = 0; i < probs.n; i++)
		diag("problem: %s", probs.msgs[i]);
	problems_release(&probs);
	/* With every context and statistic in memory, as the checks below read them. */
	if (dbfile_open(dir, out) < 0 || load_all(out) < 0)
		diag("dbfile_open: %s", fth_errmsg());
}

static void test_split(struct structs *ss)
{
	char *dir = tap_mkdir("split-db");
	struct mfile t[4];
	static const uint64_t k[4] = { 1, 2, 3, 6 };
	for (int i = 0; i < 4; i++)
		split_thread(&t[i], k[i], 100 + (uint32_t)i);
	struct dbfile db;
	build(dir, t, 4, ss, &db);
	is_uint(db.nthreads, 4, "4 threads");

	uint32_t fmain = find_ctx(&db, DBFILE_FUNCTION, "main", 0, 0);
	uint32_t call41 = find_ctx(&db, DBFILE_CALL, "main", 41, 0);
	uint32_t call42 = find_ctx(&db, DBFILE_CALL, "main", 42, 0);
	uint32_t f3 = find_ctx(&db, DBFILE_FUNCTION, "work_three", 0, 0);
	uint32_t f1 = find_ctx(&db, DBFILE_FUNCTION, "work_one", 0, 0);
	uint32_t loop = find_ctx(&db, DBFILE_LOOP, "work_three", 20, 0);
	uint32_t inl = find_ctx(&db, DBFILE_INLINE, "helper", 21, 0);
	uint32_t l30 = find_ctx(&db, DBFILE_LINE, "work_one", 30, 0);
	uint32_t l40 = find_ctx(&db, DBFILE_LINE, "main", 40, 0);
	ok(fmain != DBFILE_NONE && call41 != DBFILE_NONE && call42 != DBFILE_NONE &&
		   f3 != DBFILE_NONE && f1 != DBFILE_NONE && loop != DBFILE_NONE &&
		   inl != DBFILE_NONE && l30 != DBFILE_NONE && l40 != DBFILE_NONE,
	   "main, both call sites, both functions, the loop, the inline and the lines exist");
	if (fmain == DBFILE_NONE || f3 == DBFILE_NONE || f1 == DBFILE_NONE || loop == DBFILE_NONE ||
	    call41 == DBFILE_NONE || call42 == DBFILE_NONE || inl == DBFILE_NONE ||
	    l30 == DBFILE_NONE || l40 == DBFILE_NONE) {
		struct buf b = BUF_INIT;
		dbfile_dump(&db, &b, false);
		diag("%s", (char *)b.data);
		buf_release(&b);
		dbfile_close(&db);
		return;
	}
	is_uint(db.contexts[f3].parent, call41, "work_three is under the call site at line 41");
	is_uint(db.contexts[f1].parent, call42, "work_one is under the call site at line 42");
	is_uint(db.contexts[call41].parent, fmain, "call site 41 is in main");
	is_uint(db.contexts[inl].parent, loop, "the inlined helper is inside the loop");
	is_uint(db.contexts[loop].parent, f3, "the loop is in work_three");
	ok(find_ctx(&db, DBFILE_FUNCTION, "main", 0, 1) == DBFILE_NONE,
	   "main is one context for all threads");
	ok(find_ctx(&db, DBFILE_LINE, "work_one", 30, 1) == DBFILE_NONE,
	   "two addresses of line 30 are one context");
	/* Weights 1 + 2 + 3 + 6 = 12. */
	ok(incl_sum(&db, 0) == 4500 * 12, "root inclusive %.17g", incl_sum(&db, 0));
	ok(incl_sum(&db, fmain) == 4500 * 12, "main inclusive");
	ok(excl_sum(&db, fmain) == 0 && excl_sum(&db, l40) == 500 * 12,
	   "main's own time is on its line 40");
	ok(incl_sum(&db, call41) == 3000 * 12 && incl_sum(&db, f3) == 3000 * 12,
	   "call site 41 and work_three: 36000");
	ok(incl_sum(&db, call42) == 1000 * 12 && incl_sum(&db, f1) == 1000 * 12,
	   "call site 42 and work_one: 12000");
	ok(incl_sum(&db, f3) == 3 * incl_sum(&db, f1), "work_three : work_one = 3 : 1");
	ok(incl_sum(&db, loop) == 3000 * 12 && incl_sum(&db, inl) == 1000 * 12,
	   "loop 36000, inlined helper 12000");
	ok(excl_sum(&db, l30) == 1000 * 12, "line 30 exclusive");
	ok(additive(&db), "exclusive + children's inclusive = inclusive at every context");

	/* Statistics over the 4 threads at work_three: 3000, 6000, 9000, 18000. */
	struct dbfile_stat s = incl_of(&db, f3);
	is_uint(s.count, 4, "work_three: 4 threads");
	ok(s.sum == 36000 && s.min == 3000 && s.max == 18000, "sum, min, max by hand");
	ok(s.sum / s.count == 9000, "mean 9000");
	double sd = 3000 * sqrt(3.5);
	ok(fabs(s.stddev - sd) < 1e-9 * sd, "standard deviation %.17g (by hand %.17g)", s.stddev,
	   sd);
	ok(fabs(s.stddev / (s.sum / s.count) - sqrt(3.5) / 3) < 1e-12, "coefficient of variation");

	/* Per-thread values, read on demand. */
	struct dbfile_values v = { 0 };
	bool all = true;
	for (uint32_t th = 0; th < 4; th++) {
		if (dbfile_read_thread(&db, th, &v) < 0) {
			diag("%s", fth_errmsg());
			all = false;
			continue;
		}
		double f3v = -1;
		for (uint64_t i = 0; i < v.nvalues; i++)
			if (v.ctx[i] == f3)
				f3v = v.incl[i];
		if (f3v != 3000.0 * (double)k[th] || !thread_additive(&db, &v))
			all = false;
	}
	ok(all, "each thread's values: work_three = 3000 x weight, additive at every context");
	dbfile_values_release(&v);

	/* Flat view: work_three's exclusive excludes the inlined helper's code. */
	ok(flat(&db, "work_three", true) == 36000, "flat: work_three inclusive");
	ok(flat(&db, "work_three", false) == 24000, "flat: work_three exclusive (not helper)");
	ok(flat(&db, "helper", false) == 12000 && flat(&db, "helper", true) == 12000,
	   "flat: helper");
	ok(flat(&db, "main", true) == 54000 && flat(&db, "main", false) == 6000, "flat: main");
	/* The flat view adds up too: a function = its own code + what it calls or inlines. */
	ok(flat(&db, "main", true) == flat(&db, "main", false) + flat(&db, "work_three", true) +
					      flat(&db, "work_one", true),
	   "flat: main = main's own + work_three + work_one");
	ok(flat(&db, "work_three", true) ==
		   flat(&db, "work_three", false) + flat(&db, "helper", true),
	   "flat: work_three = its own + the inlined helper");
	/* Bottom-up: work_three's only caller is main through call site 41, with all of it. */
	uint32_t callers = 0;
	double from_main = 0;
	for (uint32_t i = 0; i < db.ncontexts; i++) {
		const struct dbfile_context *c = &db.contexts[i];
		if (c->kind != DBFILE_FUNCTION || c->function != db.contexts[f3].function)
			continue;
		uint32_t up = c->parent;
		while (up != DBFILE_NONE && db.contexts[up].kind != DBFILE_FUNCTION)
			up = db.contexts[up].parent;
		callers++;
		if (up == fmain)
			from_main += incl_sum(&db, i);
	}
	ok(callers == 1 && from_main == flat(&db, "work_three", true),
	   "bottom-up: work_three <- main carries all of work_three");
	ok(flats_add_up(&db), "the threads' flat profiles add up to the summary's");
	dbfile_close(&db);
	for (int i = 0; i < 4; i++)
		mfile_release(&t[i]);
	free(dir);
}

static void test_recursion(struct structs *ss)
{
	char *dir = tap_mkdir("rec-db");
	/* work_one calls itself at 0x310 (line 30) twice, then a sample: recursion as measured. */
	const struct node nodes[] = {
		{ MFILE_NO_PARENT, MFILE_NODE_ROOT, 0, 0 }, { 0, MFILE_NODE_FRAME, 0x119, 0 },
		{ 1, MFILE_NODE_FRAME, 0x311, 0 },	    { 2, MFILE_NODE_FRAME, 0x311, 0 },
		{ 3, MFILE_NODE_SAMPLE, 0x305, 7 },	    { 1, MFILE_NODE_SAMPLE, 0x305, 5 },
	};
	struct mfile m;
	make_mfile(&m, nodes, ARRAY_SIZE(nodes), 100);
	struct dbfile db;
	build(dir, &m, 1, ss, &db);
	ok(find_ctx(&db, DBFILE_FUNCTION, "work_one", 0, 2) != DBFILE_NONE &&
		   find_ctx(&db, DBFILE_FUNCTION, "work_one", 0, 3) == DBFILE_NONE,
	   "three levels of work_one: recursion stays as measured");
	ok(incl_sum(&db, find_ctx(&db, DBFILE_FUNCTION, "work_one", 0, 0)) == 12,
	   "outer work_one inclusive 12");
	ok(flat(&db, "work_one", true) == 12, "flat: recursion counted once per path (12, not 26)");
	ok(flat(&db, "work_one", false) == 12, "flat: exclusive 12");
	ok(additive(&db), "additive with recursion");
	dbfile_close(&db);
	mfile_release(&m);
	free(dir);
}

static void test_deterministic(struct structs *ss)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	for (int run = 0; run < 2; run++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/det-%d", tap_tmpdir(), run);
		if (mkdir(dir, 0755) < 0)
			diag("mkdir %s failed", dir);
		struct mfile t[3];
		for (int i = 0; i < 3; i++)
			split_thread(&t[i], (uint64_t)i + 1, 100 + (uint32_t)i);
		struct dbfile db;
		build(dir, t, 3, ss, &db);
		dbfile_dump(&db, run ? &b : &a, true);
		dbfile_close(&db);
		for (int i = 0; i < 3; i++)
			mfile_release(&t[i]);
	}
	ok(a.len > 0 && a.len == b.len && !memcmp(a.data, b.data, a.len),
	   "two builds from the same input dump the same");
	buf_release(&a);
	buf_release(&b);
}

static void test_no_structure(void)
{
	char *dir = tap_mkdir("nostruct");
	struct structs *none = structs_new(true);
	struct mfile t;
	split_thread(&t, 1, 100);
	struct dbfile db;
	build(dir, &t, 1, none, &db);
	ok(db.flags & DBFILE_FLAG_NO_LOOPS, "without structure the database says loops are missing");
	ok(find_ctx(&db, DBFILE_LOOP, NULL, 0, 0) == DBFILE_NONE, "and has no loops");
	ok(incl_sum(&db, 0) == 4500 && additive(&db), "values still add up by address");
	dbfile_close(&db);
	mfile_release(&t);
	structs_free(none);
	free(dir);
}

static void test_multiplexing(struct structs *ss)
{
	char *dir = tap_mkdir("mux");
	struct mfile t[2];
	two_threads(t);
	/* Thread 1 counted a quarter of the time it was enabled: its values count 4 times. */
	t[1].metrics[0].flags |= MFILE_METRIC_MULTIPLEXED;
	t[1].metrics[0].time_enabled = 4000;
	t[1].metrics[0].time_running = 1000;
	t[0].metrics[0].time_enabled = t[0].metrics[0].time_running = 4000;
	struct dbfile db;
	build(dir, t, 2, ss, &db);
	ok(incl_sum(&db, 0) == 4500 + 4 * 4500, "multiplexed values are scaled by enabled/running");
	const struct dbfile_metric *m = &db.metrics[0];
	ok(m->time_enabled == 8000 && m->time_running == 5000 && m->scale == 8000.0 / 5000 &&
		   (m->flags & MFILE_METRIC_MULTIPLEXED),
	   "coverage kept: enabled 8000, running 5000");
	ok(db.nmetrics == 2 && db.metrics[1].kind == DBFILE_METRIC_DERIVED &&
		   !strcmp(db.metrics[1].name, "cpu-clock (s)") &&
		   !strcmp(db.metrics[1].formula, "$0 / 1e9"),
	   "a derived metric gives the time in seconds");
	ok(additive(&db), "additive after scaling");
	dbfile_close(&db);
	mfile_release(&t[0]);
	mfile_release(&t[1]);
	free(dir);
}

/* B's metrics become slots, its cpu-clock, and the TMA node Retiring = $0 / $1 (its file's). */
static void add_tma_node(struct mfile *b)
{
	b->metrics = xreallocarray(b->metrics, 3, sizeof(*b->metrics));
	b->metrics[1] = b->metrics[0];
	b->metrics[0] = (struct mfile_metric){ .name = xstrdup("slots"), .description = xstrdup(""),
					       .parent = -1, .threshold = NAN,
					       .formula = xstrdup("") };
	b->metrics[2] = (struct mfile_metric){ .name = xstrdup("Retiring"),
					       .description = xstrdup("TMA level 1"),
					       .flags = MFILE_METRIC_TMA, .parent = 0,
					       .threshold = 0.7, .formula = xstrdup("$0/$1") };
	b->nmetrics = 3;
}

static void test_tma_formulas(struct structs *ss)
{
	char *dir = tap_mkdir("tma");
	struct mfile t[2];
	two_threads(t);
	/* Thread 1: metrics slots, cpu-clock, and the TMA node Retiring = $0 / $1 (its file). */
	struct mfile *b = &t[1];
	add_tma_node(b);
	struct dbfile db;
	build(dir, t, 2, ss, &db);
	ok(db.nmetrics == 4 && !strcmp(db.metrics[1].name, "slots") &&
		   !strcmp(db.metrics[2].name, "Retiring"),
	   "metrics: cpu-clock, slots, Retiring, then the derived time");
	ok(db.metrics[2].kind == DBFILE_METRIC_DERIVED && db.metrics[2].parent == 1 &&
		   !strcmp(db.metrics[2].formula, "$1/$0"),
	   "the TMA node is derived; its formula and parent use database indices (%s)",
	   db.metrics[2].formula);
	ok(additive(&db), "additive");
	dbfile_close(&db);
	mfile_release(&t[0]);
	mfile_release(&t[1]);
	free(dir);
}

/* Whether databases A and B (unifier_finish, before writing) have the same tables and tree. */
static bool same_tree(const struct dbfile *a, const struct dbfile *b)
{
	if (a->ncontexts != b->ncontexts || a->nfunctions != b->nfunctions ||
	    a->nstrings != b->nstrings || a->nmetrics != b->nmetrics || a->nmodules != b->nmodules ||
	    a->nthreads != b->nthreads || a->flags != b->flags)
		return false;
	for (uint32_t i = 0; i < a->ncontexts; i++) {
		const struct dbfile_context *x = &a->contexts[i], *y = &b->contexts[i];
		if (x->parent != y->parent || x->kind != y->kind || x->function != y->function ||
		    x->file != y->file || x->line != y->line || x->module != y->module ||
		    x->addr != y->addr)
			return false;
	}
	for (uint32_t i = 0; i < a->nfunctions; i++)
		if (memcmp(&a->functions[i], &b->functions[i], sizeof(a->functions[i])))
			return false;
	for (uint32_t i = 0; i < a->nstrings; i++)
		if (strcmp(a->strings[i], b->strings[i]))
			return false;
	for (uint32_t i = 0; i < a->nmodules; i++)
		if (a->modules[i].path != b->modules[i].path || a->modules[i].flags != b->modules[i].flags)
			return false;
	for (uint32_t i = 0; i < a->nmetrics; i++) {
		const struct dbfile_metric *x = &a->metrics[i], *y = &b->metrics[i];
		if (strcmp(x->name, y->name) || strcmp(x->formula, y->formula) ||
		    x->parent != y->parent || x->kind != y->kind || x->flags != y->flags ||
		    x->samples != y->samples || x->nthreads != y->nthreads ||
		    x->time_enabled != y->time_enabled || x->time_running != y->time_running)
			return false;
	}
	for (uint32_t i = 0; i < a->nthreads; i++)
		if (strcmp(a->threads[i].file, b->threads[i].file) ||
		    a->threads[i].tid != b->threads[i].tid)
			return false;
	return true;
}

static struct unifier *unifier_of(struct structs *ss, struct prof_problems *p, struct mfile *t,
				  int from, int to)
{
	struct unifier *u = unifier_new(ss, p);
	unifier_no_stats(u);
	for (int i = from; i < to; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%d.fthm", i);
		if (unifier_add(u, &t[i], name, NULL) < 0)
			diag("%s", fth_errmsg());
	}
	return u;
}

/* prof-mpi's reduction: trees packed and merged in order are the tree of all the threads. */
static void test_pack_merge(struct structs *ss)
{
	struct mfile t[4];
	split_thread(&t[0], 1, 100);
	split_thread(&t[1], 3, 101);
	two_threads(t + 2);
	struct mfile *b = &t[3]; /* with slots and a TMA node, as in test_tma_formulas */
	add_tma_node(b);
	struct prof_problems p = { 0 };
	struct unifier *all = unifier_of(ss, &p, t, 0, 4);
	struct unifier *first = unifier_of(ss, &p, t, 0, 1), *rest = unifier_of(ss, &p, t, 1, 4);
	struct unifier *second = unifier_of(ss, &p, t, 1, 2), *last = unifier_of(ss, &p, t, 2, 4);
	struct buf pk = BUF_INIT, pl = BUF_INIT;
	struct unifier_map map, map2;
	unifier_pack(last, &pl);
	ok(unifier_merge(second, pl.data, pl.len, &map) == 0, "a tree merges after another");
	unifier_map_release(&map);
	unifier_pack(second, &pk);
	ok(unifier_merge(first, pk.data, pk.len, &map) == 0, "and the merged tree after a third");
	struct dbfile want, got;
	unifier_finish(all, &want, MODPATH);
	unifier_finish(first, &got, MODPATH);
	ok(same_tree(&want, &got), "merged in rank order: the tree, tables and threads of all");
	ok(!strcmp(got.metrics[2].formula, want.metrics[2].formula) &&
		   !strcmp(got.metrics[2].formula, "$1/$0"),
	   "a TMA formula relocated to the database's metrics (%s)", got.metrics[2].formula);
	/* The map: the sender's contexts and metrics where the merged tree has them. */
	unifier_map_release(&map);
	struct buf pr = BUF_INIT;
	unifier_pack(rest, &pr);
	ok(unifier_merge(all, pr.data, pr.len, &map2) == 0, "a share merges into the whole tree");
	struct dbfile again;
	unifier_finish(rest, &again, MODPATH);
	bool mapped = map2.nctx == again.ncontexts && map2.ctx[0] == 0;
	for (uint32_t c = 1; mapped && c < map2.nctx; c++) {
		const struct dbfile_context *x = &again.contexts[c], *y = &want.contexts[map2.ctx[c]];
		mapped = x->kind == y->kind && x->line == y->line &&
			 map2.ctx[x->parent] == y->parent;
	}
	ok(mapped, "nothing new, and every context maps to the same context of the whole");
	unifier_map_release(&map2);
	dbfile_close(&again);
	/* Cut short or damaged: an error, never a crash or a tree half merged in silence. */
	bool refused = true;
	for (size_t n = 0; n < pk.len; n += 1 + pk.len / 200) {
		struct unifier *u = unifier_new(ss, &p);
		unifier_no_stats(u);
		refused &= unifier_merge(u, pk.data, n, &map) < 0;
		unifier_map_release(&map);
		unifier_free(u);
	}
	ok(refused, "every truncation of a packed tree is refused");
	uint32_t seed = 7;
	for (int k = 0; k < 300; k++) {
		struct buf bad = BUF_INIT;
		buf_add(&bad, pk.data, pk.len);
		seed = seed * 1103515245 + 12345;
		bad.data[(seed >> 8) % bad.len] ^= (uint8_t)(1u << (seed % 8));
		struct unifier *u = unifier_new(ss, &p);
		unifier_no_stats(u);
		unifier_merge(u, bad.data, bad.len, &map);
		unifier_map_release(&map);
		unifier_free(u);
		buf_release(&bad);
	}
	ok(true, "300 packed trees with a bit flipped merge or are refused, without a crash");
	dbfile_close(&want);
	dbfile_close(&got);
	buf_release(&pk);
	buf_release(&pl);
	buf_release(&pr);
	unifier_free(all);
	unifier_free(first);
	unifier_free(rest);
	unifier_free(second);
	unifier_free(last);
	for (int i = 0; i < 4; i++)
		mfile_release(&t[i]);
	problems_release(&p);
}

int main(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/split.fthst", tap_tmpdir());
	make_sfile(path);
	struct structs *ss = structs_new(true);
	ok(structs_add_file(ss, path) == 0, "structure file loads");
	test_split(ss);
	test_recursion(ss);
	test_deterministic(ss);
	test_no_structure();
	test_multiplexing(ss);
	test_tma_formulas(ss);
	test_pack_merge(ss);
	structs_free(ss);
	return done_testing();
}
