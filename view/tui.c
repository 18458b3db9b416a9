/* SPDX-License-Identifier: MIT */
/*
 * tui.c: view's interactive loop: the terminal set up and always restored (quit, Ctrl-C,
 * SIGTERM, SIGHUP, fatal signals, exit), keys (typed or replayed from --keys) dispatched
 * through the key table (tui-keys.def) to its actions on the model, prompts, the navigation
 * history, and finding the selection again after the model rebuilds a tree (thread selection,
 * filter).
 */
#include "compat.h"
#include "error.h"
#include "tui-internal.h"
#include "xalloc.h"

#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the terminal, restored on every way out ---- */

static volatile sig_atomic_t curses_active;
static volatile sig_atomic_t stop_signal;

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };
static const int fatal_signals[] = { SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL };
static struct sigaction saved_stop[ARRAY_SIZE(stop_signals)];
static struct sigaction saved_fatal[ARRAY_SIZE(fatal_signals)];

static void on_stop_signal(int sig)
{
	stop_signal = sig;
}

/* Only endwin (accepted practice for curses programs) and re-raising the signal. */
static void on_fatal_signal(int sig)
{
	if (curses_active) {
		curses_active = 0;
		endwin();
	}
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void restore_at_exit(void)
{
	if (curses_active) {
		curses_active = 0;
		endwin();
	}
}

static void signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop_signal; /* no SA_RESTART: the read returns */
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++) {
		sigaction(stop_signals[i], &sa, &saved_stop[i]);
		/* Ignored when we started (nohup, a background job): stay so. */
		if (saved_stop[i].sa_handler == SIG_IGN)
			sigaction(stop_signals[i], &saved_stop[i], NULL);
	}
	sa.sa_handler = on_fatal_signal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++)
		sigaction(fatal_signals[i], &sa, &saved_fatal[i]);
}

static void signals_restore(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &saved_stop[i], NULL);
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++)
		sigaction(fatal_signals[i], &saved_fatal[i], NULL);
}

/* ---- small helpers ---- */

void tui_message(struct tui *t, bool error, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->message, sizeof(t->message), fmt, ap);
	va_end(ap);
	t->message_error = error;
}

/* The width of one metric's inclusive and exclusive columns with their percentages. */
#define DEFAULT_METRIC_W 32

void tui_columns_rebuild(struct tui *t)
{
	free(t->cols);
	t->cols = xcalloc(t->nmetrics * 2 + 1, sizeof(*t->cols));
	t->ncols = 0;
	for (uint32_t i = 0; i < t->nmetrics; i++) {
		if (t->show_incl)
			t->cols[t->ncols++] = (struct tui_column){ t->metrics[i], true };
		if (t->show_excl)
			t->cols[t->ncols++] = (struct tui_column){ t->metrics[i], false };
	}
	t->threads.valid = false;
}

uint32_t tui_sort_column(const struct tui *t)
{
	if (t->sort.by_name)
		return UINT32_MAX;
	for (uint32_t i = 0; i < t->ncols; i++)
		if (t->cols[i].metric == t->sort.metric && t->cols[i].inclusive == t->sort.inclusive)
			return i;
	return UINT32_MAX;
}

static model_node selected_node(const struct tui *t)
{
	return t->sel[t->view];
}

static void label_of(struct tui *t, model_node node, char *out, size_t size)
{
	struct buf b = BUF_INIT;
	model_node_label(t->model, t->view, node, t->utf8_glyph, &b);
	snprintf(out, size, "%s", (const char *)b.data);
	buf_release(&b);
}

/* The rows, with SELIDX made right; the selection moved to its nearest visible ancestor (or
 * the first row) when it is not visible. */
static uint32_t current_rows(struct tui *t, const model_node **rows)
{
	uint32_t n = model_rows(t->model, t->view, rows);
	model_node s = selected_node(t);

	for (int pass = 0; pass < 64 && s != MODEL_NONE; pass++) {
		struct model_node_info info;
		if (t->selidx < n && (*rows)[t->selidx] == s) {
			t->sel[t->view] = s;
			return n;
		}
		for (uint32_t i = 0; i < n; i++)
			if ((*rows)[i] == s) {
				t->selidx = i;
				t->sel[t->view] = s;
				return n;
			}
		model_node_info(t->model, t->view, s, &info);
		s = info.parent;
	}
	t->selidx = 0;
	t->sel[t->view] = n ? (*rows)[0] : MODEL_NONE;
	return n;
}

static void select_index(struct tui *t, int64_t idx)
{
	const model_node *rows;
	uint32_t n = current_rows(t, &rows);

	if (!n)
		return;
	if (idx < 0)
		idx = 0;
	if (idx >= n)
		idx = n - 1;
	t->selidx = (uint32_t)idx;
	t->sel[t->view] = rows[idx];
}

static void move_selection(struct tui *t, int64_t delta)
{
	const model_node *rows;
	current_rows(t, &rows);
	select_index(t, (int64_t)t->selidx + delta);
}

static int page_rows(const struct tui *t)
{
	return t->tree.h > 1 ? t->tree.h - 1 : 1;
}

/* ---- zoom, counted here: the model's zoomed root has no parent ---- */

static void do_zoom(struct tui *t, enum model_view view, model_node node)
{
	if (t->zooms[view] == 0)
		t->top_root[view] = model_root(t->model, view);
	model_zoom(t->model, view, node);
	t->zooms[view]++;
}

static bool do_unzoom(struct tui *t, enum model_view view)
{
	if (!model_unzoom(t->model, view))
		return false;
	if (t->zooms[view])
		t->zooms[view]--;
	return true;
}

static void unzoom_all(struct tui *t, enum model_view view)
{
	while (do_unzoom(t, view))
		;
	t->zooms[view] = 0;
	t->top_root[view] = model_root(t->model, view);
}

/* ---- history ---- */

static struct tui_place current_place(struct tui *t)
{
	return (struct tui_place){ t->view, model_root(t->model, t->view), selected_node(t) };
}

static void history_push(struct tui *t)
{
	ALLOC_GROW(t->history, t->hist_pos + 2, t->hist_cap);
	t->history[t->hist_pos++] = current_place(t);
	t->hist_n = t->hist_pos;
}

