/* SPDX-License-Identifier: MIT */
/* t-le.c: little-endian fixed-width integers, LEB128 varints, zig-zag, the bounded decoder. */
#include "compat.h"
#include "le.h"
#include "tap.h"

#include <limits.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t rng_state = 0xd1b54a32d192ed03ULL;

static uint64_t rng(void)
{
	return tap_rng(&rng_state);
}

static uint64_t rng_value(void)
{
	return tap_rng_value(&rng_state);
}

/* The number of bytes the LEB128 encoding of V takes, from its bit length. */
static size_t want_size(uint64_t v)
{
	size_t bits = 0;
	while (bits < 64 && (v >> bits))
		bits++;
	return bits == 0 ? 1 : (bits + 6) / 7;
}

static void test_fixed(void)
{
	uint8_t b[16];
	memset(b, 0xee, sizeof(b));
	le_put16(b, 0x1234);
	ok(b[0] == 0x34 && b[1] == 0x12 && b[2] == 0xee, "le_put16 byte order, writes 2 bytes");
	le_put32(b, 0x12345678);
	ok(b[0] == 0x78 && b[1] == 0x56 && b[2] == 0x34 && b[3] == 0x12 && b[4] == 0xee,
	   "le_put32 byte order, writes 4 bytes");
	le_put64(b, 0x0102030405060708ULL);
	static const uint8_t want64[] = { 8, 7, 6, 5, 4, 3, 2, 1, 0xee };
	ok(memcmp(b, want64, sizeof(want64)) == 0, "le_put64 byte order, writes 8 bytes");

	static const uint8_t in[] = { 0xf0, 0xde, 0xbc, 0x9a, 0x78, 0x56, 0x34, 0x12 };
	is_uint(le_get16(in), 0xdef0, "le_get16");
	is_uint(le_get32(in), 0x9abcdef0, "le_get32 (high bit set)");
	is_uint(le_get64(in), 0x123456789abcdef0ULL, "le_get64");
	static const uint8_t ff[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	ok(le_get16(ff) == UINT16_MAX && le_get32(ff) == UINT32_MAX && le_get64(ff) == UINT64_MAX,
	   "all-ones values");

	/* Random round trips at every alignment. */
	int bad = 0;
	uint8_t buf[32];
	for (int i = 0; i < 100000; i++) {
		size_t off = (size_t)(rng() % 8);
		uint64_t v = rng();
		le_put16(buf + off, (uint16_t)v);
		if (le_get16(buf + off) != (uint16_t)v)
			bad++;
		le_put32(buf + off, (uint32_t)v);
		if (le_get32(buf + off) != (uint32_t)v)
			bad++;
		le_put64(buf + off, v);
		if (le_get64(buf + off) != v)
			bad++;
		uint64_t host;
		memcpy(&host, buf + off, 8);
		if (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && host != v)
			bad++;
	}
	is_int(bad, 0, "random fixed-width round trips at unaligned addresses");

	double d = 1.0;
	is_uint(le_f64_bits(d), 0x3ff0000000000000ULL, "le_f64_bits(1.0)");
	ok(le_bits_f64(0xc000000000000000ULL) == -2.0, "le_bits_f64 gives -2.0");
	bad = 0;
	for (int i = 0; i < 10000; i++) {
		uint64_t u = rng();
		if (le_f64_bits(le_bits_f64(u)) != u)
			bad++;
	}
	is_int(bad, 0, "le_bits_f64 / le_f64_bits keep every bit pattern (NaNs included)");
	ok(isnan(le_bits_f64(0x7ff8000000000001ULL)), "a NaN pattern is a NaN");
}

static void test_varint_boundaries(void)
{
	uint64_t vals[64];
	size_t n = 0;
	vals[n++] = 0;
	vals[n++] = 1;
	for (int k = 1; k <= 9; k++) {
		vals[n++] = (UINT64_C(1) << (7 * k)) - 1;
		vals[n++] = UINT64_C(1) << (7 * k);
	}
	vals[n++] = (UINT64_C(1) << 63) - 1;
	vals[n++] = UINT64_C(1) << 63;
	vals[n++] = UINT64_MAX - 1;
	vals[n++] = UINT64_MAX;

	int bad_size = 0, bad_trip = 0, bad_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t b[LE_VARINT_MAX + 4];
		memset(b, 0xaa, sizeof(b));
		size_t len = le_put_varint(b, vals[i]);
		if (len != want_size(vals[i]) || le_varint_size(vals[i]) != len ||
		    len > LE_VARINT_MAX) {
			diag("value %#llx: put %zu size %zu want %zu", (unsigned long long)vals[i],
			     len, le_varint_size(vals[i]), want_size(vals[i]));
			bad_size++;
		}
		/* Every byte but the last has the continuation bit; nothing written beyond. */
		for (size_t j = 0; j < len; j++)
			if (!!(b[j] & 0x80) != (j + 1 < len))
				bad_bytes++;
		if (b[len] != 0xaa)
			bad_bytes++;
		const uint8_t *p = b;
		uint64_t v = ~vals[i];
		if (le_get_varint(&p, b + len, &v) != 0 || v != vals[i] || p != b + len) {
			diag("value %#llx does not round trip", (unsigned long long)vals[i]);
			bad_trip++;
		}
	}
	is_int(bad_size, 0, "le_put_varint and le_varint_size agree on the length at boundaries");
	is_int(bad_bytes, 0, "continuation bits are right and nothing is written past the end");
	is_int(bad_trip, 0,
	       "boundary values round trip (0, 127, 128, 2^14-1, 2^14, ... 2^63, max)");

	is_uint(le_varint_size(0), 1, "size of 0");
	is_uint(le_varint_size(127), 1, "size of 127");
	is_uint(le_varint_size(128), 2, "size of 128");
	is_uint(le_varint_size((1 << 14) - 1), 2, "size of 2^14 - 1");
	is_uint(le_varint_size(1 << 14), 3, "size of 2^14");
	is_uint(le_varint_size(UINT64_C(1) << 63), 10, "size of 2^63");
	is_uint(le_varint_size(UINT64_MAX), 10, "size of UINT64_MAX");

	uint8_t b[LE_VARINT_MAX];
	ok(le_put_varint(b, 0) == 1 && b[0] == 0, "0 encodes as 00");
	ok(le_put_varint(b, 127) == 1 && b[0] == 0x7f, "127 encodes as 7f");
	ok(le_put_varint(b, 128) == 2 && b[0] == 0x80 && b[1] == 0x01, "128 encodes as 80 01");
	ok(le_put_varint(b, 300) == 2 && b[0] == 0xac && b[1] == 0x02, "300 encodes as ac 02");
	ok(le_put_varint(b, 16383) == 2 && b[0] == 0xff && b[1] == 0x7f, "2^14-1 encodes as ff 7f");
	ok(le_put_varint(b, 16384) == 3 && b[0] == 0x80 && b[1] == 0x80 && b[2] == 0x01,
	   "2^14 encodes as 80 80 01");
	static const uint8_t max_enc[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 1 };
	ok(le_put_varint(b, UINT64_MAX) == 10 && memcmp(b, max_enc, 10) == 0,
	   "UINT64_MAX encodes as ff x9 01");
	static const uint8_t top_enc[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
					   0x80, 0x80, 0x80, 0x80, 1 };
	ok(le_put_varint(b, UINT64_C(1) << 63) == 10 && memcmp(b, top_enc, 10) == 0,
	   "2^63 encodes as 80 x9 01");
}

