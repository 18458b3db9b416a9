/* SPDX-License-Identifier: MIT */
/*
 * sfile-read.c: reads and validates a structure file (doc/struct-format.md); address lookups.
 * Nothing in the file is trusted: counts are checked against the chunk's size before anything
 * is allocated, every index against its table, every range against its neighbours.
 */
#include "compat.h"
#include "sfile.h"
#include "error.h"
#include "search.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

enum { MODL_PATH = 1, MODL_BUILD_ID = 2, MODL_MACHINE = 3, MODL_FLAGS = 4, MODL_DEBUG_PATH = 5,
       MODL_TEXT_BYTES = 6 };

/* Smallest encoding of one record of each table, for the count checks. */
#define NODE_MIN_BYTES 11
#define RANGE_MIN_BYTES 3
#define LINE_MIN_BYTES 5

/* A "+1" index: 0 means none, else INDEX + 1 with INDEX < COUNT. */
static int get_index(struct cf_stream *s, uint32_t *v, uint32_t count, const char *what)
{
	uint64_t x;
	if (cf_get_varint(s, &x) < 0)
		return -1;
	if (x > count)
		return cf_stream_error(s, "%s %llu out of range (%u)", what,
				       (unsigned long long)x - 1, count);
	*v = x ? (uint32_t)(x - 1) : SFILE_NONE;
	return 0;
}

static int module_field(struct cf_stream *s, void *arg, unsigned field, unsigned wire)
{
	struct sfile *sf = arg;
	uint64_t v;
	char *bytes = NULL;
	size_t len;
	switch (field) {
	case MODL_PATH: return cf_get_str_field(s, wire, SFILE_MAX_STRING, &sf->path);
	case MODL_DEBUG_PATH: return cf_get_str_field(s, wire, SFILE_MAX_STRING, &sf->debug_path);
	case MODL_BUILD_ID:
		if (cf_get_bytes_field(s, wire, "build-id", SFILE_MAX_BUILD_ID, &bytes, &len) < 0)
			return -1;
		free(sf->build_id);
		sf->build_id = (uint8_t *)bytes;
		sf->build_id_len = (uint32_t)len;
		return 0;
	case MODL_MACHINE:
	case MODL_FLAGS:
	case MODL_TEXT_BYTES:
		if (cf_get_varint_field(s, wire, &v) < 0)
			return -1;
		if (field != MODL_TEXT_BYTES && v > UINT32_MAX)
			return cf_stream_error(s, "field %u out of range", field);
		if (field == MODL_MACHINE)
			sf->machine = (uint32_t)v;
		else if (field == MODL_FLAGS)
			sf->flags = (uint32_t)v;
		else
			sf->text_bytes = v;
		return 0;
	default: return cf_skip_field(s, wire);
	}
}

static int read_module(struct cf_reader *r, struct sfile *sf)
{
	struct cf_stream s;
	if (cf_open_unique(r, SFILE_CHUNK_MODULE, &s) < 0)
		return -1;
	if (cf_read_fields(&s, module_field, sf) < 0 ||
	    (!sf->path && cf_stream_error(&s, "module without a path") < 0)) {
		cf_stream_free(&s);
		return -1;
	}
	return cf_stream_finish(&s);
}

static int read_strings(struct cf_reader *r, struct sfile *sf)
{
	return cf_read_string_table(r, SFILE_CHUNK_STRINGS, SFILE_MAX_STRING, &sf->strings,
				    &sf->nstrings);
}

const char *sfile_kind_name(unsigned kind)
{
	static const char *const names[] = { SFILE_KINDS(FTH_NAME_ENTRY) };
	return fth_name_at(names, ARRAY_SIZE(names), kind, "?");
}

