/* SPDX-License-Identifier: MIT */
/*
 * make-tma-mfile: write a synthetic top-down measurement file through lib/ for prof and view:
 *   make-tma-mfile [-c CPU] [-e EVENT] [-s PLACEMENTS] [-p] OUT
 * CPU is a model of measure/tma.h (spr by default), EVENT topdown (default), topdown:retiring,
 * topdown:frontend, topdown:backend or topdown:all.  The metric table is the planner's: the
 * counters of every group, then the TMA nodes with parent, threshold and formula.
 *
 * Without -s the tree has main > compute > {stream, branchy} in a made-up module; stream is
 * memory bound, branchy mispredicts, so each context has a different top-down breakdown.
 *
 * With -s the samples fall where the text file PLACEMENTS says, in a real binary (so that
 * struct and prof can put them in its functions, inline call sites and loops):
 *   module PATH BUILD-ID            the binary (BUILD-ID in hex, or - for none)
 *   behaviour NAME RET BAD FE BE HEAVY BRM FL MB   a behaviour: level-1 shares of the slots,
 *                                   then the level-2 parts (stream, branchy, compute exist)
 *   sample OFFSET BEHAVIOUR N CYCLES CALLERS GROUPS
 *                                   N samples at OFFSET of about CYCLES cycles each; CALLERS
 *                                   are the return addresses above it, outermost first, comma
 *                                   separated (- for none); GROUPS are labels (- for none)
 * Every sample is one trigger of one group (the groups take turns when they are multiplexed)
 * and credits that group's counters as measure credits them: the deltas since the previous
 * sample, at the sampled context.  Sample I's cycles vary around CYCLES so that the sums are
 * not multiples of one delta.
 *
 * With -p it reads OUT back and prints, for each sampled context, every TMA node's value
 * computed from the file's own metric table ("ctx OFFSET NODE VALUE"), as prof will; with -s
 * also, for each label of GROUPS, the counters summed over the sampled contexts that carry the
 * label ("sum LABEL METRIC VALUE") and every TMA node's value on those sums ("group LABEL NODE
 * VALUE").  Counters are scaled for multiplexing as prof scales them.
 */
#include "compat.h"
#include "error.h"
#include "formula.h"
#include "mfile.h"
#include "tma.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A behaviour: level-1 shares of slots and level-2 parts. */
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

/* One line of a placement file: N samples at OFFSET under CALLERS. */
struct placement {
	uint64_t offset;
	uint32_t behaviour; /* index into spec.behaviours */
	uint32_t samples;
	double cycles;
	uint64_t *callers; /* return addresses, outermost first */
	uint32_t ncallers;
	char **labels;
	uint32_t nlabels;
	uint32_t node; /* the sampled context in the tree */
};

struct spec {
	char *module_path;
	uint8_t *build_id;
	uint32_t build_id_len;
	struct behaviour *behaviours;
	size_t nbehaviours, behaviours_alloc;
	struct placement *placements;
	size_t nplacements, placements_alloc;
	char **labels; /* every label once, in order of appearance */
	size_t nlabels, labels_alloc;
};

struct eval_ctx {
	const struct mfile *m;
	const double *raw; /* the counters' values, by metric index */
	double *memo;
	uint8_t *state;
};

/* Metric K: a counter's value, or a TMA node's formula (memoised). */
static double metric_value(void *vctx, uint32_t k)
{
	struct eval_ctx *x = vctx;
	if (k >= x->m->nmetrics)
		return NAN;
	if (!(x->m->metrics[k].flags & MFILE_METRIC_TMA))
		return x->raw[k];
	if (x->state[k] == 1)
		return NAN;
	if (x->state[k] == 0) {
		x->state[k] = 1;
		x->memo[k] = formula_eval_text(x->m->metrics[k].formula, x->m->nmetrics, metric_value, x);
		x->state[k] = 2;
	}
	return x->memo[k];
}

/* Print "PREFIX NODE VALUE" for every TMA node of M evaluated on the counters RAW. */
static void print_tma(const struct mfile *m, const double *raw, const char *prefix)
{
	double *memo = xcalloc(m->nmetrics, sizeof(double));
	uint8_t *state = xcalloc(m->nmetrics, 1);
	struct eval_ctx x = { m, raw, memo, state };
	for (uint32_t k = 0; k < m->nmetrics; k++)
		if (m->metrics[k].flags & MFILE_METRIC_TMA)
			printf("%s %s %.9f\n", prefix, m->metrics[k].name,
			       metric_value(&x, (int)k));
	free(memo);
	free(state);
}

