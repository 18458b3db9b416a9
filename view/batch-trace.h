/* SPDX-License-Identifier: MIT */
/* batch-trace.h: view --batch --view trace: the trace timeline as text or JSON (batch-trace.c). */
#ifndef FATHOM_VIEW_BATCH_TRACE_H
#define FATHOM_VIEW_BATCH_TRACE_H

#include "model-trace.h"

#include <stdbool.h>
#include <stdio.h>

struct batch_trace_options {
	struct trace_model *m;
	uint64_t t0, t1; /* the window, absolute ns */
	uint32_t width;	 /* bins */
	bool json;
	const char *database;
	/* The name of function F as the other views show it (demangled). */
	const char *(*function_name)(void *ctx, uint32_t f);
	void *ctx;
};

/* Print the timeline to OUT: 0, or -1 with the error. */
int batch_trace(const struct batch_trace_options *o, FILE *out);

#endif
