/* SPDX-License-Identifier: MIT */
/*
 * tma.c: the pure parts of top-down analysis (tma.h): CPU model table, event encodings,
 * planner, formula evaluator and decoder.  The definitions followed (formulas, thresholds,
 * tree) are public:
 *   SPR/EMR/GNR  Intel TMA 5.2: intel/perfmon SPR/metrics/sapphirerapids_metrics.json (and the
 *                EMR and GNR files).  Linux perf's sapphirerapids/spr-metrics.json has an
 *                earlier TMA (5.0x), where L3 Miss Bound is still DRAM Bound and Memory
 *                Bandwidth counts cycles with 4 outstanding data reads, not 12.
 *   ICX          Intel TMA 5.02 as Linux perf has it: tools/perf/pmu-events/arch/x86/icelakex/
 *                icx-metrics.json (intel/perfmon ICX/metrics/icelakex_metrics.json).
 *   Zen 4/5      Linux perf's tools/perf/pmu-events/arch/x86/amdzen4/pipeline.json and
 *                amdzen5/pipeline.json.
 * Event encodings and counter restrictions are those of the event JSON beside each metrics file
 * (EventCode, UMask, CounterMask, EdgeDetect, MSRValue and Counter: "0,1,2,3" is restricted),
 * which agree with the kernel's constraint tables (arch/x86/events/intel/core.c).
 */
#include "compat.h"
#include "tma.h"
#include "buf.h"
#include "error.h"
#include "formula.h"

#include <ctype.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- CPU models ---- */

static const struct tma_cpu cpus[] = {
	{ "icx", "Intel Ice Lake server", TMA_INTEL, 4, 5, 8, 4, true,
	  "Intel TMA 5.02 (Linux perf's icelakex metrics)" },
	{ "spr", "Intel Sapphire Rapids", TMA_INTEL, 8, 6, 8, 4, true, "Intel TMA 5.2" },
	{ "emr", "Intel Emerald Rapids", TMA_INTEL, 8, 6, 8, 4, true, "Intel TMA 5.2" },
	{ "gnr", "Intel Granite Rapids", TMA_INTEL, 8, 6, 8, 4, true, "Intel TMA 5.2" },
	{ "zen4", "AMD Zen 4", TMA_AMD, 0, 6, 6, 0, false,
	  "AMD pipeline utilization (Linux perf's amdzen4 metrics)" },
	{ "zen5", "AMD Zen 5", TMA_AMD, 0, 8, 6, 0, false,
	  "AMD pipeline utilization (Linux perf's amdzen5 metrics)" },
};

const struct tma_cpu *tma_cpu_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(cpus); i++)
		if (!strcasecmp(name, cpus[i].name))
			return &cpus[i];
	return NULL;
}

const struct tma_cpu *tma_cpu_lookup(enum tma_vendor vendor, unsigned family, unsigned model)
{
	if (vendor == TMA_INTEL && family == 6) {
		switch (model) {
		case 0x6a: case 0x6c: return &cpus[0];
		case 0x8f: return &cpus[1];
		case 0xcf: return &cpus[2];
		case 0xad: case 0xae: return &cpus[3];
		}
	} else if (vendor == TMA_AMD) {
		if (family == 0x19 && (model >= 0x60 || (model >= 0x10 && model <= 0x1f)))
			return &cpus[4];
		if (family == 0x1a)
			return &cpus[5];
	}
	return NULL;
}

const char *tma_cpu_names(void)
{
	return "icx, spr, emr, gnr (Intel), zen4, zen5 (AMD)";
}

static const struct tma_event_name event_names[] = {
	{ "topdown", TMA_SUB_BASE, "TMA levels 1 and 2, cycles trigger (proxy sampling)" },
	{ "topdown:retiring", TMA_SUB_RETIRING, "TMA levels 1-2, and 3-4 of Retiring" },
	{ "topdown:frontend", TMA_SUB_FRONTEND, "TMA levels 1-2, and 3-4 of Frontend Bound" },
	{ "topdown:backend", TMA_SUB_BACKEND, "TMA levels 1-2, and 3-4 of Backend Bound" },
	{ "topdown:all", TMA_SUB_ALL, "TMA levels 1-4 (several groups, multiplexed)" },
};

const struct tma_event_name *tma_event_names(size_t *n)
{
	*n = ARRAY_SIZE(event_names);
	return event_names;
}

unsigned tma_subtree_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(event_names); i++)
		if (!strcasecmp(name, event_names[i].name))
			return event_names[i].subtrees;
	return 0;
}

/* ---- events ---- */

struct ev_def {
	const char *key, *name;
	uint64_t config, config1;
	bool restricted; /* Intel: counters 0-3 only */
};
#define RESTRICTED_COUNTERS 4 /* Intel general-purpose counters 0-3 */

/*
 * Intel SPR/EMR/GNR general-purpose events (intel/perfmon SPR/events/sapphirerapids_core.json;
 * the EMR and GNR lists agree on every one).  restricted: Counter "0,1,2,3", as the kernel's
 * Sapphire Rapids table restricts event codes below 0x90.  UOPS_RETIRED.MS and
 * INT_MISC.UNKNOWN_BRANCH_CYCLES need the FRONTEND MSR (config1).
 */
static const struct ev_def intel_events[] = {
	{ "drop", "INT_MISC.UOP_DROPPING", 0x10ad, 0, false },
	{ "icd", "ICACHE_DATA.STALLS", 0x0480, 0, true },
	{ "ict", "ICACHE_TAG.STALLS", 0x0483, 0, true },
	{ "lcp", "DECODE.LCP", 0x0187, 0, true },
	{ "dsb", "DSB2MITE_SWITCHES.PENALTY_CYCLES", 0x0261, 0, true },
	{ "resteer", "INT_MISC.CLEAR_RESTEER_CYCLES", 0x80ad, 0, false },
	{ "unkbr", "INT_MISC.UNKNOWN_BRANCH_CYCLES", 0x40ad, 0x7, false },
	{ "ms", "UOPS_RETIRED.MS", 0x04c2, 0x8, false },
	{ "mssw", "UOPS_RETIRED.MS:c1:e1", 0x10404c2, 0x8, false },
	{ "uslots", "UOPS_RETIRED.SLOTS", 0x02c2, 0, false },
	{ "uissued", "UOPS_ISSUED.ANY", 0x01ae, 0, false },
	{ "bol", "EXE_ACTIVITY.BOUND_ON_LOADS", 0x50021a6, 0, false },
	{ "l1m", "MEMORY_ACTIVITY.STALLS_L1D_MISS", 0x3000347, 0, true },
	{ "l2m", "MEMORY_ACTIVITY.STALLS_L2_MISS", 0x5000547, 0, true },
	{ "l3m", "MEMORY_ACTIVITY.STALLS_L3_MISS", 0x9000947, 0, true },
	{ "ordc", "OFFCORE_REQUESTS_OUTSTANDING.DATA_RD:c12", 0xc000820, 0, true },
	{ "orcyc", "OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DATA_RD", 0x1000820, 0, true },
	{ "bos", "EXE_ACTIVITY.BOUND_ON_STORES", 0x20040a6, 0, false },
	{ "div", "ARITH.DIV_ACTIVE", 0x10009b0, 0, false },
	{ "sb", "RESOURCE_STALLS.SCOREBOARD", 0x02a2, 0, false },
	{ "c02", "CPU_CLK_UNHALTED.C02", 0x20ec, 0, false },
	{ "eb0", "EXE_ACTIVITY.EXE_BOUND_0_PORTS", 0x80a6, 0, false },
	{ "rse", "RS.EMPTY_RESOURCE", 0x01a5, 0, false },
	{ "stt", "CYCLE_ACTIVITY.STALLS_TOTAL", 0x40004a3, 0, false },
	{ "p1", "EXE_ACTIVITY.1_PORTS_UTIL", 0x02a6, 0, false },
	{ "p23", "EXE_ACTIVITY.2_3_PORTS_UTIL", 0x0ca6, 0, false },
	{ "x87", "UOPS_EXECUTED.X87", 0x10b1, 0, false },
	{ "uthr", "UOPS_EXECUTED.THREAD", 0x01b1, 0, false },
	{ "fps", "FP_ARITH_INST_RETIRED.SCALAR", 0x03c7, 0, false },
	{ "fps2", "FP_ARITH_INST_RETIRED2.SCALAR", 0x03cf, 0, false },
	{ "fpv", "FP_ARITH_INST_RETIRED.VECTOR", 0xfcc7, 0, false },
	{ "fpv2", "FP_ARITH_INST_RETIRED2.VECTOR", 0x1ccf, 0, false },
	{ "add128", "INT_VEC_RETIRED.ADD_128", 0x03e7, 0, false },
	{ "vnni128", "INT_VEC_RETIRED.VNNI_128", 0x10e7, 0, false },
	{ "add256", "INT_VEC_RETIRED.ADD_256", 0x0ce7, 0, false },
	{ "mul256", "INT_VEC_RETIRED.MUL_256", 0x80e7, 0, false },
	{ "vnni256", "INT_VEC_RETIRED.VNNI_256", 0x20e7, 0, false },
	{ "memuop", "MEM_UOP_RETIRED.ANY", 0x03e5, 0, false },
};