/* Add node N's counters of M to RAW, scaled for multiplexing (doc/formats.md 8.5). */
static void add_node_values(const struct mfile *m, uint32_t n, double *raw)
{
	const struct mfile_cct *c = &m->cct;
	for (uint32_t v = c->val_start[n]; v < c->val_start[n + 1]; v++) {
		const struct mfile_metric *x = &m->metrics[c->val_metric[v]];
		double scale = 1;
		if (x->time_running && x->time_running < x->time_enabled)
			scale = (double)x->time_enabled / (double)x->time_running;
		raw[c->val_metric[v]] += (double)c->val[v] * scale;
	}
}

/* Read PATH back; print every sampled context's nodes, then every label's (with SP). */
static int print_nodes(const char *path, const struct spec *sp)
{
	struct mfile m;
	if (mfile_read(path, &m) < 0)
		return -1;
	double *raw = xcalloc(m.nmetrics, sizeof(double));
	char prefix[64];
	for (uint32_t n = 0; n < m.cct.nnodes; n++) {
		if (m.cct.val_start[n] == m.cct.val_start[n + 1])
			continue;
		memset(raw, 0, m.nmetrics * sizeof(double));
		add_node_values(&m, n, raw);
		snprintf(prefix, sizeof(prefix), "ctx %#llx", (unsigned long long)m.cct.offset[n]);
		print_tma(&m, raw, prefix);
	}
	uint8_t *member = xcalloc(m.cct.nnodes ? m.cct.nnodes : 1, 1);
	for (size_t l = 0; sp && l < sp->nlabels; l++) {
		/* A context reached by two lines of the file counts once. */
		memset(member, 0, m.cct.nnodes);
		memset(raw, 0, m.nmetrics * sizeof(double));
		for (size_t i = 0; i < sp->nplacements; i++) {
			const struct placement *p = &sp->placements[i];
			if (p->node >= m.cct.nnodes || m.cct.offset[p->node] != p->offset) {
				free(member);
				free(raw);
				mfile_release(&m);
				return fth_error("%s: context %u is not the one written", path,
						 p->node);
			}
			for (uint32_t j = 0; j < p->nlabels; j++)
				if (!strcmp(p->labels[j], sp->labels[l]) && !member[p->node]) {
					member[p->node] = 1;
					add_node_values(&m, p->node, raw);
				}
		}
		for (uint32_t k = 0; k < m.nmetrics; k++)
			if (!(m.metrics[k].flags & MFILE_METRIC_TMA))
				printf("sum %s %s %.17g\n", sp->labels[l], m.metrics[k].name,
				       raw[k]);
		snprintf(prefix, sizeof(prefix), "group %s", sp->labels[l]);
		print_tma(&m, raw, prefix);
	}
	free(member);
	free(raw);
	mfile_release(&m);
	return 0;
}

/* ---- the placement file ---- */

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*out = v;
	return 0;
}

static int parse_double(const char *s, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

/* Split LINE at blanks into at most MAX words; returns the count. */
static int split_words(char *line, char **w, int max)
{
	int n = 0;
	for (char *s = strtok(line, " \t\r\n"); s; s = strtok(NULL, " \t\r\n")) {
		if (n == max)
			return max + 1;
		w[n++] = s;
	}
	return n;
}

static int parse_build_id(const char *hex, struct spec *sp)
{
	if (!strcmp(hex, "-") || !strcmp(hex, "none"))
		return 0;
	size_t len = strlen(hex);
	if (!len || len % 2 || len / 2 > 64)
		return -1;
	if (strspn(hex, "0123456789abcdefABCDEF") != len)
		return -1;
	sp->build_id = xmalloc(len / 2);
	for (size_t i = 0; i < len / 2; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		sp->build_id[i] = (uint8_t)v;
	}
	sp->build_id_len = (uint32_t)(len / 2);
	return 0;
}

static int find_behaviour(const struct spec *sp, const char *name, uint32_t *out)
{
	for (size_t i = 0; i < sp->nbehaviours; i++)
		if (!strcmp(sp->behaviours[i].name, name)) {
			*out = (uint32_t)i;
			return 0;
		}
	return -1;
}

/* "A,B,C" into a list of offsets ("-": none). */
static int parse_callers(char *s, struct placement *p)
{
	if (!strcmp(s, "-"))
		return 0;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		p->callers = xreallocarray(p->callers, p->ncallers + 1, sizeof(uint64_t));
		if (parse_u64(tok, &p->callers[p->ncallers]) < 0 || !p->callers[p->ncallers])
			return -1;
		p->ncallers++;
	}
	return p->ncallers ? 0 : -1;
}

