/* SPDX-License-Identifier: MIT */
/*
 * tui-draw.c: the frame of view's interface: the layout for the terminal's size, the title line,
 * the column header, the tree rows with their metric cells, marks and bars, and the footer.
 * Everything is drawn into stdscr each frame without clearing it, so curses sends only the
 * cells that changed.  Text from the database is escaped (esc_terminal) before it is drawn.
 */
#include "compat.h"
#include "escape.h"
#include "mfile.h"
#include "tui-internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/* Widths of the parts of a metric cell. */
#define VALUE_W 9
#define PERCENT_W 6
#define BAR_W 5
#define LABEL_MIN 22

static const short style_colors[TUI_NSTYLES][2] = {
	[TUI_STYLE_NORMAL] = { -1, -1 },	     [TUI_STYLE_TITLE] = { COLOR_BLACK, COLOR_CYAN },
	[TUI_STYLE_HEADER] = { COLOR_CYAN, -1 },     [TUI_STYLE_SELECTED] = { COLOR_BLACK, COLOR_WHITE },
	[TUI_STYLE_FOOTER] = { COLOR_BLACK, COLOR_CYAN }, [TUI_STYLE_WARN] = { COLOR_YELLOW, -1 },
	[TUI_STYLE_THRESHOLD] = { COLOR_MAGENTA, -1 }, [TUI_STYLE_BAR] = { COLOR_BLUE, -1 },
	[TUI_STYLE_DOMINANT] = { COLOR_GREEN, -1 },  [TUI_STYLE_ERROR] = { COLOR_RED, -1 },
	[TUI_STYLE_DIM] = { COLOR_BLUE, -1 },
};

void tui_styles_init(struct tui *t)
{
	if (!t->color)
		return;
	start_color();
	use_default_colors();
	for (int i = 1; i < TUI_NSTYLES; i++)
		init_pair((short)i, style_colors[i][0], style_colors[i][1]);
	tui_trace_styles_init(t);
}

attr_t tui_attr(const struct tui *t, enum tui_style style)
{
	if (t->color) {
		attr_t extra = 0;
		if (style == TUI_STYLE_THRESHOLD || style == TUI_STYLE_DOMINANT ||
		    style == TUI_STYLE_ERROR || style == TUI_STYLE_TITLE)
			extra = A_BOLD;
		return style == TUI_STYLE_NORMAL ? A_NORMAL : (COLOR_PAIR(style) | extra);
	}
	switch (style) {
	case TUI_STYLE_TITLE:
	case TUI_STYLE_FOOTER:
	case TUI_STYLE_SELECTED:
		return A_REVERSE;
	case TUI_STYLE_HEADER:
	case TUI_STYLE_THRESHOLD:
	case TUI_STYLE_DOMINANT:
	case TUI_STYLE_ERROR:
		return A_BOLD;
	case TUI_STYLE_WARN:
		return A_UNDERLINE;
	case TUI_STYLE_DIM:
		return A_DIM;
	default:
		return A_NORMAL;
	}
}

int tui_put(int y, int x, int width, const char *s, bool pad)
{
	mbstate_t st;
	int used = 0;

	memset(&st, 0, sizeof(st));
	if (width <= 0)
		return 0;
	move(y, x);
	while (*s && used < width) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		int w;
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof(st));
			addch('?');
			used++;
			s++;
			continue;
		}
		w = wcwidth(wc);
		if (w < 0) {
			addch('?');
			used++;
		} else {
			if (used + w > width)
				break;
			addnstr(s, (int)n);
			used += w;
		}
		s += n;
	}
	if (pad)
		for (; used < width; used++)
			addch(' ');
	return used;
}

int tui_text_width(const char *s)
{
	mbstate_t st;
	int used = 0;

	memset(&st, 0, sizeof(st));
	while (*s) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof(st));
			used++;
			s++;
			continue;
		}
		used += wcwidth(wc) < 0 ? 1 : wcwidth(wc);
		s += n;
	}
	return used;
}

const char *tui_ellipsis(const struct tui *t)
{
	return t->utf8_glyph ? "…" : "~";
}