/*
 * Intel Ice Lake server general-purpose events: level 2 and Intel's level-1 corrections come
 * from these, since its PERF_METRICS has the level-1 bytes only.  Encodings and restrictions
 * are those of Linux perf's icelakex/{pipeline,frontend,memory,cache,floating-point}.json
 * (libpfm4's icx table agrees: t-tma-pfm); restricted: Counter "0,1,2,3", as the kernel's Ice
 * Lake constraint table has it (events 0x48-0x56 since 2022, 0x60-0x8b, 0xa3 other than
 * STALLS_TOTAL and STALLS_MEM_ANY, 0xa8-0xb0, 0xd0-0xe6).  EXE_BOUND_0_PORTS is umask 0x80 of
 * event 0xa6, which perf's metrics write EXE_ACTIVITY.3_PORTS_UTIL,umask=0x80.
 */
static const struct ev_def icx_events[] = {
	{ "drop", "INT_MISC.UOP_DROPPING", 0x100d, 0, false },
	{ "clr", "INT_MISC.CLEARS_COUNT", 0x104010d, 0, false },
	{ "fl0", "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE", 0x500019c, 0, false },
	{ "brm", "BR_MISP_RETIRED.ALL_BRANCHES", 0x00c5, 0, false },
	{ "mcl", "MACHINE_CLEARS.COUNT", 0x10401c3, 0, false },
	{ "smem", "CYCLE_ACTIVITY.STALLS_MEM_ANY", 0x140014a3, 0, false },
	{ "bos", "EXE_ACTIVITY.BOUND_ON_STORES", 0x20040a6, 0, false },
	{ "stt", "CYCLE_ACTIVITY.STALLS_TOTAL", 0x40004a3, 0, false },
	{ "p1", "EXE_ACTIVITY.1_PORTS_UTIL", 0x02a6, 0, false },
	{ "p2", "EXE_ACTIVITY.2_PORTS_UTIL", 0x04a6, 0, false },
	{ "uslots", "UOPS_RETIRED.SLOTS", 0x02c2, 0, false },
	{ "uissued", "UOPS_ISSUED.ANY", 0x010e, 0, false },
	{ "msu", "IDQ.MS_UOPS", 0x3079, 0, true },
	{ "dec0", "UOPS_DECODED.DEC0", 0x0156, 0, true },
	{ "dec0c1", "UOPS_DECODED.DEC0:c1", 0x1000156, 0, true },
	{ "mite", "IDQ.MITE_UOPS", 0x0479, 0, true },
	{ "icd", "ICACHE_DATA.STALLS", 0x0480, 0, true },
	{ "ict", "ICACHE_TAG.STALLS", 0x0483, 0, true },
	{ "lcp", "DECODE.LCP", 0x0187, 0, true },
	{ "dsb", "DSB2MITE_SWITCHES.PENALTY_CYCLES", 0x02ab, 0, true },
	{ "resteer", "INT_MISC.CLEAR_RESTEER_CYCLES", 0x800d, 0, false },
	{ "baclr", "BACLEARS.ANY", 0x01e6, 0, true },
	{ "mssw", "IDQ.MS_SWITCHES", 0x1043079, 0, true },
	{ "l1m", "CYCLE_ACTIVITY.STALLS_L1D_MISS", 0xc000ca3, 0, true },
	{ "l2m", "CYCLE_ACTIVITY.STALLS_L2_MISS", 0x50005a3, 0, true },
	{ "l3m", "CYCLE_ACTIVITY.STALLS_L3_MISS", 0x60006a3, 0, true },
	{ "div", "ARITH.DIVIDER_ACTIVE", 0x1000914, 0, false },
	{ "eb0", "EXE_ACTIVITY.EXE_BOUND_0_PORTS", 0x80a6, 0, false },
	{ "sb", "RESOURCE_STALLS.SCOREBOARD", 0x02a2, 0, false },
	{ "x87", "UOPS_EXECUTED.X87", 0x10b1, 0, false },
	{ "uthr", "UOPS_EXECUTED.THREAD", 0x01b1, 0, false },
	{ "fps", "FP_ARITH_INST_RETIRED.SCALAR", 0x03c7, 0, false },
	{ "fpv", "FP_ARITH_INST_RETIRED.VECTOR", 0xfcc7, 0, false },
	{ "memi", "MEM_INST_RETIRED.ANY", 0x83d0, 0, true },
	{ "inst", "INST_RETIRED.ANY_P", 0x00c0, 0, false },
};

/* The PERF_METRICS pseudo-events in byte order (config 0x8000 + byte << 8). */
static const struct ev_def intel_metrics[] = {
	{ "ret", "topdown-retiring", 0x8000, 0, false },
	{ "bad", "topdown-bad-spec", 0x8100, 0, false },
	{ "fe", "topdown-fe-bound", 0x8200, 0, false },
	{ "be", "topdown-be-bound", 0x8300, 0, false },
	{ "heavy", "topdown-heavy-ops", 0x8400, 0, false },
	{ "brm", "topdown-br-mispredict", 0x8500, 0, false },
	{ "fl", "topdown-fetch-lat", 0x8600, 0, false },
	{ "mb", "topdown-mem-bound", 0x8700, 0, false },
};
static const struct ev_def intel_slots = { "slots", "slots", 0x0400, 0, false };
static const struct ev_def intel_cycles = { "clks", "cycles", 0x003c, 0, false };

/*
 * AMD Zen 4 / Zen 5 (Linux perf's amdzen4 and amdzen5 event lists; they give no Counter
 * restriction); fec and rsy differ by model (find_def()).
 */
static const struct ev_def amd_events[] = {
	{ "fe", "de_no_dispatch_per_slot.no_ops_from_frontend", 0x1000001a0, 0, false },
	{ "be", "de_no_dispatch_per_slot.backend_stalls", 0x100001ea0, 0, false },
	{ "smt", "de_no_dispatch_per_slot.smt_contention", 0x1000060a0, 0, false },
	{ "disp", "de_src_op_disp.all", 0x7aa, 0, false },
	{ "ret", "ex_ret_ops", 0xc1, 0, false },
	{ "misp", "ex_ret_brn_misp", 0xc3, 0, false },
	{ "lnc", "ex_no_retire.load_not_complete", 0xa2d6, 0, false },
	{ "nc", "ex_no_retire.not_complete", 0x2d6, 0, false },
	{ "ucode", "ex_ret_ucode_ops", 0x1000000c2, 0, false },
};
static const struct ev_def zen4_fec = { "fec", "de_no_dispatch_per_slot.no_ops_from_frontend:c6",
					0x1060001a0, 0, false };
static const struct ev_def zen5_fec = { "fec", "de_no_dispatch_per_slot.no_ops_from_frontend:c8",
					0x1080001a0, 0, false };
static const struct ev_def zen4_rsy = { "rsy", "resyncs_or_nc_redirects", 0x96, 0, false };
static const struct ev_def zen5_rsy = { "rsy", "bp_redirects.resync", 0x19f, 0, false };
static const struct ev_def amd_cycles = { "cyc", "ls_not_halted_cyc", 0x76, 0, false };

/* Intel models whose PERF_METRICS has level 1 only (ICX): level 2 from general-purpose events. */
static bool icx_like(const struct tma_cpu *cpu)
{
	return cpu->vendor == TMA_INTEL && cpu->metrics < 8;
}

static const struct ev_def *find_def(const struct tma_cpu *cpu, const char *key)
{
	if (icx_like(cpu)) {
		for (size_t i = 0; i < ARRAY_SIZE(icx_events); i++)
			if (!strcmp(icx_events[i].key, key))
				return &icx_events[i];
		return NULL;
	}
	if (cpu->vendor == TMA_AMD) {
		bool zen5 = cpu->width == 8;
		if (!strcmp(key, "fec"))
			return zen5 ? &zen5_fec : &zen4_fec;
		if (!strcmp(key, "rsy"))
			return zen5 ? &zen5_rsy : &zen4_rsy;
		for (size_t i = 0; i < ARRAY_SIZE(amd_events); i++)
			if (!strcmp(amd_events[i].key, key))
				return &amd_events[i];
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(intel_events); i++)
		if (!strcmp(intel_events[i].key, key))
			return &intel_events[i];
	return NULL;
}

/* ---- atoms: the events one or more nodes need together, packed into groups as a unit ---- */

enum section { SEC_BASE, SEC_RET, SEC_FE, SEC_BE, SEC_AP, SEC_AF, SEC_AS, SEC_AB, SEC_AR };
static const char *const section_prefix[] = { "T", "R", "F", "B", "P", "F", "S", "B", "R" };

struct atom {
	const char *name;
	uint8_t section;
	const char *keys[9]; /* NULL-terminated */
	const char *what;    /* for notes: the nodes it serves */
};

