/* SPDX-License-Identifier: MIT */
/*
 * t-tma.c: the topdown planner and decoder (measure/tma.h) on worked examples: CPU models, the
 * exact group configs for SPR/EMR/GNR, ICX, Zen 4 and Zen 5 for every topdown event and for
 * combinations, the counter budget (NMI watchdog), the formula language, PERF_METRICS bytes,
 * the kernel's rounding, deltas, levels 3-4, AMD and multiplex scaling; on ICX, level 2 from
 * general-purpose events and levels 3-4 against Intel's ICX formulas computed in the test, and
 * the counters 0-3 rule.  (t-tma-ref checks every node and restriction against the reference
 * definitions with random counts.)
 */
#include "compat.h"
#include "buf.h"
#include "tap.h"
#include "formula.h"
#include "tma.h"
#include "mconfig.h"

#include <linux/perf_event.h>
#include <math.h>
#include "error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tma_plan plan; /* large */

static bool near(double got, double want, double tol, const char *name)
{
	bool pass = fabs(got - want) <= tol;
	ok(pass, "%s = %.7f (want %.7f)", name, got, want);
	return pass;
}

static struct tma_request request(unsigned subtrees)
{
	struct tma_request r = { .subtrees = subtrees };
	for (int i = 0; i < 4; i++) {
		r.rate[i] = 300;
		r.freq[i] = true;
	}
	return r;
}

static int make_plan(const char *cpu, unsigned subtrees, uint8_t gp, bool watchdog)
{
	const struct tma_cpu *c = tma_cpu_find(cpu);
	struct tma_request r = request(subtrees);
	struct tma_budget b = { gp ? gp : c->gp, c->fixed, watchdog, 0 };
	return tma_plan(c, &r, &b, &plan);
}

static const struct tma_group *group(const char *name)
{
	for (int g = 0; g < plan.ngroups; g++)
		if (!strcmp(plan.group[g].name, name))
			return &plan.group[g];
	return NULL;
}

static const char *group_names(void)
{
	static char s[128];
	s[0] = '\0';
	for (int g = 0; g < plan.ngroups; g++) {
		strcat(s, g ? " " : "");
		strcat(s, plan.group[g].name);
	}
	return s;
}

/* The general-purpose events of group NAME (Intel: after slots, metrics, trigger; AMD: after cycles). */
static void check_general(const char *name, const uint64_t *want, int n, const char *what)
{
	const struct tma_group *g = group(name);
	if (!ok(g != NULL, "%s: group %s exists", what, name))
		return;
	int first = g->first;
	while (first < g->first + g->n && plan.ev[first].role != TMA_ROLE_GENERAL)
		first++;
	int have = g->first + g->n - first;
	is_int(have, n, "%s: group %s has %d general events", what, name, n);
	bool same = have == n;
	for (int k = 0; same && k < n; k++)
		same = plan.ev[first + k].config == want[k];
	ok(same, "%s: group %s: the expected configs, in order", what, name);
	if (!same)
		for (int k = 0; k < have; k++)
			diag("  %s %#llx", plan.ev[first + k].event,
			     (unsigned long long)plan.ev[first + k].config);
}

/* Every Intel group: slots leader (counting), the metrics, then the cycles trigger. */
static void check_intel_shape(int metrics, const char *what)
{
	bool good = plan.ngroups > 0;
	for (int g = 0; g < plan.ngroups && good; g++) {
		const struct tma_group *tg = &plan.group[g];
		const struct tma_event *e = &plan.ev[tg->first];
		good &= e->role == TMA_ROLE_SLOTS && e->leader && !e->sampling && e->config == 0x400 &&
			e->type == PERF_TYPE_RAW;
		for (int m = 0; m < metrics; m++) {
			const struct tma_event *x = &plan.ev[tg->first + 1 + m];
			good &= x->role == TMA_ROLE_METRIC && !x->sampling && !x->leader &&
				x->config == 0x8000 + ((uint64_t)m << 8) && x->config1 == 0;
		}
		const struct tma_event *t = &plan.ev[tg->first + 1 + metrics];
		good &= t->role == TMA_ROLE_TRIGGER && t->sampling && t->config == 0x3c;
		for (int k = 0; k < tg->n; k++)
			good &= plan.ev[tg->first + k].group == g &&
				plan.ev[tg->first + k].exclude_kernel == e->exclude_kernel;
		int gp = 0;
		for (int k = 0; k < tg->n; k++)
			gp += plan.ev[tg->first + k].role == TMA_ROLE_GENERAL;
		good &= gp <= 8 && gp == tg->gp;
	}
	ok(good, "%s: every group is slots, %d metric events, cycles trigger, then general events",
	   what, metrics);
}

/* Whether FORMULA refers to $K. */
static bool formula_uses(const char *formula, int k)
{
	for (const char *s = strchr(formula, '$'); s; s = strchr(s + 1, '$'))
		if (atoi(s + 1) == k)
			return true;
	return false;
}

static bool has_node(const char *name)
{
	return tma_node_index(&plan, name) >= 0;
}

static void check_nodes_wellformed(const char *what)
{
	bool good = true;
	for (int j = 0; j < plan.nnodes; j++) {
		const struct tma_node *n = &plan.node[j];
		bool bad = false;
		good &= (n->parent == -1) == (j == 0) && n->parent < plan.nnodes;
		good &= formula_max_ref(n->formula) < plan.nevents + plan.nnodes;
		struct formula f;
		bad = formula_compile(n->formula, UINT32_MAX, &f) < 0;
		if (!bad)
			formula_release(&f);
		if (bad)
			diag("node %s: bad formula %s", n->name, n->formula);
		good &= !bad && strlen(n->description) > 10;
	}
	ok(good, "%s: %d nodes, one root, formulas parse, inputs in range", what, plan.nnodes);
}

static const uint64_t R1[] = { 0x04c2, 0x10b1, 0x01b1, 0x03c7, 0x03cf, 0xfcc7, 0x1ccf, 0x03e5 };
static const uint64_t R2[] = { 0x03e7, 0x10e7, 0x0ce7, 0x80e7, 0x20e7 };
static const uint64_t F1[] = { 0x10ad, 0x0480, 0x0483, 0x0187, 0x0261, 0x80ad, 0x40ad };
static const uint64_t F2[] = { 0x10404c2, 0x02c2, 0x01ae };
static const uint64_t B1[] = { 0x50021a6, 0x3000347, 0x5000547, 0x9000947, 0x20040a6, 0x02a2,
			       0x20ec };
static const uint64_t B2[] = { 0xc000820, 0x1000820 };
static const uint64_t B3[] = { 0x10009b0, 0x80a6, 0x01a5, 0x02a2, 0x40004a3, 0x50021a6, 0x02a6,
			       0x0ca6 };

static uint64_t config1_of(const char *key)
{
	for (int i = 0; i < plan.nevents; i++)
		if (!strcmp(plan.ev[i].key, key))
			return plan.ev[i].config1;
	return ~0ull;
}

static void test_models(void)
{
	ok(tma_cpu_lookup(TMA_INTEL, 6, 0x8f) == tma_cpu_find("spr"), "6/0x8F is Sapphire Rapids");
	ok(tma_cpu_lookup(TMA_INTEL, 6, 0x6a) == tma_cpu_find("icx") &&
	   tma_cpu_lookup(TMA_INTEL, 6, 0x6c) == tma_cpu_find("icx"), "6/0x6A, 0x6C are ICX");
	ok(tma_cpu_lookup(TMA_INTEL, 6, 0xcf) == tma_cpu_find("emr"), "6/0xCF is Emerald Rapids");
	ok(tma_cpu_lookup(TMA_INTEL, 6, 0xad) == tma_cpu_find("gnr") &&
	   tma_cpu_lookup(TMA_INTEL, 6, 0xae) == tma_cpu_find("gnr"), "6/0xAD, 0xAE are GNR");
	ok(tma_cpu_lookup(TMA_INTEL, 6, 0x55) == NULL, "Skylake server is not supported");
	ok(tma_cpu_lookup(TMA_AMD, 25, 0x11) == tma_cpu_find("zen4") &&
	   tma_cpu_lookup(TMA_AMD, 25, 0x61) == tma_cpu_find("zen4") &&
	   tma_cpu_lookup(TMA_AMD, 25, 0x1f) == tma_cpu_find("zen4"), "family 25: Zen 4 models");
	ok(tma_cpu_lookup(TMA_AMD, 25, 0x21) == NULL && tma_cpu_lookup(TMA_AMD, 25, 0x01) == NULL,
	   "family 25: Zen 3 models are not supported");
	ok(tma_cpu_lookup(TMA_AMD, 26, 0x02) == tma_cpu_find("zen5"), "family 26 is Zen 5");
	ok(tma_cpu_lookup(TMA_AMD, 23, 0x31) == NULL, "Zen 2 is not supported");
	is_int(tma_cpu_find("spr")->width, 6, "SPR is 6 wide");
	is_int(tma_cpu_find("icx")->width, 5, "ICX is 5 wide");
	is_int(tma_cpu_find("zen5")->width, 8, "Zen 5 is 8 wide");
	is_uint(tma_subtree_of("topdown"), TMA_SUB_BASE, "topdown");
	is_uint(tma_subtree_of("TOPDOWN:Backend"), TMA_SUB_BACKEND, "topdown:backend, any case");
	is_uint(tma_subtree_of("topdown:all"), TMA_SUB_ALL, "topdown:all is the three subtrees");
	is_uint(tma_subtree_of("topdown:bogus"), 0, "not a topdown event");
}

