/* SPDX-License-Identifier: MIT */
/*
 * t-view-model.c: view's model on databases with known values (tests/helper/viewdb.c): the
 * three views agree (flat and bottom-up functions equal FLAT, the top-down root the totals),
 * recursion counted once, call sites kept apart, search, filter, hot path, zoom, flatten,
 * threads, derived and TMA values, marks, source lines, escaping and formula errors; and a
 * database of several blocks of contexts: its values, search streamed as walked, batch's walk
 * (children once, subtrees forgotten) against the expanded tree, and a file that changes under
 * the viewer.
 */
#include "compat.h"
#include "escape.h"
#include "tap.h"
#include "buf.h"
#include "error.h"
#include "mfile.h"
#include "model-internal.h"
#include "viewdb.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char label_text[512];

static const char *label(struct model *model, enum model_view v, model_node n, bool utf8)
{
	struct buf b = BUF_INIT;
	model_node_label(model, v, n, utf8, &b);
	snprintf(label_text, sizeof(label_text), "%.*s", (int)b.len, (const char *)b.data);
	buf_release(&b);
	return label_text;
}

/* The first node (pre-order, all expanded) whose label is exactly TEXT. */
static model_node find(struct model *model, enum model_view v, const char *text)
{
	model_node n = model_search(model, v, MODEL_NONE, text, true), first = n;
	while (n != MODEL_NONE && strcmp(label(model, v, n, true), text) != 0) {
		n = model_search(model, v, n, text, true);
		if (n == first)
			return MODEL_NONE;
	}
	return n;
}

static double flat_value(const struct dbfile *db, uint32_t f, uint16_t m, bool incl)
{
	for (uint32_t j = db->flat.start[f]; j < db->flat.start[f + 1]; j++)
		if (db->flat.metric[j] == m)
			return incl ? db->flat.incl[j] : db->flat.excl[j];
	return 0;
}

static bool row_has(struct model *model, enum model_view v, const char *text)
{
	const model_node *rows;
	uint32_t n = model_rows(model, v, &rows);
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(label(model, v, rows[i], true), text))
			return true;
	return false;
}

static void test_views_agree(struct model *model)
{
	const struct dbfile *db = model_db(model);
	is_int((long long)model_nmetrics(model), 4, "four metrics");
	is_int(model_metric_by_name(model, "cycles"), 1, "metric by exact name");
	is_int(model_metric_by_name(model, "CYCLES"), 1, "metric by name, any case");
	is_int(model_metric_by_name(model, "cycles p"), 3, "metric by unique prefix");
	is_int(model_metric_by_name(model, "cpu"), -1, "an ambiguous prefix is no metric");
	is_int((long long)model_default_metric(model), 0, "default metric: cpu-clock");
	ok(model_total(model, 0) == 1005, "total cpu-clock 1005");
	ok(model_total(model, 1) == 77, "total cycles 77");
	ok(fabs(model_total(model, 2) - 1.005e-6) < 1e-18, "derived seconds: $0 / 1e9");
	ok(fabs(model_total(model, 3) - 77.0 / 1005) < 1e-15, "derived ratio $1 / $0");
	ok(model_value(model, MODEL_TOPDOWN, model_root(model, MODEL_TOPDOWN), 0, true) ==
		   model_total(model, 0),
	   "top-down root = total");
	/* Bottom-up roots and flat functions equal FLAT, for every function and raw metric. */
	for (int view = MODEL_BOTTOMUP; view <= MODEL_FLAT; view++) {
		model_expand_all(model, view, true);
		const model_node *rows;
		uint32_t n = model_rows(model, view, &rows), functions = 0, bad = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct model_node_info in;
			model_node_info(model, view, rows[i], &in);
			if (in.kind != MODEL_KIND_FUNCTION)
				continue;
			functions++;
			uint32_t f;
			for (f = 0; f < db->nfunctions; f++)
				if (!strcmp(dbfile_str(db, db->functions[f].name), in.name))
					break;
			for (uint16_t m = 0; m < 2; m++)
				for (int incl = 0; incl < 2; incl++)
					bad += model_value(model, view, rows[i], m, incl) !=
					       flat_value(db, f, m, incl);
		}
		is_int(functions, 6, "%s: six functions",
		       view == MODEL_FLAT ? "flat" : "bottom-up");
		is_int(bad, 0, "%s: every function's values equal FLAT",
		       view == MODEL_FLAT ? "flat" : "bottom-up");
	}
	model_node fact = find(model, MODEL_BOTTOMUP, "fact");
	ok(fact != MODEL_NONE && model_value(model, MODEL_BOTTOMUP, fact, 0, true) == 42,
	   "recursion counts once: fact 42");
	model_node comp = find(model, MODEL_BOTTOMUP, "compute");
	const model_node *kids;
	uint32_t n = model_children(model, MODEL_BOTTOMUP, comp, &kids);
	is_int(n, 2, "compute has two call sites in main");
	if (n == 2) {
		is_str(label(model, MODEL_BOTTOMUP, kids[0], true), "\xc2\xab main at prog.c:14",
		       "caller line 14");
		ok(model_value(model, MODEL_BOTTOMUP, kids[0], 0, true) == 330 &&
			   model_value(model, MODEL_BOTTOMUP, kids[0], 0, false) == 150,
		   "... 330 inclusive, 150 of compute's own");
		is_str(label(model, MODEL_BOTTOMUP, kids[1], false), "<< main at prog.c:20",
		       "caller line 20 (ASCII)");
		ok(model_value(model, MODEL_BOTTOMUP, kids[1], 0, true) == 30, "... 30");
	}
	model_node dot = find(model, MODEL_BOTTOMUP, "\xc2\xab compute at prog.c:32");
	ok(dot != MODEL_NONE && model_value(model, MODEL_BOTTOMUP, dot, 0, true) == 120,
	   "an inlined call's caller: compute at line 32, 120");
	/* Flat: modules and files are sums; the recursive call site counts once. */
	model_node prog = find(model, MODEL_FLAT, "prog");
	ok(model_value(model, MODEL_FLAT, prog, 0, true) == 1005 &&
		   model_value(model, MODEL_FLAT, prog, 0, false) == 945,
	   "flat module prog: 1005 inclusive, 945 exclusive");
	model_node rec = find(model, MODEL_FLAT, "prog.c:52 \xc2\xbb fact");
	ok(rec != MODEL_NONE && model_value(model, MODEL_FLAT, rec, 0, true) == 27,
	   "flat: recursive call site fact:52 counts its outer call once (27)");
	model_node l31 = find(model, MODEL_FLAT, "prog.c:31");
	ok(l31 != MODEL_NONE && model_value(model, MODEL_FLAT, l31, 0, false) == 180,
	   "flat: a line merges its contexts (180)");
	model_expand_all(model, MODEL_BOTTOMUP, false);
	model_expand_all(model, MODEL_FLAT, false);
}

