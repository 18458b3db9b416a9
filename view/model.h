/* SPDX-License-Identifier: MIT */
/*
 * model.h: view's model of a database, with no terminal code: the top-down, bottom-up and flat
 * trees built lazily over lib/dbfile, the values of any metric at any node (raw, derived and
 * TMA formulas evaluated here), sorting, expansion, hot path, zoom, flatten, search, filter,
 * per-thread values, source lines and the TMA breakdown.  Batch output and the TUI both drive
 * this interface, so they show the same trees.
 *
 * Node ids are stable for the life of a view's tree (until model_select_thread or model_set_filter
 * rebuilds it).  Every value is the sum over threads, or one thread's after model_select_thread.
 * Functions that can fail return -1 with the message in the thread's error (lib/error.h).
 */
#ifndef FATHOM_VIEW_MODEL_H
#define FATHOM_VIEW_MODEL_H

#include "dbfile.h"

struct buf;
struct model; /* opaque */

enum model_view { MODEL_TOPDOWN = 0, MODEL_BOTTOMUP = 1, MODEL_FLAT = 2, MODEL_NVIEWS };

/*
 * Node kinds: the database's context kinds (same values as enum dbfile_kind), and the flat
 * view's groupings.  In bottom-up, the roots are FUNCTION nodes (one per function) and their
 * descendants are CALLER nodes: the call site (function, file:line) that called the node above.
 */
enum model_kind {
	MODEL_KIND_ROOT = DBFILE_ROOT,
	MODEL_KIND_ENTRY = DBFILE_ENTRY,
	MODEL_KIND_FUNCTION = DBFILE_FUNCTION,
	MODEL_KIND_INLINE = DBFILE_INLINE,
	MODEL_KIND_LOOP = DBFILE_LOOP,
	MODEL_KIND_LINE = DBFILE_LINE,
	MODEL_KIND_CALL = DBFILE_CALL,
	MODEL_KIND_MODULE,
	MODEL_KIND_FILE,
	MODEL_KIND_CALLER,
	MODEL_KIND_COUNT
};

typedef uint32_t model_node;
#define MODEL_NONE UINT32_MAX

/* What a node stands for; strings are the database's (raw: escape before printing). */
struct model_node_info {
	uint8_t kind;	   /* enum model_kind */
	uint32_t depth;	   /* 0 for the view's root */
	model_node parent;	   /* MODEL_NONE for the root */
	const char *name;  /* function name, module path, file path; "" when none */
	const char *file;  /* source file of the line / call site / loop header; NULL none */
	uint32_t line;	   /* 0 when none */
	const char *module; /* module path; NULL none */
	uint64_t addr;	   /* address in the module when there is no line, else 0 */
	uint32_t context;  /* top-down: the database context; else DBFILE_NONE */
	bool has_children; /* may have children (true until known otherwise) */
	bool expanded;
};

/* ---- opening ---- */

/* Open database DIR (or DIR/summary.fdb).  Returns NULL with an error message on failure. */
struct model *model_open(const char *dir);
/* model_open for a walk of the whole tree (batch output): every block read as the database is
 * checked, and kept (dbfile_open_whole); model_load_blocks then adds only a thread's values. */
struct model *model_open_whole(const char *dir);
void model_close(struct model *model);
/*
 * The first error reading the database after it was opened (a block that no longer reads or
 * checks), or NULL.  The model then shows nothing new (empty children, NaN values): the
 * caller stops with this message.
 */
const char *model_error(const struct model *model);
const struct dbfile *model_db(const struct model *model);

/* ---- metrics ---- */

uint32_t model_nmetrics(const struct model *model);
const struct dbfile_metric *model_metric(const struct model *model, uint32_t metric);
/* A metric by exact name, else case-insensitive name, else unique prefix; -1 when none. */
int model_metric_by_name(const struct model *model, const char *name);
/* The metric shown by default: the first raw non-TMA metric (time, cycles), or 0. */
uint32_t model_default_metric(const struct model *model);
/* The metrics shown by default into OUT (at most MAX): the default metric, then every other
 * raw non-TMA metric that is not zero in the whole program.  Returns how many. */
