/* SPDX-License-Identifier: MIT */
/*
 * tma.h: top-down microarchitecture analysis (TMA) for measure's topdown events: the CPU
 * model table, the planner (CPU model, requested topdown events, counter budget -> perf
 * groups and the metric table of the TMA tree), the formula language of that table and its
 * evaluator, and the decoder (group reads -> node values).  Everything here except
 * tma_identify() (cpuid.c) is a pure function of its arguments, so tests run without a PMU.
 * The definitions (tree, formulas, thresholds) are Intel's TMA metrics (intel/perfmon, and
 * Linux perf's tools/perf/pmu-events/arch/x86/<model>/<model>-metrics.json) and perf's AMD
 * pipeline metrics; tma.c names the files and the TMA version of each model.  On Intel, level 1
 * (and from Sapphire Rapids on, level 2) comes from PERF_METRICS; on Ice Lake server, whose
 * PERF_METRICS has level 1 only, level 2 and below come from general-purpose events.
 *
 * Formulas (the "formula" field of a TMA metric in a measurement file) are lib/formula.h's
 * language: $INDEX is metric INDEX of the same table: for a counter, its value (summed over
 * the samples of a context); for a TMA node, the node's own value.  A division by zero, and
 * anything computed from it, is undefined (NaN): the node has no value in that context.
 */
#ifndef FATHOM_MEASURE_TMA_H
#define FATHOM_MEASURE_TMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct perf_event_attr;

#define TMA_MAX_EVENTS 128 /* every event of every group of one plan */
#define TMA_MAX_GROUPS 16
#define TMA_MAX_GROUP_EVENTS 24
#define TMA_MAX_NODES 48
#define TMA_NAME_MAX 64
#define TMA_FORMULA_MAX 400
#define TMA_MULTIPLEX_RANGE 1.2 /* scale factor above which a count is called multiplexed */

enum tma_vendor { TMA_INTEL, TMA_AMD };

struct tma_cpu {
	const char *name;    /* short name for FATHOM_CPU: icx, spr, emr, gnr, zen4, zen5 */
	const char *product; /* "Intel Sapphire Rapids" */
	uint8_t vendor;	     /* enum tma_vendor */
	uint8_t metrics;     /* PERF_METRICS bytes: 4 (level 1) or 8 (levels 1 and 2); 0 on AMD */
	uint8_t width;	     /* pipeline slots per cycle */
	uint8_t gp, fixed;   /* counters per logical CPU when CPUID cannot say */
	bool level3;	     /* level 3 and 4 events are known (on ICX, the nodes Intel defines) */
	const char *definitions; /* the version of the definitions followed: "Intel TMA 5.2" */
};

/* The model with this short name (case-insensitive), or NULL. */
const struct tma_cpu *tma_cpu_find(const char *name);
/* The model of this vendor/family/model, or NULL when topdown does not support it. */
const struct tma_cpu *tma_cpu_lookup(enum tma_vendor vendor, unsigned family, unsigned model);
/* "icx, spr, emr, gnr, zen4, zen5" */
const char *tma_cpu_names(void);

/* The topdown events as bits. */
enum tma_subtree {
	TMA_SUB_BASE = 1 << 0,	   /* topdown: levels 1 and 2 */
	TMA_SUB_RETIRING = 1 << 1, /* topdown:retiring */
	TMA_SUB_FRONTEND = 1 << 2, /* topdown:frontend */
	TMA_SUB_BACKEND = 1 << 3,  /* topdown:backend */
};
#define TMA_SUB_ALL (TMA_SUB_RETIRING | TMA_SUB_FRONTEND | TMA_SUB_BACKEND)

/* The subtree bits of a topdown event name (case-insensitive), or 0 when NAME is not one. */
unsigned tma_subtree_of(const char *name);
/* The topdown events -e takes (N of them): each name, its subtree bits and what it measures. */
struct tma_event_name {
	const char *name;
	unsigned subtrees;
	const char *description;
};
const struct tma_event_name *tma_event_names(size_t *n);

struct tma_request {
	unsigned subtrees;   /* enum tma_subtree bits */
	uint64_t rate[4];    /* trigger period or frequency per subtree bit (index = bit number) */
	bool freq[4];
	bool exclude_kernel; /* the same for every event of a group, as the kernel wants */
};

struct tma_budget {
	uint8_t gp;	/* general-purpose counters per logical CPU */
	uint8_t fixed;	/* fixed counters (Intel) */
	bool watchdog;	/* the NMI watchdog holds a counter */
	uint8_t metrics; /* PERF_METRICS bytes the kernel exposes (Intel), 0: the model's */
};

enum tma_role { TMA_ROLE_NONE, TMA_ROLE_SLOTS, TMA_ROLE_METRIC, TMA_ROLE_TRIGGER,
		TMA_ROLE_GENERAL };

struct tma_event {
	char name[TMA_NAME_MAX]; /* "topdown-retiring[B1]": the event and its group */
	const char *event;	 /* "topdown-retiring" */
	const char *key;	 /* short name used by the node formulas */
	uint8_t role;		 /* enum tma_role */
	uint8_t group;		 /* index into tma_plan.group */
	bool leader, sampling, restricted; /* restricted: Intel counters 0-3 only */
	uint32_t type;		 /* perf_event_attr.type */
	uint64_t config, config1;
	uint64_t rate; /* sampling events: period or frequency */
	bool freq;
	bool exclude_kernel;
};

