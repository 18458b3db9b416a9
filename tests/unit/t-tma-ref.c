/* SPDX-License-Identifier: MIT */
/*
 * t-tma-ref.c: every TMA node and every counter restriction of the topdown planner
 * (measure/tma.h) against the public reference, written out here independently of tma.c:
 *   - the events of each model as the reference event lists give them (EventCode, UMask,
 *     CounterMask, EdgeDetect, MSRValue, and the Counter field: "0,1,2,3" means counters 0-3);
 *   - the node formulas and thresholds of Linux perf's pmu-events metrics (icelakex/
 *     icx-metrics.json, TMA 5.02; amdzen4 and amdzen5 pipeline.json) and of Intel's perfmon
 *     TMA 5.2 metrics for Sapphire Rapids (EMR and GNR have the same for these nodes).
 * For every model, every topdown event and several counter budgets: each planned event is in
 * the reference list with the same encoding and restriction; every group can be placed on the
 * counters (a matching by the reference Counter fields, the NMI watchdog holding its counter);
 * and every node, evaluated by measure's evaluator (tma_nodes) and by view's (view/formula.c)
 * on random counts, equals the reference value, with the reference parent, level and
 * threshold.  A changed formula, threshold or restriction in tma.c fails here.
 */
#include "compat.h"
#include "formula.h"
#include "tap.h"
#include "tma.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the reference events ---- */

/*
 * One event of a reference event list.  VAR is the name the reference formulas below use.
 * COUNTER is the list's Counter field; the AMD lists have none (any counter).
 */
struct ref_event {
	const char *var, *name;
	unsigned code, umask, cmask, edge;
	uint64_t msr; /* MSRValue (the FRONTEND MSR), 0: none */
	const char *counter;
};

#define ALL8 "0,1,2,3,4,5,6,7"
#define LOW4 "0,1,2,3"
#define FIXED1 "Fixed counter 1"
#define FIXED3 "Fixed counter 3"
#define PERF_METRICS "PERF_METRICS"

/*
 * The slots and PERF_METRICS pseudo-events (the kernel's encodings: event 0x00, umask 0x04 and
 * 0x80 + byte), and the cycles trigger: CPU_CLK_UNHALTED.THREAD on fixed counter 1, or its
 * general-counter form (0x3c, any counter) when the NMI watchdog holds fixed counter 1.
 */
#define INTEL_FIXED(cycles_counter)                                                            \
	{ "slots", "TOPDOWN.SLOTS", 0x00, 0x04, 0, 0, 0, FIXED3 },                             \
	{ "ret", "PERF_METRICS.RETIRING", 0x00, 0x80, 0, 0, 0, PERF_METRICS },                 \
	{ "bad", "PERF_METRICS.BAD_SPECULATION", 0x00, 0x81, 0, 0, 0, PERF_METRICS },          \
	{ "fe", "PERF_METRICS.FRONTEND_BOUND", 0x00, 0x82, 0, 0, 0, PERF_METRICS },            \
	{ "be", "PERF_METRICS.BACKEND_BOUND", 0x00, 0x83, 0, 0, 0, PERF_METRICS },             \
	{ "clks", "CPU_CLK_UNHALTED.THREAD_P", 0x3c, 0x00, 0, 0, 0, cycles_counter }

/* Linux perf icelakex/{pipeline,frontend,memory,cache,floating-point}.json. */
static const struct ref_event icx_events[] = {
	INTEL_FIXED(ALL8),
	{ "drop", "INT_MISC.UOP_DROPPING", 0x0d, 0x10, 0, 0, 0, ALL8 },
	{ "clr", "INT_MISC.CLEARS_COUNT", 0x0d, 0x01, 1, 1, 0, ALL8 },
	{ "fl0", "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", 0x9c, 0x01, 5, 0, 0, ALL8 },
	{ "brm", "BR_MISP_RETIRED.ALL_BRANCHES", 0xc5, 0x00, 0, 0, 0, ALL8 },
	{ "mcl", "MACHINE_CLEARS.COUNT", 0xc3, 0x01, 1, 1, 0, ALL8 },
	{ "smem", "CYCLE_ACTIVITY.STALLS_MEM_ANY", 0xa3, 0x14, 20, 0, 0, ALL8 },
	{ "bos", "EXE_ACTIVITY.BOUND_ON_STORES", 0xa6, 0x40, 2, 0, 0, ALL8 },
	{ "stt", "CYCLE_ACTIVITY.STALLS_TOTAL", 0xa3, 0x04, 4, 0, 0, ALL8 },
	{ "p1", "EXE_ACTIVITY.1_PORTS_UTIL", 0xa6, 0x02, 0, 0, 0, ALL8 },
	{ "p2", "EXE_ACTIVITY.2_PORTS_UTIL", 0xa6, 0x04, 0, 0, 0, ALL8 },
	{ "uslots", "UOPS_RETIRED.SLOTS", 0xc2, 0x02, 0, 0, 0, ALL8 },
	{ "uissued", "UOPS_ISSUED.ANY", 0x0e, 0x01, 0, 0, 0, ALL8 },
	{ "msu", "IDQ.MS_UOPS", 0x79, 0x30, 0, 0, 0, LOW4 },
	{ "dec0", "UOPS_DECODED.DEC0", 0x56, 0x01, 0, 0, 0, LOW4 },
	{ "dec0c1", "UOPS_DECODED.DEC0,cmask=1", 0x56, 0x01, 1, 0, 0, LOW4 },
	{ "mite", "IDQ.MITE_UOPS", 0x79, 0x04, 0, 0, 0, LOW4 },
	{ "icd", "ICACHE_DATA.STALLS", 0x80, 0x04, 0, 0, 0, LOW4 },
	{ "ict", "ICACHE_TAG.STALLS", 0x83, 0x04, 0, 0, 0, LOW4 },
	{ "lcp", "DECODE.LCP", 0x87, 0x01, 0, 0, 0, LOW4 },
	{ "dsb", "DSB2MITE_SWITCHES.PENALTY_CYCLES", 0xab, 0x02, 0, 0, 0, LOW4 },
	{ "resteer", "INT_MISC.CLEAR_RESTEER_CYCLES", 0x0d, 0x80, 0, 0, 0, ALL8 },
	{ "baclr", "BACLEARS.ANY", 0xe6, 0x01, 0, 0, 0, LOW4 },
	{ "mssw", "IDQ.MS_SWITCHES", 0x79, 0x30, 1, 1, 0, LOW4 },
	{ "l1m", "CYCLE_ACTIVITY.STALLS_L1D_MISS", 0xa3, 0x0c, 12, 0, 0, LOW4 },
	{ "l2m", "CYCLE_ACTIVITY.STALLS_L2_MISS", 0xa3, 0x05, 5, 0, 0, LOW4 },
	{ "l3m", "CYCLE_ACTIVITY.STALLS_L3_MISS", 0xa3, 0x06, 6, 0, 0, LOW4 },
	{ "div", "ARITH.DIVIDER_ACTIVE", 0x14, 0x09, 1, 0, 0, ALL8 },
	/* the metrics write it EXE_ACTIVITY.3_PORTS_UTIL,umask=0x80: that event's Counter */
	{ "eb0", "EXE_ACTIVITY.3_PORTS_UTIL,umask=0x80", 0xa6, 0x80, 0, 0, 0, ALL8 },
	{ "sb", "RESOURCE_STALLS.SCOREBOARD", 0xa2, 0x02, 0, 0, 0, ALL8 },
	{ "x87", "UOPS_EXECUTED.X87", 0xb1, 0x10, 0, 0, 0, ALL8 },
	{ "uthr", "UOPS_EXECUTED.THREAD", 0xb1, 0x01, 0, 0, 0, ALL8 },
	{ "fps", "FP_ARITH_INST_RETIRED.SCALAR", 0xc7, 0x03, 0, 0, 0, ALL8 },
	{ "fpv", "FP_ARITH_INST_RETIRED.VECTOR", 0xc7, 0xfc, 0, 0, 0, ALL8 },
	{ "memi", "MEM_INST_RETIRED.ANY", 0xd0, 0x83, 0, 0, 0, LOW4 },
	/* the metric's INST_RETIRED.ANY (fixed counter 0) counted on a general counter */
	{ "inst", "INST_RETIRED.ANY_P", 0xc0, 0x00, 0, 0, 0, ALL8 },
};

