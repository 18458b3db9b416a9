/* SPDX-License-Identifier: MIT */
/*
 * batch.c: view --batch: the rows of a view (expanded to --depth, or along the hot path) with
 * each metric's inclusive and exclusive value and percent of the total, as an indented text
 * table, CSV (one row per node, with its depth and path) or a nested JSON tree.  Values are in
 * the screen's units and rounding (text: "1.25 s"; CSV and JSON: numbers in one unit per
 * metric, which the CSV header and the JSON "units" name), or exact with --raw.  Names are
 * escaped with esc_terminal in text and CSV (CSV quoting on top), so nothing from the database
 * reaches a terminal raw; JSON carries their exact bytes, escaped once (esc_json).
 */
#include "compat.h"
#include "escape.h"
#include "batch.h"
#include "buf.h"
#include "error.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[MODEL_KIND_COUNT] = {
	"root", "entry", "function", "inline", "loop", "line", "call", "module", "file", "caller",
};

static const char *const view_names[MODEL_NVIEWS] = { "top-down", "bottom-up", "flat" };

/* N spaces, and an unsigned number: what buf_printf costs, counted over a million rows. */
static void put_indent(struct buf *b, size_t n)
{
	static const char spaces[] = "                                ";
	for (; n > sizeof(spaces) - 1; n -= sizeof(spaces) - 1)
		buf_add(b, spaces, sizeof(spaces) - 1);
	if (n)
		buf_add(b, spaces, n);
}

static void put_uint(struct buf *b, uint64_t x)
{
	char tmp[24];
	size_t n = sizeof(tmp);
	do
		tmp[--n] = (char)('0' + x % 10);
	while (x /= 10);
	buf_add(b, tmp + n, sizeof(tmp) - n);
}

/* A number exactly, as short as it goes: integers plainly, others round-tripping. */
static void put_number(struct buf *b, double v, const char *nan_text)
{
	if (isnan(v) || isinf(v)) {
		buf_addstr(b, nan_text);
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		if (v < 0)
			buf_addch(b, '-');
		put_uint(b, (uint64_t)fabs(v));
		return;
	}
	char tmp[40];
	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	buf_addstr(b, tmp);
}

/* V as a percentage of TOTAL with DECIMALS decimals and SUFFIX; NONE when it has none. */
static void put_percent(struct buf *b, double v, double total, int decimals, const char *suffix,
			const char *none)
{
	if (isnan(v) || !(total != 0) || isnan(total)) {
		buf_addstr(b, none);
		return;
	}
	char tmp[64];
	buf_add(b, tmp, model_format_fixed(100 * v / total, decimals, tmp, sizeof(tmp)));
	buf_addstr(b, suffix);
}

/* A value in a text cell: as the screen shows it, or exactly. */
static void put_text_value(const struct model *model, const struct batch_options *opt,
			   uint32_t metric, double v, struct buf *b)
{
	char tmp[64];
	if (opt->raw)
		put_number(b, v, "n/a");
	else
		buf_addstr(b, model_format_metric(model, metric, v, tmp, sizeof(tmp)));
}

/* A value as a CSV or JSON number: in its unit, rounded as the screen rounds, or exactly. */
static void put_data_value(struct model *model, const struct batch_options *opt, uint32_t metric,
			   double v, const char *nan_text, struct buf *b)
{
	char tmp[64];
	if (opt->raw || isnan(v) || isinf(v))
		put_number(b, v, nan_text);
	else
		buf_addstr(b, model_format_number(model, metric, v, tmp, sizeof(tmp)));
}

/* A TMA fraction as a CSV or JSON number. */
static void put_fraction(const struct batch_options *opt, double v, const char *nan_text,
			 struct buf *b)
{
	char tmp[64];
	if (opt->raw || isnan(v) || isinf(v))
		put_number(b, v, nan_text);
	else
		buf_addstr(b, model_format_fraction(v, tmp, sizeof(tmp)));
}

/* Whether S (N bytes) is printable ASCII, which the escapes leave as it is (JSON: but quotes
 * and backslashes): then it is copied whole, not byte by byte. */
static bool plain(const char *s, size_t n, bool json)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || (json && (c == '"' || c == '\\')))
			return false;
	}
	return true;
}

static void put_terminal(struct buf *b, const char *s, size_t n, bool utf8)
{
	if (plain(s, n, false))
		buf_add(b, s, n);
	else
		esc_terminal(b, s, n, utf8 ? ESC_UTF8 : 0);
}

/* The escaped label of NODE (made in SCRATCH). */
static void put_label(struct model *model, const struct batch_options *opt, model_node node,
		      struct buf *scratch, struct buf *b)
{
	buf_reset(scratch);
	model_node_label(model, opt->view, node, !opt->ascii, scratch);
	put_terminal(b, (const char *)scratch->data, scratch->len, !opt->ascii);
}

static void put_escaped(struct buf *b, const char *s, bool utf8)
{
	put_terminal(b, s, strlen(s), utf8);
}

/* In a comparison, which runs measured NODE: "A" or "B" (one only), or NULL (both). */
static const char *one_run(struct model *model, const struct batch_options *opt,
			   model_node node)
{
	if (!model_comparison(model))
		return NULL;
	unsigned runs = model_node_runs(model, opt->view, node);
	return runs == 1 ? "A" : runs == 2 ? "B" : NULL;
}