static const struct atom intel_atoms[] = {
	{ "ms", SEC_RET, { "ms" }, "Uops Sequencer, Few Operations" },
	{ "x87", SEC_RET, { "x87", "uthr" }, "X87 Use" },
	{ "fps", SEC_RET, { "fps", "fps2" }, "FP Scalar" },
	{ "fpv", SEC_RET, { "fpv", "fpv2" }, "FP Vector" },
	{ "memops", SEC_RET, { "memuop" }, "Memory Operations" },
	{ "int", SEC_RET, { "add128", "vnni128", "add256", "mul256", "vnni256" },
	  "Integer Operations" },
	{ "drop", SEC_FE, { "drop" }, "the uop-dropping correction of Frontend Bound" },
	{ "icache", SEC_FE, { "icd" }, "ICache Misses" },
	{ "itlb", SEC_FE, { "ict" }, "ITLB Misses" },
	{ "lcp", SEC_FE, { "lcp" }, "LCP" },
	{ "dsb", SEC_FE, { "dsb" }, "DSB Switches" },
	{ "resteer", SEC_FE, { "resteer", "unkbr" }, "Branch Resteers" },
	{ "mssw", SEC_FE, { "mssw", "uslots", "uissued" }, "MS Switches" },
	{ "l1b", SEC_BE, { "bol", "l1m" }, "L1 Bound" },
	{ "l2b", SEC_BE, { "l1m", "l2m" }, "L2 Bound" },
	{ "l3b", SEC_BE, { "l2m", "l3m" }, "L3 Bound" },
	{ "l3miss", SEC_BE, { "l3m" }, "L3 Miss Bound" },
	{ "store", SEC_BE, { "bos" }, "Store Bound" },
	{ "serial", SEC_BE, { "sb", "c02" }, "Serialization" },
	{ "membw", SEC_BE, { "ordc", "orcyc" }, "Memory Bandwidth, Memory Latency" },
	{ "ports", SEC_BE, { "div", "eb0", "rse", "sb", "stt", "bol", "p1", "p23" },
	  "Port Utilization" },
	{ "div", SEC_BE, { "div" }, "Divider" },
};

/*
 * ICX.  SEC_BASE atoms are level 2 and Intel's level-1 corrections: every plan has them (in
 * the groups of the first subtree asked for, when one is), as every SPR group has PERF_METRICS.
 * Their order packs them into two groups of 8.
 */
#define ICX_HEAVY { "uslots", "uissued", "msu", "dec0", "dec0c1", "mite" }
static const struct atom icx_atoms[] = {
	{ "heavy2", SEC_BASE, ICX_HEAVY, "Heavy Operations, Light Operations" },
	{ "mb2", SEC_BASE, { "smem", "bos", "stt", "p1", "p2" }, "Memory Bound, Core Bound" },
	{ "bs2", SEC_BASE, { "brm", "mcl" }, "Misprediction, Machine Clear" },
	{ "l1fix", SEC_BASE, { "drop", "clr" },
	  "Intel's corrections of Frontend Bound (dropped uops) and Backend Bound (clears)" },
	{ "fl2", SEC_BASE, { "fl0", "drop" }, "Fetch Latency, Fetch Bandwidth" },
	{ "ms3", SEC_RET, ICX_HEAVY, "Uops Sequencer, Few Operations" },
	{ "x87", SEC_RET, { "x87", "uthr" }, "X87 Use" },
	{ "fps", SEC_RET, { "fps" }, "FP Scalar" },
	{ "fpv", SEC_RET, { "fpv" }, "FP Vector" },
	{ "memops", SEC_RET, { "memi", "inst" }, "Memory Operations" },
	{ "icache", SEC_FE, { "icd" }, "ICache Misses" },
	{ "itlb", SEC_FE, { "ict" }, "ITLB Misses" },
	{ "lcp", SEC_FE, { "lcp" }, "LCP" },
	{ "dsb", SEC_FE, { "dsb" }, "DSB Switches" },
	{ "resteer", SEC_FE, { "resteer", "baclr" }, "Branch Resteers" },
	{ "mssw", SEC_FE, { "mssw" }, "MS Switches" },
	{ "l1b", SEC_BE, { "smem", "l1m" }, "L1 Bound" },
	{ "l3b", SEC_BE, { "l2m", "l3m" }, "L3 Bound" },
	{ "store", SEC_BE, { "bos" }, "Store Bound" },
	{ "ports", SEC_BE, { "eb0", "stt", "smem", "p1", "p2", "div" }, "Port Utilization" },
	{ "div", SEC_BE, { "div" }, "Divider" },
	{ "serial", SEC_BE, { "sb" }, "Serialization" },
};

/* Nodes of the target tree that a model does not have, and why (said in the plan's notes). */
struct absent {
	uint8_t section;
	const char *text;
};

static const struct absent icx_absent[] = {
	{ SEC_RET, "Integer Operations is not measured on Intel Ice Lake server: it has no "
		   "INT_VEC_RETIRED events" },
	{ SEC_BE, "L2 Bound is not measured on Intel Ice Lake server: Intel's formula needs six "
		  "events of counters 0-3 in one group (MEM_LOAD_RETIRED.L2_HIT, FB_HIT, L1_MISS, "
		  "L1D_PEND_MISS.FB_FULL_PERIODS, CYCLE_ACTIVITY.STALLS_L1D_MISS, STALLS_L2_MISS), "
		  "and DRAM Bound, Memory Bandwidth and Memory Latency (defined from L2 Bound "
		  "there) are left out with it" },
};

static const struct atom amd_atoms[] = {
	{ "l1a", SEC_AP, { "fe", "be", "smt" }, "Frontend Bound, Backend Bound, SMT Contention" },
	{ "l1b", SEC_AP, { "disp", "ret" }, "Retiring, Bad Speculation" },
	{ "fe2", SEC_AF, { "fe", "fec" }, "Fetch Latency, Fetch Bandwidth" },
	{ "bs2", SEC_AS, { "disp", "ret", "misp", "rsy" }, "Misprediction, Machine Clear" },
	{ "be2", SEC_AB, { "be", "lnc", "nc" }, "Memory Bound, Core Bound" },
	{ "ar2", SEC_AR, { "ret", "ucode" }, "Heavy Operations, Light Operations" },
};

/* ---- nodes ---- */

/*
 * A node template.  In FORMULA, {x} is event x of the group that holds the node's atom,
 * {*x} the sum of event x over every group, [Name] another node, %W the pipeline width.
 * Several templates may share a name: the first whose needs are met is used.
 */
struct node_def {
	const char *name, *parent;
	uint8_t level;
	uint8_t metrics;  /* PERF_METRICS bytes it needs (Intel) */
	const char *atom; /* the atom that must be planned, or NULL */
	double threshold; /* percent; < 0: none */
	const char *formula;
	const char *what; /* description */
	const char *approx; /* why it is approximate, or NULL */
};

#define ASUM "({*ret}+{*bad}+{*fe}+{*be})"
#define LSUM "({ret}+{bad}+{fe}+{be})"
#define LRET "({ret}/" LSUM ")"
#define LHEAVY "({heavy}/" LSUM ")"
#define SLOTS_OF "fraction of slots"
#define CLKS_OF "fraction of cycles"