static void place_restore(struct tui *t, const struct tui_place *p)
{
	t->view = p->view;
	if (model_root(t->model, t->view) != p->root) {
		while (model_root(t->model, t->view) != p->root && do_unzoom(t, t->view))
			;
		if (model_root(t->model, t->view) != p->root)
			do_zoom(t, t->view, p->root);
	}
	if (p->sel != MODEL_NONE) {
		model_reveal(t->model, t->view, p->sel);
		t->sel[t->view] = p->sel;
	}
}

static void key_history_back(struct tui *t, int key)
{
	if (t->hist_pos == 0) {
		tui_message(t, false, "at the start of the history");
		return;
	}
	ALLOC_GROW(t->history, t->hist_pos + 1, t->hist_cap);
	t->history[t->hist_pos] = current_place(t);
	if (t->hist_pos == t->hist_n)
		t->hist_n++;
	t->hist_pos--;
	place_restore(t, &t->history[t->hist_pos]);
}

static void key_history_forward(struct tui *t, int key)
{
	if (t->hist_pos + 1 >= t->hist_n) {
		tui_message(t, false, "at the end of the history");
		return;
	}
	t->history[t->hist_pos] = current_place(t);
	t->hist_pos++;
	place_restore(t, &t->history[t->hist_pos]);
}

/* ---- finding nodes again after a rebuild ---- */

static model_node absolute_root(struct tui *t, enum model_view view)
{
	return t->zooms[view] ? t->top_root[view] : model_root(t->model, view);
}

static void path_release(struct tui_path *p)
{
	free_strings(p->labels, p->n);
	p->labels = NULL;
	p->n = 0;
}

static void path_save(struct tui *t, enum model_view view, model_node node, struct tui_path *p)
{
	struct buf b = BUF_INIT;

	p->labels = NULL;
	p->n = 0;
	while (node != MODEL_NONE) {
		struct model_node_info info;
		model_node_info(t->model, view, node, &info);
		if (info.parent == MODEL_NONE)
			break;
		buf_reset(&b);
		model_node_label(t->model, view, node, true, &b);
		p->labels = xreallocarray(p->labels, p->n + 1, sizeof(*p->labels));
		p->labels[p->n++] = xstrdup((const char *)b.data);
		node = info.parent;
	}
	for (uint32_t i = 0; i < p->n / 2; i++) {
		char *tmp = p->labels[i];
		p->labels[i] = p->labels[p->n - 1 - i];
		p->labels[p->n - 1 - i] = tmp;
	}
	buf_release(&b);
}

static model_node path_find(struct tui *t, enum model_view view, const struct tui_path *p)
{
	model_node node = absolute_root(t, view);
	struct buf b = BUF_INIT;

	for (uint32_t i = 0; i < p->n; i++) {
		const model_node *kids;
		uint32_t nkids = model_children(t->model, view, node, &kids);
		model_node next = MODEL_NONE;
		for (uint32_t k = 0; k < nkids && next == MODEL_NONE; k++) {
			buf_reset(&b);
			model_node_label(t->model, view, kids[k], true, &b);
			if (!strcmp((const char *)b.data, p->labels[i]))
				next = kids[k];
		}
		if (next == MODEL_NONE)
			break;
		node = next;
	}
	buf_release(&b);
	return node;
}

enum rebuild_op { REBUILD_THREAD, REBUILD_PROCESS, REBUILD_RANK, REBUILD_FILTER };

/* The model's filters made the TUI's list: a scope is shown only when every filter keeps it
 * (hidden when any filter matches it or, with its subtree, one of its ancestors). */
static void apply_filters(struct tui *t)
{
	model_set_filter(t->model, NULL, MODEL_FILTER_SUBTREE);
	for (uint32_t i = 0; i < t->nfilters; i++)
		model_add_filter(t->model, t->filters[i].pattern, t->filters[i].mode);
}

/* Apply an operation that rebuilds the trees (a thread selected, the filters changed),
 * keeping each view's zoom and selection. */
static int rebuild(struct tui *t, enum rebuild_op op, int32_t thread)
{
	struct tui_path roots[MODEL_NVIEWS], sels[MODEL_NVIEWS];
	bool had[MODEL_NVIEWS];
	int rc = 0;

	for (int v = 0; v < MODEL_NVIEWS; v++) {
		model_node root = model_root(t->model, (enum model_view)v);
		had[v] = t->sel[v] != MODEL_NONE;
		if (!had[v])
			continue;
		/* Unzoomed, every node has its parents: the paths are whole. */
		unzoom_all(t, (enum model_view)v);
		path_save(t, (enum model_view)v, root, &roots[v]);
		path_save(t, (enum model_view)v, t->sel[v], &sels[v]);
	}
	if (op == REBUILD_THREAD)
		rc = model_select_thread(t->model, thread);
	else if (op == REBUILD_PROCESS)
		rc = model_select_process(t->model, (uint32_t)thread);
	else if (op == REBUILD_RANK)
		rc = model_select_rank(t->model, thread);
	else
		apply_filters(t);
	for (int v = 0; v < MODEL_NVIEWS; v++) {
		enum model_view view = (enum model_view)v;
		model_node r, s;
		if (!had[v])
			continue;
		unzoom_all(t, view);
		r = path_find(t, view, &roots[v]);
		if (r != absolute_root(t, view))
			do_zoom(t, view, r);
		model_expand(t->model, view, model_root(t->model, view), true);
		s = path_find(t, view, &sels[v]);
		model_reveal(t->model, view, s);
		t->sel[v] = s;
		t->top[v] = 0;
		path_release(&roots[v]);
		path_release(&sels[v]);
	}
	/* Node ids changed: the history cannot be followed any more. */
	t->hist_n = t->hist_pos = 0;
	tui_caches_release(t);
	return rc;
}

/* ---- actions ---- */

static void switch_view(struct tui *t, enum model_view view)
{
	if (view == t->view)
		return;
	history_push(t);
	t->view = view;
	if (t->sel[view] == MODEL_NONE) {
		model_node root = model_root(t->model, view);
		model_expand(t->model, view, root, true);
		t->sel[view] = root;
	}
	t->threads.valid = false;
}

static void set_sort(struct tui *t, struct model_sort s)
{
	t->sort = s;
	model_set_sort(t->model, &s);
}