/* A TMA node's name: without its run's prefix in a comparison (the rows pair both runs). */
static const char *tma_name(const struct model *model, uint32_t metric)
{
	return model_metric_base_name(model, metric);
}

/* A database string as JSON: its exact bytes (lib/escape.h). */
static void json_text(struct buf *b, const char *s)
{
	size_t n = strlen(s);
	if (!plain(s, n, true)) {
		esc_json(b, s, n);
		return;
	}
	buf_addch(b, '"');
	buf_add(b, s, n);
	buf_addch(b, '"');
}

static void csv_field(struct buf *b, const char *s, size_t n)
{
	bool quote = false;
	for (size_t i = 0; i < n && !quote; i++)
		quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
	if (!quote) {
		buf_add(b, s, n);
		return;
	}
	buf_addch(b, '"');
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"')
			buf_addch(b, '"');
		buf_addch(b, s[i]);
	}
	buf_addch(b, '"');
}

static void csv_text(struct buf *b, const char *s, bool utf8)
{
	struct buf e = BUF_INIT;
	put_escaped(&e, s, utf8);
	csv_field(b, (const char *)e.data, e.len);
	buf_release(&e);
}

/* Display width of UTF-8 text: code points (the labels hold no wide characters of ours). */
static size_t text_width(const char *s, size_t n)
{
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		w += ((unsigned char)s[i] & 0xc0) != 0x80;
	return w;
}

/*
 * The rows printed, in order, one at a time: a depth-first walk down to --depth with each
 * node's children in the sort order (taken once, uncached, and what bottom-up and flat built
 * below a node dropped when the walk is done with it, so that memory stays bounded however
 * many rows), or the rows of the hot path (model_rows, a few).
 */
struct frame {
	model_node node;
	model_node *kids;
	uint32_t n, i;
};

struct walk {
	struct model *model;
	const struct batch_options *opt;
	struct frame *stack;
	uint32_t sp, cap;
	model_node *rows; /* hot path */
	uint32_t *depth;
	uint32_t nrows, at;
	bool started;
};

static void walk_start(struct walk *w, struct model *model, const struct batch_options *opt)
{
	memset(w, 0, sizeof(*w));
	w->model = model;
	w->opt = opt;
	if (!opt->hot_path)
		return;
	model_node root = model_root(model, opt->view);
	model_expand(model, opt->view, root, true);
	/* Along the order's metric: in a comparison, the change (main.c). */
	struct model_sort sort = model_get_sort(model);
	model_hot_path(model, opt->view, root, sort.by_name ? opt->metrics[0] : sort.metric, 0.5);
	const model_node *rows;
	w->nrows = model_rows(model, opt->view, &rows);
	/* Copy: values and labels below may rebuild the model's row array. */
	w->rows = xmalloc((w->nrows ? w->nrows : 1) * sizeof(model_node));
	w->depth = xmalloc((w->nrows ? w->nrows : 1) * sizeof(uint32_t));
	memcpy(w->rows, rows, w->nrows * sizeof(model_node));
	memcpy(w->depth, model_row_depths(model, opt->view), w->nrows * sizeof(uint32_t));
}

/* Push NODE, at DEPTH, when the walk goes below it (the root always). */
static void walk_push(struct walk *w, model_node node, uint32_t depth)
{
	if (depth && depth >= w->opt->depth)
		return;
	ALLOC_GROW(w->stack, w->sp + 1, w->cap);
	struct frame *f = &w->stack[w->sp++];
	f->node = node;
	f->i = 0;
	f->n = model_children_copy(w->model, w->opt->view, node, &f->kids);
}

/* The next row into *NODE and *DEPTH; false after the last. */
static bool walk_next(struct walk *w, model_node *node, uint32_t *depth)
{
	if (w->opt->hot_path) {
		if (w->at == w->nrows)
			return false;
		*node = w->rows[w->at];
		*depth = w->depth[w->at++];
		return true;
	}
	if (!w->started) {
		w->started = true;
		*node = model_root(w->model, w->opt->view);
		*depth = 0;
		walk_push(w, *node, 0);
		return true;
	}
	while (w->sp) {
		struct frame *f = &w->stack[w->sp - 1];
		if (f->i < f->n) {
			*node = f->kids[f->i++];
			*depth = w->sp;
			walk_push(w, *node, *depth);
			return true;
		}
		free(f->kids);
		model_forget(w->model, w->opt->view, f->node);
		w->sp--;
	}
	return false;
}

static void walk_end(struct walk *w)
{
	while (w->sp)
		free(w->stack[--w->sp].kids);
	free(w->stack);
	free(w->rows);
	free(w->depth);
}

/* Output, written out as it grows. */
struct out {
	struct buf b;
	FILE *f;
	bool failed;
};

static void out_flush(struct out *o)
{
	if (o->b.len && !o->failed && fwrite(o->b.data, 1, o->b.len, o->f) != o->b.len)
		o->failed = true;
	buf_reset(&o->b);
}

