/* SPDX-License-Identifier: MIT */
/* t-buf.c: the growable byte buffer: growth, printf, varints, escaping, detach. */
#include "compat.h"
#include "buf.h"
#include "le.h"
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The invariants every operation keeps. */
static bool sane(const struct buf *b)
{
	if (!b->data)
		return false;
	if (b->cap == 0)
		return b->len == 0 && b->data == (const uint8_t *)buf_empty && buf_empty[0] == '\0';
	return b->len < b->cap && b->data[b->len] == '\0';
}

static void test_empty(void)
{
	struct buf b = BUF_INIT;
	ok(b.data != NULL, "BUF_INIT: data is not NULL");
	is_str((const char *)b.data, "", "BUF_INIT: data is the empty string");
	ok(b.len == 0 && b.cap == 0 && sane(&b), "BUF_INIT: empty, nothing allocated");
	buf_reset(&b);
	ok(sane(&b) && b.len == 0, "buf_reset of an empty buffer");
	buf_release(&b);
	ok(sane(&b) && b.cap == 0, "buf_release of an empty buffer");

	struct buf c;
	memset(&c, 0xab, sizeof(c));
	buf_init(&c);
	ok(sane(&c) && c.len == 0 && c.cap == 0, "buf_init gives an empty buffer");
	is_str((const char *)c.data, "", "  whose data is \"\"");

	buf_add(&c, "", 0);
	ok(sane(&c) && c.len == 0, "adding nothing keeps it empty and terminated");
	is_str((const char *)c.data, "", "  data still \"\"");
	buf_release(&c);
}

static void test_add(void)
{
	struct buf b = BUF_INIT;
	buf_addstr(&b, "hello");
	is_str((const char *)b.data, "hello", "buf_addstr");
	is_uint(b.len, 5, "  len 5");
	buf_addch(&b, ',');
	buf_addch(&b, ' ');
	buf_addstr(&b, "world");
	is_str((const char *)b.data, "hello, world", "buf_addch and more buf_addstr");
	ok(sane(&b), "  terminated");

	static const uint8_t bin[] = { 0, 1, 2, 0, 0xff, 0x80, 0 };
	buf_add(&b, bin, sizeof(bin));
	ok(b.len == 12 + sizeof(bin) && memcmp(b.data + 12, bin, sizeof(bin)) == 0 && sane(&b),
	   "buf_add copies binary data with NULs");

	buf_reset(&b);
	size_t cap = b.cap;
	ok(b.len == 0 && sane(&b) && b.cap == cap, "buf_reset empties but keeps the allocation");
	is_str((const char *)b.data, "", "  data is \"\" again");
	buf_addstr(&b, "again");
	is_str((const char *)b.data, "again", "the buffer is reusable after reset");
	buf_release(&b);
	ok(sane(&b) && b.cap == 0 && b.len == 0, "buf_release returns to the empty state");
	buf_addstr(&b, "reuse");
	is_str((const char *)b.data, "reuse", "the buffer is reusable after release");
	buf_release(&b);
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)((i * 2654435761u) >> 11);
}

static void test_growth(void)
{
	struct buf b = BUF_INIT;
	int bad = 0;
	size_t reallocs = 0;
	uint8_t *last = b.data;
	for (size_t i = 0; i < 200000; i++) {
		uint8_t c = pattern(i);
		buf_add(&b, &c, 1);
		if (b.data != last) {
			reallocs++;
			last = b.data;
		}
		if (!sane(&b) || b.len != i + 1)
			bad++;
	}
	is_int(bad, 0, "200000 one-byte appends keep len and the terminator right");
	size_t wrong = 0;
	for (size_t i = 0; i < b.len; i++)
		if (b.data[i] != pattern(i))
			wrong++;
	is_uint(wrong, 0, "  and every byte survives the reallocations");
	ok(reallocs < 40, "growth is geometric (%zu reallocations)", reallocs);
	ok(b.cap >= b.len + 1, "  capacity %zu holds len %zu and the NUL", b.cap, b.len);
	buf_release(&b);

	/* Appends of every size from 0 to 300, against a reference copy. */
	uint8_t *ref = malloc(300 * 301 / 2 + 1);
	size_t rlen = 0;
	uint8_t src[300];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = pattern(i + 77);
	bad = 0;
	for (size_t n = 0; n <= 300; n++) {
		buf_add(&b, src, n);
		memcpy(ref + rlen, src, n);
		rlen += n;
		if (!sane(&b) || b.len != rlen)
			bad++;
	}
	ok(bad == 0 && b.len == rlen && memcmp(b.data, ref, rlen) == 0,
	   "appends of 0..300 bytes match a reference copy");
	free(ref);
	buf_release(&b);
}