/* Sort by column N (1-based; 0: by name). */
static void sort_by_column(struct tui *t, uint32_t n)
{
	struct model_sort s = t->sort;

	if (n == 0) {
		s.by_name = true;
		s.descending = false;
	} else if (n <= t->ncols) {
		s.by_name = false;
		s.metric = t->cols[n - 1].metric;
		s.inclusive = t->cols[n - 1].inclusive;
		s.descending = true;
		/* A comparison's change: the largest either way first. */
		s.by_magnitude = model_metric_role(t->model, s.metric) == MODEL_ROLE_DELTA;
	} else {
		tui_message(t, true, "no column %u (there are %u)", n, t->ncols);
		return;
	}
	set_sort(t, s);
}

static void sort_step(struct tui *t, int dir)
{
	uint32_t c = tui_sort_column(t);
	int64_t pos = c == UINT32_MAX ? 0 : (int64_t)c + 1; /* 0: by name */
	int64_t n = (int64_t)t->ncols + 1;

	pos = ((pos + dir) % n + n) % n;
	sort_by_column(t, (uint32_t)pos);
}

static uint32_t pane_metric_for_hot(const struct tui *t)
{
	uint32_t c = tui_sort_column(t);
	return c == UINT32_MAX ? t->cols[0].metric : t->cols[c].metric;
}

static void key_hot_path(struct tui *t, int key)
{
	model_node end;
	char label[160];

	if (selected_node(t) == MODEL_NONE)
		return;
	history_push(t);
	end = model_hot_path(t->model, t->view, selected_node(t), pane_metric_for_hot(t),
			     t->hot_threshold);
	if (end == MODEL_NONE)
		return;
	model_reveal(t->model, t->view, end);
	t->sel[t->view] = end;
	label_of(t, end, label, sizeof(label));
	tui_message(t, false, "hot path (>= %.0f%%) ends at %s", t->hot_threshold * 100, label);
}

static void key_zoom_in(struct tui *t, int key)
{
	if (selected_node(t) == MODEL_NONE)
		return;
	history_push(t);
	do_zoom(t, t->view, selected_node(t));
	model_expand(t->model, t->view, selected_node(t), true);
	t->top[t->view] = 0;
}

static void key_zoom_out(struct tui *t, int key)
{
	struct tui_place before = current_place(t);

	if (!do_unzoom(t, t->view)) {
		tui_message(t, false, "not zoomed");
		return;
	}
	ALLOC_GROW(t->history, t->hist_pos + 2, t->hist_cap);
	t->history[t->hist_pos++] = before;
	t->hist_n = t->hist_pos;
}

static void flatten_selected(struct tui *t, bool more)
{
	int depth;

	if (!model_view_flattens(t->view)) {
		tui_message(t, true, "flatten and unflatten work in the flat view (3)");
		return;
	}
	depth = more ? model_flatten(t->model) : model_unflatten(t->model);
	tui_message(t, false, "flattened %d level%s", depth, depth == 1 ? "" : "s");
}

/* Every node of the visible subtree under the selection (the selection first). */
static uint32_t visible_subtree(struct tui *t, model_node **out)
{
	const model_node *rows;
	uint32_t n = current_rows(t, &rows), first = t->selidx, end;
	struct model_node_info info, sub;

	*out = NULL;
	if (!n)
		return 0;
	model_node_info(t->model, t->view, rows[first], &info);
	for (end = first + 1; end < n; end++) {
		model_node_info(t->model, t->view, rows[end], &sub);
		if (sub.depth <= info.depth)
			break;
	}
	*out = xmalloc((end - first) * sizeof(**out));
	memcpy(*out, rows + first, (end - first) * sizeof(**out));
	return end - first;
}

/* +: expand the collapsed frontier of the selection's subtree; -: collapse its deepest
 * expanded level. */
static void expand_level(struct tui *t, bool expand)
{
	model_node *nodes;
	uint32_t n = visible_subtree(t, &nodes);
	uint32_t deepest = 0;
	bool any = false;

	for (uint32_t i = 0; i < n; i++) {
		struct model_node_info info;
		model_node_info(t->model, t->view, nodes[i], &info);
		if (expand && info.has_children && !info.expanded) {
			model_expand(t->model, t->view, nodes[i], true);
			any = true;
		}
		if (!expand && info.expanded && info.depth >= deepest) {
			deepest = info.depth;
			any = true;
		}
	}
	if (!expand && any)
		for (uint32_t i = 0; i < n; i++) {
			struct model_node_info info;
			model_node_info(t->model, t->view, nodes[i], &info);
			if (info.expanded && info.depth == deepest)
				model_expand(t->model, t->view, nodes[i], false);
		}
	free(nodes);
}

static void key_expand_or_child(struct tui *t, int key)
{
	struct model_node_info info;

	if (selected_node(t) == MODEL_NONE)
		return;
	model_node_info(t->model, t->view, selected_node(t), &info);
	if (!info.has_children)
		return;
	if (!info.expanded)
		model_expand(t->model, t->view, selected_node(t), true);
	else
		move_selection(t, 1);
}

static void key_collapse_or_parent(struct tui *t, int key)
{
	struct model_node_info info;

	if (selected_node(t) == MODEL_NONE)
		return;
	model_node_info(t->model, t->view, selected_node(t), &info);
	if (info.expanded && info.has_children) {
		model_expand(t->model, t->view, selected_node(t), false);
	} else if (info.parent != MODEL_NONE && selected_node(t) != model_root(t->model, t->view)) {
		t->sel[t->view] = info.parent;
	}
}

static void toggle_selected(struct tui *t)
{
	struct model_node_info info;

	if (selected_node(t) == MODEL_NONE)
		return;
	model_node_info(t->model, t->view, selected_node(t), &info);
	if (info.has_children)
		model_expand(t->model, t->view, selected_node(t), !info.expanded);
}

/* The next (or previous) match of the search from FROM, wrapping around. */
static model_node search_next(struct tui *t, model_node from, bool forward)
{
	model_node m = model_search(t->model, t->view, from, t->search, forward);
	model_node root = model_root(t->model, t->view);

	if (m != MODEL_NONE)
		return m;
	if (forward)
		return model_search(t->model, t->view, root, t->search, true);
	/* Wrap backward: the last match in the tree (model_search does not wrap). */
	for (model_node x = root, count = 0; count < 1000000; count++) {
		model_node next = model_search(t->model, t->view, x, t->search, true);
		if (next == MODEL_NONE)
			break;
		m = next;
		x = next;
	}
	return m;
}