static void out_row_done(struct out *o)
{
	if (o->b.len >= 1 << 16)
		out_flush(o);
}

static void put_tma_text(struct model *model, const struct batch_options *opt, model_node node,
			 uint32_t indent, struct buf *b)
{
	const struct model_tma_row *rows;
	uint32_t n = model_tma(model, opt->view, node, &rows);
	for (uint32_t i = 0; i < n; i++) {
		buf_printf(b, "%*s  | %*s", (int)indent, "", (int)(2 * rows[i].depth), "");
		put_escaped(b, tma_name(model, rows[i].metric), !opt->ascii);
		buf_addch(b, ' ');
		if (isnan(rows[i].fraction))
			buf_addstr(b, "n/a");
		else
			buf_printf(b, "%.1f%%", 100 * rows[i].fraction);
		if (model_comparison(model)) {
			/* A's, B's, and the change in points of the parent's slots */
			double fa = rows[i].fraction, fb = rows[i].fraction_b;
			if (isnan(fb))
				buf_addstr(b, " -> n/a");
			else
				buf_printf(b, " -> %.1f%%", 100 * fb);
			if (!isnan(fa) && !isnan(fb))
				buf_printf(b, " (%+.1f pp)", 100 * (fb - fa));
		}
		if (rows[i].over_threshold)
			buf_addstr(b, " !");
		if (rows[i].dominant)
			buf_addstr(b, " *");
		buf_addch(b, '\n');
	}
}

/* The spool's separators: of cells, and before a line printed as it is (escaped text holds
 * neither). */
#define SPOOL_CELL '\x1f'
#define SPOOL_LINE '\x1e'

/*
 * The cells of a row whose values are V (inclusive then exclusive, per metric), appended to
 * LINE: each after a SPOOL_CELL (value and percent per value; empty where PCT says the metric
 * has no percent), then a newline.  Where each cell starts into CELL (offsets in LINE), its
 * length into CLEN.  Reads only the metrics' descriptions: safe beside the walk.
 */
static void text_cells(const struct model *model, const struct batch_options *opt,
		       const double *totals, const bool *pct, const double *v, struct buf *line,
		       size_t *cell, size_t *clen)
{
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		for (uint32_t e = 0; e < 2; e++) {
			uint32_t i = 4 * k + 2 * e;
			buf_addch(line, SPOOL_CELL);
			cell[i] = line->len;
			put_text_value(model, opt, opt->metrics[k], v[2 * k + e], line);
			clen[i] = line->len - cell[i];
			buf_addch(line, SPOOL_CELL);
			cell[i + 1] = line->len;
			if (pct[k])
				put_percent(line, v[2 * k + e], totals[k], 1, "%", "-");
			clen[i + 1] = line->len - cell[i + 1];
		}
	buf_addch(line, '\n');
}

/* ROW's label at DEPTH, indented, appended to LINE; returns its display width. */
static size_t text_label(struct model *model, const struct batch_options *opt, model_node row,
			 uint32_t depth, struct buf *scratch, struct buf *line)
{
	size_t at = line->len;
	put_indent(line, 2 * (size_t)depth);
	put_label(model, opt, row, scratch, line);
	const char *run = one_run(model, opt, row);
	if (run)
		buf_printf(line, " [%s only]", run);
	return text_width((const char *)line->data + at, line->len - at);
}

/* ROW's values into V: inclusive then exclusive, per metric. */
static void text_values(struct model *model, const struct batch_options *opt, model_node row,
			double *v)
{
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		v[2 * k] = model_value(model, opt->view, row, opt->metrics[k], true);
		v[2 * k + 1] = model_value(model, opt->view, row, opt->metrics[k], false);
	}
}

/* ROW's line as the spool holds it, appended to LINE: its label, then text_cells. */
static void text_row(struct model *model, const struct batch_options *opt, const double *totals,
		     const bool *pct, model_node row, uint32_t depth, struct buf *scratch,
		     struct buf *line, size_t *lwidth, size_t *cell, size_t *clen, double *v)
{
	*lwidth = text_label(model, opt, row, depth, scratch, line);
	text_values(model, opt, row, v);
	text_cells(model, opt, totals, pct, v, line, cell, clen);
}

/*
 * The spool written beside the walk: the walk (the model, on the calling thread) gives each
 * row's label, values and top-down lines in chunks; a second thread formats the values, as
 * the text shows them, into the spool and measures the columns.  Formatting reads only the
 * metrics' descriptions, which nothing changes during the walk.  Without the thread, each
 * chunk is formatted when it is full.
 */
enum { CHUNK_ROWS = 4096 };

struct row_chunk {
	uint32_t n;
	struct buf text;  /* the labels, then each row's top-down lines, back to back */
	size_t *end;	  /* per row: where its label ends, and where its lines end in TEXT */
	double *vals;	  /* per row: 2 per metric */
};

struct spooler {
	const struct model *model;
	const struct batch_options *opt;
	const double *totals;
	const bool *pct;
	struct out *spool;
	size_t *cw, *cell, *clen; /* the columns' widths; one row's cells */
	struct row_chunk chunk[2];
	bool full[2], done, threaded;
	uint32_t fill; /* the chunk the walk fills */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
};