static void test_identify(void)
{
	struct tma_machine m;
	setenv("FATHOM_CPU", "spr,gp=7,watchdog=1", 1);
	ok(tma_identify(&m) == 0 && m.cpu == tma_cpu_find("spr") && m.forced && m.budget.gp == 7 &&
	   m.budget.fixed == 4 && m.budget.watchdog, "FATHOM_CPU=spr,gp=7,watchdog=1");
	setenv("FATHOM_CPU", "GenuineIntel-6-CF,watchdog=0", 1);
	ok(tma_identify(&m) == 0 && m.cpu == tma_cpu_find("emr") && !m.budget.watchdog &&
	   m.budget.gp == 8, "FATHOM_CPU=GenuineIntel-6-CF is EMR with 8 counters");
	setenv("FATHOM_CPU", "AuthenticAMD-25-11", 1);
	ok(tma_identify(&m) == 0 && m.cpu == tma_cpu_find("zen4") && m.budget.gp == 6,
	   "FATHOM_CPU=AuthenticAMD-25-11 is Zen 4 with 6 counters");
	setenv("FATHOM_CPU", "GenuineIntel-6-55", 1);
	ok(tma_identify(&m) == 0 && m.cpu == NULL && m.forced, "an unsupported forced model");
	setenv("FATHOM_CPU", "pentium", 1);
	ok(tma_identify(&m) < 0, "an unknown FATHOM_CPU is an error");
	setenv("FATHOM_CPU", "spr,lots=3", 1);
	ok(tma_identify(&m) < 0, "an unknown FATHOM_CPU option is an error");
	setenv("FATHOM_CPU", "spr,metrics=4", 1);
	ok(tma_identify(&m) == 0 && m.budget.metrics == 4, "metrics=4");
	unsetenv("FATHOM_CPU");
	ok(tma_identify(&m) == 0 && m.description[0], "this machine: %s", m.description);
}

static void test_intel_plans(void)
{
	static const char *const intel[] = { "spr", "emr", "gnr" };
	for (size_t c = 0; c < ARRAY_SIZE(intel); c++) {
		const char *cpu = intel[c];
		char what[64];

		snprintf(what, sizeof(what), "%s topdown", cpu);
		ok(make_plan(cpu, TMA_SUB_BASE, 0, false) == 0, "%s: planned", what);
		is_str(group_names(), "T1", "%s: one group", what);
		is_int(plan.nevents, 10, "%s: slots, 8 metrics, cycles", what);
		check_intel_shape(8, what);
		ok(!plan.multiplexed, "%s: not multiplexed", what);
		is_int(plan.nnodes, 15, "%s: 15 nodes (levels 1 and 2)", what);
		ok(has_node("Heavy Operations") && has_node("Memory Bound") && !has_node("L1 Bound") &&
		   !has_node("ICache Misses") && !has_node("SMT Contention"),
		   "%s: level 2 present, level 3 absent", what);
		check_nodes_wellformed(what);

		snprintf(what, sizeof(what), "%s topdown:retiring", cpu);
		ok(make_plan(cpu, TMA_SUB_RETIRING, 0, false) == 0, "%s: planned", what);
		is_str(group_names(), "R1 R2", "%s: groups", what);
		check_general("R1", R1, ARRAY_SIZE(R1), what);
		check_general("R2", R2, ARRAY_SIZE(R2), what);
		is_uint(config1_of("ms"), 0x8, "%s: UOPS_RETIRED.MS has FRONTEND MSR 0x8", what);
		check_intel_shape(8, what);
		ok(plan.multiplexed, "%s: two slots groups are multiplexed", what);
		ok(has_node("Uops Sequencer") && has_node("Few Operations") && has_node("X87 Use") &&
		   has_node("FP Scalar") && has_node("FP Vector") && has_node("FP Arithmetic") &&
		   has_node("Integer Operations") && has_node("Memory Operations") &&
		   !has_node("L1 Bound"), "%s: the Retiring subtree", what);
		check_nodes_wellformed(what);

		snprintf(what, sizeof(what), "%s topdown:frontend", cpu);
		ok(make_plan(cpu, TMA_SUB_FRONTEND, 0, false) == 0, "%s: planned", what);
		is_str(group_names(), "F1 F2", "%s: groups", what);
		check_general("F1", F1, ARRAY_SIZE(F1), what);
		check_general("F2", F2, ARRAY_SIZE(F2), what);
		ok(config1_of("unkbr") == 0x7 && config1_of("mssw") == 0x8,
		   "%s: FRONTEND MSR 0x7 and 0x8 in different groups", what);
		check_intel_shape(8, what);
		ok(has_node("ICache Misses") && has_node("ITLB Misses") && has_node("LCP") &&
		   has_node("DSB Switches") && has_node("Branch Resteers") &&
		   has_node("MS Switches") && !has_node("X87 Use"), "%s: the Frontend subtree", what);
		check_nodes_wellformed(what);

		snprintf(what, sizeof(what), "%s topdown:backend", cpu);
		ok(make_plan(cpu, TMA_SUB_BACKEND, 0, false) == 0, "%s: planned", what);
		is_str(group_names(), "B1 B2 B3", "%s: groups", what);
		check_general("B1", B1, ARRAY_SIZE(B1), what);
		check_general("B2", B2, ARRAY_SIZE(B2), what);
		check_general("B3", B3, ARRAY_SIZE(B3), what);
		check_intel_shape(8, what);
		ok(has_node("L1 Bound") && has_node("L2 Bound") && has_node("L3 Bound") &&
		   has_node("L3 Miss Bound") && has_node("Memory Bandwidth") &&
		   has_node("Memory Latency") && has_node("Store Bound") && has_node("Divider") &&
		   has_node("Port Utilization") && has_node("Serialization"),
		   "%s: the Backend subtree", what);
		check_nodes_wellformed(what);

		snprintf(what, sizeof(what), "%s topdown:all", cpu);
		ok(make_plan(cpu, TMA_SUB_ALL, 0, false) == 0, "%s: planned", what);
		is_str(group_names(), "R1 R2 F1 F2 B1 B2 B3", "%s: the seven groups", what);
		is_int(plan.nevents, 110, "%s: 110 counters", what);
		check_general("R1", R1, ARRAY_SIZE(R1), what);
		check_general("F1", F1, ARRAY_SIZE(F1), what);
		check_general("B3", B3, ARRAY_SIZE(B3), what);
		is_int(plan.nnodes, 39, "%s: every node of the tree", what);
		ok(plan.multiplexed && strstr(plan.notes, "multiplexes"), "%s: says multiplexed",
		   what);
		check_nodes_wellformed(what);
	}

	/* Combinations. */
	struct tma_request r = request(TMA_SUB_FRONTEND | TMA_SUB_BACKEND);
	r.rate[2] = 100;
	r.rate[3] = 150;
	struct tma_budget b = { 8, 4, false, 0 };
	ok(tma_plan(tma_cpu_find("spr"), &r, &b, &plan) == 0, "spr frontend@f100 + backend@f150");
	is_str(group_names(), "F1 F2 B1 B2 B3", "the groups of both subtrees");
	bool rates = true;
	for (int i = 0; i < plan.nevents; i++)
		if (plan.ev[i].sampling)
			rates &= plan.ev[i].freq &&
				 plan.ev[i].rate == (plan.group[plan.ev[i].group].name[0] == 'F'
							     ? 100u : 150u);
	ok(rates, "each trigger has the rate of its own -e");
	ok(make_plan("spr", TMA_SUB_BASE | TMA_SUB_BACKEND, 0, false) == 0 &&
	   !strcmp(group_names(), "B1 B2 B3"),
	   "topdown + topdown:backend: the backend groups carry levels 1 and 2");
	ok(make_plan("spr", TMA_SUB_RETIRING | TMA_SUB_BACKEND, 0, false) == 0 &&
	   !strcmp(group_names(), "R1 R2 B1 B2 B3"), "topdown:retiring + topdown:backend");

	/* The trigger's perf_event_attr, and a metric's. */
	ok(make_plan("spr", TMA_SUB_BASE, 0, false) == 0, "spr topdown again");
	struct perf_event_attr a;
	tma_event_attr(&plan, 0, &a);
	ok(a.type == PERF_TYPE_RAW && a.config == 0x400 && a.disabled && !a.sample_period &&
	   !a.freq && (a.read_format & PERF_FORMAT_GROUP), "slots: leader, counting, group read");
	tma_event_attr(&plan, 1, &a);
	ok(a.config == 0x8000 && !a.disabled && !a.sample_period && !a.freq &&
	   (a.read_format & PERF_FORMAT_GROUP), "topdown-retiring: member, never sampling");
	tma_event_attr(&plan, 9, &a);
	ok(a.config == 0x3c && a.freq && a.sample_freq == 300 && a.wakeup_events == 1 &&
	   (a.sample_type & PERF_SAMPLE_READ) && (a.read_format & PERF_FORMAT_GROUP),
	   "cycles: the sampling member (proxy sampling), PERF_SAMPLE_READ");

	/* A model without levels 3-4 measures level 1-2 for a subtree event, and says so. */
	static const struct tma_cpu l1cpu = { "l1", "a level-1 model", TMA_INTEL, 8, 6, 8, 4, false,
					      "none" };
	r = request(TMA_SUB_BACKEND);
	struct tma_budget b8 = { 8, 4, false, 0 };
	ok(tma_plan(&l1cpu, &r, &b8, &plan) == 0 && !strcmp(group_names(), "T1") &&
	   strstr(plan.notes, "levels 3 and 4 are not available"),
	   "a model without levels 3-4: topdown:backend plans topdown, and says why");
	struct tma_budget b4 = { 8, 4, false, 4 };
	r = request(TMA_SUB_BASE);
	ok(tma_plan(tma_cpu_find("spr"), &r, &b4, &plan) == 0 && plan.nevents == 6 &&
	   !has_node("Heavy Operations") && strstr(plan.notes, "this kernel exposes the level-1"),
	   "spr with a kernel exposing 4 metrics: level 1, and says why");

	/* The NMI watchdog takes fixed counter 1: the trigger needs a general counter. */
	ok(make_plan("spr", TMA_SUB_BACKEND, 0, true) == 0, "spr backend with the NMI watchdog");
	static const uint64_t B2w[] = { 0xc000820, 0x1000820, 0x10009b0 };
	is_str(group_names(), "B1 B2", "watchdog: two groups");
	check_general("B1", B1, ARRAY_SIZE(B1), "watchdog");
	check_general("B2", B2w, ARRAY_SIZE(B2w), "watchdog");
	ok(!has_node("Port Utilization") && has_node("Divider"),
	   "watchdog: Port Utilization (8 events) is absent, Divider is not");
	ok(strstr(plan.notes, "Port Utilization not measured") &&
	   strstr(plan.notes, "nmi_watchdog=0"), "watchdog: says what is missing and what helps");
	ok(make_plan("spr", TMA_SUB_RETIRING, 0, true) == 0, "spr retiring with the NMI watchdog");
	static const uint64_t R1w[] = { 0x04c2, 0x10b1, 0x01b1, 0x03c7, 0x03cf, 0xfcc7, 0x1ccf };
	static const uint64_t R2w[] = { 0x03e5, 0x03e7, 0x10e7, 0x0ce7, 0x80e7, 0x20e7 };
	check_general("R1", R1w, ARRAY_SIZE(R1w), "watchdog");
	check_general("R2", R2w, ARRAY_SIZE(R2w), "watchdog");
	ok(make_plan("spr", TMA_SUB_FRONTEND, 4, false) == 0 &&
	   !strcmp(group_names(), "F1 F2 F3"), "4 general counters: frontend in three groups");
	bool fits = true;
	for (int g = 0; g < plan.ngroups; g++)
		fits &= plan.group[g].gp <= 4;
	ok(fits, "4 general counters: every group fits");
}

