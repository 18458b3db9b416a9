/* SPDX-License-Identifier: MIT */
/* t-crc32c.c: CRC-32C known vectors, hardware vs table vs bitwise, incremental computation. */
#include "compat.h"
#include "crc32c.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	return tap_rng(&rng_state);
}

/* The definition, one bit at a time: an oracle independent of either fast method. */
static uint32_t crc_bitwise(uint32_t crc, const void *p, size_t n)
{
	const uint8_t *s = p;
	crc = ~crc;
	while (n--) {
		crc ^= *s++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void test_vectors(void)
{
	uint8_t buf[32];
	is_uint(crc32c(0, "123456789", 9), 0xe3069283, "crc32c(\"123456789\")");
	is_uint(crc32c_portable(0, "123456789", 9), 0xe3069283, "crc32c_portable(\"123456789\")");
	is_uint(crc_bitwise(0, "123456789", 9), 0xe3069283, "the test's bitwise oracle agrees");

	memset(buf, 0, sizeof(buf));
	is_uint(crc32c(0, buf, 32), 0x8a9136aa, "32 zero bytes");
	is_uint(crc32c_portable(0, buf, 32), 0x8a9136aa, "32 zero bytes (portable)");
	memset(buf, 0xff, sizeof(buf));
	is_uint(crc32c(0, buf, 32), 0x62a8ab43, "32 0xff bytes");
	is_uint(crc32c_portable(0, buf, 32), 0x62a8ab43, "32 0xff bytes (portable)");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	is_uint(crc32c(0, buf, 32), 0x46dd794e, "32 ascending bytes (RFC 3720)");
	is_uint(crc32c_portable(0, buf, 32), 0x46dd794e, "32 ascending bytes (portable)");
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	is_uint(crc32c(0, buf, 32), 0x113fdb5c, "32 descending bytes (RFC 3720)");
	is_uint(crc32c_portable(0, buf, 32), 0x113fdb5c, "32 descending bytes (portable)");

	is_uint(crc32c(0, "", 0), 0, "empty input gives 0");
	is_uint(crc32c_portable(0, "", 0), 0, "empty input gives 0 (portable)");
	is_uint(crc32c(0xdeadbeef, "", 0), 0xdeadbeef, "no bytes leave a running CRC as it is");
	is_uint(crc32c_portable(0xdeadbeef, "", 0), 0xdeadbeef, "  (portable)");
	is_uint(crc32c(0, "a", 1), 0xc1d04330, "\"a\"");
}

static void test_random_lengths(void)
{
	enum { MAXLEN = 300, MAXOFF = 16 };
	uint8_t *buf = malloc(MAXLEN + MAXOFF);
	int bad_hw = 0, bad_sw = 0, bad_seed = 0;
	for (int rep = 0; rep < 4; rep++) {
		for (size_t i = 0; i < MAXLEN + MAXOFF; i++)
			buf[i] = (uint8_t)rng();
		for (size_t off = 0; off < MAXOFF; off++) {
			for (size_t len = 0; len <= MAXLEN; len++) {
				const uint8_t *p = buf + off;
				uint32_t want = crc_bitwise(0, p, len);
				uint32_t hw = crc32c(0, p, len);
				uint32_t sw = crc32c_portable(0, p, len);
				if (hw != sw)
					bad_hw++;
				if (sw != want)
					bad_sw++;
				uint32_t seed = (uint32_t)rng();
				if (crc32c(seed, p, len) != crc_bitwise(seed, p, len) ||
				    crc32c_portable(seed, p, len) != crc_bitwise(seed, p, len))
					bad_seed++;
			}
		}
	}
	is_int(bad_hw, 0, "crc32c = crc32c_portable on random data, lengths 0..300, offsets 0..15");
	is_int(bad_sw, 0, "crc32c_portable = the bitwise definition on the same");
	is_int(bad_seed, 0, "both agree with the definition when continuing a random CRC");
	free(buf);

	/* Large buffers, including all-zero and all-one data. */
	size_t big = (1 << 20) + 7;
	uint8_t *b = malloc(big);
	for (size_t i = 0; i < big; i++)
		b[i] = (uint8_t)rng();
	uint32_t bw = crc_bitwise(0, b, big);
	ok(crc32c(0, b, big) == bw && crc32c_portable(0, b, big) == bw,
	   "1 MiB + 7 random bytes: all three agree");
	memset(b, 0, big);
	ok(crc32c(0, b, big) == crc32c_portable(0, b, big), "1 MiB of zeros");
	memset(b, 0xff, big);
	ok(crc32c(0, b + 1, big - 1) == crc32c_portable(0, b + 1, big - 1),
	   "1 MiB of 0xff, odd start");
	free(b);
}

static void test_incremental(void)
{
	enum { N = 1000 };
	uint8_t buf[N];
	for (size_t i = 0; i < N; i++)
		buf[i] = (uint8_t)rng();
	uint32_t whole = crc32c(0, buf, N);
	uint32_t whole_sw = crc32c_portable(0, buf, N);
	is_uint(whole, whole_sw, "one-shot CRC of 1000 bytes");

	int bad = 0, bad_sw = 0;
	for (size_t k = 0; k <= N; k++) {
		if (crc32c(crc32c(0, buf, k), buf + k, N - k) != whole)
			bad++;
		if (crc32c_portable(crc32c_portable(0, buf, k), buf + k, N - k) != whole)
			bad_sw++;
	}
	is_int(bad, 0, "crc32c split at every point equals the one-shot CRC");
	is_int(bad_sw, 0, "crc32c_portable split at every point equals the one-shot CRC");

	int bad_mixed = 0;
	for (size_t k = 0; k <= N; k += 7)
		if (crc32c_portable(crc32c(0, buf, k), buf + k, N - k) != whole ||
		    crc32c(crc32c_portable(0, buf, k), buf + k, N - k) != whole)
			bad_mixed++;
	is_int(bad_mixed, 0, "the two methods can continue each other's CRC");

	int bad_pieces = 0;
	for (int rep = 0; rep < 2000; rep++) {
		uint32_t c = 0;
		size_t pos = 0;
		while (pos < N) {
			size_t take = (size_t)(rng() % 40);
			take = FTH_MIN(take, N - pos);
			if (rep & 1)
				c = crc32c(c, buf + pos, take);
			else
				c = crc32c_portable(c, buf + pos, take);
			pos += take;
		}
		if (c != whole)
			bad_pieces++;
	}
	is_int(bad_pieces, 0, "random pieces of 0..39 bytes equal the one-shot CRC");

	uint32_t c = 0;
	for (size_t i = 0; i < N; i++)
		c = crc32c(c, buf + i, 1);
	is_uint(c, whole, "byte at a time equals one-shot");

	c = crc32c(0, "1234", 4);
	is_uint(crc32c(c, "56789", 5), 0xe3069283, "\"1234\" then \"56789\"");
}

static void test_residue(void)
{
	/* A message followed by its CRC (little-endian) has the same CRC: the CRC-32C residue. */
	int bad = 0;
	uint8_t msg[64 + 4];
	for (int rep = 0; rep < 200; rep++) {
		size_t n = (size_t)(rng() % 65);
		for (size_t i = 0; i < n; i++)
			msg[i] = (uint8_t)rng();
		uint32_t c = crc32c(0, msg, n);
		for (int i = 0; i < 4; i++)
			msg[n + i] = (uint8_t)(c >> (8 * i));
		if (crc32c(0, msg, n + 4) != 0x48674bc7)
			bad++;
	}
	is_int(bad, 0, "message || CRC always checks to the residue 0x48674bc7");

	/* Every single-bit error in a 64-byte message changes the CRC. */
	uint8_t m[64];
	for (size_t i = 0; i < sizeof(m); i++)
		m[i] = (uint8_t)rng();
	uint32_t good = crc32c(0, m, sizeof(m));
	int undetected = 0;
	for (size_t bit = 0; bit < 8 * sizeof(m); bit++) {
		m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (crc32c(0, m, sizeof(m)) == good)
			undetected++;
		m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	is_int(undetected, 0, "every single-bit error is detected");
}

int main(void)
{
	test_vectors();
	test_random_lengths();
	test_incremental();
	test_residue();
	return done_testing();
}