static void search_step(struct tui *t, bool forward)
{
	model_node m;
	char label[160];

	if (!t->search[0]) {
		tui_message(t, true, "no search yet: press / first");
		return;
	}
	m = search_next(t, selected_node(t), forward);
	if (m == MODEL_NONE) {
		tui_message(t, true, "no match for '%s'", t->search);
		return;
	}
	history_push(t);
	model_reveal(t->model, t->view, m);
	t->sel[t->view] = m;
	label_of(t, m, label, sizeof(label));
	tui_message(t, false, "/%s: %s", t->search, label);
}

static void search_incremental(struct tui *t)
{
	model_node m;

	snprintf(t->search, sizeof(t->search), "%s", t->input);
	t->search_failed = false;
	if (!t->input[0]) {
		t->sel[t->view] = t->search_origin;
		return;
	}
	m = search_next(t, t->search_origin, true);
	if (m == MODEL_NONE) {
		t->search_failed = true;
		return;
	}
	model_reveal(t->model, t->view, m);
	t->sel[t->view] = m;
}

static void key_callers(struct tui *t, int key)
{
	model_node n = selected_node(t), root;
	struct model_node_info info;
	const model_node *kids;
	uint32_t nkids;
	char *name = NULL;

	while (n != MODEL_NONE) {
		model_node_info(t->model, t->view, n, &info);
		if ((info.kind == MODEL_KIND_FUNCTION || info.kind == MODEL_KIND_INLINE ||
		     info.kind == MODEL_KIND_CALL || info.kind == MODEL_KIND_CALLER) &&
		    info.name && info.name[0]) {
			name = xstrdup(info.name);
			break;
		}
		n = info.parent;
	}
	if (!name) {
		tui_message(t, true, "no function here: select a function, call site or line");
		return;
	}
	history_push(t);
	t->view = MODEL_BOTTOMUP;
	unzoom_all(t, MODEL_BOTTOMUP);
	root = model_root(t->model, MODEL_BOTTOMUP);
	model_expand(t->model, MODEL_BOTTOMUP, root, true);
	nkids = model_children(t->model, MODEL_BOTTOMUP, root, &kids);
	n = MODEL_NONE;
	for (uint32_t i = 0; i < nkids && n == MODEL_NONE; i++) {
		model_node_info(t->model, MODEL_BOTTOMUP, kids[i], &info);
		if (info.name && !strcmp(info.name, name))
			n = kids[i];
	}
	if (n == MODEL_NONE) {
		if (t->sel[MODEL_BOTTOMUP] == MODEL_NONE)
			t->sel[MODEL_BOTTOMUP] = root;
		tui_message(t, true, "%s is not among the bottom-up functions", name);
	} else {
		model_expand(t->model, MODEL_BOTTOMUP, n, true);
		model_reveal(t->model, MODEL_BOTTOMUP, n);
		t->sel[MODEL_BOTTOMUP] = n;
		t->sel_to_top = true;
		tui_message(t, false, "callers of %s", name);
	}
	t->threads.valid = false;
	free(name);
}

static void select_thread(struct tui *t)
{
	const struct tui_thread_row *row;

	if (tui_threads_update(t) || t->thr_cursor >= t->threads.nrows)
		return;
	row = &t->threads.rows[t->thr_cursor];
	bool everything = model_selected_thread(t->model) < 0 &&
			  model_selected_process(t->model) < 0 && model_selected_rank(t->model) < 0;
	if (row->thread == TUI_ROW_PROCESS ? model_selected_process(t->model) == (int64_t)row->pid
	    : row->thread == TUI_ROW_RANK  ? model_selected_rank(t->model) == row->rank
	    : row->thread == TUI_ROW_ALL   ? everything
					   : row->thread == model_selected_thread(t->model))
		return;
	if (row->thread == TUI_ROW_RANK && row->rank < 0) {
		tui_message(t, true, "these threads ran in no MPI rank: select one of them");
		return;
	}
	int32_t thread = row->thread == TUI_ROW_ALL ? -1 : row->thread;
	uint32_t pid = row->pid;
	int32_t rank = row->rank;
	enum rebuild_op op = row->thread == TUI_ROW_PROCESS ? REBUILD_PROCESS
			     : row->thread == TUI_ROW_RANK  ? REBUILD_RANK
							    : REBUILD_THREAD;
	if (rebuild(t, op, op == REBUILD_PROCESS ? (int32_t)pid : op == REBUILD_RANK ? rank : thread)) {
		tui_message(t, true, "%s", fth_errmsg());
		return;
	}
	t->thr_cursor = 0;
	if (model_selected_rank(t->model) >= 0)
		tui_message(t, false, "showing MPI rank %d only", rank);
	else if (model_selected_process(t->model) >= 0)
		tui_message(t, false, "showing process %u only", pid);
	else if (thread < 0)
		tui_message(t, false, "showing the sum over all threads");
	else
		tui_message(t, false, "showing thread %d only", thread);
}

static void open_pane(struct tui *t, enum tui_pane pane, bool focus)
{
	if (pane == TUI_PANE_TMA) {
		t->tma_open = true;
	} else {
		t->bottom = pane;
	}
	t->last_opened = pane;
	if (focus)
		t->focus = pane;
}

static void close_pane(struct tui *t, enum tui_pane pane)
{
	if (pane == TUI_PANE_TMA)
		t->tma_open = false;
	else if (t->bottom == pane)
		t->bottom = TUI_PANE_NONE;
	if (t->focus == pane)
		t->focus = TUI_PANE_NONE;
	if (t->last_opened == pane)
		t->last_opened = t->tma_open ? TUI_PANE_TMA : t->bottom;
}

static void toggle_pane(struct tui *t, enum tui_pane pane, bool focus)
{
	bool open = pane == TUI_PANE_TMA ? t->tma_open : t->bottom == pane;

	if (open && (!focus || t->focus == pane))
		close_pane(t, pane);
	else
		open_pane(t, pane, focus);
}

static void start_prompt(struct tui *t, enum tui_prompt prompt, const char *initial)
{
	t->prompt = prompt;
	snprintf(t->input, sizeof(t->input), "%s", initial ? initial : "");
	t->input_len = strlen(t->input);
	t->search_failed = false;
	if (prompt == TUI_PROMPT_SEARCH)
		t->search_origin = selected_node(t);
}

void tui_start_prompt(struct tui *t, enum tui_prompt p)
{
	start_prompt(t, p, NULL);
}

static void filters_remove(struct tui *t, uint32_t first, uint32_t n)
{
	for (uint32_t i = first; i < first + n; i++)
		free(t->filters[i].pattern);
	memmove(&t->filters[first], &t->filters[first + n],
		(t->nfilters - first - n) * sizeof(*t->filters));
	t->nfilters -= n;
}