/* Every group within the budget: at most AVAIL general events, at most 4 of counters 0-3. */
static bool within_budget(int avail)
{
	bool good = true;
	for (int g = 0; g < plan.ngroups; g++) {
		int general = 0, restricted = 0;
		for (int k = plan.group[g].first; k < plan.group[g].first + plan.group[g].n; k++) {
			general += plan.ev[k].role == TMA_ROLE_GENERAL;
			restricted += plan.ev[k].restricted;
		}
		good &= general <= avail && restricted <= 4;
	}
	return good;
}

/*
 * Whether Linux restricts raw Intel event CONFIG to counters 0-3 on Ice Lake (its
 * intel_icl_event_constraints, written out here independently of tma.c).
 */
static bool icl_restricted(uint64_t config)
{
	unsigned ev = config & 0xff, evumask = config & 0xffff;
	if (evumask == 0x04a3 || evumask == 0x10a3 || evumask == 0x14a3)
		return false;
	return (ev >= 0x03 && ev <= 0x0a) || (ev >= 0x1f && ev <= 0x28) || ev == 0x32 ||
	       (ev >= 0x48 && ev <= 0x56) || (ev >= 0x60 && ev <= 0x8b) || ev == 0xa3 ||
	       (ev >= 0xa8 && ev <= 0xb0) || (ev >= 0xb7 && ev <= 0xbd) ||
	       (ev >= 0xd0 && ev <= 0xe6) || ev == 0xef || (ev >= 0xf0 && ev <= 0xf4);
}

