/* SPDX-License-Identifier: MIT */
/*
 * view-bench: view's speed on a large database (make bench-view).
 *   view-bench [--contexts N] [--threads T] [--runs R] [--peer FATHOM_DUMP] [--view VIEW]
 *              [--keep DIR]
 * Generates a database (1,000,000 contexts, 4 threads, 3 measured and 2 derived metrics by
 * default), then measures, as the median of R runs: opening it and computing the first screen
 * (model_open, root expanded, model_rows, the values of a screen of rows), and each operation that
 * a keypress triggers, with the values of a screen of rows: switching to bottom-up and to flat
 * (and to flat first, in a database just opened), sorting by another column, expanding a node
 * with 2,000 children, the hot path, search next, the statistics over threads of a node,
 * selecting a thread and then another.  The peer is fathom-dump of the same database (reads
 * and prints it all) and, without it, the reading of summary.fdb alone.  Prints PASS or FAIL
 * against the targets: open + first screen < 1 s, each keypress < 50 ms; and the peak RSS,
 * with what the reader's tables hold of it and what a selected thread adds.  With VIEW (the
 * view program), batch output too: `view --batch` of the whole top-down, bottom-up and flat
 * trees (text, to /dev/null), run as a child so that its peak RSS is its own, the median of R
 * runs of each against the targets: < 5 s and < 200 MB.
 */
#include "compat.h"
#include "bench-stats.h"
#include "error.h"
#include "model.h"
#include "viewdb.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SCREEN 40

/* What a redraw needs: the rows, and two values of each of a screen of them. */
static double screen(struct model *model, enum model_view view, uint32_t metric)
{
	const model_node *rows;
	uint32_t n = model_rows(model, view, &rows);
	double s = 0;
	for (uint32_t i = 0; i < n && i < SCREEN; i++)
		s += model_value(model, view, rows[i], metric, true) +
		     model_value(model, view, rows[i], metric, false);
	return s;
}

enum { OP_OPEN, OP_BOTTOMUP, OP_FLAT, OP_FLAT_COLD, OP_SORT, OP_EXPAND, OP_HOT, OP_SEARCH,
       OP_STATS, OP_THREAD, OP_THREAD2, OP_PEER, NOPS };
/* Thread THREAD selected and its top-down screen drawn (added to *SINK): the time it took. */
static double thread_screen(struct model *model, int32_t thread, uint32_t metric, double *sink)
{
	double t0 = bench_now();
	if (model_select_thread(model, thread) < 0)
		die(1, "%s", fth_errmsg());
	*sink += screen(model, MODEL_TOPDOWN, metric);
	return bench_now() - t0;
}

static const char *const op_names[NOPS] = {
	"open + first screen", "switch to bottom-up", "switch to flat", "switch to flat, cold",
	"sort by another column", "expand 2,000 children", "hot path", "search next",
	"statistics of a node", "select a thread", "select another thread", "peer",
};

static double rss_open = NAN; /* after the first open and first screen */

/*
 * Where the memory goes: the RSS after the first open and screen, and the part of it that the
 * reader's tables hold (functions, groups, strings, metrics, threads and the three summary
 * profiles: what grows with the program, not with the contexts); what selecting a thread adds
 * (RSS before and after, on the first run), and what it holds (its three profiles).  The
 * reader's block cache and the model's nodes and caches are the rest of the RSS after open
 * less the program itself (the RSS before opening).
 */
static double rss_start = NAN, rss_thread_before = NAN, rss_thread_after = NAN;
static double mib_tables;

static double flat_mib(const struct dbfile_flat *f)
{
	return ((double)(f->nrows + 1) * sizeof(uint32_t) +
		(double)f->nvalues * (sizeof(uint16_t) + 2 * sizeof(double))) /
	       (1 << 20);
}

static void note_memory(const struct dbfile *db)
{
	double mib = 1 << 20, strings = 0;
	for (uint32_t i = 0; i < db->nstrings; i++)
		strings += (double)strlen(db->strings[i]) + 1 + sizeof(char *);
	mib_tables = ((double)db->nfunctions * sizeof(*db->functions) +
		      (double)db->ngroups * sizeof(*db->groups) + strings +
		      (double)db->nmodules * sizeof(*db->modules) +
		      (double)db->nmetrics * sizeof(*db->metrics) +
		      (double)db->nthreads * sizeof(*db->threads)) /
			     mib +
		     flat_mib(&db->flat) + flat_mib(&db->group_flat) + flat_mib(&db->module_flat);
}

