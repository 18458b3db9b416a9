/* SPDX-License-Identifier: MIT */
/*
 * make-tma-mfile: write a synthetic top-down measurement file through lib/ for prof and view:
 *   make-tma-mfile [-c CPU] [-e EVENT] [-p] OUT
 * CPU is a model of measure/tma.h (spr by default), EVENT topdown (default), topdown:retiring,
 * topdown:frontend, topdown:backend or topdown:all.  The metric table is the planner's: the
 * counters of every group, then the TMA nodes with parent, threshold and formula.  The tree
 * has main > compute > {stream, branchy}; stream is memory bound, branchy mispredicts, so each
 * context has a different top-down breakdown.  Each group's counters are credited as measure
 * credits them: the deltas since the previous sample, at the sampled context.
 * With -p it reads OUT back and prints, for each context with values, every TMA node's value
 * computed from the file's own metric table ("ctx OFFSET NODE VALUE"), as prof will.
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "tma.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A per-leaf behaviour: level-1 shares of slots and level-2 parts. */
struct behaviour {
	const char *name;
	double ret, bad, fe, be, heavy, brm, fl, mb;
};

static const struct behaviour leaves[] = {
	{ "stream", .15, .02, .08, .75, .02, .01, .05, .60 },
	{ "branchy", .30, .35, .20, .15, .05, .30, .10, .05 },
	{ "compute", .70, .05, .10, .15, .10, .03, .05, .05 },
};

/* The count of plan event E for LEAF over CYCLES cycles. */
static uint64_t count(const struct tma_plan *p, const struct tma_event *e,
		      const struct behaviour *b, double cycles)
{
	double slots = cycles * p->cpu->width;
	static const struct {
		const char *key;
		size_t off;
	} l1[] = {
		{ "ret", offsetof(struct behaviour, ret) },     { "bad", offsetof(struct behaviour, bad) },
		{ "fe", offsetof(struct behaviour, fe) },       { "be", offsetof(struct behaviour, be) },
		{ "heavy", offsetof(struct behaviour, heavy) }, { "brm", offsetof(struct behaviour, brm) },
		{ "fl", offsetof(struct behaviour, fl) },       { "mb", offsetof(struct behaviour, mb) },
	};
	if (!strcmp(e->key, "slots"))
		return (uint64_t)slots;
	if (!strcmp(e->key, "clks") || !strcmp(e->key, "cyc"))
		return (uint64_t)cycles;
	for (size_t i = 0; i < ARRAY_SIZE(l1); i++)
		if (!strcmp(e->key, l1[i].key) && p->cpu->vendor == TMA_INTEL)
			return (uint64_t)(slots * *(const double *)((const char *)b + l1[i].off));
	if (p->cpu->vendor == TMA_AMD) {
		if (!strcmp(e->key, "fe"))
			return (uint64_t)(slots * b->fe);
		if (!strcmp(e->key, "be"))
			return (uint64_t)(slots * b->be);
		if (!strcmp(e->key, "smt"))
			return (uint64_t)(slots * .02);
		if (!strcmp(e->key, "ret"))
			return (uint64_t)(slots * b->ret);
		if (!strcmp(e->key, "disp"))
			return (uint64_t)(slots * (b->ret + b->bad));
		if (!strcmp(e->key, "fec"))
			return (uint64_t)(cycles * b->fl);
		if (!strcmp(e->key, "misp"))
			return (uint64_t)(cycles * b->brm * .1);
		if (!strcmp(e->key, "rsy"))
			return (uint64_t)(cycles * .001);
		if (!strcmp(e->key, "nc"))
			return (uint64_t)(cycles * b->be);
		if (!strcmp(e->key, "lnc"))
			return (uint64_t)(cycles * b->be * b->mb / (b->be + .01));
		if (!strcmp(e->key, "ucode"))
			return (uint64_t)(slots * b->ret * b->heavy);
	}
	/* Level 3 events: a fraction of cycles that follows the behaviour; the memory stalls
	 * shrink level by level so that L1, L2, L3 and DRAM Bound all have a share. */
	static const struct {
		const char *key;
		double scale;
	} memory[] = { { "bol", 1.6 }, { "l1m", 1.2 }, { "l2m", .8 }, { "l3m", .5 }, { "stt", 2 } };
	double f = cycles * (b->be * .1 + b->fe * .05 + b->ret * .02);
	for (size_t i = 0; i < ARRAY_SIZE(memory); i++)
		if (!strcmp(e->key, memory[i].key))
			f = cycles * b->mb * .4 * memory[i].scale;
	return (uint64_t)f;
}

