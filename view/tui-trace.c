/* SPDX-License-Identifier: MIT */
/*
 * tui-trace.c: the interactive trace view (key 4): a row per thread, grouped under a row per
 * process that shows what its threads did together (collapsible), a column per time bin, each
 * cell the scope at the chosen call-path depth that took most of the bin, in a colour and a
 * letter per function with a legend of those on screen; above them the time axis and the
 * summary strip (the scope with the largest share of each bin across every thread); beside
 * them the cell under the cursor: its time, thread and full call path.  The model is
 * view/model-trace.h; the keys are tui-keys.def's TRACE rows.
 */
#include "compat.h"
#include "dbfile.h"
#include "error.h"
#include "model-trace.h"
#include "tui-internal.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define LABEL_W 14
#define SIDE_W 38
#define SUMMARY_K 4

static const char symbols[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
static const short palette[] = { COLOR_RED,     COLOR_GREEN, COLOR_YELLOW, COLOR_BLUE,
				 COLOR_MAGENTA, COLOR_CYAN,  COLOR_WHITE };
#define NPALETTE ((int)ARRAY_SIZE(palette))

/* The rows: a process, then its threads unless it is collapsed, one or a group a row. */
struct trace_row {
	int32_t thread; /* -1: the process of PID; -2: ORDER[FIRST .. FIRST + COUNT) together */
	uint32_t pid;
	uint32_t first, count;
};

struct tui_trace {
	struct trace_model *m;
	uint64_t t0, t1;	  /* the window */
	uint32_t cursor_bin;	  /* of the last frame's bins */
	uint32_t cursor_row, top; /* rows */
	uint32_t nbins;
	struct trace_row *rows;
	uint32_t nrows, arows;
	uint32_t *collapsed; /* pids */
	uint32_t ncollapsed, acollapsed;
	uint32_t *order; /* threads by process, then index */
	uint32_t group;	 /* threads a row (zoomed out in threads: 2, 4, ...) */
	/* the scopes on screen, for the legend and the colours */
	uint32_t *legend;
	uint64_t *legend_bins;
	uint32_t nlegend, alegend;
};

static bool is_collapsed(const struct tui_trace *tt, uint32_t pid)
{
	for (uint32_t i = 0; i < tt->ncollapsed; i++)
		if (tt->collapsed[i] == pid)
			return true;
	return false;
}

static void add_row(struct tui_trace *tt, struct trace_row r)
{
	ALLOC_GROW(tt->rows, tt->nrows + 1, tt->arows);
	tt->rows[tt->nrows++] = r;
}

static void build_rows(struct tui_trace *tt)
{
	const struct dbfile *db = tt->m->db;
	tt->nrows = 0;
	for (uint32_t i = 0; i < db->nthreads;) {
		uint32_t pid = db->threads[tt->order[i]].pid, end = i;
		while (end < db->nthreads && db->threads[tt->order[end]].pid == pid)
			end++;
		add_row(tt, (struct trace_row){ -1, pid, i, end - i });
		for (uint32_t k = i; !is_collapsed(tt, pid) && k < end; k += tt->group) {
			uint32_t n = FTH_MIN(tt->group, end - k);
			add_row(tt, n == 1 ? (struct trace_row){ (int32_t)tt->order[k], pid, k, 1 }
					   : (struct trace_row){ -2, pid, k, n });
		}
		i = end;
	}
	if (tt->cursor_row >= tt->nrows)
		tt->cursor_row = tt->nrows ? tt->nrows - 1 : 0;
}

void tui_trace_release(struct tui *t)
{
	struct tui_trace *tt = t->trace;
	if (!tt)
		return;
	free(tt->rows);
	free(tt->collapsed);
	free(tt->order);
	free(tt->legend);
	free(tt->legend_bins);
	free(tt);
	t->trace = NULL;
}

int tui_trace_open(struct tui *t)
{
	if (t->trace)
		return 0;
	struct trace_model *m;
	int rc = model_traces(t->model, &m);
	if (rc != 0) {
		if (rc > 0)
			tui_message(t, true, "no traces in this database: measure the program with "
					     "measure -t, then run prof again");
		else
			tui_message(t, true, "%s", fth_errmsg());
		return -1;
	}
	struct tui_trace *tt = xcalloc(1, sizeof(*tt));
	tt->m = m;
	tt->t0 = m->t_begin;
	tt->t1 = m->t_end + 1;
	tt->order = trace_model_thread_order(m);
	t->trace = tt;
	tt->group = 1;
	build_rows(tt);
	trace_model_set_depth(m, trace_model_default_depth(m, tt->t0, tt->t1));
	/* Open on the first thread row. */
	tt->cursor_row = tt->nrows > 1 ? 1 : 0;
	return 0;
}

/* ---- the legend: scopes on screen, ranked by the bins they take ---- */

static uint32_t legend_index(struct tui_trace *tt, uint32_t scope, bool add)
{
	for (uint32_t i = 0; i < tt->nlegend; i++)
		if (tt->legend[i] == scope) {
			tt->legend_bins[i] += add;
			return i;
		}
	if (!add)
		return UINT32_MAX;
	if (tt->nlegend == tt->alegend) {
		tt->alegend = tt->alegend ? tt->alegend * 2 : 16;
		tt->legend = xreallocarray(tt->legend, tt->alegend, sizeof(*tt->legend));
		tt->legend_bins = xreallocarray(tt->legend_bins, tt->alegend, sizeof(uint64_t));
	}
	tt->legend[tt->nlegend] = scope;
	tt->legend_bins[tt->nlegend] = 1;
	return tt->nlegend++;
}

/* Rank the legend by bins, most first (a stable insertion sort: the legend is short). */
static void legend_sort(struct tui_trace *tt)
{
	for (uint32_t i = 1; i < tt->nlegend; i++)
		for (uint32_t j = i; j > 0 && tt->legend_bins[j] > tt->legend_bins[j - 1]; j--) {
			uint32_t s = tt->legend[j];
			uint64_t b = tt->legend_bins[j];
			tt->legend[j] = tt->legend[j - 1];
			tt->legend_bins[j] = tt->legend_bins[j - 1];
			tt->legend[j - 1] = s;
			tt->legend_bins[j - 1] = b;
		}
}

void tui_trace_styles_init(struct tui *t)
{
	if (!t->color)
		return;
	for (int i = 0; i < NPALETTE && TUI_NSTYLES + i < COLOR_PAIRS; i++)
		init_pair((short)(TUI_NSTYLES + i), COLOR_BLACK, palette[i]);
}

/* The cell of scope rank R (or of a gap): its character and attribute. */
static void cell_look(const struct tui *t, const struct trace_cell *c, uint32_t rank, char *ch,
		      attr_t *attr)
{
	*attr = A_NORMAL;
	switch (c->kind) {
	case TRACE_WORK:
		*ch = rank < sizeof(symbols) - 1 ? symbols[rank] : '#';
		if (t->color && TUI_NSTYLES + NPALETTE <= COLOR_PAIRS)
			*attr = COLOR_PAIR(TUI_NSTYLES + (int)(rank % NPALETTE));
		else
			*attr = rank % 2 ? A_BOLD : A_NORMAL;
		break;
	case TRACE_IDLE:
		*ch = '.';
		*attr = tui_attr(t, TUI_STYLE_DIM);
		break;
	case TRACE_UNTRACED:
		*ch = '-';
		*attr = tui_attr(t, TUI_STYLE_DIM);
		break;
	default:
		*ch = ' ';
		break;
	}
}

/* The name of the function of SCOPE, escaped, into OUT. */
static void scope_name(struct tui *t, uint32_t scope, struct buf *out)
{
	struct dbfile_context c;
	if (scope == DBFILE_NONE || dbfile_context(t->trace->m->db, scope, &c) < 0 ||
	    c.function == DBFILE_NONE) {
		buf_addstr(out, "?");
		return;
	}
	tui_escape(t, out, model_function_name(t->model, c.function));
}

/* The cells of row R: a thread's, or the dominant scope of its threads (a process, a group). */
static int row_cells(struct tui_trace *tt, const struct trace_row *r, struct trace_cell *cells,
		     struct trace_share *share, uint32_t *nshare, bool *include)
{
	const struct dbfile *db = tt->m->db;
	if (r->thread >= 0)
		return trace_model_row(tt->m, (uint32_t)r->thread, tt->t0, tt->t1, tt->nbins, cells);
	memset(include, 0, db->nthreads * sizeof(*include));
	for (uint32_t i = r->first; i < r->first + r->count; i++)
		include[tt->order[i]] = true;
	int rc = trace_model_summary_of(tt->m, tt->t0, tt->t1, tt->nbins, SUMMARY_K, share,
					nshare, include);
	for (uint32_t k = 0; k < tt->nbins; k++)
		cells[k] = (struct trace_cell){ .kind = nshare[k] ? TRACE_WORK : TRACE_IDLE,
						.scope = nshare[k] ? share[(size_t)k * SUMMARY_K].scope
								   : DBFILE_NONE };
	return rc;
}

static void draw_cells(struct tui *t, int y, int x, const struct trace_cell *cells, uint32_t n,
		       bool cursor_row)
{
	struct tui_trace *tt = t->trace;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t rank = cells[k].kind == TRACE_WORK
					? legend_index(tt, cells[k].scope, false)
					: 0;
		char ch;
		attr_t attr;
		cell_look(t, &cells[k], rank, &ch, &attr);
		if (cursor_row && k == tt->cursor_bin)
			attr |= A_REVERSE | A_BOLD;
		attrset(attr);
		mvaddch(y, x + (int)k, (chtype)(unsigned char)ch);
	}
	attrset(A_NORMAL);
}

