/* SPDX-License-Identifier: MIT */
/*
 * batch.c: view --batch: the rows of a view (expanded to --depth, or along the hot path) with
 * each metric's inclusive and exclusive value and percent of the total, as an indented text
 * table, CSV (one row per node, with its depth and path) or a nested JSON tree.  Names are
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
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[VM_KIND_COUNT] = {
	"root", "entry", "function", "inline", "loop", "line", "call", "module", "file", "caller",
};

static const char *const view_names[VM_NVIEWS] = { "top-down", "bottom-up", "flat" };

/* A number exactly, as short as it goes: integers plainly, others round-tripping. */
static void put_number(struct buf *b, double v, const char *nan_text)
{
	if (isnan(v) || isinf(v)) {
		buf_addstr(b, nan_text);
		return;
	}
	if (v == floor(v) && fabs(v) < 1e15) {
		buf_printf(b, "%.0f", v == 0 ? 0.0 : v);
		return;
	}
	char tmp[40];
	snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		snprintf(tmp, sizeof(tmp), "%.17g", v);
	buf_addstr(b, tmp);
}

static void put_percent(struct buf *b, double v, double total)
{
	if (isnan(v) || !(total != 0) || isnan(total))
		buf_addstr(b, "-");
	else
		buf_printf(b, "%.1f%%", 100 * v / total);
}

/* The escaped label of NODE. */
static void put_label(struct vm *vm, const struct batch_options *opt, vm_node node,
		      struct buf *b)
{
	struct buf raw = BUF_INIT;
	vm_node_label(vm, opt->view, node, !opt->ascii, &raw);
	esc_terminal(b, (const char *)raw.data, raw.len, !opt->ascii ? ESC_UTF8 : 0);
	buf_release(&raw);
}

static void put_escaped(struct buf *b, const char *s, bool utf8)
{
	esc_terminal(b, s, strlen(s), utf8 ? ESC_UTF8 : 0);
}

/* A database string as JSON: its exact bytes (lib/escape.h). */
static void json_text(struct buf *b, const char *s)
{
	esc_json(b, s, strlen(s));
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
 * many rows), or the rows of the hot path (vm_rows, a few).
 */
struct frame {
	vm_node node;
	vm_node *kids;
	uint32_t n, i;
};

struct walk {
	struct vm *vm;
	const struct batch_options *opt;
	struct frame *stack;
	uint32_t sp, cap;
	vm_node *rows; /* hot path */
	uint32_t *depth;
	uint32_t nrows, at;
	bool started;
};

static void walk_start(struct walk *w, struct vm *vm, const struct batch_options *opt)
{
	memset(w, 0, sizeof(*w));
	w->vm = vm;
	w->opt = opt;
	if (!opt->hot_path)
		return;
	vm_node root = vm_root(vm, opt->view);
	vm_expand(vm, opt->view, root, true);
	vm_hot_path(vm, opt->view, root, opt->metrics[0], 0.5);
	const vm_node *rows;
	w->nrows = vm_rows(vm, opt->view, &rows);
	/* Copy: values and labels below may rebuild the model's row array. */
	w->rows = xmalloc((w->nrows ? w->nrows : 1) * sizeof(vm_node));
	w->depth = xmalloc((w->nrows ? w->nrows : 1) * sizeof(uint32_t));
	memcpy(w->rows, rows, w->nrows * sizeof(vm_node));
	memcpy(w->depth, vm_row_depths(vm, opt->view), w->nrows * sizeof(uint32_t));
}

/* Push NODE, at DEPTH, when the walk goes below it (the root always). */
static void walk_push(struct walk *w, vm_node node, uint32_t depth)
{
	if (depth && depth >= w->opt->depth)
		return;
	ALLOC_GROW(w->stack, w->sp + 1, w->cap);
	struct frame *f = &w->stack[w->sp++];
	f->node = node;
	f->i = 0;
	f->n = vm_children_copy(w->vm, w->opt->view, node, &f->kids);
}

/* The next row into *NODE and *DEPTH; false after the last. */
static bool walk_next(struct walk *w, vm_node *node, uint32_t *depth)
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
		*node = vm_root(w->vm, w->opt->view);
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
		vm_forget(w->vm, w->opt->view, f->node);
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