static void parse_labels(char *s, struct placement *p, struct spec *sp)
{
	if (!strcmp(s, "-"))
		return;
	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		p->labels = xreallocarray(p->labels, p->nlabels + 1, sizeof(char *));
		p->labels[p->nlabels++] = xstrdup(tok);
		size_t l = 0;
		while (l < sp->nlabels && strcmp(sp->labels[l], tok))
			l++;
		if (l == sp->nlabels) {
			ALLOC_GROW(sp->labels, sp->nlabels + 1, sp->labels_alloc);
			sp->labels[sp->nlabels++] = xstrdup(tok);
		}
	}
}

static int parse_line(char *line, struct spec *sp)
{
	char *w[12];
	int n = split_words(line, w, 11);
	if (!n || w[0][0] == '#')
		return 0;
	if (!strcmp(w[0], "module") && n == 3) {
		if (sp->module_path)
			return fth_error("a second module line");
		sp->module_path = xstrdup(w[1]);
		if (parse_build_id(w[2], sp) < 0)
			return fth_error("bad build-id '%s'", w[2]);
		return 0;
	}
	if (!strcmp(w[0], "behaviour") && n == 10) {
		double v[8];
		for (int i = 0; i < 8; i++)
			if (parse_double(w[2 + i], &v[i]) < 0 || v[i] > 1)
				return fth_error("behaviour %s: share '%s' is not in [0, 1]", w[1],
						 w[2 + i]);
		ALLOC_GROW(sp->behaviours, sp->nbehaviours + 1, sp->behaviours_alloc);
		sp->behaviours[sp->nbehaviours++] = (struct behaviour){
			xstrdup(w[1]), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7],
		};
		return 0;
	}
	if (!strcmp(w[0], "sample") && n == 7) {
		struct placement p;
		uint64_t samples;
		memset(&p, 0, sizeof(p));
		if (parse_u64(w[1], &p.offset) < 0)
			return fth_error("bad offset '%s'", w[1]);
		if (find_behaviour(sp, w[2], &p.behaviour) < 0)
			return fth_error("unknown behaviour '%s'", w[2]);
		if (parse_u64(w[3], &samples) < 0 || !samples || samples > 1000000)
			return fth_error("bad sample count '%s'", w[3]);
		p.samples = (uint32_t)samples;
		if (parse_double(w[4], &p.cycles) < 0 || p.cycles < 1 || p.cycles > 1e12)
			return fth_error("bad cycle count '%s'", w[4]);
		if (parse_callers(w[5], &p) < 0) {
			free(p.callers);
			return fth_error("bad caller list '%s'", w[5]);
		}
		parse_labels(w[6], &p, sp);
		ALLOC_GROW(sp->placements, sp->nplacements + 1, sp->placements_alloc);
		sp->placements[sp->nplacements++] = p;
		return 0;
	}
	return fth_error("cannot parse '%s' (see make-tma-mfile.c for the syntax)", w[0]);
}

static int read_spec(const char *path, struct spec *sp)
{
	memset(sp, 0, sizeof(*sp));
	for (size_t i = 0; i < ARRAY_SIZE(leaves); i++) {
		ALLOC_GROW(sp->behaviours, sp->nbehaviours + 1, sp->behaviours_alloc);
		sp->behaviours[sp->nbehaviours] = leaves[i];
		sp->behaviours[sp->nbehaviours++].name = xstrdup(leaves[i].name);
	}
	FILE *f = fopen(path, "r");
	if (!f)
		return fth_error_errno(errno, "%s", path);
	char line[4096];
	unsigned lineno = 0;
	int rc = 0;
	while (rc == 0 && fgets(line, sizeof(line), f)) {
		lineno++;
		if (!strchr(line, '\n') && !feof(f))
			rc = fth_error("%s:%u: line too long", path, lineno);
		else if (parse_line(line, sp) < 0)
			rc = fth_error_prefix("%s:%u", path, lineno);
	}
	fclose(f);
	if (rc == 0 && !sp->module_path)
		rc = fth_error("%s: no module line", path);
	if (rc == 0 && !sp->nplacements)
		rc = fth_error("%s: no sample line", path);
	return rc;
}