static void test_varint_random(void)
{
	int bad = 0;
	uint8_t stream[LE_VARINT_MAX * 1000];
	uint64_t vals[1000];
	for (int rep = 0; rep < 200; rep++) {
		size_t len = 0;
		for (int i = 0; i < 1000; i++) {
			vals[i] = rng_value();
			size_t n = le_put_varint(stream + len, vals[i]);
			if (n != le_varint_size(vals[i]) || n != want_size(vals[i]))
				bad++;
			len += n;
		}
		const uint8_t *p = stream, *end = stream + len;
		for (int i = 0; i < 1000; i++) {
			uint64_t v;
			if (le_get_varint(&p, end, &v) != 0 || v != vals[i]) {
				bad++;
				break;
			}
		}
		if (p != end)
			bad++;
		uint64_t v;
		if (le_get_varint(&p, end, &v) != -1 || p != end)
			bad++;
	}
	is_int(bad, 0, "200000 random varints concatenated decode back in sequence");
}

static void test_zigzag(void)
{
	is_uint(le_zigzag(0), 0, "zigzag(0) = 0");
	is_uint(le_zigzag(-1), 1, "zigzag(-1) = 1");
	is_uint(le_zigzag(1), 2, "zigzag(1) = 2");
	is_uint(le_zigzag(-2), 3, "zigzag(-2) = 3");
	is_uint(le_zigzag(2), 4, "zigzag(2) = 4");
	is_uint(le_zigzag(INT64_MAX), UINT64_MAX - 1, "zigzag(INT64_MAX)");
	is_uint(le_zigzag(INT64_MIN), UINT64_MAX, "zigzag(INT64_MIN)");
	is_int(le_unzigzag(0), 0, "unzigzag(0)");
	is_int(le_unzigzag(1), -1, "unzigzag(1)");
	is_int(le_unzigzag(4), 2, "unzigzag(4)");
	is_int(le_unzigzag(UINT64_MAX), INT64_MIN, "unzigzag(UINT64_MAX)");
	is_int(le_unzigzag(UINT64_MAX - 1), INT64_MAX, "unzigzag(UINT64_MAX - 1)");
	int bad = 0;
	for (int64_t v = -1000; v <= 1000; v++) {
		uint64_t z = le_zigzag(v);
		if (le_unzigzag(z) != v || z != (v < 0 ? (uint64_t)(-v) * 2 - 1 : (uint64_t)v * 2))
			bad++;
	}
	for (int i = 0; i < 100000; i++) {
		int64_t v = (int64_t)rng_value();
		if (rng() & 1)
			v = (int64_t)(0 - (uint64_t)v);
		if (le_unzigzag(le_zigzag(v)) != v)
			bad++;
		uint64_t u = rng();
		if (le_zigzag(le_unzigzag(u)) != u)
			bad++;
	}
	is_int(bad, 0, "zigzag is a bijection that keeps small magnitudes small");
	ok(le_varint_size(le_zigzag(-64)) == 1 && le_varint_size(le_zigzag(-65)) == 2,
	   "small negative numbers encode in one byte");
}