void tui_fit(const struct tui *t, struct buf *out, const char *s, int width)
{
	mbstate_t st;
	int used = 0;

	if (tui_text_width(s) <= width) {
		buf_addstr(out, s);
		return;
	}
	if (width <= 0)
		return;
	memset(&st, 0, sizeof(st));
	while (*s) {
		wchar_t wc;
		size_t n = mbrtowc(&wc, s, MB_CUR_MAX, &st);
		int w = 1;
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof(st));
			n = 1;
		} else if (wcwidth(wc) >= 0) {
			w = wcwidth(wc);
		}
		if (used + w > width - 1)
			break;
		buf_add(out, s, n);
		used += w;
		s += n;
	}
	buf_addstr(out, tui_ellipsis(t));
}

int tui_put_fit(const struct tui *t, int y, int x, int width, const char *s, bool pad)
{
	struct buf b = BUF_INIT;
	int used;

	tui_fit(t, &b, s, width);
	used = tui_put(y, x, width, (const char *)b.data, pad);
	buf_release(&b);
	return used;
}

void tui_bar(const struct tui *t, struct buf *out, double fraction, int width)
{
	static const char *const eighths[] = { "", "▏", "▎", "▍", "▌", "▋", "▊", "▉" };
	int cells = 0;

	if (!(fraction > 0))
		fraction = 0;
	if (fraction > 1)
		fraction = 1;
	if (t->utf8_glyph) {
		int n = (int)lround(fraction * width * 8);
		for (; n >= 8 && cells < width; n -= 8, cells++)
			buf_addstr(out, "█");
		if (n > 0 && cells < width) {
			buf_addstr(out, eighths[n]);
			cells++;
		}
	} else {
		int n = (int)lround(fraction * width);
		for (; cells < n; cells++)
			buf_addch(out, '#');
	}
	for (; cells < width; cells++)
		buf_addch(out, ' ');
}

void tui_escape(const struct tui *t, struct buf *out, const char *s)
{
	if (s)
		esc_terminal(out, s, strlen(s), t->utf8_text ? ESC_UTF8 : 0);
}

void tui_label(struct tui *t, enum model_view view, model_node node, struct buf *out)
{
	struct buf raw = BUF_INIT;

	buf_reset(out);
	model_node_label(t->model, view, node, t->utf8_glyph, &raw);
	esc_terminal(out, (const char *)raw.data, raw.len, t->utf8_text ? ESC_UTF8 : 0);
	buf_release(&raw);
}

bool tui_metric_has_percent(struct tui *t, uint32_t metric)
{
	const struct dbfile_metric *m = model_metric(t->model, metric);
	return m && m->kind == DBFILE_METRIC_RAW && !model_metric_is_tma(t->model, metric);
}

int tui_cell_width(const struct tui *t, bool with_bar)
{
	int w;

	switch (t->value_mode) {
	case TUI_SHOW_PERCENT:
		w = PERCENT_W + 1;
		break;
	case TUI_SHOW_BOTH:
		w = VALUE_W + 1 + PERCENT_W + 1;
		break;
	default:
		w = VALUE_W + 1;
		break;
	}
	return w + (with_bar ? BAR_W + 1 : 0);
}

/* The text of a value of METRIC, for a field of WIDTH. */
static void format_value(struct tui *t, uint32_t metric, double v, char *out, size_t size)
{
	if (isnan(v))
		snprintf(out, size, "-");
	else
		model_format_metric(t->model, metric, v, out, size);
}

/* The percent field of a value V of column C at NODE: of the total; of a comparison's change
 * (B - A), the change in percent of A's value ("+100%", "new" where A had none); empty for
 * B / A; else the value again. */