/* Free the N strings of S, and S. */
static void release_spec(struct spec *sp)
{
	for (size_t i = 0; i < sp->nbehaviours; i++)
		free((char *)sp->behaviours[i].name);
	for (size_t i = 0; i < sp->nplacements; i++) {
		free_strings(sp->placements[i].labels, sp->placements[i].nlabels);
		free(sp->placements[i].callers);
	}
	free_strings(sp->labels, sp->nlabels);
	free(sp->behaviours);
	free(sp->placements);
	free(sp->module_path);
	free(sp->build_id);
}

/* ---- the measurement ---- */

static void set_identity(struct mfile *m, const char *program)
{
	m->major = MFILE_MAJOR;
	m->minor = MFILE_MINOR;
	m->id.host = xstrdup("synthetic");
	m->id.pid = 4242;
	m->id.ppid = 1;
	m->id.tid = 4242;
	m->id.rank = -1;
	m->id.parent_thread = -1;
	m->id.program = xstrdup(program);
	const char *slash = strrchr(program, '/');
	m->id.cwd = slash ? xstrndup(program, (size_t)(slash - program)) : xstrdup("/");
	if (!m->id.cwd[0]) {
		free(m->id.cwd);
		m->id.cwd = xstrdup("/");
	}
	m->id.argc = 1;
	m->id.argv = xcalloc(1, sizeof(char *));
	m->id.argv[0] = xstrdup(slash ? slash + 1 : program);
	m->id.start_ns = 1700000000000000000ull;
	m->id.end_ns = m->id.start_ns + 2000000000ull;
	m->id.end_reason = xstrdup("exit");
}

/* The metric table: the counters, then the nodes ($K as planned: nodes follow counters). */
static void set_metrics(struct mfile *m, const struct tma_plan *plan)
{
	uint32_t nm = (uint32_t)(plan->nevents + plan->nnodes);
	m->nmetrics = nm;
	m->metrics = xcalloc(nm, sizeof(*m->metrics));
	for (int k = 0; k < plan->nevents; k++) {
		const struct tma_event *e = &plan->ev[k];
		struct mfile_metric *x = &m->metrics[k];
		char d[160];
		x->name = xstrdup(e->name);
		snprintf(d, sizeof(d),
			 "TMA input: %s; perf event type %u config %#llx config1 %#llx", e->event,
			 e->type, (unsigned long long)e->config, (unsigned long long)e->config1);
		x->description = xstrdup(d);
		x->rate_kind = e->sampling ? MFILE_RATE_FREQUENCY : MFILE_RATE_NONE;
		x->rate = e->sampling ? e->rate : 0;
		x->flags = (e->sampling ? 0 : MFILE_METRIC_PROXY) |
			   (plan->multiplexed ? MFILE_METRIC_MULTIPLEXED : 0);
		x->time_enabled = 2000000000ull;
		x->time_running = 2000000000ull / (uint64_t)plan->ngroups;
		x->parent = -1;
		x->threshold = NAN;
		x->formula = xstrdup("");
	}
	for (int j = 0; j < plan->nnodes; j++) {
		const struct tma_node *n = &plan->node[j];
		struct mfile_metric *x = &m->metrics[plan->nevents + j];
		x->name = xstrdup(n->name);
		x->description = xstrdup(n->description);
		x->flags = MFILE_METRIC_TMA | (plan->multiplexed ? MFILE_METRIC_MULTIPLEXED : 0) |
			   (n->of_cycles ? MFILE_METRIC_OF_CYCLES : 0);
		x->level = n->level;
		x->parent = n->parent < 0 ? -1 : plan->nevents + n->parent;
		x->threshold = n->threshold;
		x->formula = xstrdup(n->formula);
	}
}