static int check_node(struct cf_stream *s, const struct sfile *sf, uint32_t i)
{
	const struct sfile_node *n = &sf->nodes[i];
	if (n->kind < SFILE_FUNCTION || n->kind > SFILE_LOOP)
		return cf_stream_error(s, "node %u: unknown kind %u", i, n->kind);
	if (n->kind == SFILE_FUNCTION && n->parent != SFILE_NONE)
		return cf_stream_error(s, "node %u: a function with a parent", i);
	if (n->kind != SFILE_FUNCTION && (n->parent == SFILE_NONE || n->parent >= i))
		return cf_stream_error(s, "node %u: parent is missing or not before it", i);
	if (n->kind != SFILE_LOOP && n->name == SFILE_NONE)
		return cf_stream_error(s, "node %u: %s without a name", i, sfile_kind_name(n->kind));
	if (n->origin != SFILE_NONE && n->kind != SFILE_FUNCTION)
		return cf_stream_error(s, "node %u: a %s with an origin", i, sfile_kind_name(n->kind));
	return 0;
}

static int read_node(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct sfile *sf = arg;
	struct sfile_node *x = &sf->nodes[i];
	uint32_t ns = sf->nstrings;
	if (cf_get_u8(s, &x->kind) < 0 || get_index(s, &x->parent, (uint32_t)n, "parent") < 0 ||
	    get_index(s, &x->name, ns, "name") < 0 ||
	    get_index(s, &x->symbol, ns, "symbol") < 0 ||
	    get_index(s, &x->file, ns, "file") < 0 ||
	    cf_get_u32_max(s, &x->line, UINT32_MAX, "line") < 0 ||
	    cf_get_u32_max(s, &x->column, UINT32_MAX, "column") < 0 ||
	    cf_get_u32_max(s, &x->flags, UINT32_MAX, "flags") < 0 ||
	    cf_get_varint(s, &x->addr) < 0 ||
	    get_index(s, &x->origin, (uint32_t)n, "origin") < 0 ||
	    cf_get_u32_max(s, &x->entries, UINT32_MAX, "entries") < 0 ||
	    check_node(s, sf, (uint32_t)i) < 0)
		return -1;
	sf->nnodes = (uint32_t)i + 1;
	return 0;
}

/* A node's origin is another function. */
static int check_origins(struct cf_stream *s, void *arg)
{
	struct sfile *sf = arg;
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		uint32_t o = sf->nodes[i].origin;
		if (o != SFILE_NONE && (o == i || sf->nodes[o].kind != SFILE_FUNCTION))
			return cf_stream_error(s, "node %u: origin %u is not another function", i,
					       o);
	}
	return 0;
}

static int read_nodes(struct cf_reader *r, struct sfile *sf)
{
	static const struct cf_table nodes = { SFILE_CHUNK_NODES, UINT32_MAX - 1, NODE_MIN_BYTES,
					       "nodes", sizeof(*sf->nodes), read_node,
					       check_origins };
	return cf_read_table(r, &nodes, (void **)&sf->nodes, sf);
}

/* Read a table of sorted, disjoint [lo, hi) rows, each "gap, length" then EXTRA varints. */
static int get_interval(struct cf_stream *s, uint64_t *prev, uint64_t *lo, uint64_t *hi,
			uint64_t i)
{
	uint64_t gap, len;
	if (cf_get_varint(s, &gap) < 0 || cf_get_varint(s, &len) < 0)
		return -1;
	if (len == 0 || *prev + gap < *prev || *prev + gap + len < *prev + gap)
		return cf_stream_error(s, "row %llu: empty or overflowing address range",
				       (unsigned long long)i);
	*lo = *prev + gap;
	*hi = *lo + len;
	*prev = *hi;
	return 0;
}

/*
 * Table ID of records about nodes, one per node at most and MIN bytes each at least, each read
 * by READ: a chunk that a minor version added, absent in older files (where no node has such a
 * record).
 */
static int read_node_records(struct cf_reader *r, struct sfile *sf, uint32_t id, unsigned min,
			     const char *what,
			     int (*read)(struct cf_stream *s, void *arg, uint64_t k, uint64_t n))
{
	if (!cf_find(r, id, 0))
		return 0;
	const struct cf_table records = { id, sf->nnodes, min, what, 0, read, NULL };
	return cf_read_table(r, &records, NULL, sf);
}

/* The node a record is about. */
static int get_node(struct cf_stream *s, const struct sfile *sf, uint32_t *node)
{
	return cf_get_u32_max(s, node, sf->nnodes ? sf->nnodes - 1 : 0, "node");
}

