/* SPDX-License-Identifier: MIT */
/* sfile-write.c: writes a structure file (doc/struct-format.md) through the chunk container. */
#include "compat.h"
#include "sfile.h"
#include "error.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field numbers of the MODL record. */
enum { MODL_PATH = 1, MODL_BUILD_ID = 2, MODL_MACHINE = 3, MODL_FLAGS = 4, MODL_DEBUG_PATH = 5,
       MODL_TEXT_BYTES = 6 };

static uint64_t plus_one(uint32_t v)
{
	return v == SFILE_NONE ? 0 : (uint64_t)v + 1;
}

static int write_module(struct cf_writer *w, const struct sfile *sf)
{
	if (cf_chunk_begin(w, SFILE_CHUNK_MODULE) < 0 ||
	    cf_field_str(w, MODL_PATH, sf->path ? sf->path : "") < 0 ||
	    (sf->build_id_len &&
	     cf_field_bytes(w, MODL_BUILD_ID, sf->build_id, sf->build_id_len) < 0) ||
	    cf_field_varint(w, MODL_MACHINE, sf->machine) < 0 ||
	    cf_field_varint(w, MODL_FLAGS, sf->flags) < 0 ||
	    (sf->debug_path && cf_field_str(w, MODL_DEBUG_PATH, sf->debug_path) < 0) ||
	    cf_field_varint(w, MODL_TEXT_BYTES, sf->text_bytes) < 0 || cf_record_end(w) < 0)
		return -1;
	return cf_chunk_end(w);
}

static int write_nodes(struct cf_writer *w, const struct sfile *sf)
{
	if (cf_chunk_begin(w, SFILE_CHUNK_NODES) < 0 || cf_put_varint(w, sf->nnodes) < 0)
		return -1;
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		const struct sfile_node *n = &sf->nodes[i];
		if (cf_put_u8(w, n->kind) < 0 || cf_put_varint(w, plus_one(n->parent)) < 0 ||
		    cf_put_varint(w, plus_one(n->name)) < 0 ||
		    cf_put_varint(w, plus_one(n->symbol)) < 0 ||
		    cf_put_varint(w, plus_one(n->file)) < 0 || cf_put_varint(w, n->line) < 0 ||
		    cf_put_varint(w, n->column) < 0 || cf_put_varint(w, n->flags) < 0 ||
		    cf_put_varint(w, n->addr) < 0 || cf_put_varint(w, plus_one(n->origin)) < 0 ||
		    cf_put_varint(w, n->entries) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static bool has_decl(const struct sfile_node *x)
{
	return x->kind == SFILE_INLINE && x->decl_file != SFILE_NONE;
}

static bool has_latch(const struct sfile_node *x)
{
	return x->kind == SFILE_LOOP && x->latch_line != 0;
}

/* Start chunk ID of records about the nodes that HAS a record: the count of them first. */
static int begin_node_records(struct cf_writer *w, const struct sfile *sf, uint32_t id,
			      bool (*has)(const struct sfile_node *))
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < sf->nnodes; i++)
		n += has(&sf->nodes[i]);
	return cf_chunk_begin(w, id) < 0 || cf_put_varint(w, n) < 0 ? -1 : 0;
}

