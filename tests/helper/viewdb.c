/* SPDX-License-Identifier: MIT */
/*
 * viewdb.c: databases with known values for view (see viewdb.h): a builder that derives
 * inclusive values and statistics from exclusive values per thread (the writer derives the
 * numbering, indices and flat profiles), and the databases of the tests and the benchmark.
 */
#include "compat.h"
#include "viewdb.h"
#include "error.h"
#include "mfile.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct viewdb_value {
	uint32_t ctx, thread;
	uint16_t metric;
	double v;
};

void viewdb_init(struct viewdb *b, const char *program, uint32_t nthreads)
{
	memset(b, 0, sizeof(*b));
	struct dbfile *db = &b->db;
	db->major = DBFILE_MAJOR;
	db->minor = DBFILE_MINOR;
	db->program = xstrdup(program);
	db->nthreads = nthreads;
	db->thread_group = dbfile_thread_group(nthreads);
	db->threads = xcalloc(nthreads ? nthreads : 1, sizeof(*db->threads));
	for (uint32_t t = 0; t < nthreads; t++) {
		char name[64];
		snprintf(name, sizeof(name), "prog-%u-%u.fthm", 1000u, 1000u + t);
		db->threads[t] = (struct dbfile_thread){ .file = xstrdup(name), .host = xstrdup("host"),
							 .program = xstrdup(program), .pid = 1000,
							 .tid = 1000 + t, .thread_index = t, .rank = -1,
							 .start_ns = 1000000000, .end_ns = 2000000000 };
	}
	viewdb_context(b, DBFILE_NONE, DBFILE_ROOT, DBFILE_NONE, DBFILE_NONE, 0, DBFILE_NONE, 0);
}

uint32_t viewdb_string(struct viewdb *b, const char *s)
{
	ALLOC_GROW(b->db.strings, b->db.nstrings + 1, b->astrings);
	b->db.strings[b->db.nstrings] = xstrdup(s);
	return b->db.nstrings++;
}

uint32_t viewdb_module(struct viewdb *b, const char *path)
{
	uint32_t s = viewdb_string(b, path);
	ALLOC_GROW(b->db.modules, b->db.nmodules + 1, b->amodules);
	b->db.modules[b->db.nmodules] = (struct dbfile_module){ s, NULL, 0,
							       DBFILE_MODULE_SAMPLED };
	return b->db.nmodules++;
}

uint32_t viewdb_function(struct viewdb *b, const char *name, uint32_t module, uint32_t file,
			 uint32_t line)
{
	uint32_t s = viewdb_string(b, name);
	ALLOC_GROW(b->db.functions, b->db.nfunctions + 1, b->afunctions);
	b->db.functions[b->db.nfunctions] = (struct dbfile_function){ s, module, file, line,
								     0x1000 + 0x100 * b->db.nfunctions, 0 };
	return b->db.nfunctions++;
}

uint32_t viewdb_metric(struct viewdb *b, const char *name, unsigned unit, const char *formula)
{
	ALLOC_GROW(b->db.metrics, b->db.nmetrics + 1, b->ametrics);
	struct dbfile_metric *m = &b->db.metrics[b->db.nmetrics];
	*m = (struct dbfile_metric){ .name = xstrdup(name), .description = xstrdup(""),
				     .unit = (uint8_t)unit, .parent = -1, .threshold = NAN,
				     .formula = xstrdup(formula ? formula : ""),
				     .kind = formula ? DBFILE_METRIC_DERIVED : DBFILE_METRIC_RAW,
				     .scale = 1 };
	if (!formula) {
		m->rate_kind = MFILE_RATE_PERIOD;
		m->rate = 1000000;
		m->time_enabled = m->time_running = 2000000000;
		m->nthreads = b->db.nthreads;
	}
	return b->db.nmetrics++;
}

uint32_t viewdb_context(struct viewdb *b, uint32_t parent, unsigned kind, uint32_t function,
			uint32_t file, uint32_t line, uint32_t module, uint64_t addr)
{
	ALLOC_GROW(b->db.contexts, b->db.ncontexts + 1, b->acontexts);
	b->db.contexts[b->db.ncontexts] = (struct dbfile_context){
		.parent = parent, .kind = (uint8_t)kind, .function = function, .file = file,
		.line = line, .module = module, .addr = addr
	};
	return b->db.ncontexts++;
}