/* Whether NODE, of which record K (a RECORD) tells, is of KIND (named A_KIND). */
static int check_node_kind(struct cf_stream *s, const struct sfile *sf, uint32_t node,
			   unsigned kind, const char *record, uint64_t k, const char *a_kind)
{
	if (sf->nodes[node].kind == kind)
		return 0;
	return cf_stream_error(s, "%s %llu: node %u is not %s", record, (unsigned long long)k, node,
			       a_kind);
}

/* Declaration K, of an inlined function. */
static int read_decl(struct cf_stream *s, void *arg, uint64_t k, uint64_t n)
{
	struct sfile *sf = arg;
	uint32_t node = 0, file = 0, line = 0;
	if (get_node(s, sf, &node) < 0 || cf_get_u32_max(s, &file, UINT32_MAX, "file") < 0 ||
	    cf_get_u32_max(s, &line, UINT32_MAX, "line") < 0)
		return -1;
	if (file >= sf->nstrings)
		return cf_stream_error(s, "declaration %llu: file %u out of range",
				       (unsigned long long)k, file);
	if (check_node_kind(s, sf, node, SFILE_INLINE, "declaration", k, "an inlined call") < 0)
		return -1;
	sf->nodes[node].decl_file = file;
	sf->nodes[node].decl_line = line;
	return 0;
}

/* The declarations of inlined functions: a chunk since 1.1, absent before (none known). */
static int read_decls(struct cf_reader *r, struct sfile *sf)
{
	for (uint32_t i = 0; i < sf->nnodes; i++)
		sf->nodes[i].decl_file = SFILE_NONE;
	return read_node_records(r, sf, SFILE_CHUNK_DECLS, 3, "declarations", read_decl);
}

/* Latch K, of a loop. */
static int read_latch(struct cf_stream *s, void *arg, uint64_t k, uint64_t n)
{
	struct sfile *sf = arg;
	uint32_t node = 0, file = SFILE_NONE, line = 0, column = 0;
	if (get_node(s, sf, &node) < 0 || get_index(s, &file, sf->nstrings, "file") < 0 ||
	    cf_get_u32_max(s, &line, UINT32_MAX, "line") < 0 ||
	    cf_get_u32_max(s, &column, UINT32_MAX, "column") < 0)
		return -1;
	if (check_node_kind(s, sf, node, SFILE_LOOP, "latch", k, "a loop") < 0)
		return -1;
	sf->nodes[node].latch_file = file;
	sf->nodes[node].latch_line = line;
	sf->nodes[node].latch_column = column;
	return 0;
}

/* The latch lines of loops: a chunk since 1.3, absent before (none known). */
static int read_latches(struct cf_reader *r, struct sfile *sf)
{
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		sf->nodes[i].latch_file = SFILE_NONE;
		sf->nodes[i].latch_line = sf->nodes[i].latch_column = 0;
	}
	return read_node_records(r, sf, SFILE_CHUNK_LATCHES, 4, "latches", read_latch);
}

/* What reading a table of address rows needs: the file, the end of the row before. */
struct rows {
	struct sfile *sf;
	uint64_t prev;
	struct sfile_range **out; /* RNGS and BLKS: where the rows go, and their count */
	uint64_t *count;
	bool loops;		  /* BLKS: each row's node is a loop */
};

/* A row of RNGS or BLKS (ROWS->LOOPS: its node must be a loop) into ROWS->OUT[I]. */
static int read_node_row(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct rows *rows = arg;
	struct sfile *sf = rows->sf;
	struct sfile_range *x = &(*rows->out)[i];
	uint64_t node;
	if (get_interval(s, &rows->prev, &x->lo, &x->hi, i) < 0 || cf_get_varint(s, &node) < 0)
		return -1;
	if (node >= sf->nnodes)
		return cf_stream_error(s, "row %llu: node %llu out of range",
				       (unsigned long long)i, (unsigned long long)node);
	if (rows->loops && sf->nodes[node].kind != SFILE_LOOP)
		return cf_stream_error(s, "row %llu: node %llu is not a loop",
				       (unsigned long long)i, (unsigned long long)node);
	x->node = (uint32_t)node;
	*rows->count = i + 1;
	return 0;
}