/* The side pane: the cell under the cursor, and the call path of the sample there. */
static void draw_side(struct tui *t, struct tui_rect r, const struct trace_cell *cell)
{
	struct tui_trace *tt = t->trace;
	struct trace_model *m = tt->m;
	struct dbfile *db = m->db;
	struct buf b = BUF_INIT;
	int y = r.y;
	uint64_t width = (tt->t1 - tt->t0) / tt->nbins;
	uint64_t at = tt->t0 + (tt->t1 - tt->t0) * tt->cursor_bin / tt->nbins + width / 2;
	for (int i = r.y; i < r.y + r.h; i++)
		tui_put(i, r.x, r.w, "", true);
	buf_printf(&b, "at %.6f s (bin %.3g ms)", (double)(at - m->t_begin) / 1e9,
		   (double)width / 1e6);
	attrset(tui_attr(t, TUI_STYLE_HEADER));
	tui_put_fit(t, y++, r.x, r.w, (const char *)b.data, true);
	attrset(A_NORMAL);
	const struct trace_row *row = tt->nrows ? &tt->rows[tt->cursor_row] : NULL;
	if (!row) {
		buf_release(&b);
		return;
	}
	buf_reset(&b);
	if (row->thread == -2) {
		buf_printf(&b, "%u threads of process %u together", row->count, row->pid);
	} else if (row->thread < 0) {
		buf_printf(&b, "process %u (its threads together)", row->pid);
		const struct dbfile_thread *th = &db->threads[tt->order[row->first]];
		if (th->rank >= 0)
			buf_printf(&b, ", rank %d", (int)th->rank);
	} else {
		const struct dbfile_thread *th = &db->threads[row->thread];
		buf_printf(&b, "thread %u, tid %u of pid %u", (uint32_t)row->thread, th->tid,
			   th->pid);
		if (th->name[0]) {
			buf_addstr(&b, " \"");
			tui_escape(t, &b, th->name);
			buf_addch(&b, '"');
		}
	}
	tui_put_fit(t, y++, r.x, r.w, (const char *)b.data, true);
	buf_reset(&b);
	static const char *const kinds[] = { "working", "alive, not sampled (blocked or waiting)",
					     "not started yet", "ended", "not traced" };
	if (cell->kind == TRACE_WORK) {
		scope_name(t, cell->scope, &b);
		if (cell->samples)
			buf_printf(&b, ": %u sample%s in the bin", cell->samples,
				   cell->samples == 1 ? "" : "s");
	} else {
		buf_addstr(&b, kinds[cell->kind < ARRAY_SIZE(kinds) ? cell->kind : 0]);
	}
	tui_put_fit(t, y++, r.x, r.w, (const char *)b.data, true);
	uint32_t ctx;
	uint64_t when;
	if (row->thread < 0 || trace_model_sample_at(m, (uint32_t)row->thread, at, &ctx, &when) != 0) {
		buf_release(&b);
		return;
	}
	buf_reset(&b);
	buf_printf(&b, "sample at %.6f s; call path:", (double)(when - m->t_begin) / 1e9);
	tui_put_fit(t, y++, r.x, r.w, (const char *)b.data, true);
	/* The path, outermost first: the functions, then the leaf's line. */
	uint32_t path[256], n = 0;
	struct dbfile_context c;
	for (uint32_t x = ctx; x != DBFILE_NONE && n < ARRAY_SIZE(path);) {
		if (dbfile_context(db, x, &c) < 0)
			break;
		if (c.kind == DBFILE_FUNCTION || c.kind == DBFILE_INLINE || x == ctx)
			path[n++] = x;
		x = c.parent;
	}
	for (uint32_t i = n; i-- > 0 && y < r.y + r.h;) {
		buf_reset(&b);
		if (dbfile_context(db, path[i], &c) < 0)
			break;
		uint32_t depth = n - 1 - i;
		bool chosen = path[i] == trace_model_scope(m, ctx);
		buf_printf(&b, "%s%2u ", chosen ? ">" : " ", depth);
		if (c.kind == DBFILE_FUNCTION || c.kind == DBFILE_INLINE) {
			tui_escape(t, &b, model_function_name(t->model, c.function));
		} else {
			if (c.file != DBFILE_NONE) {
				const char *f = dbfile_str(db, c.file), *slash = strrchr(f, '/');
				tui_escape(t, &b, slash ? slash + 1 : f);
				buf_printf(&b, ":%u", c.line);
			} else {
				buf_printf(&b, "0x%llx", (unsigned long long)c.addr);
			}
		}
		if (chosen)
			attrset(A_BOLD);
		tui_put_fit(t, y++, r.x, r.w, (const char *)b.data, true);
		attrset(A_NORMAL);
	}
	buf_release(&b);
}

