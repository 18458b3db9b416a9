/* SPDX-License-Identifier: MIT */
/*
 * batch-trace.c: view --batch --view trace: the trace timeline as text (a row of one character
 * per bin for each thread, grouped by process, the summary strip's dominant scope per bin, and
 * a legend) or as JSON (per thread the bins with their kind, scope id and name; per bin the
 * summary's shares).  Names from the database are escaped for the terminal in text and carried
 * exactly, escaped once, in JSON.
 */
#include "compat.h"
#include "batch-trace.h"
#include "buf.h"
#include "error.h"
#include "escape.h"
#include "xalloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define SUMMARY_K 4

static const char symbols[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* The legend: each scope on screen, with its symbol, in order of the bins it takes. */
struct legend {
	uint32_t *scope;
	uint64_t *bins;
	uint32_t n, cap;
};

static uint32_t legend_add(struct legend *l, uint32_t scope)
{
	for (uint32_t i = 0; i < l->n; i++)
		if (l->scope[i] == scope) {
			l->bins[i]++;
			return i;
		}
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->scope = xreallocarray(l->scope, l->cap, sizeof(*l->scope));
		l->bins = xreallocarray(l->bins, l->cap, sizeof(*l->bins));
	}
	l->scope[l->n] = scope;
	l->bins[l->n] = 1;
	return l->n++;
}