static void spool_chunk(struct spooler *sp, struct row_chunk *c)
{
	uint32_t ncells = 4 * sp->opt->nmetrics;
	const char *t = (const char *)c->text.data;
	size_t at = 0;
	for (uint32_t r = 0; r < c->n; r++) {
		struct buf *b = &sp->spool->b;
		size_t label_end = c->end[2 * r], lines_end = c->end[2 * r + 1];
		buf_add(b, t + at, label_end - at);
		text_cells(sp->model, sp->opt, sp->totals, sp->pct,
			   c->vals + 2 * (size_t)sp->opt->nmetrics * r, b, sp->cell, sp->clen);
		for (uint32_t i = 0; i < ncells; i++)
			if (sp->clen[i] > sp->cw[i])
				sp->cw[i] = sp->clen[i];
		for (size_t a = label_end, e; a < lines_end; a = e + 1) {
			for (e = a; e < lines_end && t[e] != '\n'; e++)
				;
			buf_addch(b, SPOOL_LINE);
			buf_add(b, t + a, e + 1 - a);
		}
		at = lines_end;
		out_row_done(sp->spool);
	}
	c->n = 0;
	buf_reset(&c->text);
}

static void *spooler_main(void *arg)
{
	struct spooler *sp = arg;
	for (uint32_t j = 0;; j ^= 1) {
		pthread_mutex_lock(&sp->lock);
		while (!sp->full[j] && !sp->done)
			pthread_cond_wait(&sp->cond, &sp->lock);
		bool have = sp->full[j];
		pthread_mutex_unlock(&sp->lock);
		if (!have)
			return NULL;
		spool_chunk(sp, &sp->chunk[j]);
		pthread_mutex_lock(&sp->lock);
		sp->full[j] = false;
		pthread_cond_broadcast(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
	}
}

static void spooler_start(struct spooler *sp, const struct model *model,
			  const struct batch_options *opt, const double *totals, const bool *pct,
			  struct out *spool, size_t *cw)
{
	memset(sp, 0, sizeof(*sp));
	sp->model = model;
	sp->opt = opt;
	sp->totals = totals;
	sp->pct = pct;
	sp->spool = spool;
	sp->cw = cw;
	size_t ncells = 4 * (size_t)opt->nmetrics + 1;
	sp->cell = xcalloc(ncells, sizeof(size_t));
	sp->clen = xcalloc(ncells, sizeof(size_t));
	for (int i = 0; i < 2; i++) {
		buf_init(&sp->chunk[i].text);
		sp->chunk[i].end = xmalloc(2 * CHUNK_ROWS * sizeof(size_t));
		sp->chunk[i].vals =
			xmalloc((size_t)CHUNK_ROWS * (2 * (size_t)opt->nmetrics + 1) * sizeof(double));
	}
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->cond, NULL);
	sp->threaded = pthread_create(&sp->thread, NULL, spooler_main, sp) == 0;
}

/* The chunk that the walk's next row goes into (waiting for the thread to free it). */
static struct row_chunk *spooler_chunk(struct spooler *sp)
{
	if (sp->threaded) {
		pthread_mutex_lock(&sp->lock);
		while (sp->full[sp->fill])
			pthread_cond_wait(&sp->cond, &sp->lock);
		pthread_mutex_unlock(&sp->lock);
	}
	return &sp->chunk[sp->fill];
}

/* Hand the filling chunk over (or format it here, without the thread). */
static void spooler_pass(struct spooler *sp)
{
	struct row_chunk *c = &sp->chunk[sp->fill];
	if (!c->n)
		return;
	if (!sp->threaded) {
		spool_chunk(sp, c);
		return;
	}
	pthread_mutex_lock(&sp->lock);
	sp->full[sp->fill] = true;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	sp->fill ^= 1;
}