static void format_percent(struct tui *t, model_node node, const struct tui_column *c, double v,
			   char *out, size_t size)
{
	uint32_t metric = c->metric;
	double total;
	const struct model_compare *cmp = model_comparison(t->model);
	enum model_role role = model_metric_role(t->model, metric);

	if (role == MODEL_ROLE_DELTA && !cmp->metrics[metric].normalized) {
		double a = model_value(t->model, t->view, node, cmp->metrics[metric].a, c->inclusive);
		double change = 100 * v / a;
		if (isnan(v) || isnan(a) || (a == 0 && v == 0))
			snprintf(out, size, "-");
		else if (v == 0)
			snprintf(out, size, "0%%");
		else if (a == 0)
			snprintf(out, size, "new");
		else
			snprintf(out, size, fabs(change) < 9.95 ? "%+.1f%%" : "%+.0f%%", change);
		return;
	}
	if (role == MODEL_ROLE_DELTA || role == MODEL_ROLE_RATIO) {
		snprintf(out, size, "%s", "");
		return;
	}
	if (!tui_metric_has_percent(t, metric)) {
		format_value(t, metric, v, out, size);
		return;
	}
	total = model_total(t->model, metric);
	if (isnan(v) || !(total != 0) || isnan(total))
		snprintf(out, size, "-");
	else
		snprintf(out, size, "%.1f%%", 100.0 * v / total);
}

/* The letter marks of a value: '*' multiplexed, '?' low samples, '!' TMA over threshold. */
static char value_mark(struct tui *t, model_node node, const struct tui_column *c, double v,
		       enum tui_style *style)
{
	const struct dbfile_metric *m = model_metric(t->model, c->metric);
	unsigned marks = model_value_marks(t->model, t->view, node, c->metric);

	*style = TUI_STYLE_WARN;
	if (m && model_metric_is_tma(t->model, c->metric) && !isnan(m->threshold) &&
	    v > m->threshold) {
		*style = TUI_STYLE_THRESHOLD;
		return '!';
	}
	if (marks & MODEL_MARK_LOW_SAMPLES)
		return '?';
	if (marks & MODEL_MARK_MULTIPLEXED)
		return '*';
	return ' ';
}

/* Draw one cell at (Y, X); returns its width. */
static int draw_cell(struct tui *t, int y, int x, model_node node, const struct tui_column *c,
		     bool with_bar, attr_t base)
{
	char text[64];
	double v = model_value(t->model, t->view, node, c->metric, c->inclusive);
	enum tui_style mark_style;
	char mark = value_mark(t, node, c, v, &mark_style);
	int col = x;

	attrset(base);
	if (t->value_mode != TUI_SHOW_PERCENT) {
		char field[VALUE_W + 1];
		format_value(t, c->metric, v, text, sizeof(text));
		snprintf(field, sizeof(field), "%*.*s", VALUE_W, VALUE_W, text);
		tui_put(y, col, VALUE_W, field, true);
		col += VALUE_W;
	}
	if (t->value_mode != TUI_SHOW_VALUE) {
		char field[PERCENT_W + 1];
		if (t->value_mode == TUI_SHOW_BOTH) {
			mvaddch(y, col, ' ');
			col++;
		}
		format_percent(t, node, c, v, text, sizeof(text));
		snprintf(field, sizeof(field), "%*.*s", PERCENT_W, PERCENT_W, text);
		tui_put(y, col, PERCENT_W, field, true);
		col += PERCENT_W;
	}
	attrset(base | tui_attr(t, mark_style));
	mvaddch(y, col, (chtype)mark);
	attrset(base);
	col++;
	if (with_bar) {
		struct buf bar = BUF_INIT;
		double total = model_total(t->model, c->metric);
		double fraction = NAN;
		if (tui_metric_has_percent(t, c->metric))
			fraction = total > 0 ? v / total : 0;
		else if (model_metric_is_tma(t->model, c->metric))
			fraction = v;
		mvaddch(y, col, ' ');
		col++;
		tui_bar(t, &bar, isnan(fraction) ? 0 : fraction, BAR_W);
		attrset(base | tui_attr(t, TUI_STYLE_BAR));
		tui_put(y, col, BAR_W, (const char *)bar.data, true);
		attrset(base);
		col += BAR_W;
		buf_release(&bar);
	}
	return col - x;
}

