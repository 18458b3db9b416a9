/* SPDX-License-Identifier: MIT */
/*
 * tui-panes.c: view's panes and popups: the source pane (model_source: per-line values, the loop
 * gutter, a clear message when the file is missing), the threads pane (per-thread values of the
 * selection as a sorted histogram with the imbalance, and the thread selector), the TMA pane
 * (model_tma: the top-down tree of the selection with bars, the dominant path and thresholds), and
 * the help, database-information and column-chooser popups.
 */
#include "compat.h"
#include "escape.h"
#include "error.h"
#include "input.h"
#include "mfile.h"
#include "tui-internal.h"
#include "batch-mca.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SOURCE_MAX_BYTES (64u << 20)

/* A pane's title line: "─ TITLE ────". */
static void pane_title(struct tui *t, struct tui_rect r, const char *title, bool focused)
{
	struct buf b = BUF_INIT;
	const char *h = t->utf8_glyph ? "─" : "-";

	buf_addstr(&b, h);
	buf_addch(&b, ' ');
	tui_fit(t, &b, title, r.w - 4);
	buf_addch(&b, ' ');
	for (int w = tui_text_width((const char *)b.data); w < r.w; w++)
		buf_addstr(&b, h);
	attrset(tui_attr(t, TUI_STYLE_HEADER) | (focused ? A_BOLD | A_REVERSE : 0));
	tui_put(r.y, r.x, r.w, (const char *)b.data, true);
	attrset(A_NORMAL);
	buf_release(&b);
}

static void pane_line(struct tui *t, struct tui_rect r, int row, const char *s, attr_t attr)
{
	(void)t;
	if (row < 1 || row >= r.h)
		return;
	attrset(attr);
	tui_put(r.y + row, r.x, r.w, s, true);
	attrset(A_NORMAL);
}

static void pane_clear_from(struct tui *t, struct tui_rect r, int row)
{
	for (; row < r.h; row++)
		pane_line(t, r, row, "", A_NORMAL);
}

/* The end of drawing a pane: its rows from ROW on cleared, the buffers it was drawn with
 * released (LABEL may be NULL). */
static void pane_finish(struct tui *t, struct tui_rect r, int row, struct buf *title,
			struct buf *line, struct buf *label)
{
	pane_clear_from(t, r, row);
	buf_release(title);
	buf_release(line);
	if (label)
		buf_release(label);
}

static const char *metric_name(struct tui *t, uint32_t metric)
{
	const struct dbfile_metric *m = model_metric(t->model, metric);
	return m ? m->name : "?";
}

/* The metric the panes show: the sort column's, else the first column's. */
static uint32_t pane_metric(const struct tui *t, bool *inclusive)
{
	uint32_t c = tui_sort_column(t);
	if (c == UINT32_MAX)
		c = 0;
	if (t->ncols == 0) {
		*inclusive = true;
		return t->metrics[0];
	}
	*inclusive = t->cols[c].inclusive;
	return t->cols[c].metric;
}

/* ---- TMA ---- */

/* A node's name (in a comparison, without its run's prefix: the row is of both). */
static void tma_label(struct tui *t, const struct model_tma_row *r, struct buf *out)
{
	tui_escape(t, out, model_metric_base_name(t->model, r->metric));
}

void tui_draw_tma(struct tui *t, struct tui_rect r)
{
	const struct model_tma_row *rows;
	model_node sel = t->sel[t->view];
	uint32_t n = sel == MODEL_NONE ? 0 : model_tma(t->model, t->view, sel, &rows);
	struct buf title = BUF_INIT, line = BUF_INIT, label = BUF_INIT;
	int row = 1, namew = 0, skipped = 0, basis = 0;
	/* A comparison: A's bar and share, then B's share and the change ("-> 20.0%  -10.0") */
	int compared = model_comparison(t->model) ? 16 : 0;

	buf_addstr(&title, compared ? "TMA A -> B" : "TMA");
	if (t->tma_depth == 1)
		buf_addstr(&title, " (level 1)");
	else if (t->tma_depth)
		buf_printf(&title, " (levels 1-%d)", t->tma_depth);
	if (sel != MODEL_NONE) {
		tui_label(t, t->view, sel, &label);
		buf_addstr(&title, ": ");
		buf_add(&title, label.data, label.len);
	}
	pane_title(t, r, (const char *)title.data, t->focus == TUI_PANE_TMA);
	if (n == 0) {
		pane_line(t, r, row++, " No TMA (top-down) metrics in this database.", A_BOLD);
		pane_line(t, r, row++, " Measure them with:", A_NORMAL);
		pane_line(t, r, row++, "   measure -e topdown ./program", A_NORMAL);
		pane_line(t, r, row++, " (needs a CPU with a PMU; see measure -L)", A_NORMAL);
		goto out;
	}
	for (uint32_t i = 0; i < n; i++) {
		int w;
		if (t->tma_depth && rows[i].level > (uint32_t)t->tma_depth)
			continue;
		buf_reset(&label);
		tma_label(t, &rows[i], &label);
		/* Room for " of cycles" in a pane wide enough not to cut the names for it. */
		if (rows[i].basis_changes && r.w >= 50)
			basis = 10;
		w = (int)rows[i].depth * 2 + tui_text_width((const char *)label.data);
		if (w > namew)
			namew = w;
	}
	if (namew > r.w - 18 - compared)
		namew = r.w - 18 - compared;
	if (namew < 4)
		namew = 4;
	for (uint32_t i = 0; i < n; i++) {
		const struct model_tma_row *tr = &rows[i];
		int pad, barw = r.w - namew - 12 - basis - compared;
		attr_t attr = A_NORMAL;
		if (t->tma_depth && tr->level > (uint32_t)t->tma_depth)
			continue;
		if (skipped++ < t->tma_scroll)
			continue;
		if (row >= r.h)
			break;
		buf_reset(&line);
		buf_reset(&label);
		buf_addstr(&line, tr->dominant ? (t->utf8_glyph ? "»" : ">") : " ");
		for (uint32_t d = 0; d < tr->depth; d++)
			buf_addstr(&line, "  ");
		tma_label(t, tr, &label);
		tui_fit(t, &line, (const char *)label.data, namew - (int)tr->depth * 2);
		pad = namew - tui_text_width((const char *)line.data) + 1;
		for (; pad > 0; pad--)
			buf_addch(&line, ' ');
		buf_addch(&line, ' ');
		if (barw > 20)
			barw = 20;
		if (barw < 3)
			barw = 3;
		if (isnan(tr->fraction)) {
			for (int k = 0; k < barw; k++)
				buf_addch(&line, ' ');
			buf_addstr(&line, "    n/a");
		} else {
			tui_bar(t, &line, tr->fraction, barw);
			buf_printf(&line, " %5.1f%%", tr->fraction * 100);
		}
		if (compared && isnan(tr->fraction_b))
			buf_addstr(&line, " ->    n/a       ");
		else if (compared)
			buf_printf(&line, " -> %5.1f%% %+6.1f", tr->fraction_b * 100,
				   isnan(tr->fraction) ? NAN : (tr->fraction_b - tr->fraction) * 100);
		buf_addstr(&line, tr->over_threshold ? " !" : "  ");
		/* The basis of a fraction that is not its parent's (Memory Bound's children), where
		 * the pane has room for it after the bar. */
		if (tr->basis_changes && tui_text_width((const char *)line.data) + 10 <= r.w)
			buf_addstr(&line, tr->of_cycles ? " of cycles" : " of slots");
		if (tr->over_threshold)
			attr = tui_attr(t, TUI_STYLE_THRESHOLD);
		else if (tr->dominant)
			attr = tui_attr(t, TUI_STYLE_DOMINANT);
		pane_line(t, r, row++, (const char *)line.data, attr);
	}
out:
	pane_finish(t, r, row, &title, &line, &label);
}

