/* SPDX-License-Identifier: MIT */
/*
 * sfile-dump.c: prints a structure file as an indented tree (struct --dump): module > file >
 * function > inline call sites > loops > statements, with address ranges and file:line.
 */
#include "compat.h"
#include "sfile.h"
#include "buf.h"
#include "search.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

struct span {
	uint64_t lo, hi;
};

struct dump_ctx {
	const struct sfile *sf;
	struct buf *out;
	uint32_t *child_start, *children; /* CSR lists of children, ordered by address */
	uint64_t *own_start, *own;	  /* CSR lists of the node's own range rows */
	uint64_t *block_start, *block;	  /* and of a loop's own blocks */
	struct span **spans;		  /* merged ranges of each subtree */
	uint32_t *nspans, *spans_cap;
};

static void add_span(struct dump_ctx *c, uint32_t node, uint64_t lo, uint64_t hi)
{
	uint32_t n = c->nspans[node];
	if (n && c->spans[node][n - 1].hi == lo) {
		c->spans[node][n - 1].hi = hi;
		return;
	}
	ALLOC_GROW(c->spans[node], n + 1, c->spans_cap[node]);
	c->spans[node][n].lo = lo;
	c->spans[node][n].hi = hi;
	c->nspans[node] = n + 1;
}

static uint64_t first_addr(const struct dump_ctx *c, uint32_t node)
{
	return c->nspans[node] ? c->spans[node][0].lo : UINT64_MAX;
}

static const struct dump_ctx *sort_ctx;

static int by_address(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t ax = first_addr(sort_ctx, x), ay = first_addr(sort_ctx, y);
	if (ax != ay)
		return ax < ay ? -1 : 1;
	return x < y ? -1 : x > y;
}

static int by_file_then_address(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct sfile *sf = sort_ctx->sf;
	int d = strcmp(sfile_str(sf, sf->nodes[x].file), sfile_str(sf, sf->nodes[y].file));
	return d ? d : by_address(a, b);
}

static void indent(struct buf *out, unsigned depth)
{
	for (unsigned i = 0; i < depth; i++)
		buf_addstr(out, "  ");
}

static void add_name(struct buf *out, const char *s)
{
	buf_add_escaped(out, s, strlen(s));
}

static void add_where(struct dump_ctx *c, uint32_t file, uint32_t line, uint32_t column)
{
	add_name(c->out, sfile_str(c->sf, file));
	buf_printf(c->out, ":%u", line);
	if (column)
		buf_printf(c->out, ":%u", column);
}

static void add_spans(struct dump_ctx *c, uint32_t node)
{
	for (uint32_t i = 0; i < c->nspans[node]; i++)
		buf_printf(c->out, " [0x%llx-0x%llx)", (unsigned long long)c->spans[node][i].lo,
			   (unsigned long long)c->spans[node][i].hi);
}

static void add_flags(struct buf *out, uint32_t flags)
{
	bool first = true;
#define X(e, b, n)                                              \
	if (flags & (1u << b)) {                                \
		buf_addstr(out, first ? " flags=" n : "," n);   \
		first = false;                                  \
	}
	SFILE_NODE_FLAGS(X)
#undef X
}

/* The statements of one range row: pieces of it with one file:line each. */
static void dump_statements(struct dump_ctx *c, const struct sfile_range *r, unsigned depth)
{
	const struct sfile *sf = c->sf;
	uint64_t lo = FTH_UPPER_BOUND(sf->lines, sf->nlines, hi, r->lo);
	uint64_t at = r->lo;
	while (at < r->hi) {
		while (lo < sf->nlines && sf->lines[lo].hi <= at)
			lo++;
		const struct sfile_line *l = lo < sf->nlines ? &sf->lines[lo] : NULL;
		uint64_t end;
		indent(c->out, depth);
		buf_addstr(c->out, "stmt ");
		if (l && l->lo <= at) {
			/* Coalesce the following rows of the same file:line:column. */
			uint64_t k = lo;
			end = FTH_MIN(l->hi, r->hi);
			while (end < r->hi && end == sf->lines[k].hi && k + 1 < sf->nlines &&
			       sf->lines[k + 1].lo == end && sf->lines[k + 1].file == l->file &&
			       sf->lines[k + 1].line == l->line && sf->lines[k + 1].column == l->column) {
				k++;
				end = FTH_MIN(sf->lines[k].hi, r->hi);
			}
			add_where(c, l->file, l->line, l->column);
		} else {
			end = l && l->lo < r->hi ? l->lo : r->hi;
			buf_addstr(c->out, "?");
		}
		buf_printf(c->out, " [0x%llx-0x%llx)\n", (unsigned long long)at,
			   (unsigned long long)end);
		at = end;
	}
}