/* Symbols by the bins each scope takes, most first (ties: the scope met first). */
static void legend_rank(const struct legend *l, uint32_t *rank)
{
	uint32_t *order = xcalloc(l->n ? l->n : 1, sizeof(*order));
	for (uint32_t i = 0; i < l->n; i++)
		order[i] = i;
	for (uint32_t i = 1; i < l->n; i++)
		for (uint32_t j = i; j > 0 && l->bins[order[j]] > l->bins[order[j - 1]]; j--) {
			uint32_t x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	for (uint32_t i = 0; i < l->n; i++)
		rank[order[i]] = i;
	free(order);
}

static char symbol_of(uint32_t rank)
{
	return rank < sizeof(symbols) - 1 ? symbols[rank] : '#';
}

static char cell_char(const struct trace_cell *c, const struct legend *l, const uint32_t *rank)
{
	switch (c->kind) {
	case TRACE_WORK:
		for (uint32_t i = 0; i < l->n; i++)
			if (l->scope[i] == c->scope)
				return symbol_of(rank[i]);
		return '?';
	case TRACE_IDLE:
		return '.';
	case TRACE_UNTRACED:
		return '-';
	default:
		return ' ';
	}
}

static const char *kind_name(uint8_t kind)
{
	static const char *const names[] = { "work", "idle", "unborn", "ended", "untraced" };
	return kind < ARRAY_SIZE(names) ? names[kind] : "?";
}

static void put_text(struct buf *b, const char *s)
{
	esc_terminal(b, s, strlen(s), 0);
}

/* A JSON string (esc_json quotes it). */
static void put_json(struct buf *b, const char *s)
{
	esc_json(b, s, strlen(s));
}

static const char *scope_name(const struct batch_trace_options *o, uint32_t scope)
{
	if (scope == DBFILE_NONE)
		return "";
	struct dbfile_context c;
	if (dbfile_context(o->m->db, scope, &c) < 0 || c.function == DBFILE_NONE)
		return "?";
	return o->function_name(o->ctx, c.function);
}

int batch_trace(const struct batch_trace_options *o, FILE *out)
{
	struct trace_model *m = o->m;
	struct dbfile *db = m->db;
	uint32_t w = o->width ? o->width : 100;
	uint64_t t0 = o->t0, t1 = o->t1;
	if (t1 <= t0)
		return fth_error("the time window is empty");
	uint32_t *order = trace_model_thread_order(m);
	struct trace_cell *cells = xcalloc((size_t)db->nthreads * w, sizeof(*cells));
	struct trace_share *share = xcalloc((size_t)w * SUMMARY_K, sizeof(*share));
	uint32_t *nshare = xcalloc(w, sizeof(*nshare));
	struct legend l = { 0 };
	int rc = 0;
	for (uint32_t i = 0; rc == 0 && i < db->nthreads; i++)
		rc = trace_model_row(m, order[i], t0, t1, w, &cells[(size_t)i * w]);
	if (rc == 0)
		rc = trace_model_summary(m, t0, t1, w, SUMMARY_K, share, nshare);
	if (rc < 0)
		goto done;
	for (size_t i = 0; i < (size_t)db->nthreads * w; i++)
		if (cells[i].kind == TRACE_WORK)
			legend_add(&l, cells[i].scope);
	for (uint32_t k = 0; k < w; k++)
		if (nshare[k])
			legend_add(&l, share[(size_t)k * SUMMARY_K].scope);
	uint32_t *rank = xcalloc(l.n ? l.n : 1, sizeof(*rank));
	legend_rank(&l, rank);
	struct buf b = BUF_INIT;
	double bin_ms = (double)(t1 - t0) / w / 1e6;
	if (o->json) {
		buf_printf(&b, "{\"view\":\"trace\",\"database\":");
		put_json(&b, o->database ? o->database : "");
		buf_printf(&b, ",\"depth\":%u,\"max_depth\":%u,\"start_ns\":%" PRIu64
			       ",\"end_ns\":%" PRIu64 ",\"trace_start_ns\":%" PRIu64
			       ",\"bins\":%u,\"bin_ns\":%.0f,\"threads\":[",
			   m->depth, m->max_depth, t0, t1, m->t_begin, w, (double)(t1 - t0) / w);
		for (uint32_t i = 0; i < db->nthreads; i++) {
			const struct dbfile_thread *t = &db->threads[order[i]];
			buf_printf(&b, "%s{\"thread\":%u,\"host\":", i ? "," : "", order[i]);
			put_json(&b, t->host);
			buf_printf(&b, ",\"pid\":%u,\"tid\":%u,\"rank\":%d,\"name\":", t->pid, t->tid,
				   (int)t->rank);
			put_json(&b, t->name);
			buf_printf(&b, ",\"traced\":%s,\"bins\":[",
				   dbtrace_thread(&m->tr, order[i]) ? "true" : "false");
			for (uint32_t k = 0; k < w; k++) {
				const struct trace_cell *c = &cells[(size_t)i * w + k];
				buf_printf(&b, "%s{\"kind\":\"%s\"", k ? "," : "", kind_name(c->kind));
				if (c->kind == TRACE_WORK) {
					buf_printf(&b, ",\"scope\":%u,\"name\":", c->scope);
					put_json(&b, scope_name(o, c->scope));
				}
				buf_addch(&b, '}');
			}
			buf_addstr(&b, "]}");
		}
		buf_addstr(&b, "],\"summary\":[");
		for (uint32_t k = 0; k < w; k++) {
			buf_printf(&b, "%s[", k ? "," : "");
			for (uint32_t j = 0; j < nshare[k]; j++) {
				const struct trace_share *s = &share[(size_t)k * SUMMARY_K + j];
				buf_printf(&b, "%s{\"scope\":%u,\"name\":", j ? "," : "", s->scope);
				put_json(&b, scope_name(o, s->scope));
				buf_printf(&b, ",\"share\":%.4f}", s->share);
			}
			buf_addch(&b, ']');
		}
		buf_addstr(&b, "],\"legend\":[");
		for (uint32_t r = 0, first = 1; r < l.n; r++)
			for (uint32_t i = 0; i < l.n; i++)
				if (rank[i] == r) {
					buf_printf(&b, "%s{\"symbol\":\"%c\",\"scope\":%u,\"name\":",
						   first ? "" : ",", symbol_of(r), l.scope[i]);
					put_json(&b, scope_name(o, l.scope[i]));
					buf_addch(&b, '}');
					first = 0;
				}
		buf_addstr(&b, "]}\n");
	} else {
		buf_printf(&b, "trace: %u of %u threads traced, %.3f s from %.3f s to %.3f s of the "
			       "trace, depth %u (deepest %u), %u bins of %.3g ms\n",
			   m->ntraced, db->nthreads, (double)(t1 - t0) / 1e9,
			   (double)(t0 - m->t_begin) / 1e9, (double)(t1 - m->t_begin) / 1e9,
			   m->depth, m->max_depth, w, bin_ms);
		uint32_t prev_pid = UINT32_MAX;
		const char *prev_host = NULL;
		for (uint32_t i = 0; i < db->nthreads; i++) {
			const struct dbfile_thread *t = &db->threads[order[i]];
			if (t->pid != prev_pid || !prev_host || strcmp(prev_host, t->host)) {
				buf_printf(&b, "process %u", t->pid);
				if (t->rank >= 0)
					buf_printf(&b, " rank %d", (int)t->rank);
				buf_addstr(&b, " (");
				const char *slash = strrchr(t->program, '/');
				put_text(&b, slash ? slash + 1 : t->program);
				buf_addstr(&b, ")\n");
				prev_pid = t->pid;
				prev_host = t->host;
			}
			char label[40];
			fth_format(label, sizeof(label), "  tid %u", t->tid);
			buf_printf(&b, "%-12s|", label);
			for (uint32_t k = 0; k < w; k++)
				buf_addch(&b, cell_char(&cells[(size_t)i * w + k], &l, rank));
			buf_addstr(&b, "|\n");
		}
		buf_printf(&b, "%-12s|", "summary");
		for (uint32_t k = 0; k < w; k++) {
			struct trace_cell c = { .kind = nshare[k] ? TRACE_WORK : TRACE_IDLE,
						.scope = nshare[k] ? share[(size_t)k * SUMMARY_K].scope
								   : DBFILE_NONE };
			buf_addch(&b, cell_char(&c, &l, rank));
		}
		buf_addstr(&b, "|\nlegend:\n");
		for (uint32_t r = 0; r < l.n; r++)
			for (uint32_t i = 0; i < l.n; i++)
				if (rank[i] == r) {
					buf_printf(&b, "  %c  ", symbol_of(r));
					put_text(&b, scope_name(o, l.scope[i]));
					buf_addch(&b, '\n');
				}
		buf_addstr(&b, "  .  alive, not sampled (blocked or waiting)\n"
			       "     not started yet, or ended\n"
			       "  -  not traced (measured without -t)\n");
	}
	if (fwrite(b.data, 1, b.len, out) != b.len)
		rc = fth_error_errno(errno, "cannot write the output");
	buf_release(&b);
	free(rank);
done:
	free(l.scope);
	free(l.bins);
	free(order);
	free(cells);
	free(share);
	free(nshare);
	return rc;
}