void viewdb_value(struct viewdb *b, uint32_t ctx, uint32_t thread, uint32_t metric, double v)
{
	ALLOC_GROW(b->values, b->nvalues + 1, b->avalues);
	b->values[b->nvalues++] = (struct viewdb_value){ ctx, thread, (uint16_t)metric, v };
}

static void stat_of(const double *x, uint32_t n, size_t stride, struct dbfile_stat *st)
{
	memset(st, 0, sizeof(*st));
	double mean = 0, m2 = 0;
	for (uint32_t t = 0; t < n; t++) {
		double v = x[t * stride];
		if (v == 0)
			continue;
		if (st->count == 0)
			st->min = st->max = v;
		st->min = fmin(st->min, v);
		st->max = fmax(st->max, v);
		st->count++;
		st->sum += v;
		double d = v - mean;
		mean += d / st->count;
		m2 += d * (v - mean);
	}
	if (st->count)
		st->stddev = sqrt(m2 / st->count);
}

int viewdb_write(struct viewdb *b, const char *dir, int level)
{
	struct dbfile *db = &b->db;
	uint32_t n = db->ncontexts, nt = db->nthreads, nm = db->nmetrics;
	size_t w = (size_t)nm;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fth_error_errno(errno, "%s: cannot create", dir);
	/* Per thread, dense: exclusive, then inclusive by adding children into parents. */
	double *incl = xcalloc((size_t)nt * n * w + 1, sizeof(double));
	double *excl = xcalloc((size_t)nt * n * w + 1, sizeof(double));
	for (uint64_t i = 0; i < b->nvalues; i++) {
		const struct viewdb_value *v = &b->values[i];
		excl[((size_t)v->thread * n + v->ctx) * w + v->metric] += v->v;
	}
	memcpy(incl, excl, (size_t)nt * n * w * sizeof(double));
	for (uint32_t t = 0; t < nt; t++)
		for (uint32_t c = n; c-- > 1;)
			for (uint32_t m = 0; m < nm; m++)
				incl[((size_t)t * n + db->contexts[c].parent) * w + m] +=
					incl[((size_t)t * n + c) * w + m];
	struct dbfile_thread_writer tw;
	struct dbfile_values vals = { 0 };
	if (dbfile_threads_open(&tw, dir, nt, db->thread_group, level) < 0)
		goto fail;
	for (uint32_t t = 0; t < nt; t++) {
		dbfile_values_reset(&vals);
		for (uint32_t c = 0; c < n; c++)
			for (uint32_t m = 0; m < nm; m++) {
				size_t at = ((size_t)t * n + c) * w + m;
				if (incl[at] != 0 || excl[at] != 0)
					dbfile_values_push(&vals, c, (uint16_t)m, incl[at], excl[at]);
			}
		if (dbfile_threads_add(&tw, &vals) < 0) {
			dbfile_threads_abort(&tw);
			goto fail;
		}
	}
	if (dbfile_threads_finish(&tw) < 0)
		goto fail;
	/* Summary: statistics over the threads with a non-zero value. */
	db->sum_start = xcalloc((size_t)n + 1, sizeof(uint32_t));
	uint64_t cap = 0;
	for (uint32_t c = 0; c < n; c++) {
		db->sum_start[c] = (uint32_t)db->nsum;
		for (uint32_t m = 0; m < nm; m++) {
			bool any = false;
			for (uint32_t t = 0; t < nt && !any; t++) {
				size_t at = ((size_t)t * n + c) * w + m;
				any = incl[at] != 0 || excl[at] != 0;
			}
			if (!any)
				continue;
			if (db->nsum == cap) {
				cap = cap ? cap * 2 : 1024;
				db->sum_metric = xreallocarray(db->sum_metric, cap, sizeof(uint16_t));
				db->sum_incl = xreallocarray(db->sum_incl, cap, sizeof(struct dbfile_stat));
				db->sum_excl = xreallocarray(db->sum_excl, cap, sizeof(struct dbfile_stat));
			}
			db->sum_metric[db->nsum] = (uint16_t)m;
			stat_of(incl + (size_t)c * w + m, nt, (size_t)n * w, &db->sum_incl[db->nsum]);
			stat_of(excl + (size_t)c * w + m, nt, (size_t)n * w, &db->sum_excl[db->nsum]);
			db->nsum++;
		}
	}
	db->sum_start[n] = (uint32_t)db->nsum;
	dbfile_values_release(&vals);
	free(incl);
	free(excl);
	return dbfile_write_summary(dir, db, level);
fail:
	dbfile_values_release(&vals);
	free(incl);
	free(excl);
	return -1;
}