static void test_reserve(void)
{
	struct buf b = BUF_INIT;
	uint8_t *p = buf_reserve(&b, 10);
	ok(p == b.data && b.cap >= 11, "buf_reserve on an empty buffer allocates room and NUL");
	ok(b.len == 0 && b.data[0] == '\0', "  without changing len; data stays \"\"");
	memcpy(p, "0123456789", 10);
	b.len += 10;
	b.data[b.len] = '\0';
	p = buf_reserve(&b, 1000);
	ok(p == b.data + 10, "buf_reserve returns the end of the data");
	ok(b.cap >= 10 + 1000 + 1, "  with room for N more bytes and the NUL (cap %zu)", b.cap);
	ok(memcmp(b.data, "0123456789", 10) == 0, "  keeping the contents");
	memset(p, 'x', 1000);
	b.len += 1000;
	b.data[b.len] = '\0';
	size_t cap = b.cap;
	p = buf_reserve(&b, cap - b.len - 1);
	ok(b.cap == cap && p == b.data + b.len, "reserving exactly the free room does not grow");
	p = buf_reserve(&b, 0);
	ok(b.cap == cap && p == b.data + b.len, "reserving 0 bytes does not grow");
	ok(b.len == 1010 && strspn((const char *)b.data + 10, "x") == 1000 && sane(&b),
	   "the data written through buf_reserve is kept");
	buf_release(&b);
}

static void vprintf_wrapper(struct buf *b, const char *fmt, ...) FTH_PRINTF(2, 3);

static void vprintf_wrapper(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(b, fmt, ap);
	va_end(ap);
}

static void test_printf(void)
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "%d-%s", 42, "x");
	is_str((const char *)b.data, "42-x", "buf_printf into an empty buffer");
	is_uint(b.len, 4, "  len 4");
	buf_printf(&b, "%s", "");
	ok(b.len == 4 && sane(&b), "buf_printf of an empty result");
	buf_printf(&b, "|%5.2f|%#x", 3.14159, 255);
	is_str((const char *)b.data, "42-x| 3.14|0xff",
	       "buf_printf appends (with libc conversions)");
	buf_release(&b);

	/* Results of every length from 0 to 300 around the 64-byte first attempt, at various
	 * starting lengths so the reallocation happens in either vsnprintf call. */
	char big[301];
	memset(big, 'q', 300);
	big[300] = '\0';
	int bad = 0;
	for (size_t start = 0; start < 140; start += 7) {
		for (int n = 0; n <= 300; n++) {
			struct buf c = BUF_INIT;
			char want[700];
			for (size_t i = 0; i < start; i++)
				buf_addch(&c, (char)('a' + i % 26));
			memcpy(want, c.data, start);
			snprintf(want + start, sizeof(want) - start, "<%.*s:%d>", n, big, n);
			buf_printf(&c, "<%.*s:%d>", n, big, n);
			if (!sane(&c) || c.len != strlen(want) ||
			    strcmp((char *)c.data, want) != 0) {
				if (!bad)
					diag("start %zu n %d: got '%s'", start, n, (char *)c.data);
				bad++;
			}
			buf_release(&c);
		}
	}
	is_int(bad, 0, "buf_printf output of 3..306 bytes after 0..133 bytes matches snprintf");

	buf_printf(&b, "%s", big);
	ok(b.len == 300 && strcmp((char *)b.data, big) == 0 && sane(&b),
	   "buf_printf of 300 bytes (longer than 64)");
	buf_printf(&b, "%0200d|%s", 7, big);
	ok(b.len == 300 + 201 + 300 && (char)b.data[300 + 199] == '7' &&
		   b.data[300 + 200] == '|' && strcmp((char *)b.data + 501, big) == 0 && sane(&b),
	   "a second long buf_printf appends in full");
	buf_release(&b);

	char exact[65];
	memset(exact, 'e', 64);
	exact[64] = '\0';
	buf_printf(&b, "%s", exact);
	ok(b.len == 64 && strcmp((char *)b.data, exact) == 0 && sane(&b), "exactly 64 bytes");
	buf_printf(&b, "%s", exact);
	ok(b.len == 128 && strspn((char *)b.data, "e") == 128 && sane(&b), "  twice");
	buf_printf(&b, "%.*s", 65, big);
	ok(b.len == 193 && strspn((char *)b.data + 128, "q") == 65 && sane(&b), "65 bytes");
	buf_release(&b);

	vprintf_wrapper(&b, "%s/%d/%s", big, 12345, big);
	ok(b.len == 607 && strncmp((char *)b.data + 300, "/12345/", 7) == 0 &&
		   strcmp((char *)b.data + 307, big) == 0 && sane(&b),
	   "buf_vprintf of long output uses the arguments twice correctly");
	buf_release(&b);

	char *huge = malloc(100001);
	memset(huge, 'h', 100000);
	huge[100000] = '\0';
	buf_addstr(&b, "head:");
	buf_printf(&b, "%s:%s", huge, "tail");
	ok(b.len == 5 + 100000 + 5 && strncmp((char *)b.data, "head:hhh", 8) == 0 &&
		   strcmp((char *)b.data + 100005, ":tail") == 0 && sane(&b),
	   "buf_printf of 100 KB");
	free(huge);
	buf_release(&b);
}

