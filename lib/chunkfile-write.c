/* SPDX-License-Identifier: MIT */
/*
 * chunkfile-write.c: the async-signal-safe writer of the chunk container (doc/formats.md).
 *
 *   header (32 bytes) | chunk | chunk | ... | table of contents (40 bytes a chunk) | footer (32)
 *
 * The writer streams: raw bytes are staged in the workspace, compressed in pieces into one
 * zstd frame per chunk and written with write(2); the table of contents goes at the end, so
 * nothing is ever rewritten and a file that was cut short has no footer and is refused.
 * Stored (uncompressed) chunks stay staged until the stage is full or the file is finished:
 * a small file, a short process's profile, goes out in one write.
 */
#include "compat.h"
#include "chunkfile.h"
#include "crc32c.h"
#include "error.h"
#include "le.h"

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define STAGE_SIZE (64 * 1024)
_Static_assert(STAGE_SIZE >= CF_MAX_CHUNKS * CF_TOC_ENTRY_SIZE + CF_FOOTER_SIZE,
	       "the table of contents and the footer are staged whole");
#define ZSTD_WINDOW_LOG 17 /* bounds the compressor's memory: about 1 MiB at level 1-3 */

/* ---------------------------------------------------------------- writer */

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static ZSTD_compressionParameters writer_cparams(int level)
{
	ZSTD_compressionParameters cp = ZSTD_getCParams(level, 0, 0);
	if (cp.windowLog > ZSTD_WINDOW_LOG)
		cp.windowLog = ZSTD_WINDOW_LOG;
	if (cp.chainLog > ZSTD_WINDOW_LOG + 1)
		cp.chainLog = ZSTD_WINDOW_LOG + 1;
	if (cp.hashLog > ZSTD_WINDOW_LOG + 1)
		cp.hashLog = ZSTD_WINDOW_LOG + 1;
	return cp;
}

size_t cf_writer_workspace_size(int level)
{
	size_t n = align8(STAGE_SIZE) + align8(sizeof(struct cf_entry) * CF_MAX_CHUNKS);
	if (level > 0) {
		n += align8(ZSTD_CStreamOutSize());
		n += align8(ZSTD_estimateCStreamSize_usingCParams(writer_cparams(level)));
	}
	return n;
}

static int write_all(struct cf_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (w->failed)
		return -1;
	while (n) {
		ssize_t k = write(w->fd, b, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->failed = true;
			return fth_error_errno(errno, "%s: write failed at byte %llu", w->path,
					       (unsigned long long)w->written);
		}
		if (k == 0) {
			w->failed = true;
			return fth_error("%s: write returned 0 at byte %llu", w->path,
					 (unsigned long long)w->written);
		}
		b += k;
		n -= (size_t)k;
		w->written += (uint64_t)k;
	}
	return 0;
}

/* The file offset of the next byte: what was written and, stored, what is staged. */
static uint64_t next_offset(const struct cf_writer *w)
{
	return w->written + (w->zcs ? 0 : w->in_len);
}

/* Write the staged bytes of stored chunks. */
static int write_staged(struct cf_writer *w)
{
	int rc = write_all(w, w->in, w->in_len);
	w->in_len = w->chunk_start = 0;
	return rc;
}

int cf_writer_open(struct cf_writer *w, int fd, const char *path, const char magic[8],
		   uint16_t major, uint16_t minor, int level, void *workspace, size_t size)
{
	memset(w, 0, sizeof(*w));
	w->fd = fd;
	w->path = path;
	w->level = level;
	if (size < cf_writer_workspace_size(level) || ((uintptr_t)workspace & 7))
		return fth_error("%s: writer workspace too small or misaligned", path);
	uint8_t *ws = workspace;
	w->in = ws;
	w->in_cap = STAGE_SIZE;
	ws += align8(STAGE_SIZE);
	w->toc = (struct cf_entry *)ws;
	ws += align8(sizeof(struct cf_entry) * CF_MAX_CHUNKS);
	if (level > 0) {
		w->out = ws;
		w->out_cap = ZSTD_CStreamOutSize();
		ws += align8(w->out_cap);
		size_t zsize = ZSTD_estimateCStreamSize_usingCParams(writer_cparams(level));
		ZSTD_CStream *zcs = ZSTD_initStaticCStream(ws, zsize);
		if (!zcs)
			return fth_error("%s: cannot set up the zstd compressor", path);
		ZSTD_compressionParameters cp = writer_cparams(level);
		if (ZSTD_isError(ZSTD_CCtx_setParameter(zcs, ZSTD_c_compressionLevel, level)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(zcs, ZSTD_c_windowLog, (int)cp.windowLog)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(zcs, ZSTD_c_chainLog, (int)cp.chainLog)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(zcs, ZSTD_c_hashLog, (int)cp.hashLog)))
			return fth_error("%s: cannot configure the zstd compressor", path);
		w->zcs = zcs;
	}
	uint8_t h[CF_HEADER_SIZE] = { 0 };
	memcpy(h, magic, 8);
	le_put16(h + 8, major);
	le_put16(h + 10, minor);
	le_put32(h + 28, crc32c(0, h, 28));
	if (!w->zcs) {
		memcpy(w->in, h, sizeof(h)); /* staged with the chunks that follow */
		w->in_len = w->chunk_start = sizeof(h);
		return 0;
	}
	return write_all(w, h, sizeof(h));
}

