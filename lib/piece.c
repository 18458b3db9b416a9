/* SPDX-License-Identifier: MIT */
/* piece.c: encoding and decoding the pieces of piece.h. */
#include "compat.h"
#include "piece.h"
#include "buf.h"
#include "chunkfile.h"
#include "crc32c.h"
#include "error.h"
#include "le.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

int piece_put(struct piece_codec *pc, const void *raw, size_t len, struct buf *out)
{
	if (len > PIECE_MAX_RAW)
		return fth_error("a piece of %zu bytes is too large", len);
	uint8_t *h = buf_reserve(out, PIECE_HEADER);
	h[0] = pc->level ? 1 : 0;
	le_put32(h + 1, (uint32_t)len);
	le_put32(h + 5, crc32c(0, raw, len));
	out->len += PIECE_HEADER;
	if (!pc->level) {
		buf_add(out, raw, len);
		return 0;
	}
	if (!pc->cctx && !(pc->cctx = ZSTD_createCCtx()))
		return fth_error("cannot create a zstd compressor");
	size_t cap = ZSTD_compressBound(len);
	uint8_t *dst = buf_reserve(out, cap);
	size_t n = ZSTD_compressCCtx(pc->cctx, dst, cap, raw, len, pc->level);
	if (ZSTD_isError(n))
		return fth_error("zstd: %s", ZSTD_getErrorName(n));
	out->len += n;
	return 0;
}

int piece_get(struct piece_codec *pc, const uint8_t *stored, size_t n, const uint8_t **raw,
	      size_t *len)
{
	if (n < PIECE_HEADER)
		return fth_error("bad header");
	uint8_t enc = stored[0];
	uint32_t rawlen = le_get32(stored + 1), crc = le_get32(stored + 5);
	const uint8_t *data = stored + PIECE_HEADER;
	size_t dlen = n - PIECE_HEADER;
	if (enc > 1 || (enc == 0 && dlen != rawlen) || rawlen > PIECE_MAX_RAW)
		return fth_error("bad header");
	if (enc == 1 && ZSTD_getFrameContentSize(data, dlen) != rawlen)
		return fth_error("bad zstd frame");
	if (rawlen + 1 > pc->raw_cap) {
		pc->raw_cap = rawlen + 1;
		free(pc->raw);
		pc->raw = xmalloc(pc->raw_cap);
	}
	if (enc == 1) {
		if (!pc->dctx && !(pc->dctx = ZSTD_createDCtx()))
			return fth_error("cannot create a zstd decompressor");
		size_t got = ZSTD_decompressDCtx(pc->dctx, pc->raw, rawlen, data, dlen);
		if (ZSTD_isError(got) || got != rawlen)
			return fth_error("%s", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
	} else {
		memcpy(pc->raw, data, rawlen);
	}
	if (CF_VERIFY_CHECKSUMS && crc32c(0, pc->raw, rawlen) != crc)
		return fth_error("checksum mismatch");
	*raw = pc->raw;
	*len = rawlen;
	return 0;
}

void piece_codec_release(struct piece_codec *pc)
{
	ZSTD_freeCCtx(pc->cctx);
	ZSTD_freeDCtx(pc->dctx);
	free(pc->raw);
	memset(pc, 0, sizeof(*pc));
}
