/* SPDX-License-Identifier: MIT */
/*
 * chunkfile-read.c: the validating reader of the chunk container (doc/formats.md), for the
 * offline tools: header, footer and table of contents are checked before any chunk is read,
 * and chunks are decompressed in windows so that memory stays bounded.
 */
#include "compat.h"
#include "chunkfile.h"
#include "crc32c.h"
#include "error.h"
#include "input.h"
#include "le.h"
#include "xalloc.h"

#include <zstd.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* zstd cannot expand a frame by more than this ratio; anything claiming more is corrupt. */
#define MAX_ZSTD_RATIO 32768u
#define MAX_RAW_SIZE ((uint64_t)1 << 40)

const char *cf_id_name(uint32_t id, char buf[5])
{
	for (int i = 0; i < 4; i++) {
		char c = (char)(id >> (8 * i));
		buf[i] = (c >= 0x20 && c < 0x7f) ? c : '?';
	}
	buf[4] = '\0';
	return buf;
}

static int pread_all(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *b = p;
	if (fd < 0)
		return -EBADF;
	while (n) {
		ssize_t k = pread(fd, b, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			return -EIO; /* the file ends early */
		b += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int cf_pread(int fd, const char *path, void *p, size_t n, uint64_t off)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = pread(fd, b, n, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? fth_error_errno(errno, "%s: cannot read", path)
				     : fth_error("%s: truncated", path);
		b += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* N bytes at OFF of R's file, or of the bytes it was opened on. */
static int reader_pread(const struct cf_reader *r, void *p, size_t n, uint64_t off)
{
	if (!r->mem)
		return pread_all(r->fd, p, n, off);
	if (off > r->size || n > r->size - off)
		return -EIO;
	memcpy(p, r->mem + off, n);
	return 0;
}

static int toc_cmp(const void *a, const void *b)
{
	const struct cf_entry *x = a, *y = b;
	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int open_fail(struct cf_reader *r)
{
	cf_close(r);
	return -1;
}

static int validate(struct cf_reader *r, const char *path, const char magic[8], const char *kind,
		    uint16_t max_major);

int cf_open(struct cf_reader *r, const char *path, const char magic[8], const char *kind,
	    uint16_t max_major)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->path = xstrdup(path);
	struct stat st;
	r->fd = input_open(path, &st);
	if (r->fd < 0)
		return open_fail(r);
	r->size = (uint64_t)st.st_size;
	return validate(r, path, magic, kind, max_major);
}

int cf_open_memory(struct cf_reader *r, const char *path, const void *data, size_t size,
		   const char magic[8], const char *kind, uint16_t max_major)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->path = xstrdup(path);
	r->mem = data;
	r->size = size;
	return validate(r, path, magic, kind, max_major);
}

static int validate(struct cf_reader *r, const char *path, const char magic[8], const char *kind,
		    uint16_t max_major)
{
	uint8_t h[CF_HEADER_SIZE];
	if (r->size < 8)
		return fth_error("%s: %s (%llu bytes): not yet written, cut short, or not a %s",
				 path, r->size ? "too short for its magic number" : "empty",
				 (unsigned long long)r->size, kind), open_fail(r);
	if (reader_pread(r, h, 8, 0) < 0 || memcmp(h, magic, 8) != 0) {
		if (memcmp(h, "FTHM", 4) == 0)
			return fth_error("%s: not a %s (it is a fathom '%.8s' file)", path, kind,
					 (const char *)h), open_fail(r);
		return fth_error("%s: not a %s (wrong magic number)", path, kind), open_fail(r);
	}
	if (r->size < CF_HEADER_SIZE + CF_FOOTER_SIZE || reader_pread(r, h, sizeof(h), 0) < 0)
		return fth_error("%s: truncated: %llu bytes, shorter than header and footer", path,
				 (unsigned long long)r->size), open_fail(r);
	memcpy(r->magic, h, 8);
	r->major = le_get16(h + 8);
	r->minor = le_get16(h + 10);
	if (CF_VERIFY_CHECKSUMS && le_get32(h + 28) != crc32c(0, h, 28))
		return fth_error("%s: corrupt header (checksum mismatch)", path), open_fail(r);
	if (r->major > max_major || r->major == 0)
		return fth_error("%s: %s format version %u.%u is not supported (this build reads "
				 "major version%s up to %u)", path, kind, r->major, r->minor,
				 max_major > 1 ? "s" : "", max_major), open_fail(r);
	uint8_t f[CF_FOOTER_SIZE];
	int rc = reader_pread(r, f, sizeof(f), r->size - CF_FOOTER_SIZE);
	if (rc < 0)
		return fth_error_errno(-rc, "%s: cannot read footer", path), open_fail(r);
	if (memcmp(f + 24, CF_END_MAGIC, 8) != 0)
		return fth_error("%s: truncated or unfinished: no end marker (was the writer "
				 "interrupted?)", path), open_fail(r);
	if (CF_VERIFY_CHECKSUMS && le_get32(f + 20) != crc32c(0, f, 20))
		return fth_error("%s: corrupt footer (checksum mismatch)", path), open_fail(r);
	uint64_t toc_off = le_get64(f);
	r->nchunks = le_get32(f + 8);
	uint64_t toc_end = r->size - CF_FOOTER_SIZE;
	if (r->nchunks > CF_MAX_CHUNKS || toc_off < CF_HEADER_SIZE || toc_off > toc_end ||
	    (toc_end - toc_off) != (uint64_t)r->nchunks * CF_TOC_ENTRY_SIZE)
		return fth_error("%s: corrupt table of contents (%u chunks at byte %llu in a "
				 "%llu-byte file)", path, r->nchunks, (unsigned long long)toc_off,
				 (unsigned long long)r->size), open_fail(r);
	size_t toc_bytes = (size_t)r->nchunks * CF_TOC_ENTRY_SIZE;
	uint8_t *t = xmalloc(toc_bytes);
	if (reader_pread(r, t, toc_bytes, toc_off) < 0) {
		free(t);
		return fth_error("%s: cannot read table of contents", path), open_fail(r);
	}
	if (CF_VERIFY_CHECKSUMS && crc32c(0, t, toc_bytes) != le_get32(f + 12)) {
		free(t);
		return fth_error("%s: corrupt table of contents (checksum mismatch)", path),
		       open_fail(r);
	}
	r->toc = xcalloc(r->nchunks ? r->nchunks : 1, sizeof(*r->toc));
	for (uint32_t i = 0; i < r->nchunks; i++) {
		const uint8_t *e = t + (size_t)i * CF_TOC_ENTRY_SIZE;
		struct cf_entry *c = &r->toc[i];
		c->id = le_get32(e);
		c->flags = le_get32(e + 4);
		c->offset = le_get64(e + 8);
		c->stored = le_get64(e + 16);
		c->raw = le_get64(e + 24);
		c->crc = le_get32(e + 32);
		c->stored_crc = le_get32(e + 36);
		char nm[5];
		bool bad = c->offset < CF_HEADER_SIZE || c->offset > toc_off ||
			   c->stored > toc_off - c->offset || (c->flags & ~CF_CHUNK_ZSTD) ||
			   c->raw > MAX_RAW_SIZE;
		if (!bad && !(c->flags & CF_CHUNK_ZSTD))
			bad = c->raw != c->stored || (CF_VERIFY_CHECKSUMS && c->crc != c->stored_crc);
		if (!bad && (c->flags & CF_CHUNK_ZSTD))
			bad = c->stored == 0 || c->raw / MAX_ZSTD_RATIO > c->stored;
		if (bad) {
			free(t);
			return fth_error("%s: corrupt table of contents: chunk %u (%s) has offset "
					 "%llu, size %llu, raw size %llu, flags %#x", path, i,
					 cf_id_name(c->id, nm), (unsigned long long)c->offset,
					 (unsigned long long)c->stored, (unsigned long long)c->raw,
					 c->flags), open_fail(r);
		}
	}
	free(t);
	/* Chunks must not overlap. */
	struct cf_entry *sorted = xcalloc(r->nchunks ? r->nchunks : 1, sizeof(*sorted));
	memcpy(sorted, r->toc, r->nchunks * sizeof(*sorted));
	qsort(sorted, r->nchunks, sizeof(*sorted), toc_cmp);
	for (uint32_t i = 1; i < r->nchunks; i++) {
		uint64_t at = sorted[i].offset;
		if (sorted[i - 1].offset + sorted[i - 1].stored > at) {
			free(sorted);
			return fth_error("%s: corrupt table of contents: chunks overlap at byte %llu",
					 path, (unsigned long long)at), open_fail(r);
		}
	}
	free(sorted);
	return 0;
}

void cf_close(struct cf_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->toc);
	free(r->path);
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

const struct cf_entry *cf_find(const struct cf_reader *r, uint32_t id, unsigned nth)
{
	for (uint32_t i = 0; i < r->nchunks; i++)
		if (r->toc[i].id == id && nth-- == 0)
			return &r->toc[i];
	return NULL;
}

#define ZIN_SIZE (128 * 1024)
#define WIN_SIZE (256 * 1024)

int cf_stream_error(struct cf_stream *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	fth_vformat(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	uint64_t at = s->produced - (uint64_t)(s->end - s->p);
	return fth_error("%s: %s: %s (at byte %llu of %llu)", s->r->path, s->what, msg,
			 (unsigned long long)at, (unsigned long long)s->e->raw);
}

int cf_stream_open(struct cf_reader *r, const struct cf_entry *e, struct cf_stream *s)
{
	memset(s, 0, sizeof(*s));
	s->r = r;
	s->e = e;
	char nm[5];
	fth_format(s->what, sizeof(s->what), "chunk %s", cf_id_name(e->id, nm));
	s->win_cap = (size_t)FTH_MIN((uint64_t)WIN_SIZE, e->raw + 16);
	if (s->win_cap < 64)
		s->win_cap = 64;
	s->win = xmalloc(s->win_cap);
	s->p = s->end = s->win;
	if (e->flags & CF_CHUNK_ZSTD) {
		s->zds = ZSTD_createDStream();
		if (!s->zds) {
			cf_stream_free(s);
			return fth_error("%s: cannot create a zstd decompressor", r->path);
		}
		s->zin = xmalloc(ZIN_SIZE);
	}
	s->done = e->raw == 0 && !(e->flags & CF_CHUNK_ZSTD);
	return 0;
}

void cf_stream_free(struct cf_stream *s)
{
	if (s->zds)
		ZSTD_freeDStream(s->zds);
	free(s->zin);
	free(s->win);
	s->zds = NULL;
	s->zin = s->win = NULL;
}

/* Produce more raw bytes at the end of the window. */
static int refill(struct cf_stream *s)
{
	const struct cf_entry *e = s->e;
	uint8_t *dst = (uint8_t *)s->end;
	size_t room = s->win_cap - (size_t)(s->end - s->win);
	size_t got = 0;
	if (!(e->flags & CF_CHUNK_ZSTD)) {
		size_t n = (size_t)FTH_MIN((uint64_t)room, e->raw - s->produced);
		int rc = reader_pread(s->r, dst, n, e->offset + s->produced);
		if (rc < 0)
			return fth_error_errno(-rc, "%s: %s: read failed", s->r->path, s->what);
		got = n;
	} else {
		while (got == 0) {
			if (s->zin_pos == s->zin_len) {
				size_t n = (size_t)FTH_MIN((uint64_t)ZIN_SIZE, e->stored - s->zin_off);
				if (n == 0)
					return cf_stream_error(s, "compressed data ends early");
				int rc = reader_pread(s->r, s->zin, n, e->offset + s->zin_off);
				if (rc < 0)
					return fth_error_errno(-rc, "%s: %s: read failed", s->r->path,
							       s->what);
				s->zin_off += n;
				s->stored_crc = crc32c(s->stored_crc, s->zin, n);
				s->zin_len = n;
				s->zin_pos = 0;
			}
			ZSTD_inBuffer in = { s->zin, s->zin_len, s->zin_pos };
			ZSTD_outBuffer out = { dst, room, 0 };
			size_t rc = ZSTD_decompressStream(s->zds, &out, &in);
			s->zin_pos = in.pos;
			if (ZSTD_isError(rc))
				return cf_stream_error(s, "corrupt compressed data (zstd: %s)",
						       ZSTD_getErrorName(rc));
			got = out.pos;
			if (rc == 0) { /* frame complete */
				if (s->zin_pos != s->zin_len || s->zin_off != e->stored)
					return cf_stream_error(s, "data after the end of the frame");
				s->frame_done = true;
				break;
			}
		}
		if (s->produced + got > e->raw)
			return cf_stream_error(s, "decompresses to more than its %llu bytes",
					       (unsigned long long)e->raw);
	}
	s->crc = crc32c(s->crc, dst, got);
	s->produced += got;
	s->end += got;
	if (s->produced == e->raw)
		s->done = true;
	else if (got == 0 && (e->flags & CF_CHUNK_ZSTD))
		return cf_stream_error(s, "decompresses to %llu bytes, expected %llu",
				       (unsigned long long)s->produced,
				       (unsigned long long)e->raw);
	return 0;
}

long cf_need(struct cf_stream *s, size_t n)
{
	while ((size_t)(s->end - s->p) < n && !s->done) {
		size_t have = (size_t)(s->end - s->p);
		if (s->p != s->win) {
			memmove(s->win, s->p, have);
			s->p = s->win;
			s->end = s->win + have;
		}
		if (n > s->win_cap) {
			s->win_cap = n + WIN_SIZE;
			uint8_t *w = xrealloc(s->win, s->win_cap);
			s->p = w;
			s->end = w + have;
			s->win = w;
		}
		if (refill(s) < 0)
			return -1;
	}
	return (long)(s->end - s->p);
}

/* After the last raw byte: read the rest of the zstd frame, which must produce nothing. */
static int drain_frame(struct cf_stream *s)
{
	uint8_t scratch[16];
	while (!s->frame_done) {
		if (s->zin_pos == s->zin_len) {
			size_t n = (size_t)FTH_MIN((uint64_t)ZIN_SIZE, s->e->stored - s->zin_off);
			if (n == 0)
				return cf_stream_error(s, "compressed data ends early");
			int rc = reader_pread(s->r, s->zin, n, s->e->offset + s->zin_off);
			if (rc < 0)
				return fth_error_errno(-rc, "%s: %s: read failed", s->r->path, s->what);
			s->zin_off += n;
			s->stored_crc = crc32c(s->stored_crc, s->zin, n);
			s->zin_len = n;
			s->zin_pos = 0;
		}
		ZSTD_inBuffer in = { s->zin, s->zin_len, s->zin_pos };
		ZSTD_outBuffer out = { scratch, sizeof(scratch), 0 };
		size_t rc = ZSTD_decompressStream(s->zds, &out, &in);
		s->zin_pos = in.pos;
		if (ZSTD_isError(rc))
			return cf_stream_error(s, "corrupt compressed data (zstd: %s)",
					       ZSTD_getErrorName(rc));
		if (out.pos)
			return cf_stream_error(s, "decompresses to more than its %llu bytes",
					       (unsigned long long)s->e->raw);
		if (rc == 0) {
			if (s->zin_pos != s->zin_len || s->zin_off != s->e->stored)
				return cf_stream_error(s, "data after the end of the frame");
			s->frame_done = true;
		}
	}
	return 0;
}

int cf_stream_finish(struct cf_stream *s)
{
	int rc = 0;
	if (cf_need(s, 1) < 0)
		rc = -1;
	else if (s->zds && drain_frame(s) < 0)
		rc = -1;
	else if (s->p != s->end)
		rc = cf_stream_error(s, "%llu unexpected bytes after the data",
				     (unsigned long long)(s->end - s->p));
	else if (CF_VERIFY_CHECKSUMS && s->crc != s->e->crc)
		rc = fth_error("%s: %s: checksum mismatch (data corrupt)", s->r->path, s->what);
	else if (CF_VERIFY_CHECKSUMS && (s->e->flags & CF_CHUNK_ZSTD) &&
		 (s->zin_off != s->e->stored || s->stored_crc != s->e->stored_crc))
		rc = fth_error("%s: %s: checksum of the compressed bytes does not match (data "
			       "corrupt)", s->r->path, s->what);
	cf_stream_free(s);
	return rc;
}

int cf_get_varint(struct cf_stream *s, uint64_t *v)
{
	if (likely(s->end - s->p >= LE_VARINT_MAX) || cf_need(s, LE_VARINT_MAX) >= 0) {
		if (le_get_varint(&s->p, s->end, v) == 0)
			return 0;
		return cf_stream_error(s, s->p == s->end ? "data ends early" : "malformed number");
	}
	return -1;
}

int cf_get_u8(struct cf_stream *s, uint8_t *v)
{
	if (unlikely(s->p == s->end)) {
		long n = cf_need(s, 1);
		if (n < 0)
			return -1;
		if (n == 0)
			return cf_stream_error(s, "data ends early");
	}
	*v = *s->p++;
	return 0;
}

int cf_get_u64(struct cf_stream *s, uint64_t *v)
{
	long n = cf_need(s, 8);
	if (n < 0)
		return -1;
	if (n < 8)
		return cf_stream_error(s, "data ends early");
	*v = le_get64(s->p);
	s->p += 8;
	return 0;
}

int cf_get_bytes(struct cf_stream *s, size_t max, char **out, size_t *len)
{
	uint64_t n;
	if (cf_get_varint(s, &n) < 0)
		return -1;
	if (n > max)
		return cf_stream_error(s, "string of %llu bytes is longer than the limit of %zu",
				       (unsigned long long)n, max);
	if (n > s->e->raw - (s->produced - (uint64_t)(s->end - s->p)))
		return cf_stream_error(s, "string of %llu bytes runs past the end",
				       (unsigned long long)n);
	char *d = xmalloc((size_t)n + 1);
	size_t done = 0;
	while (done < n) {
		long have = cf_need(s, 1);
		if (have <= 0) {
			free(d);
			return have < 0 ? -1 : cf_stream_error(s, "data ends early");
		}
		size_t k = FTH_MIN((size_t)have, (size_t)n - done);
		memcpy(d + done, s->p, k);
		s->p += k;
		done += k;
	}
	d[n] = '\0';
	*out = d;
	if (len)
		*len = (size_t)n;
	return 0;
}

int cf_get_tag(struct cf_stream *s, unsigned *field, unsigned *wire)
{
	uint64_t t;
	if (cf_get_varint(s, &t) < 0)
		return -1;
	if ((t >> 2) > 0xffff)
		return cf_stream_error(s, "bad field tag %llu", (unsigned long long)t);
	*field = (unsigned)(t >> 2);
	*wire = (unsigned)(t & 3);
	if (*field == 0 && *wire != 0)
		return cf_stream_error(s, "bad field tag %llu", (unsigned long long)t);
	return 0;
}

int cf_skip_field(struct cf_stream *s, unsigned wire)
{
	uint64_t v;
	switch (wire) {
	case CF_WIRE_VARINT:
		return cf_get_varint(s, &v);
	case CF_WIRE_FIXED64:
		return cf_get_u64(s, &v);
	case CF_WIRE_BYTES: {
		if (cf_get_varint(s, &v) < 0)
			return -1;
		while (v) {
			long have = cf_need(s, 1);
			if (have <= 0)
				return have < 0 ? -1 : cf_stream_error(s, "data ends early");
			size_t k = (size_t)FTH_MIN((uint64_t)have, v);
			s->p += k;
			v -= k;
		}
		return 0;
	}
	default:
		return cf_stream_error(s, "unknown field type %u", wire);
	}
}

int cf_read_chunk(struct cf_reader *r, const struct cf_entry *e, uint8_t **data, size_t *len)
{
	struct cf_stream s;
	if (cf_stream_open(r, e, &s) < 0)
		return -1;
	uint8_t *d = xmalloc((size_t)e->raw + 1);
	size_t done = 0;
	while (done < e->raw) {
		long have = cf_need(&s, 1);
		if (have <= 0) {
			free(d);
			if (have == 0)
				cf_stream_error(&s, "data ends early");
			cf_stream_free(&s);
			return -1;
		}
		memcpy(d + done, s.p, (size_t)have);
		s.p += have;
		done += (size_t)have;
	}
	if (cf_stream_finish(&s) < 0) {
		free(d);
		return -1;
	}
	d[done] = 0;
	*data = d;
	*len = done;
	return 0;
}

int cf_read_file(const char *path, const char magic[8], const char *kind, uint16_t max_major,
		 uint16_t *major, uint16_t *minor, int (*read)(struct cf_reader *r, void *arg),
		 void *arg)
{
	return cf_read_memory(path, NULL, 0, magic, kind, max_major, major, minor, read, arg);
}

int cf_read_memory(const char *path, const void *data, size_t size, const char magic[8],
		   const char *kind, uint16_t max_major, uint16_t *major, uint16_t *minor,
		   int (*read)(struct cf_reader *r, void *arg), void *arg)
{
	struct cf_reader r;
	if ((data ? cf_open_memory(&r, path, data, size, magic, kind, max_major)
		  : cf_open(&r, path, magic, kind, max_major)) < 0)
		return -1;
	if (major)
		*major = r.major;
	if (minor)
		*minor = r.minor;
	int rc = read(&r, arg);
	cf_close(&r);
	return rc;
}

int cf_open_unique(struct cf_reader *r, uint32_t id, struct cf_stream *s)
{
	char name[5];
	const struct cf_entry *e = cf_find(r, id, 0);
	if (!e)
		return fth_error("%s: no %s chunk", r->path, cf_id_name(id, name));
	if (cf_find(r, id, 1))
		return fth_error("%s: more than one %s chunk", r->path, cf_id_name(id, name));
	return cf_stream_open(r, e, s);
}

int cf_check_count(struct cf_stream *s, uint64_t n, uint64_t limit, unsigned min,
		   const char *what)
{
	if (n > limit || (min && n > s->e->raw / min))
		return cf_stream_error(s, "%llu %s cannot fit", (unsigned long long)n, what);
	return 0;
}

int cf_get_count(struct cf_stream *s, uint64_t limit, unsigned min, const char *what,
		 uint64_t *n)
{
	if (cf_next_varint(s, n) < 0)
		return -1;
	return cf_check_count(s, *n, limit, min, what);
}

int cf_open_table(struct cf_reader *r, uint32_t id, uint64_t limit, unsigned min,
		  const char *what, struct cf_stream *s, uint64_t *n)
{
	if (cf_open_unique(r, id, s) < 0)
		return -1;
	if (cf_get_count(s, limit, min, what, n) < 0) {
		cf_stream_free(s);
		return -1;
	}
	return 0;
}

int cf_read_fields(struct cf_stream *s,
		   int (*field)(struct cf_stream *s, void *arg, unsigned f, unsigned wire), void *arg)
{
	for (;;) {
		unsigned f, wire;
		if (cf_get_tag(s, &f, &wire) < 0)
			return -1;
		if (f == 0)
			return 0;
		if (field(s, arg, f, wire) < 0)
			return -1;
	}
}

int cf_read_records(struct cf_stream *s, const struct cf_table *t, uint64_t n, void **records,
		    void *arg)
{
	if (records)
		*records = xcalloc(n ? n : 1, t->size);
	for (uint64_t i = 0; i < n; i++)
		if (t->read(s, arg, i, n) < 0)
			goto fail;
	if (t->check && t->check(s, arg) < 0)
		goto fail;
	return cf_stream_finish(s);
fail:
	cf_stream_free(s);
	return -1;
}

int cf_read_table(struct cf_reader *r, const struct cf_table *t, void **records, void *arg)
{
	struct cf_stream s;
	uint64_t n;
	if (cf_open_table(r, t->id, t->limit, t->min, t->what, &s, &n) < 0)
		return -1;
	return cf_read_records(&s, t, n, records, arg);
}

int cf_read_string_table(struct cf_reader *r, uint32_t id, size_t max, char ***strings,
			 uint32_t *count)
{
	struct cf_stream s;
	uint64_t n;
	if (cf_open_table(r, id, UINT32_MAX - 1, 1, "strings", &s, &n) < 0)
		return -1;
	*strings = xcalloc(n ? n : 1, sizeof(char *));
	for (uint64_t i = 0; i < n; i++) {
		if (cf_get_bytes(&s, max, &(*strings)[i], NULL) < 0) {
			cf_stream_free(&s);
			return -1;
		}
		*count = (uint32_t)i + 1;
	}
	return cf_stream_finish(&s);
}

int cf_get_bytes_field(struct cf_stream *s, unsigned wire, const char *what, size_t max,
		       char **out, size_t *len)
{
	if (wire != CF_WIRE_BYTES)
		return cf_stream_error(s, "%s field has type %u", what, wire);
	return cf_get_bytes(s, max, out, len);
}

int cf_get_str_field(struct cf_stream *s, unsigned wire, size_t max, char **dst)
{
	char *str;
	if (cf_get_bytes_field(s, wire, "string", max, &str, NULL) < 0)
		return -1;
	free(*dst);
	*dst = str;
	return 0;
}

int cf_get_fixed_field(struct cf_stream *s, unsigned wire, uint64_t *v)
{
	if (wire != CF_WIRE_FIXED64)
		return cf_stream_error(s, "fixed field has type %u", wire);
	return cf_get_u64(s, v);
}