/* ---- source ---- */

static void source_release(struct tui_source_cache *c)
{
	if (c->valid && c->status == 0)
		model_source_release(&c->src);
	FREE_AND_NULL(c->error);
	FREE_AND_NULL(c->text);
	FREE_AND_NULL(c->lines);
	c->nlines = 0;
	c->valid = false;
}

static int read_source(struct tui_source_cache *c, const char *path)
{
	int fd = input_open(path, NULL);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "rb");
	struct buf b = BUF_INIT;
	size_t cap = 0;
	char *p;

	if (!f) {
		int err = errno;
		close(fd);
		return fth_error_errno(err, "%s", path);
	}
	for (;;) {
		uint8_t *space = buf_reserve(&b, 65536);
		size_t n = fread(space, 1, 65536, f);
		b.len += n;
		b.data[b.len] = 0;
		if (n < 65536)
			break;
		if (b.len > SOURCE_MAX_BYTES) {
			fclose(f);
			buf_release(&b);
			return fth_error("%s: larger than %u MiB", path, SOURCE_MAX_BYTES >> 20);
		}
	}
	fclose(f);
	c->text = buf_detach(&b, NULL);
	for (p = c->text; *p;) {
		char *nl = strchr(p, '\n');
		ALLOC_GROW(c->lines, c->nlines + 1, cap);
		c->lines[c->nlines++] = p;
		if (!nl)
			break;
		*nl = 0;
		p = nl + 1;
	}
	return 0;
}

static struct tui_source_cache *source_update(struct tui *t)
{
	struct tui_source_cache *c = &t->source;
	model_node sel = t->sel[t->view];
	bool inclusive;
	uint32_t metric = pane_metric(t, &inclusive);

	if (c->valid && c->view == t->view && c->node == sel && c->metric == metric &&
	    c->thread == model_selected_thread(t->model))
		return c;
	source_release(c);
	c->valid = true;
	c->view = t->view;
	c->node = sel;
	c->metric = metric;
	c->thread = model_selected_thread(t->model);
	t->src_scroll = -1;
	memset(&c->src, 0, sizeof(c->src));
	c->status = sel == MODEL_NONE ? fth_error("nothing selected")
				   : model_source(t->model, t->view, sel, metric, &c->src);
	if (c->status) {
		c->error = xstrdup(fth_errmsg());
		return c;
	}
	if (c->src.path && read_source(c, c->src.path)) {
		c->error = xstrdup(fth_errmsg());
		FREE_AND_NULL(c->text);
	}
	return c;
}

static const struct model_source_line *source_line(const struct model_source *s, uint32_t line)
{
	uint32_t lo = 0, hi = s->nlines;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (s->lines[mid].line < line)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nlines && s->lines[lo].line == line ? &s->lines[lo] : NULL;
}

/* Tabs to spaces, then escaped. */
static void source_text(struct tui *t, const char *s, struct buf *out)
{
	struct buf plain = BUF_INIT;
	size_t col = 0;

	for (; *s; s++) {
		if (*s == '\t') {
			do
				buf_addch(&plain, ' ');
			while (++col % 8);
		} else if (*s != '\r') {
			buf_addch(&plain, *s);
			col++;
		}
	}
	esc_terminal(out, (const char *)plain.data, plain.len, t->utf8_text ? ESC_UTF8 : 0);
	buf_release(&plain);
}

void tui_draw_source(struct tui *t, struct tui_rect r)
{
	struct tui_source_cache *c = source_update(t);
	struct buf title = BUF_INIT, line = BUF_INIT;
	int row = 1, gutter = 0, body = r.h - 1, first;
	bool inclusive;
	uint32_t metric = pane_metric(t, &inclusive);
	double total = model_total(t->model, metric);

	buf_addstr(&title, "source ");
	if (c->status == 0)
		tui_escape(t, &title, c->src.path ? c->src.path : c->src.recorded);
	if (c->status == 0 && c->src.first)
		buf_printf(&title, " lines %u-%u", c->src.first, c->src.last);
	pane_title(t, r, (const char *)title.data, t->focus == TUI_PANE_SOURCE);
	if (c->status) {
		buf_reset(&line);
		buf_addstr(&line, " no source: ");
		tui_escape(t, &line, c->error);
		pane_line(t, r, row++, (const char *)line.data, A_BOLD);
		goto out;
	}
	if (!c->src.path || !c->text) {
		buf_reset(&line);
		buf_addstr(&line, " source file not found: ");
		tui_escape(t, &line, c->src.recorded ? c->src.recorded : "(no file recorded)");
		pane_line(t, r, row++, (const char *)line.data, tui_attr(t, TUI_STYLE_ERROR));
		if (c->error) {
			buf_reset(&line);
			buf_addch(&line, ' ');
			tui_escape(t, &line, c->error);
			pane_line(t, r, row++, (const char *)line.data, A_NORMAL);
		}
		pane_line(t, r, row++,
			  " press S to add a directory to search (or run view --source-path DIR)",
			  A_NORMAL);
		goto out;
	}
	for (uint32_t i = 0; i < c->src.nlines; i++)
		if ((int)c->src.lines[i].loop_depth > gutter)
			gutter = (int)c->src.lines[i].loop_depth;
	if (gutter > 6)
		gutter = 6;
	if (t->src_scroll < 0) {
		int focus = (int)(c->src.focus ? c->src.focus : c->src.first);
		t->src_scroll = focus - 1 - body / 3;
	}
	if (t->src_scroll > (int)c->nlines - body)
		t->src_scroll = (int)c->nlines - body;
	if (t->src_scroll < 0)
		t->src_scroll = 0;
	first = t->src_scroll;
	for (int i = 0; i < body - 0 && row < r.h; i++) {
		uint32_t lineno = (uint32_t)(first + i + 1);
		const struct model_source_line *sl;
		int textw, used;
		attr_t attr = A_NORMAL;
		if (lineno > c->nlines) {
			pane_line(t, r, row++, "", A_NORMAL);
			continue;
		}
		sl = source_line(&c->src, lineno);
		buf_reset(&line);
		for (int d = 0; d < gutter; d++)
			buf_addstr(&line, sl && (int)sl->loop_depth > d ? (t->utf8_glyph ? "┆" : ":")
									 : " ");
		buf_addstr(&line, sl && sl->loop_header ? (t->utf8_glyph ? "↻" : "@") : " ");
		buf_printf(&line, "%5u%s ", lineno, t->utf8_glyph ? "│" : "|");
		textw = r.w - tui_text_width((const char *)line.data) - 16;
		if (lineno == c->src.focus)
			attr = A_BOLD;
		if (lineno < c->src.first || lineno > c->src.last)
			attr |= tui_attr(t, TUI_STYLE_DIM);
		attrset(attr);
		used = tui_put(r.y + row, r.x, r.w, (const char *)line.data, false);
		buf_reset(&line);
		source_text(t, c->lines[lineno - 1], &line);
		tui_put(r.y + row, r.x + used, textw > 0 ? textw : 0, (const char *)line.data, true);
		buf_reset(&line);
		if (sl && sl->value != 0 && !isnan(sl->value)) {
			if (tui_metric_has_percent(t, metric) && total > 0) {
				buf_printf(&line, " %5.1f%% ", 100 * sl->value / total);
				tui_bar(t, &line, sl->value / total, 8);
			} else {
				char v[32];
				model_format_value(sl->value, model_metric(t->model, metric)->unit,
						   v, sizeof(v));
				buf_printf(&line, " %14s", v);
			}
		}
		tui_put(r.y + row, r.x + used + (textw > 0 ? textw : 0), 16, (const char *)line.data,
			true);
		attrset(A_NORMAL);
		row++;
	}
out:
	pane_finish(t, r, row, &title, &line, NULL);
}