static void put_tma_text(struct vm *vm, const struct batch_options *opt, vm_node node,
			 uint32_t indent, struct buf *b)
{
	const struct vm_tma_row *rows;
	uint32_t n = vm_tma(vm, opt->view, node, &rows);
	for (uint32_t i = 0; i < n; i++) {
		buf_printf(b, "%*s  | %*s", (int)indent, "", (int)(2 * rows[i].depth), "");
		put_escaped(b, vm_metric(vm, rows[i].metric)->name, !opt->ascii);
		buf_addch(b, ' ');
		if (isnan(rows[i].fraction))
			buf_addstr(b, "n/a");
		else
			buf_printf(b, "%.1f%%", 100 * rows[i].fraction);
		if (rows[i].over_threshold)
			buf_addstr(b, " !");
		if (rows[i].dominant)
			buf_addstr(b, " *");
		buf_addch(b, '\n');
	}
}

/* The label of ROW at DEPTH, indented, and its cells (value and percent, inclusive then
 * exclusive, per metric) into CELLS (4 per metric). */
static void text_row(struct vm *vm, const struct batch_options *opt, const double *totals,
		     vm_node row, uint32_t depth, struct buf *label, struct buf *cells)
{
	buf_reset(label);
	buf_printf(label, "%*s", (int)(2 * depth), "");
	put_label(vm, opt, row, label);
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		for (int incl = 1; incl >= 0; incl--) {
			double v = vm_value(vm, opt->view, row, opt->metrics[k], incl);
			struct buf *c = &cells[4 * k + 2 * (1 - incl)];
			buf_reset(c);
			buf_reset(c + 1);
			put_number(c, v, "n/a");
			put_percent(c + 1, v, totals[k]);
		}
}