/* The made-up tree: root > main (frame) > compute (frame) > stream, branchy, compute's own. */
static void set_default_tree(struct mfile *m, const struct tma_plan *plan)
{
	m->nmodules = 1;
	m->modules = xcalloc(1, sizeof(*m->modules));
	m->modules[0].path = xstrdup("/opt/tma/matmul");
	m->modules[0].base = 0x400000;
	m->modules[0].nranges = 1;
	m->modules[0].ranges = xcalloc(1, sizeof(*m->modules[0].ranges));
	m->modules[0].ranges[0] = (struct mfile_range){ 0x401000, 0x402000, 0x1000, 5 };

	enum { NNODES = 6 };
	struct mfile_cct *c = &m->cct;
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
	size_t cap = (size_t)NNODES * (size_t)plan->nevents;
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
		for (int k = 0; k < plan->nevents; k++) {
			/* each group counted 1/ngroups of the time (multiplexed) */
			uint64_t v = count(plan, &plan->ev[k], b,
					   cycles_at[leaf_of[n]] / plan->ngroups);
			if (!v)
				continue;
			c->val_metric[c->nvalues] = (uint16_t)k;
			c->val[c->nvalues++] = v;
		}
	}
	c->val_start[NNODES] = (uint32_t)c->nvalues;
}

/* The child of PARENT with KIND and OFFSET in the tree being built, added when missing. */
static uint32_t tree_child(struct mfile_cct *c, size_t *alloc, uint32_t parent, uint8_t kind,
			   uint64_t offset)
{
	for (uint32_t n = parent + 1; n < c->nnodes; n++)
		if (c->parent[n] == parent && c->kind[n] == kind && c->offset[n] == offset)
			return n;
	if (c->nnodes == *alloc) {
		*alloc = *alloc ? 2 * *alloc : 64;
		c->parent = xreallocarray(c->parent, *alloc, sizeof(uint32_t));
		c->kind = xreallocarray(c->kind, *alloc, 1);
		c->module = xreallocarray(c->module, *alloc, sizeof(uint32_t));
		c->offset = xreallocarray(c->offset, *alloc, sizeof(uint64_t));
	}
	uint32_t n = c->nnodes++;
	c->parent[n] = parent;
	c->kind[n] = kind;
	c->module[n] = parent == MFILE_NO_PARENT ? MFILE_NO_MODULE : 0;
	c->offset[n] = offset;
	return n;
}

/* The tree of the placement file SP: every sample credits the deltas of its group. */
static void set_placed_tree(struct mfile *m, const struct tma_plan *plan, struct spec *sp)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < sp->nplacements; i++) {
		const struct placement *p = &sp->placements[i];
		lo = FTH_MIN(lo, p->offset);
		hi = FTH_MAX(hi, p->offset);
		for (uint32_t j = 0; j < p->ncallers; j++) {
			lo = FTH_MIN(lo, p->callers[j] - 1);
			hi = FTH_MAX(hi, p->callers[j]);
		}
	}
	m->nmodules = 1;
	m->modules = xcalloc(1, sizeof(*m->modules));
	struct mfile_module *mod = &m->modules[0];
	mod->path = xstrdup(sp->module_path);
	if (sp->build_id_len) {
		mod->build_id = xmalloc(sp->build_id_len);
		memcpy(mod->build_id, sp->build_id, sp->build_id_len);
		mod->build_id_len = sp->build_id_len;
	}
	mod->load_ns = m->id.start_ns;
	mod->base = 0x555555554000ull;
	mod->nranges = 1;
	mod->ranges = xcalloc(1, sizeof(*mod->ranges));
	uint64_t page_lo = lo & ~0xfffull, page_hi = (hi | 0xfffull) + 1;
	mod->ranges[0] = (struct mfile_range){ mod->base + page_lo, mod->base + page_hi, page_lo,
					       5 };

	struct mfile_cct *c = &m->cct;
	size_t alloc = 0;
	tree_child(c, &alloc, MFILE_NO_PARENT, MFILE_NODE_ROOT, 0);
	for (size_t i = 0; i < sp->nplacements; i++) {
		struct placement *p = &sp->placements[i];
		uint32_t at = 0;
		for (uint32_t j = 0; j < p->ncallers; j++)
			at = tree_child(c, &alloc, at, MFILE_NODE_FRAME, p->callers[j]);
		p->node = tree_child(c, &alloc, at, MFILE_NODE_SAMPLE, p->offset);
	}
	/* Dense sums per (node, counter), then the sparse arrays of the file. */
	size_t ne = (size_t)plan->nevents;
	uint64_t *sum = xcalloc((size_t)c->nnodes * ne, sizeof(uint64_t));
	uint64_t tick = 0;
	for (size_t i = 0; i < sp->nplacements; i++) {
		const struct placement *p = &sp->placements[i];
		const struct behaviour *b = &sp->behaviours[p->behaviour];
		for (uint32_t s = 0; s < p->samples; s++) {
			/* the trigger of group G fired after about CYCLES cycles (+-20 %) */
			int g = (int)(tick++ % (uint64_t)plan->ngroups);
			double cycles = p->cycles * (0.8 + 0.04 * (double)((s * 7 + i * 3) % 11));
			for (size_t k = 0; k < ne; k++)
				if (plan->ev[k].group == g) {
					sum[p->node * ne + k] +=
						count(plan, &plan->ev[k], b, cycles);
					m->metrics[k].samples++;
				}
		}
	}
	c->val_start = xcalloc((size_t)c->nnodes + 1, sizeof(uint32_t));
	c->val_metric = xcalloc((size_t)c->nnodes * ne + 1, sizeof(uint16_t));
	c->val = xcalloc((size_t)c->nnodes * ne + 1, sizeof(uint64_t));
	for (uint32_t n = 0; n < c->nnodes; n++) {
		c->val_start[n] = (uint32_t)c->nvalues;
		for (size_t k = 0; k < ne; k++)
			if (sum[n * ne + k]) {
				c->val_metric[c->nvalues] = (uint16_t)k;
				c->val[c->nvalues++] = sum[n * ne + k];
			}
	}
	c->val_start[c->nnodes] = (uint32_t)c->nvalues;
	free(sum);
}

