/* SPDX-License-Identifier: MIT */
/*
 * compare.h: `view A B`: two databases merged into one whose scopes are matched by what they
 * are in the source (module name, function, file name and line, inline chain), not by address,
 * and whose metrics come in groups: A's, B's, B - A and B / A (model.h: struct model_compare).
 * The merged database is written to a private temporary directory and removed once the model
 * has it open, so the whole of view (every tree, the panes, batch output) works on it as on
 * any database.
 */
#ifndef FATHOM_VIEW_COMPARE_H
#define FATHOM_VIEW_COMPARE_H

#include "model.h"

struct compare_options {
	bool normalize; /* counts as shares of each run's total (time stays in seconds) */
	bool whole;	/* open the result with model_open_whole (batch output) */
	bool no_threads; /* leave out the per-thread values (batch output of the sums) */
};

/*
 * Merge databases A and B (directories, or their summary.fdb) and open the result.  Returns
 * the model with its comparison attached (model_comparison), or NULL with the error message
 * naming the database at fault.
 */
struct model *compare_open(const char *a, const char *b, const struct compare_options *opt);

#endif
