/* SPDX-License-Identifier: MIT */
/*
 * trace-bench: the trace view's speed and memory on a large trace (make bench-trace).
 *   trace-bench [--threads T] [--samples N] [--runs R] [--keep DIR]
 * Generates a database whose T threads (64 by default) each have a trace of N samples
 * (1,000,000), 100 us apart with a sleep now and then, in phases of 16 functions of 4 leaves,
 * then measures, as the median of R runs (5): opening it (the database, its traces and the
 * first screen), and each keypress's redraw, the summary strip over every thread and a
 * screen of 40 thread rows of 150 bins: zooming in step by step from the whole run to 1 ms,
 * panning, a depth change, going back to the whole run.  Prints PASS or FAIL against the
 * targets (open < 1 s, each redraw < 50 ms), and the resident memory after the open and at
 * the end against the size of traces.fdb: memory follows the window, not the trace.
 */
#include "compat.h"
#include "bench-stats.h"
#include "dbtrace.h"
#include "error.h"
#include "mfile.h"
#include "model-trace.h"
#include "model.h"
#include "viewdb.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROWS 40
#define BINS 150
#define NPHASES 16
#define NLEAVES 4

/* The database: main, 16 phase functions of 4 leaves each, one line each; every thread's
 * trace walks the phases, a leaf at a time. */
static void generate(const char *dir, uint32_t nthreads, uint64_t nsamples)
{
	struct viewdb b;
	viewdb_init(&b, "trace-bench", nthreads);
	uint32_t mod = viewdb_module(&b, "/bench/trace-bench");
	uint32_t file = viewdb_string(&b, "trace.c");
	uint32_t metric = viewdb_metric(&b, "CPUTIME", MFILE_UNIT_NANOSECONDS, NULL);
	uint32_t fmain = viewdb_function(&b, "main", mod, file, 1);
	uint32_t cmain = viewdb_context(&b, 0, DBFILE_FUNCTION, fmain, file, 1, mod, 0x100);
	uint32_t leaf[NPHASES][NLEAVES];
	for (uint32_t p = 0; p < NPHASES; p++) {
		char name[32];
		snprintf(name, sizeof(name), "phase_%u", p);
		uint32_t fp = viewdb_function(&b, name, mod, file, 10 + p * 10);
		uint32_t cp = viewdb_context(&b, cmain, DBFILE_FUNCTION, fp, file, 10 + p * 10, mod,
					     0x1000 + p * 0x100);
		for (uint32_t l = 0; l < NLEAVES; l++) {
			snprintf(name, sizeof(name), "leaf_%u_%u", p, l);
			uint32_t fl = viewdb_function(&b, name, mod, file, 500 + p * 10 + l);
			uint32_t cl = viewdb_context(&b, cp, DBFILE_FUNCTION, fl, file,
						     500 + p * 10 + l, mod, 0x8000 + p * 0x100 + l);
			leaf[p][l] = viewdb_context(&b, cl, DBFILE_LINE, fl, file, 501 + p * 10 + l,
						    mod, 0x8000 + p * 0x100 + l + 4);
		}
	}
	if (mkdir(dir, 0755) < 0)
		die(1, "%s: cannot create: %s", dir, strerror(errno));
	struct dbtrace_spool s;
	if (dbtrace_spool_open(&s, dir) < 0)
		die(1, "%s", fth_errmsg());
	struct dbtrace_record *rec = xcalloc(nsamples, sizeof(*rec));
	uint64_t rng = 12345;
	for (uint32_t t = 0; t < nthreads; t++) {
		uint64_t time = 1000000 * (uint64_t)t, phase_len = 20000 + 3000 * (t % 7);
		double counts[NPHASES][NLEAVES] = { { 0 } };
		for (uint64_t i = 0; i < nsamples; i++) {
			rng = rng * 6364136223846793005ull + 1442695040888963407ull;
			uint32_t p = (uint32_t)((i / phase_len + t) % NPHASES);
			uint32_t l = (uint32_t)(rng >> 33) % NLEAVES;
			time += 100000 + (rng >> 40) % 20000;
			if (i % 200000 == 199999)
				time += 50000000; /* a 50 ms sleep */
			rec[i] = (struct dbtrace_record){ time, leaf[p][l] };
			counts[p][l] += 100000;
		}
		if (dbtrace_spool_add(&s, t, rec, nsamples) < 0)
			die(1, "%s", fth_errmsg());
		for (uint32_t p = 0; p < NPHASES; p++)
			for (uint32_t l = 0; l < NLEAVES; l++)
				if (counts[p][l])
					viewdb_value(&b, leaf[p][l], t, metric, counts[p][l]);
		b.db.threads[t].start_ns = 1700000000000000000ull;
		b.db.threads[t].end_ns = b.db.threads[t].start_ns + time + 1000;
	}
	free(rec);
	if (dbtrace_spool_finish(&s) < 0 || viewdb_write(&b, dir, 1) < 0)
		die(1, "%s", fth_errmsg());
	viewdb_release(&b);
}