static double run_once(const char *dir, double *t)
{
	if (isnan(rss_start))
		rss_start = bench_rss_mib();
	double t0 = bench_now();
	struct model *model = model_open(dir);
	if (!model)
		die(1, "%s", fth_errmsg());
	uint32_t metric = model_default_metric(model);
	model_expand(model, MODEL_TOPDOWN, model_root(model, MODEL_TOPDOWN), true);
	double sink = screen(model, MODEL_TOPDOWN, metric);
	t[OP_OPEN] = bench_now() - t0;
	if (isnan(rss_open)) {
		rss_open = bench_rss_mib();
		note_memory(model_db(model));
	}

	t0 = bench_now();
	model_expand(model, MODEL_BOTTOMUP, model_root(model, MODEL_BOTTOMUP), true);
	sink += screen(model, MODEL_BOTTOMUP, metric);
	t[OP_BOTTOMUP] = bench_now() - t0;

	t0 = bench_now();
	model_expand(model, MODEL_FLAT, model_root(model, MODEL_FLAT), true);
	sink += screen(model, MODEL_FLAT, metric);
	t[OP_FLAT] = bench_now() - t0;

	/* The dispatcher: main's call site with 2,000 children, found from the root. */
	model_node node = model_search(model, MODEL_TOPDOWN, MODEL_NONE, "dispatch", true);
	if (node == MODEL_NONE)
		die(1, "the generated database has no dispatcher");
	const model_node *kids;
	if (model_children(model, MODEL_TOPDOWN, node, &kids) == 1)
		node = kids[0]; /* the call site: its callee is the dispatcher */
	model_reveal(model, MODEL_TOPDOWN, node);
	model_expand(model, MODEL_TOPDOWN, node, false);
	t0 = bench_now();
	model_expand(model, MODEL_TOPDOWN, node, true);
	sink += screen(model, MODEL_TOPDOWN, metric);
	t[OP_EXPAND] = bench_now() - t0;
	const model_node *rows;
	if (model_rows(model, MODEL_TOPDOWN, &rows) < 2000)
		die(1, "the dispatcher did not show its 2,000 children");

	t0 = bench_now();
	struct model_sort s = model_get_sort(model);
	s.metric = (metric + 1) % model_nmetrics(model);
	s.inclusive = false;
	model_set_sort(model, &s);
	sink += screen(model, MODEL_TOPDOWN, metric);
	t[OP_SORT] = bench_now() - t0;
	s.metric = metric;
	s.inclusive = true;
	model_set_sort(model, &s);

	t0 = bench_now();
	model_hot_path(model, MODEL_TOPDOWN, model_root(model, MODEL_TOPDOWN), metric, 0.5);
	sink += screen(model, MODEL_TOPDOWN, metric);
	t[OP_HOT] = bench_now() - t0;

	t0 = bench_now();
	model_node hit = model_search(model, MODEL_TOPDOWN, node, "kernel_7*", true);
	if (hit != MODEL_NONE)
		model_reveal(model, MODEL_TOPDOWN, hit);
	sink += screen(model, MODEL_TOPDOWN, metric);
	t[OP_SEARCH] = bench_now() - t0;

	/* The statistics over threads of the search hit (the TUI's statistics line). */
	t0 = bench_now();
	struct dbfile_stat in, ex;
	if (model_stats(model, MODEL_TOPDOWN, hit != MODEL_NONE ? hit : node, metric, &in, &ex) < 0)
		die(1, "%s", fth_errmsg());
	sink += in.count + in.max;
	t[OP_STATS] = bench_now() - t0;

	bool first = isnan(rss_thread_before);
	if (first)
		rss_thread_before = bench_rss_mib();
	t[OP_THREAD] = thread_screen(model, 1, metric, &sink);
	if (first)
		rss_thread_after = bench_rss_mib();
	t[OP_THREAD2] = thread_screen(model, 0, metric, &sink);
	model_close(model);

	/* Flat first, in a database just opened (nothing built for bottom-up before). */
	model = model_open(dir);
	if (!model)
		die(1, "%s", fth_errmsg());
	model_expand(model, MODEL_TOPDOWN, model_root(model, MODEL_TOPDOWN), true);
	sink += screen(model, MODEL_TOPDOWN, metric);
	t0 = bench_now();
	model_expand(model, MODEL_FLAT, model_root(model, MODEL_FLAT), true);
	sink += screen(model, MODEL_FLAT, metric);
	t[OP_FLAT_COLD] = bench_now() - t0;
	model_close(model);
	return sink;
}

/* One `VIEW --batch --view WHICH DIR` to /dev/null: its time, and its peak RSS into *MIB. */
static double run_batch(const char *view, const char *which, const char *dir, double *mib)
{
	double t0 = bench_now();
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(view, view, "--batch", "--view", which, dir, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		die(1, "%s --batch --view %s %s failed", view, which, dir);
	*mib = (double)ru.ru_maxrss / 1024;
	return bench_now() - t0;
}

static double run_peer(const char *peer, const char *dir)
{
	double t0 = bench_now();
	if (peer) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (!freopen("/dev/null", "w", stdout))
				_exit(127);
			execl(peer, peer, dir, (char *)NULL);
			_exit(127);
		}
		int status;
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			die(1, "%s %s failed", peer, dir);
	} else {
		struct dbfile db;
		if (dbfile_open(dir, &db) < 0)
			die(1, "%s", fth_errmsg());
		dbfile_close(&db);
	}
	return bench_now() - t0;
}