struct eval_ctx {
	const struct mfile *m;
	uint32_t node;
	double *memo;
	uint8_t *state;
};

/* Metric K in context X->node: a counter's value, or a TMA node's formula (memoised). */
static double metric_value(void *vctx, int k)
{
	struct eval_ctx *x = vctx;
	const struct mfile_cct *c = &x->m->cct;
	if (k < 0 || (uint32_t)k >= x->m->nmetrics)
		return NAN;
	if (!(x->m->metrics[k].flags & MFILE_METRIC_TMA)) {
		for (uint32_t v = c->val_start[x->node]; v < c->val_start[x->node + 1]; v++)
			if (c->val_metric[v] == k)
				return (double)c->val[v];
		return 0;
	}
	if (x->state[k] == 1)
		return NAN;
	if (x->state[k] == 0) {
		x->state[k] = 1;
		x->memo[k] = tma_eval(x->m->metrics[k].formula, metric_value, x, NULL);
		x->state[k] = 2;
	}
	return x->memo[k];
}

static int print_nodes(const char *path)
{
	struct mfile m;
	if (mfile_read(path, &m) < 0)
		return -1;
	double *memo = xcalloc(m.nmetrics, sizeof(double));
	uint8_t *state = xcalloc(m.nmetrics, 1);
	for (uint32_t n = 0; n < m.cct.nnodes; n++) {
		if (m.cct.val_start[n] == m.cct.val_start[n + 1])
			continue;
		struct eval_ctx x = { &m, n, memo, state };
		memset(state, 0, m.nmetrics);
		for (uint32_t k = 0; k < m.nmetrics; k++)
			if (m.metrics[k].flags & MFILE_METRIC_TMA)
				printf("ctx %#llx %s %.6f\n", (unsigned long long)m.cct.offset[n],
				       m.metrics[k].name, metric_value(&x, (int)k));
	}
	free(memo);
	free(state);
	mfile_release(&m);
	return 0;
}