uint32_t model_default_metrics(struct model *model, uint32_t *out, uint32_t max);
/* Whether METRIC is a TMA node (has a parent, or children, in the TMA hierarchy). */
bool model_metric_is_tma(const struct model *model, uint32_t metric);

/* ---- values ---- */

/*
 * The inclusive or exclusive value of METRIC at NODE of VIEW.  Derived metrics (kind 1) are
 * evaluated from the node's values of their inputs; NaN when a formula's input is missing or it
 * divides by zero.  Flat and bottom-up values follow doc/formats.md 8.4.9 and 8.6 (a path counts
 * once however deep the recursion), so the three views agree.
 */
double model_value(struct model *model, enum model_view view, model_node node, uint32_t metric,
		   bool inclusive);
/* The program's total of METRIC (the top-down root's inclusive value): 100 %. */
double model_total(struct model *model, uint32_t metric);

/* Marks on a value, shown as letters as well as colours. */
enum {
	MODEL_MARK_MULTIPLEXED = 1u << 0, /* the metric was counted part of the time and scaled */
	MODEL_MARK_LOW_SAMPLES = 1u
				 << 1, /* too few samples at this node to trust (< 10 estimated) */
};
unsigned model_value_marks(struct model *model, enum model_view view, model_node node,
			   uint32_t metric);

/* Format V for UNIT (enum mfile_unit) into OUT (at most SIZE bytes): "1.25 s", "830 ms",
 * "1.23e+09", "4.0 MiB".  Returns OUT. */
const char *model_format_value(double v, unsigned unit, char *out, size_t size);

/* Whether METRIC's values are parts of its total, shown with their percentage: raw metrics but
 * TMA nodes (not derived ones: ratios, or a time in other units already shown). */
bool model_metric_has_percent(const struct model *model, uint32_t metric);
/* V of METRIC as the screen shows it: for its unit (model_format_value), derived metrics with
 * three significant digits, TMA nodes as a percentage of their parent's slots; "n/a" for NaN. */
const char *model_format_metric(const struct model *model, uint32_t metric, double v, char *out,
				size_t size);
/* The unit of METRIC's numbers: in model_format_number "s" and "B", RAW (the stored values) "ns"
 * and "B"; NULL for counts, derived metrics and TMA nodes (fractions). */
const char *model_number_unit(const struct model *model, uint32_t metric, bool raw);
/* V of METRIC as a plain number in that unit, rounded as the screen rounds: three significant
 * digits ("1.25" for 1.25 s), counts below a million exact, TMA fractions to 0.001 (0.1 %);
 * "" for NaN. */
const char *model_format_number(const struct model *model, uint32_t metric, double v, char *out,
				size_t size);

/* A fraction rounded to 0.001, the screen's 0.1 % ("0.45"); "" for NaN. */
const char *model_format_fraction(double v, char *out, size_t size);
/* V with DECIMALS decimals into OUT, as printf's "%.*f" writes it, but faster; its length. */
size_t model_format_fixed(double v, int decimals, char *out, size_t size);

/* ---- trees ---- */

/* The root of VIEW (after zoom: the zoomed node). */
model_node model_root(struct model *model, enum model_view view);
void model_node_info(struct model *model, enum model_view view, model_node node,
		     struct model_node_info *out);
/* The database's context CTX (a top-down node) as stored; false when it cannot be read. */
bool model_context(struct model *model, uint32_t ctx, struct dbfile_context *out);
/* A one-line label: "main", "loop at matmul.c:12", "matmul.c:14", "[14] » dgemm" (call site),
 * "inlined dot at blas.h:30", "« [20] main" (caller); ASCII arrows when !UTF8.  Raw text. */
void model_node_label(struct model *model, enum model_view view, model_node node, bool utf8,
		      struct buf *out);