void viewdb_release(struct viewdb *b)
{
	free(b->values);
	/* The builder's arrays are the database's: dbfile_close frees them (dir unset). */
	dbfile_close(&b->db);
	memset(b, 0, sizeof(*b));
}

/* Write B's database into DIR (compression LEVEL) and release B; 0 or -1 with a message. */
static int write_and_release(struct viewdb *b, const char *dir, int level)
{
	int rc = viewdb_write(b, dir, level);
	viewdb_release(b);
	return rc;
}

/* B begun for PROGRAM alone, one thread, with source file SOURCE (its string in *SOURCE_STRING):
 * the program's module. */
static uint32_t begin_one_module(struct viewdb *b, const char *program, const char *source,
				 uint32_t *source_string)
{
	viewdb_init(b, program, 1);
	*source_string = viewdb_string(b, source);
	return viewdb_module(b, program);
}

/*
 * The small database (values of cpu-clock per thread t0/t1/t2; cycles on lines 13, 31, 8):
 *
 *   <root> > <thread root> > main (prog.c:10)
 *     loop at prog.c:12 > prog.c:13 [100/200/300; cycles 10/20/30]
 *                       > [14] call > compute > prog.c:31 [50/50/50; cycles 5/5/5]
 *                                             > inlined dot at prog.c:32 > util.h:6 [40/0/80]
 *                                             > [33] call > sqrt (libm) > libm.c:8 [20/20/20;
 *                                                                           cycles 2/0/0]
 *     [20] call > compute > prog.c:31 [10/10/10]
 *     [22] call > fact > prog.c:51 [5/5/5]
 *                      > [52] call > fact > prog.c:51 [7/7/7]
 *                                         > [52] call > fact > prog.c:51 [1/2/3]
 *     [24] call > "evil ESC[2J NL name \xff\xfe" > prog.c:71 [3/0/0]
 *
 * Totals: cpu-clock 1005 (threads 236, 294, 475), cycles 77.  Flat: main 1005/600,
 * compute 360/180, dot 120/120, sqrt 60/60, fact 42/42 (recursion once), evil 3/3.
 * Metrics: 0 cpu-clock (ns, 201 samples), 1 cycles (multiplexed, scale 2), 2 "cpu-clock (s)"
 * = $0 / 1e9, 3 "cycles per ns" = $1 / $0.
 */