/* Decode N bytes at P (bounded by P + N); -1 or 0, and checks *P moved only on success. */
static int decode(const uint8_t *p, size_t n, uint64_t *v, bool *moved_ok)
{
	const uint8_t *q = p;
	int r = le_get_varint(&q, p + n, v);
	*moved_ok = r == 0 ? q > p && q <= p + n : q == p;
	return r;
}

static void test_rejects(void)
{
	uint64_t v;
	bool moved_ok;
	uint8_t b[16];

	/* Every proper prefix of every boundary encoding is truncated. */
	int bad = 0, bad_move = 0;
	for (int k = 0; k <= 64; k++) {
		uint64_t val = k == 64 ? UINT64_MAX : (UINT64_C(1) << k);
		size_t n = le_put_varint(b, val);
		for (size_t len = 0; len < n; len++) {
			if (decode(b, len, &v, &moved_ok) != -1)
				bad++;
			if (!moved_ok)
				bad_move++;
		}
		if (decode(b, n, &v, &moved_ok) != 0 || v != val || !moved_ok)
			bad++;
	}
	is_int(bad, 0, "every proper prefix of an encoding is rejected as truncated");
	is_int(bad_move, 0, "  and a rejected decode leaves the position alone");

	ok(decode(b, 0, &v, &moved_ok) == -1 && moved_ok, "empty input is rejected");

	static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x00 };
	ok(decode(eleven, sizeof(eleven), &v, &moved_ok) == -1 && moved_ok,
	   "an 11-byte encoding is rejected");
	static const uint8_t eleven_ff[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					     0xff, 0xff, 0xff, 0x81, 0x01 };
	ok(decode(eleven_ff, sizeof(eleven_ff), &v, &moved_ok) == -1,
	   "an 11-byte encoding of all ones is rejected");
	static const uint8_t ten_cont[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
					    0x80, 0x80, 0x80, 0x80, 0x80 };
	ok(decode(ten_cont, sizeof(ten_cont), &v, &moved_ok) == -1,
	   "10 bytes that all continue are rejected");

	int bad_overflow = 0;
	for (unsigned last = 2; last < 256; last++) {
		uint8_t e[10];
		memset(e, 0xff, 9);
		e[9] = (uint8_t)last;
		if (decode(e, sizeof(e), &v, &moved_ok) != -1)
			bad_overflow++;
		memset(e, 0x80, 9);
		if (decode(e, sizeof(e), &v, &moved_ok) != -1)
			bad_overflow++;
	}
	is_int(bad_overflow, 0, "a 10th byte above 1 (past 64 bits) is rejected, all 254 of them");

	uint8_t e[10];
	memset(e, 0xff, 9);
	e[9] = 1;
	ok(decode(e, 10, &v, &moved_ok) == 0 && v == UINT64_MAX && moved_ok,
	   "a 10th byte of 1 is accepted (UINT64_MAX)");
	memset(e, 0x80, 9);
	e[9] = 0;
	ok(decode(e, 10, &v, &moved_ok) == 0 && v == 0 && moved_ok,
	   "a 10th byte of 0 is accepted");
	memset(e, 0x80, 9);
	e[9] = 1;
	ok(decode(e, 10, &v, &moved_ok) == 0 && v == UINT64_C(1) << 63,
	   "80 x9 01 is 2^63");
	static const uint8_t nonmin[] = { 0x80, 0x00, 0xff, 0x80, 0x80, 0x00 };
	const uint8_t *p = nonmin;
	uint64_t v2 = 1;
	ok(le_get_varint(&p, nonmin + 6, &v) == 0 && v == 0 && p == nonmin + 2 &&
		   le_get_varint(&p, nonmin + 6, &v2) == 0 && v2 == 127 && p == nonmin + 6,
	   "non-minimal encodings (80 00, ff 80 80 00) are accepted, as documented");
	uint8_t two[] = { 0x81, 0x01 };
	p = two;
	ok(le_get_varint(&p, two + 2, &v) == 0 && v == 129 && p == two + 2, "81 01 is 129");
}