void tui_trace_draw(struct tui *t)
{
	struct tui_trace *tt = t->trace;
	struct trace_model *m = tt->m;
	const struct dbfile *db = m->db;
	erase();
	bool side = t->columns >= 100;
	int cells_x = LABEL_W + 1;
	int cells_w = t->columns - cells_x - 1 - (side ? SIDE_W + 1 : 0);
	if (cells_w < 8 || t->lines < 8) {
		tui_put(0, 0, t->columns, "terminal too small for the trace view", false);
		return;
	}
	tt->nbins = (uint32_t)cells_w;
	if (tt->cursor_bin >= tt->nbins)
		tt->cursor_bin = tt->nbins - 1;
	/* Title. */
	struct buf b = BUF_INIT;
	buf_printf(&b, " trace  %.3f-%.3f s of %.3f s  depth %u/%u  %u thread%s traced",
		   (double)(tt->t0 - m->t_begin) / 1e9, (double)(tt->t1 - m->t_begin) / 1e9,
		   (double)(m->t_end - m->t_begin) / 1e9, m->depth, m->max_depth, m->ntraced,
		   m->ntraced == 1 ? "" : "s");
	attrset(tui_attr(t, TUI_STYLE_TITLE));
	tui_put_fit(t, 0, 0, t->columns, (const char *)b.data, true);
	attrset(A_NORMAL);
	/* The cells of every visible row (and the summary), then the legend from them. */
	int rows_y = 3, legend_h = 2;
	int rows_h = t->lines - rows_y - legend_h - 1;
	if (rows_h < 1)
		rows_h = 1;
	if (tt->cursor_row < tt->top)
		tt->top = tt->cursor_row;
	if (tt->cursor_row >= tt->top + (uint32_t)rows_h)
		tt->top = tt->cursor_row - (uint32_t)rows_h + 1;
	uint32_t nvis = tt->nrows - tt->top < (uint32_t)rows_h ? tt->nrows - tt->top : (uint32_t)rows_h;
	struct trace_cell *cells = xcalloc(((size_t)nvis + 1) * tt->nbins, sizeof(*cells));
	struct trace_share *share = xcalloc((size_t)tt->nbins * SUMMARY_K, sizeof(*share));
	uint32_t *nshare = xcalloc(tt->nbins, sizeof(*nshare));
	bool *include = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*include));
	int rc = trace_model_summary_of(m, tt->t0, tt->t1, tt->nbins, SUMMARY_K, share, nshare, NULL);
	struct trace_cell *sum = &cells[(size_t)nvis * tt->nbins];
	for (uint32_t k = 0; k < tt->nbins; k++)
		sum[k] = (struct trace_cell){ .kind = nshare[k] ? TRACE_WORK : TRACE_IDLE,
					      .scope = nshare[k] ? share[(size_t)k * SUMMARY_K].scope
								 : DBFILE_NONE };
	for (uint32_t i = 0; rc == 0 && i < nvis; i++)
		rc = row_cells(tt, &tt->rows[tt->top + i], &cells[(size_t)i * tt->nbins], share,
			       nshare, include);
	if (rc < 0)
		tui_message(t, true, "%s", fth_errmsg());
	tt->nlegend = 0;
	for (size_t i = 0; i < ((size_t)nvis + 1) * tt->nbins; i++)
		if (cells[i].kind == TRACE_WORK)
			legend_index(tt, cells[i].scope, true);
	legend_sort(tt);
	/* The time axis: the window's start, middle and end. */
	char lo[32], mid[32], hi[32];
	snprintf(lo, sizeof(lo), "%.3fs", (double)(tt->t0 - m->t_begin) / 1e9);
	snprintf(mid, sizeof(mid), "%.3fs", (double)((tt->t0 + tt->t1) / 2 - m->t_begin) / 1e9);
	snprintf(hi, sizeof(hi), "%.3fs", (double)(tt->t1 - m->t_begin) / 1e9);
	attrset(tui_attr(t, TUI_STYLE_HEADER));
	tui_put(1, 0, LABEL_W, "time", true);
	tui_put(1, cells_x, cells_w, lo, false);
	tui_put(1, cells_x + cells_w / 2 - (int)strlen(mid) / 2, (int)strlen(mid), mid, false);
	tui_put(1, cells_x + cells_w - (int)strlen(hi), (int)strlen(hi), hi, false);
	tui_put(2, 0, LABEL_W, "all threads", true);
	attrset(A_NORMAL);
	draw_cells(t, 2, cells_x, sum, tt->nbins, false);
	/* The rows. */
	for (uint32_t i = 0; i < nvis; i++) {
		const struct trace_row *r = &tt->rows[tt->top + i];
		int y = rows_y + (int)i;
		buf_reset(&b);
		if (r->thread == -2) {
			buf_printf(&b, "  %u threads", r->count);
		} else if (r->thread < 0) {
			const struct dbfile_thread *first = NULL;
			for (uint32_t k = 0; k < db->nthreads && !first; k++)
				if (db->threads[tt->order[k]].pid == r->pid)
					first = &db->threads[tt->order[k]];
			const char *prog = first ? strrchr(first->program, '/') : NULL;
			buf_printf(&b, "%s%u ", is_collapsed(tt, r->pid) ? "+" : "-", r->pid);
			if (first && first->rank >= 0)
				buf_printf(&b, "r%d ", (int)first->rank);
			tui_escape(t, &b, prog ? prog + 1 : first ? first->program : "");
			attrset(A_BOLD);
		} else {
			buf_printf(&b, "  %u", db->threads[r->thread].tid);
		}
		if (tt->top + i == tt->cursor_row)
			attrset(tui_attr(t, TUI_STYLE_SELECTED));
		tui_put_fit(t, y, 0, LABEL_W, (const char *)b.data, true);
		attrset(A_NORMAL);
		draw_cells(t, y, cells_x, &cells[(size_t)i * tt->nbins], tt->nbins,
			   tt->top + i == tt->cursor_row);
	}
	/* The legend. */
	int ly = t->lines - 1 - legend_h, lx = 0;
	for (uint32_t r = 0; r < tt->nlegend && ly < t->lines - 1; r++) {
		buf_reset(&b);
		scope_name(t, tt->legend[r], &b);
		int w = 2 + tui_text_width((const char *)b.data) + 2;
		if (lx + w > t->columns) {
			if (++ly >= t->lines - 1)
				break;
			lx = 0;
		}
		struct trace_cell c = { .kind = TRACE_WORK, .scope = tt->legend[r] };
		char ch;
		attr_t attr;
		cell_look(t, &c, r, &ch, &attr);
		attrset(attr);
		mvaddch(ly, lx, (chtype)(unsigned char)ch);
		attrset(A_NORMAL);
		tui_put_fit(t, ly, lx + 2, t->columns - lx - 2, (const char *)b.data, false);
		lx += w;
	}
	if (side && nvis) {
		uint32_t vi = tt->cursor_row - tt->top;
		struct tui_rect r = { rows_y - 2, t->columns - SIDE_W, rows_h + 2, SIDE_W };
		for (int y = r.y; y < r.y + r.h; y++)
			tui_put(y, r.x - 1, 1, t->utf8_glyph ? "│" : "|", false);
		draw_side(t, r, &cells[(size_t)vi * tt->nbins + tt->cursor_bin]);
	}
	tui_draw_footer(t);
	if (t->popup != TUI_POPUP_NONE)
		tui_draw_popup(t);
	free(cells);
	free(share);
	free(nshare);
	free(include);
	buf_release(&b);
}