static void test_navigation(struct model *model, const char *srcdir)
{
	enum model_view td = MODEL_TOPDOWN;
	model_node root = model_root(model, td);
	is_str(label(model, td, root, true), "<program root>", "root label");
	model_expand(model, td, root, true);
	const model_node *rows;
	is_int(model_rows(model, td, &rows), 2, "root expanded: two rows");
	/* Search finds a node in a collapsed subtree; reveal shows it. */
	model_node sq = model_search(model, td, MODEL_NONE, "SQRT", true);
	is_str(sq != MODEL_NONE ? label(model, td, sq, true) : "", "prog.c:33 \xc2\xbb sqrt",
	       "search is case-insensitive, finds the call site first");
	model_node sq2 = model_search(model, td, sq, "sqrt", true);
	is_str(sq2 != MODEL_NONE ? label(model, td, sq2, true) : "", "sqrt",
	       "... next: the function");
	ok(model_search(model, td, sq2, "sqrt", false) == sq, "... previous: back");
	ok(!row_has(model, td, "sqrt"), "the match is collapsed");
	model_reveal(model, td, sq2);
	ok(row_has(model, td, "sqrt"), "revealed");
	ok(model_search(model, td, MODEL_NONE, "libm.c:?", true) != MODEL_NONE, "a glob search");
	ok(model_search(model, td, MODEL_NONE, "nothing-like-it", true) == MODEL_NONE,
	   "no match: none");
	/* Hot path. */
	model_expand_all(model, td, false);
	model_node end = model_hot_path(model, td, root, 0, 0.5);
	is_str(label(model, td, end, true), "prog.c:13", "hot path ends at prog.c:13");
	ok(row_has(model, td, "loop at prog.c:12") && row_has(model, td, "prog.c:13"),
	   "... expanded along the way");
	/* Sort: by value descending by default; by name. */
	model_node mainf = find(model, td, "main");
	const model_node *kids;
	uint32_t n = model_children(model, td, mainf, &kids);
	ok(n == 4 && !strcmp(label(model, td, kids[0], true), "loop at prog.c:12") &&
		   !strcmp(label(model, td, kids[3], true),
			   "prog.c:24 \xc2\xbb evil\x1b[2J\nname\xff\xfe"),
	   "children sorted by inclusive value");
	struct model_sort s = model_get_sort(model);
	struct model_sort by_name = { 0, true, false, true, false };
	model_set_sort(model, &by_name);
	n = model_children(model, td, mainf, &kids);
	ok(n == 4 && !strcmp(label(model, td, kids[0], true), "loop at prog.c:12") &&
		   !strcmp(label(model, td, kids[1], true), "prog.c:20 \xc2\xbb compute"),
	   "sorted by name (label)");
	model_set_sort(model, &s);
	/* Zoom. */
	model_node loop = find(model, td, "loop at prog.c:12");
	model_zoom(model, td, loop);
	ok(model_root(model, td) == loop, "zoomed: the loop is the root");
	n = model_rows(model, td, &rows);
	ok(n >= 1 && rows[0] == loop, "... and the first row");
	ok(model_unzoom(model, td) && model_root(model, td) == root && !model_unzoom(model, td),
	   "unzoom once");
	/* Filter: hide compute's subtree, or only compute. */
	model_expand_all(model, td, true);
	model_set_filter(model, "compute", MODEL_FILTER_SUBTREE);
	ok(!row_has(model, td, "compute") && !row_has(model, td, "prog.c:31"),
	   "filter subtree: compute and its lines are gone");
	ok(model_total(model, 0) == 1005, "... the total does not change");
	model_set_filter(model, "compute", MODEL_FILTER_SELF);
	ok(!row_has(model, td, "compute") && row_has(model, td, "prog.c:31"),
	   "filter self: compute is elided, its lines stay");
	model_set_filter(model, "*libm*", MODEL_FILTER_SUBTREE);
	ok(!row_has(model, td, "sqrt") && row_has(model, td, "compute"), "filter by module");
	model_add_filter(model, "fact", MODEL_FILTER_SUBTREE);
	ok(!row_has(model, td, "sqrt") && !row_has(model, td, "fact") &&
		   row_has(model, td, "compute"),
	   "two filters: both hide");
	model_set_filter(model, "compute", MODEL_FILTER_SELF);
	model_add_filter(model, "compute", MODEL_FILTER_SUBTREE);
	ok(!row_has(model, td, "compute") && !row_has(model, td, "prog.c:31"),
	   "the same scope elided and hidden: hidden with its subtree");
	model_set_filter(model, "compute", MODEL_FILTER_SELF);
	model_add_filter(model, "sqrt", MODEL_FILTER_SELF);
	ok(!row_has(model, td, "compute") && !row_has(model, td, "sqrt") &&
		   row_has(model, td, "libm.c:8"),
	   "two elided: the children of both stay");
	model_set_filter(model, NULL, MODEL_FILTER_SUBTREE);
	ok(row_has(model, td, "sqrt"), "no filter");
	/* Flatten. */
	model_node fr = model_root(model, MODEL_FLAT);
	is_int(model_children(model, MODEL_FLAT, fr, &kids), 2, "flat: two modules");
	is_int(model_flatten(model), 1, "flatten once");
	is_int(model_children(model, MODEL_FLAT, fr, &kids), 3, "... three files");
	is_int(model_flatten(model), 2, "flatten twice");
	is_int(model_children(model, MODEL_FLAT, fr, &kids), 6, "... six functions");
	is_int(model_unflatten(model), 1, "unflatten");
	is_int(model_unflatten(model), 0, "unflatten again");
	is_int(model_unflatten(model), 0, "... not below 0");
	/* Marks. */
	ok(model_value_marks(model, td, root, 1) & MODEL_MARK_MULTIPLEXED, "cycles is multiplexed");
	ok(!(model_value_marks(model, td, root, 0) & MODEL_MARK_MULTIPLEXED), "cpu-clock is not");
	ok(model_value_marks(model, MODEL_TOPDOWN,
			     model_search(model, td, MODEL_NONE, "prog.c:71", true), 0) &
		   MODEL_MARK_LOW_SAMPLES,
	   "3 of 1005 with 201 samples: low samples");
	ok(!(model_value_marks(model, td, mainf, 0) & MODEL_MARK_LOW_SAMPLES), "main is not");
	/* Source. */
	model_add_source_path(model, srcdir);
	model_node l13 = find(model, td, "prog.c:13");
	struct model_source src;
	ok(model_source(model, td, l13, 0, &src) == 0, "source of prog.c:13");
	ok(src.path && strstr(src.path, "prog.c"), "found in the source path");
	is_str(src.recorded, "prog.c", "recorded path");
	is_int(src.focus, 13, "focus on line 13");
	bool l13ok = false, l12hdr = false, l14loop = false, l31 = false;
	for (uint32_t i = 0; i < src.nlines; i++) {
		const struct model_source_line *x = &src.lines[i];
		l13ok |= x->line == 13 && x->value == 600 && x->loop_depth == 1;
		l12hdr |= x->line == 12 && x->loop_header && x->loop_depth == 1;
		l14loop |= x->line == 14 && x->value == 330 && x->loop_depth == 1;
		l31 |= x->line == 31;
	}
	ok(l13ok && l12hdr && l14loop, "line values and the loop extent 12-14");
	ok(!l31, "lines of other functions are not in main's scope");
	model_source_release(&src);
	ok(model_source(model, td, root, 0, &src) < 0, "the root has no source");
	model_expand_all(model, td, false);
}