/* ICX: level 1 from PERF_METRICS, level 2 and below from general-purpose events. */
static void test_icx_plans(void)
{
	static const uint64_t T1[] = { 0x02c2, 0x010e, 0x3079, 0x0156, 0x1000156, 0x0479, 0x00c5,
				       0x10401c3 };
	static const uint64_t T2[] = { 0x140014a3, 0x20040a6, 0x40004a3, 0x02a6, 0x04a6, 0x100d,
				       0x104010d, 0x500019c };
	ok(make_plan("icx", TMA_SUB_BASE, 0, false) == 0, "icx topdown");
	is_str(group_names(), "T1 T2", "icx topdown: two groups");
	check_intel_shape(4, "icx topdown");
	check_general("T1", T1, ARRAY_SIZE(T1), "icx topdown");
	check_general("T2", T2, ARRAY_SIZE(T2), "icx topdown");
	ok(within_budget(8), "icx topdown: 8 general events a group, at most 4 of counters 0-3");
	ok(plan.multiplexed && strstr(plan.notes, "the 2 groups cannot count at once"),
	   "icx topdown: multiplexed, and said so");
	ok(strstr(plan.notes, "level 2 comes from general-purpose events") != NULL,
	   "icx topdown: says where level 2 comes from");
	is_int(plan.nnodes, 15, "icx topdown: 15 nodes, as on SPR");
	static const char *const l2[] = { "Heavy Operations", "Light Operations", "Misprediction",
					  "Machine Clear", "Fetch Latency", "Fetch Bandwidth",
					  "Memory Bound", "Core Bound" };
	bool all = true;
	for (size_t i = 0; i < ARRAY_SIZE(l2); i++)
		all &= has_node(l2[i]) && plan.node[tma_node_index(&plan, l2[i])].level == 2;
	ok(all, "icx topdown: the eight level-2 nodes");
	ok(!has_node("Uops Sequencer") && !has_node("L1 Bound"), "icx topdown: no level 3");
	like(plan.node[tma_node_index(&plan, "Backend Bound")].formula, "+5*$",
	     "icx: Backend Bound adds 5 x INT_MISC.CLEARS_COUNT / slots");
	like(plan.node[tma_node_index(&plan, "Fetch Latency")].formula, "(5*$",
	     "icx: Fetch Latency is 5 x cycles with no uop delivered");
	ok(!strstr(plan.notes, "not measured"), "icx topdown: nothing left out");

	/* topdown:all: level 2 in the retiring groups, then the three subtrees. */
	static const uint64_t IR3[] = { 0x10b1, 0x01b1, 0x03c7, 0xfcc7, 0x83d0, 0x00c0 };
	static const uint64_t IF1[] = { 0x0480, 0x0483, 0x0187, 0x02ab };
	static const uint64_t IF2[] = { 0x800d, 0x01e6, 0x1043079 };
	static const uint64_t IB1[] = { 0x140014a3, 0x0c000ca3, 0x50005a3, 0x60006a3, 0x20040a6,
				       0x02a2 };
	static const uint64_t IB2[] = { 0x80a6, 0x40004a3, 0x140014a3, 0x02a6, 0x04a6, 0x1000914 };
	ok(make_plan("icx", TMA_SUB_ALL, 0, false) == 0, "icx topdown:all");
	is_str(group_names(), "R1 R2 R3 F1 F2 B1 B2", "icx topdown:all: seven groups");
	check_intel_shape(4, "icx topdown:all");
	check_general("R1", T1, ARRAY_SIZE(T1), "icx topdown:all");
	check_general("R2", T2, ARRAY_SIZE(T2), "icx topdown:all");
	check_general("R3", IR3, ARRAY_SIZE(IR3), "icx topdown:all");
	check_general("F1", IF1, ARRAY_SIZE(IF1), "icx topdown:all");
	check_general("F2", IF2, ARRAY_SIZE(IF2), "icx topdown:all");
	check_general("B1", IB1, ARRAY_SIZE(IB1), "icx topdown:all");
	check_general("B2", IB2, ARRAY_SIZE(IB2), "icx topdown:all");
	ok(within_budget(8), "icx topdown:all: every group within 8 counters, 4 of them 0-3");
	bool same = true;
	for (int i = 0; i < plan.nevents; i++)
		if (plan.ev[i].role == TMA_ROLE_GENERAL &&
		    plan.ev[i].restricted != icl_restricted(plan.ev[i].config)) {
			diag("  %s: restricted %d", plan.ev[i].event, plan.ev[i].restricted);
			same = false;
		}
	ok(same, "icx: every event restricted to counters 0-3 exactly as Linux's Ice Lake table");
	check_nodes_wellformed("icx topdown:all");
	is_int(plan.nnodes, 34, "icx topdown:all: 34 nodes");
	int ms_events = 0, ms_elsewhere = 0;
	for (int i = 0; i < plan.nevents; i++)
		if (!strcmp(plan.ev[i].key, "msu")) {
			ms_events++;
			ms_elsewhere += plan.ev[i].group != 0;
		}
	ok(ms_events == 1 && ms_elsewhere == 0, "icx: IDQ.MS_UOPS is counted once, in R1");
	like(plan.node[tma_node_index(&plan, "Uops Sequencer")].description, "group R1",
	     "icx: Uops Sequencer shares Heavy Operations' group (R1)");
	static const struct {
		const char *name;
		int level;
	} l34[] = {
		{ "Uops Sequencer", 3 }, { "Few Operations", 3 }, { "FP Arithmetic", 3 },
		{ "X87 Use", 4 },	 { "FP Scalar", 4 },	  { "FP Vector", 4 },
		{ "Memory Operations", 3 }, { "ICache Misses", 3 }, { "ITLB Misses", 3 },
		{ "LCP", 3 },		 { "DSB Switches", 3 },	  { "Branch Resteers", 3 },
		{ "MS Switches", 3 },	 { "L1 Bound", 3 },	  { "L3 Bound", 3 },
		{ "Store Bound", 3 },	 { "Divider", 3 },	  { "Port Utilization", 3 },
		{ "Serialization", 3 },
	};
	all = true;
	for (size_t i = 0; i < ARRAY_SIZE(l34); i++) {
		int j = tma_node_index(&plan, l34[i].name);
		all &= j >= 0 && plan.node[j].level == l34[i].level;
		if (j < 0)
			diag("missing %s", l34[i].name);
	}
	ok(all, "icx topdown:all: the level 3 and 4 nodes with an ICX definition");
	bool scoreboard = false;
	const char *pu = plan.node[tma_node_index(&plan, "Port Utilization")].formula;
	for (int i = 0; i < plan.nevents; i++)
		scoreboard |= !strcmp(plan.ev[i].key, "sb") && formula_uses(pu, i);
	ok(!scoreboard && !plan.node[tma_node_index(&plan, "Serialization")].approximate,
	   "icx: Port Utilization has no scoreboard term (TMA 4.8 on), so Serialization is exact");

	/* One subtree: level 2 and that subtree's levels 3-4, in its own groups. */
	ok(make_plan("icx", TMA_SUB_BACKEND, 0, false) == 0, "icx topdown:backend");
	is_str(group_names(), "B1 B2 B3 B4", "icx topdown:backend: four groups");
	ok(has_node("Misprediction") && has_node("Heavy Operations") && has_node("L1 Bound") &&
	   has_node("Port Utilization") && !has_node("ICache Misses") && !has_node("X87 Use"),
	   "icx topdown:backend: level 2 everywhere, level 3 of Backend Bound only");
	ok(strstr(plan.notes, "L2 Bound is not measured") && !strstr(plan.notes, "Integer"),
	   "icx topdown:backend: the notes name what Backend Bound lacks on ICX");

	/* The NMI watchdog: 7 counters, three groups. */
	ok(make_plan("icx", TMA_SUB_BASE, 0, true) == 0, "icx topdown with the NMI watchdog");
	is_str(group_names(), "T1 T2 T3", "icx watchdog: three groups");
	ok(within_budget(7), "icx watchdog: every group within 7 counters");
	is_int(plan.nnodes, 15, "icx watchdog: every level-2 node still");

	/* Four counters: the 6-event and 5-event level-2 nodes cannot be measured; said so. */
	ok(make_plan("icx", TMA_SUB_BASE, 4, false) == 0, "icx topdown with 4 counters");
	ok(within_budget(4), "icx 4 counters: every group fits");
	ok(!has_node("Heavy Operations") && !has_node("Light Operations") &&
	   !has_node("Memory Bound") && !has_node("Core Bound") && has_node("Fetch Latency") &&
	   has_node("Misprediction"), "icx 4 counters: Heavy/Light and Memory/Core Bound are absent");
	ok(strstr(plan.notes, "Heavy Operations, Light Operations not measured") &&
	   strstr(plan.notes, "Memory Bound, Core Bound not measured"),
	   "icx 4 counters: the notes say what is missing");
}

static void test_amd_plans(void)
{
	static const uint64_t P1[] = { 0x1000001a0, 0x100001ea0, 0x1000060a0, 0x7aa, 0xc1 };
	static const uint64_t S4[] = { 0x7aa, 0xc1, 0xc3, 0x96 };
	static const uint64_t S5[] = { 0x7aa, 0xc1, 0xc3, 0x19f };
	static const uint64_t BE[] = { 0x100001ea0, 0xa2d6, 0x2d6 };
	static const uint64_t RE[] = { 0xc1, 0x1000000c2 };
	static const uint64_t FE4[] = { 0x1000001a0, 0x1060001a0 };
	static const uint64_t FE5[] = { 0x1000001a0, 0x1080001a0 };
	static const unsigned events[] = { TMA_SUB_BASE, TMA_SUB_RETIRING, TMA_SUB_FRONTEND,
					   TMA_SUB_BACKEND, TMA_SUB_ALL };
	for (int zen = 4; zen <= 5; zen++) {
		for (size_t k = 0; k < ARRAY_SIZE(events); k++) {
			char what[64];
			snprintf(what, sizeof(what), "zen%d subtrees %#x", zen, events[k]);
			ok(make_plan(zen == 4 ? "zen4" : "zen5", events[k], 0, false) == 0,
			   "%s: planned", what);
			is_str(group_names(), "P1 F1 S1 B1 R1", "%s: groups", what);
			check_general("P1", P1, ARRAY_SIZE(P1), what);
			check_general("F1", zen == 4 ? FE4 : FE5, 2, what);
			check_general("S1", zen == 4 ? S4 : S5, 4, what);
			check_general("B1", BE, ARRAY_SIZE(BE), what);
			check_general("R1", RE, ARRAY_SIZE(RE), what);
			bool shape = true;
			for (int g = 0; g < plan.ngroups; g++) {
				const struct tma_event *e = &plan.ev[plan.group[g].first];
				shape &= e->leader && e->sampling && e->config == 0x76 &&
					 e->role == TMA_ROLE_TRIGGER;
				shape &= plan.group[g].gp <= 6;
			}
			ok(shape, "%s: every group is led by the cycles trigger (0x76)", what);
			ok(plan.multiplexed, "%s: multiplexed", what);
			is_int(plan.nnodes, 16, "%s: 16 nodes", what);
			ok(has_node("SMT Contention") && !has_node("L1 Bound") &&
			   !has_node("Uops Sequencer"), "%s: SMT Contention, no level 3", what);
			ok(plan.node[tma_node_index(&plan, "Memory Bound")].approximate &&
			   !plan.node[tma_node_index(&plan, "Frontend Bound")].approximate,
			   "%s: approximate nodes are marked", what);
			check_nodes_wellformed(what);
		}
	}
	ok(make_plan("zen4", TMA_SUB_ALL, 0, false) == 0 && strstr(plan.notes, "no level 3"),
	   "zen4 topdown:all says AMD has no level 3");
	ok(make_plan("zen4", TMA_SUB_BASE, 0, true) == 0, "zen4 with the NMI watchdog");
	static const uint64_t P1w[] = { 0x1000001a0, 0x100001ea0, 0x1000060a0 };
	static const uint64_t P2w[] = { 0x7aa, 0xc1 };
	is_str(group_names(), "P1 P2 F1 S1 B1 R1", "watchdog: level 1 split in two");
	check_general("P1", P1w, ARRAY_SIZE(P1w), "zen4 watchdog");
	check_general("P2", P2w, ARRAY_SIZE(P2w), "zen4 watchdog");
	struct tma_request r = request(TMA_SUB_BASE);
	struct tma_budget b = { 3, 0, true, 0 };
	ok(tma_plan(tma_cpu_find("zen4"), &r, &b, &plan) < 0, "too few counters is an error");
}

static uint32_t add_100(void *ctx, uint32_t k)
{
	(void)ctx;
	return k + 100;
}

static uint32_t add_1000(void *ctx, uint32_t k)
{
	(void)ctx;
	return k + 1000;
}

static uint32_t relocation_base;

static uint32_t add_base(void *ctx, uint32_t k)
{
	(void)ctx;
	return k + relocation_base;
}