/* Intel perfmon SPR/events/sapphirerapids_core.json (= Linux perf's sapphirerapids lists). */
static const struct ref_event spr_events[] = {
	INTEL_FIXED(ALL8),
	{ "heavy", "PERF_METRICS.HEAVY_OPERATIONS", 0x00, 0x84, 0, 0, 0, PERF_METRICS },
	{ "brmp", "PERF_METRICS.BRANCH_MISPREDICTS", 0x00, 0x85, 0, 0, 0, PERF_METRICS },
	{ "fl", "PERF_METRICS.FETCH_LATENCY", 0x00, 0x86, 0, 0, 0, PERF_METRICS },
	{ "mb", "PERF_METRICS.MEMORY_BOUND", 0x00, 0x87, 0, 0, 0, PERF_METRICS },
	{ "drop", "INT_MISC.UOP_DROPPING", 0xad, 0x10, 0, 0, 0, ALL8 },
	{ "icd", "ICACHE_DATA.STALLS", 0x80, 0x04, 0, 0, 0, LOW4 },
	{ "ict", "ICACHE_TAG.STALLS", 0x83, 0x04, 0, 0, 0, LOW4 },
	{ "lcp", "DECODE.LCP", 0x87, 0x01, 0, 0, 0, LOW4 },
	{ "dsb", "DSB2MITE_SWITCHES.PENALTY_CYCLES", 0x61, 0x02, 0, 0, 0, LOW4 },
	{ "resteer", "INT_MISC.CLEAR_RESTEER_CYCLES", 0xad, 0x80, 0, 0, 0, ALL8 },
	{ "unkbr", "INT_MISC.UNKNOWN_BRANCH_CYCLES", 0xad, 0x40, 0, 0, 0x7, ALL8 },
	{ "ms", "UOPS_RETIRED.MS", 0xc2, 0x04, 0, 0, 0x8, ALL8 },
	{ "mssw", "UOPS_RETIRED.MS:c1:e1", 0xc2, 0x04, 1, 1, 0x8, ALL8 },
	{ "uslots", "UOPS_RETIRED.SLOTS", 0xc2, 0x02, 0, 0, 0, ALL8 },
	{ "uissued", "UOPS_ISSUED.ANY", 0xae, 0x01, 0, 0, 0, ALL8 },
	{ "bol", "EXE_ACTIVITY.BOUND_ON_LOADS", 0xa6, 0x21, 5, 0, 0, ALL8 },
	{ "l1m", "MEMORY_ACTIVITY.STALLS_L1D_MISS", 0x47, 0x03, 3, 0, 0, LOW4 },
	{ "l2m", "MEMORY_ACTIVITY.STALLS_L2_MISS", 0x47, 0x05, 5, 0, 0, LOW4 },
	{ "l3m", "MEMORY_ACTIVITY.STALLS_L3_MISS", 0x47, 0x09, 9, 0, 0, LOW4 },
	{ "ordc", "OFFCORE_REQUESTS_OUTSTANDING.ALL_DATA_RD:c12", 0x20, 0x08, 12, 0, 0, LOW4 },
	{ "orcyc", "OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DATA_RD", 0x20, 0x08, 1, 0, 0, LOW4 },
	{ "bos", "EXE_ACTIVITY.BOUND_ON_STORES", 0xa6, 0x40, 2, 0, 0, ALL8 },
	{ "div", "ARITH.DIV_ACTIVE", 0xb0, 0x09, 1, 0, 0, ALL8 },
	{ "sb", "RESOURCE_STALLS.SCOREBOARD", 0xa2, 0x02, 0, 0, 0, ALL8 },
	{ "c02", "CPU_CLK_UNHALTED.C02", 0xec, 0x20, 0, 0, 0, ALL8 },
	{ "eb0", "EXE_ACTIVITY.EXE_BOUND_0_PORTS", 0xa6, 0x80, 0, 0, 0, ALL8 },
	{ "rse", "RS.EMPTY_RESOURCE", 0xa5, 0x01, 0, 0, 0, ALL8 },
	{ "stt", "CYCLE_ACTIVITY.STALLS_TOTAL", 0xa3, 0x04, 4, 0, 0, ALL8 },
	{ "p1", "EXE_ACTIVITY.1_PORTS_UTIL", 0xa6, 0x02, 0, 0, 0, ALL8 },
	{ "p23", "EXE_ACTIVITY.2_3_PORTS_UTIL", 0xa6, 0x0c, 0, 0, 0, ALL8 },
	{ "x87", "UOPS_EXECUTED.X87", 0xb1, 0x10, 0, 0, 0, ALL8 },
	{ "uthr", "UOPS_EXECUTED.THREAD", 0xb1, 0x01, 0, 0, 0, ALL8 },
	{ "fps", "FP_ARITH_INST_RETIRED.SCALAR", 0xc7, 0x03, 0, 0, 0, ALL8 },
	{ "fps2", "FP_ARITH_INST_RETIRED2.SCALAR", 0xcf, 0x03, 0, 0, 0, ALL8 },
	{ "fpv", "FP_ARITH_INST_RETIRED.VECTOR", 0xc7, 0xfc, 0, 0, 0, ALL8 },
	{ "fpv2", "FP_ARITH_INST_RETIRED2.VECTOR", 0xcf, 0x1c, 0, 0, 0, ALL8 },
	{ "add128", "INT_VEC_RETIRED.ADD_128", 0xe7, 0x03, 0, 0, 0, ALL8 },
	{ "vnni128", "INT_VEC_RETIRED.VNNI_128", 0xe7, 0x10, 0, 0, 0, ALL8 },
	{ "add256", "INT_VEC_RETIRED.ADD_256", 0xe7, 0x0c, 0, 0, 0, ALL8 },
	{ "mul256", "INT_VEC_RETIRED.MUL_256", 0xe7, 0x80, 0, 0, 0, ALL8 },
	{ "vnni256", "INT_VEC_RETIRED.VNNI_256", 0xe7, 0x20, 0, 0, 0, ALL8 },
	{ "memuop", "MEM_UOP_RETIRED.ANY", 0xe5, 0x03, 0, 0, 0, ALL8 },
};