static void test_threads(struct model *model)
{
	double v[3];
	ok(model_thread_values(model, MODEL_TOPDOWN, 0, 0, true, v) == 0 && v[0] == 236 &&
		   v[1] == 294 && v[2] == 475,
	   "per-thread totals 236 294 475");
	model_node comp = find(model, MODEL_BOTTOMUP, "compute");
	ok(model_thread_values(model, MODEL_BOTTOMUP, comp, 0, true, v) == 0 && v[2] == 160,
	   "bottom-up compute in thread 2: 160");
	ok(model_select_thread(model, 2) == 0 && model_selected_thread(model) == 2,
	   "select thread 2");
	ok(model_total(model, 0) == 475, "... total 475");
	ok(model_value(model, MODEL_BOTTOMUP, comp, 0, true) == 160, "... bottom-up compute 160");
	model_node dotf = find(model, MODEL_FLAT, "dot");
	ok(model_value(model, MODEL_FLAT, dotf, 0, false) == 80, "... flat dot 80");
	ok(model_select_thread(model, 7) < 0 && strstr(fth_errmsg(), "no thread 7"), "no thread 7");
	ok(model_select_thread(model, -1) == 0 && model_total(model, 0) == 1005, "back to the sum");
}

/*
 * Bottom-up and flat values per thread (computed from the thread's values, not the flat
 * profile) add up to the sums over threads, and a selected thread shows its own.
 */