/* Two walks: the column widths, then the rows. */
static void run_text(struct vm *vm, const struct batch_options *opt, struct out *out)
{
	uint32_t ncells = 4 * opt->nmetrics;
	struct buf label = BUF_INIT;
	struct buf *cells = xcalloc(ncells + 1, sizeof(struct buf));
	size_t lw = strlen("Scope");
	size_t *cw = xcalloc(ncells + 1, sizeof(size_t));
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		totals[k] = vm_total(vm, opt->metrics[k]);
	struct walk w;
	vm_node row;
	uint32_t depth;
	walk_start(&w, vm, opt);
	while (walk_next(&w, &row, &depth) && !vm_error(vm)) {
		text_row(vm, opt, totals, row, depth, &label, cells);
		size_t lwr = text_width((const char *)label.data, label.len);
		if (lwr > lw)
			lw = lwr;
		for (uint32_t i = 0; i < ncells; i++)
			if (cells[i].len > cw[i])
				cw[i] = cells[i].len;
	}
	walk_end(&w);
	if (vm_error(vm))
		goto done;
	/* Header: the metric over its two columns of value and percent. */
	struct buf *h = &out->b;
	buf_addstr(h, "Scope");
	for (size_t i = strlen("Scope"); i < lw; i++)
		buf_addch(h, ' ');
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		for (int e = 0; e < 2; e++) {
			struct buf name = BUF_INIT;
			put_escaped(&name, vm_metric(vm, opt->metrics[k])->name, !opt->ascii);
			buf_addstr(&name, e ? " (E)" : " (I)");
			size_t width = cw[4 * k + 2 * e] + 1 + cw[4 * k + 2 * e + 1];
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
	walk_start(&w, vm, opt);
	while (walk_next(&w, &row, &depth) && !vm_error(vm)) {
		text_row(vm, opt, totals, row, depth, &label, cells);
		buf_add(&out->b, label.data, label.len);
		size_t lwr = text_width((const char *)label.data, label.len);
		for (size_t i = lwr; i < lw; i++)
			buf_addch(&out->b, ' ');
		for (uint32_t i = 0; i < ncells; i++) {
			const struct buf *c = &cells[i];
			buf_addstr(&out->b, i % 2 ? " " : "  ");
			for (size_t j = c->len; j < cw[i]; j++)
				buf_addch(&out->b, ' ');
			buf_add(&out->b, c->data, c->len);
		}
		buf_addch(&out->b, '\n');
		if (opt->topdown)
			put_tma_text(vm, opt, row, 2 * depth, &out->b);
		out_row_done(out);
	}
	walk_end(&w);
done:
	buf_release(&label);
	for (uint32_t i = 0; i < ncells; i++)
		buf_release(&cells[i]);
	free(cells);
	free(cw);
	free(totals);
}

static void run_csv(struct vm *vm, const struct batch_options *opt, struct out *out)
{
	const struct vm_tma_row *tma;
	uint32_t ntma = opt->topdown ? vm_tma(vm, opt->view, vm_root(vm, opt->view), &tma) : 0;
	uint32_t *tma_metric = xcalloc(ntma + 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < ntma; i++)
		tma_metric[i] = tma[i].metric;
	struct buf *b = &out->b;
	/* ID is the row's number, PARENT its parent's: a tree that splits back whatever the names
	 * hold (PATH, the labels joined with " > ", is for reading) */
	buf_addstr(b, "id,parent,depth,path,kind,name,file,line");
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		const char *name = vm_metric(vm, opt->metrics[k])->name;
		static const char *const suffix[4] = { " (I)", " (I) %", " (E)", " (E) %" };
		for (int s = 0; s < 4; s++) {
			struct buf col = BUF_INIT;
			put_escaped(&col, name, !opt->ascii);
			buf_addstr(&col, suffix[s]);
			buf_addch(b, ',');
			csv_field(b, (const char *)col.data, col.len);
			buf_release(&col);
		}
	}
	for (uint32_t i = 0; i < ntma; i++) {
		struct buf col = BUF_INIT;
		buf_addstr(&col, "topdown ");
		put_escaped(&col, vm_metric(vm, tma_metric[i])->name, !opt->ascii);
		buf_addch(b, ',');
		csv_field(b, (const char *)col.data, col.len);
		buf_release(&col);
	}
	buf_addch(b, '\n');
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		totals[k] = vm_total(vm, opt->metrics[k]);
	struct buf *path = NULL; /* path per depth */
	uint32_t *row_at = NULL; /* the last row per depth */
	uint32_t alevels = 0, r = 0, d;
	vm_node row;
	struct walk w;
	walk_start(&w, vm, opt);
	for (; walk_next(&w, &row, &d) && !vm_error(vm); r++) {
		if (d >= alevels) {
			uint32_t old = alevels;
			ALLOC_GROW(path, d + 1, alevels);
			row_at = xreallocarray(row_at, alevels, sizeof(uint32_t));
			for (uint32_t i = old; i < alevels; i++)
				buf_init(&path[i]);
		}
		row_at[d] = r;
		buf_printf(b, "%u,", r);
		if (d)
			buf_printf(b, "%u", row_at[d - 1]);
		buf_addch(b, ',');
		buf_reset(&path[d]);
		if (d) {
			buf_add(&path[d], path[d - 1].data, path[d - 1].len);
			buf_addstr(&path[d], " > ");
		}
		put_label(vm, opt, row, &path[d]);
		struct vm_node_info in;
		vm_node_info(vm, opt->view, row, &in);
		buf_printf(b, "%u,", d);
		csv_field(b, (const char *)path[d].data, path[d].len);
		buf_printf(b, ",%s,", in.kind < VM_KIND_COUNT ? kind_names[in.kind] : "?");
		csv_text(b, in.name, !opt->ascii);
		buf_addch(b, ',');
		if (in.file)
			csv_text(b, in.file, !opt->ascii);
		buf_addch(b, ',');
		if (in.line)
			buf_printf(b, "%u", in.line);
		for (uint32_t k = 0; k < opt->nmetrics; k++)
			for (int incl = 1; incl >= 0; incl--) {
				double v = vm_value(vm, opt->view, row, opt->metrics[k], incl);
				buf_addch(b, ',');
				put_number(b, v, "");
				buf_addch(b, ',');
				if (!isnan(v) && totals[k] != 0 && !isnan(totals[k]))
					buf_printf(b, "%.4f", 100 * v / totals[k]);
			}
		if (ntma) {
			uint32_t n = vm_tma(vm, opt->view, row, &tma);
			for (uint32_t i = 0; i < ntma; i++) {
				buf_addch(b, ',');
				if (i < n)
					put_number(b, tma[i].fraction, "");
			}
		}
		buf_addch(b, '\n');
		out_row_done(out);
	}
	walk_end(&w);
	for (uint32_t i = 0; i < alevels; i++)
		buf_release(&path[i]);
	free(path);
	free(row_at);
	free(totals);
	free(tma_metric);
}

enum json_values { JSON_TOTALS, JSON_INCLUSIVE, JSON_EXCLUSIVE };

/* {"metric": value, ...} of the chosen metrics: the program's totals, or NODE's values. */
static void json_metric_object(struct vm *vm, const struct batch_options *opt, vm_node node,
			       enum json_values which, struct buf *out)
{
	buf_addch(out, '{');
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		uint32_t m = opt->metrics[k];
		if (k)
			buf_addstr(out, ", ");
		json_text(out, vm_metric(vm, m)->name);
		buf_addstr(out, ": ");
		put_number(out,
			   which == JSON_TOTALS ? vm_total(vm, m)
						: vm_value(vm, opt->view, node, m,
							   which == JSON_INCLUSIVE),
			   "null");
	}
	buf_addch(out, '}');
}