int viewdb_make_small(const char *dir)
{
	struct viewdb b;
	viewdb_init(&b, "/usr/bin/prog", 3);
	uint32_t prog_c = viewdb_string(&b, "prog.c"), util_h = viewdb_string(&b, "util.h");
	uint32_t libm_c = viewdb_string(&b, "libm.c");
	uint32_t mp = viewdb_module(&b, "/usr/bin/prog"), ml = viewdb_module(&b, "/usr/lib/libm.so.6");
	uint32_t fmain = viewdb_function(&b, "main", mp, prog_c, 10);
	uint32_t fcomp = viewdb_function(&b, "compute", mp, prog_c, 30);
	uint32_t fdot = viewdb_function(&b, "dot", mp, util_h, 5);
	uint32_t ffact = viewdb_function(&b, "fact", mp, prog_c, 50);
	uint32_t fsqrt = viewdb_function(&b, "sqrt", ml, libm_c, 7);
	uint32_t fevil = viewdb_function(&b, "evil\x1b[2J\nname\xff\xfe", mp, prog_c, 70);
	b.db.functions[fdot].addr = 0;
	uint32_t cpu = viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	uint32_t cyc = viewdb_metric(&b, "cycles", MFILE_UNIT_COUNT, NULL);
	viewdb_metric(&b, "cpu-clock (s)", MFILE_UNIT_COUNT, "$0 / 1e9");
	viewdb_metric(&b, "cycles per ns", MFILE_UNIT_COUNT, "$1 / $0");
	b.db.metrics[cpu].samples = 201;
	b.db.metrics[cyc].samples = 77;
	b.db.metrics[cyc].flags = MFILE_METRIC_MULTIPLEXED;
	b.db.metrics[cyc].time_running = 1000000000;
	b.db.metrics[cyc].scale = 2;
	const uint32_t N = DBFILE_NONE;
	uint32_t entry = viewdb_context(&b, 0, DBFILE_ENTRY, N, N, 0, N, 0);
	uint32_t c_main = viewdb_context(&b, entry, DBFILE_FUNCTION, fmain, N, 0, mp, 0);
	uint32_t loop = viewdb_context(&b, c_main, DBFILE_LOOP, fmain, prog_c, 12, mp, 0x1010);
	uint32_t l13 = viewdb_context(&b, loop, DBFILE_LINE, fmain, prog_c, 13, mp, 0);
	uint32_t k14 = viewdb_context(&b, loop, DBFILE_CALL, fmain, prog_c, 14, mp, 0);
	uint32_t comp1 = viewdb_context(&b, k14, DBFILE_FUNCTION, fcomp, N, 0, mp, 0);
	uint32_t l31a = viewdb_context(&b, comp1, DBFILE_LINE, fcomp, prog_c, 31, mp, 0);
	uint32_t inl = viewdb_context(&b, comp1, DBFILE_INLINE, fdot, prog_c, 32, mp, 0);
	uint32_t l6 = viewdb_context(&b, inl, DBFILE_LINE, fdot, util_h, 6, mp, 0);
	uint32_t k33 = viewdb_context(&b, comp1, DBFILE_CALL, fcomp, prog_c, 33, mp, 0);
	uint32_t sq = viewdb_context(&b, k33, DBFILE_FUNCTION, fsqrt, N, 0, ml, 0);
	uint32_t l8 = viewdb_context(&b, sq, DBFILE_LINE, fsqrt, libm_c, 8, ml, 0);
	uint32_t k20 = viewdb_context(&b, c_main, DBFILE_CALL, fmain, prog_c, 20, mp, 0);
	uint32_t comp2 = viewdb_context(&b, k20, DBFILE_FUNCTION, fcomp, N, 0, mp, 0);
	uint32_t l31b = viewdb_context(&b, comp2, DBFILE_LINE, fcomp, prog_c, 31, mp, 0);
	uint32_t k22 = viewdb_context(&b, c_main, DBFILE_CALL, fmain, prog_c, 22, mp, 0);
	uint32_t fa1 = viewdb_context(&b, k22, DBFILE_FUNCTION, ffact, N, 0, mp, 0);
	uint32_t l51a = viewdb_context(&b, fa1, DBFILE_LINE, ffact, prog_c, 51, mp, 0);
	uint32_t k52a = viewdb_context(&b, fa1, DBFILE_CALL, ffact, prog_c, 52, mp, 0);
	uint32_t fa2 = viewdb_context(&b, k52a, DBFILE_FUNCTION, ffact, N, 0, mp, 0);
	uint32_t l51b = viewdb_context(&b, fa2, DBFILE_LINE, ffact, prog_c, 51, mp, 0);
	uint32_t k52b = viewdb_context(&b, fa2, DBFILE_CALL, ffact, prog_c, 52, mp, 0);
	uint32_t fa3 = viewdb_context(&b, k52b, DBFILE_FUNCTION, ffact, N, 0, mp, 0);
	uint32_t l51c = viewdb_context(&b, fa3, DBFILE_LINE, ffact, prog_c, 51, mp, 0);
	uint32_t k24 = viewdb_context(&b, c_main, DBFILE_CALL, fmain, prog_c, 24, mp, 0);
	uint32_t ev = viewdb_context(&b, k24, DBFILE_FUNCTION, fevil, N, 0, mp, 0);
	uint32_t l71 = viewdb_context(&b, ev, DBFILE_LINE, fevil, prog_c, 71, mp, 0);
	static const struct {
		int which;
		double v[3];
	} cpu_values[] = {
		{ 0, { 100, 200, 300 } }, { 1, { 50, 50, 50 } }, { 2, { 40, 0, 80 } },
		{ 3, { 20, 20, 20 } },	  { 4, { 10, 10, 10 } }, { 5, { 5, 5, 5 } },
		{ 6, { 7, 7, 7 } },	  { 7, { 1, 2, 3 } },	 { 8, { 3, 0, 0 } },
	};
	uint32_t lines[] = { l13, l31a, l6, l8, l31b, l51a, l51b, l51c, l71 };
	for (size_t i = 0; i < ARRAY_SIZE(cpu_values); i++)
		for (uint32_t t = 0; t < 3; t++)
			if (cpu_values[i].v[t] != 0)
				viewdb_value(&b, lines[cpu_values[i].which], t, cpu, cpu_values[i].v[t]);
	for (uint32_t t = 0; t < 3; t++) {
		viewdb_value(&b, l13, t, cyc, 10.0 * (t + 1));
		viewdb_value(&b, l31a, t, cyc, 5);
	}
	viewdb_value(&b, l8, 0, cyc, 2);
	(void)k14;
	(void)k20;
	(void)k22;
	(void)k24;
	(void)k52a;
	(void)k52b;
	(void)inl;
	(void)k33;
	(void)fa2;
	(void)fa3;
	(void)sq;
	(void)comp2;
	(void)ev;
	return write_and_release(&b, dir, 3);
}