static void test_thread_sums(struct model *model)
{
	static const enum model_view views[] = { MODEL_BOTTOMUP, MODEL_FLAT };
	uint32_t nt = model_db(model)->nthreads;
	for (size_t v = 0; v < ARRAY_SIZE(views); v++) {
		enum model_view view = views[v];
		const char *name = view == MODEL_FLAT ? "flat" : "bottom-up";
		model_expand_all(model, view, true);
		const model_node *rows;
		uint32_t n = model_rows(model, view, &rows);
		model_node *ids = xmalloc(n * sizeof(model_node));
		memcpy(ids, rows, n * sizeof(model_node));
		double *per = xcalloc((size_t)n * 2 * nt, sizeof(double));
		bool sums = true, shown = true;
		uint32_t checked = 0;
		for (uint32_t i = 0; i < n; i++) {
			struct model_node_info in;
			model_node_info(model, view, ids[i], &in);
			for (int incl = 0; incl < 2; incl++) {
				double *t = per + ((size_t)i * 2 + incl) * nt, total = 0;
				if (model_thread_values(model, view, ids[i], 0, incl, t) < 0)
					sums = false;
				for (uint32_t k = 0; k < nt; k++)
					total += t[k];
				if (total != model_value(model, view, ids[i], 0, incl)) {
					diag("%s node %u (kind %u) %s: threads add to %g, sum %g",
					     name, ids[i], in.kind, incl ? "incl" : "excl", total,
					     model_value(model, view, ids[i], 0, incl));
					sums = false;
				}
				checked += in.kind == MODEL_KIND_MODULE ||
					   in.kind == MODEL_KIND_FILE ||
					   in.kind == MODEL_KIND_FUNCTION;
			}
		}
		ok(sums && checked >= 12, "%s: every node's per-thread values add up to its sum (%u)",
		   name, checked);
		for (uint32_t k = 0; k < nt; k++) {
			ok(model_select_thread(model, (int32_t)k) == 0, "select thread %u", k);
			for (uint32_t i = 0; i < n; i++)
				for (int incl = 0; incl < 2; incl++)
					if (model_value(model, view, ids[i], 0, incl) !=
					    per[((size_t)i * 2 + incl) * nt + k])
						shown = false;
		}
		ok(shown, "%s: a selected thread shows its own values at every node", name);
		model_select_thread(model, -1);
		model_expand_all(model, view, false);
		free(per);
		free(ids);
	}
}

/* Statistics over threads, read from the database's STAT chunks on demand. */
static void test_stats(struct model *model)
{
	struct dbfile_stat in, ex;
	ok(model_stats(model, MODEL_TOPDOWN, 0, 0, &in, &ex) == 0 && in.count == 3 &&
		   in.sum == 1005 && in.min == 236 && in.max == 475 && ex.count == 0,
	   "root: 3 threads, sum 1005, min 236, max 475");
	double mean = 1005.0 / 3, var = ((236 - mean) * (236 - mean) + (294 - mean) * (294 - mean) +
					 (475 - mean) * (475 - mean)) / 3;
	ok(fabs(in.stddev - sqrt(var)) < 1e-9 * sqrt(var), "root: population stddev %g",
	   in.stddev);
	ok(model_stats(model, MODEL_BOTTOMUP, model_root(model, MODEL_BOTTOMUP), 0, &in, &ex) < 0,
	   "bottom-up nodes have no statistics: %s", fth_errmsg());
}

static void test_tma(const char *dir)
{
	struct model *model = model_open(dir);
	ok(model != NULL, "open the TMA database");
	if (!model)
		return;
	is_int((long long)model_default_metric(model), 0, "default: cpu-clock, not a TMA input");
	model_node mainf = find(model, MODEL_TOPDOWN, "main");
	const struct model_tma_row *r;
	uint32_t n = model_tma(model, MODEL_TOPDOWN, mainf, &r);
	is_int(n, 7, "seven TMA nodes");
	static const struct {
		const char *name;
		uint32_t depth;
		double fraction;
		bool over, dominant;
	} want[] = {
		{ "Total Slots", 0, 1, false, true },	   { "Active", 1, 0.41, false, false },
		{ "Retiring", 2, 0.225, false, false },	   { "Bad Speculation", 2, 0.185, true, false },
		{ "Stall", 1, 0.59, false, true },	   { "Frontend Bound", 2, 0.14, false, false },
		{ "Backend Bound", 2, 0.45, true, true },
	};
	for (uint32_t i = 0; i < n && i < 7; i++) {
		const struct dbfile_metric *m = model_metric(model, r[i].metric);
		ok(!strcmp(m->name, want[i].name) && r[i].depth == want[i].depth &&
			   fabs(r[i].fraction - want[i].fraction) < 1e-12 &&
			   r[i].over_threshold == want[i].over && r[i].dominant == want[i].dominant,
		   "%s %.1f percent", want[i].name, 100 * want[i].fraction);
	}
	model_node idle = find(model, MODEL_TOPDOWN, "kern.c:12");
	n = model_tma(model, MODEL_TOPDOWN, idle, &r);
	bool all_nan = n == 7;
	for (uint32_t i = 0; i < n; i++)
		all_nan &= isnan(r[i].fraction) && !r[i].over_threshold && !r[i].dominant;
	ok(all_nan, "no slots at kern.c:12: every node is NaN");
	model_node stream = find(model, MODEL_TOPDOWN, "kern.c:6");
	n = model_tma(model, MODEL_TOPDOWN, stream, &r);
	ok(n == 7 && fabs(r[6].fraction - 0.75) < 1e-12, "stream: Backend Bound 0.75");
	ok(model_metric_is_tma(model, 6) && !model_metric_is_tma(model, 1), "TMA nodes and inputs");
	model_close(model);
}

