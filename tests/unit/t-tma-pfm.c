/* SPDX-License-Identifier: MIT */
/*
 * t-tma-pfm.c: every general-purpose event that the topdown planner uses on Intel Ice Lake
 * server (measure/tma.c), checked against libpfm4's icx event table: libpfm4 is told to act
 * as an ICX PMU (LIBPFM_FORCE_PMU=icx) and encodes each event by its libpfm4 name; the
 * perf_event config must be the planner's.  Skips, saying why, when this libpfm4 cannot act
 * as ICX.
 */
#include "compat.h"
#include "tap.h"
#include "tma.h"

#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The planner's event names (Intel's current ones) and the same events in libpfm4's icx table
 * (which has the older names of ICACHE_DATA.STALLS, ICACHE_TAG.STALLS and DECODE.LCP).
 */
static const struct {
	const char *intel, *pfm;
} names[] = {
	{ "INT_MISC.UOP_DROPPING", "icx::INT_MISC:UOP_DROPPING" },
	{ "INT_MISC.CLEARS_COUNT", "icx::INT_MISC:CLEARS_COUNT" },
	{ "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE",
	  "icx::IDQ_UOPS_NOT_DELIVERED:CYCLES_0_UOPS_DELIV_CORE" },
	{ "BR_MISP_RETIRED.ALL_BRANCHES", "icx::BR_MISP_RETIRED:ALL_BRANCHES" },
	{ "MACHINE_CLEARS.COUNT", "icx::MACHINE_CLEARS:COUNT" },
	{ "CYCLE_ACTIVITY.STALLS_MEM_ANY", "icx::CYCLE_ACTIVITY:STALLS_MEM_ANY" },
	{ "EXE_ACTIVITY.BOUND_ON_STORES", "icx::EXE_ACTIVITY:BOUND_ON_STORES" },
	{ "CYCLE_ACTIVITY.STALLS_TOTAL", "icx::CYCLE_ACTIVITY:STALLS_TOTAL" },
	{ "EXE_ACTIVITY.1_PORTS_UTIL", "icx::EXE_ACTIVITY:1_PORTS_UTIL" },
	{ "EXE_ACTIVITY.2_PORTS_UTIL", "icx::EXE_ACTIVITY:2_PORTS_UTIL" },
	{ "UOPS_RETIRED.SLOTS", "icx::UOPS_RETIRED:SLOTS" },
	{ "UOPS_ISSUED.ANY", "icx::UOPS_ISSUED:ANY" },
	{ "IDQ.MS_UOPS", "icx::IDQ:MS_UOPS" },
	{ "UOPS_DECODED.DEC0", "icx::UOPS_DECODED:DEC0" },
	{ "UOPS_DECODED.DEC0:c1", "icx::UOPS_DECODED:DEC0:c=1" },
	{ "IDQ.MITE_UOPS", "icx::IDQ:MITE_UOPS" },
	{ "ICACHE_DATA.STALLS", "icx::ICACHE_16B:IFDATA_STALL" },
	{ "ICACHE_TAG.STALLS", "icx::ICACHE_64B:IFTAG_STALL" },
	{ "DECODE.LCP", "icx::ILD_STALL:LCP" },
	{ "DSB2MITE_SWITCHES.PENALTY_CYCLES", "icx::DSB2MITE_SWITCHES:PENALTY_CYCLES" },
	{ "INT_MISC.CLEAR_RESTEER_CYCLES", "icx::INT_MISC:CLEAR_RESTEER_CYCLES" },
	{ "BACLEARS.ANY", "icx::BACLEARS:ANY" },
	{ "IDQ.MS_SWITCHES", "icx::IDQ:MS_SWITCHES" },
	{ "CYCLE_ACTIVITY.STALLS_L1D_MISS", "icx::CYCLE_ACTIVITY:STALLS_L1D_MISS" },
	{ "CYCLE_ACTIVITY.STALLS_L2_MISS", "icx::CYCLE_ACTIVITY:STALLS_L2_MISS" },
	{ "CYCLE_ACTIVITY.STALLS_L3_MISS", "icx::CYCLE_ACTIVITY:STALLS_L3_MISS" },
	{ "ARITH.DIVIDER_ACTIVE", "icx::ARITH:DIVIDER_ACTIVE" },
	{ "EXE_ACTIVITY.EXE_BOUND_0_PORTS", "icx::EXE_ACTIVITY:EXE_BOUND_0_PORTS" },
	{ "RESOURCE_STALLS.SCOREBOARD", "icx::RESOURCE_STALLS:SCOREBOARD" },
	{ "UOPS_EXECUTED.X87", "icx::UOPS_EXECUTED:X87" },
	{ "UOPS_EXECUTED.THREAD", "icx::UOPS_EXECUTED:THREAD" },
	{ "FP_ARITH_INST_RETIRED.SCALAR", "icx::FP_ARITH_INST_RETIRED:SCALAR" },
	{ "FP_ARITH_INST_RETIRED.VECTOR", "icx::FP_ARITH_INST_RETIRED:VECTOR" },
	{ "MEM_INST_RETIRED.ANY", "icx::MEM_INST_RETIRED:ANY" },
	{ "INST_RETIRED.ANY_P", "icx::INST_RETIRED:ANY_P" },
};