void tui_trace_footer_right(struct tui *t, struct buf *out)
{
	const struct tui_trace *tt = t->trace;
	buf_printf(out, " row %u/%u  %u bins  %dx%d ", tt->nrows ? tt->cursor_row + 1 : 0, tt->nrows,
		   tt->nbins, t->columns, t->lines);
}

/* ---- keys (tui-keys.def's TRACE rows) ---- */

/* The window's time of bin I's middle. */
static uint64_t bin_time(const struct tui_trace *tt, uint32_t i)
{
	uint64_t w = tt->t1 - tt->t0;
	return tt->t0 + (uint64_t)((unsigned __int128)w * (2 * (uint64_t)i + 1) / (2 * tt->nbins));
}

/* Move the window to [T0, T0 + WIDTH), kept inside the trace, the cursor on time AT. */
static void set_window(struct tui_trace *tt, uint64_t t0, uint64_t width, uint64_t at)
{
	const struct trace_model *m = tt->m;
	uint64_t span = m->t_end + 1 - m->t_begin;
	if (width < tt->nbins)
		width = tt->nbins; /* a nanosecond a bin at the finest */
	if (width > span)
		width = span;
	if (t0 < m->t_begin)
		t0 = m->t_begin;
	if (t0 + width > m->t_end + 1)
		t0 = m->t_end + 1 - width;
	tt->t0 = t0;
	tt->t1 = t0 + width;
	if (at < tt->t0)
		at = tt->t0;
	uint64_t bin = (uint64_t)((unsigned __int128)(at - tt->t0) * tt->nbins / width);
	tt->cursor_bin = bin < tt->nbins ? (uint32_t)bin : tt->nbins - 1;
}