static void test_escape(void)
{
	struct buf b = BUF_INIT;
	const char hostile[] = "evil\x1b[2J\nname\xff\xfe\x7f\t\xc2\x9b";
	esc_terminal(&b, hostile, sizeof(hostile) - 1, ESC_UTF8);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, "evil\\e[2J\\nname\\xff\\xfe\\x7f\\t\\u{9b}",
	       "controls, DEL, C1 and invalid UTF-8 escaped");
	buf_reset(&b);
	esc_terminal(&b, "caf\xc3\xa9 \xe2\x82\xac", 9, ESC_UTF8);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, "caf\xc3\xa9 \xe2\x82\xac", "valid UTF-8 passes");
	buf_reset(&b);
	esc_terminal(&b, "caf\xc3\xa9", 5, 0);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, "caf\\u{e9}", "... or not, without UTF-8");
	buf_reset(&b);
	esc_terminal(&b, "\xc0\xaf\xed\xa0\x80", 5, ESC_UTF8);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, "\\xc0\\xaf\\xed\\xa0\\x80", "overlong and surrogates");
	buf_release(&b);
	char out[32];
	is_str(model_format_value(1.25e9, MFILE_UNIT_NANOSECONDS, out, sizeof(out)), "1.25 s",
	       "1.25 s");
	is_str(model_format_value(830e6, MFILE_UNIT_NANOSECONDS, out, sizeof(out)), "830 ms",
	       "830 ms");
	is_str(model_format_value(1.23e9, MFILE_UNIT_COUNT, out, sizeof(out)), "1.23e+09",
	       "counts");
	is_str(model_format_value(4 << 20, MFILE_UNIT_BYTES, out, sizeof(out)), "4.0 MiB", "bytes");
	is_str(model_format_value(NAN, MFILE_UNIT_COUNT, out, sizeof(out)), "n/a", "NaN");
}

