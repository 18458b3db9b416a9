/* SPDX-License-Identifier: MIT */
/*
 * tui-internal.h: the state shared by the files of view's interactive interface: tui.c (the
 * loop, terminal setup and restore, actions), tui-keys.c (key names, --keys, the help table),
 * tui-draw.c (title, tree, columns, footer) and tui-panes.c (source, threads and TMA panes,
 * popups).  Nothing here is used outside view/tui*.c.
 */
#ifndef FATHOM_VIEW_TUI_INTERNAL_H
#define FATHOM_VIEW_TUI_INTERNAL_H

#include "buf.h"
#include "model.h"
#include "tui.h"

#include <curses.h>
#include <stdio.h>

/* Keys beyond ncurses' codes: Alt-combinations and the keys given by name in --keys. */
#define TK_ALT_BASE 0x200000
#define TK_ALT(c) (TK_ALT_BASE | (c))
#define TK_ALT_LEFT (TK_ALT_BASE | 0x10000 | 1)
#define TK_ALT_RIGHT (TK_ALT_BASE | 0x10000 | 2)
#define TK_CTRL(c) ((c) & 0x1f)
#define TK_ESC 27
#define TK_ENTER 13

enum tui_value_mode { TUI_SHOW_VALUE, TUI_SHOW_PERCENT, TUI_SHOW_BOTH, TUI_SHOW_MODES };
enum tui_pane { TUI_PANE_NONE, TUI_PANE_SOURCE, TUI_PANE_THREADS, TUI_PANE_TMA, TUI_PANE_MCA };
enum tui_popup { TUI_POPUP_NONE, TUI_POPUP_HELP, TUI_POPUP_INFO, TUI_POPUP_COLUMNS };
enum tui_prompt {
	TUI_PROMPT_NONE,
	TUI_PROMPT_SEARCH,
	TUI_PROMPT_FILTER,
	TUI_PROMPT_FILTER_MODE,
	TUI_PROMPT_THRESHOLD,
	TUI_PROMPT_SOURCE_DIR,
	TUI_PROMPT_SORT_COLUMN,
	TUI_PROMPT_TRACE_TIME,
};

/* Colour pairs (and the attributes used instead when there is no colour). */
enum tui_style {
	TUI_STYLE_NORMAL,
	TUI_STYLE_TITLE,
	TUI_STYLE_HEADER,
	TUI_STYLE_SELECTED,
	TUI_STYLE_FOOTER,
	TUI_STYLE_WARN,	     /* multiplexed and low-sample marks */
	TUI_STYLE_THRESHOLD, /* a TMA value over its threshold */
	TUI_STYLE_BAR,
	TUI_STYLE_DOMINANT, /* the dominant TMA path */
	TUI_STYLE_ERROR,
	TUI_STYLE_DIM,
	TUI_NSTYLES
};

/* One metric column: a metric, inclusive or exclusive. */
struct tui_column {
	uint32_t metric;
	bool inclusive;
};

/* A place to come back to with Ctrl-O / Alt-Right. */
struct tui_place {
	enum model_view view;
	model_node root; /* model_root of the view then (the zoom) */
	model_node sel;
};

/* A node named by the labels of its ancestors, to find it again after a rebuild. */
struct tui_path {
	char **labels; /* from the absolute root's child down to the node */
	uint32_t n;
};

/* One of the active filters: scopes matching PATTERN hidden as MODE says. */
#define TUI_MAX_FILTERS 16
struct tui_filter {
	char *pattern;
	enum model_filter_mode mode;
};

struct tui_rect {
	int y, x, h, w;
};

/* The source pane's file, read once per (file found). */
struct tui_source_cache {
	bool valid;
	enum model_view view;
	model_node node;
	uint32_t metric;
	int32_t thread;
	int status; /* 0, or -1 with ERROR */
	char *error;
	struct model_source src;
	char *text; /* the file's contents, or NULL */
	char **lines; /* pointers into TEXT, NUL-terminated */
	uint32_t nlines;
};

struct tui_threads_cache {
	bool valid;
	enum model_view view;
	model_node node;
	uint32_t metric;
	bool inclusive;
	int status;
	char *error;
	double *values;	   /* nthreads */
	uint32_t *order;   /* thread indices, largest value first */
	/* The pane's rows: all threads, then each process (largest first) and its threads; in
	 * a run of MPI ranks, each rank (largest first) and its threads */
	uint32_t nrows;
	struct tui_thread_row *rows;
	bool several_hosts; /* the process rows name their host */
};