/* ---- threads ---- */

static const struct tui_threads_cache *threads_sort_values;

static int by_value_desc(const void *a, const void *b)
{
	double x = threads_sort_values->values[*(const uint32_t *)a];
	double y = threads_sort_values->values[*(const uint32_t *)b];
	if (x != y)
		return x > y ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void thread_rows(const struct dbfile *db, struct tui_threads_cache *c,
			uint32_t nthreads_a, bool by_rank);

int tui_threads_update(struct tui *t)
{
	struct tui_threads_cache *c = &t->threads;
	const struct dbfile *db = model_db(t->model);
	model_node sel = t->sel[t->view];
	bool inclusive;
	uint32_t metric = pane_metric(t, &inclusive);
	/* A comparison: each run's threads with its own metric of the group (B - A of one run's
	 * thread would be minus its value). */
	const struct model_compare *cmp = model_comparison(t->model);
	uint32_t metric_b = DBFILE_NONE;
	if (cmp && cmp->metrics[metric].a != DBFILE_NONE && cmp->metrics[metric].b != DBFILE_NONE &&
	    cmp->metrics[metric].role != MODEL_ROLE_TMA_A &&
	    cmp->metrics[metric].role != MODEL_ROLE_TMA_B) {
		metric_b = cmp->metrics[metric].b;
		metric = cmp->metrics[metric].a;
	}

	if (c->valid && c->view == t->view && c->node == sel && c->metric == metric &&
	    c->inclusive == inclusive)
		return c->status;
	FREE_AND_NULL(c->error);
	free(c->values);
	free(c->order);
	c->values = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*c->values));
	c->order = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*c->order));
	c->valid = true;
	c->view = t->view;
	c->node = sel;
	c->metric = metric;
	c->inclusive = inclusive;
	if (db->flags & DBFILE_FLAG_NO_THREADS)
		c->status = fth_error("this database kept no per-thread values");
	else if (sel == MODEL_NONE)
		c->status = fth_error("nothing selected");
	else
		c->status =
			model_thread_values(t->model, t->view, sel, metric, inclusive, c->values);
	if (!c->status && metric_b != DBFILE_NONE) {
		double *b = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*b));
		c->status = model_thread_values(t->model, t->view, sel, metric_b, inclusive, b);
		for (uint32_t i = cmp->nthreads_a; i < db->nthreads; i++)
			c->values[i] = b[i];
		free(b);
	}
	if (c->status) {
		c->error = xstrdup(fth_errmsg());
		return -1;
	}
	for (uint32_t i = 0; i < db->nthreads; i++)
		c->order[i] = i;
	threads_sort_values = c;
	qsort(c->order, db->nthreads, sizeof(*c->order), by_value_desc);
	thread_rows(db, c, cmp ? cmp->nthreads_a : db->nthreads, model_has_ranks(t->model));
	return 0;
}