/*
 * The deep database, for screens that must fit: main > (rec.c:7 > recurse) 40 times >
 * rec.c:7 > a function whose name is far wider than a column > rec.c:21 [100], and
 * main > rec.c:30 [10].  Names and depths too long for any terminal's tree column.
 */
int viewdb_make_deep(const char *dir)
{
	struct viewdb b;
	uint32_t rec_c, mp = begin_one_module(&b, "/usr/bin/deep", "rec.c", &rec_c);
	uint32_t fmain = viewdb_function(&b, "main", mp, rec_c, 28);
	uint32_t frec = viewdb_function(&b, "recurse", mp, rec_c, 5);
	uint32_t flong = viewdb_function(
		&b, "a_function_whose_name_is_much_too_long_for_any_column_of_the_tree", mp, rec_c,
		20);
	uint32_t cpu = viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	const uint32_t N = DBFILE_NONE;
	b.db.metrics[cpu].samples = 110;
	uint32_t entry = viewdb_context(&b, 0, DBFILE_ENTRY, N, N, 0, N, 0);
	uint32_t c_main = viewdb_context(&b, entry, DBFILE_FUNCTION, fmain, N, 0, mp, 0);
	uint32_t l30 = viewdb_context(&b, c_main, DBFILE_LINE, fmain, rec_c, 30, mp, 0);
	uint32_t at = c_main, f = fmain;
	for (int d = 0; d <= 40; d++) {
		uint32_t call = viewdb_context(&b, at, DBFILE_CALL, f, rec_c, f == fmain ? 29 : 7,
					       mp, 0);
		f = d < 40 ? frec : flong;
		at = viewdb_context(&b, call, DBFILE_FUNCTION, f, N, 0, mp, 0);
	}
	uint32_t l21 = viewdb_context(&b, at, DBFILE_LINE, flong, rec_c, 21, mp, 0);
	viewdb_value(&b, l21, 0, cpu, 100);
	viewdb_value(&b, l30, 0, cpu, 10);
	return write_and_release(&b, dir, 3);
}

/*
 * The TMA database: the level-0 and level-1 TMA nodes as measure records them for Intel (after
 * prof rewrote $N to the database's indices), over slots and the four topdown counters.
 *   main > loop at kern.c:5 > kern.c:6 (stream)  slots 1000: ret 150, bad 20, fe 80, be 750
 *                           > kern.c:8 (branchy) slots 1000: ret 300, bad 350, fe 200, be 150
 *        > kern.c:12 (idle)                     no slots (cpu-clock only)
 * At main: Retiring 450/2000 = 22.5 %, Bad Speculation 18.5 %, Frontend Bound 14 %,
 * Backend Bound 45 %; Active 41 %, Stall 59 %.
 * AFTER (the second run of a comparison, the stream loop made less memory bound): kern.c:6
 * retires 400 and is backend bound 500, with 10 % more cpu-clock at kern.c:8; main then is
 * Retiring 35 %, Backend Bound 32.5 %.
 */
