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

void die(int status, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_printf(&msg, "%s: ", fth_progname);
	buf_vprintf(&msg, fmt, ap);
	buf_addch(&msg, '\n');
	va_end(ap);
	esc_write(stderr, msg.data, msg.len);
	exit(status);
}

unsigned long fth_warnings;

void warn(const char *fmt, ...)
{
	fth_warnings++;
	struct buf msg = BUF_INIT;
	va_list ap;
	va_start(ap, fmt);
	buf_printf(&msg, "%s: warning: ", fth_progname);
	buf_vprintf(&msg, fmt, ap);
	buf_addch(&msg, '\n');
	va_end(ap);
	esc_write(stderr, msg.data, msg.len);
	buf_release(&msg);
}