static void spooler_finish(struct spooler *sp)
{
	spooler_pass(sp);
	if (sp->threaded) {
		pthread_mutex_lock(&sp->lock);
		sp->done = true;
		pthread_cond_broadcast(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
		pthread_join(sp->thread, NULL);
	}
	pthread_mutex_destroy(&sp->lock);
	pthread_cond_destroy(&sp->cond);
	for (int i = 0; i < 2; i++) {
		buf_release(&sp->chunk[i].text);
		free(sp->chunk[i].end);
		free(sp->chunk[i].vals);
	}
	free(sp->cell);
	free(sp->clen);
}

/* A row padded to the columns: LABEL, then the cells (N each, PCT-less percents skipped). */
static void print_text_row(struct buf *out, const char *label, size_t len, size_t w, size_t lw,
			   const char *const *cell, const size_t *clen, const size_t *cw,
			   const bool *pct, uint32_t ncells)
{
	buf_add(out, label, len);
	buf_addpad(out, ' ', w < lw ? lw - w : 0);
	for (uint32_t i = 0; i < ncells; i++) {
		if (i % 2 && !pct[i / 4])
			continue;
		buf_addpad(out, ' ', (i % 2 ? 1 : 2) + (clen[i] < cw[i] ? cw[i] - clen[i] : 0));
		if (clen[i])
			buf_add(out, cell[i], clen[i]);
	}
	buf_addch(out, '\n');
}

/*
 * One walk that measures the columns and spools the rows, unpadded, to a temporary file; then
 * the rows read back and padded.  Two walks when there is no temporary file.
 */
static void run_text(struct model *model, const struct batch_options *opt, struct out *out)
{
	uint32_t ncells = 4 * opt->nmetrics;
	struct buf row_line = BUF_INIT, scratch = BUF_INIT;
	const char **cell = xcalloc(ncells + 1, sizeof(char *));
	size_t *at = xcalloc(ncells + 1, sizeof(size_t));
	size_t *clen = xcalloc(ncells + 1, sizeof(size_t));
	size_t lwr;
	double *vals = xcalloc(2 * (size_t)opt->nmetrics + 1, sizeof(double));
	size_t lw = strlen("Scope");
	size_t *cw = xcalloc(ncells + 1, sizeof(size_t));
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	bool *pct = xcalloc(opt->nmetrics + 1, sizeof(bool));
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		totals[k] = model_total(model, opt->metrics[k]);
		pct[k] = model_metric_has_percent(model, opt->metrics[k]);
	}
	struct out spool = { BUF_INIT, tmpfile(), false };
	char *line = NULL;
	size_t aline = 0;
	struct walk w;
	model_node row;
	uint32_t depth;
	walk_start(&w, model, opt);
	if (spool.f) {
		struct spooler sp;
		spooler_start(&sp, model, opt, totals, pct, &spool, cw);
		while (walk_next(&w, &row, &depth) && !model_error(model)) {
			struct row_chunk *c = spooler_chunk(&sp);
			lwr = text_label(model, opt, row, depth, &scratch, &c->text);
			if (lwr > lw)
				lw = lwr;
			c->end[2 * c->n] = c->text.len;
			text_values(model, opt, row, c->vals + 2 * (size_t)opt->nmetrics * c->n);
			if (opt->topdown)
				put_tma_text(model, opt, row, 2 * depth, &c->text);
			c->end[2 * c->n + 1] = c->text.len;
			if (++c->n == CHUNK_ROWS)
				spooler_pass(&sp);
		}
		spooler_finish(&sp);
	}
	while (!spool.f && walk_next(&w, &row, &depth) && !model_error(model)) {
		/* No spool: measured here, and printed by a second walk below. */
		buf_reset(&row_line);
		text_row(model, opt, totals, pct, row, depth, &scratch, &row_line, &lwr, at, clen,
			 vals);
		if (lwr > lw)
			lw = lwr;
		for (uint32_t i = 0; i < ncells; i++)
			if (clen[i] > cw[i])
				cw[i] = clen[i];
	}
	walk_end(&w);
	if (spool.f) {
		out_flush(&spool);
		if (spool.failed || fflush(spool.f) != 0 || fseek(spool.f, 0, SEEK_SET) != 0) {
			fclose(spool.f); /* full: walk again */
			spool.f = NULL;
		}
	}
	if (model_error(model))
		goto done;
	/* Header: the metric over its two columns of value and percent. */
	struct buf *h = &out->b;
	buf_addstr(h, "Scope");
	for (size_t i = strlen("Scope"); i < lw; i++)
		buf_addch(h, ' ');
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		for (int e = 0; e < 2; e++) {
			struct buf name = BUF_INIT;
			put_escaped(&name, model_metric(model, opt->metrics[k])->name, !opt->ascii);
			buf_addstr(&name, e ? " (E)" : " (I)");
			size_t width = cw[4 * k + 2 * e] + (pct[k] ? 1 + cw[4 * k + 2 * e + 1] : 0);
			size_t nw = text_width((const char *)name.data, name.len);
			if (nw > width) {
				cw[4 * k + 2 * e] += nw - width;
				width = nw;
			}
			buf_addstr(h, "  ");
			for (size_t i = nw; i < width; i++)
				buf_addch(h, ' ');
			buf_add(h, name.data, name.len);
			buf_release(&name);
		}
	buf_addch(h, '\n');
	if (spool.f) {
		ssize_t n;
		while ((n = getline(&line, &aline, spool.f)) > 0) {
			if (line[0] == SPOOL_LINE) {
				buf_add(&out->b, line + 1, (size_t)n - 1);
				out_row_done(out);
				continue;
			}
			/* The label, then a cell after each separator. */
			char *p = line, *end = line + n - (line[n - 1] == '\n');
			char *sep = memchr(p, SPOOL_CELL, (size_t)(end - p));
			const char *lab = p;
			size_t llen = (size_t)((sep ? sep : end) - p);
			for (uint32_t i = 0; i < ncells; i++) {
				p = sep ? sep + 1 : end;
				sep = memchr(p, SPOOL_CELL, (size_t)(end - p));
				cell[i] = p;
				clen[i] = (size_t)((sep ? sep : end) - p);
			}
			print_text_row(&out->b, lab, llen, text_width(lab, llen), lw, cell, clen, cw,
				       pct, ncells);
			out_row_done(out);
		}
		goto done;
	}
	walk_start(&w, model, opt);
	while (walk_next(&w, &row, &depth) && !model_error(model)) {
		buf_reset(&row_line);
		text_row(model, opt, totals, pct, row, depth, &scratch, &row_line, &lwr, at, clen,
			 vals);
		for (uint32_t i = 0; i < ncells; i++)
			cell[i] = (const char *)row_line.data + at[i];
		size_t llen = ncells ? at[0] - 1 : row_line.len - 1;
		print_text_row(&out->b, (const char *)row_line.data, llen, lwr, lw, cell, clen, cw,
			       pct, ncells);
		if (opt->topdown)
			put_tma_text(model, opt, row, 2 * depth, &out->b);
		out_row_done(out);
	}
	walk_end(&w);
done:
	if (spool.f)
		fclose(spool.f);
	buf_release(&spool.b);
	free(line);
	buf_release(&row_line);
	buf_release(&scratch);
	free(cell);
	free(at);
	free(vals);
	free(clen);
	free(cw);
	free(totals);
	free(pct);
}