struct tui_thread_row {
	int32_t thread; /* a thread, or TUI_ROW_ALL, TUI_ROW_PROCESS or TUI_ROW_RANK */
	uint32_t pid, first; /* PROCESS: its pid, and its first thread (for the command line) */
	double value;
	int32_t rank;	     /* RANK: the rank (-1: the threads that ran in no rank) */
	uint32_t nprocs;     /* RANK: its processes */
};
enum { TUI_ROW_RANK = -3, TUI_ROW_ALL = -2, TUI_ROW_PROCESS = -1 };

struct tui {
	struct model *model;
	const struct tui_options *opt;
	bool utf8_text;	 /* the locale is UTF-8: names may keep their UTF-8 */
	bool utf8_glyph; /* line drawing and bars in UTF-8 (not --ascii) */
	bool color;
	bool mouse;

	enum model_view view;
	model_node sel[MODEL_NVIEWS];
	uint32_t top[MODEL_NVIEWS]; /* first row shown */
	uint32_t zooms[MODEL_NVIEWS]; /* model_zoom calls not undone */
	model_node top_root[MODEL_NVIEWS]; /* the root when not zoomed */
	uint32_t selidx;	 /* SEL's index in the rows (computed each frame) */
	bool sel_to_top; /* next draw: the selection's row at the top (its expansion shows) */
	uint32_t nrows;

	/* Columns. */
	uint32_t *metrics; /* the metrics shown, in order */
	uint32_t nmetrics;
	bool show_incl, show_excl;
	enum tui_value_mode value_mode;
	struct tui_column *cols; /* derived from the above */
	uint32_t ncols;
	struct model_sort sort;
	double hot_threshold;

	/* Panes. */
	bool tma_open;
	int tma_depth; /* levels shown: 1..4, 0 all */
	enum tui_pane bottom; /* TUI_PANE_SOURCE, TUI_PANE_THREADS, TUI_PANE_MCA or NONE */
	enum tui_pane last_opened;
	enum tui_pane focus; /* NONE: the tree has the keys */
	int src_scroll;	     /* first line shown, or -1 to centre the focus line */
	uint32_t thr_cursor; /* 0: all threads, i + 1: ORDER[i] */
	uint32_t thr_scroll;
	int tma_scroll;
	int mca_scroll;
	struct tui_source_cache source;
	struct tui_threads_cache threads;
	/* The llvm-mca pane: its loop (as --mca names it) and what it says, or why not */
	struct tui_mca_cache {
		char loop[4096];
		char *text;
	} mca;

	/* Popups and prompts. */
	enum tui_popup popup;
	int popup_cursor, popup_scroll;
	enum tui_prompt prompt;
	char input[256];
	size_t input_len;
	char search[256];
	model_node search_origin;
	bool search_failed;
	struct tui_filter filters[TUI_MAX_FILTERS]; /* all apply: see tui.c apply_filters */
	uint32_t nfilters;
	char filter_pending[256]; /* the pattern whose mode the prompt asks */
	char message[256];
	bool message_error;

	/* History. */
	struct tui_place *history;
	uint32_t hist_n, hist_pos, hist_cap;

	/* Layout of the current frame. */
	int lines, columns;
	struct tui_rect tree, pane, tma;
	bool pane_shown, tma_shown; /* where they are is in PANE / TMA */
	/* The metric columns of the header, for mouse clicks. */
	uint32_t hdr_n;
	uint32_t hdr_col[64];
	int hdr_x[64], hdr_w[64];

	/* The trace view (tui-trace.c): shown instead of the trees while TRACE_MODE. */
	bool trace_mode;
	struct tui_trace *trace;

	bool quit;
	struct buf scratch;
};

/* ---- tui-keys.c ---- */

/* Parse --keys STRING into key codes (see doc/view.1 KEYS); -1 with an error. */
int tui_parse_keys(const char *s, int **keys, size_t *nkeys);
/* Alt-Left and Alt-Right as the terminal reports them (ncurses' extended codes), or -1. */
void tui_keys_init(void);
int tui_translate_key(int key);
/* F-key N can be typed on this terminal (known after tui_keys_init). */
bool tui_fkey_usable(int n);

/* ---- the key table: tui-keys.def, its actions in tui.c ---- */

/* Who has the keys of a row: the tree, or a pane that has the keys (tried first). */
enum tui_key_scope { TUI_KEYS_TREE, TUI_KEYS_PANE, TUI_KEYS_TRACE };
#define TUI_KEY_CODES 16