/* Linux perf amdzen4/amdzen5 event lists (no Counter field: any of the six counters). */
#define AMD_COMMON                                                                             \
	{ "cyc", "ls_not_halted_cyc", 0x76, 0x00, 0, 0, 0, "" },                               \
	{ "fe", "de_no_dispatch_per_slot.no_ops_from_frontend", 0x1a0, 0x01, 0, 0, 0, "" },    \
	{ "be", "de_no_dispatch_per_slot.backend_stalls", 0x1a0, 0x1e, 0, 0, 0, "" },          \
	{ "smt", "de_no_dispatch_per_slot.smt_contention", 0x1a0, 0x60, 0, 0, 0, "" },         \
	{ "disp", "de_src_op_disp.all", 0xaa, 0x07, 0, 0, 0, "" },                             \
	{ "ret", "ex_ret_ops", 0xc1, 0x00, 0, 0, 0, "" },                                      \
	{ "misp", "ex_ret_brn_misp", 0xc3, 0x00, 0, 0, 0, "" },                                \
	{ "lnc", "ex_no_retire.load_not_complete", 0xd6, 0xa2, 0, 0, 0, "" },                  \
	{ "nc", "ex_no_retire.not_complete", 0xd6, 0x02, 0, 0, 0, "" },                        \
	{ "ucode", "ex_ret_ucode_ops", 0x1c2, 0x00, 0, 0, 0, "" }
static const struct ref_event zen4_events[] = {
	AMD_COMMON,
	{ "fec", "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6", 0x1a0, 0x01, 6, 0, 0,
	  "" },
	{ "rsy", "resyncs_or_nc_redirects", 0x96, 0x00, 0, 0, 0, "" },
};
static const struct ref_event zen5_events[] = {
	AMD_COMMON,
	{ "fec", "de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x8", 0x1a0, 0x01, 8, 0, 0,
	  "" },
	{ "rsy", "bp_redirects.resync", 0x9f, 0x01, 0, 0, 0, "" },
};

static uint64_t ref_config(const struct ref_event *r, bool amd)
{
	uint64_t c = (r->code & 0xff) | (uint64_t)r->umask << 8 | (uint64_t)r->edge << 18 |
		     (uint64_t)r->cmask << 24;
	if (amd)
		c |= (uint64_t)(r->code >> 8) << 32; /* EventSelect[11:8] */
	return c;
}

/* The general-purpose counters an event may use, as a mask; 0 for a fixed or pseudo event. */
static unsigned counter_mask(const char *counter, int gp)
{
	if (!*counter)
		return (1u << gp) - 1; /* no restriction given */
	if (!strncmp(counter, "Fixed", 5) || !strcmp(counter, PERF_METRICS))
		return 0;
	unsigned m = 0;
	for (const char *s = counter; *s;) {
		char *end;
		long k = strtol(s, &end, 10);
		if (end == s)
			break;
		if (k < gp)
			m |= 1u << k;
		s = *end == ',' ? end + 1 : end;
	}
	return m;
}

/* ---- the reference formulas ---- */

#define MAX_VARS 64
#define MAX_RESULTS 64

/* A name the reference formulas use that the tables below do not define (a bug here). */
static char ref_error[96];

/* The values of the reference variables (NaN: not measured) and the metrics computed. */
struct vals {
	const struct ref_event *events;
	size_t nevents;
	double ev[MAX_VARS];
	int nres;
	const char *rname[MAX_RESULTS];
	double rval[MAX_RESULTS];
};

/*
 * Variable VAR.  The level-1 corrections (INT_MISC.UOP_DROPPING, INT_MISC.CLEARS_COUNT) count
 * as 0 when they are not measured: the planner then gives level 1 without them.
 */
static double V(const struct vals *v, const char *var)
{
	for (size_t i = 0; i < v->nevents; i++)
		if (!strcmp(v->events[i].var, var))
			return isnan(v->ev[i]) && (!strcmp(var, "drop") || !strcmp(var, "clr")) ? 0
												 : v->ev[i];
	snprintf(ref_error, sizeof(ref_error), "reference variable %s is not in the list", var);
	return NAN;
}

static void R(struct vals *v, const char *name, double x)
{
	if (v->nres == MAX_RESULTS) {
		snprintf(ref_error, sizeof(ref_error), "more than %d reference metrics", MAX_RESULTS);
		return;
	}
	v->rname[v->nres] = name;
	v->rval[v->nres++] = x;
}

static double G(const struct vals *v, const char *name)
{
	for (int i = 0; i < v->nres; i++)
		if (!strcmp(v->rname[i], name))
			return v->rval[i];
	snprintf(ref_error, sizeof(ref_error), "reference metric %s used before it is computed",
		 name);
	return NAN;
}

/* min, max and "a if c else b" as the metric expressions mean them; NaN stays NaN. */
static double rmax(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}

static double rmin(double a, double b)
{
	return isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}

static double rif(double a, double c, double b)
{
	return isnan(c) ? NAN : c != 0 ? a : b;
}

/* perf's d_ratio: a / b, 0 when b is 0 (no count here is 0: the divisors never are). */
static double d_ratio(double a, double b)
{
	return b == 0 ? 0 : a / b;
}