void tui_trace_key_move(struct tui *t, int key)
{
	struct tui_trace *tt = t->trace;
	switch (key) {
	case 'h':
	case KEY_LEFT:
		if (tt->cursor_bin > 0)
			tt->cursor_bin--;
		else
			set_window(tt, tt->t0 - FTH_MIN(tt->t0 - tt->m->t_begin, (tt->t1 - tt->t0) / 4),
				   tt->t1 - tt->t0, tt->t0 - 1);
		break;
	case 'l':
	case KEY_RIGHT:
		if (tt->cursor_bin + 1 < tt->nbins)
			tt->cursor_bin++;
		else
			set_window(tt, tt->t0 + (tt->t1 - tt->t0) / 4, tt->t1 - tt->t0, tt->t1);
		break;
	case 'k':
	case KEY_UP:
		if (tt->cursor_row > 0)
			tt->cursor_row--;
		break;
	case 'j':
	case KEY_DOWN:
		if (tt->cursor_row + 1 < tt->nrows)
			tt->cursor_row++;
		break;
	case KEY_NPAGE:
	case ' ':
		tt->cursor_row = FTH_MIN(tt->cursor_row + (uint32_t)FTH_MAX(t->lines - 7, 1),
					 tt->nrows ? tt->nrows - 1 : 0);
		break;
	case KEY_PPAGE:
	case 'b':
		tt->cursor_row -= FTH_MIN(tt->cursor_row, (uint32_t)FTH_MAX(t->lines - 7, 1));
		break;
	case 'g':
	case KEY_HOME:
		tt->cursor_row = 0;
		break;
	case 'G':
	case KEY_END:
		tt->cursor_row = tt->nrows ? tt->nrows - 1 : 0;
		break;
	}
}