/* A redraw: the summary strip over every thread, and a screen of thread rows. */
static double redraw(struct trace_model *m, uint64_t t0, uint64_t t1)
{
	static struct trace_cell cells[BINS];
	static struct trace_share share[BINS * 4];
	static uint32_t nshare[BINS];
	double t = bench_now();
	if (trace_model_summary(m, t0, t1, BINS, 4, share, nshare) < 0)
		die(1, "%s", fth_errmsg());
	for (uint32_t i = 0; i < ROWS && i < m->db->nthreads; i++)
		if (trace_model_row(m, i, t0, t1, BINS, cells) < 0)
			die(1, "%s", fth_errmsg());
	return bench_now() - t;
}

enum { OP_OPEN, OP_WHOLE, OP_ZOOM1, OP_ZOOM2, OP_ZOOM3, OP_ZOOM4, OP_PAN, OP_DEPTH, OP_BACK,
       NOPS };
static const char *const op_names[NOPS] = {
	"open + first screen", "redraw, whole run", "zoom in to 1/8", "zoom in to 1/64",
	"zoom in to 1/512", "zoom in to 1 ms", "pan half a window", "depth change",
	"back to the whole run",
};

static double rss_open = NAN;

static void run_once(const char *dir, double *t)
{
	double t0 = bench_now();
	struct model *model = model_open(dir);
	struct trace_model *m;
	if (!model || model_traces(model, &m) != 0)
		die(1, "%s: %s", dir, fth_errmsg());
	trace_model_set_depth(m, trace_model_default_depth(m, m->t_begin, m->t_end));
	uint64_t a = m->t_begin, z = m->t_end + 1, span = z - a, mid = a + span / 2;
	redraw(m, a, z);
	t[OP_OPEN] = bench_now() - t0;
	if (isnan(rss_open))
		rss_open = bench_rss_mib();
	t[OP_WHOLE] = redraw(m, a, z);
	t[OP_ZOOM1] = redraw(m, mid - span / 16, mid + span / 16);
	t[OP_ZOOM2] = redraw(m, mid - span / 128, mid + span / 128);
	t[OP_ZOOM3] = redraw(m, mid - span / 1024, mid + span / 1024);
	t[OP_ZOOM4] = redraw(m, mid - 500000, mid + 500000);
	t[OP_PAN] = redraw(m, mid, mid + 1000000);
	trace_model_set_depth(m, m->depth ? m->depth - 1 : m->depth + 1);
	t[OP_DEPTH] = redraw(m, mid, mid + 1000000);
	t[OP_BACK] = redraw(m, a, z);
	model_close(model);
}

int main(int argc, char **argv)
{
	fth_progname = "trace-bench";
	uint32_t nthreads = 64, runs = 5;
	uint64_t nsamples = 1000000;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			nsamples = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = (uint32_t)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else
			die(2, "usage: trace-bench [--threads T] [--samples N] [--runs R] [--keep DIR]");
	}
	if (!nthreads || !nsamples || !runs)
		die(2, "--threads, --samples and --runs must be positive");
	char tmp[] = "/tmp/fathom-trace-bench-XXXXXX";
	char dir[4200];
	if (keep) {
		snprintf(dir, sizeof(dir), "%s", keep);
	} else {
		if (!mkdtemp(tmp))
			die(1, "mkdtemp: %s", strerror(errno));
		snprintf(dir, sizeof(dir), "%s/db", tmp);
	}
	struct stat st;
	char traces[4300];
	snprintf(traces, sizeof(traces), "%s/%s", dir, DBTRACE_FILE);
	if (stat(traces, &st) < 0) {
		printf("generating %u threads x %llu samples in %s ...\n", nthreads,
		       (unsigned long long)nsamples, dir);
		double g = bench_now();
		generate(dir, nthreads, nsamples);
		printf("generated in %.1f s\n", bench_now() - g);
		if (stat(traces, &st) < 0)
			die(1, "%s: %s", traces, strerror(errno));
	}
	printf("traces.fdb: %.1f MB, %.2f bytes a sample\n", (double)st.st_size / 1e6,
	       (double)st.st_size / ((double)nthreads * (double)nsamples));
	double rss_before = bench_rss_mib();
	double *t = xcalloc((size_t)runs * NOPS, sizeof(*t));
	for (uint32_t r = 0; r < runs; r++)
		run_once(dir, &t[(size_t)r * NOPS]);
	bool pass = true;
	printf("%-26s %10s   (median of %u runs; target)\n", "operation", "time", runs);
	for (int op = 0; op < NOPS; op++) {
		double v[64];
		uint32_t n = runs < 64 ? runs : 64;
		for (uint32_t r = 0; r < n; r++)
			v[r] = t[(size_t)r * NOPS + op];
		double med = bench_median(v, (int)n), target = op == OP_OPEN ? 1.0 : 0.050;
		bool ok = med < target;
		pass &= ok;
		printf("%-26s %8.1f ms   < %4.0f ms %s\n", op_names[op], med * 1e3, target * 1e3,
		       ok ? "PASS" : "FAIL");
	}
	double rss_end = bench_rss_mib();
	printf("resident memory: %.1f MiB before opening, %.1f MiB after the first open, %.1f "
	       "MiB at the end; traces.fdb is %.1f MiB\n", rss_before, rss_open, rss_end,
	       (double)st.st_size / (1 << 20));
	free(t);
	if (!keep)
		bench_remove_tree(tmp, "trace-bench");
	printf("%s\n", pass ? "PASS" : "FAIL");
	return pass ? 0 : 1;
}