static int by_row_value_desc(const void *a, const void *b)
{
	const struct tui_thread_row *x = a, *y = b;
	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static const struct dbfile *rows_db;
static const uint32_t *rows_rank;
static uint32_t rows_nthreads_a; /* a comparison: the threads of run A; else all */
static bool rows_by_rank;	 /* MPI ranks: the threads grouped by rank, not by process */

/* The group key of thread X: its rank, or its pid. */
static int64_t group_key(uint32_t x)
{
	const struct dbfile_thread *th = &rows_db->threads[x];
	return rows_by_rank ? (int64_t)th->rank : (int64_t)th->pid;
}

/* Threads by run, by rank or pid, by pid, then by their place in the order by value. */
static int by_group_then_rank(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t px = rows_db->threads[x].pid, py = rows_db->threads[y].pid;
	int64_t gx = group_key(x), gy = group_key(y);
	bool bx = x >= rows_nthreads_a, by = y >= rows_nthreads_a;
	if (bx != by)
		return bx ? 1 : -1;
	if (gx != gy)
		return gx < gy ? -1 : 1;
	if (px != py)
		return px < py ? -1 : 1;
	return rows_rank[x] < rows_rank[y] ? -1 : rows_rank[x] > rows_rank[y];
}

/* The rows of the pane: processes (or MPI ranks, BY_RANK) by their sum, each followed by its
 * threads by value; in a comparison, a group of each run apart (NTHREADS_A: run A's threads). */
static void thread_rows(const struct dbfile *db, struct tui_threads_cache *c,
			uint32_t nthreads_a, bool by_rank)
{
	uint32_t n = db->nthreads, np = 0;
	uint32_t *rank = xcalloc(n ? n : 1, sizeof(*rank)), *by_pid = xcalloc(n ? n : 1, sizeof(*by_pid));
	struct tui_thread_row *procs = xcalloc(n ? n : 1, sizeof(*procs));
	uint32_t *proc_start = xcalloc((size_t)n + 1, sizeof(*proc_start));
	for (uint32_t k = 0; k < n; k++) {
		rank[c->order[k]] = k;
		by_pid[k] = k;
	}
	rows_db = db;
	rows_rank = rank;
	rows_nthreads_a = nthreads_a;
	rows_by_rank = by_rank;
	qsort(by_pid, n, sizeof(*by_pid), by_group_then_rank);
	for (uint32_t k = 0; k < n; k++) {
		const struct dbfile_thread *th = &db->threads[by_pid[k]];
		bool new_group = k == 0 || group_key(by_pid[k]) != group_key(by_pid[k - 1]) ||
				 (by_pid[k] >= nthreads_a) != (by_pid[k - 1] >= nthreads_a);
		if (new_group) {
			proc_start[np] = k;
			procs[np++] = (struct tui_thread_row){
				by_rank ? TUI_ROW_RANK : TUI_ROW_PROCESS, th->pid, by_pid[k], 0,
				th->rank, 0
			};
		}
		struct tui_thread_row *pr = &procs[np - 1];
		pr->value += c->values[by_pid[k]];
		if (new_group || th->pid != db->threads[by_pid[k - 1]].pid)
			pr->nprocs++;
		/* The command line of the last image the process ran (after its execs). */
		if (th->start_ns > db->threads[pr->first].start_ns)
			pr->first = by_pid[k];
	}
	proc_start[np] = n;
	c->several_hosts = false;
	for (uint32_t i = 1; i < n && !c->several_hosts; i++)
		c->several_hosts = strcmp(db->threads[i].host, db->threads[0].host) != 0;
	/* PROCS[i].thread holds its group's index while sorting; restored below. */
	for (uint32_t p = 0; p < np; p++)
		procs[p].thread = (int32_t)p;
	qsort(procs, np, sizeof(*procs), by_row_value_desc);
	free(c->rows);
	c->rows = xcalloc((size_t)n + np + 1, sizeof(*c->rows));
	c->nrows = 0;
	c->rows[c->nrows++] = (struct tui_thread_row){ TUI_ROW_ALL, 0, 0, 0, -1, 0 };
	for (uint32_t p = 0; p < np; p++) {
		uint32_t g = (uint32_t)procs[p].thread;
		procs[p].thread = by_rank ? TUI_ROW_RANK : TUI_ROW_PROCESS;
		c->rows[c->nrows++] = procs[p];
		for (uint32_t k = proc_start[g]; k < proc_start[g + 1]; k++) {
			uint32_t i = by_pid[k];
			c->rows[c->nrows++] = (struct tui_thread_row){
				(int32_t)i, db->threads[i].pid, 0, c->values[i], procs[p].rank, 0
			};
		}
	}
	free(procs);
	free(proc_start);
	free(by_pid);
	free(rank);
}

/* "rank 3 " for an MPI rank, nothing otherwise. */
static void add_rank(const struct dbfile_thread *th, struct buf *out)
{
	if (th->rank >= 0)
		buf_printf(out, "rank %d ", th->rank);
}

/* In a comparison, "A " or "B ": the run of thread I. */
static void add_run(struct tui *t, uint32_t i, struct buf *out)
{
	const struct model_compare *cmp = model_comparison(t->model);
	if (cmp)
		buf_addstr(out, i < cmp->nthreads_a ? "A " : "B ");
}

/* A thread: its number, tid, where it started and the name the program gave it (PROC: the
 * thread whose command line its process or rank row PROC_ROW shows). */
static void thread_identity(struct tui *t, uint32_t i, const struct dbfile_thread *proc,
			    const struct tui_thread_row *proc_row, struct buf *out)
{
	const struct dbfile_thread *th = &model_db(t->model)->threads[i];
	buf_printf(out, "  #%-3u ", i);
	add_run(t, i, out);
	if (!proc_row || proc_row->thread != TUI_ROW_RANK)
		add_rank(th, out);
	else if (proc_row->nprocs > 1)
		buf_printf(out, "pid %-7u ", th->pid);
	buf_printf(out, "tid %-7u ", th->tid);
	if (th->entry[0])
		tui_escape(t, out, th->entry);
	else
		buf_addstr(out, th->thread_index == 0 ? "main thread" : "?");
	if (th->name[0]) {
		buf_addstr(out, " \"");
		tui_escape(t, out, th->name);
		buf_addch(out, '"');
	}
	if (strcmp(th->program, proc->program) != 0) {
		/* An image the process ran before its exec */
		buf_addstr(out, " [");
		const char *slash = strrchr(th->program, '/');
		tui_escape(t, out, slash ? slash + 1 : th->program);
		buf_addstr(out, ", before exec]");
	}
}

/* A process: its pid, host (when the run has several) and command line; an MPI rank: the
 * rank, then its process's (or the number of its processes). */
static void process_identity(struct tui *t, const struct tui_thread_row *row, struct buf *out)
{
	const struct dbfile *db = model_db(t->model);
	const struct dbfile_thread *th = &db->threads[row->first];
	add_run(t, row->first, out);
	if (row->thread == TUI_ROW_RANK) {
		if (row->rank >= 0)
			buf_printf(out, "rank %-4d ", row->rank);
		else
			buf_addstr(out, "no rank   ");
		if (row->nprocs > 1)
			buf_printf(out, "%u processes ", row->nprocs);
		else
			buf_printf(out, "process %-7u ", row->pid);
	} else {
		buf_printf(out, "process %-7u ", row->pid);
		add_rank(th, out);
	}
	if (t->threads.several_hosts) {
		tui_escape(t, out, th->host);
		buf_addch(out, ' ');
	}
	if (th->argc == 0)
		tui_escape(t, out, th->program);
	for (uint32_t a = 0; a < th->argc; a++) {
		if (a)
			buf_addch(out, ' ');
		tui_escape(t, out, th->argv[a]);
	}
}

static int by_double_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x > y ? -1 : x < y;
}

/*
 * " N WHAT  min A  median B  max C  imbalance max/mean D" of the N VALUES (in UNIT) into LINE:
 * ORDER lists them largest first, or is NULL when they are in that order already.
 */
static void spread_line(const double *values, const uint32_t *order, uint32_t n,
			const char *what, uint8_t unit, struct buf *line)
{
#define AT(i) values[order ? order[i] : (i)]
	double sum = 0, max = n ? AT(0) : 0;
	double median = !n ? 0 : n % 2 ? AT(n / 2) : (AT(n / 2 - 1) + AT(n / 2)) / 2;
	for (uint32_t i = 0; i < n; i++)
		sum += values[i];
	char a[32], b[32], d[32];
	model_format_value(n ? AT(n - 1) : 0, unit, a, sizeof(a));
	model_format_value(median, unit, b, sizeof(b));
	model_format_value(max, unit, d, sizeof(d));
#undef AT
	buf_reset(line);
	buf_printf(line, " %u %s  min %s  median %s  max %s  imbalance max/mean %.2f", n, what, a,
		   b, d, n && sum > 0 ? max / (sum / n) : 0.0);
}