/* The filter prompt's input: a glob to add (its mode asked next), -N to drop filter N, - to
 * drop them all, nothing to change nothing. */
static void filter_accept(struct tui *t)
{
	const char *in = t->input;
	size_t digits = in[0] ? strspn(in + 1, "0123456789") : 0;

	if (!in[0]) {
		tui_message(t, false, "no filter added");
	} else if (in[0] == '-' && !in[1]) {
		if (!t->nfilters) {
			tui_message(t, false, "no filters to remove");
			return;
		}
		filters_remove(t, 0, t->nfilters);
		rebuild(t, REBUILD_FILTER, 0);
		tui_message(t, false, "filters cleared");
	} else if (in[0] == '-' && digits && !in[1 + digits]) {
		unsigned long n = strtoul(in + 1, NULL, 10);
		if (n < 1 || n > t->nfilters) {
			tui_message(t, true, "no filter %s (there %s %u)", in + 1,
				    t->nfilters == 1 ? "is" : "are", t->nfilters);
			return;
		}
		tui_message(t, false, "filter %lu removed: %s", n, t->filters[n - 1].pattern);
		filters_remove(t, (uint32_t)n - 1, 1);
		rebuild(t, REBUILD_FILTER, 0);
	} else if (t->nfilters == TUI_MAX_FILTERS) {
		tui_message(t, true, "at most %d filters: remove one first (-N)", TUI_MAX_FILTERS);
	} else {
		snprintf(t->filter_pending, sizeof(t->filter_pending), "%s", in);
		t->prompt = TUI_PROMPT_FILTER_MODE;
	}
}

static void prompt_accept(struct tui *t)
{
	enum tui_prompt p = t->prompt;
	char *end;
	double v;

	t->prompt = TUI_PROMPT_NONE;
	switch (p) {
	case TUI_PROMPT_SEARCH:
		if (t->input[0] && !t->search_failed && selected_node(t) != t->search_origin) {
			struct tui_place origin = current_place(t);
			origin.sel = t->search_origin;
			ALLOC_GROW(t->history, t->hist_pos + 2, t->hist_cap);
			t->history[t->hist_pos++] = origin;
			t->hist_n = t->hist_pos;
		}
		if (t->search_failed)
			tui_message(t, true, "no match for '%s'", t->search);
		break;
	case TUI_PROMPT_FILTER:
		filter_accept(t);
		break;
	case TUI_PROMPT_THRESHOLD:
		v = strtod(t->input, &end);
		if (end == t->input || *end || !(v > 0 && v <= 100)) {
			tui_message(t, true, "the threshold is a percent in (0, 100]");
			break;
		}
		t->hot_threshold = v / 100;
		tui_message(t, false, "hot-path threshold %.0f%%", v);
		break;
	case TUI_PROMPT_TRACE_TIME:
		v = strtod(t->input, &end);
		if (end == t->input || *end)
			tui_message(t, true, "a time is a number of seconds");
		else
			tui_trace_goto(t, v);
		break;
	case TUI_PROMPT_SOURCE_DIR:
		if (t->input[0]) {
			model_add_source_path(t->model, t->input);
			t->source.valid = false;
			tui_message(t, false, "source directory added: %s", t->input);
		}
		break;
	default:
		break;
	}
}

static void prompt_key(struct tui *t, int key)
{
	if (t->prompt == TUI_PROMPT_FILTER_MODE) {
		t->prompt = TUI_PROMPT_NONE;
		if (key == 's' || key == 't' || key == TK_ENTER || key == '\n' || key == KEY_ENTER) {
			enum model_filter_mode mode =
				key == 's' ? MODEL_FILTER_SELF : MODEL_FILTER_SUBTREE;
			t->filters[t->nfilters++] =
				(struct tui_filter){ xstrdup(t->filter_pending), mode };
			rebuild(t, REBUILD_FILTER, 0);
			tui_message(t, false, "filter %u '%s': matches hidden %s", t->nfilters,
				    t->filter_pending,
				    mode == MODEL_FILTER_SELF ? "(their children stay)"
							   : "with their subtrees");
		} else {
			tui_message(t, false, "filter cancelled");
		}
		t->filter_pending[0] = 0;
		return;
	}
	if (t->prompt == TUI_PROMPT_SORT_COLUMN) {
		t->prompt = TUI_PROMPT_NONE;
		if (key >= '0' && key <= '9')
			sort_by_column(t, (uint32_t)(key - '0'));
		return;
	}
	switch (key) {
	case TK_ESC:
	case TK_CTRL('g'):
		if (t->prompt == TUI_PROMPT_SEARCH)
			t->sel[t->view] = t->search_origin;
		t->prompt = TUI_PROMPT_NONE;
		return;
	case TK_ENTER:
	case '\n':
	case KEY_ENTER:
		prompt_accept(t);
		return;
	case KEY_BACKSPACE:
	case 127:
	case 8:
		while (t->input_len > 0 && ((unsigned char)t->input[t->input_len - 1] & 0xc0) == 0x80)
			t->input_len--;
		if (t->input_len > 0)
			t->input_len--;
		break;
	case TK_CTRL('u'):
		t->input_len = 0;
		break;
	default:
		if (key < 32 || key > 255 || t->input_len + 1 >= sizeof(t->input))
			return;
		t->input[t->input_len++] = (char)key;
		break;
	}
	t->input[t->input_len] = 0;
	if (t->prompt == TUI_PROMPT_SEARCH)
		search_incremental(t);
}

