/* SPDX-License-Identifier: MIT */
/*
 * t-dbfile.c: the database format: round trip, a hand-built tree whose breadth-first
 * numbering, children, outermost instances, groups, lists and flat profiles are known, blocks
 * read through the cache, per-thread groups, corrupt, truncated, old and foreign input.
 */
#include "compat.h"
#include "tap.h"
#include "buf.h"
#include "crc32c.h"
#include "dbfile.h"
#include "error.h"
#include "le.h"
#include "mfile.h"
#include "xalloc.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small database: root > function f > line, with one metric, NTHREADS threads. */
static void make_db(struct dbfile *db, uint32_t nthreads)
{
	memset(db, 0, sizeof(*db));
	db->major = DBFILE_MAJOR;
	db->program = xstrdup("/bin/prog \"q\"");
	db->flags = DBFILE_FLAG_NO_LOOPS;
	db->nstrings = 3;
	db->strings = xcalloc(3, sizeof(char *));
	db->strings[0] = xstrdup("/bin/prog");
	db->strings[1] = xstrdup("f");
	db->strings[2] = xstrdup("prog.c");
	db->nmodules = 1;
	db->modules = xcalloc(1, sizeof(*db->modules));
	db->modules[0].path = 0;
	db->modules[0].build_id = xmalloc(2);
	db->modules[0].build_id[0] = 0xab;
	db->modules[0].build_id[1] = 0xcd;
	db->modules[0].build_id_len = 2;
	db->modules[0].flags = DBFILE_MODULE_SAMPLED;
	db->nfunctions = 1;
	db->functions = xcalloc(1, sizeof(*db->functions));
	db->functions[0] = (struct dbfile_function){ 1, 0, 2, 7, 0x1130, 0 };
	db->nmetrics = 2;
	db->metrics = xcalloc(2, sizeof(*db->metrics));
	db->metrics[0] = (struct dbfile_metric){ .name = xstrdup("cycles"),
						 .description = xstrdup("CPU cycles"),
						 .rate_kind = MFILE_RATE_PERIOD, .rate = 1000003,
						 .flags = MFILE_METRIC_MULTIPLEXED, .parent = -1,
						 .threshold = NAN, .formula = xstrdup(""),
						 .time_enabled = 200, .time_running = 100,
						 .samples = 12, .nthreads = nthreads, .scale = 2 };
	db->metrics[1] = (struct dbfile_metric){ .name = xstrdup("retiring"),
						 .description = xstrdup("TMA"),
						 .kind = DBFILE_METRIC_DERIVED, .flags = MFILE_METRIC_TMA,
						 .parent = 0, .threshold = 0.7,
						 .formula = xstrdup("m1 / m0"), .scale = 1 };
	db->nthreads = nthreads;
	db->thread_group = dbfile_thread_group(nthreads);
	db->threads = xcalloc(nthreads, sizeof(*db->threads));
	for (uint32_t t = 0; t < nthreads; t++) {
		char name[32];
		snprintf(name, sizeof(name), "prog-%u.fthm", t);
		db->threads[t] = (struct dbfile_thread){ .file = xstrdup(name),
							 .host = xstrdup("host"),
							 .program = xstrdup("/bin/prog"), .pid = 10,
							 .tid = 10 + t, .thread_index = t, .rank = -1,
							 .start_ns = 1000, .end_ns = 2000, .ppid = 9 };
		if (t == 1) {
			/* What the threads pane shows: the command line, entry and name. */
			struct dbfile_thread *th = &db->threads[t];
			th->argc = 2;
			th->argv = xcalloc(2, sizeof(char *));
			th->argv[0] = xstrdup("prog");
			th->argv[1] = xstrdup("-n 3");
			th->name = xstrdup("worker");
			th->entry = xstrdup("work_loop");
		}
	}
	db->ncontexts = 3;
	db->contexts = xcalloc(3, sizeof(*db->contexts));
	db->contexts[0] = (struct dbfile_context){ .parent = DBFILE_NONE, .kind = DBFILE_ROOT,
						   .function = DBFILE_NONE, .file = DBFILE_NONE,
						   .module = DBFILE_NONE };
	db->contexts[1] = (struct dbfile_context){ .parent = 0, .kind = DBFILE_FUNCTION,
						   .function = 0, .file = DBFILE_NONE };
	db->contexts[2] = (struct dbfile_context){ .parent = 1, .kind = DBFILE_LINE, .function = 0,
						   .file = 2, .line = 9 };
	db->nsum = 3;
	db->sum_start = xcalloc(4, sizeof(uint32_t));
	db->sum_start[0] = 0;
	db->sum_start[1] = 1;
	db->sum_start[2] = 2;
	db->sum_start[3] = 3;
	db->sum_metric = xcalloc(3, sizeof(uint16_t));
	db->sum_incl = xcalloc(3, sizeof(struct dbfile_stat));
	db->sum_excl = xcalloc(3, sizeof(struct dbfile_stat));
	for (int i = 0; i < 3; i++)
		db->sum_incl[i] = (struct dbfile_stat){ nthreads, 6.5 * nthreads, 6.5, 6.5, 0 };
	db->sum_excl[2] = db->sum_incl[2];
}