static void dump_node(struct dump_ctx *c, uint32_t node, unsigned depth)
{
	const struct sfile *sf = c->sf;
	const struct sfile_node *n = &sf->nodes[node];
	struct buf *out = c->out;
	indent(out, depth);
	buf_addstr(out, sfile_kind_name(n->kind));
	if (n->kind == SFILE_FUNCTION) {
		buf_addch(out, ' ');
		add_name(out, sfile_str(sf, n->name));
		if (n->file != SFILE_NONE) {
			buf_addstr(out, " at ");
			add_where(c, n->file, n->line, n->column);
		}
		buf_printf(out, " entry=0x%llx", (unsigned long long)n->addr);
		if (n->symbol != SFILE_NONE) {
			buf_addstr(out, " symbol=");
			add_name(out, sfile_str(sf, n->symbol));
		}
		if (n->origin != SFILE_NONE) {
			buf_addstr(out, " origin=");
			add_name(out, sfile_str(sf, sf->nodes[n->origin].name));
		}
	} else if (n->kind == SFILE_INLINE) {
		buf_addch(out, ' ');
		add_name(out, sfile_str(sf, n->name));
		buf_addstr(out, " called at ");
		add_where(c, n->file, n->line, n->column);
		if (n->decl_file != SFILE_NONE) {
			buf_addstr(out, " declared at ");
			add_where(c, n->decl_file, n->decl_line, 0);
		}
	} else {
		buf_addstr(out, " at ");
		add_where(c, n->file, n->line, n->column);
		if (n->latch_line) {
			buf_addstr(out, " latch=");
			if (n->latch_file == n->file)
				buf_printf(out, "%u", n->latch_line); /* the label's file */
			else
				add_where(c, n->latch_file, n->latch_line, 0);
			if (n->latch_column)
				buf_printf(out, ":%u", n->latch_column);
		}
		buf_printf(out, " header=0x%llx", (unsigned long long)n->addr);
		if (n->entries > 1)
			buf_printf(out, " entries=%u", n->entries);
	}
	add_flags(out, n->flags);
	add_spans(c, node);
	buf_addch(out, '\n');
	if (c->block_start[node] < c->block_start[node + 1]) {
		buf_printf(out, "%*sblocks", 2 * (int)(depth + 1), "");
		for (uint64_t k = c->block_start[node]; k < c->block_start[node + 1]; k++)
			buf_printf(out, " [0x%llx-0x%llx)",
				   (unsigned long long)sf->blocks[c->block[k]].lo,
				   (unsigned long long)sf->blocks[c->block[k]].hi);
		buf_addch(out, '\n');
	}
	/* Own statements and children, in address order. */
	uint64_t oi = c->own_start[node], oe = c->own_start[node + 1];
	uint32_t ci = c->child_start[node], ce = c->child_start[node + 1];
	while (oi < oe || ci < ce) {
		uint64_t own_at = oi < oe ? sf->ranges[c->own[oi]].lo : UINT64_MAX;
		uint64_t child_at = ci < ce ? first_addr(c, c->children[ci]) : UINT64_MAX;
		if (oi < oe && own_at <= child_at)
			dump_statements(c, &sf->ranges[c->own[oi++]], depth + 1);
		else
			dump_node(c, c->children[ci++], depth + 1);
	}
}

static void dump_module(const struct sfile *sf, struct buf *out)
{
	buf_printf(out, "fathom structure file %u.%u\nmodule ", sf->major, sf->minor);
	add_name(out, sf->path ? sf->path : "?");
	buf_addstr(out, "\n  build-id ");
	if (!sf->build_id_len)
		buf_addstr(out, "none");
	for (uint32_t i = 0; i < sf->build_id_len; i++)
		buf_printf(out, "%02x", sf->build_id[i]);
	buf_printf(out, "\n  machine %u\n  flags", sf->machine);
	bool any = false;
#define X(e, b, n)                                     \
	if (sf->flags & (1u << b)) {                   \
		buf_addstr(out, any ? "," n : " " n);  \
		any = true;                            \
	}
	SFILE_MODULE_FLAGS(X)
#undef X
	if (!any)
		buf_addstr(out, " none");
	buf_addstr(out, "\n  debug-file ");
	add_name(out, sf->debug_path ? sf->debug_path : "none");
	buf_printf(out, "\n  text %llu bytes, %u nodes, %llu ranges, %llu loop blocks, %llu line rows\n",
		   (unsigned long long)sf->text_bytes, sf->nnodes, (unsigned long long)sf->nranges,
		   (unsigned long long)sf->nblocks,
		   (unsigned long long)sf->nlines);
}