int main(int argc, char **argv)
{
	fth_progname = "make-tma-mfile";
	const char *cpu_name = "spr", *event = "topdown", *placements = NULL;
	bool print = false;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "-c") && i + 1 < argc - 1)
			cpu_name = argv[++i];
		else if (!strcmp(argv[i], "-e") && i + 1 < argc - 1)
			event = argv[++i];
		else if (!strcmp(argv[i], "-s") && i + 1 < argc - 1)
			placements = argv[++i];
		else if (!strcmp(argv[i], "-p"))
			print = true;
		else
			break;
	}
	if (i != argc - 1)
		die(2, "usage: make-tma-mfile [-c CPU] [-e EVENT] [-s PLACEMENTS] [-p] OUT");
	const struct tma_cpu *cpu = tma_cpu_find(cpu_name);
	unsigned sub = tma_subtree_of(event);
	if (!cpu || !sub)
		die(2, "unknown CPU %s (%s) or topdown event %s", cpu_name, tma_cpu_names(), event);
	static struct tma_plan plan;
	struct tma_request req = { .subtrees = sub };
	for (int k = 0; k < 4; k++) {
		req.rate[k] = 1000;
		req.freq[k] = true;
	}
	struct tma_budget budget = { cpu->gp, cpu->fixed, false, 0 };
	if (tma_plan(cpu, &req, &budget, &plan) < 0)
		die(1, "%s", fth_errmsg());
	struct spec sp;
	if (placements && read_spec(placements, &sp) < 0)
		die(2, "%s", fth_errmsg());

	struct mfile m;
	memset(&m, 0, sizeof(m));
	set_identity(&m, placements ? sp.module_path : "/opt/tma/matmul");
	set_metrics(&m, &plan);
	if (placements)
		set_placed_tree(&m, &plan, &sp);
	else
		set_default_tree(&m, &plan);
	int rc = mfile_write(argv[i], &m, 3);
	mfile_release(&m);
	if (rc < 0)
		die(1, "%s", fth_errmsg());
	printf("%s: %s %s, %d groups, %d counters, %d TMA nodes\n", argv[i], cpu->product, event,
	       plan.ngroups, plan.nevents, plan.nnodes);
	if (print && print_nodes(argv[i], placements ? &sp : NULL) < 0)
		die(1, "%s", fth_errmsg());
	if (placements)
		release_spec(&sp);
	return 0;
}