static void run_csv(struct model *model, const struct batch_options *opt, struct out *out)
{
	const struct model_tma_row *tma;
	uint32_t ntma =
		opt->topdown ? model_tma(model, opt->view, model_root(model, opt->view), &tma) : 0;
	uint32_t *tma_metric = xcalloc(ntma + 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < ntma; i++)
		tma_metric[i] = tma[i].metric;
	struct buf *b = &out->b;
	/* ID is the row's number, PARENT its parent's: a tree that splits back whatever the names
	 * hold (PATH, the labels joined with " > ", is for reading) */
	bool comparing = model_comparison(model) != NULL;
	buf_addstr(b, "id,parent,depth,path,kind,name,file,line");
	if (comparing)
		buf_addstr(b, ",runs"); /* A, B or both */
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		const char *name = model_metric(model, opt->metrics[k])->name;
		const char *unit =
			opt->raw ? NULL : model_number_unit(model, opt->metrics[k], false);
		static const char *const suffix[4] = { " (I)", " (I) %", " (E)", " (E) %" };
		for (int s = 0; s < 4; s++) {
			if (s % 2 && !model_metric_has_percent(model, opt->metrics[k]))
				continue;
			struct buf col = BUF_INIT;
			put_escaped(&col, name, !opt->ascii);
			buf_addstr(&col, suffix[s]);
			if (unit && s % 2 == 0)
				buf_printf(&col, " [%s]", unit);
			buf_addch(b, ',');
			csv_field(b, (const char *)col.data, col.len);
			buf_release(&col);
		}
	}
	static const char *const tma_runs[3] = { " (A)", " (B)", " (B-A)" };
	for (uint32_t i = 0; i < ntma; i++)
		for (int r = 0; r < (comparing ? 3 : 1); r++) {
			struct buf col = BUF_INIT;
			buf_addstr(&col, "topdown ");
			put_escaped(&col, tma_name(model, tma_metric[i]), !opt->ascii);
			if (comparing)
				buf_addstr(&col, tma_runs[r]);
			buf_addch(b, ',');
			csv_field(b, (const char *)col.data, col.len);
			buf_release(&col);
		}
	buf_addch(b, '\n');
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	bool *pct = xcalloc(opt->nmetrics + 1, sizeof(bool));
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		totals[k] = model_total(model, opt->metrics[k]);
		pct[k] = model_metric_has_percent(model, opt->metrics[k]);
	}
	struct buf scratch = BUF_INIT;
	struct buf *path = NULL; /* path per depth */
	uint32_t *row_at = NULL; /* the last row per depth */
	uint32_t alevels = 0, r = 0, d;
	model_node row;
	struct walk w;
	walk_start(&w, model, opt);
	for (; walk_next(&w, &row, &d) && !model_error(model); r++) {
		if (d >= alevels) {
			uint32_t old = alevels;
			ALLOC_GROW(path, d + 1, alevels);
			row_at = xreallocarray(row_at, alevels, sizeof(uint32_t));
			for (uint32_t i = old; i < alevels; i++)
				buf_init(&path[i]);
		}
		row_at[d] = r;
		put_uint(b, r);
		buf_addch(b, ',');
		if (d)
			put_uint(b, row_at[d - 1]);
		buf_addch(b, ',');
		buf_reset(&path[d]);
		if (d) {
			buf_add(&path[d], path[d - 1].data, path[d - 1].len);
			buf_addstr(&path[d], " > ");
		}
		put_label(model, opt, row, &scratch, &path[d]);
		struct model_node_info in;
		model_node_info(model, opt->view, row, &in);
		put_uint(b, d);
		buf_addch(b, ',');
		csv_field(b, (const char *)path[d].data, path[d].len);
		buf_addch(b, ',');
		buf_addstr(b, in.kind < MODEL_KIND_COUNT ? kind_names[in.kind] : "?");
		buf_addch(b, ',');
		csv_text(b, in.name, !opt->ascii);
		buf_addch(b, ',');
		if (in.file)
			csv_text(b, in.file, !opt->ascii);
		buf_addch(b, ',');
		if (in.line)
			put_uint(b, in.line);
		if (comparing) {
			const char *run = one_run(model, opt, row);
			buf_addch(b, ',');
			buf_addstr(b, run ? run : "both");
		}
		for (uint32_t k = 0; k < opt->nmetrics; k++)
			for (int incl = 1; incl >= 0; incl--) {
				double v =
					model_value(model, opt->view, row, opt->metrics[k], incl);
				buf_addch(b, ',');
				put_data_value(model, opt, opt->metrics[k], v, "", b);
				if (!pct[k])
					continue;
				buf_addch(b, ',');
				put_percent(b, v, totals[k], opt->raw ? 4 : 1, "", "");
			}
		if (ntma) {
			uint32_t n = model_tma(model, opt->view, row, &tma);
			for (uint32_t i = 0; i < ntma; i++) {
				double f[3] = { i < n ? tma[i].fraction : NAN,
						i < n ? tma[i].fraction_b : NAN, NAN };
				f[2] = f[1] - f[0];
				for (int run = 0; run < (comparing ? 3 : 1); run++) {
					buf_addch(b, ',');
					put_fraction(opt, f[run], "", b);
				}
			}
		}
		buf_addch(b, '\n');
		out_row_done(out);
	}
	walk_end(&w);
	for (uint32_t i = 0; i < alevels; i++)
		buf_release(&path[i]);
	free(path);
	buf_release(&scratch);
	free(row_at);
	free(totals);
	free(pct);
	free(tma_metric);
}