static void test_formulas(void)
{
	bool bad;
	struct {
		const char *f;
		double want;
	} cases[] = {
		{ "1+2*3", 7 },		{ "(1+2)*3", 9 },    { "$1*$2-$0", 7 },
		{ "max(0,$0-$2)", 0 },	{ "min($1,$2)", 2 }, { "if($0<$1,10,20)", 10 },
		{ "if($1<$0,10,20)", 20 }, { "-$2/2", -2 },   { "8/$1/2", 2 },
		{ "3*2000/(4000000/4400000)/1000000", 0.0066 }, { "0.25*4+.5", 1.5 },
		{ "1 - 2 < 0", 1 },
	};
	struct tma_plan *p = &plan;
	memset(p, 0, sizeof(*p));
	p->nevents = 4;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		double deltas[4] = { 1, 2, 4, 0 }, nodes[1];
		p->nnodes = 1;
		snprintf(p->node[0].formula, sizeof(p->node[0].formula), "%s", cases[i].f);
		tma_nodes(p, deltas, nodes);
		near(nodes[0], cases[i].want, 1e-12, cases[i].f);
	}
	double deltas[4] = { 1, 2, 4, 0 }, nodes[2];
	p->nnodes = 2;
	strcpy(p->node[0].formula, "$1/$3");
	strcpy(p->node[1].formula, "max(0,$4)+1");
	tma_nodes(p, deltas, nodes);
	ok(isnan(nodes[0]) && isnan(nodes[1]), "a division by zero is undefined, and so is what "
					     "uses it");
	strcpy(p->node[0].formula, "$5*2");
	strcpy(p->node[1].formula, "$0+3");
	tma_nodes(p, deltas, nodes);
	ok(nodes[0] == 8 && nodes[1] == 4, "a node may use a later node");
	strcpy(p->node[0].formula, "$5");
	strcpy(p->node[1].formula, "$4");
	tma_nodes(p, deltas, nodes);
	ok(isnan(nodes[0]) && isnan(nodes[1]), "a cycle is undefined, not a hang");
	struct formula f;
	bad = formula_compile("1+", 0, &f) < 0;
	ok(bad, "\"1+\" is a syntax error");
	bad = formula_compile("foo(1)", 0, &f) < 0;
	ok(bad, "an unknown function is a syntax error");
	bad = formula_compile("max(1,2", 0, &f) < 0;
	ok(bad, "a missing ) is a syntax error");
	char out[64];
	ok(formula_relocate("max(0,$3-$12)/$0", add_100, NULL, out, sizeof(out)) == 0 &&
	   !strcmp(out, "max(0,$103-$112)/$100"), "relocation moves every reference: %s", out);
	ok(formula_relocate("$1+$2", add_1000, NULL, out, 8) < 0, "relocation into too small a buffer");
	is_int(formula_max_ref("$3+$12*$7"), 12, "the highest reference");
}

/* PERF_METRICS decoding. */
static void test_perf_metrics(void)
{
	static const struct {
		uint64_t reg;
		double frac[4], norm[4], l2[4], derived[4];
		int rc;
	} v[] = {
		{ 0x00000000603F2040ull, { .250980, .125490, .247059, .376471 },
		  { .250980, .125490, .247059, .376471 }, { 0, 0, 0, 0 },
		  { .250980, .125490, .247059, .376471 }, 0 },
		{ 0x40301810603F2040ull, { .250980, .125490, .247059, .376471 },
		  { .250980, .125490, .247059, .376471 }, { .062745, .094118, .188235, .250980 },
		  { .188235, .031373, .058824, .125490 }, 0 },
		{ 0xFFull, { 1, 0, 0, 0 }, { 1, 0, 0, 0 }, { 0, 0, 0, 0 }, { 1, 0, 0, 0 }, 0 },
		{ 0xFF000000ull, { 0, 0, 0, 1 }, { 0, 0, 0, 1 }, { 0, 0, 0, 0 }, { 0, 0, 0, 1 }, 0 },
		{ 0x3F3F3F41ull, { .254902, .247059, .247059, .247059 },
		  { .255906, .248031, .248031, .248031 }, { 0, 0, 0, 0 },
		  { .254902, .247059, .247059, .247059 }, 0 },
		{ 0, { 0, 0, 0, 0 }, { NAN, NAN, NAN, NAN }, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }, -1 },
		{ 0x7F00007F7F7F0000ull, { 0, 0, .498039, .498039 }, { 0, 0, .5, .5 },
		  { .498039, 0, 0, .498039 }, { 0, 0, .498039, 0 }, 0 },
		{ 0x0C14283C33333333ull, { .2, .2, .2, .2 }, { .25, .25, .25, .25 },
		  { .235294, .156863, .078431, .047059 }, { 0, .043137, .121569, .152941 }, 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
		double frac[8], norm[4], derived[4];
		int rc = tma_perf_metrics_fractions(v[i].reg, frac, norm, derived);
		bool good = rc == v[i].rc;
		for (int k = 0; k < 4; k++) {
			good &= fabs(frac[k] - v[i].frac[k]) < 1e-6;
			good &= fabs(frac[4 + k] - v[i].l2[k]) < 1e-6;
			good &= fabs(derived[k] - v[i].derived[k]) < 1e-6;
			good &= isnan(v[i].norm[k]) ? isnan(norm[k])
						    : fabs(norm[k] - v[i].norm[k]) < 1e-6;
		}
		ok(good, "V%zu: PERF_METRICS %#018llx: bytes, /255, normalised, level 2, derived",
		   i + 1, (unsigned long long)v[i].reg);
	}
	is_uint(tma_metric_byte(0x40301810603F2040ull, 6), 48, "byte 6 is fetch latency");
}