/* Linux perf icelakex/icx-metrics.json (TMA 5.02): the MetricExpr of each tma_ metric. */
static void icx_metrics(struct vals *v)
{
	const double slots = V(v, "slots"), clks = V(v, "clks");
	const double sum = V(v, "fe") + V(v, "bad") + V(v, "ret") + V(v, "be");
	R(v, "tma_retiring", V(v, "ret") / sum + 0 * slots);
	R(v, "tma_frontend_bound", V(v, "fe") / sum - V(v, "drop") / slots);
	R(v, "tma_backend_bound", V(v, "be") / sum + 5 * V(v, "clr") / slots);
	R(v, "tma_bad_speculation",
	  rmax(1 - (G(v, "tma_frontend_bound") + G(v, "tma_backend_bound") + G(v, "tma_retiring")),
	       0));
	const double ret = G(v, "tma_retiring");
	R(v, "tma_branch_mispredicts", V(v, "brm") / (V(v, "brm") + V(v, "mcl")) *
					      G(v, "tma_bad_speculation"));
	R(v, "tma_machine_clears",
	  rmax(0, G(v, "tma_bad_speculation") - G(v, "tma_branch_mispredicts")));
	R(v, "tma_fetch_latency", (5 * V(v, "fl0") - V(v, "drop")) / slots);
	R(v, "tma_fetch_bandwidth", rmax(0, G(v, "tma_frontend_bound") - G(v, "tma_fetch_latency")));
	R(v, "tma_microcode_sequencer", V(v, "uslots") / V(v, "uissued") * V(v, "msu") / slots);
	R(v, "tma_heavy_operations", G(v, "tma_microcode_sequencer") +
					     ret * (V(v, "dec0") - V(v, "dec0c1")) / V(v, "mite"));
	R(v, "tma_few_uops_instructions",
	  G(v, "tma_heavy_operations") - G(v, "tma_microcode_sequencer"));
	R(v, "tma_light_operations", rmax(0, ret - G(v, "tma_heavy_operations")));
	R(v, "tma_x87_use", ret * V(v, "x87") / V(v, "uthr"));
	R(v, "tma_fp_scalar", V(v, "fps") / (ret * slots));
	R(v, "tma_fp_vector", V(v, "fpv") / (ret * slots));
	R(v, "tma_fp_arith", G(v, "tma_x87_use") + G(v, "tma_fp_scalar") + G(v, "tma_fp_vector"));
	R(v, "tma_memory_operations", G(v, "tma_light_operations") * V(v, "memi") / V(v, "inst"));
	R(v, "tma_icache_misses", V(v, "icd") / clks);
	R(v, "tma_itlb_misses", V(v, "ict") / clks);
	R(v, "tma_lcp", V(v, "lcp") / clks);
	R(v, "tma_dsb_switches", V(v, "dsb") / clks);
	R(v, "tma_unknown_branches", 10 * V(v, "baclr") / clks);
	R(v, "tma_branch_resteers", V(v, "resteer") / clks + G(v, "tma_unknown_branches"));
	R(v, "tma_ms_switches", 3 * V(v, "mssw") / clks);
	R(v, "tma_memory_bound",
	  (V(v, "smem") + V(v, "bos")) /
		  (V(v, "stt") + (V(v, "p1") + ret * V(v, "p2")) + V(v, "bos")) *
		  G(v, "tma_backend_bound"));
	R(v, "tma_core_bound", rmax(0, G(v, "tma_backend_bound") - G(v, "tma_memory_bound")));
	R(v, "tma_l1_bound", rmax((V(v, "smem") - V(v, "l1m")) / clks, 0));
	R(v, "tma_l3_bound", (V(v, "l2m") - V(v, "l3m")) / clks);
	R(v, "tma_store_bound", V(v, "bos") / clks);
	R(v, "tma_divider", V(v, "div") / clks);
	R(v, "tma_ports_utilized_0", V(v, "eb0") / clks);
	const double dv = V(v, "div"), room = V(v, "stt") - V(v, "smem");
	R(v, "tma_ports_utilization",
	  rif((G(v, "tma_ports_utilized_0") * clks + (V(v, "p1") + ret * V(v, "p2"))) / clks,
	      isnan(dv + room) ? NAN : dv < room, (V(v, "p1") + ret * V(v, "p2")) / clks));
	R(v, "tma_serializing_operation", V(v, "sb") / clks);
}

/*
 * Intel perfmon SPR/metrics/sapphirerapids_metrics.json, TMA 5.2: the BaseFormula of each
 * metric (perf_metrics.X is the slot count of byte X).
 */
static void spr_metrics(struct vals *v)
{
	const double slots = V(v, "slots"), clks = V(v, "clks");
	const double sum = V(v, "fe") + V(v, "bad") + V(v, "ret") + V(v, "be");
	R(v, "tma_retiring", V(v, "ret") / sum);
	R(v, "tma_frontend_bound", V(v, "fe") / sum - V(v, "drop") / slots);
	R(v, "tma_backend_bound", V(v, "be") / sum);
	R(v, "tma_bad_speculation",
	  rmax(1 - (G(v, "tma_frontend_bound") + G(v, "tma_backend_bound") + G(v, "tma_retiring")),
	       0));
	const double ret = G(v, "tma_retiring");
	R(v, "tma_heavy_operations", V(v, "heavy") / sum);
	R(v, "tma_light_operations", rmax(0, ret - G(v, "tma_heavy_operations")));
	R(v, "tma_microcode_sequencer", V(v, "ms") / slots);
	R(v, "tma_few_uops_instructions",
	  rmax(0, G(v, "tma_heavy_operations") - G(v, "tma_microcode_sequencer")));
	R(v, "tma_x87_use", ret * V(v, "x87") / V(v, "uthr"));
	R(v, "tma_fp_scalar", (V(v, "fps") + V(v, "fps2")) / (ret * slots));
	R(v, "tma_fp_vector", (V(v, "fpv") + V(v, "fpv2")) / (ret * slots));
	R(v, "tma_fp_arith", G(v, "tma_x87_use") + G(v, "tma_fp_scalar") + G(v, "tma_fp_vector"));
	R(v, "tma_int_vector_128b", (V(v, "add128") + V(v, "vnni128")) / (ret * slots));
	R(v, "tma_int_vector_256b",
	  (V(v, "add256") + V(v, "mul256") + V(v, "vnni256")) / (ret * slots));
	R(v, "tma_int_operations", G(v, "tma_int_vector_128b") + G(v, "tma_int_vector_256b"));
	R(v, "tma_memory_operations", G(v, "tma_light_operations") * V(v, "memuop") / (ret * slots));
	R(v, "tma_branch_mispredicts", V(v, "brmp") / sum);
	R(v, "tma_machine_clears",
	  rmax(0, G(v, "tma_bad_speculation") - G(v, "tma_branch_mispredicts")));
	R(v, "tma_fetch_latency", V(v, "fl") / sum - V(v, "drop") / slots);
	R(v, "tma_fetch_bandwidth", rmax(0, G(v, "tma_frontend_bound") - G(v, "tma_fetch_latency")));
	R(v, "tma_icache_misses", V(v, "icd") / clks);
	R(v, "tma_itlb_misses", V(v, "ict") / clks);
	R(v, "tma_lcp", V(v, "lcp") / clks);
	R(v, "tma_dsb_switches", V(v, "dsb") / clks);
	R(v, "tma_unknown_branches", V(v, "unkbr") / clks);
	R(v, "tma_branch_resteers", V(v, "resteer") / clks + G(v, "tma_unknown_branches"));
	R(v, "tma_ms_switches", 3 * V(v, "mssw") / (V(v, "uslots") / V(v, "uissued")) / clks);
	R(v, "tma_memory_bound", V(v, "mb") / sum);
	R(v, "tma_core_bound", rmax(0, G(v, "tma_backend_bound") - G(v, "tma_memory_bound")));
	R(v, "tma_l1_bound", rmax((V(v, "bol") - V(v, "l1m")) / clks, 0));
	R(v, "tma_l2_bound", (V(v, "l1m") - V(v, "l2m")) / clks);
	R(v, "tma_l3_bound", (V(v, "l2m") - V(v, "l3m")) / clks);
	R(v, "tma_l3_miss_bound", V(v, "l3m") / clks);
	R(v, "tma_mem_bandwidth", rmin(V(v, "clks"), V(v, "ordc")) / clks);
	R(v, "tma_mem_latency", rmin(V(v, "clks"), V(v, "orcyc")) / clks - G(v, "tma_mem_bandwidth"));
	R(v, "tma_store_bound", V(v, "bos") / clks);
	R(v, "tma_divider", V(v, "div") / clks);
	R(v, "tma_ports_utilized_0", (V(v, "eb0") + rmax(V(v, "rse") - V(v, "sb"), 0)) / clks *
					     (V(v, "stt") - V(v, "bol")) / clks);
	const double dv = V(v, "div"), room = V(v, "stt") - V(v, "bol");
	R(v, "tma_ports_utilization",
	  rif((G(v, "tma_ports_utilized_0") * clks + (V(v, "p1") + ret * V(v, "p23"))) / clks,
	      isnan(dv + room) ? NAN : dv < room, (V(v, "p1") + ret * V(v, "p23")) / clks));
	R(v, "tma_c02_wait", V(v, "c02") / clks);
	R(v, "tma_serializing_operation", V(v, "sb") / clks + G(v, "tma_c02_wait"));
}