struct tma_group {
	char name[8];	  /* T1, R1.., F1.., B1.. (Intel); P1.., F1, S1, B1, R1 (AMD) */
	uint16_t first, n; /* events first .. first+n-1 of the plan, leader first */
	uint8_t gp;	  /* general-purpose counters it needs (trigger included on AMD) */
};

struct tma_node {
	char name[32];
	int16_t parent; /* node index, -1 for the root */
	uint8_t level;	/* 0 Total Slots / Active / Stall, then TMA levels 1-4 */
	bool of_cycles; /* a fraction of cycles (clockticks), not of pipeline slots */
	bool approximate;
	double threshold; /* fraction above which the node is flagged; NaN: none */
	/* $K: event K of the plan when K < nevents, else node K - nevents */
	char formula[TMA_FORMULA_MAX];
	char description[200];
};

struct tma_plan {
	const struct tma_cpu *cpu;
	struct tma_budget budget;
	int nevents, ngroups, nnodes;
	struct tma_event ev[TMA_MAX_EVENTS];
	struct tma_group group[TMA_MAX_GROUPS];
	struct tma_node node[TMA_MAX_NODES];
	bool multiplexed; /* the groups cannot all count at once: the kernel rotates them */
	char notes[2048]; /* one sentence per line: what was left out or is approximate, why */
};

/*
 * Plan REQ on CPU within BUDGET into P.  Returns 0, or -1 with a message when nothing can
 * be planned (no subtree asked, or not even level 1 fits).
 */
int tma_plan(const struct tma_cpu *cpu, const struct tma_request *req,
	     const struct tma_budget *budget, struct tma_plan *p);
/*
 * The perf_event_attr of plan event I: read_format GROUP|ID|TOTAL_TIME_*, sampling with
 * PERF_SAMPLE_READ on the trigger only.  (measure's sampler reads the group with read() in
 * its handler instead of PERF_SAMPLE_READ; both are proxy sampling.)
 */
void tma_event_attr(const struct tma_plan *p, int i, struct perf_event_attr *a);
/* The plan as text, one group per line and its events with their configs, then the nodes. */
struct buf;
void tma_plan_print(const struct tma_plan *p, struct buf *out);

/* ---- decoding ---- */

/* One read() of a group with PERF_FORMAT_GROUP | TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING. */
struct tma_group_read {
	uint64_t nr, time_enabled, time_running;
	uint64_t value[TMA_MAX_GROUP_EVENTS];
};

/*
 * Byte I (0-7) of a PERF_METRICS value: retiring, bad-spec, fe-bound, be-bound, heavy-ops,
 * br-mispredict, fetch-lat, mem-bound.
 */
static inline unsigned tma_metric_byte(uint64_t perf_metrics, int i)
{
	return (unsigned)(perf_metrics >> (8 * i)) & 0xff;
}
/* The kernel's slot count of a metric: floor(slots * byte / 255). */
uint64_t tma_kernel_metric_value(uint64_t slots, unsigned byte);
/*
 * Fractions of a PERF_METRICS value: FRAC[0..7] = byte / 255, NORM[0..3] = level-1 bytes
 * normalised by their sum, DERIVED[0..3] = light, machine clear, fetch bandwidth, core
 * (max(0, parent - child) / 255).  Returns -1 when the level-1 bytes sum to 0 (skip it).
 */
int tma_perf_metrics_fractions(uint64_t perf_metrics, double frac[8], double norm[4],
			       double derived[4]);
/* Slots of metric I between two rdpmc readings (slots S, PERF_METRICS M), never negative. */
double tma_rdpmc_interval(uint64_t sa, uint64_t ma, uint64_t sb, uint64_t mb, int i);
/* time_enabled / time_running, at least 1; NaN when RUNNING is 0 (not measured). */
double tma_scale(uint64_t enabled, uint64_t running);

/*
 * Deltas between two reads of every group of P (PREV and CUR hold ngroups reads each) into
 * DELTAS (p->nevents) and node values into NODES (p->nnodes; NaN when undefined).  A group
 * that did not run between the reads contributes nothing.  Returns how many groups ran.
 */
int tma_decode(const struct tma_plan *p, const struct tma_group_read *prev,
	       const struct tma_group_read *cur, double *deltas, double *nodes);
/* Node values from event deltas. */
void tma_nodes(const struct tma_plan *p, const double *deltas, double *nodes);
/* The node named NAME, or -1. */
int tma_node_index(const struct tma_plan *p, const char *name);

/* ---- this machine (cpuid.c) ---- */

struct tma_machine {
	const struct tma_cpu *cpu; /* NULL: not supported */
	struct tma_budget budget;
	bool forced;		   /* FATHOM_CPU chose the model */
	bool budget_from_cpuid;
	char description[160];	   /* "AuthenticAMD family 26 model 2 (AMD EPYC)" */
};
#define TMA_ENV_CPU "FATHOM_CPU"
/*
 * Identify this machine's CPU and counter budget.  FATHOM_CPU=MODEL[,gp=N][,fixed=N]
 * [,watchdog=0|1][,metrics=4|8] forces them (MODEL: a short name of tma_cpu_names(), or
 * VENDOR-FAMILY-MODEL such as GenuineIntel-6-8F).  Returns 0, or -1 with a message for a bad
 * FATHOM_CPU.
 */
int tma_identify(struct tma_machine *m);
/* The number in the kernel setting /proc/sys/NAME ("kernel/nmi_watchdog"), DFLT when it
 * cannot be read. */
long long tma_read_sysctl(const char *name, long long dflt);

#endif