int main(int argc, char **argv)
{
	fth_progname = "make-tma-mfile";
	const char *cpu_name = "spr", *event = "topdown";
	bool print = false;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc - 1)
			cpu_name = argv[++i];
		else if (!strcmp(argv[i], "-e") && i + 1 < argc - 1)
			event = argv[++i];
		else if (!strcmp(argv[i], "-p"))
			print = true;
		else
			break;
	}
	if (i != argc - 1)
		die(2, "usage: make-tma-mfile [-c CPU] [-e EVENT] [-p] OUT");
	const struct tma_cpu *cpu = tma_cpu_find(cpu_name);
	unsigned sub = tma_subtree_of(event);
	if (!cpu || !sub)
		die(2, "unknown CPU %s (%s) or topdown event %s", cpu_name, tma_cpu_names(), event);
	static struct tma_plan plan;
	struct tma_request req;
	memset(&req, 0, sizeof(req));
	req.subtrees = sub;
	for (int k = 0; k < 4; k++) {
		req.rate[k] = 1000;
		req.freq[k] = true;
	}
	struct tma_budget budget = { cpu->gp, cpu->fixed, false, 0 };
	if (tma_plan(cpu, &req, &budget, &plan) < 0)
		die(1, "%s", fth_errmsg());

	struct mfile m;
	memset(&m, 0, sizeof(m));
	m.major = MFILE_MAJOR;
	m.minor = MFILE_MINOR;
	m.id.host = xstrdup("synthetic");
	m.id.pid = 4242;
	m.id.ppid = 1;
	m.id.tid = 4242;
	m.id.rank = -1;
	m.id.parent_thread = -1;
	m.id.program = xstrdup("/opt/tma/matmul");
	m.id.cwd = xstrdup("/opt/tma");
	m.id.argc = 1;
	m.id.argv = xcalloc(1, sizeof(char *));
	m.id.argv[0] = xstrdup("matmul");
	m.id.start_ns = 1700000000000000000ull;
	m.id.end_ns = m.id.start_ns + 2000000000ull;
	m.id.end_reason = xstrdup("exit");
	m.nmodules = 1;
	m.modules = xcalloc(1, sizeof(*m.modules));
	m.modules[0].path = xstrdup("/opt/tma/matmul");
	m.modules[0].base = 0x400000;
	m.modules[0].nranges = 1;
	m.modules[0].ranges = xcalloc(1, sizeof(*m.modules[0].ranges));
	m.modules[0].ranges[0] = (struct mfile_range){ 0x401000, 0x402000, 0x1000, 5 };

	/* Metric table: the counters, then the nodes ($K as planned: nodes follow counters). */
	uint32_t nm = (uint32_t)(plan.nevents + plan.nnodes);
	m.nmetrics = nm;
	m.metrics = xcalloc(nm, sizeof(*m.metrics));
	for (int k = 0; k < plan.nevents; k++) {
		const struct tma_event *e = &plan.ev[k];
		struct mfile_metric *x = &m.metrics[k];
		char d[160];
		x->name = xstrdup(e->name);
		snprintf(d, sizeof(d), "TMA input: %s; perf event type %u config %#llx config1 %#llx",
			 e->event, e->type, (unsigned long long)e->config,
			 (unsigned long long)e->config1);
		x->description = xstrdup(d);
		x->rate_kind = e->sampling ? MFILE_RATE_FREQUENCY : MFILE_RATE_NONE;
		x->rate = e->sampling ? e->rate : 0;
		x->flags = (e->sampling ? 0 : MFILE_METRIC_PROXY) |
			   (plan.multiplexed ? MFILE_METRIC_MULTIPLEXED : 0);
		x->time_enabled = 2000000000ull;
		x->time_running = 2000000000ull / (uint64_t)plan.ngroups;
		x->parent = -1;
		x->threshold = NAN;
		x->formula = xstrdup("");
	}
	for (int j = 0; j < plan.nnodes; j++) {
		const struct tma_node *n = &plan.node[j];
		struct mfile_metric *x = &m.metrics[plan.nevents + j];
		x->name = xstrdup(n->name);
		x->description = xstrdup(n->description);
		x->flags = MFILE_METRIC_TMA | (plan.multiplexed ? MFILE_METRIC_MULTIPLEXED : 0);
		x->parent = n->parent < 0 ? -1 : plan.nevents + n->parent;
		x->threshold = n->threshold;
		x->formula = xstrdup(n->formula);
	}

	/* Tree: root > main (frame) > compute (frame) > stream, branchy (samples), compute's own. */
	enum { NNODES = 6 };
	struct mfile_cct *c = &m.cct;
	c->nnodes = NNODES;
	c->parent = xcalloc(NNODES, sizeof(uint32_t));
	c->kind = xcalloc(NNODES, 1);
	c->module = xcalloc(NNODES, sizeof(uint32_t));
	c->offset = xcalloc(NNODES, sizeof(uint64_t));
	c->val_start = xcalloc(NNODES + 1, sizeof(uint32_t));
	static const uint32_t parent[NNODES] = { MFILE_NO_PARENT, 0, 1, 2, 2, 2 };
	static const uint8_t kind[NNODES] = { MFILE_NODE_ROOT, MFILE_NODE_FRAME, MFILE_NODE_FRAME,
					      MFILE_NODE_SAMPLE, MFILE_NODE_SAMPLE,
					      MFILE_NODE_SAMPLE };
	static const uint64_t offset[NNODES] = { 0, 0x1100, 0x1200, 0x1300, 0x1400, 0x1210 };
	static const int leaf_of[NNODES] = { -1, -1, -1, 0, 1, 2 };
	static const double cycles_at[] = { 6e8, 3e8, 1e8 };
	size_t cap = (size_t)NNODES * (size_t)plan.nevents;
	c->val_metric = xcalloc(cap, sizeof(uint16_t));
	c->val = xcalloc(cap, sizeof(uint64_t));
	for (uint32_t n = 0; n < NNODES; n++) {
		c->parent[n] = parent[n];
		c->kind[n] = kind[n];
		c->module[n] = n ? 0 : MFILE_NO_MODULE;
		c->offset[n] = offset[n];
		c->val_start[n] = (uint32_t)c->nvalues;
		if (leaf_of[n] < 0)
			continue;
		const struct behaviour *b = &leaves[leaf_of[n]];
		for (int k = 0; k < plan.nevents; k++) {
			/* each group counted 1/ngroups of the time (multiplexed) */
			uint64_t v = count(&plan, &plan.ev[k], b,
					   cycles_at[leaf_of[n]] / plan.ngroups);
			if (!v)
				continue;
			c->val_metric[c->nvalues] = (uint16_t)k;
			c->val[c->nvalues++] = v;
		}
	}
	c->val_start[NNODES] = (uint32_t)c->nvalues;
	int rc = mfile_write(argv[i], &m, 3);
	mfile_release(&m);
	if (rc < 0)
		die(1, "%s", fth_errmsg());
	printf("%s: %s %s, %d groups, %d counters, %d TMA nodes\n", argv[i], cpu->product, event,
	       plan.ngroups, plan.nevents, plan.nnodes);
	if (print && print_nodes(argv[i]) < 0)
		die(1, "%s", fth_errmsg());
	return 0;
}