static void run_json(struct vm *vm, const struct batch_options *opt, struct out *o)
{
	struct buf *out = &o->b;
	buf_addstr(out, "{\"database\": ");
	json_text(out, opt->database);
	buf_printf(out, ", \"view\": \"%s\", \"thread\": ", view_names[opt->view]);
	if (vm_selected_thread(vm) >= 0)
		buf_printf(out, "%d", vm_selected_thread(vm));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"metrics\": [");
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		if (k)
			buf_addstr(out, ", ");
		json_text(out, vm_metric(vm, opt->metrics[k])->name);
	}
	buf_addstr(out, "], \"totals\": ");
	json_metric_object(vm, opt, 0, JSON_TOTALS, out);
	buf_addstr(out, ",\n\"tree\": ");
	struct walk w;
	vm_node row;
	uint32_t depth, prev = 0;
	bool first = true;
	walk_start(&w, vm, opt);
	while (walk_next(&w, &row, &depth) && !vm_error(vm)) {
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
		struct vm_node_info in;
		vm_node_info(vm, opt->view, row, &in);
		buf_printf(out, "%*s{\"kind\": \"%s\", \"name\": ", depth ? (int)(2 * depth) : 0, "",
			   in.kind < VM_KIND_COUNT ? kind_names[in.kind] : "?");
		json_text(out, in.name);
		buf_addstr(out, ", \"label\": ");
		struct buf label = BUF_INIT;
		vm_node_label(vm, opt->view, row, true, &label);
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
			buf_printf(out, "%u", in.line);
		else
			buf_addstr(out, "null");
		buf_addstr(out, ", \"inclusive\": ");
		json_metric_object(vm, opt, row, JSON_INCLUSIVE, out);
		buf_addstr(out, ", \"exclusive\": ");
		json_metric_object(vm, opt, row, JSON_EXCLUSIVE, out);
		if (opt->topdown) {
			const struct vm_tma_row *tma;
			uint32_t n = vm_tma(vm, opt->view, row, &tma);
			buf_addstr(out, ", \"topdown\": {");
			for (uint32_t i = 0; i < n; i++) {
				if (i)
					buf_addstr(out, ", ");
				json_text(out, vm_metric(vm, tma[i].metric)->name);
				buf_addstr(out, ": ");
				put_number(out, tma[i].fraction, "null");
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
}

/*
 * A walk that reads what the rows need, printing nothing: after it, with every block kept, the
 * walk that prints reads nothing more, so that a database that fails to read part way prints
 * nothing half-computed.
 */
static void walk_dry(struct vm *vm, const struct batch_options *opt)
{
	struct walk w;
	vm_node row;
	uint32_t depth;
	struct buf label = BUF_INIT;
	walk_start(&w, vm, opt);
	while (walk_next(&w, &row, &depth) && !vm_error(vm)) {
		buf_reset(&label);
		vm_node_label(vm, opt->view, row, true, &label);
		for (uint32_t k = 0; k < opt->nmetrics; k++)
			for (int incl = 1; incl >= 0; incl--)
				vm_value(vm, opt->view, row, opt->metrics[k], incl);
		if (opt->topdown) {
			const struct vm_tma_row *tma;
			vm_tma(vm, opt->view, row, &tma);
		}
	}
	walk_end(&w);
	buf_release(&label);
}

int batch_run(struct vm *vm, const struct batch_options *opt, FILE *f)
{
	/* The walk comes back to every block of the database in no order: keep them all. */
	vm_keep_blocks(vm);
	struct out out = { BUF_INIT, f, false };
	if (opt->format != BATCH_TEXT)
		walk_dry(vm, opt); /* text measures its columns in a first walk */
	if (!vm_error(vm)) {
		if (opt->format == BATCH_TEXT)
			run_text(vm, opt, &out);
		else if (opt->format == BATCH_CSV)
			run_csv(vm, opt, &out);
		else
			run_json(vm, opt, &out);
	}
	if (vm_error(vm)) {
		buf_release(&out.b);
		return fth_error("%s", vm_error(vm));
	}
	out_flush(&out);
	buf_release(&out.b);
	if (out.failed || fflush(f) != 0)
		return fth_error_errno(errno, "standard output: write error");
	return 0;
}