static void popup_key(struct tui *t, int key)
{
	struct tui_rect r = tui_popup_rect(t);
	int page = r.h - 3 > 1 ? r.h - 3 : 1;
	bool chooser = t->popup == TUI_POPUP_COLUMNS;
	int *pos = chooser ? &t->popup_cursor : &t->popup_scroll;

	switch (key) {
	case 'q':
	case TK_ESC:
	case KEY_F(10):
		t->popup = TUI_POPUP_NONE;
		if (key == KEY_F(10))
			t->quit = true;
		break;
	case '?':
	case KEY_F(1):
	case 'i': {
		/* The help's keys and the information's close their popup, or show theirs. */
		enum tui_popup which = key == 'i' ? TUI_POPUP_INFO : TUI_POPUP_HELP;
		t->popup = t->popup == which ? TUI_POPUP_NONE : which;
		t->popup_scroll = 0;
		break;
	}
	case 'o':
	case KEY_F(2):
		t->popup = t->popup == TUI_POPUP_COLUMNS ? TUI_POPUP_NONE : TUI_POPUP_COLUMNS;
		t->popup_cursor = 1;
		break;
	case 'j':
	case KEY_DOWN:
		(*pos)++;
		break;
	case 'k':
	case KEY_UP:
		(*pos)--;
		break;
	case KEY_NPAGE:
	case TK_CTRL('d'):
		*pos += page;
		break;
	case ' ':
		if (chooser)
			tui_columns_toggle(t, t->popup_cursor);
		else
			*pos += page;
		break;
	case KEY_PPAGE:
	case 'b':
	case TK_CTRL('u'):
		*pos -= page;
		break;
	case 'g':
	case KEY_HOME:
		*pos = 0;
		break;
	case 'G':
	case KEY_END:
		*pos = tui_popup_lines(t);
		break;
	case TK_ENTER:
	case '\n':
	case KEY_ENTER:
		if (chooser)
			tui_columns_toggle(t, t->popup_cursor);
		break;
	case '%':
		t->value_mode = (t->value_mode + 1) % TUI_SHOW_MODES;
		break;
	default:
		break;
	}
	if (chooser && *pos == COLUMNS_FIRST_METRIC - 1)
		*pos += key == 'k' || key == KEY_UP || key == KEY_PPAGE || key == 'b' ? -1 : 1;
	if (*pos < 0)
		*pos = 0;
}

static void cycle_focus(struct tui *t, int dir)
{
	enum tui_pane order[3];
	int n = 0, at = 0;

	order[n++] = TUI_PANE_NONE;
	if (t->bottom != TUI_PANE_NONE && t->pane_shown)
		order[n++] = t->bottom;
	if (t->tma_open && t->tma_shown)
		order[n++] = TUI_PANE_TMA;
	for (int i = 0; i < n; i++)
		if (order[i] == t->focus)
			at = i;
	t->focus = order[((at + dir) % n + n) % n];
}

static void key_mouse(struct tui *t, int key)
{
	MEVENT ev;

	if (getmouse(&ev) != OK)
		return;
	if (ev.bstate & BUTTON4_PRESSED) {
		move_selection(t, -3);
		return;
	}
	if (ev.bstate & BUTTON5_PRESSED) {
		move_selection(t, 3);
		return;
	}
	if (!(ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED)))
		return;
	if (ev.y == 1) {
		for (uint32_t i = 0; i < t->hdr_n; i++)
			if (ev.x >= t->hdr_x[i] && ev.x < t->hdr_x[i] + t->hdr_w[i]) {
				if (tui_sort_column(t) == t->hdr_col[i]) {
					struct model_sort s = t->sort;
					s.descending = !s.descending;
					set_sort(t, s);
				} else {
					sort_by_column(t, t->hdr_col[i] + 1);
				}
			}
		return;
	}
	if (ev.y >= t->tree.y && ev.y < t->tree.y + t->tree.h && ev.x < t->tree.w) {
		uint32_t idx = t->top[t->view] + (uint32_t)(ev.y - t->tree.y);
		if (idx < t->nrows) {
			select_index(t, idx);
			t->focus = TUI_PANE_NONE;
			if (ev.bstate & BUTTON1_DOUBLE_CLICKED)
				toggle_selected(t);
		}
	}
}

/* The actions of tui-keys.def's rows: each is given the key that chose it. */

static void key_next_row(struct tui *t, int key)
{
	move_selection(t, 1);
}

static void key_previous_row(struct tui *t, int key)
{
	move_selection(t, -1);
}

static void key_page_down(struct tui *t, int key)
{
	move_selection(t, page_rows(t));
	t->top[t->view] += (uint32_t)page_rows(t);
}

static void key_page_up(struct tui *t, int key)
{
	move_selection(t, -page_rows(t));
	t->top[t->view] =
		t->top[t->view] > (uint32_t)page_rows(t) ? t->top[t->view] - (uint32_t)page_rows(t) : 0;
}

static void key_half_page(struct tui *t, int key)
{
	int half = page_rows(t) / 2 + 1;
	move_selection(t, key == TK_CTRL('d') ? half : -half);
}

static void key_first_row(struct tui *t, int key)
{
	history_push(t);
	select_index(t, 0);
}

static void key_last_row(struct tui *t, int key)
{
	const model_node *rows;
	history_push(t);
	current_rows(t, &rows);
	select_index(t, INT64_MAX / 2);
}

/* The moving keys in a focused pane: the threads pane moves its cursor, the others scroll. */
static void key_pane_scroll(struct tui *t, int key)
{
	int page = t->pane_shown ? t->pane.h - 2 : 5;
	int delta;

	if (page < 1)
		page = 1;
	if (key == 'j' || key == KEY_DOWN)
		delta = 1;
	else if (key == 'k' || key == KEY_UP)
		delta = -1;
	else if (key == KEY_NPAGE || key == ' ')
		delta = page;
	else if (key == KEY_PPAGE || key == 'b')
		delta = -page;
	else if (key == 'g' || key == KEY_HOME)
		delta = -1000000;
	else
		delta = 1000000;
	if (t->focus == TUI_PANE_THREADS) {
		int64_t c = (int64_t)t->thr_cursor + delta;
		int64_t n = t->threads.nrows ? (int64_t)t->threads.nrows - 1 : 0;
		t->thr_cursor = (uint32_t)(c < 0 ? 0 : c > n ? n : c);
	} else if (t->focus == TUI_PANE_SOURCE) {
		int64_t s = (int64_t)(t->src_scroll < 0 ? 0 : t->src_scroll) + delta;
		t->src_scroll = (int)(s < 0 ? 0 : s > 10000000 ? 10000000 : s);
	} else if (t->focus == TUI_PANE_TMA) {
		int64_t s = (int64_t)t->tma_scroll + delta;
		t->tma_scroll = (int)(s < 0 ? 0 : s > 1000 ? 1000 : s);
	} else if (t->focus == TUI_PANE_MCA) {
		int64_t s = (int64_t)t->mca_scroll + delta;
		t->mca_scroll = (int)(s < 0 ? 0 : s > 100000 ? 100000 : s);
	}
}

static void key_toggle(struct tui *t, int key)
{
	toggle_selected(t);
}

