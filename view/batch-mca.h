/* SPDX-License-Identifier: MIT */
/* batch-mca.h: view --batch --mca LOOP: a loop's llvm-mca figures beside what was measured. */
#ifndef FATHOM_VIEW_BATCH_MCA_H
#define FATHOM_VIEW_BATCH_MCA_H

#include "model.h"

#include <stdbool.h>
#include <stdio.h>

struct batch_mca_options {
	const char *loop; /* FILE:LINE of the loop statement, or the loop's context number */
	const char *mcpu; /* NULL: llvm-mca's default (the host's CPU) */
	const char *const *structs;
	size_t nstructs;
	bool json;
	const char *database;
};

/* Print the loop's analysis to OUT.  Returns 0 (the analysis may say the loop cannot be
 * modelled, and why), or -1 with the error: no such loop, a write error. */
int batch_mca(struct model *model, const struct batch_mca_options *o, FILE *out);
/* The same analysis, as text or JSON, appended to OUT (the names raw: escape to print). */
struct buf;
int mca_describe(struct model *model, const struct batch_mca_options *o, struct buf *out);
/* The loop of NODE of VIEW as --mca names it (its context in the top-down view: the innermost
 * loop around a line or call site; FILE:LINE in the flat view) into SPEC; -1 when none. */
int mca_loop_at(struct model *model, enum model_view view, model_node node, char *spec,
		size_t size);

#endif