static void test_formula_errors(const char *base)
{
	static const struct {
		const char *formula, *why;
	} bad[] = {
		{ "$0 +", "an unexpected end" },
		{ "max(1,", "an unexpected end" },
		{ "$9", "does not exist" },
		{ "$0 $0", "text after the end" },
		{ "$2", "refers to itself" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/bad%zu", base, i);
		struct viewdb b;
		viewdb_init(&b, "/bin/p", 1);
		viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
		viewdb_metric(&b, "cycles", MFILE_UNIT_COUNT, NULL);
		viewdb_metric(&b, "broken", MFILE_UNIT_COUNT, bad[i].formula);
		int rc = viewdb_write(&b, dir, 0);
		viewdb_release(&b);
		struct model *model = rc == 0 ? model_open(dir) : NULL;
		ok(!model && strstr(fth_errmsg(), "metric broken") &&
			   strstr(fth_errmsg(), bad[i].why),
		   "formula \"%s\" refused: %s", bad[i].formula, fth_errmsg());
		model_close(model);
	}
	/* Division by zero and NaN inputs: NaN, not a crash. */
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/nan", base);
	struct viewdb b;
	viewdb_init(&b, "/bin/p", 1);
	viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	viewdb_metric(&b, "ratio", MFILE_UNIT_COUNT, "max(1, $0) / ($0 - $0) + 2e-3");
	viewdb_metric(&b, "fine", MFILE_UNIT_COUNT, "-(2 * 3.5e1 - 1) + min(4, 7) + if($0 < 1, 1, 2)");
	uint32_t c = viewdb_context(&b, 0, DBFILE_LINE, DBFILE_NONE, DBFILE_NONE, 0, DBFILE_NONE, 16);
	viewdb_value(&b, c, 0, 0, 5);
	int rc = viewdb_write(&b, dir, 0);
	viewdb_release(&b);
	struct model *model = rc == 0 ? model_open(dir) : NULL;
	ok(model && isnan(model_total(model, 1)), "division by zero: NaN");
	ok(model && model_total(model, 2) == -69 + 4 + 2, "unary minus, exponent, min, if, <");
	model_close(model);
}

/*
 * A database of 20,003 contexts, five blocks of contexts (DBFILE_BLOCK): main with WIDE_CALLS
 * call sites, call i calling worker (i % WIDE_WORKERS), whose loop holds two lines.  Thread t's
 * cpu-clock at the first line under call i is (i + 1)(t + 1), at the second 1 in thread 0 only;
 * so call i holds 3 (i + 1) + 1 and the program 3 x 4000 x 4001 / 2 + 4000.
 */
#define WIDE_CALLS 4000
#define WIDE_WORKERS 10

static int make_wide(const char *dir)
{
	const uint32_t N = DBFILE_NONE;
	struct viewdb b;
	viewdb_init(&b, "/usr/bin/wide", 2);
	uint32_t file = viewdb_string(&b, "wide.c");
	uint32_t mod = viewdb_module(&b, "/usr/bin/wide");
	uint32_t fmain = viewdb_function(&b, "main", mod, file, 1), fw[WIDE_WORKERS];
	for (uint32_t k = 0; k < WIDE_WORKERS; k++) {
		char name[32];
		snprintf(name, sizeof(name), "worker%u", k);
		fw[k] = viewdb_function(&b, name, mod, file, 10 + 10 * k);
	}
	uint32_t cpu = viewdb_metric(&b, "cpu-clock", MFILE_UNIT_NANOSECONDS, NULL);
	uint32_t entry = viewdb_context(&b, 0, DBFILE_ENTRY, N, N, 0, N, 0);
	uint32_t c_main = viewdb_context(&b, entry, DBFILE_FUNCTION, fmain, N, 0, mod, 0);
	for (uint32_t i = 0; i < WIDE_CALLS; i++) {
		uint32_t k = i % WIDE_WORKERS;
		uint32_t call =
			viewdb_context(&b, c_main, DBFILE_CALL, fmain, file, 100 + i, mod, 0);
		uint32_t fn = viewdb_context(&b, call, DBFILE_FUNCTION, fw[k], N, 0, mod, 0);
		uint32_t loop = viewdb_context(&b, fn, DBFILE_LOOP, fw[k], file, 11 + 10 * k, mod, 0);
		uint32_t a = viewdb_context(&b, loop, DBFILE_LINE, fw[k], file, 12 + 10 * k, mod, 0);
		uint32_t c = viewdb_context(&b, loop, DBFILE_LINE, fw[k], file, 13 + 10 * k, mod, 0);
		viewdb_value(&b, a, 0, cpu, i + 1);
		viewdb_value(&b, a, 1, cpu, 2.0 * (i + 1));
		viewdb_value(&b, c, 0, cpu, 1);
	}
	int rc = viewdb_write(&b, dir, 1);
	viewdb_release(&b);
	return rc;
}

/* Call i's value: thread T's (0, 1), or the sum over threads (-1). */
static double wide_call(uint32_t i, int t)
{
	return t < 0 ? 3.0 * (i + 1) + 1 : t == 0 ? i + 2.0 : 2.0 * (i + 1);
}

/* Worker K's inclusive value (= its exclusive: all of it is its own code). */
static double wide_worker(uint32_t k, int t)
{
	double sum = 0;
	for (uint32_t i = k; i < WIDE_CALLS; i += WIDE_WORKERS)
		sum += wide_call(i, t);
	return sum;
}

/* The only child of NODE, or NONE. */
static model_node only_child(struct model *model, enum model_view v, model_node node)
{
	const model_node *kids;
	model_expand(model, v, node, true);
	return model_children(model, v, node, &kids) == 1 ? kids[0] : MODEL_NONE;
}

static void test_blocks_values(struct model *model)
{
	const struct dbfile *db = model_db(model);
	ok(db->ncontexts == 3 + 5 * WIDE_CALLS && db->block && db->ncontexts / db->block >= 4,
	   "the contexts span five blocks (%u contexts, %u per block)", db->ncontexts, db->block);
	double total = 3.0 * WIDE_CALLS * (WIDE_CALLS + 1) / 2 + WIDE_CALLS;
	ok(model_total(model, 0) == total, "total: %.0f", model_total(model, 0));
	/* Top-down: main's call sites across the blocks, each with its own value. */
	model_node root = model_root(model, MODEL_TOPDOWN);
	model_node c_main =
		only_child(model, MODEL_TOPDOWN, only_child(model, MODEL_TOPDOWN, root));
	is_str(label(model, MODEL_TOPDOWN, c_main, true), "main", "root > entry > main");
	const model_node *kids;
	uint32_t n = model_children(model, MODEL_TOPDOWN, c_main, &kids), bad = 0;
	is_int(n, WIDE_CALLS, "main has 4,000 call sites");
	for (uint32_t j = 0; j < n; j++) {
		struct model_node_info in;
		model_node_info(model, MODEL_TOPDOWN, kids[j], &in);
		/* Sorted by value, descending: the last call first. */
		uint32_t i = in.line - 100, want = WIDE_CALLS - 1 - j;
		char text[64];
		snprintf(text, sizeof(text), "wide.c:%u \xc2\xbb worker%u", 100 + want, want % WIDE_WORKERS);
		bad += i != want || strcmp(label(model, MODEL_TOPDOWN, kids[j], true), text) != 0 ||
		       model_value(model, MODEL_TOPDOWN, kids[j], 0, true) != wide_call(i, -1) ||
		       model_value(model, MODEL_TOPDOWN, kids[j], 0, false) != 0;
	}
	is_int(bad, 0, "every call site: its label, its value (3 (i + 1) + 1), in value order");
	model_node top = n ? kids[0] : MODEL_NONE;
	model_node line = only_child(model, MODEL_TOPDOWN, only_child(model, MODEL_TOPDOWN, top));
	n = model_children(model, MODEL_TOPDOWN, line, &kids);
	ok(n == 2 && model_value(model, MODEL_TOPDOWN, kids[0], 0, false) == 12000 &&
		   model_value(model, MODEL_TOPDOWN, kids[1], 0, false) == 1 &&
		   !strcmp(label(model, MODEL_TOPDOWN, kids[0], true), "wide.c:102"),
	   "the last call's loop: its two lines (12000, 1), four levels below");
	/* Flat and bottom-up: each worker's sum over its 400 call sites. */
	bad = 0;
	model_children(model, MODEL_BOTTOMUP, model_root(model, MODEL_BOTTOMUP),
		       &kids); /* search sees built nodes */
	for (uint32_t k = 0; k < WIDE_WORKERS; k++) {
		char name[32];
		snprintf(name, sizeof(name), "worker%u", k);
		model_node f = find(model, MODEL_FLAT, name), u = find(model, MODEL_BOTTOMUP, name);
		if (f == MODEL_NONE || u == MODEL_NONE ||
		    model_value(model, MODEL_FLAT, f, 0, true) != wide_worker(k, -1) ||
		    model_value(model, MODEL_FLAT, f, 0, false) != wide_worker(k, -1) ||
		    model_value(model, MODEL_BOTTOMUP, u, 0, true) != wide_worker(k, -1)) {
			diag("%s: flat %.0f %.0f, bottom-up %.0f, want %.0f", name,
			     model_value(model, MODEL_FLAT, f, 0, true),
			     model_value(model, MODEL_FLAT, f, 0, false),
			     model_value(model, MODEL_BOTTOMUP, u, 0, true), wide_worker(k, -1));
			bad++;
		}
		if (u == MODEL_NONE)
			continue;
		model_expand(model, MODEL_BOTTOMUP, u, true);
		uint32_t nc = model_children(model, MODEL_BOTTOMUP, u, &kids);
		double sum = 0;
		for (uint32_t j = 0; j < nc; j++)
			sum += model_value(model, MODEL_BOTTOMUP, kids[j], 0, true);
		if (nc != WIDE_CALLS / WIDE_WORKERS || sum != wide_worker(k, -1)) {
			diag("worker%u: %u callers, %.0f", k, nc, sum);
			bad++;
		}
	}
	is_int(bad, 0, "flat and bottom-up: every worker, and its 400 callers, add up");
	/* One thread: its rows of the blocks, its profiles. */
	ok(model_select_thread(model, 1) == 0, "select thread 1");
	ok(model_total(model, 0) == 2.0 * WIDE_CALLS * (WIDE_CALLS + 1) / 2, "thread 1's total");
	ok(model_value(model, MODEL_TOPDOWN, top, 0, true) == wide_call(WIDE_CALLS - 1, 1),
	   "thread 1: the last call 8000");
	model_node f7 = find(model, MODEL_FLAT, "worker7");
	ok(f7 != MODEL_NONE && model_value(model, MODEL_FLAT, f7, 0, true) == wide_worker(7, 1),
	   "thread 1: flat worker7 %.0f", wide_worker(7, 1));
	double per[2] = { 0, 0 };
	ok(model_thread_values(model, MODEL_TOPDOWN, top, 0, true, per) == 0 && per[0] == 4001 &&
		   per[1] == 8000,
	   "values of the last call per thread: 4001, 8000");
	ok(model_select_thread(model, -1) == 0 && model_total(model, 0) == total,
	   "back to the sums");
	ok(model_error(model) == NULL, "no reader error");
}

/* Search streams the contexts when the walk is long: the same answers as walking all of it. */
static void test_blocks_search(struct model *model)
{
	static const char *const patterns[] = { "worker7", "wide.c:4*", "wide.c:13", "nomatch",
						"loop at wide.c:4?", "*main", "\xc2\xbb worker3" };
	model_node root = model_root(model, MODEL_TOPDOWN);
	model_node c_main =
		only_child(model, MODEL_TOPDOWN, only_child(model, MODEL_TOPDOWN, root));
	const model_node *kids;
	uint32_t n = model_children(model, MODEL_TOPDOWN, c_main, &kids);
	model_node froms[4] = { MODEL_NONE, root, n ? kids[n / 2] : MODEL_NONE,
				n ? kids[n - 1] : MODEL_NONE };
	uint32_t compared = 0, differ = 0, found = 0;
	for (int filter = 0; filter < 3; filter++) {
		model_set_filter(model, filter ? "worker3" : NULL,
				 filter == 1 ? MODEL_FILTER_SELF : MODEL_FILTER_SUBTREE);
		for (size_t i = 0; i < 4 * 2 * sizeof(patterns) / sizeof(patterns[0]); i++) {
			const char *p = patterns[i / 8];
			model_node from = froms[i / 2 % 4];
			bool fwd = i % 2;
			search_walk_budget = 0;
			model_node walked = model_search(model, MODEL_TOPDOWN, from, p, fwd);
			search_walk_budget = 1;
			model_node streamed = model_search(model, MODEL_TOPDOWN, from, p, fwd);
			compared++;
			found += walked != MODEL_NONE;
			if (walked != streamed) {
				differ++;
				diag("\"%s\" from %u %s, filter %d: %u walked, %u streamed", p,
				     from, fwd ? "forward" : "backward", filter, walked, streamed);
			}
		}
	}
	search_walk_budget = 2000;
	model_set_filter(model, NULL, MODEL_FILTER_SUBTREE);
	ok(compared == 168 && found > 120, "%u searches, %u found something", compared, found);
	is_int(differ, 0, "streamed and walked searches agree (filters, both ways, wrapping)");
}

/* A database that changes under the viewer: the error is kept, nothing is made up. */
static void test_blocks_changed(const char *dir)
{
	struct model *model = model_open(dir);
	ok(model != NULL, "open the copy");
	if (!model)
		return;
	char path[4200];
	snprintf(path, sizeof(path), "%s/summary.fdb", dir);
	int fd = open(path, O_WRONLY);
	struct stat st;
	bool zeroed = fd >= 0 && fstat(fd, &st) == 0;
	char zero[4096] = { 0 };
	for (off_t at = 0; zeroed && at < st.st_size; at += (off_t)sizeof(zero))
		zeroed = pwrite(fd, zero, sizeof(zero), at) > 0;
	if (fd >= 0)
		close(fd);
	ok(zeroed, "summary.fdb overwritten with zeros after open");
	model_node root = model_root(model, MODEL_TOPDOWN);
	model_expand(model, MODEL_TOPDOWN, root, true);
	const model_node *rows;
	uint32_t n = model_rows(model, MODEL_TOPDOWN, &rows);
	ok(model_error(model) && strstr(model_error(model), "summary.fdb"),
	   "the reader's error is kept: %s", model_error(model) ? model_error(model) : "none");
	ok(n == 1 && isnan(model_total(model, 0)), "no children, no values after it (%u rows)", n);
	ok(model_search(model, MODEL_TOPDOWN, MODEL_NONE, "main", true) == MODEL_NONE,
	   "search finds nothing");
	struct model_source src;
	ok(model_source(model, MODEL_FLAT, model_root(model, MODEL_FLAT), 0, &src) < 0,
	   "source: an error");
	model_close(model);
}

/* Every row of VIEW, all expanded, as text (depth, label, two values of each metric). */
static void row_text(struct model *model, enum model_view v, model_node n, uint32_t depth,
		     struct buf *out)
{
	buf_printf(out, "%u %s", depth, label(model, v, n, true));
	for (uint32_t m = 0; m < model_nmetrics(model); m++)
		buf_printf(out, " %.17g/%.17g", model_value(model, v, n, m, true),
			   model_value(model, v, n, m, false));
	buf_addch(out, '\n');
}

/* Batch's walk: children taken once (model_children_copy), each subtree forgotten when done. */
static void walk_forgetting(struct model *model, enum model_view v, model_node n, uint32_t depth,
			    struct buf *out)
{
	row_text(model, v, n, depth, out);
	model_node *kids;
	uint32_t k = model_children_copy(model, v, n, &kids);
	for (uint32_t i = 0; i < k; i++)
		walk_forgetting(model, v, kids[i], depth + 1, out);
	free(kids);
	model_forget(model, v, n);
}

/* The rows of batch's walk are the expanded tree's, in its order, before and after forgetting
 * (built again), with every block read first or not. */
static void test_walk(const char *dir, const char *what)
{
	for (int v = 0; v < MODEL_NVIEWS; v++) {
		struct model *a = model_open(dir), *b = model_open(dir);
		if (!a || !b) {
			ok(0, "open %s", dir);
			model_close(a);
			model_close(b);
			return;
		}
		struct buf want = BUF_INIT, got = BUF_INIT, again = BUF_INIT;
		model_expand_all(a, (enum model_view)v, true);
		const model_node *rows;
		uint32_t n = model_rows(a, (enum model_view)v, &rows);
		model_node *copy = xmalloc((n + 1) * sizeof(model_node));
		uint32_t *depth = xmalloc((n + 1) * sizeof(uint32_t));
		memcpy(copy, rows, n * sizeof(model_node));
		memcpy(depth, model_row_depths(a, (enum model_view)v), n * sizeof(uint32_t));
		for (uint32_t i = 0; i < n; i++)
			row_text(a, (enum model_view)v, copy[i], depth[i], &want);
		if (v == MODEL_BOTTOMUP)
			model_load_blocks(b);
		walk_forgetting(b, (enum model_view)v, model_root(b, (enum model_view)v), 0, &got);
		walk_forgetting(b, (enum model_view)v, model_root(b, (enum model_view)v), 0,
				&again);
		ok(n > 1 && want.len == got.len && !memcmp(want.data, got.data, want.len) &&
			   got.len == again.len && !memcmp(got.data, again.data, got.len) &&
			   !model_error(b),
		   "%s, view %d: the walk that forgets gives the expanded tree's %u rows, twice", what,
		   v, n);
		if (v != MODEL_TOPDOWN)
			ok(tree_of(b, (enum model_view)v)->n == 1,
			   "%s, view %d: only the root is left", what, v);
		free(copy);
		free(depth);
		buf_release(&want);
		buf_release(&got);
		buf_release(&again);
		model_close(a);
		model_close(b);
	}
}

int main(void)
{
	char dir[4096], tma[4096], src[4096], path[4200];
	snprintf(dir, sizeof(dir), "%s/small", tap_tmpdir());
	snprintf(tma, sizeof(tma), "%s/tma", tap_tmpdir());
	snprintf(src, sizeof(src), "%s/src", tap_tmpdir());
	mkdir(src, 0755);
	snprintf(path, sizeof(path), "%s/prog.c", src);
	FILE *f = fopen(path, "w");
	for (int i = 1; f && i <= 80; i++)
		fprintf(f, "line %d\n", i);
	if (f)
		fclose(f);
	ok(viewdb_make_small(dir) == 0, "write the small database");
	ok(viewdb_make_tma(tma, false) == 0, "write the TMA database");
	struct model *model = model_open(dir);
	ok(model != NULL, "open it: %s", model ? "" : fth_errmsg());
	if (!model)
		return done_testing();
	const struct model_tma_row *rows;
	is_int(model_tma(model, MODEL_TOPDOWN, 0, &rows), 0, "no TMA metrics: no rows");
	test_views_agree(model);
	test_navigation(model, src);
	test_threads(model);
	test_thread_sums(model);
	test_stats(model);
	model_close(model);
	test_tma(tma);
	test_escape();
	test_formula_errors(tap_tmpdir());
	test_walk(dir, "small");
	ok(model_open("/nonexistent/db") == NULL && strstr(fth_errmsg(), "/nonexistent/db"),
	   "a missing database is named");
	char wide[4096], wide2[4096];
	snprintf(wide, sizeof(wide), "%s/wide", tap_tmpdir());
	snprintf(wide2, sizeof(wide2), "%s/wide2", tap_tmpdir());
	ok(make_wide(wide) == 0 && make_wide(wide2) == 0, "write the wide database (twice)");
	model = model_open(wide);
	ok(model != NULL, "open it: %s", model ? "" : fth_errmsg());
	if (model) {
		test_blocks_values(model);
		test_blocks_search(model);
		model_close(model);
	}
	test_walk(wide, "wide");
	test_blocks_changed(wide2);
	return done_testing();
}
