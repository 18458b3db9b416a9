/* SPDX-License-Identifier: MIT */
/*
 * model-internal.h: what the files of view's model share (model.c: opening, values, threads;
 * model-nav.c: children, sorting, rows, expansion, hot path, zoom, search, filter;
 * model-tree.c: the bottom-up and flat trees; model-source.c; model-tma.c;
 * units.c).  Nothing here is for the TUI or batch output: they use model.h.
 */
#ifndef FATHOM_VIEW_MODEL_INTERNAL_H
#define FATHOM_VIEW_MODEL_INTERNAL_H

#include "buf.h"
#include "formula.h"
#include "hmap.h"
#include "model.h"

/* ---- formulas: lib/formula.h ---- */

/* ---- value sources ---- */

/* Values per (context, metric): the sums over threads, or one thread's (dbfile_*_row). */
struct vsrc {
	int32_t thread; /* -1: the summary, or the threads of a process or rank (NSET > 0) */
	/* A process (or an MPI rank: RANK >= 0): its threads, and their sums of every context,
	 * read whole when selected */
	uint32_t pid, nset;
	int32_t rank;
	uint32_t *set;
	uint32_t *row_start; /* ncontexts + 1 */
	uint16_t *row_metric;
	double *row_val; /* 2 per entry: inclusive, exclusive */
};

/* ---- bottom-up and flat nodes ---- */

struct vnode {
	uint8_t kind; /* enum model_kind */
	bool built;   /* children known */
	bool expanded;
	uint32_t parent, depth;
	uint32_t root;	   /* bottom-up: the FUNCTION node this caller chain starts at */
	uint32_t function; /* function, caller function, or the callee of a call site */
	uint32_t module;   /* module index or DBFILE_NONE */
	uint32_t file;	   /* string or DBFILE_NONE */
	uint32_t line;
	uint64_t addr;
	uint32_t group; /* flat: the (module, file) group; bottom-up function: the function */
	/* bottom-up: instances (tip index in the root, context whose caller is next);
	 * flat static nodes: contexts and whether each counts in the inclusive value */
	uint32_t ninst;
	uint32_t *inst_a, *inst_b;
	uint32_t *kids;
	uint32_t nkids, akids;
	/* cached raw values for the current source: 2 per metric (incl, excl) */
	double *vals;
	uint32_t vals_gen;
	/* bottom-up roots: tip contexts' exclusive values per metric (current source) */
	double *tipx;
	uint32_t tipx_gen;
	/* visible children in the current sort order */
	uint32_t *vis;
	uint32_t nvis, vis_gen;
};

struct vtree {
	struct vnode *nodes;
	uint32_t n, cap;
	uint32_t root; /* MODEL_NONE until built */
};

/* Visible children of a top-down context, cached. */
struct vis_entry {
	uint32_t *kids;
	uint32_t n, gen;
};

struct view_state {
	uint32_t *zoom; /* stack of roots */
	uint32_t nzoom, azoom;
	model_node *rows;
	uint32_t *row_depth;
	uint32_t nrows, arows;
};

/*
 * Function, group and module profiles (flat view, bottom-up roots) of a source: the
 * database's for the sums over threads (db.flat, group_flat, module_flat), read per thread
 * for one thread (dbfile_thread_flats).  OWNED when they are a thread's.
 */
struct aggregates {
	const struct dbfile_flat *fn, *grp, *mod;
	struct dbfile_flat own_fn, own_grp, own_mod;
	bool owned, ready;
};

/*
 * The raw values of the top-down contexts asked for (2 per metric, for the current source):
 * what the screen and the sorted children show, dropped whole when it is full or the values
 * change.
 */
#define VALUE_CACHE_MAX 16384 /* contexts */
struct value_cache {
	struct hmap slot; /* context -> slot */
	double *vals;	  /* 2 x nmetrics per slot */
	uint32_t n, cap, gen;
};

struct sort_key;

struct model_filter {
	char *pattern;
	enum model_filter_mode mode;
};

struct trace_model;

