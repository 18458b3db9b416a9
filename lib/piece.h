/* SPDX-License-Identifier: MIT */
/*
 * piece.h: a piece, the unit a reader fetches with one pread from a large chunk (formats.md
 * 8.7): u8 encoding (0 stored, 1 one zstd frame), u32 raw size, u32 CRC-32C of the raw bytes,
 * then the bytes.  threads.fdb's values and traces.fdb's records are pieces.
 */
#ifndef FATHOM_PIECE_H
#define FATHOM_PIECE_H

#include <stddef.h>
#include <stdint.h>

struct buf;

#define PIECE_HEADER 9
#define PIECE_MAX_RAW (1u << 30)

/* What encodes and decodes pieces: zstd contexts made on first need, a decoded buffer. */
struct piece_codec {
	int level; /* zstd level when encoding; 0 stores */
	void *cctx, *dctx;
	uint8_t *raw;
	size_t raw_cap;
};

/* Append the LEN bytes at RAW to OUT as a piece; 0, or -1 with a message. */
int piece_put(struct piece_codec *pc, const void *raw, size_t len, struct buf *out);
/* Decode the piece of N stored bytes at STORED into the codec's buffer (*RAW, *LEN bytes,
 * valid until the next call); 0, or -1 with a message saying what is wrong with it ("bad
 * header", "checksum mismatch"...), for the caller to prefix with where it is. */
int piece_get(struct piece_codec *pc, const uint8_t *stored, size_t n, const uint8_t **raw,
	      size_t *len);
void piece_codec_release(struct piece_codec *pc);

#endif