/* NODE's visible children (filter applied) in the current sort order; *OUT stays valid until
 * the next call that changes the tree.  Builds them on first use. */
uint32_t model_children(struct model *model, enum model_view view, model_node node,
			const model_node **out);

/* The same children into a new array *OUT that the caller frees, not cached: for a walk that
 * asks for each node's children once (batch output). */
uint32_t model_children_copy(struct model *model, enum model_view view, model_node node,
			     model_node **out);
/*
 * Drop the bottom-up or flat nodes built below NODE, with their values, when they are the last
 * built (a depth-first walk done with NODE's subtree): they are built again when asked for.
 * Their ids are then no longer valid.  Nothing for top-down, whose nodes are the database's.
 */
void model_forget(struct model *model, enum model_view view, model_node node);
/* Read every block of the database (with the selected thread's values) and keep them all
 * (dbfile_load_blocks): for a walk of the whole tree, which comes back to every block in no
 * order.  A failure is the model's error (model_error). */
void model_load_blocks(struct model *model);

/* Sorting: by METRIC's inclusive or exclusive value, descending or not; by name when NAME. */
struct model_sort {
	uint32_t metric;
	bool inclusive;
	bool descending;
	bool by_name;
	bool by_magnitude; /* by the absolute value (a comparison's changes) */
};
void model_set_sort(struct model *model, const struct model_sort *sort);
/* Show C++ and Rust names demangled (the default) or as the binaries spell them. */
void model_set_demangle(struct model *model, bool demangle_names);
struct model_sort model_get_sort(const struct model *model);

/* Expansion. */
void model_expand(struct model *model, enum model_view view, model_node node, bool expanded);
void model_expand_subtree(struct model *model, enum model_view view, model_node node,
			  bool expanded);
void model_expand_all(struct model *model, enum model_view view, bool expanded);
/* Expand the ancestors of NODE so that it is visible. */
void model_reveal(struct model *model, enum model_view view, model_node node);

/* The visible rows under the root in display order (the root first), with their depth relative
 * to the root.  Valid until the next call that changes the tree. */
uint32_t model_rows(struct model *model, enum model_view view, const model_node **rows);
/* The depth of each row of the last model_rows (the root 0), parallel to its ROWS. */
const uint32_t *model_row_depths(struct model *model, enum model_view view);

/* Hot path: from NODE, expand along the child holding at least THRESHOLD (0.5) of its parent's
 * inclusive METRIC; returns the node where the path ends. */
model_node model_hot_path(struct model *model, enum model_view view, model_node node,
			  uint32_t metric, double threshold);

/* Zoom: make NODE the view's root; model_unzoom goes back one level (false when not zoomed). */
void model_zoom(struct model *model, enum model_view view, model_node node);
bool model_unzoom(struct model *model, enum model_view view);

/* Flat view: replace the top level by the level below (flatten), or undo one (unflatten);
 * returns the new flatten depth, 0 when none. */
int model_flatten(struct model *model);
int model_unflatten(struct model *model);
/* Whether VIEW's top level can be flattened (the flat view). */
bool model_view_flattens(enum model_view view);

/*
 * Search: the next node after FROM (or before it, when !FORWARD) in pre-order over the whole
 * tree, collapsed parts included, whose label contains PATTERN (case-insensitive; a pattern
 * with * or ? is a glob).  Bottom-up searches the functions and the callers already built.
 * Returns MODEL_NONE when none; the caller reveals the match with model_reveal.
 */
model_node model_search(struct model *model, enum model_view view, model_node from,
			const char *pattern, bool forward);

/* Filter: nodes whose name or module matches the glob PATTERN are hidden with their subtree
 * (MODEL_FILTER_SUBTREE) or elided, their children taking their place (MODEL_FILTER_SELF).
 * model_set_filter replaces all filters with this one (NULL pattern: none); model_add_filter adds
 * one more.  With several, a node is shown only when every filter keeps it: hidden when any
 * pattern matches it (with its subtree when any of those says so).  Costs of hidden nodes stay
 * in their ancestors' inclusive values, so percentages do not change. */