void tui_layout(struct tui *t)
{
	int body_y = 2, body_h = t->lines - 3;
	bool narrow = t->columns < 120;
	enum tui_pane below = TUI_PANE_NONE;

	t->tree = (struct tui_rect){ body_y, 0, body_h, t->columns };
	t->pane_shown = t->tma_shown = false;
	if (body_h < 3)
		return;
	if (t->tma_open && !narrow) {
		int w = t->columns >= 160 ? 56 : 44;
		t->tma = (struct tui_rect){ 1, t->columns - w, body_h + 1, w };
		t->tma_shown = true;
		t->tree.w = t->columns - w - 1;
	}
	if (t->bottom != TUI_PANE_NONE && (!(t->tma_open && narrow) ||
					   t->last_opened != TUI_PANE_TMA))
		below = t->bottom;
	else if (t->tma_open && narrow)
		below = TUI_PANE_TMA;
	if (below != TUI_PANE_NONE) {
		int h = body_h * 2 / 5;
		if (h < 4)
			h = body_h >= 6 ? 4 : body_h / 2;
		if (below == TUI_PANE_TMA && h > 9)
			h = 9;
		if (h >= 2) {
			struct tui_rect r = { body_y + body_h - h, 0, h, t->tree.w };
			t->tree.h = body_h - h;
			if (below == TUI_PANE_TMA) {
				r.w = t->columns;
				t->tma = r;
				t->tma_shown = true;
			} else {
				t->pane = r;
				t->pane_shown = true;
			}
		}
	}
}

/* The columns that fit in WIDTH next to the labels: the sort column always.  Fills SHOWN. */
static uint32_t fit_columns(struct tui *t, int width, uint32_t *shown, int *used)
{
	uint32_t sortcol = tui_sort_column(t), n = 0;
	int total = 0;

	if (sortcol != UINT32_MAX)
		total = tui_cell_width(t, true) + 1;
	for (uint32_t i = 0; i < t->ncols && n < ARRAY_SIZE(t->hdr_col); i++) {
		int w = tui_cell_width(t, i == sortcol) + 1;
		if (i != sortcol && total + w + LABEL_MIN > width)
			continue;
		if (i != sortcol)
			total += w;
		shown[n++] = i;
	}
	*used = total;
	return n;
}

/* The title's parts at LEVEL of shortening (0: all of it): DB before the views, VIEWS[], REST
 * after them. */
static void title_parts(struct tui *t, int level, struct buf *db, struct buf views[MODEL_NVIEWS],
			struct buf *rest)
{
	static const char *const names[MODEL_NVIEWS] = { "Top-down", "Bottom-up", "Flat" };
	int32_t thread = model_selected_thread(t->model);

	buf_reset(db);
	buf_reset(rest);
	buf_addstr(db, level >= 3 ? " " : " view ");
	tui_escape(t, db, t->opt->database ? t->opt->database : "");
	buf_addstr(db, "  ");
	for (int v = 0; v < MODEL_NVIEWS; v++) {
		buf_reset(&views[v]);
		if (v == (int)t->view)
			buf_printf(&views[v], "[%d %s]", v + 1, names[v]);
		else if (level >= 2) /* the other views by their keys only */
			buf_printf(&views[v], v < (int)t->view ? "%d " : " %d", v + 1);
		else
			buf_printf(&views[v], " %d %s ", v + 1, names[v]);
	}
	if (t->sort.by_name) {
		buf_printf(rest, "  %sname %s", level >= 3 ? "" : "sort: ",
			   t->sort.descending ? "Z-A" : "A-Z");
	} else {
		const struct dbfile_metric *m = model_metric(t->model, t->sort.metric);
		buf_addstr(rest, level >= 3 ? "  " : "  sort: ");
		tui_escape(t, rest, m ? m->name : "?");
		buf_printf(rest, "(%s) %s", t->sort.inclusive ? "I" : "E",
			   t->sort.descending ? (t->utf8_glyph ? "▼" : "v")
					      : (t->utf8_glyph ? "▲" : "^"));
	}
	if (model_selected_rank(t->model) >= 0) {
		buf_printf(rest, "  rank %d", model_selected_rank(t->model));
	} else if (model_selected_process(t->model) >= 0) {
		buf_printf(rest, "  process %lld", (long long)model_selected_process(t->model));
	} else if (thread < 0) {
		buf_addstr(rest, "  all threads");
	} else {
		const struct dbfile *d = model_db(t->model);
		const struct dbfile_thread *th = (uint32_t)thread < d->nthreads ? &d->threads[thread]
										: NULL;
		buf_printf(rest, "  thread %d", thread);
		if (th && level == 0 && th->rank >= 0)
			buf_printf(rest, " (rank %d tid %u)", th->rank, th->tid);
		else if (th && level == 0)
			buf_printf(rest, " (tid %u)", th->tid);
	}
}