int viewdb_make_tma(const char *dir, bool after)
{
	struct viewdb b;
	uint32_t kern_c, mk = begin_one_module(&b, "/opt/tma/kern", "kern.c", &kern_c);
	uint32_t fmain = viewdb_function(&b, "main", mk, kern_c, 3);
	uint32_t cpu = viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	static const char *const inputs[] = { "slots[T1]", "topdown-retiring[T1]",
					      "topdown-bad-spec[T1]", "topdown-fe-bound[T1]",
					      "topdown-be-bound[T1]" };
	for (size_t i = 0; i < ARRAY_SIZE(inputs); i++) {
		uint32_t k = viewdb_metric(&b, inputs[i], MFILE_UNIT_COUNT, NULL);
		b.db.metrics[k].flags = MFILE_METRIC_PROXY;
		b.db.metrics[k].rate_kind = MFILE_RATE_NONE;
		b.db.metrics[k].rate = 0;
	}
#define SUM4 "(($2)+($3)+($4)+($5))"
	static const struct {
		const char *name;
		int parent;
		double threshold;
		const char *formula;
	} nodes[] = {
		{ "Total Slots", -1, NAN, "($1)" },
		{ "Active", 6, NAN, "$8+$9" },
		{ "Retiring", 7, 0.7, "($2)/" SUM4 },
		{ "Bad Speculation", 7, 0.15, "($3)/" SUM4 },
		{ "Stall", 6, NAN, "$11+$12" },
		{ "Frontend Bound", 10, 0.15, "($4)/" SUM4 },
		{ "Backend Bound", 10, 0.2, "($5)/" SUM4 },
	};
#undef SUM4
	for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		uint32_t k = viewdb_metric(&b, nodes[i].name, MFILE_UNIT_COUNT, nodes[i].formula);
		b.db.metrics[k].parent = nodes[i].parent;
		b.db.metrics[k].threshold = nodes[i].threshold;
		b.db.metrics[k].flags = MFILE_METRIC_TMA;
	}
	b.db.metrics[cpu].samples = 3000;
	const uint32_t N = DBFILE_NONE;
	uint32_t entry = viewdb_context(&b, 0, DBFILE_ENTRY, N, N, 0, N, 0);
	uint32_t c_main = viewdb_context(&b, entry, DBFILE_FUNCTION, fmain, N, 0, mk, 0);
	uint32_t loop = viewdb_context(&b, c_main, DBFILE_LOOP, fmain, kern_c, 5, mk, 0x1010);
	uint32_t l6 = viewdb_context(&b, loop, DBFILE_LINE, fmain, kern_c, 6, mk, 0);
	uint32_t l8 = viewdb_context(&b, loop, DBFILE_LINE, fmain, kern_c, 8, mk, 0);
	uint32_t l12 = viewdb_context(&b, c_main, DBFILE_LINE, fmain, kern_c, 12, mk, 0);
	static const double stream[] = { 1000, 150, 20, 80, 750 };
	static const double stream_after[] = { 1000, 400, 20, 80, 500 };
	static const double branchy[] = { 1000, 300, 350, 200, 150 };
	for (uint32_t k = 0; k < 5; k++) {
		viewdb_value(&b, l6, 0, 1 + k, after ? stream_after[k] : stream[k]);
		viewdb_value(&b, l8, 0, 1 + k, branchy[k]);
	}
	viewdb_value(&b, l6, 0, cpu, 1000);
	viewdb_value(&b, l8, 0, cpu, after ? 1100 : 1000);
	viewdb_value(&b, l12, 0, cpu, 1000);
	return write_and_release(&b, dir, 3);
}

/* A deterministic generator (xorshift). */
static uint32_t next_random(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return (uint32_t)(*s >> 16);
}

/*
 * A large database: main calls a dispatcher with a wide fan-out (2,000 call sites), and
 * functions expand breadth first into loops, lines and calls until NCONTEXTS contexts exist.
 * Metrics: cpu-clock (ns), cycles (multiplexed), instructions, and derived seconds and IPC.
 */