enum model_filter_mode { MODEL_FILTER_SELF, MODEL_FILTER_SUBTREE };
/* Hide the scopes whose METRIC (a comparison's B - A) is smaller than MIN in magnitude, both
 * inclusive and exclusive, in themselves and everywhere below them (a change hidden by one
 * that cancels it nearby still shows its path); MIN 0: show all. */
void model_set_min_change(struct model *model, uint32_t metric, double min);
void model_set_filter(struct model *model, const char *pattern, enum model_filter_mode mode);
void model_add_filter(struct model *model, const char *pattern, enum model_filter_mode mode);

/* ---- threads ---- */

/*
 * Show one thread's values (THREAD < nthreads), or the sum over threads (-1).  The thread's
 * profiles of functions, groups and modules are read now, its values of contexts when they
 * are shown; when reading the profiles fails, the sums are shown.
 */
int model_select_thread(struct model *model, int32_t thread);
int32_t model_selected_thread(const struct model *model);
/*
 * Show the sums over the threads of process PID (every program it ran: an exec keeps the pid),
 * read whole now; model_select_thread(model, -1) goes back to the sums over all threads.
 */
int model_select_process(struct model *model, uint32_t pid);
/* The process shown, or -1. */
int64_t model_selected_process(const struct model *model);
/* Show the sums over the threads of MPI rank RANK (all its processes), as a process's. */
int model_select_rank(struct model *model, int32_t rank);
/* The rank shown, or -1. */
int32_t model_selected_rank(const struct model *model);
/* Whether any thread of the database ran as an MPI rank. */
bool model_has_ranks(const struct model *model);
/*
 * The statistics over threads (count of threads with a non-zero value, sum, min, max, standard
 * deviation) of METRIC at top-down context NODE, inclusive and exclusive; read from the
 * database a block of contexts at a time, so they cost memory only when asked for.  Zero
 * counts when no thread has a value there; -1 for other views or a read error.
 */
int model_stats(struct model *model, enum model_view view, model_node node, uint32_t metric,
		struct dbfile_stat *incl, struct dbfile_stat *excl);
/* The value of METRIC at NODE for every thread: OUT has nthreads entries.  Reads each thread's
 * values of the node's contexts (or its profiles): its cost grows with the threads. */
int model_thread_values(struct model *model, enum model_view view, model_node node, uint32_t metric,
			bool inclusive, double *out);

/* ---- source ---- */

/* Directories searched for source files after the path recorded in the database. */
void model_add_source_path(struct model *model, const char *dir);

struct model_source_line {
	uint32_t line;
	double value;	  /* METRIC measured at this line within the scope (inclusive of calls) */
	uint32_t loop_depth; /* loops of the scope enclosing the line (the gutter) */
	bool loop_header;
};
struct model_source {
	char *path;	   /* the file found, or NULL when it could not be */
	char *recorded;	   /* the path the database recorded */
	uint32_t first, last; /* the scope's line range */
	uint32_t focus;	   /* the line to show first */
	uint32_t nlines;
	struct model_source_line *lines; /* lines with a value or in a loop, ascending */
};
/* The source of NODE's scope (its file, or the file of the function it is in). */
int model_source(struct model *model, enum model_view view, model_node node, uint32_t metric,
		 struct model_source *out);
void model_source_release(struct model_source *s);

/* ---- top-down (TMA) breakdown ---- */

