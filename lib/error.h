/* SPDX-License-Identifier: MIT */
/*
 * error.h: how fathom code reports failure.
 *
 * Below main(), a function that fails records a message and returns -1 (or NULL):
 *
 *     if (n > limit)
 *         return fth_error("%s: chunk CCT: %llu nodes in %zu bytes", path, n, size);
 *
 * The message lives in a per-thread buffer; the caller may add context in front of it with
 * fth_error_prefix() and main() prints it with fth_errmsg().  Formatting goes through
 * fth_format(), which is async-signal-safe, so measure's preloaded library uses the same calls.
 * Only main() exits: die() is for main.c files.
 */
#ifndef FATHOM_ERROR_H
#define FATHOM_ERROR_H

#include <stdarg.h>
#include <stddef.h>

/* Record a message for this thread; always returns -1. */
int fth_error(const char *fmt, ...) FTH_PRINTF(1, 2);
/* Like fth_error(), appending ": strerror(err)". */
int fth_error_errno(int err, const char *fmt, ...) FTH_PRINTF(2, 3);
/* Put "PREFIX: " in front of the current message; returns -1. */
int fth_error_prefix(const char *fmt, ...) FTH_PRINTF(1, 2);
/* The last message recorded by this thread ("" when none). */
const char *fth_errmsg(void);
/* Forget the current message. */
void fth_error_clear(void);

/* For main() only: print "PROG: MESSAGE" to stderr and exit with STATUS. */
void die(int status, const char *fmt, ...) FTH_PRINTF(2, 3) FTH_NORETURN;
/* For main() only: print "PROG: warning: MESSAGE" to stderr. */
void warn(const char *fmt, ...) FTH_PRINTF(1, 2);
/* How many warnings warn() has printed. */
extern unsigned long fth_warnings;
/* The program name used by die() and warn(); set once by main(). */
extern const char *fth_progname;

/*
 * Async-signal-safe formatting into BUF of SIZE bytes (always NUL-terminated when SIZE > 0).
 * Supports %s %c %d %i %u %x %X %p %% with the l, ll and z length modifiers, a field width,
 * the '0', '-' and '#' flags, and %.*s.  Returns the length it would have written, like snprintf.
 */
size_t fth_format(char *buf, size_t size, const char *fmt, ...) FTH_PRINTF(3, 4);
size_t fth_vformat(char *buf, size_t size, const char *fmt, va_list ap) FTH_PRINTF(3, 0);
/* strerror() that is async-signal-safe (a table of the common codes, else "error N"). */
const char *fth_strerror(int err, char *buf, size_t size);

#endif