/* The kernel's rounding. */
static void test_kernel_rounding(void)
{
	static const struct {
		uint64_t slots;
		unsigned byte;
		uint64_t want;
	} v[] = {
		{ 1000000, 0x40, 250980 }, { 1000000, 0xff, 1000000 }, { 1000000, 0x01, 3921 },
		{ 254, 0x01, 0 },	   { 255, 0x01, 1 },	       { 123456789, 0x3f, 30501089 },
		{ 0, 0x80, 0 },		   { UINT64_MAX / 2, 0xff, UINT64_MAX / 2 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(v); i++)
		is_uint(tma_kernel_metric_value(v[i].slots, v[i].byte), v[i].want,
			"floor(%llu * %#x / 255)", (unsigned long long)v[i].slots, v[i].byte);
}

/* The rdpmc path. */
static void test_rdpmc(void)
{
	uint64_t ma = 0x40301810603F2040ull, mb = 0x40301810503F3040ull;
	static const double want[] = { 501960.784, 439215.686, 494117.647, 564705.882,
				       125490.196, 188235.294, 376470.588, 501960.784 };
	static const double frac[] = { .250980, .219608, .247059, .282353,
				       .062745, .094118, .188235, .250980 };
	for (int i = 0; i < 8; i++) {
		double s = tma_rdpmc_interval(1000000, ma, 3000000, mb, i);
		ok(fabs(s - want[i]) < 1e-3 && fabs(s / 2000000 - frac[i]) < 1e-6,
		   "rdpmc interval, metric %d: %.3f slots, fraction %.6f", i, s, s / 2000000);
	}
	uint64_t k[4];
	for (int i = 0; i < 4; i++)
		k[i] = tma_kernel_metric_value(3000000, tma_metric_byte(mb, i)) -
		       tma_kernel_metric_value(1000000, tma_metric_byte(ma, i));
	ok(k[0] == 501961 && k[1] == 439215 && k[2] == 494118 && k[3] == 564706,
	   "with the kernel's floor on each side: %llu %llu %llu %llu", (unsigned long long)k[0],
	   (unsigned long long)k[1], (unsigned long long)k[2], (unsigned long long)k[3]);
	ok(tma_rdpmc_interval(3000000, mb, 1000000, ma, 0) == 0, "a negative interval is 0");
}

/* Set event KEY to V in every group that has it (in CUR; PREV stays as is). */
static void set(struct tma_group_read *cur, const char *key, uint64_t v)
{
	for (int i = 0; i < plan.nevents; i++)
		if (!strcmp(plan.ev[i].key, key)) {
			const struct tma_group *g = &plan.group[plan.ev[i].group];
			cur[plan.ev[i].group].value[i - g->first] = v;
		}
}

static void start_reads(struct tma_group_read *prev, struct tma_group_read *cur, bool run_all)
{
	memset(prev, 0, sizeof(*prev) * TMA_MAX_GROUPS);
	memset(cur, 0, sizeof(*cur) * TMA_MAX_GROUPS);
	for (int g = 0; g < plan.ngroups; g++) {
		prev[g].nr = cur[g].nr = plan.group[g].n;
		prev[g].time_enabled = prev[g].time_running = 1000;
		cur[g].time_enabled = 5000;
		cur[g].time_running = run_all ? 3000 : 1000;
	}
}

static double node(const double *nodes, const char *name)
{
	int j = tma_node_index(&plan, name);
	return j < 0 ? -1 : nodes[j];
}

/* A counter's value in a test's reads, and a node's expected value. */
struct counter_value {
	const char *key;
	uint64_t v;
};
struct node_value {
	const char *name;
	double want;
};

/* set() of each of the N counters at IN. */
static void set_all(struct tma_group_read *cur, const struct counter_value *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		set(cur, in[i].key, in[i].v);
}

/* Each of the N nodes at OUT has its value in NODES, to 1e-9. */
static void near_all(const double *nodes, const struct node_value *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		near(node(nodes, out[i].name), out[i].want, 1e-9, out[i].name);
}

/* The kernel-read delta path. */
static void test_delta_path(void)
{
	static struct tma_group_read prev[TMA_MAX_GROUPS], cur[TMA_MAX_GROUPS];
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	ok(make_plan("spr", TMA_SUB_BASE, 0, false) == 0, "spr topdown");
	start_reads(prev, cur, true);
	static const char *const keys[] = { "slots", "ret", "bad", "fe", "be", "heavy", "brm", "fl",
					    "mb", "clks" };
	static const uint64_t a[] = { 10000000, 2500000, 500000, 2000000, 5000000, 500000, 400000,
				      1500000, 3500000, 7000000 };
	static const uint64_t b[] = { 16000000, 4000000, 800000, 3200000, 8000000, 800000, 640000,
				      2400000, 5600000, 8000000 };
	for (int k = 0; k < 10; k++) {
		prev[0].value[k] = a[k];
		cur[0].value[k] = b[k];
		ok(!strcmp(plan.ev[k].key, keys[k]), "event %d of T1 is %s", k, keys[k]);
	}
	is_int(tma_decode(&plan, prev, cur, deltas, nodes), 1, "one group ran");
	near(deltas[0], 6000000, 0, "delta slots");
	near(node(nodes, "Total Slots"), 6000000, 0, "Total Slots");
	near(node(nodes, "Retiring"), .25, 1e-12, "Retiring");
	near(node(nodes, "Bad Speculation"), .05, 1e-12, "Bad Speculation");
	near(node(nodes, "Frontend Bound"), .20, 1e-12, "Frontend Bound");
	near(node(nodes, "Backend Bound"), .50, 1e-12, "Backend Bound");
	near(node(nodes, "Heavy Operations"), .05, 1e-12, "Heavy Operations");
	near(node(nodes, "Light Operations"), .20, 1e-12, "Light Operations");
	near(node(nodes, "Misprediction"), .04, 1e-12, "Misprediction");
	near(node(nodes, "Machine Clear"), .01, 1e-12, "Machine Clear");
	near(node(nodes, "Fetch Latency"), .15, 1e-12, "Fetch Latency");
	near(node(nodes, "Fetch Bandwidth"), .05, 1e-12, "Fetch Bandwidth");
	near(node(nodes, "Memory Bound"), .35, 1e-12, "Memory Bound");
	near(node(nodes, "Core Bound"), .15, 1e-12, "Core Bound");
	near(node(nodes, "Active"), .30, 1e-12, "Active");
	near(node(nodes, "Stall"), .70, 1e-12, "Stall");
	near(node(nodes, "Retiring") * deltas[0], 1500000, 1e-6, "Retiring slots");

	/* Rounding: normalised by the sum of the level-1 deltas, not by slots. */
	cur[0].value[1] = 2500000 + 1499996;
	tma_decode(&plan, prev, cur, deltas, nodes);
	near(node(nodes, "Retiring"), 0.2499995, 1e-7, "rounding: Retiring by the sum");
	near(node(nodes, "Bad Speculation"), 0.0500000, 1e-7, "rounding: Bad Speculation");
	near(node(nodes, "Frontend Bound"), 0.2000001, 1e-7, "rounding: Frontend Bound");
	near(node(nodes, "Backend Bound"), 0.5000003, 1e-7, "rounding: Backend Bound");
	near(node(nodes, "Retiring") + node(nodes, "Bad Speculation") +
		     node(nodes, "Frontend Bound") + node(nodes, "Backend Bound"),
	     1, 1e-12, "rounding: level 1 sums to 1");

	/* No slots in the interval: nothing is defined; the group did not run: nothing counted. */
	cur[0] = prev[0];
	cur[0].time_running += 10;
	tma_decode(&plan, prev, cur, deltas, nodes);
	ok(isnan(node(nodes, "Retiring")) && node(nodes, "Total Slots") == 0,
	   "no slots: Retiring is undefined, never 0");
	cur[0].time_running = prev[0].time_running;
	cur[0].value[0] += 5;
	is_int(tma_decode(&plan, prev, cur, deltas, nodes), 0, "a group that did not run");
	ok(deltas[0] == 0 && isnan(node(nodes, "Retiring")), "contributes nothing");

	/* With INT_MISC.UOP_DROPPING (topdown:frontend), Intel's adjustment of level 1. */
	ok(make_plan("spr", TMA_SUB_FRONTEND, 0, false) == 0, "spr topdown:frontend");
	start_reads(prev, cur, false);
	cur[0].time_running = 3000; /* F1 ran, F2 did not */
	for (int k = 0; k < 10; k++) {
		prev[0].value[k] = a[k];
		cur[0].value[k] = b[k];
	}
	set(cur, "drop", 60000);
	set(cur, "clks", 0);
	cur[0].value[9] = b[9];
	tma_decode(&plan, prev, cur, deltas, nodes);
	near(node(nodes, "Frontend Bound"), .19, 1e-12, "dropping: Frontend Bound");
	near(node(nodes, "Bad Speculation"), .06, 1e-12, "dropping: Bad Speculation");
	near(node(nodes, "Fetch Latency"), .14, 1e-12, "dropping: Fetch Latency");
	near(node(nodes, "Fetch Bandwidth"), .05, 1e-12, "dropping: Fetch Bandwidth");
	ok(isnan(node(nodes, "MS Switches")), "MS Switches (group F2 did not run) is undefined");
}

/* SPR levels 3 and 4. */
static void test_level34(void)
{
	static struct tma_group_read prev[TMA_MAX_GROUPS], cur[TMA_MAX_GROUPS];
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	ok(make_plan("spr", TMA_SUB_ALL, 0, false) == 0, "spr topdown:all");
	start_reads(prev, cur, true);
	static const struct counter_value in[] = {
		{ "slots", 6000000 }, { "ret", 1500000 },  { "bad", 300000 },	{ "fe", 1200000 },
		{ "be", 3000000 },    { "heavy", 300000 }, { "brm", 240000 },	{ "fl", 900000 },
		{ "mb", 2100000 },    { "clks", 1000000 }, { "ms", 60000 },	{ "x87", 10000 },
		{ "uthr", 2000000 },  { "fps", 150000 },   { "fpv", 75000 },	{ "add128", 30000 },
		{ "add256", 15000 },  { "memuop", 450000 }, { "icd", 50000 },	{ "ict", 20000 },
		{ "lcp", 5000 },      { "dsb", 30000 },	   { "resteer", 40000 }, { "unkbr", 10000 },
		{ "mssw", 2000 },     { "uslots", 4000000 }, { "uissued", 4400000 },
		{ "bol", 300000 },    { "l1m", 250000 },   { "l2m", 200000 },	{ "l3m", 150000 },
		{ "bos", 20000 },     { "ordc", 100000 },  { "orcyc", 180000 }, { "div", 10000 },
		{ "sb", 30000 },      { "c02", 5000 },	   { "eb0", 40000 },	{ "rse", 50000 },
		{ "stt", 500000 },    { "p1", 80000 },	   { "p23", 60000 },
	};
	set_all(cur, in, ARRAY_SIZE(in));
	is_int(tma_decode(&plan, prev, cur, deltas, nodes), 7, "seven groups ran");
	static const struct node_value out[] = {
		{ "Retiring", .25 },	       { "Heavy Operations", .05 }, { "Light Operations", .20 },
		{ "ICache Misses", .05 },      { "ITLB Misses", .02 },	    { "LCP", .005 },
		{ "DSB Switches", .03 },       { "Branch Resteers", .05 },  { "MS Switches", .0066 },
		{ "L1 Bound", .05 },	       { "L2 Bound", .05 },	    { "L3 Bound", .05 },
		{ "L3 Miss Bound", .15 },      { "Store Bound", .02 },	    { "Memory Bandwidth", .10 },
		{ "Memory Latency", .08 },     { "Divider", .01 },	    { "Serialization", .035 },
		{ "Port Utilization", .107 },  { "Uops Sequencer", .01 },   { "Few Operations", .04 },
		{ "X87 Use", .00125 },	       { "FP Scalar", .10 },	    { "FP Vector", .05 },
		{ "FP Arithmetic", .15125 },   { "Integer Operations", .03 },
		{ "Memory Operations", .06 },
	};
	near_all(nodes, out, ARRAY_SIZE(out));
	near(node(nodes, "Total Slots"), 7 * 6000000.0, 0, "Total Slots sums the seven groups");
	set(cur, "div", 250000);
	tma_decode(&plan, prev, cur, deltas, nodes);
	near(node(nodes, "Port Utilization"), .095, 1e-9, "Port Utilization, the else branch");
	near(node(nodes, "Divider"), .25, 1e-9, "Divider with DIV_ACTIVE 250000");
	/* B2 did not run: its nodes are undefined, the others are not. */
	cur[5].time_running = prev[5].time_running;
	ok(!strcmp(plan.group[5].name, "B2"), "group 5 is B2");
	tma_decode(&plan, prev, cur, deltas, nodes);
	ok(isnan(node(nodes, "Memory Bandwidth")) && isnan(node(nodes, "Memory Latency")) &&
	   fabs(node(nodes, "L3 Miss Bound") - .15) < 1e-9, "a group that never ran: its nodes are "
							 "undefined, never 0");
}

/* ICX level 2: the node formulas against Intel's formulas computed here. */
static void test_icx_level2(void)
{
	static struct tma_group_read prev[TMA_MAX_GROUPS], cur[TMA_MAX_GROUPS];
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	ok(make_plan("icx", TMA_SUB_BASE, 0, false) == 0, "icx topdown");
	start_reads(prev, cur, true);
	const double slots = 5000000, ret = 1250000, bad = 250000, fe = 1000000, be = 2500000;
	const double uslots = 1100000, uissued = 1375000, msu = 125000, dec0 = 400000,
		     dec0c1 = 300000, mite = 500000, brm = 9000, mcl = 1000, drop = 50000,
		     clr = 20000, fl0 = 120000, smem = 300000, bos = 50000, stt = 600000,
		     p1 = 100000, p2 = 80000;
	static const char *const keys[] = { "slots", "ret", "bad", "fe", "be", "clks", "uslots",
					    "uissued", "msu", "dec0", "dec0c1", "mite", "brm",
					    "mcl", "drop", "clr", "fl0", "smem", "bos", "stt",
					    "p1", "p2" };
	const double vals[] = { slots, ret, bad, fe, be, 1000000, uslots, uissued, msu, dec0,
				dec0c1, mite, brm, mcl, drop, clr, fl0, smem, bos, stt, p1, p2 };
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		set(cur, keys[i], (uint64_t)vals[i]);
	is_int(tma_decode(&plan, prev, cur, deltas, nodes), 2, "icx: two groups ran");

	/* Intel's ICX formulas (pipeline width 5), level 1 with its corrections first. */
	double sum = ret + bad + fe + be;
	double w_ret = ret / sum;
	double w_fe = fe / sum - drop / slots;
	double w_be = be / sum + 5 * clr / slots;
	double w_bad = fmax(1 - (w_fe + w_be + w_ret), 0);
	double w_ms = uslots / uissued * msu / slots;
	double w_heavy = w_ms + w_ret * (dec0 - dec0c1) / mite;
	double w_misp = brm / (brm + mcl) * w_bad;
	double w_fl = (5 * fl0 - drop) / slots;
	double w_mb = (smem + bos) / (stt + (p1 + w_ret * p2) + bos) * w_be;
	const struct {
		const char *name;
		double want, literal;
	} out[] = {
		{ "Retiring", w_ret, .25 },
		{ "Frontend Bound", w_fe, .19 },
		{ "Backend Bound", w_be, .52 },
		{ "Bad Speculation", w_bad, .04 },
		{ "Heavy Operations", w_heavy, .07 },
		{ "Light Operations", fmax(0, w_ret - w_heavy), .18 },
		{ "Misprediction", w_misp, .036 },
		{ "Machine Clear", fmax(0, w_bad - w_misp), .004 },
		{ "Fetch Latency", w_fl, .11 },
		{ "Fetch Bandwidth", fmax(0, w_fe - w_fl), .08 },
		{ "Memory Bound", w_mb, .52 * 350000 / 770000 },
		{ "Core Bound", fmax(0, w_be - w_mb), .52 - .52 * 350000 / 770000 },
		{ "Active", w_ret + w_bad, .29 },
		{ "Stall", w_fe + w_be, .71 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(out); i++) {
		near(node(nodes, out[i].name), out[i].want, 1e-12, out[i].name);
		ok(fabs(out[i].want - out[i].literal) < 1e-12, "%s by hand: %g", out[i].name,
		   out[i].literal);
	}
	near(node(nodes, "Total Slots"), 2 * slots, 0, "icx: Total Slots sums both groups");

	/* A group that did not run: the nodes of its events are undefined, never 0. */
	int t2 = -1;
	for (int g = 0; g < plan.ngroups; g++)
		if (!strcmp(plan.group[g].name, "T2"))
			t2 = g;
	if (ok(t2 >= 0, "icx: group T2 exists")) {
		cur[t2].time_running = prev[t2].time_running;
		tma_decode(&plan, prev, cur, deltas, nodes);
		ok(isnan(node(nodes, "Fetch Latency")) && isnan(node(nodes, "Memory Bound")) &&
		   isnan(node(nodes, "Core Bound")) && isnan(node(nodes, "Frontend Bound")),
		   "icx: T2 did not run: Fetch Latency, Memory Bound, Core Bound, Frontend Bound "
		   "are undefined");
		near(node(nodes, "Heavy Operations"), w_heavy, 1e-12,
		     "icx: T2 did not run: Heavy Operations (T1) still");
		near(node(nodes, "Retiring"), w_ret, 1e-12, "icx: and Retiring");
	}

	/* No micro-op decode in the interval: Heavy Operations is undefined, not 0. */
	ok(make_plan("icx", TMA_SUB_BASE, 0, false) == 0, "icx topdown again");
	start_reads(prev, cur, true);
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		set(cur, keys[i], (uint64_t)vals[i]);
	set(cur, "mite", 0);
	tma_decode(&plan, prev, cur, deltas, nodes);
	ok(isnan(node(nodes, "Heavy Operations")) && isnan(node(nodes, "Light Operations")) &&
	   !isnan(node(nodes, "Memory Bound")), "icx: IDQ.MITE_UOPS 0: Heavy and Light Operations "
						"are undefined, Memory Bound is not");
}

/* ICX levels 3 and 4 (Intel's ICX formulas), from topdown:all. */
static void test_icx_level34(void)
{
	static struct tma_group_read prev[TMA_MAX_GROUPS], cur[TMA_MAX_GROUPS];
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	ok(make_plan("icx", TMA_SUB_ALL, 0, false) == 0, "icx topdown:all");
	start_reads(prev, cur, true);
	static const struct counter_value in[] = {
		{ "slots", 5000000 }, { "ret", 1250000 },  { "bad", 250000 },	 { "fe", 1000000 },
		{ "be", 2500000 },    { "clks", 1000000 }, { "uslots", 1100000 }, { "uissued", 1375000 },
		{ "msu", 125000 },    { "dec0", 400000 },  { "dec0c1", 300000 }, { "mite", 500000 },
		{ "brm", 9000 },      { "mcl", 1000 },	   { "drop", 50000 },	 { "clr", 20000 },
		{ "fl0", 120000 },    { "smem", 300000 },  { "bos", 50000 },	 { "stt", 600000 },
		{ "p1", 100000 },     { "p2", 80000 },	   { "x87", 10000 },	 { "uthr", 2000000 },
		{ "fps", 150000 },    { "fpv", 75000 },	   { "memi", 400000 },	 { "inst", 2000000 },
		{ "icd", 50000 },     { "ict", 20000 },	   { "lcp", 5000 },	 { "dsb", 30000 },
		{ "resteer", 40000 }, { "baclr", 1000 },   { "mssw", 2000 },	 { "l1m", 250000 },
		{ "l2m", 200000 },    { "l3m", 150000 },   { "div", 10000 },	 { "eb0", 40000 },
		{ "sb", 30000 },
	};
	set_all(cur, in, ARRAY_SIZE(in));
	is_int(tma_decode(&plan, prev, cur, deltas, nodes), plan.ngroups, "every group ran");
	static const struct node_value out[] = {
		{ "Heavy Operations", .07 },	{ "Uops Sequencer", .02 },  { "Few Operations", .05 },
		{ "Light Operations", .18 },	{ "X87 Use", .00125 },	    { "FP Scalar", .12 },
		{ "FP Vector", .06 },		{ "FP Arithmetic", .18125 }, { "Memory Operations", .036 },
		{ "ICache Misses", .05 },	{ "ITLB Misses", .02 },	    { "LCP", .005 },
		{ "DSB Switches", .03 },	{ "Branch Resteers", .05 }, { "MS Switches", .006 },
		{ "L1 Bound", .05 },		{ "L3 Bound", .05 },	    { "Store Bound", .05 },
		{ "Divider", .01 },		{ "Port Utilization", .16 }, { "Serialization", .03 },
		{ "Fetch Latency", .11 },	{ "Memory Bound", .52 * 350000 / 770000 },
	};
	near_all(nodes, out, ARRAY_SIZE(out));
	set(cur, "div", 400000);
	tma_decode(&plan, prev, cur, deltas, nodes);
	near(node(nodes, "Port Utilization"), .12, 1e-9, "icx Port Utilization, the else branch");
	ok(!has_node("Integer Operations") && !has_node("L2 Bound") && !has_node("DRAM Bound") &&
	   !has_node("Memory Bandwidth") && !has_node("Memory Latency"),
	   "icx: the nodes without an ICX definition are absent");
	ok(strstr(plan.notes, "Integer Operations is not measured") &&
	   strstr(plan.notes, "L2 Bound is not measured"), "icx: and the notes say why");
}

/* AMD. */
static void test_amd(void)
{
	static struct tma_group_read prev[TMA_MAX_GROUPS], cur[TMA_MAX_GROUPS];
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	static const struct counter_value in[] = {
		{ "cyc", 1000000 }, { "fe", 1200000 }, { "be", 2400000 },  { "smt", 300000 },
		{ "disp", 2100000 }, { "ret", 1800000 }, { "fec", 150000 }, { "misp", 9000 },
		{ "rsy", 1000 },     { "lnc", 600000 },	 { "nc", 800000 },  { "ucode", 180000 },
	};
	ok(make_plan("zen4", TMA_SUB_BASE, 0, false) == 0, "zen4 topdown");
	start_reads(prev, cur, true);
	set_all(cur, in, ARRAY_SIZE(in));
	tma_decode(&plan, prev, cur, deltas, nodes);
	static const struct node_value out[] = {
		{ "Frontend Bound", .20 }, { "Backend Bound", .40 },	{ "SMT Contention", .05 },
		{ "Retiring", .30 },	   { "Bad Speculation", .05 },	{ "Fetch Latency", .15 },
		{ "Fetch Bandwidth", .05 }, { "Misprediction", .045 }, { "Machine Clear", .005 },
		{ "Memory Bound", .30 },   { "Core Bound", .10 },	{ "Heavy Operations", .03 },
		{ "Light Operations", .27 }, { "Total Slots", 6000000 }, { "Active", .35 },
		{ "Stall", .65 },
	};
	near_all(nodes, out, ARRAY_SIZE(out));
	double sum = node(nodes, "Frontend Bound") + node(nodes, "Backend Bound") +
		     node(nodes, "SMT Contention") + node(nodes, "Retiring") +
		     node(nodes, "Bad Speculation");
	near(sum, 1.0, 1e-9, "the five AMD level-1 categories");

	ok(make_plan("zen5", TMA_SUB_BASE, 0, false) == 0, "zen5 topdown");
	start_reads(prev, cur, true);
	set_all(cur, in, ARRAY_SIZE(in));
	tma_decode(&plan, prev, cur, deltas, nodes);
	near(node(nodes, "Total Slots"), 8000000, 0, "zen5: slots = 8 x cycles");
	near(node(nodes, "Frontend Bound"), .15, 1e-9, "zen5: Frontend Bound");
	near(node(nodes, "Fetch Latency"), 8.0 * 150000 / 8000000, 1e-9,
	     "zen5: Fetch Latency = 8 x FE[cmask=8] / slots");
}

/* Multiplex scaling. */
static void test_scaling(void)
{
	double s = tma_scale(10000000, 4000000);
	near(s, 2.5, 0, "scale 10 000 000 / 4 000 000");
	near(1000000 * s, 2500000, 0, "estimate of 1 000 000");
	ok(s > TMA_MULTIPLEX_RANGE, "2.5 > 1.2: multiplexed");
	near(tma_scale(9990, 10000), 1.0, 0, "a scale below 1 is clamped to 1");
	ok(!(tma_scale(9990, 10000) > TMA_MULTIPLEX_RANGE), "and is not multiplexed");
	ok(isnan(tma_scale(10000, 0)), "time_running 0: not measured");
}

static void test_print(void)
{
	struct buf out = BUF_INIT;
	ok(make_plan("spr", TMA_SUB_BACKEND, 0, true) == 0, "spr backend, watchdog");
	tma_plan_print(&plan, &out);
	const char *s = (const char *)out.data;
	like(s, "group B1: 17 events, 7 general-purpose counters", "the plan names its groups");
	like(s, "MEMORY_ACTIVITY.STALLS_L3_MISS", "and their events");
	like(s, "config 0x9000947", "with their configs");
	like(s, "the NMI watchdog holds one", "and the budget");
	like(s, "Port Utilization not measured", "and what was left out");
	buf_release(&out);
}

/* The launcher's encoding of a planned configuration decodes to the same in the library. */
static void test_config(const char *cpu)
{
	static struct mconfig c, d;
	static char env[65536];
	memset(&c, 0, sizeof(c));
	struct mevent *e = &c.ev[c.nevents++];
	snprintf(e->name, sizeof(e->name), "task-clock");
	e->source = MSOURCE_PERF;
	e->unit = 1;
	e->sampling = e->freq = true;
	e->group = -1;
	e->type = PERF_TYPE_SOFTWARE;
	e->config = PERF_COUNT_SW_TASK_CLOCK;
	e->rate = 300;
	ok(make_plan(cpu, TMA_SUB_ALL, 0, false) == 0, "%s topdown:all", cpu);
	int base = c.nevents;
	for (int i = 0; i < plan.nevents; i++) {
		const struct tma_event *te = &plan.ev[i];
		e = &c.ev[c.nevents++];
		snprintf(e->name, sizeof(e->name), "%s", te->name);
		e->source = MSOURCE_PERF;
		e->sampling = te->sampling;
		e->freq = te->freq;
		e->exclude_kernel = true;
		e->group = (int16_t)te->group;
		e->type = te->type;
		e->config = te->config;
		e->config1 = te->config1;
		e->rate = te->rate;
		e->tma_role = te->role;
	}
	bool added = true;
	for (int j = 0; j < plan.nnodes; j++) {
		char f[TMA_FORMULA_MAX + 200];
		const struct tma_node *n = &plan.node[j];
		relocation_base = (uint32_t)base;
		added &= formula_relocate(n->formula, add_base, NULL, f, sizeof(f)) == 0 &&
			 mconfig_add_tma(&c, n->name, n->parent < 0 ? -1 : base + plan.nevents + n->parent,
					 isnan(n->threshold) ? -1 : (int32_t)lround(n->threshold * 1e6),
					 n->level, n->of_cycles, f, n->description) == 0;
	}
	ok(added, "%d TMA nodes fit the configuration", plan.nnodes);
	int enc = mconfig_encode_events(&c, env, sizeof(env));
	ok(enc == 0, "topdown:all encodes in %zu bytes", strlen(env));
	int dec = mconfig_decode(&d, env, "/tmp", "0");
	ok(dec == 0, "and decodes: %s", dec ? fth_errmsg() : "ok");
	bool same = d.nevents == c.nevents && d.ntma == c.ntma;
	for (int i = 0; same && i < c.nevents; i++) {
		const struct mevent *a = &c.ev[i], *b = &d.ev[i];
		same = !strcmp(a->name, b->name) && a->sampling == b->sampling &&
		       a->group == b->group && a->type == b->type && a->config == b->config &&
		       a->config1 == b->config1 && a->rate == b->rate && a->freq == b->freq &&
		       a->tma_role == b->tma_role && a->exclude_kernel == b->exclude_kernel;
	}
	for (int j = 0; same && j < c.ntma; j++)
		same = !strcmp(c.tma[j].name, d.tma[j].name) && c.tma[j].parent == d.tma[j].parent &&
		       c.tma[j].threshold_ppm == d.tma[j].threshold_ppm &&
		       !strcmp(c.tma_text + c.tma[j].formula, d.tma_text + d.tma[j].formula) &&
		       !strcmp(c.tma_text + c.tma[j].description,
			       d.tma_text + d.tma[j].description);
	ok(same, "every event and node comes back the same (%d events, %d nodes)", d.nevents,
	   d.ntma);
	ok(strchr(env, '|') && strstr(env, "max(0%2C$"), "the nodes follow a '|', commas escaped");
	ok(mconfig_decode(&d, "task-clock,2,1,0,1,1,1,-1,1,1,0,0,300", "/tmp", "0") == 0 &&
	   d.nevents == 1 && d.ev[0].tma_role == 0 && d.ntma == 0 && d.ev[0].rate == 300,
	   "an event without the TMA field still decodes");
	ok(mconfig_decode(&d, "x,2,1,0,1,1,1,-1,1,1,0,0,300,9", "/tmp", "0") < 0,
	   "a bad TMA role is refused");
	ok(mconfig_decode(&d, "x,2,1,0,1,1,1,-1,1,1,0,0,300|n,7,-1,0,$0,d", "/tmp", "0") < 0,
	   "a node whose parent is out of range is refused");
	ok(mconfig_decode(&d, "x,2,1,0,1,1,1,-1,1,1,0,0,300|n,-1,-1,0,max($0%2C1),d%25", "/tmp",
			  "0") == 0 && d.ntma == 1 && !strcmp(d.tma_text + d.tma[0].formula,
							      "max($0,1)") &&
	   !strcmp(d.tma_text + d.tma[0].description, "d%"), "escapes are undone");
}

int main(void)
{
	test_models();
	test_identify();
	test_intel_plans();
	test_icx_plans();
	test_amd_plans();
	test_formulas();
	test_perf_metrics();
	test_kernel_rounding();
	test_rdpmc();
	test_delta_path();
	test_level34();
	test_icx_level2();
	test_icx_level34();
	test_amd();
	test_scaling();
	test_print();
	test_config("spr");
	test_config("icx");
	return done_testing();
}