/* The title line: the database, the views, the sort and the thread, shortened step by step
 * (thread details, the other views' names, the words "view" and "sort:", then cut with an
 * ellipsis) so that the help hint at the right always stays. */
static void draw_title(struct tui *t)
{
	static const char help[] = " ? help ";
	struct buf db = BUF_INIT, rest = BUF_INIT, views[MODEL_NVIEWS];
	attr_t title = tui_attr(t, TUI_STYLE_TITLE);
	int helpw = (int)strlen(help), room = t->columns - helpw, x = 0, level, vw = 0, dbw;

	if (room < 0)
		room = 0;
	for (int v = 0; v < MODEL_NVIEWS; v++)
		buf_init(&views[v]);
	for (level = 0;; level++) {
		title_parts(t, level, &db, views, &rest);
		vw = 0;
		for (int v = 0; v < MODEL_NVIEWS; v++)
			vw += tui_text_width((const char *)views[v].data);
		if (level == 3 || tui_text_width((const char *)db.data) + vw +
						  tui_text_width((const char *)rest.data) <=
					  room)
			break;
	}
	/* Still too wide: the database's name gives way first, down to a few columns. */
	dbw = room - vw - tui_text_width((const char *)rest.data);
	if (dbw < 8)
		dbw = 8;
	attrset(title);
	x += tui_put_fit(t, 0, x, FTH_MIN(dbw, room - x), (const char *)db.data, false);
	for (int v = 0; v < MODEL_NVIEWS && x < room; v++) {
		attrset(title | (v == (int)t->view ? A_BOLD : 0));
		x += tui_put_fit(t, 0, x, room - x, (const char *)views[v].data, false);
	}
	attrset(title);
	if (x < room)
		x += tui_put_fit(t, 0, x, room - x, (const char *)rest.data, false);
	for (; x < room; x++)
		mvaddch(0, x, ' ');
	tui_put(0, x, t->columns - x, help, true);
	attrset(A_NORMAL);
	buf_release(&db);
	buf_release(&rest);
	for (int v = 0; v < MODEL_NVIEWS; v++)
		buf_release(&views[v]);
}

static void draw_header(struct tui *t, const uint32_t *shown, uint32_t nshown, int cells_w)
{
	uint32_t sortcol = tui_sort_column(t);
	int labelw = t->tree.w - cells_w;
	int x;
	const char *scope = " Scope";

	attrset(tui_attr(t, TUI_STYLE_HEADER) | A_BOLD);
	if (t->sort.by_name && t->sort.descending)
		scope = t->utf8_glyph ? " Scope ▼" : " Scope v";
	else if (t->sort.by_name)
		scope = t->utf8_glyph ? " Scope ▲" : " Scope ^";
	tui_put_fit(t, 1, 0, labelw, scope, true);
	x = labelw;
	t->hdr_n = nshown;
	for (uint32_t i = 0; i < nshown; i++) {
		const struct tui_column *c = &t->cols[shown[i]];
		const struct dbfile_metric *m = model_metric(t->model, c->metric);
		int w = tui_cell_width(t, shown[i] == sortcol);
		struct buf raw = BUF_INIT, name = BUF_INIT, suffix = BUF_INIT, field = BUF_INIT;
		int nw;
		tui_escape(t, &raw, m ? m->name : "?");
		buf_printf(&suffix, "(%s)", c->inclusive ? "I" : "E");
		if (shown[i] == sortcol)
			buf_addstr(&suffix, t->sort.descending ? (t->utf8_glyph ? "▼" : "v")
							       : (t->utf8_glyph ? "▲" : "^"));
		/* A name cut to fit keeps (I)/(E) and the arrow: they say the most. */
		tui_fit(t, &name, (const char *)raw.data, w - tui_text_width((const char *)suffix.data));
		buf_add(&name, suffix.data, suffix.len);
		nw = tui_text_width((const char *)name.data);
		t->hdr_col[i] = shown[i];
		t->hdr_x[i] = x;
		t->hdr_w[i] = w + 1;
		buf_addch(&field, ' ');
		for (int pad = w - nw; pad > 0; pad--)
			buf_addch(&field, ' ');
		buf_add(&field, name.data, name.len);
		tui_put(1, x, w + 1, (const char *)field.data, true);
		x += w + 1;
		buf_release(&raw);
		buf_release(&name);
		buf_release(&suffix);
		buf_release(&field);
	}
	for (; x < t->tree.w; x++)
		mvaddch(1, x, ' ');
	attrset(A_NORMAL);
}