enum json_values { JSON_TOTALS, JSON_INCLUSIVE, JSON_EXCLUSIVE };

/* {"metric": value, ...} of the chosen metrics: the program's totals, or NODE's values; KEYS
 * holds the metrics' names as JSON, each followed by ": ". */
static void json_metric_object(struct model *model, const struct batch_options *opt,
			       model_node node, enum json_values which, const struct buf *keys,
			       struct buf *out)
{
	buf_addch(out, '{');
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		uint32_t m = opt->metrics[k];
		if (k)
			buf_addstr(out, ", ");
		buf_add(out, keys[k].data, keys[k].len);
		put_data_value(model, opt, m,
			       which == JSON_TOTALS ? model_total(model, m)
						    : model_value(model, opt->view, node, m,
								  which == JSON_INCLUSIVE),
			       "null", out);
	}
	buf_addch(out, '}');
}

/* "comparison": the two databases, the metric groups (A, B, B - A, B / A), the metrics of one
 * run, what was matched loosely, and how many scopes each run had alone. */
static void json_comparison(struct model *model, struct buf *out)
{
	const struct model_compare *cmp = model_comparison(model);
	buf_addstr(out, "\"comparison\": {\"a\": ");
	json_text(out, cmp->name_a);
	buf_addstr(out, ", \"b\": ");
	json_text(out, cmp->name_b);
	buf_addstr(out, ", \"groups\": [");
	bool first = true;
	for (uint32_t k = 0; k < model_nmetrics(model); k++) {
		const struct model_compare_metric *c = &cmp->metrics[k];
		if (c->role != MODEL_ROLE_A)
			continue;
		buf_addstr(out, first ? "{\"metric\": " : ", {\"metric\": ");
		first = false;
		json_text(out, model_metric_base_name(model, k));
		const char *keys[4] = { "a", "b", "delta", "ratio" };
		const uint32_t of[4] = { c->a, c->b, c->delta, c->ratio };
		for (int g = 0; g < 4; g++) {
			buf_printf(out, ", \"%s\": ", keys[g]);
			json_text(out, model_metric(model, of[g])->name);
		}
		buf_printf(out, ", \"normalized\": %s}", c->normalized ? "true" : "false");
	}
	buf_addstr(out, "], \"one_run\": [");
	first = true;
	for (uint32_t k = 0; k < model_nmetrics(model); k++) {
		if (cmp->metrics[k].role != MODEL_ROLE_ONLY)
			continue;
		buf_printf(out, "%s{\"metric\": ", first ? "" : ", ");
		first = false;
		json_text(out, model_metric(model, k)->name);
		buf_printf(out, ", \"run\": \"%s\"}", cmp->metrics[k].run == 1 ? "A" : "B");
	}
	buf_addstr(out, "], \"notes\": [");
	for (uint32_t i = 0; i < cmp->nnotes; i++) {
		if (i)
			buf_addstr(out, ", ");
		json_text(out, cmp->notes[i]);
	}
	buf_printf(out,
		   "], \"contexts\": {\"matched\": %u, \"a_only\": %u, \"b_only\": %u}},\n",
		   cmp->contexts_matched, cmp->contexts_only_a, cmp->contexts_only_b);
}