/* The decoder never touches the byte at END: inputs that end at a PROT_NONE page. */
static void test_guard_page(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE) != 0) {
		skip("mmap or mprotect failed", "decoding up to a guard page");
		return;
	}
	uint8_t *end = map + page;
	uint64_t v;
	const uint8_t *p = end;
	ok(le_get_varint(&p, end, &v) == -1 && p == end, "empty input at a guard page");

	int bad = 0, checked = 0;
	for (int k = 0; k <= 64; k++) {
		uint64_t val = k == 64 ? UINT64_MAX : (UINT64_C(1) << k) - (k % 3 == 0);
		uint8_t enc[LE_VARINT_MAX];
		size_t n = le_put_varint(enc, val);
		/* Whole encoding ending at the guard page. */
		memcpy(end - n, enc, n);
		p = end - n;
		if (le_get_varint(&p, end, &v) != 0 || v != val || p != end)
			bad++;
		/* Every prefix ending at the guard page: the continuation byte is last. */
		for (size_t len = 1; len < n; len++) {
			memcpy(end - len, enc, len);
			p = end - len;
			if (le_get_varint(&p, end, &v) != -1 || p != end - len)
				bad++;
			checked++;
		}
	}
	/* Ten continuation bytes at the end of the page, and a too-long run. */
	memset(end - 10, 0x80, 10);
	p = end - 10;
	if (le_get_varint(&p, end, &v) != -1)
		bad++;
	memset(end - 16, 0xff, 16);
	for (size_t len = 1; len <= 16; len++) {
		p = end - len;
		if (le_get_varint(&p, end, &v) != -1)
			bad++;
		checked++;
	}
	is_int(bad, 0, "%d truncated inputs ending at a guard page are rejected without a fault",
	       checked);
	munmap(map, (size_t)page * 2);
}

int main(void)
{
	test_fixed();
	test_varint_boundaries();
	test_varint_random();
	test_zigzag();
	test_rejects();
	test_guard_page();
	return done_testing();
}