/* Write DB into DIR at LEVEL: each thread's values (THREAD_VALUES(T, V) gives thread T's),
 * then the summary. */
static int write_database(const char *dir, struct dbfile *db, int level,
			  void (*thread_values)(uint32_t t, struct dbfile_values *v))
{
	mkdir(dir, 0755);
	struct dbfile_thread_writer w;
	struct dbfile_values v = { 0 };
	if (dbfile_threads_open(&w, dir, db->nthreads, db->thread_group, level) < 0)
		return -1;
	for (uint32_t t = 0; t < db->nthreads; t++) {
		dbfile_values_reset(&v);
		thread_values(t, &v);
		if (dbfile_threads_add(&w, &v) < 0)
			return -1;
	}
	dbfile_values_release(&v);
	if (dbfile_threads_finish(&w) < 0)
		return -1;
	return dbfile_write_summary(dir, db, level);
}

static void db_thread_values(uint32_t t, struct dbfile_values *v)
{
	dbfile_values_push(v, 2, 0, 6.5, 6.5);
	dbfile_values_push(v, 1, 0, 6.5, 0);
	dbfile_values_push(v, 0, 0, 6.5 + t, (double)t);
}

static int write_db(const char *dir, struct dbfile *db, int level)
{
	return write_database(dir, db, level, db_thread_values);
}