static int read_ranges(struct cf_reader *r, struct sfile *sf)
{
	static const struct cf_table ranges = { SFILE_CHUNK_RANGES, UINT64_MAX / 64,
						RANGE_MIN_BYTES, "ranges", sizeof(*sf->ranges),
						read_node_row, NULL };
	struct rows rows = { sf, 0, &sf->ranges, &sf->nranges, false };
	return cf_read_table(r, &ranges, (void **)&sf->ranges, &rows);
}

/* BLKS, since 1.4: absent in older files, which have no blocks. */
static int read_blocks(struct cf_reader *r, struct sfile *sf)
{
	static const struct cf_table blocks = { SFILE_CHUNK_BLOCKS, UINT64_MAX / 64,
						RANGE_MIN_BYTES, "loop blocks", sizeof(*sf->blocks),
						read_node_row, NULL };
	if (!cf_find(r, SFILE_CHUNK_BLOCKS, 0))
		return 0;
	struct rows rows = { sf, 0, &sf->blocks, &sf->nblocks, true };
	return cf_read_table(r, &blocks, (void **)&sf->blocks, &rows);
}

static int read_line(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct rows *rows = arg;
	struct sfile *sf = rows->sf;
	struct sfile_line *x = &sf->lines[i];
	if (get_interval(s, &rows->prev, &x->lo, &x->hi, i) < 0 ||
	    get_index(s, &x->file, sf->nstrings, "file") < 0 ||
	    cf_get_u32_max(s, &x->line, UINT32_MAX, "line") < 0 ||
	    cf_get_u32_max(s, &x->column, UINT32_MAX, "column") < 0)
		return -1;
	sf->nlines = i + 1;
	return 0;
}

static int read_lines(struct cf_reader *r, struct sfile *sf)
{
	static const struct cf_table lines = { SFILE_CHUNK_LINES, UINT64_MAX / 64, LINE_MIN_BYTES,
					       "line rows", sizeof(*sf->lines), read_line, NULL };
	struct rows rows = { sf, 0, NULL, NULL, false };
	return cf_read_table(r, &lines, (void **)&sf->lines, &rows);
}

/* Every table of an open structure file, each after those its checks need. */
static int read_tables(struct cf_reader *r, void *arg)
{
	struct sfile *sf = arg;
	if (read_module(r, sf) < 0 || read_strings(r, sf) < 0 || read_nodes(r, sf) < 0 ||
	    read_decls(r, sf) < 0 || read_latches(r, sf) < 0 || read_ranges(r, sf) < 0 ||
	    read_lines(r, sf) < 0 || read_blocks(r, sf) < 0)
		return -1;
	return 0;
}

int sfile_read(const char *path, struct sfile *sf)
{
	return sfile_read_memory(path, NULL, 0, sf);
}

int sfile_read_memory(const char *path, const void *data, size_t size, struct sfile *sf)
{
	memset(sf, 0, sizeof(*sf));
	if (cf_read_memory(path, data, size, SFILE_MAGIC, "fathom structure file", SFILE_MAJOR,
			   &sf->major, &sf->minor, read_tables, sf) == 0)
		return 0;
	sfile_release(sf);
	return -1;
}

void sfile_release(struct sfile *sf)
{
	free(sf->path);
	free(sf->debug_path);
	free(sf->build_id);
	free_strings(sf->strings, sf->nstrings);
	free(sf->nodes);
	free(sf->ranges);
	free(sf->lines);
	free(sf->blocks);
	memset(sf, 0, sizeof(*sf));
}

uint32_t sfile_lookup(const struct sfile *sf, uint64_t addr)
{
	uint64_t i = FTH_UPPER_BOUND(sf->ranges, sf->nranges, hi, addr);
	return i < sf->nranges && sf->ranges[i].lo <= addr ? sf->ranges[i].node : SFILE_NONE;
}

const struct sfile_line *sfile_line_at(const struct sfile *sf, uint64_t addr)
{
	uint64_t i = FTH_UPPER_BOUND(sf->lines, sf->nlines, hi, addr);
	return i < sf->nlines && sf->lines[i].lo <= addr ? &sf->lines[i] : NULL;
}

const char *sfile_str(const struct sfile *sf, uint32_t index)
{
	return index < sf->nstrings ? sf->strings[index] : "?";
}
