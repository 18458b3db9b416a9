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
	int32_t thread; /* -1: the summary, or the threads of a process (NSET > 0) */
	/* A process: its threads, and their sums of every context, read whole when selected */
	uint32_t pid, nset;
	uint32_t *set;
	uint32_t *row_start; /* ncontexts + 1 */
	uint16_t *row_metric;
	double *row_val; /* 2 per entry: inclusive, exclusive */
};

/* ---- bottom-up and flat nodes ---- */

struct vnode {
	uint8_t kind; /* enum vm_kind */
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
	uint32_t root; /* VM_NONE until built */
};

/* Visible children of a top-down context, cached. */
struct vis_entry {
	uint32_t *kids;
	uint32_t n, gen;
};

struct view_state {
	uint32_t *zoom; /* stack of roots */
	uint32_t nzoom, azoom;
	vm_node *rows;
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

struct vm_filter {
	char *pattern;
	enum vm_filter_mode mode;
};

struct vm {
	struct dbfile db;
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
	bool raw_names;	  /* vm_set_demangle(false): names as the binaries spell them */
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
	struct view_state vs[VM_NVIEWS];
	struct vm_sort sort;
	struct vm_filter *filters; /* all apply (see vm_add_filter) */
	uint32_t nfilters;
	/* source search path */
	char **src_dirs;
	uint32_t nsrc_dirs;
	/* scratch */
	struct vm_tma_row *tma_rows;
	struct buf label;
	double *scratch_vals;
	struct sort_key *sort_keys; /* model-nav.c: 2 x asort_keys (keys and merge room) */
	uint32_t asort_keys;
	uint32_t eval_depth;
	bool all_blocks;	       /* vm_load_blocks: every block decoded and kept */
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
 * Reader access that records a failure in the model (vm->error, the message kept) and gives a
 * harmless empty result (a context with no parent, children or function; an empty row or
 * list): the model stops showing anything new, and the TUI and batch output stop with the
 * message (vm_error).
 */
bool ctx_get(struct vm *vm, uint32_t ctx, struct dbfile_context *out);
bool row_get(struct vm *vm, const struct vsrc *src, uint32_t ctx, struct dbfile_row *out);
/* Contexts of function F (INLINED: the INLINE contexts inlined into F); caller frees. */
uint32_t ctx_list(struct vm *vm, uint32_t f, bool inlined, uint32_t **out);
/* Record the thread's error message (lib/error.h) as the model's, unless one is recorded. */
void vm_fail(struct vm *vm);
double src_value(struct vm *vm, const struct vsrc *src, uint32_t ctx, uint32_t metric,
		 bool inclusive);
/* Add every raw value of CTX in SRC into OUT (2 per metric) with WHICH: 1 incl, 2 excl, 3 both. */
void src_add_row(struct vm *vm, const struct vsrc *src, uint32_t ctx, double *out,
		 unsigned which);
/* Raw value (or derived, evaluated) of METRIC at NODE with SRC. */
double value_with(struct vm *vm, enum vm_view view, vm_node node, uint32_t metric,
		  bool inclusive, const struct vsrc *src);
const char *fn_name(const struct vm *vm, uint32_t function);
bool module_is_kernel(const struct dbfile *db, uint32_t module);
/* What context CTX (X) is, with CALLEE for a call site (depth, parent, expansion left out). */
void context_info(struct vm *vm, uint32_t ctx, const struct dbfile_context *x, uint32_t callee,
		  struct vm_node_info *out);
/* The label of a node described by INFO (ENTRY: the entry kind of an ENTRY context). */
void info_label(const struct vm_node_info *info, uint32_t entry, bool utf8, struct buf *out);
/* The function called at call site X: its first FUNCTION child, or NONE. */
uint32_t callee_of(struct vm *vm, const struct dbfile_context *x);
const char *base_name(const char *path);

/* model-tree.c */
struct vtree *tree_of(struct vm *vm, enum vm_view view);
uint32_t tree_root(struct vm *vm, enum vm_view view);
void tree_build_children(struct vm *vm, enum vm_view view, uint32_t node);
/* Raw values of a bottom-up or flat NODE with SRC into OUT (2 per metric). */
void tree_node_values(struct vm *vm, enum vm_view view, uint32_t node, const struct vsrc *src,
		      double *out);
/* The value of METRIC at a bottom-up or flat NODE with the current values (cached). */
double tree_node_value(struct vm *vm, enum vm_view view, uint32_t node, uint32_t metric,
		       bool inclusive);
void tree_release(struct vtree *t);
/* vm_forget of a bottom-up or flat NODE. */
void tree_forget(struct vm *vm, enum vm_view view, uint32_t node);
/* Drop the current source's function, group and module profiles. */
void tree_release_aggregates(struct vm *vm);
/* Read SRC's profiles as the current ones (-1 when the reader fails: nothing recorded). */
int tree_load_aggregates(struct vm *vm, const struct vsrc *src);
void tree_reset_values(struct vm *vm);
/* The contexts a node stands for (for source and TMA): top-down context, or NONE. */
uint32_t tree_function_of(struct vm *vm, enum vm_view view, vm_node node);

/* model-nav.c */
void nav_invalidate(struct vm *vm);
/* How the filters hide NODE: -1 not at all, else the mode (VM_FILTER_SUBTREE wins). */
int node_filtered(struct vm *vm, enum vm_view view, vm_node node);
/* NODE's children (unfiltered, unsorted) into a new array *OUT (NULL when none). */
uint32_t raw_children(struct vm *vm, enum vm_view view, vm_node node, uint32_t **out);
vm_node node_parent(struct vm *vm, enum vm_view view, vm_node node);
/* The view's root before any zoom. */
vm_node tree_root_of_view(struct vm *vm, enum vm_view view);
uint32_t instance_at_or_above(struct vm *vm, uint32_t ctx);
/* Top-down search: the nodes walked before the contexts are streamed instead; 0 no limit (a
 * variable so that the tests can compare both ways). */
extern uint32_t search_walk_budget;

#endif
