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

/* Expand the tree as the options say; the rows are then what vm_rows gives. */
static void expand(struct vm *vm, const struct batch_options *opt)
{
	vm_node root = vm_root(vm, opt->view);
	vm_expand(vm, opt->view, root, true);
	if (opt->hot_path) {
		vm_hot_path(vm, opt->view, root, opt->metrics[0], 0.5);
		return;
	}
	struct item {
		vm_node node;
		uint32_t depth;
	} *stack = NULL;
	uint32_t sp = 0, cap = 0;
	ALLOC_GROW(stack, 1, cap);
	stack[sp++] = (struct item){ root, 0 };
	while (sp) {
		struct item it = stack[--sp];
		if (it.depth >= opt->depth)
			continue;
		vm_expand(vm, opt->view, it.node, true);
		const vm_node *kids;
		uint32_t n = vm_children(vm, opt->view, it.node, &kids);
		ALLOC_GROW(stack, sp + n, cap);
		for (uint32_t i = 0; i < n; i++)
			stack[sp++] = (struct item){ kids[i], it.depth + 1 };
	}
	free(stack);
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

static void run_text(struct vm *vm, const struct batch_options *opt, const vm_node *rows,
		     const uint32_t *depth, uint32_t nrows, struct buf *out)
{
	struct buf *labels = xcalloc(nrows ? nrows : 1, sizeof(struct buf));
	uint32_t ncells = 4 * opt->nmetrics;
	struct buf *cells = xcalloc((size_t)nrows * ncells + 1, sizeof(struct buf));
	size_t lw = strlen("Scope");
	size_t *cw = xcalloc(ncells + 1, sizeof(size_t));
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		totals[k] = vm_total(vm, opt->metrics[k]);
	for (uint32_t r = 0; r < nrows; r++) {
		buf_init(&labels[r]);
		buf_printf(&labels[r], "%*s", (int)(2 * depth[r]), "");
		put_label(vm, opt, rows[r], &labels[r]);
		size_t w = text_width((const char *)labels[r].data, labels[r].len);
		if (w > lw)
			lw = w;
		for (uint32_t k = 0; k < opt->nmetrics; k++)
			for (int incl = 1; incl >= 0; incl--) {
				double v = vm_value(vm, opt->view, rows[r], opt->metrics[k], incl);
				struct buf *c = &cells[(size_t)r * ncells + 4 * k + 2 * (1 - incl)];
				buf_init(c);
				buf_init(c + 1);
				put_number(c, v, "n/a");
				put_percent(c + 1, v, totals[k]);
			}
		for (uint32_t i = 0; i < ncells; i++) {
			size_t w2 = cells[(size_t)r * ncells + i].len;
			if (w2 > cw[i])
				cw[i] = w2;
		}
	}
	/* Header: the metric over its two columns of value and percent. */
	struct buf h = BUF_INIT;
	buf_addstr(&h, "Scope");
	for (size_t i = strlen("Scope"); i < lw; i++)
		buf_addch(&h, ' ');
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
			buf_addstr(&h, "  ");
			for (size_t i = nw; i < width; i++)
				buf_addch(&h, ' ');
			buf_add(&h, name.data, name.len);
			buf_release(&name);
		}
	buf_add(out, h.data, h.len);
	buf_addch(out, '\n');
	buf_release(&h);
	for (uint32_t r = 0; r < nrows; r++) {
		buf_add(out, labels[r].data, labels[r].len);
		size_t w = text_width((const char *)labels[r].data, labels[r].len);
		for (size_t i = w; i < lw; i++)
			buf_addch(out, ' ');
		for (uint32_t i = 0; i < ncells; i++) {
			const struct buf *c = &cells[(size_t)r * ncells + i];
			buf_addstr(out, i % 2 ? " " : "  ");
			for (size_t j = c->len; j < cw[i]; j++)
				buf_addch(out, ' ');
			buf_add(out, c->data, c->len);
		}
		buf_addch(out, '\n');
		if (opt->topdown)
			put_tma_text(vm, opt, rows[r], 2 * depth[r], out);
		buf_release(&labels[r]);
		for (uint32_t i = 0; i < ncells; i++)
			buf_release(&cells[(size_t)r * ncells + i]);
	}
	free(labels);
	free(cells);
	free(cw);
	free(totals);
}