/* The line under the threads' summary in a run of MPI ranks: the ranks' totals of the
 * selected scope (their rows come largest first), min, median, max, and their imbalance. */
static void rank_summary(const struct tui_threads_cache *c, uint8_t unit, struct buf *line)
{
	uint32_t n = 0;
	double *v = xcalloc(c->nrows, sizeof(*v));
	for (uint32_t k = 0; k < c->nrows; k++)
		if (c->rows[k].thread == TUI_ROW_RANK && c->rows[k].rank >= 0)
			v[n++] = c->rows[k].value;
	qsort(v, n, sizeof(*v), by_double_desc);
	spread_line(v, NULL, n, n == 1 ? "rank" : "ranks", unit, line);
	free(v);
}

void tui_draw_threads(struct tui *t, struct tui_rect r)
{
	const struct dbfile *db = model_db(t->model);
	struct tui_threads_cache *c = &t->threads;
	struct buf title = BUF_INIT, line = BUF_INIT, label = BUF_INIT;
	int row = 1, body;
	uint32_t n = db->nthreads;
	int32_t current = model_selected_thread(t->model);
	int64_t process = model_selected_process(t->model);
	int32_t shown_rank = model_selected_rank(t->model);
	uint32_t proc_first = 0;
	const struct tui_thread_row *proc_row = NULL;
	double sum = 0, max = 0, group_max = 0;
	const struct dbfile_metric *m;
	char a[32];

	tui_threads_update(t);
	m = model_metric(t->model, c->metric);
	buf_addstr(&title, "threads: ");
	/* a comparison's: each run's threads with its own metric of the group */
	tui_escape(t, &title, model_comparison(t->model) ? model_metric_base_name(t->model, c->metric)
							  : metric_name(t, c->metric));
	buf_printf(&title, "(%s)", c->inclusive ? "I" : "E");
	if (t->sel[t->view] != MODEL_NONE) {
		tui_label(t, t->view, t->sel[t->view], &label);
		buf_addstr(&title, " at ");
		buf_add(&title, label.data, label.len);
	}
	pane_title(t, r, (const char *)title.data, t->focus == TUI_PANE_THREADS);
	if (c->status) {
		buf_addstr(&line, " ");
		tui_escape(t, &line, c->error);
		pane_line(t, r, row++, (const char *)line.data, A_BOLD);
		goto out;
	}
	if (n) {
		max = c->values[c->order[0]];
		for (uint32_t i = 0; i < n; i++)
			sum += c->values[i];
	}
	spread_line(c->values, c->order, n, "threads", m ? m->unit : 0, &line);
	pane_line(t, r, row++, (const char *)line.data, A_BOLD);
	for (uint32_t k = 0; k < c->nrows; k++)
		if ((c->rows[k].thread == TUI_ROW_PROCESS || c->rows[k].thread == TUI_ROW_RANK) &&
		    c->rows[k].value > group_max)
			group_max = c->rows[k].value;
	if (c->nrows > 1 && c->rows[1].thread == TUI_ROW_RANK) {
		rank_summary(c, m ? m->unit : 0, &line);
		pane_line(t, r, row++, (const char *)line.data, A_BOLD);
	}
	body = r.h - row;
	if (c->nrows && t->thr_cursor >= c->nrows)
		t->thr_cursor = c->nrows - 1;
	if (t->thr_cursor < t->thr_scroll)
		t->thr_scroll = t->thr_cursor;
	if (body > 0 && t->thr_cursor >= t->thr_scroll + (uint32_t)body)
		t->thr_scroll = t->thr_cursor - (uint32_t)body + 1;
	for (uint32_t k = t->thr_scroll; k < c->nrows && row < r.h; k++) {
		const struct tui_thread_row *tr = &c->rows[k];
		attr_t attr = A_NORMAL;
		bool focused = t->focus == TUI_PANE_THREADS && k == t->thr_cursor;
		bool shown = tr->thread == TUI_ROW_PROCESS ? process == (int64_t)tr->pid
			     : tr->thread == TUI_ROW_RANK  ? shown_rank >= 0 && shown_rank == tr->rank
			     : tr->thread == TUI_ROW_ALL
				     ? current < 0 && process < 0 && shown_rank < 0
				     : current == tr->thread;
		bool group = tr->thread == TUI_ROW_PROCESS || tr->thread == TUI_ROW_RANK;
		buf_reset(&line);
		buf_addstr(&line, shown ? "=" : " ");
		if (tr->thread == TUI_ROW_ALL) {
			buf_addstr(&line, " all threads (the sum)");
		} else {
			int idw, pad;
			model_format_value(tr->value, m ? m->unit : 0, a, sizeof(a));
			if (group) {
				process_identity(t, tr, &line);
				proc_first = tr->first;
				proc_row = tr;
			} else {
				thread_identity(t, (uint32_t)tr->thread, &db->threads[proc_first],
						proc_row, &line);
			}
			idw = tui_text_width((const char *)line.data);
			pad = (r.w > 70 ? 40 : r.w / 2) - idw;
			if (pad < 1 && group) {
				/* A long command line: cut, the values stay in their column. */
				char *whole = buf_detach(&line, NULL);
				tui_fit(t, &line, whole, (r.w > 70 ? 40 : r.w / 2) - 1);
				free(whole);
				pad = (r.w > 70 ? 40 : r.w / 2) - tui_text_width((const char *)line.data);
			}
			for (; pad > 0; pad--)
				buf_addch(&line, ' ');
			buf_printf(&line, " %10s %5.1f%% ", a, sum > 0 ? 100 * tr->value / sum : 0.0);
			double top = group ? group_max : max;
			tui_bar(t, &line, top > 0 ? tr->value / top : 0, r.w > 90 ? 20 : 10);
		}
		if (focused)
			attr = tui_attr(t, TUI_STYLE_SELECTED);
		else if (shown || group)
			attr = A_BOLD;
		pane_line(t, r, row++, (const char *)line.data, attr);
	}
out:
	pane_finish(t, r, row, &title, &line, &label);
}

/* ---- the llvm-mca pane ---- */