static const struct node_def intel_nodes[] = {
	{ "Total Slots", NULL, 0, 4, NULL, -1, "{*slots}",
	  "pipeline slots (TOPDOWN.SLOTS) while a top-down group counted", NULL },
	{ "Active", "Total Slots", 0, 4, NULL, -1, "[Retiring]+[Bad Speculation]",
	  SLOTS_OF ": Retiring + Bad Speculation",
	  "Bad Speculation also holds slots stalled by recovery" },
	{ "Retiring", "Active", 1, 4, NULL, 70, "{*ret}/" ASUM, SLOTS_OF " retiring useful uops",
	  NULL },
	{ "Heavy Operations", "Retiring", 2, 8, NULL, 10, "{*heavy}/" ASUM,
	  SLOTS_OF ": instructions of several uops or microcode", NULL },
	{ "Uops Sequencer", "Heavy Operations", 3, 8, "ms", 5, "{ms}/{slots}",
	  SLOTS_OF ": uops from the microcode sequencer", NULL },
	{ "Few Operations", "Heavy Operations", 3, 8, "ms", 5,
	  "max(0," LHEAVY "-{ms}/{slots})", SLOTS_OF ": instructions of 2+ uops, not microcode",
	  NULL },
	{ "Light Operations", "Retiring", 2, 8, NULL, 60,
	  "max(0,[Retiring]-[Heavy Operations])", SLOTS_OF ": single-uop instructions", NULL },
	{ "FP Arithmetic", "Light Operations", 3, 8, NULL, 20,
	  "[X87 Use]+[FP Scalar]+[FP Vector]", "FP uops (uops domain)", NULL },
	{ "X87 Use", "FP Arithmetic", 4, 4, "x87", 10, LRET "*{x87}/{uthr}",
	  "x87 uops, fraction of slots", NULL },
	{ "FP Scalar", "FP Arithmetic", 4, 4, "fps", 10, "({fps}+{fps2})/(" LRET "*{slots})",
	  "scalar FP uops, fraction of retired uops", NULL },
	{ "FP Vector", "FP Arithmetic", 4, 4, "fpv", 10, "({fpv}+{fpv2})/(" LRET "*{slots})",
	  "vector FP uops, fraction of retired uops", NULL },
	{ "Integer Operations", "Light Operations", 3, 4, "int", 10,
	  "({add128}+{vnni128}+{add256}+{mul256}+{vnni256})/(" LRET "*{slots})",
	  "integer vector uops, fraction of retired uops", NULL },
	{ "Memory Operations", "Light Operations", 3, 8, "memops", 10,
	  "max(0," LRET "-" LHEAVY ")*{memuop}/(" LRET "*{slots})",
	  SLOTS_OF ": load and store uops", NULL },
	{ "Bad Speculation", "Active", 1, 4, "drop", 15,
	  "max(1-([Frontend Bound]+[Backend Bound]+[Retiring]),0)",
	  SLOTS_OF " wasted by speculation (remainder after the dropped-uop correction)", NULL },
	{ "Bad Speculation", "Active", 1, 4, NULL, 15, "{*bad}/" ASUM,
	  SLOTS_OF " wasted by speculation", NULL },
	{ "Misprediction", "Bad Speculation", 2, 8, NULL, 10, "{*brm}/" ASUM,
	  SLOTS_OF ": branch misprediction", NULL },
	{ "Machine Clear", "Bad Speculation", 2, 8, NULL, 10,
	  "max(0,[Bad Speculation]-[Misprediction])", SLOTS_OF ": machine clears", NULL },
	{ "Stall", "Total Slots", 0, 4, NULL, -1, "[Frontend Bound]+[Backend Bound]",
	  SLOTS_OF ": Frontend Bound + Backend Bound", NULL },
	{ "Frontend Bound", "Stall", 1, 4, "drop", 15, "{*fe}/" ASUM "-{drop}/{slots}",
	  SLOTS_OF " the front end did not fill (corrected for dropped uops)", NULL },
	{ "Frontend Bound", "Stall", 1, 4, NULL, 15, "{*fe}/" ASUM,
	  SLOTS_OF " the front end did not fill", NULL },
	{ "Fetch Latency", "Frontend Bound", 2, 8, "drop", 10, "{*fl}/" ASUM "-{drop}/{slots}",
	  SLOTS_OF ": fetch latency (corrected for dropped uops)", NULL },
	{ "Fetch Latency", "Frontend Bound", 2, 8, NULL, 10, "{*fl}/" ASUM,
	  SLOTS_OF ": fetch latency", NULL },
	{ "ICache Misses", "Fetch Latency", 3, 4, "icache", 5, "{icd}/{clks}",
	  CLKS_OF " stalled on instruction cache misses", NULL },
	{ "ITLB Misses", "Fetch Latency", 3, 4, "itlb", 5, "{ict}/{clks}",
	  CLKS_OF " stalled on instruction TLB misses", NULL },
	{ "LCP", "Fetch Latency", 3, 4, "lcp", 5, "{lcp}/{clks}",
	  CLKS_OF " stalled on length-changing prefixes", NULL },
	{ "DSB Switches", "Fetch Latency", 3, 4, "dsb", 5, "{dsb}/{clks}",
	  CLKS_OF " lost switching from the uop cache to legacy decode", NULL },
	{ "Branch Resteers", "Fetch Latency", 3, 4, "resteer", 5, "({resteer}+{unkbr})/{clks}",
	  CLKS_OF " lost to branch resteers", NULL },
	{ "MS Switches", "Fetch Latency", 3, 4, "mssw", 5,
	  "3*{mssw}/({uslots}/{uissued})/{clks}",
	  CLKS_OF " lost switching to the microcode sequencer (estimated)", NULL },
	{ "Fetch Bandwidth", "Frontend Bound", 2, 8, NULL, 20,
	  "max(0,[Frontend Bound]-[Fetch Latency])", SLOTS_OF ": fetch bandwidth", NULL },
	{ "Backend Bound", "Stall", 1, 4, NULL, 20, "{*be}/" ASUM,
	  SLOTS_OF " the back end could not accept", NULL },
	{ "Memory Bound", "Backend Bound", 2, 8, NULL, 20, "{*mb}/" ASUM,
	  SLOTS_OF ": memory subsystem", NULL },
	{ "L1 Bound", "Memory Bound", 3, 4, "l1b", 10, "max(({bol}-{l1m})/{clks},0)",
	  CLKS_OF " stalled with the load in L1", NULL },
	{ "L2 Bound", "Memory Bound", 3, 4, "l2b", 5, "({l1m}-{l2m})/{clks}",
	  CLKS_OF " stalled on loads from L2", NULL },
	{ "L3 Bound", "Memory Bound", 3, 4, "l3b", 5, "({l2m}-{l3m})/{clks}",
	  CLKS_OF " stalled on loads from L3", NULL },
	{ "L3 Miss Bound", "Memory Bound", 3, 4, "l3miss", 10, "{l3m}/{clks}",
	  CLKS_OF " stalled on loads that missed L3", NULL },
	{ "Memory Bandwidth", "L3 Miss Bound", 4, 4, "membw", 20, "min({clks},{ordc})/{clks}",
	  CLKS_OF " with 12 or more outstanding data reads", NULL },
	{ "Memory Latency", "L3 Miss Bound", 4, 4, "membw", 10,
	  "min({clks},{orcyc})/{clks}-min({clks},{ordc})/{clks}",
	  CLKS_OF " waiting on memory latency", NULL },
	{ "Store Bound", "Memory Bound", 3, 4, "store", 20, "{bos}/{clks}",
	  CLKS_OF " stalled on stores", NULL },
	{ "Core Bound", "Backend Bound", 2, 8, NULL, 10, "max(0,[Backend Bound]-[Memory Bound])",
	  SLOTS_OF ": execution resources", NULL },
	{ "Divider", "Core Bound", 3, 4, "div", 20, "{div}/{clks}",
	  CLKS_OF " with the divider busy", NULL },
	{ "Port Utilization", "Core Bound", 3, 4, "ports", 15,
	  "if({div}<({stt}-{bol}),({eb0}+max({rse}-{sb},0))/{clks}*({stt}-{bol})/{clks}+({p1}+"
	  LRET "*{p23})/{clks},({p1}+" LRET "*{p23})/{clks})",
	  CLKS_OF " limited by execution port use", NULL },
	{ "Serialization", "Core Bound", 3, 4, "serial", 10, "{sb}/{clks}+{c02}/{clks}",
	  CLKS_OF " stalled by serializing operations", NULL },
};

/*
 * ICX: level 1 from PERF_METRICS with Intel's corrections, levels 2-4 from general-purpose
 * events, as Linux perf's icelakex/icx-metrics.json (TMA 5.02) defines them.  LRET is
 * tma_retiring within the group.
 */