/* Linux perf amdzen4/pipeline.json and amdzen5/pipeline.json; W dispatch slots a cycle. */
static void amd_metrics(struct vals *v, double w)
{
	R(v, "total_dispatch_slots", w * V(v, "cyc"));
	const double slots = G(v, "total_dispatch_slots");
	R(v, "frontend_bound", d_ratio(V(v, "fe"), slots));
	R(v, "bad_speculation", d_ratio(V(v, "disp") - V(v, "ret"), slots));
	R(v, "backend_bound", d_ratio(V(v, "be"), slots));
	R(v, "smt_contention", d_ratio(V(v, "smt"), slots));
	R(v, "retiring", d_ratio(V(v, "ret"), slots));
	R(v, "frontend_bound_latency", d_ratio(w * V(v, "fec"), slots));
	R(v, "frontend_bound_bandwidth", d_ratio(V(v, "fe") - w * V(v, "fec"), slots));
	R(v, "bad_speculation_mispredicts", d_ratio(G(v, "bad_speculation") * V(v, "misp"),
						    V(v, "misp") + V(v, "rsy")));
	R(v, "bad_speculation_pipeline_restarts",
	  d_ratio(G(v, "bad_speculation") * V(v, "rsy"), V(v, "misp") + V(v, "rsy")));
	R(v, "backend_bound_memory", G(v, "backend_bound") * d_ratio(V(v, "lnc"), V(v, "nc")));
	R(v, "backend_bound_cpu", G(v, "backend_bound") * (1 - d_ratio(V(v, "lnc"), V(v, "nc"))));
	R(v, "retiring_fastpath", G(v, "retiring") * (1 - d_ratio(V(v, "ucode"), V(v, "ret"))));
	R(v, "retiring_microcode", G(v, "retiring") * d_ratio(V(v, "ucode"), V(v, "ret")));
}

/*
 * A node of fathom's tree and the reference metric it is.  Total Slots, Active and Stall are
 * fathom's grouping (not TMA metrics): "=slots" is TOPDOWN.SLOTS summed over the groups (the
 * AMD dispatch slots of the level-1 group), "=a+b[+c]" a sum of other nodes.  Threshold: the
 * metric's own MetricThreshold clause (a fraction), -1 for none.
 */
struct ref_node {
	const char *name, *metric, *parent;
	int level;
	double threshold;
};

/* The nodes of perf's icx metrics, which its spr metrics (SPR, EMR, GNR) have too. */
#define INTEL_ICX_NODES \
	{ "Total Slots", "=slots", NULL, 0, -1 }, \
	{ "Active", "=Retiring+Bad Speculation", "Total Slots", 0, -1 }, \
	{ "Stall", "=Frontend Bound+Backend Bound", "Total Slots", 0, -1 }, \
	{ "Retiring", "tma_retiring", "Active", 1, .7 }, \
	{ "Bad Speculation", "tma_bad_speculation", "Active", 1, .15 }, \
	{ "Frontend Bound", "tma_frontend_bound", "Stall", 1, .15 }, \
	{ "Backend Bound", "tma_backend_bound", "Stall", 1, .2 }, \
	{ "Heavy Operations", "tma_heavy_operations", "Retiring", 2, .1 }, \
	{ "Light Operations", "tma_light_operations", "Retiring", 2, .6 }, \
	{ "Misprediction", "tma_branch_mispredicts", "Bad Speculation", 2, .1 }, \
	{ "Machine Clear", "tma_machine_clears", "Bad Speculation", 2, .1 }, \
	{ "Fetch Latency", "tma_fetch_latency", "Frontend Bound", 2, .1 }, \
	{ "Fetch Bandwidth", "tma_fetch_bandwidth", "Frontend Bound", 2, .2 }, \
	{ "Memory Bound", "tma_memory_bound", "Backend Bound", 2, .2 }, \
	{ "Core Bound", "tma_core_bound", "Backend Bound", 2, .1 }, \
	{ "Uops Sequencer", "tma_microcode_sequencer", "Heavy Operations", 3, .05 }, \
	{ "Few Operations", "tma_few_uops_instructions", "Heavy Operations", 3, .05 }, \
	{ "FP Arithmetic", "tma_fp_arith", "Light Operations", 3, .2 }, \
	{ "Memory Operations", "tma_memory_operations", "Light Operations", 3, .1 }, \
	{ "X87 Use", "tma_x87_use", "FP Arithmetic", 4, .1 }, \
	{ "FP Scalar", "tma_fp_scalar", "FP Arithmetic", 4, .1 }, \
	{ "FP Vector", "tma_fp_vector", "FP Arithmetic", 4, .1 }, \
	{ "ICache Misses", "tma_icache_misses", "Fetch Latency", 3, .05 }, \
	{ "ITLB Misses", "tma_itlb_misses", "Fetch Latency", 3, .05 }, \
	{ "LCP", "tma_lcp", "Fetch Latency", 3, .05 }, \
	{ "DSB Switches", "tma_dsb_switches", "Fetch Latency", 3, .05 }, \
	{ "Branch Resteers", "tma_branch_resteers", "Fetch Latency", 3, .05 }, \
	{ "MS Switches", "tma_ms_switches", "Fetch Latency", 3, .05 }, \
	{ "L1 Bound", "tma_l1_bound", "Memory Bound", 3, .1 }, \
	{ "L3 Bound", "tma_l3_bound", "Memory Bound", 3, .05 }, \
	{ "Store Bound", "tma_store_bound", "Memory Bound", 3, .2 }, \
	{ "Divider", "tma_divider", "Core Bound", 3, .2 }, \
	{ "Port Utilization", "tma_ports_utilization", "Core Bound", 3, .15 }, \
	{ "Serialization", "tma_serializing_operation", "Core Bound", 3, .1 },