static void test_binary(void)
{
	static const uint64_t values[] = {
		0, 1, 127, 128, 255, 300, 16383, 16384, 2097151, 2097152,
		UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_C(1) << 56, (UINT64_C(1) << 63) - 1,
		UINT64_C(1) << 63, UINT64_MAX,
	};
	struct buf b = BUF_INIT;
	size_t want_len = 0;
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
		size_t before = b.len;
		buf_put_varint(&b, values[i]);
		uint8_t enc[LE_VARINT_MAX];
		size_t n = le_put_varint(enc, values[i]);
		want_len += n;
		if (b.len != before + n || memcmp(b.data + before, enc, n) != 0 || !sane(&b))
			bad++;
	}
	is_int(bad, 0, "buf_put_varint writes le_put_varint's encoding");
	is_uint(b.len, want_len, "  total length");
	const uint8_t *p = b.data, *end = b.data + b.len;
	bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(values); i++) {
		uint64_t v;
		if (le_get_varint(&p, end, &v) != 0 || v != values[i])
			bad++;
	}
	ok(bad == 0 && p == end, "the varints decode back");
	buf_release(&b);

	buf_put_varint(&b, 0);
	ok(b.len == 1 && b.data[0] == 0 && b.data[1] == 0 && b.cap > 1,
	   "varint 0 is one zero byte");
	buf_release(&b);

	for (size_t i = 0; i < ARRAY_SIZE(values); i++)
		buf_put_u64(&b, values[i]);
	ok(b.len == 8 * ARRAY_SIZE(values) && sane(&b), "buf_put_u64 writes 8 bytes each");
	bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(values); i++)
		if (le_get64(b.data + 8 * i) != values[i])
			bad++;
	is_int(bad, 0, "  little-endian, read back by le_get64");
	buf_release(&b);
	buf_put_u64(&b, 0x0102030405060708ULL);
	static const uint8_t le_bytes[] = { 8, 7, 6, 5, 4, 3, 2, 1 };
	ok(b.len == 8 && memcmp(b.data, le_bytes, 8) == 0, "buf_put_u64 byte order");
	buf_release(&b);

	buf_put_str(&b, "abc");
	ok(b.len == 4 && memcmp(b.data, "\3abc", 4) == 0 && sane(&b),
	   "buf_put_str: length varint then bytes");
	buf_put_str(&b, "");
	ok(b.len == 5 && b.data[4] == 0 && sane(&b), "buf_put_str of \"\" is a zero length");
	buf_put_str(&b, NULL);
	ok(b.len == 6 && b.data[5] == 0 && sane(&b), "buf_put_str of NULL is a zero length");
	char long_str[200];
	memset(long_str, 's', 199);
	long_str[199] = '\0';
	buf_put_str(&b, long_str);
	ok(b.len == 6 + 2 + 199 && b.data[6] == (199 | 0x80) && b.data[7] == 1 &&
		   memcmp(b.data + 8, long_str, 199) == 0 && sane(&b),
	   "buf_put_str of 199 bytes uses a 2-byte length");
	p = b.data;
	end = b.data + b.len;
	uint64_t len;
	bool parsed = le_get_varint(&p, end, &len) == 0 && len == 3 && !memcmp(p, "abc", 3);
	p += 3;
	parsed = parsed && le_get_varint(&p, end, &len) == 0 && len == 0;
	parsed = parsed && le_get_varint(&p, end, &len) == 0 && len == 0;
	parsed = parsed && le_get_varint(&p, end, &len) == 0 && len == 199;
	ok(parsed && p + 199 == end, "the strings parse back");
	buf_release(&b);
}