#define ICX_MS "{uslots}/{uissued}*{msu}/{slots}"
static const struct node_def icx_nodes[] = {
	{ "Total Slots", NULL, 0, 4, NULL, -1, "{*slots}",
	  "pipeline slots (TOPDOWN.SLOTS) while a top-down group counted", NULL },
	{ "Active", "Total Slots", 0, 4, NULL, -1, "[Retiring]+[Bad Speculation]",
	  SLOTS_OF ": Retiring + Bad Speculation",
	  "Bad Speculation also holds slots stalled by recovery" },
	{ "Retiring", "Active", 1, 4, NULL, 70, "{*ret}/" ASUM, SLOTS_OF " retiring useful uops",
	  NULL },
	{ "Heavy Operations", "Retiring", 2, 4, "heavy2", 10,
	  ICX_MS "+" LRET "*({dec0}-{dec0c1})/{mite}",
	  SLOTS_OF ": microcode uops, and instructions decoded into several uops", NULL },
	{ "Uops Sequencer", "Heavy Operations", 3, 4, "ms3", 5, ICX_MS,
	  SLOTS_OF ": uops from the microcode sequencer", NULL },
	{ "Few Operations", "Heavy Operations", 3, 4, "ms3", 5,
	  "[Heavy Operations]-[Uops Sequencer]",
	  SLOTS_OF ": instructions of 2+ uops, not microcode", NULL },
	{ "Light Operations", "Retiring", 2, 4, NULL, 60,
	  "max(0,[Retiring]-[Heavy Operations])", SLOTS_OF ": single-uop instructions", NULL },
	{ "FP Arithmetic", "Light Operations", 3, 4, NULL, 20,
	  "[X87 Use]+[FP Scalar]+[FP Vector]", "FP uops (uops domain)", NULL },
	{ "X87 Use", "FP Arithmetic", 4, 4, "x87", 10, LRET "*{x87}/{uthr}",
	  "x87 uops, fraction of slots", NULL },
	{ "FP Scalar", "FP Arithmetic", 4, 4, "fps", 10, "{fps}/(" LRET "*{slots})",
	  "scalar FP uops, fraction of retired uops", NULL },
	{ "FP Vector", "FP Arithmetic", 4, 4, "fpv", 10, "{fpv}/(" LRET "*{slots})",
	  "vector FP uops, fraction of retired uops", NULL },
	{ "Memory Operations", "Light Operations", 3, 4, "memops", 10,
	  "[Light Operations]*{memi}/{inst}",
	  SLOTS_OF ": load and store instructions (their share of instructions)", NULL },
	{ "Bad Speculation", "Active", 1, 4, "l1fix", 15,
	  "max(1-([Frontend Bound]+[Backend Bound]+[Retiring]),0)",
	  SLOTS_OF " wasted by speculation (remainder after Intel's corrections)", NULL },
	{ "Bad Speculation", "Active", 1, 4, NULL, 15, "{*bad}/" ASUM,
	  SLOTS_OF " wasted by speculation", NULL },
	{ "Misprediction", "Bad Speculation", 2, 4, "bs2", 10,
	  "{brm}/({brm}+{mcl})*[Bad Speculation]",
	  SLOTS_OF ": branch misprediction (share of mispredicts among mispredicts and clears)",
	  NULL },
	{ "Machine Clear", "Bad Speculation", 2, 4, "bs2", 10,
	  "max(0,[Bad Speculation]-[Misprediction])", SLOTS_OF ": machine clears", NULL },
	{ "Stall", "Total Slots", 0, 4, NULL, -1, "[Frontend Bound]+[Backend Bound]",
	  SLOTS_OF ": Frontend Bound + Backend Bound", NULL },
	{ "Frontend Bound", "Stall", 1, 4, "l1fix", 15, "{*fe}/" ASUM "-{drop}/{slots}",
	  SLOTS_OF " the front end did not fill (corrected for dropped uops)", NULL },
	{ "Frontend Bound", "Stall", 1, 4, NULL, 15, "{*fe}/" ASUM,
	  SLOTS_OF " the front end did not fill", NULL },
	{ "Fetch Latency", "Frontend Bound", 2, 4, "fl2", 10, "(%W*{fl0}-{drop})/{slots}",
	  SLOTS_OF ": cycles the front end delivered no uop (less dropped uops)", NULL },
	{ "ICache Misses", "Fetch Latency", 3, 4, "icache", 5, "{icd}/{clks}",
	  CLKS_OF " stalled on instruction cache misses", NULL },
	{ "ITLB Misses", "Fetch Latency", 3, 4, "itlb", 5, "{ict}/{clks}",
	  CLKS_OF " stalled on instruction TLB misses", NULL },
	{ "LCP", "Fetch Latency", 3, 4, "lcp", 5, "{lcp}/{clks}",
	  CLKS_OF " stalled on length-changing prefixes", NULL },
	{ "DSB Switches", "Fetch Latency", 3, 4, "dsb", 5, "{dsb}/{clks}",
	  CLKS_OF " lost switching from the uop cache to legacy decode", NULL },
	{ "Branch Resteers", "Fetch Latency", 3, 4, "resteer", 5,
	  "{resteer}/{clks}+10*{baclr}/{clks}",
	  CLKS_OF " lost to branch resteers (10 cycles per unknown branch)", NULL },
	{ "MS Switches", "Fetch Latency", 3, 4, "mssw", 5, "3*{mssw}/{clks}",
	  CLKS_OF " lost switching to the microcode sequencer (3 cycles each)", NULL },
	{ "Fetch Bandwidth", "Frontend Bound", 2, 4, NULL, 20,
	  "max(0,[Frontend Bound]-[Fetch Latency])", SLOTS_OF ": fetch bandwidth", NULL },
	{ "Backend Bound", "Stall", 1, 4, "l1fix", 20, "{*be}/" ASUM "+%W*{clr}/{slots}",
	  SLOTS_OF " the back end could not accept (with recovery after clears)", NULL },
	{ "Backend Bound", "Stall", 1, 4, NULL, 20, "{*be}/" ASUM,
	  SLOTS_OF " the back end could not accept", NULL },
	{ "Memory Bound", "Backend Bound", 2, 4, "mb2", 20,
	  "({smem}+{bos})/({stt}+({p1}+" LRET "*{p2})+{bos})*[Backend Bound]",
	  SLOTS_OF ": memory subsystem (Backend Bound split by stall cycles)", NULL },
	{ "L1 Bound", "Memory Bound", 3, 4, "l1b", 10, "max(({smem}-{l1m})/{clks},0)",
	  CLKS_OF " stalled with the load in L1", NULL },
	{ "L3 Bound", "Memory Bound", 3, 4, "l3b", 5, "({l2m}-{l3m})/{clks}",
	  CLKS_OF " stalled on loads from L3", NULL },
	{ "Store Bound", "Memory Bound", 3, 4, "store", 20, "{bos}/{clks}",
	  CLKS_OF " stalled on stores", NULL },
	{ "Core Bound", "Backend Bound", 2, 4, NULL, 10, "max(0,[Backend Bound]-[Memory Bound])",
	  SLOTS_OF ": execution resources", NULL },
	{ "Divider", "Core Bound", 3, 4, "div", 20, "{div}/{clks}",
	  CLKS_OF " with the divider busy", NULL },
	/* TMA 4.8 on: Ports_Utilized_0 is EXE_BOUND_0_PORTS / CLKS, without the scoreboard */
	{ "Port Utilization", "Core Bound", 3, 4, "ports", 15,
	  "if({div}<({stt}-{smem}),({eb0}/{clks}*{clks}+({p1}+" LRET "*{p2}))/{clks},({p1}+" LRET
	  "*{p2})/{clks})",
	  CLKS_OF " limited by execution port use", NULL },
	{ "Serialization", "Core Bound", 3, 4, "serial", 10, "{sb}/{clks}",
	  CLKS_OF " stalled by serializing operations", NULL },
};

#define AMD_SLOTS "(%W*{cyc})"
static const struct node_def amd_nodes[] = {
	{ "Total Slots", NULL, 0, 0, "l1a", -1, "%W*{cyc}",
	  "dispatch slots (width x ls_not_halted_cyc) while the level-1 group counted",
	  "AMD dispatch slots, not Intel issue slots" },
	{ "Active", "Total Slots", 0, 0, NULL, -1, "[Retiring]+[Bad Speculation]",
	  SLOTS_OF ": Retiring + Bad Speculation", NULL },
	{ "Retiring", "Active", 1, 0, "l1b", -1, "{ret}/" AMD_SLOTS, SLOTS_OF ": retired ops",
	  NULL },
	{ "Heavy Operations", "Retiring", 2, 0, "ar2", -1, "[Retiring]*{ucode}/{ret}",
	  SLOTS_OF ": microcode ops", "AMD counts microcode ops only, not all multi-uop instructions" },
	{ "Light Operations", "Retiring", 2, 0, "ar2", -1, "[Retiring]*(1-{ucode}/{ret})",
	  SLOTS_OF ": fast-path ops", "the complement of microcode ops" },
	{ "Bad Speculation", "Active", 1, 0, "l1b", -1, "({disp}-{ret})/" AMD_SLOTS,
	  SLOTS_OF ": dispatched ops that did not retire", "counted in ops, not slots" },
	{ "Misprediction", "Bad Speculation", 2, 0, "bs2", -1,
	  "[Bad Speculation]*{misp}/({misp}+{rsy})", SLOTS_OF ": branch mispredictions",
	  "Bad Speculation split in proportion to mispredicts and resyncs" },
	{ "Machine Clear", "Bad Speculation", 2, 0, "bs2", -1,
	  "[Bad Speculation]*{rsy}/({misp}+{rsy})", SLOTS_OF ": pipeline restarts",
	  "Bad Speculation split in proportion to mispredicts and resyncs" },
	{ "Stall", "Total Slots", 0, 0, NULL, -1,
	  "[Frontend Bound]+[Backend Bound]+[SMT Contention]",
	  SLOTS_OF ": Frontend + Backend Bound + SMT Contention", NULL },
	{ "Frontend Bound", "Stall", 1, 0, "l1a", -1, "{fe}/" AMD_SLOTS,
	  SLOTS_OF " the front end did not fill", NULL },
	{ "Fetch Latency", "Frontend Bound", 2, 0, "fe2", -1, "%W*{fec}/" AMD_SLOTS,
	  SLOTS_OF ": cycles with no op from the front end", "cycles with every slot empty" },
	{ "Fetch Bandwidth", "Frontend Bound", 2, 0, "fe2", -1,
	  "({fe}-%W*{fec})/" AMD_SLOTS, SLOTS_OF ": partly filled dispatch",
	  "front-end slots not in empty cycles" },
	{ "Backend Bound", "Stall", 1, 0, "l1a", -1, "{be}/" AMD_SLOTS,
	  SLOTS_OF " the back end could not accept", NULL },
	{ "Memory Bound", "Backend Bound", 2, 0, "be2", -1, "[Backend Bound]*{lnc}/{nc}",
	  SLOTS_OF ": waiting on loads", "Backend Bound split by no-retire cycles" },
	{ "Core Bound", "Backend Bound", 2, 0, "be2", -1, "[Backend Bound]*(1-{lnc}/{nc})",
	  SLOTS_OF ": execution", "Backend Bound split by no-retire cycles" },
	{ "SMT Contention", "Stall", 1, 0, "l1a", -1, "{smt}/" AMD_SLOTS,
	  SLOTS_OF " given to the other SMT thread (AMD only)", NULL },
};