struct model_tma_row {
	uint32_t metric; /* the TMA node's metric */
	uint32_t depth;	 /* 0 for the top of the hierarchy */
	uint32_t level;	 /* Intel's: 0 the whole (Total Slots, Active, Stall), 1 Retiring... */
	bool of_cycles;	 /* a fraction of cycles (its parent's: of slots, or the other way) */
	bool basis_changes; /* ... not on its parent's basis */
	double fraction; /* of the parent's slots, 0..1; NaN when it cannot be computed here */
	bool over_threshold;
	bool dominant; /* on the path of the largest child from the top */
	/* A comparison (view A B): the rows are A's tree, then B's nodes A has not; FRACTION is
	 * A's, FRACTION_B is B's node of the same name (NaN where a run has no such node). */
	double fraction_b;
};
/* The TMA nodes measured, in tree order (pre-order, children by metric index), evaluated at
 * NODE; returns how many, 0 when the database has no TMA metrics.  Nodes that were not
 * measured are absent, never zero.  *ROWS is owned by the model and valid until the next
 * call.  In a comparison, each row is a node of both runs (model_tma_row.fraction_b). */
uint32_t model_tma(struct model *model, enum model_view view, model_node node,
		   const struct model_tma_row **rows);

/* ---- comparing two runs (view A B: view/compare.h) ---- */

/* What a metric of a comparison is. */
enum model_role {
	MODEL_ROLE_NONE = 0, /* not a comparison */
	MODEL_ROLE_A,	     /* run A's values ("A:cpu-clock") */
	MODEL_ROLE_B,	     /* run B's ("B:cpu-clock") */
	MODEL_ROLE_DELTA,    /* B - A ("B-A:cpu-clock"); of shares with --normalize */
	MODEL_ROLE_RATIO,    /* B / A ("B/A:cpu-clock") */
	MODEL_ROLE_ONLY,     /* measured in one run only (RUN says which) */
	MODEL_ROLE_TMA_A,    /* a node of A's top-down tree */
	MODEL_ROLE_TMA_B,
};
struct model_compare_metric {
	uint8_t role; /* enum model_role */
	uint8_t run;  /* 1: A's, 2: B's, 3: of both (B - A, B / A) */
	bool normalized; /* B - A and B / A compare shares of each run's total */
	/* The metrics of its group: A's, B's, B - A, B / A (TMA: A's node, B's of the same
	 * name); DBFILE_NONE where there is none. */
	uint32_t a, b, delta, ratio;
};
struct model_compare {
	char *name_a, *name_b;	  /* the databases as given */
	uint32_t nthreads_a;	  /* threads 0 .. nthreads_a - 1 are A's, the rest B's */
	struct model_compare_metric *metrics; /* per metric of the merged database */
	char **notes;		  /* what was matched loosely, or could not be compared */
	uint32_t nnotes;
	uint32_t contexts_matched, contexts_only_a, contexts_only_b;
};
/* Attach CMP (the model owns it from now on): the model of a comparison. */
void model_set_comparison(struct model *model, struct model_compare *cmp);
/* The comparison, or NULL for one database. */
const struct model_compare *model_comparison(const struct model *model);
/* The role of METRIC (MODEL_ROLE_NONE for one database). */
enum model_role model_metric_role(const struct model *model, uint32_t metric);
/* METRIC's name without the run's prefix ("cpu-clock" for "B-A:cpu-clock"). */
const char *model_metric_base_name(const struct model *model, uint32_t metric);
void model_compare_release(struct model_compare *cmp);
/* Which runs measured anything at NODE: 1 A, 2 B, 3 both (3 for one database). */
unsigned model_node_runs(struct model *model, enum model_view view, model_node node);
/* Open the per-thread values now (after which the database's files may go). */
int model_open_threads(struct model *model);

/* ---- the trace timeline (model-trace.h) ---- */

struct trace_model;
/* MODEL's traces, opened on first use: 0 with *OUT, 1 when the database has none, -1 with the
 * error. */
int model_traces(struct model *model, struct trace_model **out);
/* The name of function F as the trees show it (demangled), for a callback's VOID *. */
const char *model_function_name(void *model, uint32_t f);

/* ---- sorting ---- */

/* qsort's comparison of two uint32_t: <0, 0 or >0 as A is below, equal to or above B. */
int model_cmp_u32(const void *a, const void *b);

/* ---- text ---- */

/* Text from the database is escaped with lib/escape.h before it is printed. */

#endif
