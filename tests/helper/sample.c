/* SPDX-License-Identifier: MIT */
/* sample.c: builds the measurement files that tests, the fuzz seeds and benchmarks use. */
#include "compat.h"
#include "sample.h"
#include "xalloc.h"

#include <math.h>
#include <string.h>

static void set_identity(struct mfile *m)
{
	struct mfile_identity *id = &m->id;
	id->host = xstrdup("node01.example");
	id->pid = 4242;
	id->ppid = 4200;
	id->tid = 4243;
	id->rank = 3;
	id->thread_index = 1;
	id->parent_thread = 0;
	id->program = xstrdup("/opt/app/bin/matmul");
	id->cwd = xstrdup("/home/user/run \"one\"");
	id->argc = 3;
	id->argv = xcalloc(3, sizeof(char *));
	id->argv[0] = xstrdup("./matmul");
	id->argv[1] = xstrdup("-n");
	id->argv[2] = xstrdup("1024\ttab\x1b[31m");
	id->start_ns = 1764511200123456789ULL;
	id->end_ns = 1764511201987654321ULL;
	id->end_reason = xstrdup("thread exit");
	id->ncreation = 2;
	id->creation = xcalloc(2, sizeof(*id->creation));
	id->creation[0] = (struct mfile_frame){ 1, 0x9d3c4 };
	id->creation[1] = (struct mfile_frame){ 0, 0x1234 };
	id->name = xstrdup("matmul-worker");
	id->has_entry = true;
	id->entry = (struct mfile_frame){ 0, 0x1180 };
}

static void set_modules(struct mfile *m)
{
	m->nmodules = 2;
	m->modules = xcalloc(2, sizeof(*m->modules));
	struct mfile_module *a = &m->modules[0], *b = &m->modules[1];
	a->path = xstrdup("/opt/app/bin/matmul");
	a->build_id_len = 20;
	a->build_id = xmalloc(20);
	for (int i = 0; i < 20; i++)
		a->build_id[i] = (uint8_t)(0xa0 + i);
	a->base = 0x555555554000ULL;
	a->nranges = 2;
	a->ranges = xcalloc(2, sizeof(*a->ranges));
	a->ranges[0] = (struct mfile_range){ 0x555555554000ULL, 0x555555555000ULL, 0, 1 };
	a->ranges[1] = (struct mfile_range){ 0x555555555000ULL, 0x555555556000ULL, 0x1000, 5 };
	b->path = xstrdup("/usr/lib/x86_64-linux-gnu/libc.so.6");
	b->base = 0x7ffff7c00000ULL;
	b->load_ns = 1000;
	b->unload_ns = 0;
	b->nranges = 1;
	b->ranges = xcalloc(1, sizeof(*b->ranges));
	b->ranges[0] = (struct mfile_range){ 0x7ffff7c28000ULL, 0x7ffff7dbd000ULL, 0x28000, 5 };
}

static void set_metrics(struct mfile *m)
{
	m->nmetrics = 3;
	m->metrics = xcalloc(3, sizeof(*m->metrics));
	m->metrics[0] = (struct mfile_metric){
		.name = xstrdup("cpu-clock"), .description = xstrdup("CPU time, perf software clock"),
		.unit = MFILE_UNIT_NANOSECONDS, .rate_kind = MFILE_RATE_FREQUENCY, .rate = 300,
		.flags = MFILE_METRIC_KERNEL, .time_enabled = 1864197532, .time_running = 1864197532,
		.samples = 559, .parent = -1, .threshold = NAN, .formula = xstrdup("") };
	m->metrics[1] = (struct mfile_metric){
		.name = xstrdup("page-faults"), .description = xstrdup("page faults (proxy)"),
		.unit = MFILE_UNIT_COUNT, .rate_kind = MFILE_RATE_NONE, .rate = 0,
		.flags = MFILE_METRIC_PROXY | MFILE_METRIC_MULTIPLEXED, .time_enabled = 1864197532,
		.time_running = 932098766, .samples = 559, .parent = -1, .threshold = NAN,
		.formula = xstrdup("") };
	m->metrics[2] = (struct mfile_metric){
		.name = xstrdup("topdown-retiring"), .description = xstrdup("slots retiring"),
		.unit = MFILE_UNIT_COUNT, .rate_kind = MFILE_RATE_PERIOD, .rate = 2000003,
		.flags = MFILE_METRIC_TMA, .samples = 0, .parent = 1, .level = 1, .threshold = 0.75,
		.formula = xstrdup("$1 / $0") };
}

void sample_alloc_cct(struct mfile_cct *c, uint32_t nnodes, uint64_t nvalues)
{
	c->nnodes = nnodes;
	c->nvalues = nvalues;
	c->parent = xcalloc(nnodes, sizeof(*c->parent));
	c->kind = xcalloc(nnodes, sizeof(*c->kind));
	c->module = xcalloc(nnodes, sizeof(*c->module));
	c->offset = xcalloc(nnodes, sizeof(*c->offset));
	c->val_start = xcalloc(nnodes + 1, sizeof(*c->val_start));
	c->val_metric = xcalloc(nvalues ? nvalues : 1, sizeof(*c->val_metric));
	c->val = xcalloc(nvalues ? nvalues : 1, sizeof(*c->val));
}

/* An empty measurement of the current version with the sample identity, modules, metrics. */
static void start_mfile(struct mfile *m)
{
	memset(m, 0, sizeof(*m));
	m->major = MFILE_MAJOR;
	m->minor = MFILE_MINOR;
	set_identity(m);
	set_modules(m);
	set_metrics(m);
}