static void run_json(struct model *model, const struct batch_options *opt, struct out *o)
{
	struct buf *out = &o->b;
	buf_addstr(out, "{\"database\": ");
	json_text(out, opt->database);
	buf_printf(out, ", \"view\": \"%s\", \"thread\": ", view_names[opt->view]);
	if (model_selected_thread(model) >= 0)
		buf_printf(out, "%d", model_selected_thread(model));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"process\": ");
	if (model_selected_process(model) >= 0)
		buf_printf(out, "%lld", (long long)model_selected_process(model));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"rank\": ");
	if (model_selected_rank(model) >= 0)
		buf_printf(out, "%d", model_selected_rank(model));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"metrics\": [");
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		if (k)
			buf_addstr(out, ", ");
		json_text(out, model_metric(model, opt->metrics[k])->name);
	}
	/* The unit of each metric's numbers: null for counts, ratios and fractions. */
	buf_addstr(out, "], \"units\": {");
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		const char *unit = model_number_unit(model, opt->metrics[k], opt->raw);
		if (k)
			buf_addstr(out, ", ");
		json_text(out, model_metric(model, opt->metrics[k])->name);
		buf_addstr(out, ": ");
		if (unit)
			json_text(out, unit);
		else
			buf_addstr(out, "null");
	}
	buf_addstr(out, "}, ");
	if (model_comparison(model))
		json_comparison(model, out);
	buf_addstr(out, "\"totals\": ");
	struct buf *keys = xcalloc(opt->nmetrics + 1, sizeof(struct buf));
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		buf_init(&keys[k]);
		json_text(&keys[k], model_metric(model, opt->metrics[k])->name);
		buf_addstr(&keys[k], ": ");
	}
	json_metric_object(model, opt, 0, JSON_TOTALS, keys, out);
	buf_addstr(out, ",\n\"tree\": ");
	struct walk w;
	model_node row;
	uint32_t depth, prev = 0;
	bool first = true;
	walk_start(&w, model, opt);
	while (walk_next(&w, &row, &depth) && !model_error(model)) {
		/* The row before: opened a list of children, or closed with its parents. */
		if (!first && depth <= prev) {
			buf_addstr(out, "]}");
			for (uint32_t d = prev; d > depth; d--)
				buf_addstr(out, "]}");
			buf_addstr(out, ",\n");
		} else if (!first) {
			buf_addch(out, '\n');
		}
		first = false;
		prev = depth;
		struct model_node_info in;
		model_node_info(model, opt->view, row, &in);
		put_indent(out, 2 * (size_t)depth);
		buf_addstr(out, "{\"kind\": \"");
		buf_addstr(out, in.kind < MODEL_KIND_COUNT ? kind_names[in.kind] : "?");
		buf_addstr(out, "\", \"name\": ");
		json_text(out, in.name);
		buf_addstr(out, ", \"label\": ");
		struct buf label = BUF_INIT;
		model_node_label(model, opt->view, row, true, &label);
		buf_addch(&label, '\0');
		json_text(out, (const char *)label.data);
		buf_release(&label);
		buf_addstr(out, ", \"file\": ");
		if (in.file)
			json_text(out, in.file);
		else
			buf_addstr(out, "null");
		buf_addstr(out, ", \"line\": ");
		if (in.line)
			put_uint(out, in.line);
		else
			buf_addstr(out, "null");
		if (model_comparison(model)) {
			const char *run = one_run(model, opt, row);
			buf_printf(out, ", \"runs\": \"%s\"", run ? run : "both");
		}
		buf_addstr(out, ", \"inclusive\": ");
		json_metric_object(model, opt, row, JSON_INCLUSIVE, keys, out);
		buf_addstr(out, ", \"exclusive\": ");
		json_metric_object(model, opt, row, JSON_EXCLUSIVE, keys, out);
		if (opt->topdown) {
			const struct model_tma_row *tma;
			uint32_t n = model_tma(model, opt->view, row, &tma);
			buf_addstr(out, ", \"topdown\": {");
			for (uint32_t i = 0; i < n; i++) {
				if (i)
					buf_addstr(out, ", ");
				json_text(out, tma_name(model, tma[i].metric));
				buf_addstr(out, ": ");
				if (!model_comparison(model)) {
					put_fraction(opt, tma[i].fraction, "null", out);
					continue;
				}
				buf_addstr(out, "{\"a\": ");
				put_fraction(opt, tma[i].fraction, "null", out);
				buf_addstr(out, ", \"b\": ");
				put_fraction(opt, tma[i].fraction_b, "null", out);
				buf_addstr(out, ", \"change\": ");
				put_fraction(opt, tma[i].fraction_b - tma[i].fraction, "null", out);
				buf_addch(out, '}');
			}
			buf_addch(out, '}');
		}
		buf_addstr(out, ", \"children\": [");
		out_row_done(o);
	}
	walk_end(&w);
	/* Close the last row and its parents. */
	for (uint32_t d = 0; !first && d <= prev; d++)
		buf_addstr(out, "]}");
	if (!first)
		buf_addch(out, '\n');
	buf_addstr(out, "}\n");
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		buf_release(&keys[k]);
	free(keys);
}

int batch_run(struct model *model, const struct batch_options *opt, FILE *f)
{
	/*
	 * The walk comes back to every block of the database in no order: read them all first, in
	 * one pass, and keep them.  A database that fails to read then prints nothing, never half.
	 */
	model_load_blocks(model);
	struct out out = { BUF_INIT, f, false };
	if (!model_error(model)) {
		if (opt->format == BATCH_TEXT)
			run_text(model, opt, &out);
		else if (opt->format == BATCH_CSV)
			run_csv(model, opt, &out);
		else
			run_json(model, opt, &out);
	}
	if (model_error(model)) {
		buf_release(&out.b);
		return fth_error("%s", model_error(model));
	}
	out_flush(&out);
	buf_release(&out.b);
	if (out.failed || fflush(f) != 0)
		return fth_error_errno(errno, "standard output: write error");
	return 0;
}