/* Enter in a focused pane: the threads pane shows its thread; in the others it is the tree's. */
static void key_pane_enter(struct tui *t, int key)
{
	if (t->focus == TUI_PANE_THREADS)
		select_thread(t);
	else
		key_toggle(t, key);
}

static void key_expand_level(struct tui *t, int key)
{
	expand_level(t, key == '+');
}

static void key_expand_subtree(struct tui *t, int key)
{
	if (selected_node(t) != MODEL_NONE)
		model_expand_subtree(t->model, t->view, selected_node(t), true);
}

static void key_expand_all(struct tui *t, int key)
{
	const model_node *rows;
	model_expand_all(t->model, t->view, key == 'E');
	if (key == 'C')
		current_rows(t, &rows);
}

static void key_switch_view(struct tui *t, int key)
{
	t->trace_mode = false;
	switch_view(t, (enum model_view)(key - '1'));
}

/* 4: the trace view, when the database has traces. */
static void key_trace_view(struct tui *t, int key)
{
	(void)key;
	if (tui_trace_open(t) == 0)
		t->trace_mode = true;
}

void tui_show_context(struct tui *t, uint32_t ctx)
{
	switch_view(t, MODEL_TOPDOWN);
	model_reveal(t->model, MODEL_TOPDOWN, ctx);
	t->sel[MODEL_TOPDOWN] = ctx;
	t->sel_to_top = false;
}

static void key_hot_threshold(struct tui *t, int key)
{
	start_prompt(t, TUI_PROMPT_THRESHOLD, NULL);
	snprintf(t->input, sizeof(t->input), "%.0f", t->hot_threshold * 100);
	t->input_len = strlen(t->input);
}

/* f and F8 flatten, F unflattens. */
static void key_flatten(struct tui *t, int key)
{
	flatten_selected(t, key != 'F');
}

static void key_search(struct tui *t, int key)
{
	start_prompt(t, TUI_PROMPT_SEARCH, NULL);
}

static void key_search_step(struct tui *t, int key)
{
	search_step(t, key == 'n');
}

static void key_filter(struct tui *t, int key)
{
	start_prompt(t, TUI_PROMPT_FILTER, NULL);
}

static void key_sort_step(struct tui *t, int key)
{
	sort_step(t, key == '<' ? -1 : 1);
}

static void key_invert_sort(struct tui *t, int key)
{
	struct model_sort s = t->sort;
	s.descending = !s.descending;
	set_sort(t, s);
}

/* F6 asks for the column; Alt-N sorts by column N. */
static void key_sort_column(struct tui *t, int key)
{
	if (key == KEY_F(6))
		start_prompt(t, TUI_PROMPT_SORT_COLUMN, NULL);
	else
		sort_by_column(t, (uint32_t)(key - TK_ALT('0')));
}

static void key_columns(struct tui *t, int key)
{
	t->popup = TUI_POPUP_COLUMNS;
	t->popup_cursor = 1;
	t->popup_scroll = 0;
}

static void key_value_mode(struct tui *t, int key)
{
	t->value_mode = (t->value_mode + 1) % TUI_SHOW_MODES;
}

static void key_source_pane(struct tui *t, int key)
{
	toggle_pane(t, TUI_PANE_SOURCE, false);
}

static void key_source_dir(struct tui *t, int key)
{
	start_prompt(t, TUI_PROMPT_SOURCE_DIR, NULL);
}

static void key_tma_pane(struct tui *t, int key)
{
	toggle_pane(t, TUI_PANE_TMA, false);
}

static void key_tma_levels(struct tui *t, int key)
{
	t->tma_depth = (t->tma_depth + 1) % 5;
	if (!t->tma_open)
		open_pane(t, TUI_PANE_TMA, false);
	tui_message(t, false, "TMA pane: %s", t->tma_depth == 0 ? "all levels"
				: t->tma_depth == 1 ? "level 1" : t->tma_depth == 2 ? "levels 1-2"
				: t->tma_depth == 3 ? "levels 1-3" : "levels 1-4");
}

static void key_mca_pane(struct tui *t, int key)
{
	toggle_pane(t, TUI_PANE_MCA, false);
}

static void key_threads_pane(struct tui *t, int key)
{
	toggle_pane(t, TUI_PANE_THREADS, false);
}

static void key_threads_cursor(struct tui *t, int key)
{
	toggle_pane(t, TUI_PANE_THREADS, true);
}

static void key_cycle_focus(struct tui *t, int key)
{
	cycle_focus(t, key == '\t' ? 1 : -1);
}

static void key_info(struct tui *t, int key)
{
	t->popup = TUI_POPUP_INFO;
	t->popup_scroll = 0;
}

static void key_help(struct tui *t, int key)
{
	t->popup = TUI_POPUP_HELP;
	t->popup_scroll = 0;
}

static void key_redraw(struct tui *t, int key)
{
	clearok(curscr, TRUE);
}

static void key_escape(struct tui *t, int key)
{
	t->focus = TUI_PANE_NONE;
}

static void key_close_or_quit(struct tui *t, int key)
{
	if (t->focus != TUI_PANE_NONE)
		close_pane(t, t->focus);
	else if (t->last_opened != TUI_PANE_NONE)
		close_pane(t, t->last_opened);
	else
		t->quit = true;
}

static void key_quit(struct tui *t, int key)
{
	t->quit = true;
}

static void key_interrupt(struct tui *t, int key)
{
	stop_signal = SIGINT;
}

