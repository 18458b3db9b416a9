/* SPDX-License-Identifier: MIT */
/*
 * buf.h: a growable byte buffer for the offline tools.  DATA is never NULL after buf_init and
 * is always NUL-terminated one past LEN, so a buffer of text is also a C string.
 */
#ifndef FATHOM_BUF_H
#define FATHOM_BUF_H

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

struct buf {
	uint8_t *data; /* owned */
	size_t len;
	size_t cap;
};

#define BUF_INIT { (uint8_t *)buf_empty, 0, 0 }
extern const char buf_empty[1];

void buf_init(struct buf *b);
void buf_release(struct buf *b);
void buf_reset(struct buf *b);
/* buf_reserve's growth, out of line. */
uint8_t *buf_grow(struct buf *b, size_t n);
/* Make room for N more bytes; returns a pointer to the free space at the end. */
static inline uint8_t *buf_reserve(struct buf *b, size_t n)
{
	return b->len + n + 1 <= b->cap ? b->data + b->len : buf_grow(b, n);
}
/* Appends are inline: output of a million rows is made of tens of millions of them. */
static inline void buf_add(struct buf *b, const void *p, size_t n)
{
	memcpy(buf_reserve(b, n), p, n);
	b->len += n;
	b->data[b->len] = 0;
}
static inline void buf_addstr(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}
static inline void buf_addch(struct buf *b, char c)
{
	*buf_reserve(b, 1) = (uint8_t)c;
	b->data[++b->len] = 0;
}
/* Append N copies of C (padding). */
void buf_addpad(struct buf *b, char c, size_t n);
void buf_printf(struct buf *b, const char *fmt, ...) FTH_PRINTF(2, 3);
void buf_vprintf(struct buf *b, const char *fmt, va_list ap) FTH_PRINTF(2, 0);
void buf_put_varint(struct buf *b, uint64_t v);
void buf_put_str(struct buf *b, const char *s); /* varint length, then the bytes */
void buf_put_u64(struct buf *b, uint64_t v);
/* Append S with control characters (C0, DEL and C1), bytes that are not valid UTF-8, backslashes
 * and quotes escaped (\n, \t, \r, \\, \", \xNN): safe for a terminal, and reversible. */
void buf_add_escaped(struct buf *b, const char *s, size_t n);
/* Hand the data to the caller (who frees it) and reset the buffer. */
char *buf_detach(struct buf *b, size_t *len);

#endif
