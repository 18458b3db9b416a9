/* SPDX-License-Identifier: MIT */
/*
 * escape.c: names from someone else's program made safe for a terminal, and exact in JSON
 * (escape.h).  Every program that prints a name from its input prints it through here.
 */
#include "compat.h"
#include "escape.h"

#include <stdarg.h>

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
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

bool utf8_invisible(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0xfeff;
}

void esc_terminal(struct buf *out, const char *str, size_t n, unsigned flags)
{
	const unsigned char *s = (const unsigned char *)str;
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		if ((c >= 0x20 && c < 0x7f) || ((flags & ESC_LAYOUT) && (c == '\n' || c == '\t'))) {
			size_t run = i + 1;
			while (run < n && ((s[run] >= 0x20 && s[run] < 0x7f) ||
					   ((flags & ESC_LAYOUT) && (s[run] == '\n' || s[run] == '\t'))))
				run++;
			buf_add(out, s + i, run - i);
			i = run;
			continue;
		}
		if (c == '\n' || c == '\t' || c == 0x1b) {
			buf_addstr(out, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\e");
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len = c >= 0x80 ? utf8_decode(s + i, n - i, &cp) : 0;
		if (len && !utf8_invisible(cp) && (flags & ESC_UTF8))
			buf_add(out, s + i, len);
		else if (len)
			buf_printf(out, "\\u{%x}", (unsigned)cp);
		else
			buf_printf(out, "\\x%02x", c);
		i += len ? len : 1;
	}
}

void esc_json(struct buf *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	buf_addch(out, '"');
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			buf_addch(out, '\\');
			buf_addch(out, (char)c);
			i++;
			continue;
		}
		if (c < 0x80) {
			if (c >= 0x20 && c < 0x7f) {
				size_t run = i + 1;
				while (run < n && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
				       s[run] != '\\')
					run++;
				buf_add(out, s + i, run - i);
				i = run;
				continue;
			} else if (c == '\n' || c == '\t')
				buf_addstr(out, c == '\n' ? "\\n" : "\\t");
			else
				buf_printf(out, "\\u%04x", c);
			i++;
			continue;
		}
		uint32_t cp = 0;
		size_t len = utf8_decode(s + i, n - i, &cp);
		if (!len) {
			buf_printf(out, "\\u%04x", 0xdc00u + c); /* surrogateescape */
			i++;
		} else if (utf8_invisible(cp)) {
			buf_printf(out, "\\u%04x", (unsigned)cp);
			i += len;
		} else {
			buf_add(out, s + i, len);
			i += len;
		}
	}
	buf_addch(out, '"');
}

void esc_write(FILE *f, const void *data, size_t n)
{
	struct buf safe = BUF_INIT;
	esc_terminal(&safe, data, n, ESC_UTF8 | ESC_LAYOUT);
	fwrite(safe.data, 1, safe.len, f);
	buf_release(&safe);
}

void esc_printf(FILE *f, const char *fmt, ...)
{
	struct buf raw = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_vprintf(&raw, fmt, ap);
	va_end(ap);
	esc_write(f, raw.data, raw.len);
	buf_release(&raw);
}