static const struct ref_node icx_nodes[] = {
	INTEL_ICX_NODES
};
/* Reference nodes the planner leaves out on ICX (it says why in the plan's notes). */
static const char *const icx_not_planned[] = { "Integer Operations", "L2 Bound", "DRAM Bound",
					       "Memory Bandwidth", "Memory Latency" };

static const struct ref_node spr_nodes[] = {
	INTEL_ICX_NODES
	/* The five more of spr. */
	{ "Integer Operations", "tma_int_operations", "Light Operations", 3, .1 },
	{ "L2 Bound", "tma_l2_bound", "Memory Bound", 3, .05 },
	{ "L3 Miss Bound", "tma_l3_miss_bound", "Memory Bound", 3, .1 },
	{ "Memory Bandwidth", "tma_mem_bandwidth", "L3 Miss Bound", 4, .2 },
	{ "Memory Latency", "tma_mem_latency", "L3 Miss Bound", 4, .1 },
};

static const struct ref_node amd_nodes[] = {
	{ "Total Slots", "total_dispatch_slots", NULL, 0, -1 },
	{ "Active", "=Retiring+Bad Speculation", "Total Slots", 0, -1 },
	{ "Stall", "=Frontend Bound+Backend Bound+SMT Contention", "Total Slots", 0, -1 },
	{ "Retiring", "retiring", "Active", 1, -1 },
	{ "Bad Speculation", "bad_speculation", "Active", 1, -1 },
	{ "Frontend Bound", "frontend_bound", "Stall", 1, -1 },
	{ "Backend Bound", "backend_bound", "Stall", 1, -1 },
	{ "SMT Contention", "smt_contention", "Stall", 1, -1 },
	{ "Heavy Operations", "retiring_microcode", "Retiring", 2, -1 },
	{ "Light Operations", "retiring_fastpath", "Retiring", 2, -1 },
	{ "Misprediction", "bad_speculation_mispredicts", "Bad Speculation", 2, -1 },
	{ "Machine Clear", "bad_speculation_pipeline_restarts", "Bad Speculation", 2, -1 },
	{ "Fetch Latency", "frontend_bound_latency", "Frontend Bound", 2, -1 },
	{ "Fetch Bandwidth", "frontend_bound_bandwidth", "Frontend Bound", 2, -1 },
	{ "Memory Bound", "backend_bound_memory", "Backend Bound", 2, -1 },
	{ "Core Bound", "backend_bound_cpu", "Backend Bound", 2, -1 },
};

/* One model: its events, metrics and nodes. */
struct ref_model {
	const char *cpu;
	const struct ref_event *events;
	size_t nevents;
	const struct ref_node *nodes;
	size_t nnodes;
	const char *const *not_planned;
	size_t nnot_planned;
};

static const struct ref_model models[] = {
	{ "icx", icx_events, ARRAY_SIZE(icx_events), icx_nodes, ARRAY_SIZE(icx_nodes),
	  icx_not_planned, ARRAY_SIZE(icx_not_planned) },
	{ "spr", spr_events, ARRAY_SIZE(spr_events), spr_nodes, ARRAY_SIZE(spr_nodes), NULL, 0 },
	{ "emr", spr_events, ARRAY_SIZE(spr_events), spr_nodes, ARRAY_SIZE(spr_nodes), NULL, 0 },
	{ "gnr", spr_events, ARRAY_SIZE(spr_events), spr_nodes, ARRAY_SIZE(spr_nodes), NULL, 0 },
	{ "zen4", zen4_events, ARRAY_SIZE(zen4_events), amd_nodes, ARRAY_SIZE(amd_nodes), NULL, 0 },
	{ "zen5", zen5_events, ARRAY_SIZE(zen5_events), amd_nodes, ARRAY_SIZE(amd_nodes), NULL, 0 },
};

static void compute_metrics(const struct ref_model *m, struct vals *v)
{
	v->nres = 0;
	if (!strcmp(m->cpu, "icx"))
		icx_metrics(v);
	else if (!strncmp(m->cpu, "zen", 3))
		amd_metrics(v, !strcmp(m->cpu, "zen5") ? 8 : 6);
	else
		spr_metrics(v);
}

/* ---- the plan against the reference ---- */

static struct tma_plan plan; /* large */

/* The reference event of plan event I, or -1. */
static int ref_of(const struct ref_model *m, int i)
{
	const struct tma_event *e = &plan.ev[i];
	bool amd = plan.cpu->vendor == TMA_AMD;
	for (size_t r = 0; r < m->nevents; r++)
		if (ref_config(&m->events[r], amd) == e->config && m->events[r].msr == e->config1)
			return (int)r;
	return -1;
}

/*
 * Every event of the plan is a reference event, and the planner's restriction (counters 0-3)
 * is the reference Counter field.
 */
static bool check_events(const struct ref_model *m, const char *what)
{
	bool good = true;
	for (int i = 0; i < plan.nevents; i++) {
		const struct tma_event *e = &plan.ev[i];
		int r = ref_of(m, i);
		if (r < 0) {
			diag("%s: %s (config %#llx, config1 %#llx) is not in the reference list", what,
			     e->event, (unsigned long long)e->config, (unsigned long long)e->config1);
			good = false;
			continue;
		}
		const char *counter = m->events[r].counter;
		bool low4 = !strcmp(counter, LOW4);
		if (e->restricted != low4) {
			diag("%s: %s: restricted %d, the reference Counter is \"%s\"", what, e->event,
			     e->restricted, counter);
			good = false;
		}
		bool fixed_or_metric = !strncmp(counter, "Fixed", 5) || !strcmp(counter, PERF_METRICS);
		if ((e->role == TMA_ROLE_SLOTS || e->role == TMA_ROLE_METRIC) != fixed_or_metric) {
			diag("%s: %s: role %d, the reference Counter is \"%s\"", what, e->event, e->role,
			     counter);
			good = false;
		}
	}
	return good;
}

/* Kuhn's augmenting path: event E takes a free counter of MASK[E] or displaces another. */
static bool place(const unsigned *mask, int e, int *owner, unsigned *seen, int ncounters)
{
	for (int c = 0; c < ncounters; c++) {
		if (!(mask[e] >> c & 1) || (*seen >> c & 1))
			continue;
		*seen |= 1u << c;
		if (owner[c] < 0 || place(mask, owner[c], owner, seen, ncounters)) {
			owner[c] = e;
			return true;
		}
	}
	return false;
}