/* ---- planner ---- */

struct pgroup {
	uint8_t section;
	const char *keys[TMA_MAX_GROUP_EVENTS];
	int n;
	int restricted;
	uint64_t msr; /* the FRONTEND MSR value its events need, 0: none */
};

/* The tables of one kind of CPU. */
struct model {
	const struct atom *atoms;
	size_t natoms;
	const struct node_def *nodes;
	size_t nnodes;
	const struct absent *absent;
	size_t nabsent;
};
#define MAX_ATOMS 32
#define MAX_NODE_DEFS 64
_Static_assert(ARRAY_SIZE(intel_atoms) <= MAX_ATOMS && ARRAY_SIZE(icx_atoms) <= MAX_ATOMS &&
		       ARRAY_SIZE(amd_atoms) <= MAX_ATOMS, "MAX_ATOMS");
_Static_assert(ARRAY_SIZE(intel_nodes) <= MAX_NODE_DEFS && ARRAY_SIZE(icx_nodes) <= MAX_NODE_DEFS &&
		       ARRAY_SIZE(amd_nodes) <= MAX_NODE_DEFS, "MAX_NODE_DEFS");

static struct model model_of(const struct tma_cpu *cpu)
{
	struct model m = { intel_atoms, ARRAY_SIZE(intel_atoms), intel_nodes,
			   ARRAY_SIZE(intel_nodes), NULL, 0 };
	if (cpu->vendor == TMA_AMD) {
		m = (struct model){ amd_atoms, ARRAY_SIZE(amd_atoms), amd_nodes,
				    ARRAY_SIZE(amd_nodes), NULL, 0 };
	} else if (icx_like(cpu)) {
		m = (struct model){ icx_atoms, ARRAY_SIZE(icx_atoms), icx_nodes,
				    ARRAY_SIZE(icx_nodes), icx_absent, ARRAY_SIZE(icx_absent) };
	}
	return m;
}

struct planner {
	const struct tma_cpu *cpu;
	struct pgroup g[TMA_MAX_GROUPS];
	int ng;
	int8_t atom_group[MAX_ATOMS];
	int avail; /* general-purpose counters for the events of the atoms */
	int restricted_max; /* of which counters 0-3 */
	bool watchdog;
};

static bool group_has(const struct pgroup *g, const char *key)
{
	for (int i = 0; i < g->n; i++)
		if (!strcmp(g->keys[i], key))
			return true;
	return false;
}

/* How many new counters atom A needs in G, or -1 when it cannot go there. */
static int fit(const struct planner *pl, const struct pgroup *g, const struct atom *a)
{
	int add = 0, restricted = g->restricted;
	uint64_t msr = g->msr;
	for (int k = 0; a->keys[k]; k++) {
		if (group_has(g, a->keys[k]))
			continue;
		const struct ev_def *d = find_def(pl->cpu, a->keys[k]);
		add++;
		restricted += d->restricted;
		if (d->config1) {
			if (msr && msr != d->config1)
				return -1; /* one FRONTEND MSR per core */
			msr = d->config1;
		}
	}
	if (g->n + add > pl->avail || restricted > pl->restricted_max ||
	    g->n + add > TMA_MAX_GROUP_EVENTS - 12)
		return -1;
	return add;
}

static void place(const struct planner *pl, struct pgroup *g, const struct atom *a)
{
	for (int k = 0; a->keys[k]; k++) {
		if (group_has(g, a->keys[k]))
			continue;
		const struct ev_def *d = find_def(pl->cpu, a->keys[k]);
		g->keys[g->n++] = a->keys[k];
		g->restricted += d->restricted;
		if (d->config1)
			g->msr = d->config1;
	}
}

static int atom_size(const struct atom *a)
{
	int n = 0;
	while (a->keys[n])
		n++;
	return n;
}

/*
 * Pack the atoms of SECTION not packed yet into groups FIRST.. (labelled LABEL): each goes to
 * the group needing fewest new counters, or to a new group.
 */
static int pack_section(struct planner *pl, const struct atom *atoms, size_t natoms,
			uint8_t section, uint8_t label, int first, struct buf *notes)
{
	for (size_t i = 0; i < natoms; i++) {
		const struct atom *a = &atoms[i];
		if (a->section != section || pl->atom_group[i] >= 0)
			continue;
		int best = -1, best_add = 1 << 20;
		for (int g = first; g < pl->ng; g++) {
			int add = fit(pl, &pl->g[g], a);
			if (add >= 0 && add < best_add) {
				best = g;
				best_add = add;
			}
		}
		if (best < 0) {
			struct pgroup fresh;
			memset(&fresh, 0, sizeof(fresh));
			fresh.section = label;
			if (fit(pl, &fresh, a) < 0) {
				buf_printf(notes, "%s not measured: its events need %d general-purpose "
						  "counters together, %d are free for them here%s\n",
					   a->what, atom_size(a), pl->avail,
					   pl->watchdog ? " (the NMI watchdog holds one: sysctl "
							  "kernel.nmi_watchdog=0 frees it)" : "");
				continue;
			}
			if (pl->ng == TMA_MAX_GROUPS)
				return fth_error("topdown: more than %d groups", TMA_MAX_GROUPS);
			best = pl->ng++;
			pl->g[best] = fresh;
		}
		place(pl, &pl->g[best], a);
		pl->atom_group[i] = (int8_t)best;
	}
	return 0;
}

/* Expand a node template into P's index space; returns 0, or -1 when an input is missing. */
static int expand(const struct tma_plan *p, const char *tmpl, int group, const int *node_at,
		  const struct node_def *defs, size_t ndefs, char *out, size_t size)
{
	struct buf b = BUF_INIT;
	int rc = 0;
	for (const char *s = tmpl; *s && rc == 0; s++) {
		if (*s == '%' && s[1] == 'W') {
			buf_printf(&b, "%u", p->cpu->width);
			s++;
		} else if (*s == '{') {
			const char *end = strchr(s, '}');
			bool all = s[1] == '*';
			const char *key = s + 1 + all;
			size_t len = (size_t)(end - key);
			int found = 0;
			if (all)
				buf_addstr(&b, "(");
			for (int i = 0; i < p->nevents; i++) {
				const struct tma_event *e = &p->ev[i];
				if (strlen(e->key) != len || strncmp(e->key, key, len))
					continue;
				if (!all && e->group != group)
					continue;
				buf_printf(&b, "%s$%d", found ? "+" : "", i);
				found++;
			}
			if (all)
				buf_addstr(&b, ")");
			if (!found)
				rc = -1;
			s = end;
		} else if (*s == '[') {
			const char *end = strchr(s, ']');
			size_t len = (size_t)(end - s - 1);
			int idx = -1;
			for (size_t j = 0; j < ndefs; j++)
				if (node_at[j] >= 0 && strlen(defs[j].name) == len &&
				    !strncmp(defs[j].name, s + 1, len))
					idx = node_at[j];
			if (idx < 0)
				rc = -1;
			else
				buf_printf(&b, "$%d", p->nevents + idx);
			s = end;
		} else {
			buf_addch(&b, *s);
		}
	}
	if (rc == 0 && b.len >= size)
		rc = fth_error("topdown: formula too long");
	if (rc == 0)
		memcpy(out, b.data, b.len + 1);
	buf_release(&b);
	return rc;
}

static void add_event(struct tma_plan *p, const struct ev_def *d, uint8_t role, int group,
		      const struct tma_request *req, unsigned sub)
{
	struct tma_event *e = &p->ev[p->nevents++];
	memset(e, 0, sizeof(*e));
	e->event = d->name;
	e->key = d->key;
	e->role = role;
	e->group = (uint8_t)group;
	e->type = PERF_TYPE_RAW;
	e->config = d->config;
	e->config1 = d->config1;
	e->restricted = d->restricted;
	e->exclude_kernel = req->exclude_kernel;
	e->leader = p->group[group].n == 0;
	e->sampling = role == TMA_ROLE_TRIGGER;
	if (e->sampling) {
		e->rate = req->rate[sub];
		e->freq = req->freq[sub];
	}
	char gname[sizeof(p->group[0].name)];
	memcpy(gname, p->group[group].name, sizeof(gname));
	snprintf(e->name, sizeof(e->name), "%s[%s]", d->name, gname);
	p->group[group].n++;
}

/* The request bit whose rate the trigger of SECTION takes (SEC_BASE..SEC_BE are bits 0-3). */
static unsigned rate_index(const struct tma_request *req, uint8_t section)
{
	if (section <= SEC_BE && (req->subtrees & (1u << section)))
		return section;
	for (unsigned i = 0; i < 4; i++)
		if (req->subtrees & (1u << i))
			return i;
	return 0;
}