int viewdb_make_large(const char *dir, uint32_t ncontexts, uint32_t nthreads, uint32_t seed)
{
	struct viewdb b;
	uint64_t rs = 0x9e3779b97f4a7c15ull ^ seed;
	viewdb_init(&b, "/opt/big/app", nthreads);
	uint32_t nfiles = ncontexts / 2000 + 4, nfunc = ncontexts / 40 + 16, nmod = 4;
	uint32_t *files = xmalloc(nfiles * sizeof(uint32_t));
	char name[64];
	for (uint32_t i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "src/part%u.c", i);
		files[i] = viewdb_string(&b, name);
	}
	for (uint32_t i = 0; i < nmod; i++) {
		snprintf(name, sizeof(name), i ? "/opt/big/lib%u.so" : "/opt/big/app", i);
		viewdb_module(&b, name);
	}
	for (uint32_t f = 0; f < nfunc; f++) {
		if (f == 0)
			snprintf(name, sizeof(name), "main");
		else if (f == 1)
			snprintf(name, sizeof(name), "dispatch");
		else
			snprintf(name, sizeof(name), "kernel_%u", f);
		viewdb_function(&b, name, f < 2 ? 0 : f % nmod, files[f % nfiles], 10 + f % 5000);
	}
	uint32_t cpu = viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	uint32_t cyc = viewdb_metric(&b, "cycles", MFILE_UNIT_COUNT, NULL);
	uint32_t ins = viewdb_metric(&b, "instructions", MFILE_UNIT_COUNT, NULL);
	viewdb_metric(&b, "cpu-clock (s)", MFILE_UNIT_COUNT, "$0 / 1e9");
	viewdb_metric(&b, "IPC", MFILE_UNIT_COUNT, "$2 / $1");
	b.db.metrics[cyc].flags = MFILE_METRIC_MULTIPLEXED;
	b.db.metrics[cyc].time_running = 1000000000;
	b.db.metrics[cyc].scale = 2;
	const uint32_t N = DBFILE_NONE;
	uint32_t entry = viewdb_context(&b, 0, DBFILE_ENTRY, N, N, 0, N, 0);
	uint32_t *queue = xmalloc(((size_t)ncontexts + 16) * sizeof(uint32_t));
	uint32_t qh = 0, qt = 0;
	queue[qt++] = viewdb_context(&b, entry, DBFILE_FUNCTION, 0, N, 0, 0, 0);
	uint64_t samples = 0;
	bool wide_done = false;
	while (qh < qt && b.db.ncontexts + 8 < ncontexts) {
		uint32_t inst = queue[qh++];
		uint32_t f = b.db.contexts[inst].function;
		uint32_t file = b.db.functions[f].file, base = b.db.functions[f].line;
		uint32_t mod = b.db.functions[f].module;
		uint32_t body = inst, nlines = 1 + next_random(&rs) % 4;
		if (next_random(&rs) % 2)
			body = viewdb_context(&b, inst, DBFILE_LOOP, f, file, base + 1, mod, 0x10);
		for (uint32_t i = 0; i < nlines; i++) {
			uint32_t l = viewdb_context(&b, body, DBFILE_LINE, f, file, base + 2 + i, mod, 0);
			for (uint32_t t = 0; t < nthreads; t++) {
				double v = (double)(1 + next_random(&rs) % 1000) * (1 + t % 3);
				viewdb_value(&b, l, t, cpu, v * 1000);
				viewdb_value(&b, l, t, cyc, v * 3);
				viewdb_value(&b, l, t, ins, v * 2 + next_random(&rs) % 7);
				samples++;
			}
		}
		uint32_t ncalls = 1 + next_random(&rs) % 3;
		if (!wide_done && f == 0) {
			uint32_t k = viewdb_context(&b, inst, DBFILE_CALL, f, file, base + 9, mod, 0);
			uint32_t d = viewdb_context(&b, k, DBFILE_FUNCTION, 1, N, 0, 0, 0);
			for (uint32_t i = 0; i < 2000 && b.db.ncontexts + 8 < ncontexts; i++) {
				uint32_t kc = viewdb_context(&b, d, DBFILE_CALL, 1, files[1 % nfiles],
							     100 + i, 0, 0);
				uint32_t callee = 2 + next_random(&rs) % (nfunc - 2);
				queue[qt++] = viewdb_context(&b, kc, DBFILE_FUNCTION, callee, N, 0,
							     b.db.functions[callee].module, 0);
			}
			wide_done = true;
		}
		for (uint32_t i = 0; i < ncalls && b.db.ncontexts + 8 < ncontexts; i++) {
			uint32_t k = viewdb_context(&b, body, DBFILE_CALL, f, file, base + 7 + i, mod, 0);
			uint32_t callee = 2 + next_random(&rs) % (nfunc - 2);
			queue[qt++] = viewdb_context(&b, k, DBFILE_FUNCTION, callee, N, 0,
						     b.db.functions[callee].module, 0);
		}
	}
	b.db.metrics[cpu].samples = samples;
	b.db.metrics[cyc].samples = samples;
	b.db.metrics[ins].samples = samples;
	free(queue);
	free(files);
	return write_and_release(&b, dir, 1);
}
