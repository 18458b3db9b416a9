/* SPDX-License-Identifier: MIT */
/*
 * le.h: little-endian fixed-width and LEB128 variable-length integer encoding.
 *
 * Every on-disk integer in fathom's formats is little-endian, either fixed-width or an
 * unsigned LEB128 varint (7 bits a byte, high bit = more, at most 10 bytes).  Signed values use
 * zig-zag.  The decoders never read past END and report truncation and encodings over 10 bytes;
 * all of it is async-signal-safe.  Non-minimal encodings (e.g. 80 00) are accepted.
 */
#ifndef FATHOM_LE_H
#define FATHOM_LE_H

#include <string.h>

#define LE_VARINT_MAX 10

static inline void le_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void le_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t le_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t le_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

static inline uint64_t le_get64(const uint8_t *p)
{
	return (uint64_t)le_get32(p) | ((uint64_t)le_get32(p + 4) << 32);
}

/* Write V as a varint at P (room for LE_VARINT_MAX bytes); returns the bytes written. */
static inline size_t le_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline size_t le_varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline uint64_t le_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t le_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * Read a varint from *P (not past END) into *V and advance *P.  Returns 0, or -1 when the
 * input ends inside the varint or the varint is longer than 10 bytes or overflows 64 bits.
 */
static inline int le_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *q = *p;
	if (likely(q < end && *q < 0x80)) {
		*v = *q;
		*p = q + 1;
		return 0;
	}
	uint64_t r = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (q >= end)
			return -1;
		uint8_t b = *q++;
		if (shift == 63 && b > 1)
			return -1;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			*p = q;
			return 0;
		}
	}
	return -1;
}

static inline uint64_t le_f64_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}

static inline double le_bits_f64(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

#endif
