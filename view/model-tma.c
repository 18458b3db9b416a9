/* SPDX-License-Identifier: MIT */
/*
 * model-tma.c: the top-down (TMA) breakdown of a node: the TMA metrics of the database as a
 * forest (metric.parent), each node's formula evaluated on the node's inclusive values, the
 * dominant path (the largest child from the top) and the nodes over their thresholds.  A top
 * node whose formula counts slots ("Total Slots") is the whole: 1 when it has slots, NaN when
 * it has none.
 */
#include "compat.h"
#include "model-internal.h"
#include "mfile.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void add_subtree(struct model *model, uint32_t k, uint32_t depth, uint32_t *n)
{
	if (depth > 64)
		return;
	const struct dbfile_metric *m = &model->db.metrics[k];
	bool cycles = m->flags & MFILE_METRIC_OF_CYCLES;
	int32_t p = m->parent;
	bool parent_cycles = p >= 0 && (uint32_t)p < model->nm &&
			     (model->db.metrics[p].flags & MFILE_METRIC_OF_CYCLES);
	model->tma_rows[(*n)++] =
		(struct model_tma_row){ .metric = k,
					.depth = depth,
					.level = m->level,
					.of_cycles = cycles,
					.basis_changes = p >= 0 && cycles != parent_cycles };
	for (uint32_t c = 0; c < model->nm; c++)
		if (model->db.metrics[c].parent == (int32_t)k && c != k)
			add_subtree(model, c, depth + 1, n);
}

/* Whether the tree of rows starts at TMA node K: a top node (in a comparison, of A's tree,
 * or of B's where A has no node of its name). */
static bool tree_top(const struct model *model, uint32_t k)
{
	int32_t p = model->db.metrics[k].parent;
	if (!model_metric_is_tma(model, k) || (p >= 0 && (uint32_t)p < model->nm))
		return false;
	const struct model_compare *cmp = model_comparison(model);
	return !cmp || cmp->metrics[k].role == MODEL_ROLE_TMA_A || cmp->metrics[k].a == DBFILE_NONE;
}

/* METRIC's fraction at NODE: a top node's clamped to the whole (NaN without slots). */
static double tma_fraction(struct model *model, enum model_view view, model_node node,
			   uint32_t metric, uint32_t depth)
{
	double v = model_value(model, view, node, metric, true);
	if (depth == 0 && !isnan(v))
		v = v > 1 ? 1 : v <= 0 ? NAN : v;
	return v;
}

uint32_t model_tma(struct model *model, enum model_view view, model_node node,
		   const struct model_tma_row **rows)
{
	uint32_t count = 0;
	for (uint32_t k = 0; k < model->nm; k++)
		count += model_metric_is_tma(model, k);
	*rows = NULL;
	if (!count)
		return 0;
	free(model->tma_rows);
	model->tma_rows = xcalloc(count, sizeof(*model->tma_rows));
	uint32_t n = 0;
	for (uint32_t k = 0; k < model->nm && n < count; k++)
		if (tree_top(model, k))
			add_subtree(model, k, 0, &n);
	const struct model_compare *cmp = model_comparison(model);
	if (cmp) {
		/* B's nodes that A's tree has not (B measured deeper levels, say): kept with their
		 * own rows, B's fraction only. */
		uint32_t m = 0;
		for (uint32_t i = 0; i < n; i++) {
			const struct model_compare_metric *c = &cmp->metrics[model->tma_rows[i].metric];
			if (c->role == MODEL_ROLE_TMA_A || c->a == DBFILE_NONE)
				model->tma_rows[m++] = model->tma_rows[i];
		}
		n = m;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct model_tma_row *r = &model->tma_rows[i];
		const struct dbfile_metric *m = &model->db.metrics[r->metric];
		double v = tma_fraction(model, view, node, r->metric, r->depth);
		r->fraction = v;
		r->fraction_b = NAN;
		r->over_threshold = !isnan(m->threshold) && !isnan(v) && v > m->threshold;
		if (!cmp)
			continue;
		const struct model_compare_metric *c = &cmp->metrics[r->metric];
		if (c->role == MODEL_ROLE_TMA_B) { /* B's alone */
			r->fraction_b = v;
			r->fraction = NAN;
		} else if (c->b != DBFILE_NONE) {
			r->fraction_b = tma_fraction(model, view, node, c->b, r->depth);
			r->over_threshold |= !isnan(m->threshold) && r->fraction_b > m->threshold;
		}
	}
	/* The dominant path: the largest top node, then the largest child at each level. */
	uint32_t parent_row = UINT32_MAX, depth = 0;
	for (;;) {
		uint32_t best = UINT32_MAX;
		for (uint32_t i = parent_row == UINT32_MAX ? 0 : parent_row + 1; i < n; i++) {
			struct model_tma_row *r = &model->tma_rows[i];
			if (r->depth < depth)
				break;
			if (r->depth != depth || isnan(r->fraction))
				continue;
			if (best == UINT32_MAX || r->fraction > model->tma_rows[best].fraction)
				best = i;
		}
		if (best == UINT32_MAX)
			break;
		model->tma_rows[best].dominant = true;
		parent_row = best;
		depth++;
	}
	*rows = model->tma_rows;
	return n;
}