void tui_draw_mca(struct tui *t, struct tui_rect r)
{
	struct tui_mca_cache *c = &t->mca;
	model_node sel = t->sel[t->view];
	char loop[sizeof(c->loop)] = "";
	struct buf title = BUF_INIT, line = BUF_INIT, label = BUF_INIT;
	const char *why = NULL;
	int row = 1;

	if (sel == MODEL_NONE)
		why = "nothing selected";
	else if (mca_loop_at(t->model, t->view, sel, loop, sizeof(loop)) < 0)
		why = fth_errmsg();
	if (!why && (!c->text || strcmp(c->loop, loop) != 0)) {
		/* Another loop: llvm-mca runs once for it (a time limit bounds the wait). */
		struct batch_mca_options o = { .loop = loop, .mcpu = t->opt->mcpu,
					       .structs = t->opt->structs,
					       .nstructs = t->opt->nstructs };
		struct buf text = BUF_INIT;
		free(c->text);
		if (mca_describe(t->model, &o, &text) < 0) {
			buf_reset(&text);
			buf_printf(&text, "%s\n", fth_errmsg());
		}
		c->text = buf_detach(&text, NULL);
		snprintf(c->loop, sizeof(c->loop), "%s", loop);
		t->mca_scroll = 0;
	}
	buf_addstr(&title, "llvm-mca");
	if (sel != MODEL_NONE) {
		tui_label(t, t->view, sel, &label);
		buf_addstr(&title, ": ");
		buf_add(&title, label.data, label.len);
	}
	pane_title(t, r, (const char *)title.data, t->focus == TUI_PANE_MCA);
	if (why) {
		buf_addch(&line, ' ');
		tui_escape(t, &line, why);
		pane_line(t, r, row++, (const char *)line.data, A_BOLD);
		fth_error_clear();
		goto out;
	}
	int skip = t->mca_scroll;
	for (const char *p = c->text; *p && row < r.h;) {
		size_t n = strcspn(p, "\n");
		if (skip > 0) {
			skip--;
		} else {
			char *one = xmalloc(n + 1);
			memcpy(one, p, n);
			one[n] = '\0';
			buf_reset(&line);
			buf_addch(&line, ' ');
			tui_escape(t, &line, one);
			free(one);
			/* the headings of the two halves: what was measured, what llvm-mca says */
			bool heading = strncmp(p, "measured", 8) == 0 || strncmp(p, "llvm-mca", 8) == 0 ||
				       strncmp(p, "loop at", 7) == 0;
			pane_line(t, r, row++, (const char *)line.data, heading ? A_BOLD : A_NORMAL);
		}
		p += n;
		if (*p)
			p++;
	}
out:
	pane_finish(t, r, row, &title, &line, &label);
}

void tui_caches_release(struct tui *t)
{
	FREE_AND_NULL(t->mca.text);
	t->mca.loop[0] = '\0';
	source_release(&t->source);
	FREE_AND_NULL(t->threads.error);
	FREE_AND_NULL(t->threads.values);
	FREE_AND_NULL(t->threads.order);
	FREE_AND_NULL(t->threads.rows);
	t->threads.nrows = 0;
	t->threads.valid = false;
}

/* ---- popups ---- */

struct popup_lines {
	char **text; /* escaped */
	bool *bold;
	int n, cap;
};

static void popup_add_line(struct popup_lines *p, bool bold, struct buf *b)
{
	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 64;
		p->text = xreallocarray(p->text, (size_t)p->cap, sizeof(*p->text));
		p->bold = xreallocarray(p->bold, (size_t)p->cap, sizeof(*p->bold));
	}
	p->text[p->n] = xstrdup((const char *)b->data);
	p->bold[p->n++] = bold;
	buf_reset(b);
}

static void popup_lines_release(struct popup_lines *p)
{
	for (int i = 0; i < p->n; i++)
		free(p->text[i]);
	free(p->text);
	free(p->bold);
}

/* Append TEXT (plain ASCII, as the help is) to the line in B and on as lines of at most WIDTH
 * columns, broken at spaces; the lines after the first start with INDENT spaces. */
static void popup_add_wrapped(struct popup_lines *p, int indent, const char *text, int width,
			      struct buf *b)
{
	int room = width - (int)b->len;

	for (;;) {
		size_t len = strlen(text);
		if (room < 10)
			room = 10;
		if ((int)len > room) {
			/* The last space that leaves the line within ROOM, else a word cut. */
			size_t cut = (size_t)room;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			len = cut ? cut : (size_t)room;
		}
		buf_add(b, text, len);
		popup_add_line(p, false, b);
		text += len;
		while (*text == ' ')
			text++;
		if (!*text)
			break;
		for (int k = 0; k < indent; k++)
			buf_addch(b, ' ');
		room = width - indent;
	}
}

/* KEYS of a help entry without the F-keys this terminal cannot send ("H  F5" is "H" on a
 * vt100); the alternatives are separated by two spaces. */
static void usable_keys(const char *keys, struct buf *out)
{
	while (*keys) {
		const char *end = strstr(keys, "  ");
		size_t len = end ? (size_t)(end - keys) : strlen(keys);
		int n = 0;
		if (keys[0] == 'F' && keys[1] >= '1' && keys[1] <= '9') {
			n = keys[1] - '0';
			if (keys[2] >= '0' && keys[2] <= '9')
				n = n * 10 + keys[2] - '0';
		}
		if (!n || tui_fkey_usable(n)) {
			if (out->len)
				buf_addstr(out, "  ");
			buf_add(out, keys, len);
		}
		keys += len;
		while (*keys == ' ')
			keys++;
	}
}

/* The key column of the help; descriptions wrap after it. */
#define HELP_KEYS_W 14

