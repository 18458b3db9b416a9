/* SPDX-License-Identifier: MIT */
/* buf.c: the growable byte buffer of buf.h. */
#include "compat.h"
#include "buf.h"
#include "escape.h"
#include "le.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char buf_empty[1];

void buf_init(struct buf *b)
{
	b->data = (uint8_t *)buf_empty;
	b->len = b->cap = 0;
}

void buf_release(struct buf *b)
{
	if (b->cap)
		free(b->data);
	buf_init(b);
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = 0;
}

uint8_t *buf_grow(struct buf *b, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n + 1)
			cap *= 2;
		uint8_t *d = xrealloc(b->cap ? b->data : NULL, cap);
		if (!b->cap)
			d[0] = 0;
		b->data = d;
		b->cap = cap;
	}
	return b->data + b->len;
}

void buf_addpad(struct buf *b, char c, size_t n)
{
	memset(buf_reserve(b, n), c, n);
	b->len += n;
	b->data[b->len] = 0;
}

void buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf((char *)buf_reserve(b, 64), 64 + 1, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if ((size_t)n > 64)
		vsnprintf((char *)buf_reserve(b, (size_t)n), (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void buf_put_varint(struct buf *b, uint64_t v)
{
	b->len += le_put_varint(buf_reserve(b, LE_VARINT_MAX), v);
	b->data[b->len] = 0;
}

void buf_put_str(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	buf_put_varint(b, n);
	buf_add(b, s ? s : "", n);
}

void buf_put_u64(struct buf *b, uint64_t v)
{
	le_put64(buf_reserve(b, 8), v);
	b->len += 8;
	b->data[b->len] = 0;
}

void buf_add_escaped(struct buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '\n': buf_addstr(b, "\\n"); break;
		case '\t': buf_addstr(b, "\\t"); break;
		case '\r': buf_addstr(b, "\\r"); break;
		case '\\': buf_addstr(b, "\\\\"); break;
		case '"': buf_addstr(b, "\\\""); break;
		default:
			if (c >= 0x80) {
				/* valid UTF-8 of U+00A0 and up passes; C1 controls, invalid bytes:
				 * \xNN, each byte, as for the controls below */
				uint32_t cp;
				size_t len = utf8_decode((const unsigned char *)s + i, n - i, &cp);
				if (len && !utf8_invisible(cp)) {
					buf_add(b, s + i, len);
					i += len - 1;
					break;
				}
				for (size_t k = 0; k < (len ? len : 1); k++)
					buf_printf(b, "\\x%02x", (unsigned char)s[i + k]);
				i += len ? len - 1 : 0;
			} else if (c < 0x20 || c == 0x7f) {
				buf_printf(b, "\\x%02x", c);
			} else {
				buf_addch(b, (char)c);
			}
		}
	}
}

char *buf_detach(struct buf *b, size_t *len)
{
	if (len)
		*len = b->len;
	char *d = b->cap ? (char *)b->data : xstrdup("");
	buf_init(b);
	return d;
}