void tui_trace_key_pan(struct tui *t, int key)
{
	struct tui_trace *tt = t->trace;
	uint64_t w = tt->t1 - tt->t0, half = w / 2, at = bin_time(tt, tt->cursor_bin);
	if (key == 'H' || key == '<')
		set_window(tt, tt->t0 - FTH_MIN(half, tt->t0 - tt->m->t_begin), w,
			   at - FTH_MIN(half, at - tt->m->t_begin));
	else
		set_window(tt, tt->t0 + half, w, at + half);
}

void tui_trace_key_zoom(struct tui *t, int key)
{
	struct tui_trace *tt = t->trace;
	uint64_t w = tt->t1 - tt->t0, at = bin_time(tt, tt->cursor_bin);
	if (key == '0') {
		set_window(tt, tt->m->t_begin, tt->m->t_end + 1 - tt->m->t_begin, at);
		return;
	}
	uint64_t nw = key == '-' ? w * 2 : w / 2;
	/* The cursor's time stays where it is on the screen. */
	uint64_t left = (uint64_t)((unsigned __int128)(at - tt->t0) * nw / (w ? w : 1));
	set_window(tt, at > left ? at - left : 0, nw, at);
}

void tui_trace_key_depth(struct tui *t, int key)
{
	struct trace_model *m = t->trace->m;
	if (key == ']' && m->depth < m->max_depth)
		trace_model_set_depth(m, m->depth + 1);
	else if (key == '[' && m->depth > 0)
		trace_model_set_depth(m, m->depth - 1);
	tui_message(t, false, "depth %u of %u", m->depth, m->max_depth);
}