static void test_escaped(void)
{
	struct buf b = BUF_INIT;
	static const char in[] = "a\nb\tc\rd\\e\"f\x1b[0mg\x7fh\x01i\x1fj k~";
	buf_add_escaped(&b, in, sizeof(in) - 1);
	is_str((const char *)b.data, "a\\nb\\tc\\rd\\\\e\\\"f\\x1b[0mg\\x7fh\\x01i\\x1fj k~",
	       "control characters, backslash, quote and ESC are escaped");
	ok(sane(&b) && b.len == strlen((char *)b.data), "  terminated, len right");
	buf_reset(&b);

	buf_add_escaped(&b, "x\0y", 3);
	is_str((const char *)b.data, "x\\x00y", "an embedded NUL within N is escaped");
	buf_reset(&b);
	buf_add_escaped(&b, "abcdef", 3);
	is_str((const char *)b.data, "abc", "only N bytes are used");
	buf_reset(&b);
	buf_add_escaped(&b, "ignored", 0);
	ok(b.len == 0 && sane(&b), "N = 0 adds nothing");
	buf_reset(&b);
	buf_add_escaped(&b, "caf\xc3\xa9 \xff", 7);
	is_str((const char *)b.data, "caf\xc3\xa9 \\xff", "valid UTF-8 passes, other bytes are escaped");
	buf_reset(&b);
	buf_add_escaped(&b, "\xc2\x9b" "2J", 4);
	is_str((const char *)b.data, "\\xc2\\x9b2J", "a C1 control (CSI) is escaped");
	buf_reset(&b);

	/* Every byte value: printable ASCII other than \ and " is kept, all else escaped (no byte
	 * from 0x80 up is valid UTF-8 alone). */
	char all[256];
	for (int i = 0; i < 256; i++)
		all[i] = (char)i;
	buf_add_escaped(&b, all, sizeof(all));
	struct buf want = BUF_INIT;
	for (int i = 0; i < 256; i++) {
		char tmp[8];
		if (i == '\n')
			strcpy(tmp, "\\n");
		else if (i == '\t')
			strcpy(tmp, "\\t");
		else if (i == '\r')
			strcpy(tmp, "\\r");
		else if (i == '\\')
			strcpy(tmp, "\\\\");
		else if (i == '"')
			strcpy(tmp, "\\\"");
		else if (i < 0x20 || i >= 0x7f)
			snprintf(tmp, sizeof(tmp), "\\x%02x", i);
		else
			tmp[0] = (char)i, tmp[1] = '\0';
		buf_addstr(&want, tmp);
	}
	ok(b.len == want.len && memcmp(b.data, want.data, b.len) == 0 && sane(&b),
	   "all 256 byte values escape as specified");
	bool clean = true;
	for (size_t i = 0; i < b.len; i++)
		if (b.data[i] < 0x20 || b.data[i] == 0x7f)
			clean = false;
	ok(clean, "  and no control character is left in the output");
	buf_release(&want);
	buf_release(&b);

	buf_addstr(&b, "pre:");
	buf_add_escaped(&b, "\"q\"", 3);
	is_str((const char *)b.data, "pre:\\\"q\\\"", "buf_add_escaped appends");
	buf_release(&b);
}

static void test_detach(void)
{
	struct buf b = BUF_INIT;
	size_t len = 99;
	char *s = buf_detach(&b, &len);
	ok(s != NULL && s[0] == '\0' && len == 0, "detaching an empty buffer gives \"\" and 0");
	ok(s != buf_empty, "  a fresh allocation, not the shared empty string");
	free(s);
	ok(sane(&b) && b.cap == 0, "  and leaves the buffer empty");

	buf_addstr(&b, "some text");
	uint8_t *data = b.data;
	s = buf_detach(&b, &len);
	ok(s == (char *)data && len == 9, "buf_detach hands over the data and its length");
	is_str(s, "some text", "  NUL-terminated");
	ok(sane(&b) && b.len == 0 && b.cap == 0 && b.data != (uint8_t *)s,
	   "  and resets the buffer");
	buf_addstr(&b, "more");
	is_str((const char *)b.data, "more", "the buffer is usable after detach");
	is_str(s, "some text", "  without touching the detached data");
	free(s);

	s = buf_detach(&b, NULL);
	is_str(s, "more", "buf_detach with a NULL length");
	free(s);

	buf_addstr(&b, "x");
	buf_reset(&b);
	s = buf_detach(&b, &len);
	ok(s && s[0] == '\0' && len == 0, "detaching after reset gives \"\"");
	free(s);
	buf_release(&b);
}

int main(void)
{
	test_empty();
	test_add();
	test_growth();
	test_reserve();
	test_printf();
	test_binary();
	test_escaped();
	test_detach();
	return done_testing();
}