void sample_mfile(struct mfile *m)
{
	start_mfile(m);
	/* root > main > {kernel A > sample, partial > sample}, plus an address outside modules. */
	static const struct {
		uint32_t parent;
		uint8_t kind;
		uint32_t module;
		uint64_t offset;
	} nodes[] = {
		{ MFILE_NO_PARENT, MFILE_NODE_ROOT, MFILE_NO_MODULE, 0 },
		{ 0, MFILE_NODE_FRAME, 1, 0x29d90 },	       /* __libc_start_call_main */
		{ 1, MFILE_NODE_FRAME, 0, 0x1189 },	       /* main */
		{ 2, MFILE_NODE_SAMPLE, 0, 0x1150 },	       /* kernel_a */
		{ 2, MFILE_NODE_SAMPLE, 1, 0x1a0f33 },	       /* memcpy */
		{ 0, MFILE_NODE_PARTIAL, MFILE_NO_MODULE, 0 }, /* truncated unwinds */
		{ 5, MFILE_NODE_SAMPLE, MFILE_NO_MODULE, 0x7fffdeadbeefULL },
		{ 0, MFILE_NODE_SYNTHETIC, MFILE_NO_MODULE, 1 },
	};
	static const struct {
		uint32_t node;
		uint16_t metric;
		uint64_t value;
	} values[] = {
		{ 3, 0, 1500000000ULL }, { 3, 1, 12 }, { 4, 0, 500000000ULL }, { 4, 2, 7 },
		{ 6, 0, 3333333 },	 { 7, 1, UINT64_MAX },
	};
	struct mfile_cct *c = &m->cct;
	sample_alloc_cct(c, ARRAY_SIZE(nodes), ARRAY_SIZE(values));
	uint32_t v = 0;
	for (uint32_t i = 0; i < ARRAY_SIZE(nodes); i++) {
		c->parent[i] = nodes[i].parent;
		c->kind[i] = nodes[i].kind;
		c->module[i] = nodes[i].module;
		c->offset[i] = nodes[i].offset;
		c->val_start[i] = v;
		for (; v < ARRAY_SIZE(values) && values[v].node == i; v++) {
			c->val_metric[v] = values[v].metric;
			c->val[v] = values[v].value;
		}
	}
	c->val_start[c->nnodes] = v;
	m->has_trace = true;
	m->ntrace = 4;
	m->trace = xcalloc(4, sizeof(*m->trace));
	m->trace[0] = (struct mfile_trace_record){ 3333333, 3 };
	m->trace[1] = (struct mfile_trace_record){ 6666666, 3 };
	m->trace[2] = (struct mfile_trace_record){ 6666666, 4 };
	m->trace[3] = (struct mfile_trace_record){ 10000000, 6 };
	m->nstats = 4;
	m->stats = xcalloc(4, sizeof(*m->stats));
	m->stats[0] = (struct mfile_stat){ xstrdup("samples taken"), 560 };
	m->stats[1] = (struct mfile_stat){ xstrdup("samples recorded"), 559 };
	m->stats[2] = (struct mfile_stat){ xstrdup("dropped: in loader"), 1 };
	m->stats[3] = (struct mfile_stat){ xstrdup("partial unwinds"), 1 };
}

static uint64_t next_random(uint64_t *state)
{
	/* xorshift64*: deterministic across runs and machines. */
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

void sample_mfile_large(struct mfile *m, uint32_t nnodes, uint64_t seed)
{
	start_mfile(m);
	uint64_t state = seed ? seed : 1;
	struct mfile_cct *c = &m->cct;
	/* Values: every fourth node is a sampled leaf with one or two values. */
	uint64_t nvalues = 0;
	for (uint32_t i = 1; i < nnodes; i++)
		nvalues += (i % 4 == 0) ? 1 + (i % 8 == 0) : 0;
	sample_alloc_cct(c, nnodes, nvalues);
	c->parent[0] = MFILE_NO_PARENT;
	c->kind[0] = MFILE_NODE_ROOT;
	c->module[0] = MFILE_NO_MODULE;
	uint64_t v = 0;
	uint32_t depth_parent = 0;
	for (uint32_t i = 1; i < nnodes; i++) {
		uint64_t r = next_random(&state);
		/* Mostly extend the current path (deep trees), sometimes branch from near it. */
		uint32_t parent = depth_parent;
		if (r % 5 == 0 && i > 1) {
			uint32_t back = (uint32_t)(r >> 8) % 64 + 1;
			parent = back < i ? i - back : 0;
			while (c->kind[parent] == MFILE_NODE_SAMPLE)
				parent = c->parent[parent];
		}
		c->parent[i] = parent;
		c->kind[i] = (i % 4 == 0) ? MFILE_NODE_SAMPLE : MFILE_NODE_FRAME;
		c->module[i] = (uint32_t)((r >> 20) % 3 == 0);
		c->offset[i] = (r >> 24) % 0x400000;
		c->val_start[i] = (uint32_t)v;
		if (c->kind[i] == MFILE_NODE_SAMPLE) {
			c->val_metric[v] = 0;
			c->val[v++] = 3333333 * (1 + (r >> 40) % 16);
			if (i % 8 == 0) {
				c->val_metric[v] = 1;
				c->val[v++] = 1 + (r >> 50) % 100;
			}
			depth_parent = parent;
		} else {
			depth_parent = i;
		}
	}
	c->val_start[nnodes] = (uint32_t)v;
}