struct model {
	struct dbfile db;
	struct trace_model *traces; /* the timeline's model, opened on first use (model-trace.c) */
	struct model_compare *cmp;  /* view A B: what each metric is (compare.c), or NULL */
	int traces_state;	    /* 0 not tried, 1 the database has none, -1 it failed */
	uint32_t nm;		 /* metrics */
	struct formula *formulas; /* per metric: derived ones compiled, others empty */
	bool *multiplexed;	 /* per metric, derived: any input */
	bool *tma;		 /* per metric: a node of a top-down tree (a parent, or a child) */
	bool *group_copy;	 /* per metric: another perf group's copy of an event (model.c) */
	int32_t *sample_metric;	 /* per metric: the raw metric whose samples count, or -1 */
	/* top-down: the expanded contexts and the visible children of those asked for */
	struct hmap td_expanded; /* context -> 1 */
	struct hmap td_vis;	 /* context -> index in vis_cache */
	struct vis_entry *vis_cache;
	uint32_t nvis_cache, avis_cache;
	struct value_cache vcache;
	bool *fn_nonzero; /* per function: a non-zero FLAT value */
	char **fn_shown;  /* per function: its demangled name, made on first use, or NULL */
	bool *fn_tried;	  /* per function: demangling was tried */
	bool raw_names;	  /* model_set_demangle(false): names as the binaries spell them */
	char *error;	  /* the first reader error of the session, or NULL */
	/* values */
	struct vsrc sum;
	struct vsrc thread_src;
	struct vsrc process_src;
	struct vsrc *cur;
	uint32_t gen;  /* bumps on anything that changes visible children: sort, filter, values */
	uint32_t vgen; /* bumps when the values change (thread selection) */
	struct aggregates agg;
	uint32_t agg_gen;
	/* trees */
	struct vtree bu, flat;
	int flatten;
	struct view_state vs[MODEL_NVIEWS];
	struct model_sort sort;
	struct model_filter *filters; /* all apply (see model_add_filter) */
	uint32_t nfilters;
	/* model_set_min_change: the metric and the bound; per view, node -> 1 shown, 2 hidden,
	 * for the values of generation min_vgen */
	uint32_t min_metric;
	double min_change;
	struct hmap min_seen[MODEL_NVIEWS];
	uint32_t min_vgen;
	/* source search path */
	char **src_dirs;
	uint32_t nsrc_dirs;
	/* scratch */
	struct model_tma_row *tma_rows;
	struct buf label;
	double *scratch_vals;
	struct sort_key *sort_keys; /* model-nav.c: 2 x asort_keys (keys and merge room) */
	uint32_t asort_keys;
	uint32_t eval_depth;
	bool all_blocks;	       /* model_load_blocks: every block decoded and kept */
	struct bu_site *caller_sites; /* per context, once all_blocks (model-tree.c), or NULL */
};

/* Where a bottom-up instance was called from (model-tree.c). */
struct bu_site {
	uint32_t fn, module, file, line, next;
};

static inline bool is_instance(uint8_t kind)
{
	return kind == DBFILE_FUNCTION || kind == DBFILE_INLINE;
}

/* model.c */
/*
 * Reader access that records a failure in the model (model->error, the message kept) and gives a
 * harmless empty result (a context with no parent, children or function; an empty row or
 * list): the model stops showing anything new, and the TUI and batch output stop with the
 * message (model_error).
 */
bool ctx_get(struct model *model, uint32_t ctx, struct dbfile_context *out);
bool row_get(struct model *model, const struct vsrc *src, uint32_t ctx, struct dbfile_row *out);
/* Contexts of function F (INLINED: the INLINE contexts inlined into F); caller frees. */
uint32_t ctx_list(struct model *model, uint32_t f, bool inlined, uint32_t **out);
/* Record the thread's error message (lib/error.h) as the model's, unless one is recorded. */
void model_fail(struct model *model);
double src_value(struct model *model, const struct vsrc *src, uint32_t ctx, uint32_t metric,
		 bool inclusive);
/* Add every raw value of CTX in SRC into OUT (2 per metric) with WHICH: 1 incl, 2 excl, 3 both. */
void src_add_row(struct model *model, const struct vsrc *src, uint32_t ctx, double *out,
		 unsigned which);
/* Raw value (or derived, evaluated) of METRIC at NODE with SRC. */
double value_with(struct model *model, enum model_view view, model_node node, uint32_t metric,
		  bool inclusive, const struct vsrc *src);
const char *fn_name(const struct model *model, uint32_t function);
bool module_is_kernel(const struct dbfile *db, uint32_t module);
/* What context CTX (X) is, with CALLEE for a call site (depth, parent, expansion left out). */
void context_info(struct model *model, uint32_t ctx, const struct dbfile_context *x,
		  uint32_t callee, struct model_node_info *out);
/* The label of a node described by INFO (ENTRY: the entry kind of an ENTRY context). */
void info_label(const struct model_node_info *info, uint32_t entry, bool utf8, struct buf *out);
/* The function called at call site X: its first FUNCTION child, or NONE. */
uint32_t callee_of(struct model *model, const struct dbfile_context *x);
const char *base_name(const char *path);

/* ---- the trees: what differs per view ---- */

/* The places whose values make up a scope's source lines (model-source.c). */
struct source_item {
	uint32_t ctx;
	bool once; /* counts in inclusive sums (a path once) */
	uint8_t kind;
	uint32_t file, line, parent;
};
struct source_scope {
	uint32_t function;	/* the scope's function */
	uint32_t file, focus; /* the file and line of a line, loop or call site, else NONE, 0 */
	struct source_item *items;
	uint32_t nitems, aitems;
};
void source_scope_add(struct source_scope *s, uint32_t ctx, const struct dbfile_context *x,
		      bool once);