#define TUI_KEY_SECTION(title) { TUI_KEYS_TREE, NULL, title, NULL, { 0 } },
#define TUI_KEY(scope, keys, what, action, ...)                                              \
	{ TUI_KEYS_##scope, keys, what, action, { __VA_ARGS__ } },
const struct tui_key_row tui_keys[] = {
#include "tui-keys.def"
};
#undef TUI_KEY
#undef TUI_KEY_SECTION
const size_t tui_nkeys = ARRAY_SIZE(tui_keys);

/* The row of SCOPE that has KEY, or NULL. */
static const struct tui_key_row *key_row(enum tui_key_scope scope, int key)
{
	for (size_t i = 0; i < tui_nkeys; i++) {
		if (!tui_keys[i].action || tui_keys[i].scope != scope)
			continue;
		for (const int *c = tui_keys[i].codes; *c; c++)
			if (*c == key)
				return &tui_keys[i];
	}
	return NULL;
}

static void handle_key(struct tui *t, int key)
{
	const struct tui_key_row *row = NULL;

	t->lines = LINES;
	t->columns = COLS;
	tui_layout(t);
	if (t->prompt != TUI_PROMPT_NONE) {
		prompt_key(t, key);
		return;
	}
	if (key != KEY_RESIZE && key != KEY_MOUSE)
		t->message[0] = 0;
	if (t->popup != TUI_POPUP_NONE && key != KEY_RESIZE && key != TK_CTRL('l')) {
		popup_key(t, key);
		return;
	}
	if (t->trace_mode)
		row = key_row(TUI_KEYS_TRACE, key);
	else if (t->focus != TUI_PANE_NONE)
		row = key_row(TUI_KEYS_PANE, key);
	if (!row)
		row = key_row(TUI_KEYS_TREE, key);
	if (row)
		row->action(t, key);
}

/* A key from the terminal, with ESC + key read as Alt-key. */
static int read_key(void)
{
	int key = getch();

	if (key == ERR)
		return ERR;
	key = tui_translate_key(key);
	if (key == TK_ESC) {
		int next;
		timeout(0);
		next = getch();
		timeout(1000);
		if (next == KEY_LEFT)
			return TK_ALT_LEFT;
		if (next == KEY_RIGHT)
			return TK_ALT_RIGHT;
		if (next != ERR && next >= 32 && next < 127)
			return TK_ALT(next);
		if (next != ERR)
			ungetch(next);
	}
	return key;
}

static void tui_init_state(struct tui *t, struct model *model, const struct tui_options *opt)
{
	struct model_sort sort;
	model_node root;
	bool sort_shown = false;

	memset(t, 0, sizeof(*t));
	t->model = model;
	t->opt = opt;
	for (int v = 0; v < MODEL_NVIEWS; v++)
		t->sel[v] = MODEL_NONE;
	t->view = opt->view < MODEL_NVIEWS ? opt->view : MODEL_TOPDOWN;
	if (opt->nmetrics) {
		t->metrics = xmalloc(opt->nmetrics * sizeof(*t->metrics));
		memcpy(t->metrics, opt->metrics, opt->nmetrics * sizeof(*t->metrics));
		t->nmetrics = opt->nmetrics;
	} else {
		t->metrics = xmalloc(sizeof(*t->metrics));
		t->metrics[0] = model_default_metric(model);
		t->nmetrics = 1;
	}
	t->show_incl = t->show_excl = true;
	t->value_mode = TUI_SHOW_BOTH;
	t->hot_threshold = 0.5;
	t->tma_depth = 0;
	t->src_scroll = -1;
	tui_columns_rebuild(t);
	sort = model_get_sort(model);
	for (uint32_t i = 0; i < t->nmetrics; i++)
		if (t->metrics[i] == sort.metric)
			sort_shown = true;
	if (!sort_shown || sort.by_name)
		sort = (struct model_sort){ t->metrics[0], true, true, false, false };
	set_sort(t, sort);
	root = model_root(model, t->view);
	model_expand(model, t->view, root, true);
	t->sel[t->view] = root;
	if (opt->hot_path) {
		model_node end =
			model_hot_path(model, t->view, root, sort.metric, t->hot_threshold);
		if (end != MODEL_NONE) {
			model_reveal(model, t->view, end);
			t->sel[t->view] = end;
		}
	}
}

static void tui_release(struct tui *t)
{
	tui_caches_release(t);
	tui_trace_release(t);
	for (uint32_t i = 0; i < t->nfilters; i++)
		free(t->filters[i].pattern);
	free(t->metrics);
	free(t->cols);
	free(t->history);
	buf_release(&t->scratch);
}

int tui_run(struct model *model, const struct tui_options *opt)
{
	struct tui t;
	int *keys = NULL;
	size_t nkeys = 0, next_key = 0;
	SCREEN *screen;
	const char *no_color = getenv("NO_COLOR");
	int sig;

	if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))
		return fth_error("the interactive interface needs a terminal on standard input and "
				 "output (for text output, use --batch)"),
		       1;
	if (opt->keys && tui_parse_keys(opt->keys, &keys, &nkeys))
		return 1;
	setlocale(LC_ALL, "");
	tui_init_state(&t, model, opt);
	t.utf8_text = !strcmp(nl_langinfo(CODESET), "UTF-8");
	t.utf8_glyph = t.utf8_text && !opt->ascii;

	if (!getenv("ESCDELAY"))
		set_escdelay(100);
	screen = newterm(NULL, stdout, stdin);
	if (!screen) {
		const char *term = getenv("TERM");
		free(keys);
		tui_release(&t);
		fth_error("cannot use the terminal (TERM=%s): is this a terminal?",
			  term ? term : "unset");
		return 1;
	}
	signals_install();
	curses_active = 1;
	atexit(restore_at_exit);
	t.color = !opt->no_color && !(no_color && no_color[0]) && has_colors();
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	idlok(stdscr, TRUE);
	curs_set(0);
	timeout(1000);
	tui_keys_init();
	tui_styles_init(&t);
	if (!opt->no_mouse) {
		mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED |
				  BUTTON5_PRESSED,
			  NULL);
		mouseinterval(200);
	}
	t.lines = LINES;
	t.columns = COLS;
	if (!opt->metrics_chosen && t.nmetrics > 1) {
		/* The default metrics that fit beside 40 columns of labels; 'c' adds the rest. */
		uint32_t fit = COLS > 40 + DEFAULT_METRIC_W ? (uint32_t)(COLS - 40) / DEFAULT_METRIC_W : 1;
		if (fit < t.nmetrics) {
			t.nmetrics = fit ? fit : 1;
			tui_columns_rebuild(&t);
		}
	}
	tui_layout(&t);

	while (!t.quit && !stop_signal && !model_error(model)) {
		int key;
		if (next_key >= nkeys) {
			tui_draw(&t);
			if (model_error(model))
				break; /* the database failed to read: stop with its message */
			refresh();
			key = read_key();
			if (key == ERR) {
				if (!isatty(STDIN_FILENO))
					break; /* the terminal went away */
				continue;
			}
		} else {
			key = keys[next_key++];
		}
		handle_key(&t, key);
	}
	sig = stop_signal;
	endwin();
	curses_active = 0;
	delscreen(screen);
	signals_restore();
	free(keys);
	tui_release(&t);
	if (sig) {
		/* Leave as the signal asked, now that the terminal is back. */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	if (model_error(model)) {
		fth_error("%s", model_error(model));
		return 1;
	}
	return 0;
}