int main(int argc, char **argv)
{
	fth_progname = "view-bench";
	unsigned long contexts = 1000000, threads = 4;
	int runs = 5;
	const char *peer = NULL, *keep = NULL, *view = NULL;
	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && !strcmp(argv[i], "--contexts"))
			contexts = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
			threads = strtoul(argv[++i], NULL, 10);
		else if (i + 1 < argc && !strcmp(argv[i], "--runs"))
			runs = atoi(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--peer"))
			peer = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--keep"))
			keep = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--view"))
			view = argv[++i];
		else
			die(2, "usage: view-bench [--contexts N] [--threads T] [--runs R] "
			       "[--peer FATHOM_DUMP] [--view VIEW] [--keep DIR]");
	}
	if (runs < 1 || runs > 50 || contexts < 1000 || threads < 2 || threads > 1000)
		die(2, "view-bench: out-of-range option");
	char dir[4096];
	char tmpl[] = "/tmp/view-bench-XXXXXX";
	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
	} else {
		if (!mkdtemp(tmpl))
			die(1, "cannot create a temporary directory");
		snprintf(dir, sizeof(dir), "%s/db", tmpl);
	}
	char summary[4200];
	snprintf(summary, sizeof(summary), "%s/summary.fdb", dir);
	double t0 = bench_now();
	/* Generated in a child, so that the peak RSS below is the viewer's alone. */
	fflush(stdout);
	if (access(summary, R_OK) != 0) {
		pid_t pid = fork();
		if (pid == 0) {
			if (viewdb_make_large(dir, (uint32_t)contexts, (uint32_t)threads, 1) < 0) {
				fprintf(stderr, "view-bench: %s\n", fth_errmsg());
				_exit(1);
			}
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			die(1, "could not generate the database");
	}
	printf("view-bench: %lu contexts, %lu threads, database %s (generated in %.1f s)\n",
	       contexts, threads, dir, bench_now() - t0);
	double *t = xcalloc((size_t)runs * NOPS, sizeof(double));
	double sink = 0;
	for (int r = 0; r < runs; r++) {
		sink += run_once(dir, t + (size_t)r * NOPS);
		t[(size_t)r * NOPS + OP_PEER] = run_peer(peer, dir);
	}
	double med[NOPS];
	for (int op = 0; op < NOPS; op++) {
		double *v = xcalloc((size_t)runs, sizeof(double));
		for (int r = 0; r < runs; r++)
			v[r] = t[(size_t)r * NOPS + op];
		med[op] = bench_median(v, runs);
		free(v);
	}
	bool pass = true;
	printf("%-26s %10s %8s %s\n", "operation", "median ms", "/ peer", "target");
	for (int op = 0; op < NOPS; op++) {
		double limit = op == OP_OPEN ? 1.0 : op == OP_PEER ? INFINITY : 0.050;
		bool ok = med[op] < limit;
		pass &= ok;
		printf("%-26s %10.1f %8.3f %s\n", op == OP_PEER ? (peer ? "peer: fathom-dump"
									: "peer: dbfile_open")
								: op_names[op],
		       med[op] * 1000, med[op] / med[OP_PEER],
		       op == OP_PEER ? "" : ok ? (op == OP_OPEN ? "< 1 s: PASS" : "< 50 ms: PASS")
					       : (op == OP_OPEN ? "< 1 s: FAIL" : "< 50 ms: FAIL"));
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("peak RSS of the viewer %.1f MiB (%.1f MiB after opening and the first screen, "
	       "%.1f MiB before opening)\n",
	       (double)ru.ru_maxrss / 1024, rss_open, rss_start);
	printf("  at open: the reader's tables (functions, groups, strings, threads, summary "
	       "profiles) %.1f MiB; its block cache, the model's nodes and caches the other "
	       "%.1f MiB\n",
	       mib_tables, rss_open - rss_start - mib_tables);
	printf("  selecting a thread (its profiles, its rows of what is shown) adds %.1f MiB\n",
	       rss_thread_after - rss_thread_before);
	if (view) {
		/* Batch output of every row, as a child of its own (its RSS alone). */
		static const char *const views[] = { "top-down", "bottom-up", "flat" };
		printf("%-26s %10s %8s %9s %s\n", "view --batch (text)", "median ms", "/ peer",
		       "peak MiB", "target");
		for (int k = 0; k < 3; k++) {
			double *bt = xcalloc((size_t)runs, sizeof(double));
			double *bm = xcalloc((size_t)runs, sizeof(double));
			for (int r = 0; r < runs; r++)
				bt[r] = run_batch(view, views[k], dir, &bm[r]);
			double mt = bench_median(bt, runs), mm = bench_median(bm, runs);
			bool ok = mt < 5.0 && mm * (1 << 20) < 200e6;
			pass &= ok;
			printf("  %-24s %10.1f %8.3f %9.1f < 5 s, < 200 MB: %s\n", views[k], mt * 1000,
			       mt / med[OP_PEER], mm, ok ? "PASS" : "FAIL");
			free(bt);
			free(bm);
		}
	}
	printf("view-bench: %s (%d runs, checksum %.6g)\n", pass ? "PASS" : "FAIL", runs, sink);
	free(t);
	if (!keep)
		bench_remove_tree(tmpl, "view-bench");
	return pass ? 0 : 1;
}
