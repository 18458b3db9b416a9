/* SPDX-License-Identifier: MIT */
/* cli.c: die() and warn(), the stdio side of error reporting, for main() only. */
#include "compat.h"
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *fth_progname = "fathom";

void die(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", fth_progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(status);
}

void warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: warning: ", fth_progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