void tui_trace_key_enter(struct tui *t, int key)
{
	struct tui_trace *tt = t->trace;
	if (!tt->nrows)
		return;
	const struct trace_row *r = &tt->rows[tt->cursor_row];
	if (r->thread == -2 && key != ' ') {
		tui_message(t, true, "a row of %u threads: { shows fewer threads a row", r->count);
		return;
	}
	if (r->thread < 0 || key == ' ') {
		/* A process: collapse or expand its threads. */
		uint32_t pid = r->pid;
		bool was = is_collapsed(tt, pid);
		if (was) {
			for (uint32_t i = 0; i < tt->ncollapsed; i++)
				if (tt->collapsed[i] == pid)
					tt->collapsed[i] = tt->collapsed[--tt->ncollapsed];
		} else {
			ALLOC_GROW(tt->collapsed, tt->ncollapsed + 1, tt->acollapsed);
			tt->collapsed[tt->ncollapsed++] = pid;
		}
		build_rows(tt);
		for (uint32_t i = 0; i < tt->nrows; i++)
			if (tt->rows[i].thread < 0 && tt->rows[i].pid == pid)
				tt->cursor_row = i;
		return;
	}
	uint32_t ctx;
	uint64_t when;
	if (trace_model_sample_at(tt->m, (uint32_t)r->thread, bin_time(tt, tt->cursor_bin), &ctx,
				  &when) != 0) {
		tui_message(t, true, "no sample there");
		return;
	}
	t->trace_mode = false;
	tui_show_context(t, ctx);
}

/* } and {: more or fewer threads a row. */
void tui_trace_key_threads(struct tui *t, int key)
{
	struct tui_trace *tt = t->trace;
	uint32_t max = tt->m->db->nthreads ? tt->m->db->nthreads : 1;
	if (key == '}' && tt->group < max)
		tt->group *= 2;
	else if (key == '{' && tt->group > 1)
		tt->group /= 2;
	uint32_t pid = tt->nrows ? tt->rows[tt->cursor_row].pid : 0;
	build_rows(tt);
	for (uint32_t i = 0; i < tt->nrows; i++)
		if (tt->rows[i].thread == -1 && tt->rows[i].pid == pid)
			tt->cursor_row = i;
	tui_message(t, false, "%u thread%s a row", tt->group, tt->group == 1 ? "" : "s");
}

void tui_trace_key_collapse(struct tui *t, int key)
{
	(void)key;
	tui_trace_key_enter(t, ' ');
}

void tui_trace_key_time(struct tui *t, int key)
{
	(void)key;
	tui_start_prompt(t, TUI_PROMPT_TRACE_TIME);
}

void tui_trace_goto(struct tui *t, double seconds)
{
	struct tui_trace *tt = t->trace;
	uint64_t at = tt->m->t_begin + (uint64_t)(seconds * 1e9);
	if (!(seconds >= 0) || at > tt->m->t_end) {
		tui_message(t, true, "the trace is %.3f s long",
			    (double)(tt->m->t_end - tt->m->t_begin) / 1e9);
		return;
	}
	uint64_t w = tt->t1 - tt->t0;
	set_window(tt, at > w / 2 ? at - w / 2 : 0, w, at);
}
