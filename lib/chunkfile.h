/* SPDX-License-Identifier: MIT */
/*
 * chunkfile.h: the container shared by fathom's files: a header, checksummed chunks (zstd
 * frames or stored bytes), a table of contents and a footer.  doc/formats.md specifies the
 * bytes.  The writer is async-signal-safe (no malloc, no stdio: it works in a workspace the
 * caller provides and writes with write(2)); the reader is for the offline tools.
 */
#ifndef FATHOM_CHUNKFILE_H
#define FATHOM_CHUNKFILE_H

#include "le.h"

#define CF_HEADER_SIZE 32
#define CF_FOOTER_SIZE 32
#define CF_TOC_ENTRY_SIZE 40
#define CF_MAX_CHUNKS 1024
#define CF_END_MAGIC "FTHM-END"

/* Chunk flags. */
#define CF_CHUNK_ZSTD 1u

/* A four-character chunk identifier, as its bytes appear in the file ("CCT " etc.). */
#define CF_ID(a, b, c, d) \
	((uint32_t)(a) | ((uint32_t)(b) << 8) | ((uint32_t)(c) << 16) | ((uint32_t)(d) << 24))

struct cf_entry {
	uint32_t id;
	uint32_t flags;
	uint64_t offset;   /* of the stored bytes in the file */
	uint64_t stored;   /* bytes in the file */
	uint64_t raw;	   /* bytes after decompression */
	uint32_t crc;	   /* CRC-32C of the raw bytes */
	uint32_t stored_crc; /* CRC-32C of the stored bytes (catches changes zstd would accept) */
};

/* ---- writer (async-signal-safe) ---- */

struct cf_writer {
	int fd;
	const char *path; /* borrowed, for messages */
	uint64_t written; /* bytes written to the file */
	int level;	  /* zstd level, or 0 to store chunks uncompressed */
	void *zcs;	  /* ZSTD_CStream inside the workspace, or NULL */
	uint8_t *in;	  /* staged raw bytes of the current chunk (workspace); stored, also those
			     of earlier chunks not yet written, from in[0] */
	size_t in_len, in_cap;
	size_t chunk_start; /* where the current chunk's bytes not yet accounted for start */
	uint8_t *out; /* compressed output (workspace) */
	size_t out_cap;
	struct cf_entry *toc; /* workspace */
	uint32_t ntoc;
	struct cf_entry cur;
	bool in_chunk;
	bool failed; /* a write failed: every later call fails at once */
};

/* Bytes of workspace cf_writer_open() needs for compression LEVEL (0 = store). */
size_t cf_writer_workspace_size(int level);
/*
 * Start a file on FD (positioned at its start): write the header with MAGIC (8 bytes) and the
 * version.  WORKSPACE must be cf_writer_workspace_size(LEVEL) bytes, 8-byte aligned, and live
 * until cf_writer_finish().  Returns 0 or -1 with a message naming PATH.
 */
int cf_writer_open(struct cf_writer *w, int fd, const char *path, const char magic[8],
		   uint16_t major, uint16_t minor, int level, void *workspace, size_t size);
int cf_chunk_begin(struct cf_writer *w, uint32_t id);
int cf_put(struct cf_writer *w, const void *p, size_t n);
int cf_put_u8(struct cf_writer *w, uint8_t v);
int cf_put_varint(struct cf_writer *w, uint64_t v);
int cf_put_u64(struct cf_writer *w, uint64_t v);
/* A length-prefixed byte string (varint length, then the bytes); NULL is the empty string. */
int cf_put_bytes(struct cf_writer *w, const void *p, size_t n);
int cf_put_str(struct cf_writer *w, const char *s);
/* Chunk ID holding a table of N strings: the count, then each (cf_read_string_table reads it). */
int cf_put_string_table(struct cf_writer *w, uint32_t id, char *const *strings, uint32_t n);
int cf_chunk_end(struct cf_writer *w);
/* Write the table of contents and the footer.  Does not close FD. */
int cf_writer_finish(struct cf_writer *w);

/*
 * Tagged records: a sequence of (tag, value) fields ended by tag 0, where tag = field << 2 |
 * type.  Readers skip fields they do not know, which is how minor versions add fields.
 */
enum cf_wire { CF_WIRE_VARINT = 0, CF_WIRE_BYTES = 1, CF_WIRE_FIXED64 = 2 };
int cf_field_varint(struct cf_writer *w, unsigned field, uint64_t v);
int cf_field_bytes(struct cf_writer *w, unsigned field, const void *p, size_t n);
int cf_field_str(struct cf_writer *w, unsigned field, const char *s);
int cf_field_fixed64(struct cf_writer *w, unsigned field, uint64_t v);
int cf_record_end(struct cf_writer *w);

/* ---- reader (offline tools; uses malloc) ---- */

struct cf_reader {
	char *path; /* owned */
	int fd;
	uint64_t size;
	char magic[9];
	uint16_t major, minor;
	uint32_t nchunks;
	struct cf_entry *toc; /* owned */
	const uint8_t *mem;   /* cf_open_memory: the file's bytes (the caller's) */
};

