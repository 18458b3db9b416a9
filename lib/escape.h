/* SPDX-License-Identifier: MIT */
/*
 * escape.h: names from someone else's program (symbols, file names, module paths, thread file
 * names) written out safely: for a terminal, where nothing a terminal interprets may pass, and
 * as JSON, which carries the exact bytes.
 */
#ifndef FATHOM_ESCAPE_H
#define FATHOM_ESCAPE_H

#include "buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The length of the valid UTF-8 sequence at S (N bytes left) and its code point in *CP; 0 when
 * it is not valid (overlong, a surrogate, past U+10FFFF, cut short). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Whether code point CP is one a terminal may act on or that changes how text reads: C0 and C1
 * controls (U+0080 to U+009F act like ESC sequences on some terminals), DEL, the line and
 * paragraph separators, the byte-order mark.  Such code points are always escaped. */
bool utf8_invisible(uint32_t cp);

/* How esc_terminal() writes what it keeps. */
#define ESC_UTF8 0x1   /* valid UTF-8 (U+00A0 and up) passes; otherwise it becomes \u{...} */
#define ESC_LAYOUT 0x2 /* newlines and tabs pass (messages); otherwise they become \n, \t */

/*
 * Append S (N bytes) for a terminal: C0 and C1 controls, ESC (\e), DEL, U+2028, U+2029 and
 * U+FEFF become \xNN, \e or \u{...}, and bytes that are not valid UTF-8 become \xNN.
 */
void esc_terminal(struct buf *out, const char *s, size_t n, unsigned flags);

/*
 * Append S (N bytes) as a JSON string, quotes included, that decodes to exactly these bytes:
 * quote, backslash and controls (C0, DEL, C1) escaped as JSON requires (\u001b for ESC), valid
 * UTF-8 kept, and each byte B that is not valid UTF-8 written as the lone surrogate \uDCBB
 * (U+DC00 + B), as Python's "surrogateescape" error handler reads and writes them.  So the
 * output is plain ASCII-safe text for a terminal, and json.loads(x).encode("utf-8",
 * "surrogateescape") gives the bytes back.
 */
void esc_json(struct buf *out, const char *s, size_t n);

/* fprintf to F with the formatted text passed through esc_terminal(ESC_UTF8 | ESC_LAYOUT):
 * the messages of the programs, which hold names from their inputs. */
void esc_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* fwrite DATA (N bytes) to F through esc_terminal(ESC_UTF8 | ESC_LAYOUT): dumps and reports. */
void esc_write(FILE *f, const void *data, size_t n);

#endif