static struct tma_plan plan; /* large */

/* The perf_event_attr config libpfm4 gives NAME, or -1 with its message in ERR. */
static long long pfm_config(const char *name, unsigned long long *config1, const char **err)
{
	struct perf_event_attr attr;
	pfm_perf_encode_arg_t arg;
	memset(&attr, 0, sizeof(attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &attr;
	arg.size = sizeof(arg);
	int rc = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
	if (rc != PFM_SUCCESS) {
		*err = pfm_strerror(rc);
		return -1;
	}
	*config1 = attr.config1;
	return (long long)attr.config;
}

int main(void)
{
	/* Before pfm_initialize(): libpfm4 reads it there. */
	setenv("LIBPFM_FORCE_PMU", "icx", 1);
	if (pfm_initialize() != PFM_SUCCESS)
		skip_all("libpfm4 does not initialize here");
	pfm_pmu_info_t pinfo;
	memset(&pinfo, 0, sizeof(pinfo));
	if (pfm_get_pmu_info(PFM_PMU_INTEL_ICX, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
		skip_all("this libpfm4 cannot act as an Ice Lake server PMU (LIBPFM_FORCE_PMU=icx)");

	const struct tma_cpu *icx = tma_cpu_find("icx");
	struct tma_request req;
	memset(&req, 0, sizeof(req));
	for (int i = 0; i < 4; i++)
		req.rate[i] = 1000000;
	struct tma_budget budget = { icx->gp, icx->fixed, false, 0 };

	/* topdown:all plans every subtree and level 2; topdown (level 2 only) is checked too. */
	static const unsigned requests[] = { TMA_SUB_ALL, TMA_SUB_BASE };
	int checked = 0, general = 0;
	char seen[ARRAY_SIZE(names)] = { 0 };
	for (size_t q = 0; q < ARRAY_SIZE(requests); q++) {
		req.subtrees = requests[q];
		if (!ok(tma_plan(icx, &req, &budget, &plan) == 0, "icx plan %#x", requests[q]))
			continue;
		for (int i = 0; i < plan.nevents; i++) {
			const struct tma_event *e = &plan.ev[i];
			if (e->role != TMA_ROLE_GENERAL)
				continue;
			general++;
			size_t k = 0;
			while (k < ARRAY_SIZE(names) && strcmp(names[k].intel, e->event))
				k++;
			if (!ok(k < ARRAY_SIZE(names), "%s has a libpfm4 name in this test", e->event))
				continue;
			if (seen[k])
				continue;
			seen[k] = 1;
			const char *err = "";
			unsigned long long config1 = 0;
			long long config = pfm_config(names[k].pfm, &config1, &err);
			if (!ok(config >= 0, "libpfm4 encodes %s", names[k].pfm)) {
				diag("  %s", err);
				continue;
			}
			is_uint((unsigned long long)config, e->config, "%s: config %#llx", e->event,
				(unsigned long long)e->config);
			is_uint(config1, e->config1, "%s: config1", e->event);
			checked++;
		}
	}
	ok(general > 0, "the plans have %d general-purpose events", general);
	is_int(checked, (int)ARRAY_SIZE(names), "every event of the table was checked once");

	/* The slots and level-1 metric encodings, where libpfm4 has them (TOPDOWN_M is newer). */
	const char *err = "";
	unsigned long long c1 = 0;
	long long slots = pfm_config("icx::TOPDOWN:SLOTS", &c1, &err);
	if (slots >= 0)
		is_uint((unsigned long long)slots, 0x400, "icx::TOPDOWN:SLOTS is config 0x400");
	else
		skip("libpfm4 4.13 has no icx::TOPDOWN:SLOTS", "slots encoding");
	pfm_terminate();
	return done_testing();
}