/*
 * Open PATH and validate header, footer and table of contents.  MAGIC (8 bytes) is the kind of
 * file expected and KIND its name in messages ("measurement file"); MAX_MAJOR the newest major
 * version understood.  Returns 0, or -1 with a message naming the file and the problem.
 */
int cf_open(struct cf_reader *r, const char *path, const char magic[8], const char *kind,
	    uint16_t max_major);
void cf_close(struct cf_reader *r);
/* N bytes at OFF of the file PATH open on FD: 0, or -1 with a message naming PATH ("cannot
 * read: REASON", or "truncated" when the file ends first). */
int cf_pread(int fd, const char *path, void *p, size_t n, uint64_t off);
/* cf_open on the SIZE bytes of a file at DATA (kept by the caller until cf_close), PATH its
 * name in messages. */
int cf_open_memory(struct cf_reader *r, const char *path, const void *data, size_t size,
		   const char magic[8], const char *kind, uint16_t max_major);
/* The NTH chunk (from 0) with identifier ID, or NULL. */
const struct cf_entry *cf_find(const struct cf_reader *r, uint32_t id, unsigned nth);
/* Printable name of a chunk identifier (static storage per call site is not needed: BUF[5]). */
const char *cf_id_name(uint32_t id, char buf[5]);

/*
 * Streaming access to one chunk's raw bytes, decompressed in windows so that memory stays
 * small however large the chunk.  P..END is the current window.  cf_need() makes at least N
 * bytes available unless the chunk ends first.
 */
struct cf_stream {
	struct cf_reader *r;	  /* borrowed */
	const struct cf_entry *e; /* borrowed */
	void *zds;		  /* owned ZSTD_DStream, or NULL for stored chunks */
	uint8_t *zin;		  /* owned compressed input window */
	size_t zin_len, zin_pos;
	uint64_t zin_off; /* bytes of the chunk read from the file so far */
	uint32_t stored_crc; /* of the compressed bytes read so far */
	uint8_t *win;	  /* owned window of raw bytes */
	size_t win_cap;
	const uint8_t *p, *end;
	uint64_t produced; /* raw bytes produced so far */
	uint32_t crc;
	bool done;	 /* every raw byte has been produced */
	bool frame_done; /* the zstd frame has ended */
	char what[64]; /* "chunk CCT " for messages */
};

int cf_stream_open(struct cf_reader *r, const struct cf_entry *e, struct cf_stream *s);
/* Returns the bytes now available (>= N unless the chunk ended), or -1 on error. */
long cf_need(struct cf_stream *s, size_t n);
/* Verify that the chunk was consumed exactly and its checksum matches; then free. */
int cf_stream_finish(struct cf_stream *s);
void cf_stream_free(struct cf_stream *s);
/* Decoding helpers on a stream; each returns 0 or -1 with a message. */
int cf_get_varint(struct cf_stream *s, uint64_t *v);
int cf_get_u8(struct cf_stream *s, uint8_t *v);
int cf_get_u64(struct cf_stream *s, uint64_t *v);
/* A length-prefixed byte string copied into a new NUL-terminated allocation of at most MAX. */
int cf_get_bytes(struct cf_stream *s, size_t max, char **out, size_t *len);
/* Read the next field tag of a tagged record: *FIELD = 0 at the record's end. */
int cf_get_tag(struct cf_stream *s, unsigned *field, unsigned *wire);
/* Skip the value of a field of type WIRE. */
int cf_skip_field(struct cf_stream *s, unsigned wire);
/* Fail with "PATH: chunk X: MESSAGE" (and the raw offset); returns -1. */
int cf_stream_error(struct cf_stream *s, const char *fmt, ...) FTH_PRINTF(2, 3);
/* cf_get_varint, inline when the window surely holds the varint: the decoders' common case. */
static inline int cf_next_varint(struct cf_stream *s, uint64_t *v)
{
	if (__builtin_expect(s->p < s->end && *s->p < 0x80, 1)) {
		*v = *s->p++;
		return 0;
	}
	if (__builtin_expect(s->end - s->p >= LE_VARINT_MAX, 1)) {
		if (le_get_varint(&s->p, s->end, v) < 0)
			return cf_stream_error(s, "malformed varint");
		return 0;
	}
	return cf_get_varint(s, v);
}
/* Read a whole (small) chunk into a new allocation; *LEN gets its size. */
int cf_read_chunk(struct cf_reader *r, const struct cf_entry *e, uint8_t **data, size_t *len);

/*
 * What the format readers (sfile, mfile, dbfile) share on top of the stream: chunks that must
 * appear once, record counts bounded by the chunk's size, typed fields of tagged records, and
 * string tables.  Each returns 0 or -1 with a message naming the file and the chunk.
 */
/*
 * A whole file read: PATH opened as cf_open does (MAGIC, KIND, MAX_MAJOR), its version given
 * to *MAJOR and *MINOR (unless NULL), its chunks read by READ(R, ARG), the file closed.
 * Returns 0, or -1 with the message of cf_open or READ.
 */