static void draw_rows(struct tui *t, const model_node *rows, const uint32_t *shown, uint32_t nshown,
		      int cells_w)
{
	uint32_t sortcol = tui_sort_column(t);
	int labelw = t->tree.w - cells_w;
	struct model_node_info root;
	struct buf line = BUF_INIT, label = BUF_INIT;
	uint32_t top = t->top[t->view];
	int max_indent = labelw / 4;

	model_node_info(t->model, t->view, model_root(t->model, t->view), &root);
	for (int i = 0; i < t->tree.h; i++) {
		int y = t->tree.y + i;
		uint32_t r = top + (uint32_t)i;
		attr_t base;
		struct model_node_info info;
		int depth, x;
		if (r >= t->nrows) {
			attrset(A_NORMAL);
			move(y, 0);
			for (int k = 0; k < t->tree.w; k++)
				addch(' ');
			continue;
		}
		base = r == t->selidx ? (t->focus == TUI_PANE_NONE ? tui_attr(t, TUI_STYLE_SELECTED)
								   : A_UNDERLINE)
				      : A_NORMAL;
		model_node_info(t->model, t->view, rows[r], &info);
		depth = (int)info.depth - (int)root.depth;
		if (depth < 0)
			depth = 0;
		buf_reset(&line);
		/* Indentation takes at most half of the labels' width; deeper rows say their depth
		 * as a number, right-aligned where the indentation stops. */
		if (depth <= max_indent) {
			buf_printf(&line, "%*s", depth * 2, "");
		} else {
			char num[16];
			int n = snprintf(num, sizeof(num), "[%d] ", depth);
			buf_printf(&line, "%*s%s", max_indent * 2 > n ? max_indent * 2 - n : 0, "", num);
		}
		if (info.has_children)
			buf_addstr(&line, info.expanded ? (t->utf8_glyph ? "▾ " : "- ")
							: (t->utf8_glyph ? "▸ " : "+ "));
		else
			buf_addstr(&line, t->utf8_glyph ? "· " : "  ");
		/* A scope of one run of a comparison: said before its label, which may be cut. */
		if (model_comparison(t->model)) {
			unsigned runs = model_node_runs(t->model, t->view, rows[r]);
			if (runs == 1 || runs == 2)
				buf_addstr(&line, runs == 1 ? "[A only] " : "[B only] ");
		}
		tui_label(t, t->view, rows[r], &label);
		buf_add(&line, label.data, label.len);
		attrset(base);
		mvaddch(y, 0, ' ');
		tui_put_fit(t, y, 1, labelw - 1, (const char *)line.data, true);
		x = labelw;
		for (uint32_t k = 0; k < nshown; k++) {
			mvaddch(y, x, ' ');
			x++;
			x += draw_cell(t, y, x, rows[r], &t->cols[shown[k]], shown[k] == sortcol,
				       base);
		}
		attrset(base);
		for (; x < t->tree.w; x++)
			mvaddch(y, x, ' ');
	}
	attrset(A_NORMAL);
	buf_release(&line);
	buf_release(&label);
}

