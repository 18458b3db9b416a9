/* SPDX-License-Identifier: MIT */
/*
 * escape.c: text from the database made safe for a terminal (vm_escape), and values formatted
 * for their unit (vm_format_value).  Names come from someone else's program: nothing that a
 * terminal interprets (C0 and C1 controls, ESC sequences, DEL, invalid or overlong UTF-8,
 * surrogates) passes through.
 */
#include "compat.h"
#include "buf.h"
#include "mfile.h"
#include "model.h"

#include <math.h>
#include <stdio.h>

/* The length of the valid UTF-8 sequence at S (N bytes left) and its code point; 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

void vm_escape(struct buf *out, const char *str, size_t n, bool utf8)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		if (c >= 0x20 && c < 0x7f) {
			buf_addch(out, (char)c);
			i++;
			continue;
		}
		if (c == '\n') {
			buf_addstr(out, "\\n");
			i++;
			continue;
		}
		if (c == '\t') {
			buf_addstr(out, "\\t");
			i++;
			continue;
		}
		if (c == 0x1b) {
			buf_addstr(out, "\\e");
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len = c >= 0x80 ? utf8_decode(s + i, n - i, &cp) : 0;
		/* C1 controls (U+0080..U+009F) act like ESC sequences on some terminals. */
		if (len && cp >= 0xa0 && cp != 0x2028 && cp != 0x2029 && cp != 0xfeff) {
			if (utf8)
				buf_add(out, s + i, len);
			else
				buf_printf(out, "\\u{%x}", (unsigned)cp);
			i += len;
			continue;
		}
		if (len) {
			buf_printf(out, "\\u{%x}", (unsigned)cp);
			i += len;
			continue;
		}
		buf_printf(out, "\\x%02x", c);
		i++;
	}
}

/* Three significant digits for V in [1, 1000): "1.25", "12.5", "830". */
static void three_digits(double v, const char *suffix, char *out, size_t size)
{
	int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
	snprintf(out, size, "%.*f %s", decimals, v, suffix);
}

const char *vm_format_value(double v, unsigned unit, char *out, size_t size)
{
	if (!size)
		return out;
	if (isnan(v)) {
		snprintf(out, size, "n/a");
		return out;
	}
	if (isinf(v)) {
		snprintf(out, size, v < 0 ? "-inf" : "inf");
		return out;
	}
	double a = fabs(v);
	const char *sign = v < 0 ? "-" : "";
	char tmp[64];
	if (unit == MFILE_UNIT_NANOSECONDS) {
		static const struct {
			double scale;
			const char *name;
		} units[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" } };
		if (a == 0) {
			snprintf(out, size, "0 s");
			return out;
		}
		if (a >= 1e12) {
			snprintf(out, size, "%s%.3g s", sign, a / 1e9);
			return out;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (a >= units[i].scale * 0.9995 || i == 3) {
				three_digits(a / units[i].scale, units[i].name, tmp, sizeof(tmp));
				snprintf(out, size, "%s%s", sign, tmp);
				return out;
			}
	}
	if (unit == MFILE_UNIT_BYTES) {
		static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
		size_t k = 0;
		while (a >= 1024 && k + 1 < sizeof(names) / sizeof(names[0])) {
			a /= 1024;
			k++;
		}
		if (k == 0)
			snprintf(out, size, "%s%.0f B", sign, a);
		else
			snprintf(out, size, "%s%.1f %s", sign, a, names[k]);
		return out;
	}
	/* Counts: integers as such below a million, else three significant digits. */
	if (a < 1e6 && a == floor(a))
		snprintf(out, size, "%s%.0f", sign, a);
	else if (a < 1e6 && a >= 0.01)
		snprintf(out, size, "%s%.3g", sign, a);
	else
		snprintf(out, size, "%s%.2e", sign, a);
	return out;
}