/* The dump of DIR, or NULL. */
static char *dump_dir(const char *dir)
{
	struct dbfile back;
	if (dbfile_open(dir, &back) < 0)
		return NULL;
	struct buf b = BUF_INIT;
	int rc = dbfile_dump(&back, &b, true);
	dbfile_close(&back);
	if (rc < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static void test_round_trip(void)
{
	char dir[2][4096];
	char *text[2];
	for (int k = 0; k < 2; k++) {
		int level = k ? 3 : 0;
		snprintf(dir[k], sizeof(dir[k]), "%s/rt%d", tap_tmpdir(), level);
		struct dbfile db;
		make_db(&db, 3);
		ok(write_db(dir[k], &db, level) == 0, "level %d: written (%s)", level,
		   fth_errmsg());
		dbfile_close(&db);
		text[k] = dump_dir(dir[k]);
		ok(text[k] != NULL, "level %d: read back and dumped (%s)", level, fth_errmsg());
		char spool[8300];
		snprintf(spool, sizeof(spool), "%s/%s", dir[k], DBFILE_SPOOL);
		ok(access(spool, F_OK) < 0, "level %d: the spool is removed", level);
	}
	if (!text[0] || !text[1])
		return;
	is_str(text[1], text[0], "compressed and stored databases read the same");
	const char *t = text[0];
	like(t, "fathom database 3.4\n", "version 3.4");
	like(t, "tid=11 thread=1 rank=-1 start=1000 end=2000\n    ppid=9 name=worker entry=work_loop "
		"args=prog -n 3\n", "a thread's parent, name, entry and command line");
	like(t, "tid=12 thread=2 rank=-1 start=1000 end=2000\n    ppid=9\n",
	     "a thread without them");
	like(t, "m0 \"cycles\" raw unit=count rate=period:1000003", "the metric is described");
	like(t, "coverage=0.5 scale=2", "multiplexing coverage and scale");
	like(t, "parent=0 threshold=0.69999999999999996 formula=\"m1 / m0\"",
	     "TMA parent, threshold and formula");
	like(t, "  1 function f [0] outer=fgm\n", "the function context, outermost of all");
	like(t, "    2 line prog.c:9 in=1\n", "the line context, in the function's instance");
	like(t, "  f0 f [0] prog.c:7 entry=0x1130 g0 m0=19.5/19.5 contexts=1,2\n",
	     "the function: group, flat profile, contexts");
	like(t, "groups 1\n  g0 [0] prog.c m0=19.5/19.5\n", "the group and its profile");
	like(t, "module profiles 2\n  [0] m0=19.5/19.5\n  none\n", "the module profiles");
	like(t, "thread t2: 3 values\n  0 m0 8.5 2\n", "per-thread values");
	like(t,
	     "thread t2 flat profiles:\n  f0 m0=6.5/6.5\n  g0 m0=6.5/6.5\n  module 0 m0=6.5/6.5\n",
	     "per-thread flat profiles");
	free(text[0]);
	free(text[1]);
	struct dbfile back;
	ok(dbfile_open(dir[1], &back) == 0, "opened");
	struct dbfile_values v = { 0 };
	ok(dbfile_read_thread(&back, 1, &v) == 0 && v.nvalues == 3 && v.ctx[0] == 0 &&
		   v.incl[0] == 7.5 && v.excl[0] == 1,
	   "thread 1 read on its own");
	ok(dbfile_read_thread(&back, 3, &v) < 0, "no thread 3: %s", fth_errmsg());
	dbfile_values_release(&v);
	struct dbfile_stat in, ex;
	ok(dbfile_stats(&back, 2, 0, &in, &ex) == 0 && in.count == 3 && in.sum == 19.5 &&
		   in.min == 6.5 && in.max == 6.5 && ex.count == 3 && ex.sum == 19.5,
	   "statistics of the line: n=3 sum=19.5");
	ok(dbfile_stats(&back, 0, 0, &in, &ex) == 0 && in.count == 3 && ex.count == 0 &&
		   ex.sum == 0,
	   "statistics of the root");
	ok(dbfile_stats(&back, 1, 1, &in, &ex) == 0 && in.count == 0 && ex.count == 0,
	   "no entry: zero counts");
	ok(dbfile_stats(&back, 3, 0, &in, &ex) < 0, "no context 3: %s", fth_errmsg());
	struct dbfile_row row;
	ok(dbfile_thread_row(&back, 2, 0, &row) == 0 && row.n == 1 && row.metric[0] == 0 &&
		   row.val[0] == 8.5 && row.val[1] == 2,
	   "thread 2's row of the root");
	ok(dbfile_thread_row(&back, 3, 0, &row) < 0, "no thread 3 row: %s", fth_errmsg());
	dbfile_close(&back);
}

/*
 * A tree given in an order that is not breadth-first (numbers as given):
 *   0 root > 1 entry > 2 main (f0) > 3 line prog.c:5, 4 call prog.c:6 > 5 g (f1) >
 *       6 line g.c:3, 7 inline h (f2) > 8 line h.h:2, 9 call g.c:4 > 10 g > 11 line g.c:3
 *   1 entry > 12 k (f3, module 1) > 13 main
 * Breadth-first: 0 1 2 12 3 4 13 5 6 7 9 8 10 11 become 0 .. 13.  Exclusive values of metric
 * 0: thread 0 has 10 at 3, 20 at 6, 40 at 8, 80 at 11, 1 at 13; thread 1 has 5 at 8.
 */
enum { TREE_N = 14 };
static const uint32_t tree_parent[TREE_N] = {
	DBFILE_NONE, 0, 1, 2, 2, 4, 5, 5, 7, 5, 9, 10, 1, 12
};
static const uint8_t tree_kind[TREE_N] = { DBFILE_ROOT, DBFILE_ENTRY, DBFILE_FUNCTION, DBFILE_LINE,
					   DBFILE_CALL, DBFILE_FUNCTION, DBFILE_LINE, DBFILE_INLINE,
					   DBFILE_LINE, DBFILE_CALL, DBFILE_FUNCTION, DBFILE_LINE,
					   DBFILE_FUNCTION, DBFILE_FUNCTION };
static const uint32_t tree_fn[TREE_N] = { DBFILE_NONE, DBFILE_NONE, 0, 0, 0, 1, 1, 2, 2, 1, 1, 1,
					  3, 0 };
static const uint32_t tree_file[TREE_N] = { DBFILE_NONE, DBFILE_NONE, DBFILE_NONE, 1, 1,
					    DBFILE_NONE, 3, 2, 2, 3, DBFILE_NONE, 3, DBFILE_NONE,
					    DBFILE_NONE };
static const double tree_excl[2][TREE_N] = { { [3] = 10, [6] = 20, [8] = 40, [11] = 80, [13] = 1 },
					     { [8] = 5 } };

static void make_tree(struct dbfile *db, uint32_t block)
{
	memset(db, 0, sizeof(*db));
	db->program = xstrdup("tree");
	static const char *const str[] = { "main", "prog.c", "h.h", "g.c", "g", "h", "k", "k.c",
					   "/bin/tree", "/lib/libk.so" };
	db->nstrings = ARRAY_SIZE(str);
	db->strings = tap_strdup_array(str, db->nstrings);
	db->nmodules = 2;
	db->modules = xcalloc(2, sizeof(*db->modules));
	db->modules[0] = (struct dbfile_module){ 8, NULL, 0, DBFILE_MODULE_SAMPLED };
	db->modules[1] = (struct dbfile_module){ 9, NULL, 0, DBFILE_MODULE_SAMPLED };
	db->nfunctions = 4;
	db->functions = xcalloc(4, sizeof(*db->functions));
	db->functions[0] = (struct dbfile_function){ 0, 0, 1, 1, 0x100, 0 };
	db->functions[1] = (struct dbfile_function){ 4, 0, DBFILE_NONE, 0, 0x200, 0 };
	db->functions[2] = (struct dbfile_function){ 5, 0, 2, 1, 0, 0 };
	db->functions[3] = (struct dbfile_function){ 6, 1, 7, 1, 0x10, 0 };
	db->nmetrics = 1;
	db->metrics = xcalloc(1, sizeof(*db->metrics));
	db->metrics[0] = (struct dbfile_metric){ .name = xstrdup("cycles"),
						 .description = xstrdup(""), .parent = -1,
						 .threshold = NAN, .formula = xstrdup(""),
						 .nthreads = 2, .scale = 1 };
	db->nthreads = 2;
	db->thread_group = 1;
	db->threads = xcalloc(2, sizeof(*db->threads));
	for (uint32_t t = 0; t < 2; t++)
		db->threads[t] = (struct dbfile_thread){ .file = xstrdup("t.fthm"), .host = xstrdup("h"),
							 .program = xstrdup("tree"), .pid = 1,
							 .tid = 1 + t, .thread_index = t, .rank = -1,
							 .end_ns = 1 };
	db->ncontexts = TREE_N;
	db->block = block;
	db->contexts = xcalloc(TREE_N, sizeof(*db->contexts));
	for (uint32_t i = 0; i < TREE_N; i++)
		db->contexts[i] = (struct dbfile_context){
			.parent = tree_parent[i], .kind = tree_kind[i], .function = tree_fn[i],
			.file = tree_file[i], .line = i, .module = tree_fn[i] == 3 ? 1 : 0,
			.addr = 0x1000 + i };
	/* Inclusive values per thread, then the statistics over the threads. */
	double incl[2][TREE_N];
	memcpy(incl, tree_excl, sizeof(incl));
	for (uint32_t t = 0; t < 2; t++)
		for (uint32_t i = TREE_N; i-- > 1;)
			incl[t][tree_parent[i]] += incl[t][i];
	db->sum_start = xcalloc(TREE_N + 1, sizeof(uint32_t));
	db->sum_metric = xcalloc(TREE_N, sizeof(uint16_t));
	db->sum_incl = xcalloc(TREE_N, sizeof(struct dbfile_stat));
	db->sum_excl = xcalloc(TREE_N, sizeof(struct dbfile_stat));
	for (uint32_t i = 0; i < TREE_N; i++) {
		db->sum_start[i] = (uint32_t)db->nsum;
		struct dbfile_stat in = { 0 }, ex = { 0 };
		for (uint32_t t = 0; t < 2; t++) {
			if (incl[t][i] != 0) {
				in.min = in.count ? fmin(in.min, incl[t][i]) : incl[t][i];
				in.max = fmax(in.max, incl[t][i]);
				in.count++;
				in.sum += incl[t][i];
			}
			if (tree_excl[t][i] != 0) {
				ex.min = ex.count ? fmin(ex.min, tree_excl[t][i]) : tree_excl[t][i];
				ex.max = fmax(ex.max, tree_excl[t][i]);
				ex.count++;
				ex.sum += tree_excl[t][i];
			}
		}
		if (!in.count && !ex.count)
			continue;
		db->sum_incl[db->nsum] = in;
		db->sum_excl[db->nsum++] = ex;
	}
	db->sum_start[TREE_N] = (uint32_t)db->nsum;
}

/* Thread T of the tree: its exclusive values, and the inclusive ones they add up to. */
static void tree_thread_values(uint32_t t, struct dbfile_values *v)
{
	double incl[TREE_N];
	memcpy(incl, tree_excl[t], sizeof(incl));
	for (uint32_t i = TREE_N; i-- > 1;)
		incl[tree_parent[i]] += incl[i];
	for (uint32_t i = TREE_N; i-- > 0;) /* in reverse: the writer sorts */
		if (incl[i] != 0 || tree_excl[t][i] != 0)
			dbfile_values_push(v, i, 0, incl[i], tree_excl[t][i]);
}

/* The tree's two threads (make_tree), in one chunk. */
static int write_tree(const char *dir, struct dbfile *db, int level)
{
	return write_database(dir, db, level, tree_thread_values);
}

static bool list_is(uint32_t *list, uint32_t n, const uint32_t *want, uint32_t nwant)
{
	bool same = n == nwant && (n == 0 || !memcmp(list, want, n * sizeof(uint32_t)));
	free(list);
	return same;
}

/* Row R of FL is exactly (metric 0: INCL / EXCL), or empty when both are zero. */
static bool flat_row_is(const struct dbfile_flat *fl, uint32_t r, double incl, double excl)
{
	if (r >= fl->nrows)
		return false;
	uint32_t a = fl->start[r], b = fl->start[r + 1];
	if (incl == 0 && excl == 0)
		return a == b;
	return b == a + 1 && fl->metric[a] == 0 && fl->incl[a] == incl && fl->excl[a] == excl;
}

static void test_tree(int level, uint32_t block, uint32_t jobs)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/tree%d-%u-%u", tap_tmpdir(), level, block, jobs);
	struct dbfile db, back;
	make_tree(&db, block);
	db.jobs = jobs;
	ok(write_tree(dir, &db, level) == 0,
	   "tree (level %d, blocks of %u, %u converting threads): written (%s)", level, block, jobs,
	   fth_errmsg());
	dbfile_close(&db);
	if (!ok(dbfile_open(dir, &back) == 0, "opened (%s)", fth_errmsg()))
		return;
	is_uint(back.ncontexts, TREE_N, "14 contexts");
	is_uint(back.block, block ? block : DBFILE_BLOCK, "block size %u", block);
	/* Numbering, children, outer, flags: new number -> expected. */
	static const uint32_t parent[TREE_N] = { DBFILE_NONE, 0, 1, 1, 2, 2,  3,
						 5,	      7, 7, 7, 9, 10, 12 };
	static const uint32_t first[TREE_N] = { 1, 2, 4, 6, 7, 7, 8, 8, 11, 11, 12, 13, 13, 14 };
	static const uint32_t nch[TREE_N] = { 1, 2, 2, 1, 0, 1, 0, 3, 0, 1, 1, 0, 1, 0 };
	static const uint32_t given[TREE_N] = { 0, 1, 2, 12, 3, 4, 13, 5, 6, 7, 9, 8, 10, 11 };
	static const uint32_t outer[TREE_N] = { DBFILE_NONE, DBFILE_NONE, 2, 3, 2, 2, 6, 7, 7, 9, 7,
						9, 7, 7 };
	enum { F = DBFILE_CTX_OUTER_FN, G = DBFILE_CTX_OUTER_GRP, M = DBFILE_CTX_OUTER_MOD };
	static const uint8_t flags[TREE_N] = {
		0, 0, F | G | M, F | G | M, 0, 0, F | G | M, F | G, 0, F | G, 0, 0, 0, 0,
	};
	bool good = true;
	for (uint32_t i = 0; i < TREE_N; i++) {
		struct dbfile_context c;
		uint32_t g = given[i];
		if (dbfile_context(&back, i, &c) < 0 || c.parent != parent[i] ||
		    c.first_child != first[i] || c.nchildren != nch[i] || c.outer != outer[i] ||
		    c.flags != flags[i] || c.kind != tree_kind[g] || c.function != tree_fn[g] ||
		    c.file != tree_file[g] || c.line != g || c.addr != 0x1000 + g ||
		    c.module != (tree_fn[g] == 3 ? 1u : 0u)) {
			diag("context %u: parent %u first %u n %u outer %u flags %u line %u", i,
			     c.parent, c.first_child, c.nchildren, c.outer, c.flags, c.line);
			good = false;
		}
	}
	ok(good, "breadth-first numbers, children ranges, outer instances and flags");
	struct dbfile_context c;
	ok(dbfile_context(&back, TREE_N, &c) < 0, "no context 14: %s", fth_errmsg());
	/* Groups: (module 0, prog.c), (0, g.c: g's first line), (0, h.h), (1, k.c). */
	ok(back.ngroups == 4 && back.groups[0].module == 0 && back.groups[0].file == 1 &&
		   back.groups[1].module == 0 && back.groups[1].file == 3 &&
		   back.groups[2].module == 0 && back.groups[2].file == 2 &&
		   back.groups[3].module == 1 && back.groups[3].file == 7,
	   "four groups in order of first appearance, g's from its first line");
	ok(back.functions[0].group == 0 && back.functions[1].group == 1 &&
		   back.functions[2].group == 2 && back.functions[3].group == 3,
	   "the functions' groups");
	uint32_t *list, n;
	static const uint32_t f0[] = { 2, 4, 5, 6 }, f1[] = { 7, 8, 10, 12, 13 }, f2[] = { 9, 11 },
			      f3[] = { 3 }, inl1[] = { 9 };
	/* The contexts of each function, and those of code inlined into it. */
	static const struct {
		bool inlined;
		uint32_t function, n;
		const uint32_t *want;
		const char *what;
	} lists[] = {
		{ false, 0, 4, f0, "contexts of main" }, { false, 1, 5, f1, "contexts of g" },
		{ false, 2, 2, f2, "contexts of h" }, { false, 3, 1, f3, "contexts of k" },
		{ true, 1, 1, inl1, "h is inlined into g" },
		{ true, 0, 0, NULL, "nothing is inlined into main" },
	};
	for (size_t k = 0; k < ARRAY_SIZE(lists); k++) {
		int rc = (lists[k].inlined ? dbfile_inlined_contexts : dbfile_function_contexts)(
			&back, lists[k].function, &list, &n);
		ok(rc == 0 && list_is(list, n, lists[k].want, lists[k].n), "%s", lists[k].what);
	}
	ok(dbfile_function_contexts(&back, 4, &list, &n) < 0, "no function 4: %s", fth_errmsg());
	/* Flat profiles of the sums. */
	ok(flat_row_is(&back.flat, 0, 156, 11) && flat_row_is(&back.flat, 1, 145, 100) &&
		   flat_row_is(&back.flat, 2, 45, 45) && flat_row_is(&back.flat, 3, 1, 0),
	   "function profiles: main 156/11, g 145/100, h 45/45, k 1/0");
	ok(flat_row_is(&back.group_flat, 0, 156, 11) &&
		   flat_row_is(&back.group_flat, 1, 145, 100) &&
		   flat_row_is(&back.group_flat, 2, 45, 45) &&
		   flat_row_is(&back.group_flat, 3, 1, 0),
	   "group profiles");
	ok(back.module_flat.nrows == 3 && flat_row_is(&back.module_flat, 0, 156, 156) &&
		   flat_row_is(&back.module_flat, 1, 1, 0) &&
		   flat_row_is(&back.module_flat, 2, 0, 0),
	   "module profiles (and the empty row of no module)");
	/* Rows, from every block and back (the cache evicts). */
	struct dbfile_row row;
	ok(dbfile_summary_row(&back, 7, &row) == 0 && row.n == 1 && row.val[0] == 145 &&
		   row.val[1] == 0,
	   "sums of g (context 7)");
	ok(dbfile_summary_row(&back, 11, &row) == 0 && row.n == 1 && row.val[0] == 45 &&
		   row.val[1] == 45,
	   "sums of h's line (context 11)");
	double sum = 0;
	for (uint32_t round = 0; round < 3; round++)
		for (uint32_t i = 0; i < TREE_N; i++)
			if (dbfile_summary_row(&back, (i * 5 + round) % TREE_N, &row) == 0 && row.n)
				sum += row.val[1];
	is_int((long long)sum, 3 * 156, "exclusive sums over every context, three times");
	ok(dbfile_thread_row(&back, 0, 13, &row) == 0 && row.n == 1 && row.val[0] == 80 &&
		   row.val[1] == 80,
	   "thread 0 at context 13");
	ok(dbfile_thread_row(&back, 1, 13, &row) == 0 && row.n == 0, "thread 1 has nothing at 13");
	ok(dbfile_thread_row(&back, 1, 11, &row) == 0 && row.n == 1 && row.val[0] == 5 &&
		   row.val[1] == 5,
	   "thread 1 at context 11");
	struct dbfile_stat in, ex;
	ok(dbfile_stats(&back, 11, 0, &in, &ex) == 0 && in.count == 2 && in.min == 5 &&
		   in.max == 40 && ex.sum == 45,
	   "statistics of context 11: n=2 min=5 max=40");
	/* Thread flat profiles. */
	struct dbfile_flat fl[3];
	ok(dbfile_thread_flats(&back, 0, &fl[0], &fl[1], &fl[2]) == 0 &&
		   flat_row_is(&fl[0], 0, 151, 11) && flat_row_is(&fl[0], 1, 140, 100) &&
		   flat_row_is(&fl[0], 2, 40, 40) && flat_row_is(&fl[0], 3, 1, 0) &&
		   flat_row_is(&fl[1], 0, 151, 11) && flat_row_is(&fl[1], 3, 1, 0) &&
		   flat_row_is(&fl[2], 0, 151, 151) && flat_row_is(&fl[2], 1, 1, 0) &&
		   flat_row_is(&fl[2], 2, 0, 0),
	   "thread 0's profiles of functions, groups, modules");
	for (int k = 0; k < 3; k++)
		dbfile_flat_release(&fl[k]);
	ok(dbfile_thread_flats(&back, 1, &fl[0], &fl[1], &fl[2]) == 0 &&
		   flat_row_is(&fl[0], 0, 5, 0) && flat_row_is(&fl[0], 1, 5, 0) &&
		   flat_row_is(&fl[0], 2, 5, 5) && flat_row_is(&fl[0], 3, 0, 0) &&
		   flat_row_is(&fl[1], 1, 5, 0) && flat_row_is(&fl[2], 0, 5, 5),
	   "thread 1's profiles");
	for (int k = 0; k < 3; k++)
		dbfile_flat_release(&fl[k]);
	ok(dbfile_thread_flats(&back, 2, &fl[0], &fl[1], &fl[2]) < 0, "no thread 2: %s",
	   fth_errmsg());
	struct dbfile_values v = { 0 };
	ok(dbfile_read_thread(&back, 0, &v) == 0 && v.nvalues == 14 && v.ctx[0] == 0 &&
		   v.incl[0] == 151 && v.ctx[13] == 13 && v.incl[13] == 80,
	   "thread 0 whole: 14 values, contexts ascending");
	dbfile_values_release(&v);
	dbfile_close(&back);
}

/* A thread value where the summary has no entry: the writer refuses it. */
static void test_thread_without_summary(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/nosumm", tap_tmpdir());
	mkdir(dir, 0755);
	struct dbfile db;
	make_db(&db, 1);
	struct dbfile_thread_writer w;
	struct dbfile_values v = { 0 };
	dbfile_values_push(&v, 2, 1, 3, 3); /* metric 1 has no summary entry at context 2 */
	ok(dbfile_threads_open(&w, dir, 1, 1, 0) == 0 && dbfile_threads_add(&w, &v) == 0 &&
		   dbfile_threads_finish(&w) == 0,
	   "spooled");
	ok(dbfile_write_summary(dir, &db, 0) < 0, "refused: %s", fth_errmsg());
	like(fth_errmsg(), "thread 0: context 2, metric 1 has no summary entry",
	     "the message names the value");
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", dir, DBFILE_SUMMARY);
	ok(access(path, F_OK) < 0, "no summary.fdb left");
	dbfile_values_release(&v);
	dbfile_close(&db);
}

static void test_groups(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/groups", tap_tmpdir());
	struct dbfile db, back;
	make_db(&db, 2500);
	db.jobs = 3; /* the threads' values converted by 3 threads */
	is_uint(db.thread_group, 3, "2500 threads: 3 per chunk");
	ok(write_db(dir, &db, 1) == 0, "written (%s)", fth_errmsg());
	ok(dbfile_open(dir, &back) == 0, "read back");
	struct dbfile_values v = { 0 };
	bool good = true;
	static const uint32_t probe[] = { 0, 1, 2, 3, 1234, 2497, 2498, 2499 };
	for (size_t i = 0; i < ARRAY_SIZE(probe); i++)
		if (dbfile_read_thread(&back, probe[i], &v) < 0 || v.nvalues != 3 ||
		    v.incl[0] != 6.5 + probe[i])
			good = false;
	ok(good, "threads at both ends of their groups read back");
	dbfile_values_release(&v);
	dbfile_close(&back);
	dbfile_close(&db);
}

/* The offset of the first chunk named ID in the container DATA of N bytes, or 0. */
static uint64_t chunk_offset(const char *data, size_t n, const char *id)
{
	uint64_t toc = le_get64((const uint8_t *)data + n - 32);
	uint32_t nchunks = le_get32((const uint8_t *)data + n - 24);
	for (uint32_t i = 0; i < nchunks && toc + 40 * (i + 1) <= n; i++) {
		const char *e = data + toc + 40 * i;
		if (!memcmp(e, id, 4))
			return le_get64((const uint8_t *)e + 8);
	}
	return 0;
}

/* A database written and one of its files read back, for the corruption tests. */
struct written {
	char dir[4096], path[4200];
	char *bytes; /* malloc'ed */
	size_t n;
};

/* Make a database by MAKE(DB, N), write it at LEVEL by WRITE as NAME in the TAP directory and
 * read its file FILE into W: whether both were done (each an ok()). */
static bool write_and_read(struct written *w, const char *name,
			   void (*make)(struct dbfile *db, uint32_t n), uint32_t n,
			   int (*write)(const char *dir, struct dbfile *db, int level), int level,
			   const char *file)
{
	struct dbfile db;
	snprintf(w->dir, sizeof(w->dir), "%s/%s", tap_tmpdir(), name);
	make(&db, n);
	ok(write(w->dir, &db, level) == 0, "%s: written at level %d", name, level);
	dbfile_close(&db);
	snprintf(w->path, sizeof(w->path), "%s/%s", w->dir, file);
	w->bytes = tap_read_file(w->path, &w->n);
	return ok(w->bytes != NULL, "%s: %s read", name, file);
}

/* Every single-byte change of threads.fdb is refused when the threads are read. */
static void test_corrupt_threads(void)
{
	struct written w;
	if (!write_and_read(&w, "badthreads", make_tree, 4, write_tree, 3, DBFILE_THREADS))
		return;
	struct dbfile back;
	int refused = 0, total = 0;
	for (size_t i = 32; i + 32 < w.n; i += 3) {
		tap_write_flipped(w.path, w.bytes, w.n, i, 0x21);
		total++;
		if (dbfile_open(w.dir, &back) < 0) {
			diag("summary refused: %s", fth_errmsg());
			continue;
		}
		struct buf b = BUF_INIT;
		if (dbfile_dump(&back, &b, true) < 0 && strstr(fth_errmsg(), "threads.fdb"))
			refused++;
		buf_release(&b);
		dbfile_close(&back);
	}
	is_int(refused, total, "every changed byte of threads.fdb is refused, naming the file");
	tap_write_file(w.path, w.bytes, w.n / 2);
	ok(dbfile_open(w.dir, &back) == 0, "truncated threads.fdb: the summary opens");
	struct dbfile_row row;
	ok(dbfile_thread_row(&back, 0, 0, &row) < 0, "truncated threads.fdb: refused: %s",
	   fth_errmsg());
	dbfile_close(&back);
	free(w.bytes);
}

static void test_corrupt(void)
{
	struct written w;
	if (!write_and_read(&w, "bad", make_db, 2, write_db, 0, DBFILE_SUMMARY))
		return;
	struct dbfile back;
	/* Truncated. */
	tap_write_file(w.path, w.bytes, w.n / 2);
	ok(dbfile_open(w.dir, &back) < 0, "truncated: refused");
	like(fth_errmsg(), "summary.fdb", "truncated: the message names the file: %s",
	     fth_errmsg());
	/* Every single-byte change in the payload is refused at open (checksums), never a crash. */
	int refused = 0, total = 0;
	for (size_t i = 32; i + 32 < w.n; i += 7) {
		tap_write_flipped(w.path, w.bytes, w.n, i, 0x5a);
		total++;
		if (dbfile_open(w.dir, &back) < 0)
			refused++;
		else
			dbfile_close(&back);
	}
	is_int(refused, total, "every changed byte is refused");
	/* A damaged STAT chunk: refused at open, the message names the chunk. */
	uint64_t stat_off = chunk_offset(w.bytes, w.n, "STAT");
	uint64_t ctxt_off = chunk_offset(w.bytes, w.n, "CTXT");
	ok(stat_off > 0 && stat_off < w.n && ctxt_off > 0 && ctxt_off < w.n,
	   "found the STAT and CTXT chunks at %llu, %llu", (unsigned long long)stat_off,
	   (unsigned long long)ctxt_off);
	if (stat_off > 0 && stat_off < w.n) {
		tap_write_flipped(w.path, w.bytes, w.n, stat_off, 0x40);
		ok(dbfile_open(w.dir, &back) < 0, "damaged STAT: refused: %s", fth_errmsg());
		like(fth_errmsg(),
		     "summary.fdb: chunk STAT: ", "the message names the file and chunk");
	}
	/* Changed after the open: the block read later is checked again. */
	tap_write_file(w.path, w.bytes, w.n);
	if (ctxt_off > 0 && ctxt_off < w.n && dbfile_open(w.dir, &back) == 0) {
		tap_write_flipped(w.path, w.bytes, w.n, ctxt_off + 1, 0x01);
		struct dbfile_context x;
		ok(dbfile_context(&back, 1, &x) < 0, "changed after open: context refused: %s",
		   fth_errmsg());
		like(fth_errmsg(), "summary.fdb: chunk CTXT", "the message names the chunk");
		ok(dbfile_context(&back, 1, &x) < 0, "still refused when asked again");
		dbfile_close(&back);
	} else {
		ok(false, "opened the intact database");
	}
	/* Databases of format versions 1 and 2: refused with what to do. */
	for (uint16_t version = 1; version <= 2; version++) {
		char *c = xmalloc(w.n);
		memcpy(c, w.bytes, w.n);
		le_put16((uint8_t *)c + 8, version);
		le_put32((uint8_t *)c + 28, crc32c(0, c, 28));
		tap_write_file(w.path, c, w.n);
		free(c);
		char want[64];
		snprintf(want, sizeof(want), "version %u.%u was written by an older prof", version, DBFILE_MINOR);
		ok(dbfile_open(w.dir, &back) < 0, "version %u: refused", version);
		like(fth_errmsg(), want, "version %u: %s", version, fth_errmsg());
	}
	/* A newer major version. */
	char *c = xmalloc(w.n);
	memcpy(c, w.bytes, w.n);
	c[8] = 9;
	tap_write_file(w.path, c, w.n);
	ok(dbfile_open(w.dir, &back) < 0, "another major version: refused: %s", fth_errmsg());
	free(c);
	/* A measurement file is not a database. */
	tap_write_file(w.path, "FTHMMEAS", 8);
	ok(dbfile_open(w.dir, &back) < 0, "a measurement file: refused: %s", fth_errmsg());
	/* threads.fdb is not a summary. */
	snprintf(w.path, sizeof(w.path), "%s/%s", w.dir, DBFILE_THREADS);
	ok(dbfile_open(w.path, &back) < 0, "threads.fdb alone: refused: %s", fth_errmsg());
	ok(dbfile_open("/nonexistent-db", &back) < 0, "missing: refused: %s", fth_errmsg());
	free(w.bytes);
}

int main(void)
{
	test_round_trip();
	test_tree(0, 4, 0);
	test_tree(3, 4, 2);
	test_tree(1, 0, 1);
	test_groups();
	test_thread_without_summary();
	test_corrupt();
	test_corrupt_threads();
	return done_testing();
}