struct tui_key_row {
	enum tui_key_scope scope;
	/* The keys as the help shows them, alternatives two spaces apart; NULL for a row the
	 * help does not show, and for a section title. */
	const char *keys;
	const char *what; /* what the keys do, or the section's title */
	void (*action)(struct tui *t, int key); /* NULL for a section title */
	int codes[TUI_KEY_CODES];		/* the key codes, ended by 0 */
};
extern const struct tui_key_row tui_keys[];
extern const size_t tui_nkeys;

/* ---- tui-draw.c ---- */

void tui_styles_init(struct tui *t);
attr_t tui_attr(const struct tui *t, enum tui_style style);
/* Draw the whole frame into stdscr (curses sends only what changed). */
void tui_draw(struct tui *t);
/* Put UTF-8 text S at (Y, X) in at most WIDTH columns, padding with spaces when PAD; returns
 * the columns used.  S must already be escaped. */
int tui_put(int y, int x, int width, const char *s, bool pad);
/* The display width of escaped text S. */
int tui_text_width(const char *s);
/* The mark of text cut to fit: an ellipsis, or ~ in ASCII. */
const char *tui_ellipsis(const struct tui *t);
/* Append S to OUT, cut to WIDTH columns ending in the ellipsis when it is wider. */
void tui_fit(const struct tui *t, struct buf *out, const char *s, int width);
/* tui_put, cutting S with an ellipsis when it is wider than WIDTH. */
int tui_put_fit(const struct tui *t, int y, int x, int width, const char *s, bool pad);
/* Append a bar of WIDTH cells for FRACTION (0..1) to OUT. */
void tui_bar(const struct tui *t, struct buf *out, double fraction, int width);
/* The escaped label of NODE in OUT (reset first). */
void tui_label(struct tui *t, enum model_view view, model_node node, struct buf *out);
/* Escape S into OUT (appended). */
void tui_escape(const struct tui *t, struct buf *out, const char *s);
int tui_cell_width(const struct tui *t, bool with_bar);
void tui_layout(struct tui *t);
/* The value of METRIC shown as a percent of the total: not for derived metrics. */
bool tui_metric_has_percent(struct tui *t, uint32_t metric);

/* ---- tui-panes.c ---- */

/* The column chooser's first metric line (lines before: title, columns, mode, heading). */
#define COLUMNS_FIRST_METRIC 5

void tui_draw_tma(struct tui *t, struct tui_rect r);
void tui_draw_source(struct tui *t, struct tui_rect r);
void tui_draw_threads(struct tui *t, struct tui_rect r);
void tui_draw_mca(struct tui *t, struct tui_rect r);
void tui_draw_popup(struct tui *t);
void tui_caches_release(struct tui *t);
/* Make sure the threads cache is for the current selection; 0 or -1. */
int tui_threads_update(struct tui *t);
/* The number of lines of the current popup's content. */
int tui_popup_lines(struct tui *t);
/* The box the popups use on this screen. */
struct tui_rect tui_popup_rect(const struct tui *t);
/* Column chooser: the entry at LINE toggled. */
void tui_columns_toggle(struct tui *t, int line);

/* ---- tui-trace.c: the trace view ---- */

/* Open the trace view's state (the database's traces); -1 with a message said. */
int tui_trace_open(struct tui *t);
void tui_trace_release(struct tui *t);
void tui_trace_styles_init(struct tui *t);
void tui_trace_draw(struct tui *t);
/* The footer's right-hand part in the trace view: the row, the window's bins, the size. */
void tui_trace_footer_right(struct tui *t, struct buf *out);
/* Go to time SECONDS from the trace's start (the @ prompt). */
void tui_trace_goto(struct tui *t, double seconds);
/* The actions of tui-keys.def's TRACE rows. */
void tui_trace_key_move(struct tui *t, int key);
void tui_trace_key_pan(struct tui *t, int key);
void tui_trace_key_zoom(struct tui *t, int key);
void tui_trace_key_depth(struct tui *t, int key);
void tui_trace_key_enter(struct tui *t, int key);
void tui_trace_key_collapse(struct tui *t, int key);
void tui_trace_key_threads(struct tui *t, int key);
void tui_trace_key_time(struct tui *t, int key);

/* ---- tui.c ---- */

/* Show context CTX selected in the top-down tree. */
void tui_show_context(struct tui *t, uint32_t ctx);
void tui_start_prompt(struct tui *t, enum tui_prompt p);
/* tui-draw.c: the footer line (prompt, message or key hints). */
void tui_draw_footer(struct tui *t);

void tui_columns_rebuild(struct tui *t);
void tui_message(struct tui *t, bool error, const char *fmt, ...) FTH_PRINTF(3, 4);
uint32_t tui_sort_column(const struct tui *t); /* index in COLS, or UINT32_MAX (by name) */

#endif