void sfile_dump(const struct sfile *sf, struct buf *out)
{
	struct dump_ctx c = { .sf = sf, .out = out };
	uint32_t n = sf->nnodes;
	dump_module(sf, out);
	c.child_start = xcalloc((size_t)n + 2, sizeof(uint32_t));
	c.children = xcalloc(n ? n : 1, sizeof(uint32_t));
	c.own_start = xcalloc((size_t)n + 2, sizeof(uint64_t));
	c.own = xcalloc(sf->nranges ? sf->nranges : 1, sizeof(uint64_t));
	c.spans = xcalloc(n ? n : 1, sizeof(*c.spans));
	c.nspans = xcalloc(n ? n : 1, sizeof(uint32_t));
	c.spans_cap = xcalloc(n ? n : 1, sizeof(uint32_t));
	/* Children and own rows as CSR arrays. */
	for (uint32_t i = 0; i < n; i++)
		if (sf->nodes[i].parent != SFILE_NONE)
			c.child_start[sf->nodes[i].parent + 1]++;
	for (uint32_t i = 0; i < n; i++)
		c.child_start[i + 1] += c.child_start[i];
	uint32_t *fill = xcalloc(n ? n : 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
		if (sf->nodes[i].parent != SFILE_NONE) {
			uint32_t p = sf->nodes[i].parent;
			c.children[c.child_start[p] + fill[p]++] = i;
		}
	for (uint64_t i = 0; i < sf->nranges; i++)
		c.own_start[sf->ranges[i].node + 1]++;
	for (uint32_t i = 0; i < n; i++)
		c.own_start[i + 1] += c.own_start[i];
	uint64_t *ofill = xcalloc(n ? n : 1, sizeof(uint64_t));
	for (uint64_t i = 0; i < sf->nranges; i++) {
		uint32_t node = sf->ranges[i].node;
		c.own[c.own_start[node] + ofill[node]++] = i;
		/* Parents come before children (the reader checked), so this walk ends. */
		for (uint32_t a = node; a != SFILE_NONE; a = sf->nodes[a].parent)
			add_span(&c, a, sf->ranges[i].lo, sf->ranges[i].hi);
	}
	c.block_start = xcalloc((size_t)n + 2, sizeof(uint64_t));
	c.block = xcalloc(sf->nblocks ? sf->nblocks : 1, sizeof(uint64_t));
	for (uint64_t i = 0; i < sf->nblocks; i++)
		c.block_start[sf->blocks[i].node + 1]++;
	for (uint32_t i = 0; i < n; i++)
		c.block_start[i + 1] += c.block_start[i];
	memset(ofill, 0, (n ? n : 1) * sizeof(uint64_t));
	for (uint64_t i = 0; i < sf->nblocks; i++) {
		uint32_t node = sf->blocks[i].node;
		c.block[c.block_start[node] + ofill[node]++] = i;
	}
	sort_ctx = &c;
	for (uint32_t i = 0; i < n; i++)
		qsort(c.children + c.child_start[i], c.child_start[i + 1] - c.child_start[i],
		      sizeof(uint32_t), by_address);
	/* Functions, grouped by declaration file. */
	uint32_t nfunc = 0;
	uint32_t *funcs = xcalloc(n ? n : 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < n; i++)
		if (sf->nodes[i].kind == SFILE_FUNCTION)
			funcs[nfunc++] = i;
	qsort(funcs, nfunc, sizeof(uint32_t), by_file_then_address);
	for (uint32_t i = 0; i < nfunc; i++) {
		uint32_t f = funcs[i];
		if (i == 0 || sf->nodes[f].file != sf->nodes[funcs[i - 1]].file) {
			buf_addstr(out, "  file ");
			add_name(out, sf->nodes[f].file == SFILE_NONE ? "?" : sfile_str(sf, sf->nodes[f].file));
			buf_addch(out, '\n');
		}
		dump_node(&c, f, 2);
	}
	sort_ctx = NULL;
	for (uint32_t i = 0; i < n; i++)
		free(c.spans[i]);
	free(funcs);
	free(fill);
	free(ofill);
	free(c.child_start);
	free(c.children);
	free(c.own_start);
	free(c.own);
	free(c.block_start);
	free(c.block);
	free(c.spans);
	free(c.nspans);
	free(c.spans_cap);
}