/* The declarations of inlined functions (since 1.1): the nodes that have one. */
static int write_decls(struct cf_writer *w, const struct sfile *sf)
{
	if (begin_node_records(w, sf, SFILE_CHUNK_DECLS, has_decl) < 0)
		return -1;
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		const struct sfile_node *x = &sf->nodes[i];
		if (!has_decl(x))
			continue;
		if (cf_put_varint(w, i) < 0 || cf_put_varint(w, x->decl_file) < 0 ||
		    cf_put_varint(w, x->decl_line) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

/* The latch lines of loops (since 1.3): the loops that have one. */
static int write_latches(struct cf_writer *w, const struct sfile *sf)
{
	if (begin_node_records(w, sf, SFILE_CHUNK_LATCHES, has_latch) < 0)
		return -1;
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		const struct sfile_node *x = &sf->nodes[i];
		if (!has_latch(x))
			continue;
		if (cf_put_varint(w, i) < 0 || cf_put_varint(w, plus_one(x->latch_file)) < 0 ||
		    cf_put_varint(w, x->latch_line) < 0 || cf_put_varint(w, x->latch_column) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

/* A table of address rows of nodes (RNGS, BLKS): sorted, disjoint, non-empty. */
static int write_node_rows(struct cf_writer *w, uint32_t id, const struct sfile_range *rows,
			   uint64_t n, uint32_t nnodes, const char *what)
{
	if (cf_chunk_begin(w, id) < 0 || cf_put_varint(w, n) < 0)
		return -1;
	uint64_t prev = 0;
	for (uint64_t i = 0; i < n; i++) {
		const struct sfile_range *r = &rows[i];
		if (r->lo < prev || r->hi <= r->lo || r->node >= nnodes)
			return fth_error("%s %llu is not sorted, empty or has a bad node", what,
					 (unsigned long long)i);
		if (cf_put_varint(w, r->lo - prev) < 0 || cf_put_varint(w, r->hi - r->lo) < 0 ||
		    cf_put_varint(w, r->node) < 0)
			return -1;
		prev = r->hi;
	}
	return cf_chunk_end(w);
}

static int write_lines(struct cf_writer *w, const struct sfile *sf)
{
	if (cf_chunk_begin(w, SFILE_CHUNK_LINES) < 0 || cf_put_varint(w, sf->nlines) < 0)
		return -1;
	uint64_t prev = 0;
	for (uint64_t i = 0; i < sf->nlines; i++) {
		const struct sfile_line *l = &sf->lines[i];
		if (l->lo < prev || l->hi <= l->lo)
			return fth_error("line row %llu is not sorted or empty",
					 (unsigned long long)i);
		if (cf_put_varint(w, l->lo - prev) < 0 || cf_put_varint(w, l->hi - l->lo) < 0 ||
		    cf_put_varint(w, plus_one(l->file)) < 0 || cf_put_varint(w, l->line) < 0 ||
		    cf_put_varint(w, l->column) < 0)
			return -1;
		prev = l->hi;
	}
	return cf_chunk_end(w);
}

int sfile_write(const char *path, const struct sfile *sf, int level)
{
	return sfile_write_at(AT_FDCWD, path, path, sf, level);
}

int sfile_write_at(int dirfd, const char *name, const char *path, const struct sfile *sf,
		   int level)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return fth_error_errno(errno, "%s: cannot create", path);
	size_t ws_size = cf_writer_workspace_size(level);
	void *ws = xmalloc(ws_size);
	struct cf_writer w;
	int rc = cf_writer_open(&w, fd, path, SFILE_MAGIC, SFILE_MAJOR, SFILE_MINOR, level, ws,
				ws_size);
	if (rc == 0)
		rc = write_module(&w, sf) < 0 ||
			     cf_put_string_table(&w, SFILE_CHUNK_STRINGS, sf->strings,
						 sf->nstrings) < 0 ||
			     write_nodes(&w, sf) < 0 || write_decls(&w, sf) < 0 ||
			     write_latches(&w, sf) < 0 ||
			     write_node_rows(&w, SFILE_CHUNK_RANGES, sf->ranges, sf->nranges,
					     sf->nnodes, "structure range") < 0 ||
			     write_lines(&w, sf) < 0 ||
			     write_node_rows(&w, SFILE_CHUNK_BLOCKS, sf->blocks, sf->nblocks,
					     sf->nnodes, "loop block") < 0 ||
			     cf_writer_finish(&w) < 0
			? -1
			: 0;
	free(ws);
	if (close(fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: close failed", path);
	if (rc < 0) {
		if (strncmp(fth_errmsg(), path, strlen(path)) != 0)
			fth_error_prefix("%s", path);
		unlinkat(dirfd, name, 0);
	}
	return rc;
}