int tma_plan(const struct tma_cpu *cpu, const struct tma_request *req,
	     const struct tma_budget *budget, struct tma_plan *p)
{
	memset(p, 0, sizeof(*p));
	p->cpu = cpu;
	p->budget = *budget;
	if (!req->subtrees)
		return fth_error("topdown: no topdown event asked for");
	struct buf notes = BUF_INIT;
	struct planner pl;
	memset(&pl, 0, sizeof(pl));
	pl.cpu = cpu;
	pl.watchdog = budget->watchdog;
	memset(pl.atom_group, -1, sizeof(pl.atom_group));
	bool intel = cpu->vendor == TMA_INTEL;
	int metrics = intel ? cpu->metrics : 0;
	if (intel && budget->metrics && budget->metrics < metrics)
		metrics = budget->metrics;
	/*
	 * Intel: the cycles trigger takes fixed counter 1 unless the NMI watchdog holds it, then
	 * a general counter.  AMD: no fixed counters; the trigger and the watchdog take general
	 * counters.
	 */
	if (intel)
		pl.avail = budget->gp - (budget->watchdog || budget->fixed < 2 ? 1 : 0);
	else
		pl.avail = budget->gp - 1 - (budget->watchdog ? 1 : 0);
	/* Events of counters 0-3 share the first four (fewer when the budget is smaller). */
	pl.restricted_max = pl.avail < RESTRICTED_COUNTERS ? pl.avail : RESTRICTED_COUNTERS;
	if (pl.avail < 0 || (!intel && pl.avail < 3)) {
		buf_release(&notes);
		return fth_error("topdown: %u general-purpose counters%s are not enough for a "
				 "top-down group", budget->gp,
				 budget->watchdog ? " (one held by the NMI watchdog)" : "");
	}
	const struct model mdl = model_of(cpu);
	const struct atom *atoms = mdl.atoms;
	size_t natoms = mdl.natoms;
	int rc = 0;
	if (intel) {
		unsigned subs = req->subtrees;
		if (!cpu->level3 && (subs & TMA_SUB_ALL)) {
			buf_printf(&notes, "levels 3 and 4 are not available on %s in this version: "
					   "its PERF_METRICS has level 1 only; measuring level 1\n",
				   cpu->product);
			subs = TMA_SUB_BASE;
		}
		bool general_l2 = false;
		for (size_t i = 0; i < natoms; i++)
			general_l2 |= atoms[i].section == SEC_BASE;
		if (general_l2)
			buf_printf(&notes, "level 2 comes from general-purpose events (Intel's "
					   "formulas for %s, whose PERF_METRICS has level 1 only)\n",
				   cpu->product);
		else if (cpu->metrics < 8)
			buf_printf(&notes, "level 2 is not measured: PERF_METRICS has level 1 only "
					   "on %s\n", cpu->product);
		else if (metrics < 8)
			buf_printf(&notes, "level 2 is not measured: this kernel exposes the level-1 "
					   "PERF_METRICS events only (a newer kernel has the others)\n");
		/*
		 * topdown: the level-2 atoms (if any) in T groups, at least one group.  A subtree:
		 * its groups, the first subtree's also holding the level-2 atoms.
		 */
		if (!(subs & TMA_SUB_ALL)) {
			rc = pack_section(&pl, atoms, natoms, SEC_BASE, SEC_BASE, 0, &notes);
			if (rc == 0 && pl.ng == 0) {
				memset(&pl.g[0], 0, sizeof(pl.g[0]));
				pl.g[pl.ng++].section = SEC_BASE;
			}
		}
		static const struct {
			unsigned bit;
			uint8_t section;
		} subtree[] = { { TMA_SUB_RETIRING, SEC_RET }, { TMA_SUB_FRONTEND, SEC_FE },
				{ TMA_SUB_BACKEND, SEC_BE } };
		bool base_packed = !(subs & TMA_SUB_ALL);
		for (size_t t = 0; t < ARRAY_SIZE(subtree) && rc == 0; t++) {
			uint8_t sec = subtree[t].section;
			if (!(subs & subtree[t].bit))
				continue;
			int first = pl.ng;
			if (!base_packed)
				rc = pack_section(&pl, atoms, natoms, SEC_BASE, sec, first, &notes);
			base_packed = true;
			if (rc == 0)
				rc = pack_section(&pl, atoms, natoms, sec, sec, first, &notes);
			for (size_t k = 0; k < mdl.nabsent; k++)
				if (mdl.absent[k].section == sec)
					buf_printf(&notes, "%s\n", mdl.absent[k].text);
		}
	} else {
		if (req->subtrees & TMA_SUB_ALL)
			buf_addstr(&notes, "AMD has no level 3 or 4 in its pipeline-utilization "
					   "metrics: every topdown event measures levels 1 and 2\n");
		for (uint8_t s = SEC_AP; s <= SEC_AR && rc == 0; s++)
			rc = pack_section(&pl, atoms, natoms, s, s, pl.ng, &notes);
	}
	if (rc < 0) {
		buf_release(&notes);
		return -1;
	}
	if (pl.ng == 0) {
		buf_release(&notes);
		return fth_error("topdown: no group fits in %d general-purpose counters", pl.avail);
	}

	/* Groups and their events: Intel slots, metrics, trigger, general; AMD trigger first. */
	int count[ARRAY_SIZE(section_prefix)] = { 0 };
	int total_gp = 0;
	for (int g = 0; g < pl.ng; g++) {
		const struct pgroup *pg = &pl.g[g];
		struct tma_group *tg = &p->group[g];
		snprintf(tg->name, sizeof(tg->name), "%s%u", section_prefix[pg->section],
			 (unsigned)(++count[pg->section] % 100));
		tg->first = (uint16_t)p->nevents;
		if (p->nevents + pg->n + 10 > TMA_MAX_EVENTS) {
			buf_release(&notes);
			return fth_error("topdown: more than %d events", TMA_MAX_EVENTS);
		}
		unsigned sub = rate_index(req, pg->section);
		if (intel) {
			add_event(p, &intel_slots, TMA_ROLE_SLOTS, g, req, sub);
			for (int m = 0; m < metrics; m++)
				add_event(p, &intel_metrics[m], TMA_ROLE_METRIC, g, req, sub);
			add_event(p, &intel_cycles, TMA_ROLE_TRIGGER, g, req, sub);
		} else {
			add_event(p, &amd_cycles, TMA_ROLE_TRIGGER, g, req, sub);
		}
		for (int k = 0; k < pg->n; k++)
			add_event(p, find_def(cpu, pg->keys[k]), TMA_ROLE_GENERAL, g, req, sub);
		tg->gp = (uint8_t)(pg->n + (intel ? 0 : 1));
		total_gp += tg->gp;
		p->ngroups++;
	}
	p->multiplexed = intel ? p->ngroups > 1
			       : total_gp > budget->gp - (budget->watchdog ? 1 : 0);

	/* Nodes: the first eligible template of each name, then drop those with missing inputs. */
	const struct node_def *defs = mdl.nodes;
	size_t ndefs = mdl.nnodes;
	int node_at[MAX_NODE_DEFS];
	int def_group[MAX_NODE_DEFS];
	for (size_t j = 0; j < ndefs; j++) {
		const struct node_def *d = &defs[j];
		node_at[j] = -1;
		def_group[j] = -1;
		bool taken = false;
		for (size_t k = 0; k < j; k++)
			taken |= node_at[k] >= 0 && !strcmp(defs[k].name, d->name);
		if (taken || (intel && d->metrics > metrics))
			continue;
		if (d->atom) {
			for (size_t a = 0; a < natoms; a++)
				if (!strcmp(atoms[a].name, d->atom) && pl.atom_group[a] >= 0)
					def_group[j] = pl.atom_group[a];
			if (def_group[j] < 0)
				continue;
		}
		node_at[j] = 0;
	}
	/* Iterate: a node whose formula or parent refers to an absent node is absent too. */
	for (bool changed = true; changed;) {
		changed = false;
		int n = 0;
		for (size_t j = 0; j < ndefs; j++)
			if (node_at[j] >= 0)
				node_at[j] = n++;
		for (size_t j = 0; j < ndefs; j++) {
			if (node_at[j] < 0)
				continue;
			char tmp[TMA_FORMULA_MAX];
			bool parent_ok = !defs[j].parent;
			for (size_t k = 0; k < ndefs && !parent_ok; k++)
				parent_ok = node_at[k] >= 0 && !strcmp(defs[k].name, defs[j].parent);
			if (!parent_ok || expand(p, defs[j].formula, def_group[j], node_at, defs,
						 ndefs, tmp, sizeof(tmp)) < 0) {
				node_at[j] = -1;
				changed = true;
				break;
			}
		}
	}
	for (size_t j = 0; j < ndefs; j++) {
		if (node_at[j] < 0)
			continue;
		const struct node_def *d = &defs[j];
		struct tma_node *n = &p->node[p->nnodes++];
		memset(n, 0, sizeof(*n));
		snprintf(n->name, sizeof(n->name), "%s", d->name);
		n->parent = -1;
		for (size_t k = 0; k < ndefs; k++)
			if (d->parent && node_at[k] >= 0 && !strcmp(defs[k].name, d->parent))
				n->parent = (int16_t)node_at[k];
		n->level = d->level;
		n->of_cycles = strncmp(d->what, CLKS_OF, strlen(CLKS_OF)) == 0;
		n->threshold = d->threshold < 0 ? NAN : d->threshold / 100.0;
		n->approximate = d->approx != NULL;
		if (expand(p, d->formula, def_group[j], node_at, defs, ndefs, n->formula,
			   sizeof(n->formula)) < 0) {
			buf_release(&notes);
			return fth_error("topdown: node %s: formula too long", d->name);
		}
		char where[48] = "";
		if (def_group[j] >= 0)
			snprintf(where, sizeof(where), "; group %s", p->group[def_group[j]].name);
		snprintf(n->description, sizeof(n->description), "TMA level %u, %s%s%s%s",
			 d->level, d->what, where, d->approx ? "; approximate: " : "",
			 d->approx ? d->approx : "");
	}
	if (p->multiplexed)
		buf_printf(&notes, "the %d groups cannot count at once%s: the kernel multiplexes "
				   "them, and each node is computed within the groups that hold "
				   "its events\n", p->ngroups,
			   intel ? " (each needs fixed counter 3 and PERF_METRICS)" : "");
	if (budget->watchdog)
		buf_addstr(&notes, "the NMI watchdog holds a counter (sysctl "
				   "kernel.nmi_watchdog=0 frees it)\n");
	snprintf(p->notes, sizeof(p->notes), "%s", notes.len ? (char *)notes.data : "");
	buf_release(&notes);
	return 0;
}