int cf_chunk_begin(struct cf_writer *w, uint32_t id)
{
	if (w->failed)
		return -1;
	if (w->in_chunk)
		return fth_error("%s: chunk begun inside another", w->path);
	if (w->ntoc >= CF_MAX_CHUNKS)
		return fth_error("%s: more than %d chunks", w->path, CF_MAX_CHUNKS);
	memset(&w->cur, 0, sizeof(w->cur));
	w->cur.id = id;
	w->cur.flags = w->zcs ? CF_CHUNK_ZSTD : 0;
	w->cur.offset = next_offset(w);
	w->chunk_start = w->in_len; /* 0 when compressing: each chunk's end empties the stage */
	w->in_chunk = true;
	if (w->zcs && ZSTD_isError(ZSTD_CCtx_reset(w->zcs, ZSTD_reset_session_only)))
		return fth_error("%s: cannot reset the zstd compressor", w->path);
	return 0;
}

/*
 * Account for the current chunk's staged bytes and push them on: compressed (END finishes the
 * frame) and written, or, stored, written only when the stage is full (not at the chunk's
 * END: the next chunk is staged after it).
 */
static int flush_stage(struct cf_writer *w, bool end)
{
	size_t n = w->in_len - w->chunk_start;
	w->cur.crc = crc32c(w->cur.crc, w->in + w->chunk_start, n);
	w->cur.raw += n;
	if (!w->zcs) {
		w->cur.stored += n;
		w->cur.stored_crc = w->cur.crc;
		w->chunk_start = w->in_len;
		return end ? 0 : write_staged(w);
	}
	ZSTD_inBuffer in = { w->in, w->in_len, 0 };
	for (;;) {
		ZSTD_outBuffer out = { w->out, w->out_cap, 0 };
		size_t left = ZSTD_compressStream2(w->zcs, &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
		if (ZSTD_isError(left)) {
			w->failed = true;
			return fth_error("%s: zstd: %s", w->path, ZSTD_getErrorName(left));
		}
		if (write_all(w, w->out, out.pos) < 0)
			return -1;
		w->cur.stored += out.pos;
		w->cur.stored_crc = crc32c(w->cur.stored_crc, w->out, out.pos);
		if (end ? left == 0 : in.pos == in.size)
			break;
	}
	w->in_len = 0;
	return 0;
}

int cf_put(struct cf_writer *w, const void *p, size_t n)
{
	const uint8_t *b = p;
	if (w->failed)
		return -1;
	while (n) {
		size_t k = FTH_MIN(n, w->in_cap - w->in_len);
		memcpy(w->in + w->in_len, b, k);
		w->in_len += k;
		b += k;
		n -= k;
		if (w->in_len == w->in_cap && flush_stage(w, false) < 0)
			return -1;
	}
	return 0;
}

int cf_put_u8(struct cf_writer *w, uint8_t v)
{
	if (likely(w->in_len < w->in_cap && !w->failed)) {
		w->in[w->in_len++] = v;
		return w->in_len == w->in_cap ? flush_stage(w, false) : 0;
	}
	return cf_put(w, &v, 1);
}

int cf_put_varint(struct cf_writer *w, uint64_t v)
{
	if (likely(w->in_cap - w->in_len >= LE_VARINT_MAX && !w->failed)) {
		w->in_len += le_put_varint(w->in + w->in_len, v);
		return 0;
	}
	uint8_t tmp[LE_VARINT_MAX];
	return cf_put(w, tmp, le_put_varint(tmp, v));
}

int cf_put_u64(struct cf_writer *w, uint64_t v)
{
	uint8_t tmp[8];
	le_put64(tmp, v);
	return cf_put(w, tmp, 8);
}

int cf_put_bytes(struct cf_writer *w, const void *p, size_t n)
{
	if (cf_put_varint(w, n) < 0)
		return -1;
	return n ? cf_put(w, p, n) : 0;
}

int cf_put_str(struct cf_writer *w, const char *s)
{
	return cf_put_bytes(w, s, s ? strlen(s) : 0);
}

int cf_put_string_table(struct cf_writer *w, uint32_t id, char *const *strings, uint32_t n)
{
	if (cf_chunk_begin(w, id) < 0 || cf_put_varint(w, n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (cf_put_str(w, strings[i]) < 0)
			return -1;
	return cf_chunk_end(w);
}

int cf_chunk_end(struct cf_writer *w)
{
	if (w->failed)
		return -1;
	if (!w->in_chunk)
		return fth_error("%s: chunk ended outside a chunk", w->path);
	if (flush_stage(w, true) < 0)
		return -1;
	w->toc[w->ntoc++] = w->cur;
	w->in_chunk = false;
	return 0;
}

int cf_writer_finish(struct cf_writer *w)
{
	if (w->failed)
		return -1;
	if (w->in_chunk)
		return fth_error("%s: finished inside a chunk", w->path);
	/* The table and the footer go out in one write, staged after the stored chunks still
	 * there, or alone (the largest table, CF_MAX_CHUNKS entries, and the footer fit in the
	 * stage). */
	size_t tail = (size_t)w->ntoc * CF_TOC_ENTRY_SIZE + CF_FOOTER_SIZE;
	if (w->in_cap - w->in_len < tail && write_staged(w) < 0)
		return -1;
	uint64_t toc_offset = next_offset(w);
	uint32_t toc_crc = 0;
	uint8_t *t = w->in + w->in_len;
	for (uint32_t i = 0; i < w->ntoc; i++, t += CF_TOC_ENTRY_SIZE) {
		const struct cf_entry *e = &w->toc[i];
		memset(t, 0, CF_TOC_ENTRY_SIZE);
		le_put32(t, e->id);
		le_put32(t + 4, e->flags);
		le_put64(t + 8, e->offset);
		le_put64(t + 16, e->stored);
		le_put64(t + 24, e->raw);
		le_put32(t + 32, e->crc);
		le_put32(t + 36, e->stored_crc);
		toc_crc = crc32c(toc_crc, t, CF_TOC_ENTRY_SIZE);
	}
	uint8_t *f = t;
	memset(f, 0, CF_FOOTER_SIZE);
	le_put64(f, toc_offset);
	le_put32(f + 8, w->ntoc);
	le_put32(f + 12, toc_crc);
	le_put32(f + 20, crc32c(0, f, 20));
	memcpy(f + 24, CF_END_MAGIC, 8);
	w->in_len = (size_t)(f + CF_FOOTER_SIZE - w->in);
	return write_staged(w);
}

int cf_field_varint(struct cf_writer *w, unsigned field, uint64_t v)
{
	if (cf_put_varint(w, (uint64_t)field << 2 | CF_WIRE_VARINT) < 0)
		return -1;
	return cf_put_varint(w, v);
}

int cf_field_bytes(struct cf_writer *w, unsigned field, const void *p, size_t n)
{
	if (cf_put_varint(w, (uint64_t)field << 2 | CF_WIRE_BYTES) < 0)
		return -1;
	return cf_put_bytes(w, p, n);
}

int cf_field_str(struct cf_writer *w, unsigned field, const char *s)
{
	return cf_field_bytes(w, field, s, s ? strlen(s) : 0);
}

int cf_field_fixed64(struct cf_writer *w, unsigned field, uint64_t v)
{
	if (cf_put_varint(w, (uint64_t)field << 2 | CF_WIRE_FIXED64) < 0)
		return -1;
	return cf_put_u64(w, v);
}

int cf_record_end(struct cf_writer *w)
{
	return cf_put_u8(w, 0);
}

