/* SPDX-License-Identifier: MIT */
/* batch.h: view --batch: the tree of a view printed as text, CSV or JSON (view/batch.c). */
#ifndef FATHOM_VIEW_BATCH_H
#define FATHOM_VIEW_BATCH_H

#include "model.h"

#include <stdio.h>

enum batch_format { BATCH_TEXT, BATCH_CSV, BATCH_JSON };

struct batch_options {
	enum model_view view;
	enum batch_format format;
	const uint32_t *metrics; /* columns, in order */
	uint32_t nmetrics;
	uint32_t depth;	 /* levels expanded below the root; UINT32_MAX: all */
	bool hot_path;	 /* expand only along the hot path from the root */
	bool topdown;	 /* add each node's TMA breakdown */
	bool ascii;	 /* ASCII arrows in labels */
	bool raw;	 /* the exact stored values (ns), not the screen's units and rounding */
	const char *database;
};

/* Print the tree to OUT.  Returns 0, or -1 with the error (a write error). */
int batch_run(struct model *model, const struct batch_options *opt, FILE *out);

#endif
