/* SPDX-License-Identifier: MIT */
/* t-escape.c: names for a terminal and for JSON (lib/escape.h): what is escaped, and that JSON
 * gives back the exact bytes, invalid UTF-8 included (as surrogateescape reads it). */
#include "compat.h"
#include "buf.h"
#include "escape.h"
#include "tap.h"

#include <string.h>

static void json_is(const char *in, size_t n, const char *want, const char *title)
{
	struct buf b = BUF_INIT;
	esc_json(&b, in, n);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, want, "%s", title);
	buf_release(&b);
}

static void terminal_is(const char *in, unsigned flags, const char *want, const char *title)
{
	struct buf b = BUF_INIT;
	esc_terminal(&b, in, strlen(in), flags);
	buf_addch(&b, '\0');
	is_str((const char *)b.data, want, "%s", title);
	buf_release(&b);
}

int main(void)
{
	json_is("plain", 5, "\"plain\"", "plain ASCII is kept");
	json_is("a\"b\\c", 5, "\"a\\\"b\\\\c\"", "quote and backslash");
	json_is("\x1b]0;t\x07", 6, "\"\\u001b]0;t\\u0007\"", "ESC and BEL as \\u00XX, once");
	json_is("x\n\t\x7f", 4, "\"x\\n\\t\\u007f\"", "newline, tab, DEL");
	json_is("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"", "valid UTF-8 is kept");
	json_is("\xc2\x9b" "2J", 4, "\"\\u009b2J\"", "a C1 control is escaped");
	json_is("\xe2\x80\xa8", 3, "\"\\u2028\"", "the line separator is escaped");
	json_is("a\xff" "b\xc0\xaf", 5, "\"a\\udcffb\\udcc0\\udcaf\"",
		"invalid bytes as lone surrogates U+DC00 + byte");
	json_is("\xed\xa0\x80", 3, "\"\\udced\\udca0\\udc80\"", "an encoded surrogate is invalid");
	json_is("", 0, "\"\"", "the empty string");

	terminal_is("evil\x1b[2J\x07", ESC_UTF8, "evil\\e[2J\\x07", "ESC and BEL for a terminal");
	terminal_is("a\nb\tc", ESC_UTF8, "a\\nb\\tc", "newline and tab in a name");
	terminal_is("a\nb\tc", ESC_UTF8 | ESC_LAYOUT, "a\nb\tc", "... kept in a message");
	terminal_is("\xc2\x9b" "31m", ESC_UTF8, "\\u{9b}31m", "C1 CSI");
	terminal_is("\xef\xbb\xbfx", ESC_UTF8, "\\u{feff}x", "a byte-order mark");
	terminal_is("\xff", ESC_UTF8 | ESC_LAYOUT, "\\xff", "an invalid byte");
	return done_testing();
}