/*
 * Every group of the plan can count at once on counters GP with FIXED fixed counters:
 * slots on fixed counter 3, the metrics in PERF_METRICS, the cycles trigger on fixed counter 1
 * unless the NMI watchdog holds it (Intel), every other event on a general-purpose counter
 * its reference Counter field allows; on AMD the watchdog holds a general-purpose counter.
 */
static bool check_schedule(const struct ref_model *m, int gp, int fixed, bool watchdog,
			   const char *what)
{
	bool intel = plan.cpu->vendor == TMA_INTEL, good = true;
	for (int g = 0; g < plan.ngroups; g++) {
		const struct tma_group *tg = &plan.group[g];
		unsigned mask[TMA_MAX_GROUP_EVENTS + 1];
		int n = 0;
		bool slots = false;
		for (int k = tg->first; k < tg->first + tg->n; k++) {
			int r = ref_of(m, k);
			if (r < 0)
				return false; /* check_events said so */
			const struct tma_event *e = &plan.ev[k];
			if (e->role == TMA_ROLE_SLOTS) {
				slots = fixed >= 4;
				continue;
			}
			if (e->role == TMA_ROLE_METRIC)
				continue;
			if (intel && e->role == TMA_ROLE_TRIGGER && !watchdog && fixed >= 2)
				continue; /* fixed counter 1 */
			mask[n++] = counter_mask(m->events[r].counter, gp);
		}
		int ncounters = gp;
		if (!intel && watchdog)
			mask[n++] = (1u << gp) - 1; /* the watchdog's own counter */
		int owner[32];
		for (int c = 0; c < 32; c++)
			owner[c] = -1;
		int placed = 0;
		for (int e = 0; e < n; e++) {
			unsigned seen = 0;
			placed += place(mask, e, owner, &seen, ncounters);
		}
		if (placed < n || (intel && !slots)) {
			diag("%s: group %s: %d of %d events placed on %d counters%s", what, tg->name,
			     placed, n, ncounters, intel && !slots ? ", no fixed counter 3" : "");
			good = false;
		}
	}
	return good;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

/* Node values as view computes them: its compiled formulas over the same deltas. */
struct view_ctx {
	struct formula f[TMA_MAX_NODES];
	const double *deltas;
	double nodes[TMA_MAX_NODES];
	uint8_t state[TMA_MAX_NODES];
};

static double view_ref(void *vctx, uint32_t k)
{
	struct view_ctx *x = vctx;
	if (k < (uint32_t)plan.nevents)
		return x->deltas[k];
	uint32_t j = k - (uint32_t)plan.nevents;
	if (j >= (uint32_t)plan.nnodes || x->state[j] == 1)
		return NAN;
	if (x->state[j] == 0) {
		x->state[j] = 1;
		x->nodes[j] = formula_eval(&x->f[j], view_ref, x);
		x->state[j] = 2;
	}
	return x->nodes[j];
}

static const struct ref_node *ref_node(const struct ref_model *m, const char *name)
{
	for (size_t i = 0; i < m->nnodes; i++)
		if (!strcmp(m->nodes[i].name, name))
			return &m->nodes[i];
	return NULL;
}

/* The reference value of node NODE: a metric, or fathom's sum of nodes, or the slots. */
static double ref_value(const struct ref_model *m, const struct ref_node *node,
			const struct vals *v, int slot_groups)
{
	if (!strcmp(node->metric, "=slots"))
		return V(v, "slots") * slot_groups;
	if (node->metric[0] != '=')
		return G(v, node->metric);
	double sum = 0;
	char part[64];
	for (const char *s = node->metric + 1; *s;) {
		size_t len = strcspn(s, "+");
		snprintf(part, sizeof(part), "%.*s", (int)len, s);
		const struct ref_node *p = ref_node(m, part);
		if (!p) {
			snprintf(ref_error, sizeof(ref_error), "no reference node %s", part);
			return NAN;
		}
		sum += ref_value(m, p, v, slot_groups);
		s += len + (s[len] == '+');
	}
	return sum;
}

static bool close_to(double got, double want)
{
	if (isnan(want))
		return isnan(got);
	return fabs(got - want) <= 1e-12 + 1e-9 * fabs(want);
}

/*
 * Every node of the plan: its parent, level and threshold are the reference's, and on TRIALS
 * random counts measure's and view's values are the reference value.  COMPARED[j] counts the
 * trials that compared node j.  Returns whether all agreed.
 */
static bool check_nodes(const struct ref_model *m, int trials, int *compared, const char *what)
{
	bool good = true;
	for (int j = 0; j < plan.nnodes; j++) {
		const struct tma_node *n = &plan.node[j];
		const struct ref_node *r = ref_node(m, n->name);
		if (!r) {
			diag("%s: node %s has no reference definition", what, n->name);
			good = false;
			continue;
		}
		const char *parent = n->parent < 0 ? NULL : plan.node[n->parent].name;
		double thr = isnan(n->threshold) ? -1 : n->threshold;
		if ((parent == NULL) != (r->parent == NULL) ||
		    (parent && strcmp(parent, r->parent)) || n->level != r->level ||
		    fabs(thr - r->threshold) > 1e-12) {
			diag("%s: node %s: parent %s level %d threshold %g, the reference %s %d %g",
			     what, n->name, parent ? parent : "-", n->level, thr,
			     r->parent ? r->parent : "-", r->level, r->threshold);
			good = false;
		}
	}

	static struct view_ctx vx;
	for (int j = 0; j < plan.nnodes; j++)
		if (formula_compile(plan.node[j].formula, (uint32_t)(plan.nevents + plan.nnodes),
				    &vx.f[j]) < 0) {
			diag("%s: node %s: view cannot compile %s", what, plan.node[j].name,
			     plan.node[j].formula);
			return false;
		}
	int slot_groups = 0;
	for (int i = 0; i < plan.nevents; i++)
		slot_groups += plan.ev[i].role == TMA_ROLE_SLOTS;

	struct vals v;
	memset(&v, 0, sizeof(v));
	v.events = m->events;
	v.nevents = m->nevents;
	double deltas[TMA_MAX_EVENTS], nodes[TMA_MAX_NODES];
	for (int t = 0; t < trials && good; t++) {
		/* One random count per reference event, the same in every group that has it. */
		bool planned[MAX_VARS] = { false };
		for (int i = 0; i < plan.nevents; i++) {
			if (ref_of(m, i) < 0)
				return false; /* check_events says which */
			planned[ref_of(m, i)] = true;
		}
		for (size_t r = 0; r < m->nevents; r++)
			v.ev[r] = planned[r] ? (double)(1 + rng() % (1u << 20)) : NAN;
		for (int i = 0; i < plan.nevents; i++)
			deltas[i] = v.ev[ref_of(m, i)];
		compute_metrics(m, &v);
		tma_nodes(&plan, deltas, nodes);
		memset(vx.state, 0, sizeof(vx.state));
		vx.deltas = deltas;
		for (int j = 0; j < plan.nnodes; j++) {
			const struct ref_node *r = ref_node(m, plan.node[j].name);
			if (!r)
				continue;
			double want = ref_value(m, r, &v, slot_groups);
			double seen = view_ref(&vx, (uint32_t)(plan.nevents + j));
			if (!close_to(nodes[j], want) || !close_to(seen, want)) {
				diag("%s: %s = %.12g (view %.12g), the reference %s = %.12g", what,
				     plan.node[j].name, nodes[j], seen, r->metric, want);
				diag("  formula %s", plan.node[j].formula);
				good = false;
			}
			if (compared)
				compared[j]++;
		}
	}
	for (int j = 0; j < plan.nnodes; j++)
		formula_release(&vx.f[j]);
	if (ref_error[0]) {
		diag("%s: %s", what, ref_error);
		good = false;
	}
	return good;
}

static int make_plan(const struct tma_cpu *c, unsigned subtrees, int gp, bool watchdog)
{
	struct tma_request r;
	memset(&r, 0, sizeof(r));
	r.subtrees = subtrees;
	for (int i = 0; i < 4; i++)
		r.rate[i] = 1000000;
	struct tma_budget b = { (uint8_t)gp, c->fixed, watchdog, 0 };
	return tma_plan(c, &r, &b, &plan);
}

/* topdown:all on the model's own budget: every reference node is compared, one by one. */
static void test_full_plan(const struct ref_model *m)
{
	const struct tma_cpu *c = tma_cpu_find(m->cpu);
	if (!ok(make_plan(c, TMA_SUB_ALL, c->gp, false) == 0, "%s topdown:all", m->cpu))
		return;
	int compared[TMA_MAX_NODES] = { 0 };
	char what[64];
	snprintf(what, sizeof(what), "%s topdown:all", m->cpu);
	ok(check_events(m, what), "%s: every event is in the reference list, restricted to "
				  "counters 0-3 exactly where its Counter field says so", what);
	ok(check_schedule(m, c->gp, c->fixed, false, what), "%s: every group can be placed", what);
	ok(check_nodes(m, 200, compared, what), "%s: every node is the reference on 200 random "
						"counts (measure's and view's evaluators)", what);
	for (size_t i = 0; i < m->nnodes; i++) {
		int j = tma_node_index(&plan, m->nodes[i].name);
		ok(j >= 0 && compared[j] == 200, "%s: %s = %s%s", m->cpu, m->nodes[i].name,
		   m->nodes[i].metric, j < 0 ? " (not planned)" : "");
	}
	for (size_t i = 0; i < m->nnot_planned; i++)
		ok(tma_node_index(&plan, m->not_planned[i]) < 0 &&
		   strstr(plan.notes, m->not_planned[i]) != NULL,
		   "%s: %s is not planned, and the notes say so", m->cpu, m->not_planned[i]);
	is_int(plan.nnodes, (int)m->nnodes, "%s: %d nodes, each with a reference definition",
	       m->cpu, (int)m->nnodes);
}

/* Every topdown event and combination on several budgets: events, groups and nodes. */
static void test_all_plans(const struct ref_model *m)
{
	static const unsigned requests[] = {
		TMA_SUB_BASE, TMA_SUB_RETIRING, TMA_SUB_FRONTEND, TMA_SUB_BACKEND, TMA_SUB_ALL,
		TMA_SUB_FRONTEND | TMA_SUB_BACKEND, TMA_SUB_BASE | TMA_SUB_RETIRING,
	};
	const struct tma_cpu *c = tma_cpu_find(m->cpu);
	int plans = 0, events = 0, schedules = 0, nodes = 0;
	for (size_t q = 0; q < ARRAY_SIZE(requests); q++)
		for (int gp = c->gp; gp >= 4; gp--)
			for (int w = 0; w <= 1; w++) {
				char what[96];
				snprintf(what, sizeof(what), "%s subtrees %#x gp %d watchdog %d", m->cpu,
					 requests[q], gp, w);
				if (make_plan(c, requests[q], gp, w) < 0)
					continue; /* too few counters: tma_plan refuses */
				plans++;
				events += check_events(m, what);
				schedules += check_schedule(m, gp, c->fixed, w, what);
				nodes += check_nodes(m, 20, NULL, what);
			}
	ok(plans > 0, "%s: %d plans (every topdown event, 4 to %d counters, with and without the "
		      "NMI watchdog)", m->cpu, plans, c->gp);
	is_int(events, plans, "%s: in every plan each event has its reference restriction", m->cpu);
	is_int(schedules, plans, "%s: in every plan each group can be placed on the counters",
	       m->cpu);
	is_int(nodes, plans, "%s: in every plan each node is the reference on random counts",
	       m->cpu);
}

/* The checks above can fail: a changed restriction or formula is caught. */
static void test_mutations(void)
{
	const struct ref_model *icx = &models[0];
	ok(make_plan(tma_cpu_find("icx"), TMA_SUB_FRONTEND, 8, true) == 0, "icx topdown:frontend");
	for (int i = 0; i < plan.nevents; i++)
		if (!strcmp(plan.ev[i].event, "UOPS_DECODED.DEC0"))
			plan.ev[i].restricted = false;
	ok(!check_events(icx, "mutated"), "a restriction changed from the reference is caught");
	ok(make_plan(tma_cpu_find("icx"), TMA_SUB_FRONTEND, 8, true) == 0, "icx topdown:frontend");
	int g = 0;
	for (int i = 0; i < plan.nevents; i++)
		if (!strcmp(plan.ev[i].key, "mite"))
			g = plan.ev[i].group;
	/* Five events of counters 0-3 in one group: the ICACHE_DATA.STALLS of another group. */
	for (int i = 0; i < plan.nevents; i++)
		if (plan.ev[i].group == g && !strcmp(plan.ev[i].key, "uslots")) {
			plan.ev[i].config = 0x0480;
			plan.ev[i].restricted = true;
		}
	ok(!check_schedule(icx, 8, 4, true, "mutated"), "a group no schedule can place is caught");

	ok(make_plan(tma_cpu_find("icx"), TMA_SUB_BACKEND, 8, false) == 0, "icx topdown:backend");
	int j = tma_node_index(&plan, "Port Utilization");
	strcat(plan.node[j].formula, "+0.001");
	ok(!check_nodes(icx, 20, NULL, "mutated"), "a formula changed from the reference is caught");
	ok(make_plan(tma_cpu_find("icx"), TMA_SUB_BASE, 8, false) == 0, "icx topdown");
	j = tma_node_index(&plan, "Fetch Bandwidth");
	plan.node[j].threshold = .1;
	ok(!check_nodes(icx, 1, NULL, "mutated"), "a threshold changed from the reference is caught");
}

int main(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(models); i++)
		test_full_plan(&models[i]);
	for (size_t i = 0; i < ARRAY_SIZE(models); i++)
		test_all_plans(&models[i]);
	test_mutations();
	return done_testing();
}