static void help_lines(struct tui *t, struct popup_lines *p)
{
	struct buf b = BUF_INIT, keys = BUF_INIT;
	int width = tui_popup_rect(t).w - 4; /* a space before the right edge */

	popup_add_wrapped(p, 0, "Keys of view  (q, Esc or ? closes)", width, &b);
	p->bold[p->n - 1] = true;
	for (size_t i = 0; i < tui_nkeys; i++) {
		const struct tui_key_row *row = &tui_keys[i];
		if (!row->action) {
			popup_add_line(p, false, &b);
			buf_addstr(&b, row->what);
			popup_add_line(p, true, &b);
			continue;
		}
		if (!row->keys)
			continue;
		buf_reset(&keys);
		usable_keys(row->keys, &keys);
		buf_printf(&b, "  %-*s ", HELP_KEYS_W, (const char *)keys.data);
		popup_add_wrapped(p, HELP_KEYS_W + 3, row->what, width, &b);
	}
	popup_add_line(p, false, &b);
	popup_add_wrapped(p, 7,
			  "Marks: * multiplexed (scaled), ? too few samples, ! TMA over threshold",
			  width, &b);
	buf_release(&b);
	buf_release(&keys);
}

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* How the run went, as `perf report --header` says it: command, host, date, length, events. */
static void run_lines(struct tui *t, struct popup_lines *p, struct buf *b)
{
	const struct dbfile *db = model_db(t->model);
	uint64_t start = UINT64_MAX, end = 0;
	uint32_t first = 0, nproc = 0;
	if (db->nthreads == 0)
		return;
	uint32_t *pids = xcalloc(db->nthreads, sizeof(*pids));
	const char **hosts = xcalloc(db->nthreads, sizeof(*hosts));
	for (uint32_t i = 0; i < db->nthreads; i++) {
		pids[i] = db->threads[i].pid;
		hosts[i] = db->threads[i].host;
	}
	qsort(pids, db->nthreads, sizeof(*pids), model_cmp_u32);
	qsort(hosts, db->nthreads, sizeof(*hosts), by_string);
	for (uint32_t i = 0; i < db->nthreads; i++)
		nproc += i == 0 || pids[i] != pids[i - 1];
	free(pids);
	for (uint32_t i = 0; i < db->nthreads; i++) {
		const struct dbfile_thread *th = &db->threads[i];
		if (th->start_ns < start) {
			start = th->start_ns;
			first = i;
		}
		if (th->end_ns > end)
			end = th->end_ns;
	}
	const struct dbfile_thread *top = &db->threads[first];
	buf_addstr(b, "command    ");
	for (uint32_t a = 0; a < top->argc; a++) {
		if (a)
			buf_addch(b, ' ');
		tui_escape(t, b, top->argv[a]);
	}
	if (top->argc == 0)
		tui_escape(t, b, top->program);
	popup_add_line(p, false, b);
	buf_addstr(b, "host       ");
	tui_escape(t, b, top->host);
	uint32_t nhosts = 0;
	for (uint32_t i = 0; i < db->nthreads; i++) {
		if (i && strcmp(hosts[i], hosts[i - 1]) == 0)
			continue;
		nhosts++;
		if (strcmp(hosts[i], top->host) != 0 && nhosts <= 8) {
			buf_addstr(b, ", ");
			tui_escape(t, b, hosts[i]);
		}
	}
	if (nhosts > 8)
		buf_printf(b, " ... (%u hosts)", nhosts);
	free(hosts);
	popup_add_line(p, false, b);
	time_t when = (time_t)(start / 1000000000u);
	struct tm tm;
	char date[64] = "?";
	if (localtime_r(&when, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", &tm);
	buf_printf(b, "date       %s   duration %.3f s   processes %u", date,
		   end > start ? (double)(end - start) / 1e9 : 0.0, nproc);
	popup_add_line(p, false, b);
	buf_addstr(b, "events     ");
	bool any = false;
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		const struct dbfile_metric *m = &db->metrics[i];
		if (m->kind != DBFILE_METRIC_RAW || (m->flags & MFILE_METRIC_TMA && m->parent >= 0))
			continue;
		if (any)
			buf_addstr(b, ", ");
		any = true;
		tui_escape(t, b, m->name);
		if (m->rate_kind == MFILE_RATE_PERIOD)
			buf_printf(b, " every %llu", (unsigned long long)m->rate);
		else if (m->rate_kind == MFILE_RATE_FREQUENCY)
			buf_printf(b, " at %llu Hz", (unsigned long long)m->rate);
		else
			buf_addstr(b, " (every call)");
	}
	popup_add_line(p, false, b);
}

static void info_lines(struct tui *t, struct popup_lines *p)
{
	const struct dbfile *db = model_db(t->model);
	struct buf b = BUF_INIT;

	buf_addstr(&b, "Database  (q or Esc closes)");
	popup_add_line(p, true, &b);
	buf_addstr(&b, "program    ");
	tui_escape(t, &b, db->program);
	popup_add_line(p, false, &b);
	buf_addstr(&b, "directory  ");
	tui_escape(t, &b, db->dir);
	popup_add_line(p, false, &b);
	buf_printf(&b, "format     %u.%u%s%s", db->major, db->minor,
		   db->flags & DBFILE_FLAG_NO_LOOPS ? "  (some modules had no structure: no loops)"
						    : "",
		   db->flags & DBFILE_FLAG_NO_THREADS ? "  (no per-thread values)" : "");
	popup_add_line(p, false, &b);
	buf_printf(&b, "contexts   %u   functions %u   modules %u   threads %u", db->ncontexts,
		   db->nfunctions, db->nmodules, db->nthreads);
	popup_add_line(p, false, &b);
	run_lines(t, p, &b);
	for (uint32_t i = 0; i < db->nnotes; i++) {
		buf_addstr(&b, i ? "           " : "note       ");
		tui_escape(t, &b, db->notes[i]);
		popup_add_line(p, false, &b);
	}
	popup_add_line(p, false, &b);
	buf_addstr(&b, "Metrics");
	popup_add_line(p, true, &b);
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		const struct dbfile_metric *m = &db->metrics[i];
		buf_printf(&b, "%3u ", i);
		tui_escape(t, &b, m->name);
		buf_printf(&b, "  %s%s%s  samples %llu  threads %u", m->kind ? "derived" : "raw",
			   m->flags & MFILE_METRIC_MULTIPLEXED ? " multiplexed" : "",
			   model_metric_is_tma(t->model, i) ? " tma" : "",
			   (unsigned long long)m->samples, m->nthreads);
		if (m->scale != 1 && m->scale > 0)
			buf_printf(&b, "  scaled x%.2f", m->scale);
		popup_add_line(p, false, &b);
		if (m->description && m->description[0]) {
			buf_addstr(&b, "      ");
			tui_escape(t, &b, m->description);
			popup_add_line(p, false, &b);
		}
		if (m->formula && m->formula[0]) {
			buf_addstr(&b, "      = ");
			tui_escape(t, &b, m->formula);
			popup_add_line(p, false, &b);
		}
	}
	popup_add_line(p, false, &b);
	buf_printf(&b, "Threads (%u)", db->nthreads);
	popup_add_line(p, true, &b);
	for (uint32_t i = 0; i < db->nthreads; i++) {
		const struct dbfile_thread *th = &db->threads[i];
		buf_printf(&b, "%3u ", i);
		if (th->rank >= 0)
			buf_printf(&b, "rank %d ", th->rank);
		buf_printf(&b, "pid %u tid %u host ", th->pid, th->tid);
		tui_escape(t, &b, th->host);
		buf_addstr(&b, "  ");
		tui_escape(t, &b, th->file);
		popup_add_line(p, false, &b);
	}
	buf_release(&b);
}

static bool metric_shown(const struct tui *t, uint32_t metric, uint32_t *pos)
{
	for (uint32_t i = 0; i < t->nmetrics; i++)
		if (t->metrics[i] == metric) {
			*pos = i;
			return true;
		}
	return false;
}

