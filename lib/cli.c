/* SPDX-License-Identifier: MIT */
/* cli.c: die() and warn(), the stdio side of error reporting, for main() only.  Messages hold
 * names from the inputs: they reach the terminal escaped (escape.h). */
#include "compat.h"
#include "buf.h"
#include "error.h"
#include "escape.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *fth_progname = "fathom";

/* Write "PROGNAME: KIND" and the message to stderr, escaped. */
static void cli_report(const char *kind, const char *fmt, va_list ap)
{
	struct buf msg = BUF_INIT;
	buf_printf(&msg, "%s: %s", fth_progname, kind);
	buf_vprintf(&msg, fmt, ap);
	buf_addch(&msg, '\n');
	esc_write(stderr, msg.data, msg.len);
	buf_release(&msg);
}

void die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	cli_report("", fmt, ap);
	va_end(ap);
	exit(status);
}

unsigned long fth_warnings;

void warn(const char *fmt, ...)
{
	va_list ap;
	fth_warnings++;
	va_start(ap, fmt);
	cli_report("warning: ", fmt, ap);
	va_end(ap);
}