void tma_event_attr(const struct tma_plan *p, int i, struct perf_event_attr *a)
{
	const struct tma_event *e = &p->ev[i];
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->type;
	a->config = e->config;
	a->config1 = e->config1;
	a->exclude_kernel = e->exclude_kernel;
	a->exclude_hv = 1;
	a->disabled = e->leader;
	a->read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
			 PERF_FORMAT_TOTAL_TIME_RUNNING;
	if (e->sampling) {
		a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				 PERF_SAMPLE_READ;
		a->wakeup_events = 1;
		if (e->freq) {
			a->freq = 1;
			a->sample_freq = e->rate;
		} else {
			a->sample_period = e->rate;
		}
	}
}

static const char *const role_names[] = { "", "slots", "metric", "trigger", "general" };

void tma_plan_print(const struct tma_plan *p, struct buf *out)
{
	buf_printf(out, "topdown plan for %s: %u general-purpose and %u fixed counters%s; "
			"%d group%s%s\n", p->cpu->product, p->budget.gp, p->budget.fixed,
		   p->budget.watchdog ? ", the NMI watchdog holds one" : "", p->ngroups,
		   p->ngroups == 1 ? "" : "s", p->multiplexed ? ", multiplexed" : "");
	if (p->cpu->definitions)
		buf_printf(out, "definitions: %s\n", p->cpu->definitions);
	for (int g = 0; g < p->ngroups; g++) {
		const struct tma_group *tg = &p->group[g];
		int low = 0;
		for (int i = tg->first; i < tg->first + tg->n; i++)
			low += p->ev[i].restricted;
		buf_printf(out, "group %s: %u events, %u general-purpose counters", tg->name, tg->n,
			   tg->gp);
		if (low)
			buf_printf(out, " (%d of counters 0-3)", low);
		buf_addch(out, '\n');
		for (int i = tg->first; i < tg->first + tg->n; i++) {
			const struct tma_event *e = &p->ev[i];
			buf_printf(out, "  %-8s %-50s type %u config %#llx", role_names[e->role],
				   e->event, e->type, (unsigned long long)e->config);
			if (e->config1)
				buf_printf(out, " config1 %#llx", (unsigned long long)e->config1);
			if (e->sampling)
				buf_printf(out, " sample %s%llu", e->freq ? "freq " : "period ",
					   (unsigned long long)e->rate);
			if (e->restricted)
				buf_addstr(out, " counters 0-3");
			buf_addch(out, '\n');
		}
	}
	buf_printf(out, "nodes (%d):\n", p->nnodes);
	for (int j = 0; j < p->nnodes; j++) {
		const struct tma_node *n = &p->node[j];
		int depth = 0;
		for (int k = n->parent; k >= 0; k = p->node[k].parent)
			depth++;
		buf_printf(out, "  %*s%s%s", depth * 2, "", n->name, n->approximate ? " (approximate)"
										     : "");
		if (!isnan(n->threshold))
			buf_printf(out, "  > %g%%", n->threshold * 100);
		buf_addch(out, '\n');
	}
	if (p->notes[0]) {
		buf_addstr(out, "notes:\n");
		for (const char *s = p->notes; *s;) {
			const char *nl = strchr(s, '\n');
			size_t len = nl ? (size_t)(nl - s) : strlen(s);
			buf_printf(out, "  %.*s\n", (int)len, s);
			s += len + (nl != NULL);
		}
	}
}

/* ---- decoding ---- */

uint64_t tma_kernel_metric_value(uint64_t slots, unsigned byte)
{
	return (uint64_t)((unsigned __int128)slots * byte / 0xff);
}

int tma_perf_metrics_fractions(uint64_t m, double frac[8], double norm[4], double derived[4])
{
	unsigned b[8], sum = 0;
	for (int i = 0; i < 8; i++) {
		b[i] = tma_metric_byte(m, i);
		frac[i] = b[i] / 255.0;
	}
	for (int i = 0; i < 4; i++)
		sum += b[i];
	/* light = ret - heavy, clear = bad - mispredict, fetch bw = fe - fetch lat, core = be - mem */
	for (int i = 0; i < 4; i++)
		derived[i] = fmax(0, frac[i] - frac[4 + i]);
	if (sum == 0) {
		for (int i = 0; i < 4; i++)
			norm[i] = NAN;
		return -1;
	}
	for (int i = 0; i < 4; i++)
		norm[i] = (double)b[i] / sum;
	return 0;
}

double tma_rdpmc_interval(uint64_t sa, uint64_t ma, uint64_t sb, uint64_t mb, int i)
{
	double v = ((double)tma_metric_byte(mb, i) * (double)sb -
		    (double)tma_metric_byte(ma, i) * (double)sa) / 255.0;
	return v > 0 ? v : 0;
}

double tma_scale(uint64_t enabled, uint64_t running)
{
	if (running == 0)
		return NAN;
	double s = (double)enabled / (double)running;
	return s < 1 ? 1 : s;
}

struct node_ctx {
	const struct tma_plan *p;
	const double *deltas;
	double *nodes;
	uint8_t state[TMA_MAX_NODES];
};

static double node_ref(void *vctx, uint32_t k)
{
	struct node_ctx *x = vctx;
	if (k < (uint32_t)x->p->nevents)
		return x->deltas[k];
	uint32_t j = k - (uint32_t)x->p->nevents;
	if (j >= (uint32_t)x->p->nnodes || x->state[j] == 1)
		return NAN; /* out of range, or a cycle */
	if (x->state[j] == 0) {
		x->state[j] = 1;
		x->nodes[j] = formula_eval_text(x->p->node[j].formula,
						(uint32_t)(x->p->nevents + x->p->nnodes), node_ref, x);
		x->state[j] = 2;
	}
	return x->nodes[j];
}

void tma_nodes(const struct tma_plan *p, const double *deltas, double *nodes)
{
	struct node_ctx x;
	memset(&x, 0, sizeof(x));
	x.p = p;
	x.deltas = deltas;
	x.nodes = nodes;
	for (int j = 0; j < p->nnodes; j++)
		node_ref(&x, (uint32_t)(p->nevents + j));
}

int tma_decode(const struct tma_plan *p, const struct tma_group_read *prev,
	       const struct tma_group_read *cur, double *deltas, double *nodes)
{
	int ran = 0;
	for (int g = 0; g < p->ngroups; g++) {
		const struct tma_group *tg = &p->group[g];
		bool counted = cur[g].time_running > prev[g].time_running &&
			       cur[g].nr >= tg->n && prev[g].nr >= tg->n;
		ran += counted;
		for (int k = 0; k < tg->n; k++) {
			uint64_t a = prev[g].value[k], b = cur[g].value[k];
			/* cumulative counts; a smaller value (never expected) counts as nothing */
			deltas[tg->first + k] = counted && b > a ? (double)(b - a) : 0;
		}
	}
	tma_nodes(p, deltas, nodes);
	return ran;
}

int tma_node_index(const struct tma_plan *p, const char *name)
{
	for (int j = 0; j < p->nnodes; j++)
		if (!strcmp(p->node[j].name, name))
			return j;
	return -1;
}