/* The F-key hints of wide footers; a key the terminal cannot send is shown as its letter. */
static const struct {
	int fkey;
	const char *letter, *what;
} footer_keys[] = {
	{ 1, "?", "Help" },   { 2, "o", "Columns" }, { 3, "/", "Search" },  { 4, "\\", "Filter" },
	{ 5, "H", "Hot" },    { 6, "<>", "Sort" },   { 7, "z", "Zoom" },    { 8, "f", "Flatten" },
	{ 10, "q", "Quit" },
};

/* The active filters for the footer, in at most WIDTH columns. */
static void footer_filters(struct tui *t, struct buf *out, int width)
{
	struct buf b = BUF_INIT;

	if (!t->nfilters)
		return;
	buf_addstr(&b, t->nfilters == 1 ? "[filter:" : "[filters:");
	for (uint32_t i = 0; i < t->nfilters; i++) {
		buf_addch(&b, ' ');
		tui_escape(t, &b, t->filters[i].pattern);
	}
	buf_addch(out, ' ');
	if (tui_text_width((const char *)b.data) + 1 > width) {
		tui_fit(t, out, (const char *)b.data, width - 2);
		buf_addch(out, ']');
	} else {
		buf_add(out, b.data, b.len);
		buf_addch(out, ']');
	}
	buf_release(&b);
}

void tui_draw_footer(struct tui *t)
{
	int y = t->lines - 1;
	struct buf left = BUF_INIT, right = BUF_INIT;
	attr_t attr = tui_attr(t, TUI_STYLE_FOOTER);
	int rw, x;

	if (t->trace_mode) {
		tui_trace_footer_right(t, &right);
	} else {
		if (t->zooms[t->view])
			buf_addstr(&right, " [zoom]");
		if (t->prompt != TUI_PROMPT_FILTER) /* which lists them */
			footer_filters(t, &right, t->columns / 3 > 16 ? t->columns / 3 : 16);
		buf_printf(&right, " %u/%u  %dx%d ", t->nrows ? t->selidx + 1 : 0, t->nrows,
			   t->columns, t->lines);
	}
	rw = tui_text_width((const char *)right.data);
	if (t->prompt != TUI_PROMPT_NONE) {
		static const char *const prompts[] = {
			[TUI_PROMPT_SEARCH] = "/",
			[TUI_PROMPT_FILTER] = "filter: hide a glob (-N drops filter N, - all): ",
			[TUI_PROMPT_FILTER_MODE] = "hide matches: s = the scope only (its children "
						   "stay), t = with its subtree? ",
			[TUI_PROMPT_THRESHOLD] = "hot-path threshold (percent of the parent): ",
			[TUI_PROMPT_SOURCE_DIR] = "add a source directory: ",
			[TUI_PROMPT_SORT_COLUMN] = "sort by column (0 = name, 1-9): ",
			[TUI_PROMPT_TRACE_TIME] = "go to time (seconds from the trace's start): ",
		};
		buf_addstr(&left, prompts[t->prompt]);
		if (t->prompt != TUI_PROMPT_FILTER_MODE && t->prompt != TUI_PROMPT_SORT_COLUMN)
			tui_escape(t, &left, t->input);
		buf_addstr(&left, "_");
		if (t->prompt == TUI_PROMPT_SEARCH && t->search_failed)
			buf_addstr(&left, "  (no match)");
		if (t->prompt == TUI_PROMPT_FILTER)
			for (uint32_t i = 0; i < t->nfilters; i++) {
				buf_printf(&left, "%s%u:", i ? " " : "  ", i + 1);
				tui_escape(t, &left, t->filters[i].pattern);
			}
		attr = A_BOLD;
	} else if (t->message[0]) {
		buf_addch(&left, ' ');
		tui_escape(t, &left, t->message);
		attr = t->message_error ? tui_attr(t, TUI_STYLE_ERROR) | A_REVERSE : A_BOLD;
	} else if (t->trace_mode) {
		buf_addstr(&left, " ?:help 1-3:trees hl:time jk:threads +-0:zoom HL:pan []:depth "
				  "Enter:to the tree c:collapse @:time q:quit");
	} else if (t->columns >= 120) {
		for (size_t i = 0; i < ARRAY_SIZE(footer_keys); i++) {
			if (tui_fkey_usable(footer_keys[i].fkey))
				buf_printf(&left, " F%d", footer_keys[i].fkey);
			else
				buf_printf(&left, " %s:", footer_keys[i].letter);
			buf_addstr(&left, footer_keys[i].what);
			if (footer_keys[i].fkey == 5)
				buf_printf(&left, "(%.0f%%)", t->hot_threshold * 100);
		}
		buf_addstr(&left, "  s:source t:TMA p:threads");
	} else {
		buf_printf(&left, " ?:help q:quit /:search H:hot %.0f%% s:src t:tma p:thr",
			   t->hot_threshold * 100);
	}
	attrset(attr);
	x = tui_put_fit(t, y, 0, t->columns - rw > 0 ? t->columns - rw : t->columns,
			(const char *)left.data, true);
	attrset(tui_attr(t, TUI_STYLE_FOOTER));
	if (x < t->columns)
		tui_put(y, x, t->columns - x, (const char *)right.data, true);
	attrset(A_NORMAL);
	buf_release(&left);
	buf_release(&right);
}