int cf_read_file(const char *path, const char magic[8], const char *kind, uint16_t max_major,
		 uint16_t *major, uint16_t *minor, int (*read)(struct cf_reader *r, void *arg),
		 void *arg);
/* Open the only chunk ID: "no ID chunk" or "more than one ID chunk" otherwise. */
/* cf_read_file on the SIZE bytes of PATH at DATA (cf_open_memory); DATA NULL: the file. */
int cf_read_memory(const char *path, const void *data, size_t size, const char magic[8],
		   const char *kind, uint16_t max_major, uint16_t *major, uint16_t *minor,
		   int (*read)(struct cf_reader *r, void *arg), void *arg);
int cf_open_unique(struct cf_reader *r, uint32_t id, struct cf_stream *s);
/* Whether N records of at least MIN bytes each (MIN 0: no bound) fit the chunk, and N <= LIMIT:
 * "N WHAT cannot fit" otherwise. */
int cf_check_count(struct cf_stream *s, uint64_t n, uint64_t limit, unsigned min,
		   const char *what);
/* A table's record count: a varint that cf_check_count accepts. */
int cf_get_count(struct cf_stream *s, uint64_t limit, unsigned min, const char *what,
		 uint64_t *n);
/* cf_open_unique, then the table's count (cf_get_count); the stream is freed on failure. */
int cf_open_table(struct cf_reader *r, uint32_t id, uint64_t limit, unsigned min,
		  const char *what, struct cf_stream *s, uint64_t *n);
/* The fields of a tagged record up to its end (field 0), FIELD(S, ARG, F, WIRE) reading each:
 * 0, or -1 with a message. */
int cf_read_fields(struct cf_stream *s,
		   int (*field)(struct cf_stream *s, void *arg, unsigned f, unsigned wire), void *arg);
/*
 * A table in the only chunk ID: a count (at most LIMIT records of at least MIN bytes each, as
 * cf_open_table), then the records, SIZE bytes each in memory.  READ reads record I of N into
 * what ARG holds (keeping the count of records to free up to date), CHECK (NULL: none) what
 * the records say together; both return 0, or -1 with a message.
 */
struct cf_table {
	uint32_t id;
	uint64_t limit;
	unsigned min;
	const char *what;
	size_t size;
	int (*read)(struct cf_stream *s, void *arg, uint64_t i, uint64_t n);
	int (*check)(struct cf_stream *s, void *arg);
};
/* Table T: *RECORDS allocated (zeroed) for its records unless RECORDS is NULL (READ then puts
 * them elsewhere), each read, then checked; *RECORDS is kept on failure for the caller to free
 * what was read. */
int cf_read_table(struct cf_reader *r, const struct cf_table *t, void **records, void *arg);
/* The N records of table T on S, opened and its count read by the caller, as cf_read_table
 * reads them; S is finished, or freed on failure. */
int cf_read_records(struct cf_stream *s, const struct cf_table *t, uint64_t n, void **records,
		    void *arg);
/* A table of N strings of at most MAX bytes each, in the only chunk ID: *STRINGS and *COUNT
 * grow as strings are read, so that the caller frees what was read when it fails. */
int cf_read_string_table(struct cf_reader *r, uint32_t id, size_t max, char ***strings,
			 uint32_t *count);
/* A byte-string field (WIRE must be CF_WIRE_BYTES: "WHAT field has type W"), as cf_get_bytes. */
int cf_get_bytes_field(struct cf_stream *s, unsigned wire, const char *what, size_t max,
		       char **out, size_t *len);
/* A string field of at most MAX bytes; replaces (and frees) *DST. */
int cf_get_str_field(struct cf_stream *s, unsigned wire, size_t max, char **dst);
/* A fixed 64-bit field ("fixed field has type W" for another type). */
int cf_get_fixed_field(struct cf_stream *s, unsigned wire, uint64_t *v);
/* A number field ("number field has type W" for another type). */
static inline int cf_get_varint_field(struct cf_stream *s, unsigned wire, uint64_t *v)
{
	if (wire != CF_WIRE_VARINT)
		return cf_stream_error(s, "number field has type %u", wire);
	return cf_next_varint(s, v);
}
/* A varint of at most LIMIT (<= UINT32_MAX): "WHAT N out of range" otherwise. */
static inline int cf_get_u32_max(struct cf_stream *s, uint32_t *v, uint64_t limit,
				 const char *what)
{
	uint64_t x;
	if (cf_next_varint(s, &x) < 0)
		return -1;
	if (x > limit)
		return cf_stream_error(s, "%s %llu out of range", what, (unsigned long long)x);
	*v = (uint32_t)x;
	return 0;
}

/* Checksums are skipped when fuzzing, so that mutations reach the parsers behind them. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CF_VERIFY_CHECKSUMS 0
#else
#define CF_VERIFY_CHECKSUMS 1
#endif

#endif