static void column_lines(struct tui *t, struct popup_lines *p)
{
	static const char *const modes[] = { "value", "percent", "value and percent" };
	struct buf b = BUF_INIT;

	buf_addstr(&b, "Columns  (Enter or Space toggles; q or Esc closes)");
	popup_add_line(p, true, &b);
	buf_printf(&b, "[%c] inclusive columns", t->show_incl ? 'x' : ' ');
	popup_add_line(p, false, &b);
	buf_printf(&b, "[%c] exclusive columns", t->show_excl ? 'x' : ' ');
	popup_add_line(p, false, &b);
	buf_printf(&b, "show: %s  (Enter cycles, or %%)", modes[t->value_mode]);
	popup_add_line(p, false, &b);
	buf_addstr(&b, "Metrics shown, in column order:");
	popup_add_line(p, true, &b);
	for (uint32_t i = 0; i < model_nmetrics(t->model); i++) {
		const struct dbfile_metric *m = model_metric(t->model, i);
		uint32_t pos = 0;
		bool on = metric_shown(t, i, &pos);
		if (on)
			buf_printf(&b, "[x] %2u. ", pos + 1);
		else
			buf_addstr(&b, "[ ]     ");
		tui_escape(t, &b, m->name);
		if (m->description && m->description[0]) {
			buf_addstr(&b, "  ");
			tui_escape(t, &b, m->description);
		}
		popup_add_line(p, false, &b);
	}
	buf_release(&b);
}

static void popup_content(struct tui *t, struct popup_lines *p)
{
	memset(p, 0, sizeof(*p));
	if (t->popup == TUI_POPUP_HELP)
		help_lines(t, p);
	else if (t->popup == TUI_POPUP_INFO)
		info_lines(t, p);
	else if (t->popup == TUI_POPUP_COLUMNS)
		column_lines(t, p);
}

int tui_popup_lines(struct tui *t)
{
	struct popup_lines p;
	int n;

	popup_content(t, &p);
	n = p.n;
	popup_lines_release(&p);
	return n;
}

struct tui_rect tui_popup_rect(const struct tui *t)
{
	struct tui_rect r;

	r.w = t->columns - 4 > 96 ? 96 : t->columns - 4;
	r.h = t->lines - 3;
	r.x = (t->columns - r.w) / 2;
	r.y = 1;
	if (r.w < 10)
		r.w = t->columns, r.x = 0;
	if (r.h < 3)
		r.h = t->lines, r.y = 0;
	return r;
}

void tui_columns_toggle(struct tui *t, int line)
{
	if (line == 1 || line == 2) {
		bool *flag = line == 1 ? &t->show_incl : &t->show_excl;
		*flag = !*flag;
		if (!t->show_incl && !t->show_excl)
			*(line == 1 ? &t->show_excl : &t->show_incl) = true;
	} else if (line == 3) {
		t->value_mode = (t->value_mode + 1) % TUI_SHOW_MODES;
	} else if (line >= COLUMNS_FIRST_METRIC &&
		   (uint32_t)(line - COLUMNS_FIRST_METRIC) < model_nmetrics(t->model)) {
		uint32_t metric = (uint32_t)(line - COLUMNS_FIRST_METRIC), pos;
		if (metric_shown(t, metric, &pos)) {
			if (t->nmetrics == 1) {
				tui_message(t, true, "at least one metric stays shown");
				return;
			}
			memmove(&t->metrics[pos], &t->metrics[pos + 1],
				(t->nmetrics - pos - 1) * sizeof(*t->metrics));
			t->nmetrics--;
		} else {
			t->metrics = xreallocarray(t->metrics, t->nmetrics + 1, sizeof(*t->metrics));
			t->metrics[t->nmetrics++] = metric;
		}
	}
	tui_columns_rebuild(t);
}

void tui_draw_popup(struct tui *t)
{
	struct popup_lines p;
	struct tui_rect r = tui_popup_rect(t);
	const char *h = t->utf8_glyph ? "─" : "-", *v = t->utf8_glyph ? "│" : "|";
	struct buf edge = BUF_INIT;
	int body = r.h - 2;

	popup_content(t, &p);
	if (t->popup_scroll > p.n - body)
		t->popup_scroll = p.n - body;
	if (t->popup_scroll < 0)
		t->popup_scroll = 0;
	if (t->popup == TUI_POPUP_COLUMNS) {
		if (t->popup_cursor < 1)
			t->popup_cursor = 1;
		if (t->popup_cursor >= p.n)
			t->popup_cursor = p.n - 1;
		if (t->popup_cursor == COLUMNS_FIRST_METRIC - 1)
			t->popup_cursor = COLUMNS_FIRST_METRIC;
		if (t->popup_cursor < t->popup_scroll)
			t->popup_scroll = t->popup_cursor;
		if (t->popup_cursor >= t->popup_scroll + body)
			t->popup_scroll = t->popup_cursor - body + 1;
	}
	attrset(A_BOLD);
	buf_addstr(&edge, t->utf8_glyph ? "┌" : "+");
	for (int i = 2; i < r.w; i++)
		buf_addstr(&edge, h);
	buf_addstr(&edge, t->utf8_glyph ? "┐" : "+");
	tui_put(r.y, r.x, r.w, (const char *)edge.data, true);
	buf_reset(&edge);
	buf_addstr(&edge, t->utf8_glyph ? "└" : "+");
	if (p.n > body) {
		/* Taller than the box: where we are, and how to scroll. */
		int last = t->popup_scroll + body < p.n ? t->popup_scroll + body : p.n;
		buf_addstr(&edge, h);
		buf_printf(&edge, " lines %d-%d of %d, %s PgUp PgDn scroll ", t->popup_scroll + 1,
			   last, p.n, t->utf8_glyph ? "↑↓" : "Up Down");
	}
	for (int i = tui_text_width((const char *)edge.data); i < r.w - 1; i++)
		buf_addstr(&edge, h);
	buf_addstr(&edge, t->utf8_glyph ? "┘" : "+");
	tui_put(r.y + r.h - 1, r.x, r.w, (const char *)edge.data, true);
	for (int i = 0; i < body; i++) {
		int k = t->popup_scroll + i;
		attr_t attr = A_NORMAL;
		attrset(A_BOLD);
		tui_put(r.y + 1 + i, r.x, 1, v, false);
		tui_put(r.y + 1 + i, r.x + r.w - 1, 1, v, false);
		if (k < p.n && p.bold[k])
			attr = A_BOLD;
		if (t->popup == TUI_POPUP_COLUMNS && k == t->popup_cursor)
			attr = tui_attr(t, TUI_STYLE_SELECTED);
		attrset(attr);
		mvaddch(r.y + 1 + i, r.x + 1, ' ');
		tui_put(r.y + 1 + i, r.x + 2, r.w - 3, k < p.n ? p.text[k] : "", true);
	}
	attrset(A_NORMAL);
	buf_release(&edge);
	popup_lines_release(&p);
}