static void run_csv(struct vm *vm, const struct batch_options *opt, const vm_node *rows,
		    const uint32_t *depth, uint32_t nrows, struct buf *out)
{
	const struct vm_tma_row *tma;
	uint32_t ntma = opt->topdown ? vm_tma(vm, opt->view, vm_root(vm, opt->view), &tma) : 0;
	uint32_t *tma_metric = xcalloc(ntma + 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < ntma; i++)
		tma_metric[i] = tma[i].metric;
	/* ID is the row's number, PARENT its parent's: a tree that splits back whatever the names
	 * hold (PATH, the labels joined with " > ", is for reading) */
	buf_addstr(out, "id,parent,depth,path,kind,name,file,line");
	for (uint32_t k = 0; k < opt->nmetrics; k++) {
		const char *name = vm_metric(vm, opt->metrics[k])->name;
		static const char *const suffix[4] = { " (I)", " (I) %", " (E)", " (E) %" };
		for (int s = 0; s < 4; s++) {
			struct buf col = BUF_INIT;
			put_escaped(&col, name, !opt->ascii);
			buf_addstr(&col, suffix[s]);
			buf_addch(out, ',');
			csv_field(out, (const char *)col.data, col.len);
			buf_release(&col);
		}
	}
	for (uint32_t i = 0; i < ntma; i++) {
		struct buf col = BUF_INIT;
		buf_addstr(&col, "topdown ");
		put_escaped(&col, vm_metric(vm, tma_metric[i])->name, !opt->ascii);
		buf_addch(out, ',');
		csv_field(out, (const char *)col.data, col.len);
		buf_release(&col);
	}
	buf_addch(out, '\n');
	double *totals = xcalloc(opt->nmetrics + 1, sizeof(double));
	for (uint32_t k = 0; k < opt->nmetrics; k++)
		totals[k] = vm_total(vm, opt->metrics[k]);
	struct buf *path = xcalloc(nrows + 1, sizeof(struct buf)); /* path per depth */
	uint32_t *row_at = xcalloc(nrows + 1, sizeof(uint32_t)); /* the last row per depth */
	for (uint32_t r = 0; r < nrows; r++) {
		uint32_t d = depth[r];
		row_at[d] = r;
		buf_printf(out, "%u,", r);
		if (d)
			buf_printf(out, "%u", row_at[d - 1]);
		buf_addch(out, ',');
		buf_init(&path[d]);
		buf_reset(&path[d]);
		if (d) {
			buf_add(&path[d], path[d - 1].data, path[d - 1].len);
			buf_addstr(&path[d], " > ");
		}
		put_label(vm, opt, rows[r], &path[d]);
		struct vm_node_info in;
		vm_node_info(vm, opt->view, rows[r], &in);
		buf_printf(out, "%u,", d);
		csv_field(out, (const char *)path[d].data, path[d].len);
		buf_printf(out, ",%s,", in.kind < VM_KIND_COUNT ? kind_names[in.kind] : "?");
		csv_text(out, in.name, !opt->ascii);
		buf_addch(out, ',');
		if (in.file)
			csv_text(out, in.file, !opt->ascii);
		buf_addch(out, ',');
		if (in.line)
			buf_printf(out, "%u", in.line);
		for (uint32_t k = 0; k < opt->nmetrics; k++)
			for (int incl = 1; incl >= 0; incl--) {
				double v = vm_value(vm, opt->view, rows[r], opt->metrics[k], incl);
				buf_addch(out, ',');
				put_number(out, v, "");
				buf_addch(out, ',');
				if (!isnan(v) && totals[k] != 0 && !isnan(totals[k]))
					buf_printf(out, "%.4f", 100 * v / totals[k]);
			}
		if (ntma) {
			uint32_t n = vm_tma(vm, opt->view, rows[r], &tma);
			for (uint32_t i = 0; i < ntma; i++) {
				buf_addch(out, ',');
				if (i < n)
					put_number(out, tma[i].fraction, "");
			}
		}
		buf_addch(out, '\n');
	}
	for (uint32_t r = 0; r <= nrows; r++)
		buf_release(&path[r]);
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

static void run_json(struct vm *vm, const struct batch_options *opt, const vm_node *rows,
		     const uint32_t *depth, uint32_t nrows, struct buf *out)
{
	buf_addstr(out, "{\"database\": ");
	json_text(out, opt->database);
	buf_printf(out, ", \"view\": \"%s\", \"thread\": ", view_names[opt->view]);
	if (vm_selected_thread(vm) >= 0)
		buf_printf(out, "%d", vm_selected_thread(vm));
	else
		buf_addstr(out, "null");
	buf_addstr(out, ", \"process\": ");
	if (vm_selected_process(vm) >= 0)
		buf_printf(out, "%lld", (long long)vm_selected_process(vm));
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
	for (uint32_t r = 0; r < nrows; r++) {
		struct vm_node_info in;
		vm_node_info(vm, opt->view, rows[r], &in);
		buf_printf(out, "%*s{\"kind\": \"%s\", \"name\": ", r ? (int)(2 * depth[r]) : 0, "",
			   in.kind < VM_KIND_COUNT ? kind_names[in.kind] : "?");
		json_text(out, in.name);
		buf_addstr(out, ", \"label\": ");
		struct buf label = BUF_INIT;
		vm_node_label(vm, opt->view, rows[r], true, &label);
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
		json_metric_object(vm, opt, rows[r], JSON_INCLUSIVE, out);
		buf_addstr(out, ", \"exclusive\": ");
		json_metric_object(vm, opt, rows[r], JSON_EXCLUSIVE, out);
		if (opt->topdown) {
			const struct vm_tma_row *tma;
			uint32_t n = vm_tma(vm, opt->view, rows[r], &tma);
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
		bool has_kids = r + 1 < nrows && depth[r + 1] > depth[r];
		if (has_kids) {
			buf_addch(out, '\n');
			continue;
		}
		/* Close this node, and every parent whose last child it is. */
		buf_addstr(out, "]}");
		uint32_t next = r + 1 < nrows ? depth[r + 1] : 0;
		for (uint32_t d = depth[r]; d > next; d--)
			buf_addstr(out, "]}");
		buf_addstr(out, r + 1 < nrows ? ",\n" : "\n");
	}
	buf_addstr(out, "}\n");
}

int batch_run(struct vm *vm, const struct batch_options *opt, FILE *f)
{
	expand(vm, opt);
	const vm_node *rows;
	uint32_t nrows = vm_rows(vm, opt->view, &rows);
	/* Copy: values and labels below may rebuild the model's row array. */
	vm_node *r = xmalloc((nrows ? nrows : 1) * sizeof(vm_node));
	uint32_t *d = xmalloc((nrows ? nrows : 1) * sizeof(uint32_t));
	memcpy(r, rows, nrows * sizeof(vm_node));
	memcpy(d, vm_row_depths(vm, opt->view), nrows * sizeof(uint32_t));
	struct buf out = BUF_INIT;
	if (opt->format == BATCH_TEXT)
		run_text(vm, opt, r, d, nrows, &out);
	else if (opt->format == BATCH_CSV)
		run_csv(vm, opt, r, d, nrows, &out);
	else
		run_json(vm, opt, r, d, nrows, &out);
	free(r);
	free(d);
	if (vm_error(vm)) {
		/* The database failed to read part way: nothing half-computed is printed. */
		buf_release(&out);
		return fth_error("%s", vm_error(vm));
	}
	size_t len = out.len, n = fwrite(out.data, 1, len, f);
	buf_release(&out);
	if (n != len || fflush(f) != 0)
		return fth_error_errno(errno, "standard output: write error");
	return 0;
}