/*
 * One tree of the model (enum model_view): the operations model-nav.c, model.c and
 * model-source.c call for what differs per tree; everything else is common.  A tree is one
 * file defining a table (model-topdown.c; model-tree.c: bottom-up and flat) and one row of
 * the table in ops_of (model-nav.c).
 */
struct tree_ops {
	/* The root before any zoom (built on first use). */
	model_node (*root)(struct model *model, enum model_view view);
	/* Whether NODE is one of the tree's nodes (the root built first). */
	bool (*valid)(struct model *model, enum model_view view, model_node node);
	/* NODE's children (unfiltered, unsorted, built on first use) into a new array *OUT. */
	uint32_t (*raw_children)(struct model *model, enum model_view view, model_node node,
				 uint32_t **out);
	/* Whether a walk that builds nothing (search, collapsing a subtree) leaves NODE's
	 * children out: they are not built yet.  NULL: never. */
	bool (*unbuilt)(struct model *model, enum model_view view, model_node node);
	/* NODE's visible children, cached until model->gen changes (model_children). */
	uint32_t (*children)(struct model *model, enum model_view view, model_node node,
			     const model_node **out);
	/* The levels below NODE that its visible children skip (flat's root: model_flatten), or
	 * NULL: none. */
	int (*skipped_levels)(struct model *model, enum model_view view, model_node node);
	model_node (*parent)(struct model *model, enum model_view view, model_node node);
	/* The name and module a filter looks at (NAME "" and MODULE NULL when none). */
	void (*filter_subject)(struct model *model, enum model_view view, model_node node,
			       const char **name, const char **module);
	/* The function (or NONE) and line that order NODE among equal values. */
	void (*sort_fields)(struct model *model, enum model_view view, model_node node,
			    uint32_t *function, uint32_t *line);
	bool (*is_expanded)(struct model *model, enum model_view view, model_node node);
	void (*expand)(struct model *model, enum model_view view, model_node node, bool expanded);
	void (*collapse_all)(struct model *model, enum model_view view);
	/* The raw value of METRIC at NODE with SRC (NaN when NODE is not one of the tree's). */
	double (*value)(struct model *model, enum model_view view, model_node node, uint32_t metric,
			bool inclusive, const struct vsrc *src);
	/* model_node_info into OUT, cleared (parent NONE, name "", context NONE) by the caller. */
	void (*info)(struct model *model, enum model_view view, model_node node,
		     struct model_node_info *out);
	/* model_node_label; NULL: the label of model_node_info's description. */
	void (*label)(struct model *model, enum model_view view, model_node node, bool utf8,
		      struct buf *out);
	/* model_forget; NULL: nothing to drop. */
	void (*forget)(struct model *model, enum model_view view, model_node node);
	/* The database context NODE is (statistics over threads), or NONE. */
	uint32_t (*context_of)(struct model *model, enum model_view view, model_node node);
	/* The source scope of NODE (model_source); -1 with the message when it has none. */
	int (*source_scope)(struct model *model, enum model_view view, model_node node,
			    struct source_scope *out);
	/* Nodes a search labels as it walks before it streams the database's contexts instead
	 * (see model_search); NULL: no limit. */
	const uint32_t *search_budget;
};
extern const struct tree_ops topdown_ops, bottomup_ops, flat_ops;
const struct tree_ops *ops_of(enum model_view view);

/* model-tree.c */
struct vtree *tree_of(struct model *model, enum model_view view);
void tree_release(struct vtree *t);
/* Drop the current source's function, group and module profiles. */
void tree_release_aggregates(struct model *model);
/* Read SRC's profiles as the current ones (-1 when the reader fails: nothing recorded). */
int tree_load_aggregates(struct model *model, const struct vsrc *src);
void tree_reset_values(struct model *model);
uint32_t instance_at_or_above(struct model *model, uint32_t ctx);

/* model-nav.c */
void nav_invalidate(struct model *model);
/* NODE's visible children, sorted, into a new array (not cached); BUILD: build what is not
 * yet (else leave out what tree_ops.unbuilt says). */
uint32_t nav_visible(struct model *model, enum model_view view, model_node node, bool build,
		     uint32_t **out);
/* Top-down search: the nodes walked before the contexts are streamed instead; 0 no limit (a
 * variable so that the tests can compare both ways). */
extern uint32_t search_walk_budget;

/* model.c */
/* model_node_label from model_node_info's description. */
void label_of_info(struct model *model, enum model_view view, model_node node, bool utf8,
		   struct buf *out);

#endif