void tui_draw(struct tui *t)
{
	const model_node *rows;
	uint32_t shown[ARRAY_SIZE(t->hdr_col)], nshown;
	int cells_w;
	bool found = false;

	t->lines = LINES;
	t->columns = COLS;
	if (t->trace_mode && t->trace) {
		tui_trace_draw(t);
		return;
	}
	if (t->lines < 6 || t->columns < 30) {
		char s[64];
		erase();
		snprintf(s, sizeof(s), "terminal too small (%dx%d)", t->columns, t->lines);
		tui_put(0, 0, t->columns, s, false);
		return;
	}
	tui_layout(t);
	t->nrows = model_rows(t->model, t->view, &rows);
	if (t->selidx < t->nrows && rows[t->selidx] == t->sel[t->view])
		found = true;
	for (uint32_t i = 0; !found && i < t->nrows; i++)
		if (rows[i] == t->sel[t->view]) {
			t->selidx = i;
			found = true;
		}
	if (!found) {
		t->selidx = 0;
		t->sel[t->view] = t->nrows ? rows[0] : MODEL_NONE;
	}
	/* Keep the selection on screen. */
	if (t->sel_to_top) {
		t->top[t->view] = t->selidx;
		t->sel_to_top = false;
	}
	if (t->tree.h > 0) {
		uint32_t h = (uint32_t)t->tree.h;
		if (t->selidx < t->top[t->view])
			t->top[t->view] = t->selidx;
		if (t->selidx >= t->top[t->view] + h)
			t->top[t->view] = t->selidx - h + 1;
		if (t->top[t->view] + h > t->nrows)
			t->top[t->view] = t->nrows > h ? t->nrows - h : 0;
	}
	nshown = fit_columns(t, t->tree.w, shown, &cells_w);
	draw_title(t);
	draw_header(t, shown, nshown, cells_w);
	draw_rows(t, rows, shown, nshown, cells_w);
	if (t->tma_shown && t->tma.x > 0) {
		/* The separator of the right-hand pane. */
		for (int y = t->tma.y; y < t->tma.y + t->tma.h; y++)
			tui_put(y, t->tma.x - 1, 1, t->utf8_glyph ? "│" : "|", false);
	}
	if (t->pane_shown) {
		if (t->bottom == TUI_PANE_SOURCE)
			tui_draw_source(t, t->pane);
		else if (t->bottom == TUI_PANE_MCA)
			tui_draw_mca(t, t->pane);
		else
			tui_draw_threads(t, t->pane);
	}
	if (t->tma_shown)
		tui_draw_tma(t, t->tma);
	tui_draw_footer(t);
	if (t->popup != TUI_POPUP_NONE)
		tui_draw_popup(t);
}
