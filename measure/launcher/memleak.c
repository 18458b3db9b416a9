/* SPDX-License-Identifier: MIT */
/*
 * memleak.c: the launcher's MEMLEAK source (source.h): -e MEMLEAK adds one event per metric,
 * counted by the preloaded library's malloc wrappers, and --memleak-prob P the probability of
 * tracking an allocation (the events' rate, in billionths).
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "source.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static const struct wrapper_metric memleak_metric[MLEAK_COUNT] = {
	[MLEAK_ALLOCATED] = { "MEMLEAK Bytes Allocated", MFILE_UNIT_BYTES },
	[MLEAK_FREED] = { "MEMLEAK Bytes Freed", MFILE_UNIT_BYTES },
	[MLEAK_LEAKED] = { "MEMLEAK Bytes Leaked", MFILE_UNIT_BYTES },
};

const struct launcher_source launcher_memleak_source = {
	.name = "MEMLEAK",
	.description = "bytes allocated, freed and leaked by allocating context (malloc family; "
		       "--memleak-prob P samples a fraction)",
	.wrapped = &(const struct wrapper_metrics){
		MSOURCE_MEMLEAK, memleak_metric, MLEAK_COUNT, MLEAK_PROB_ONE,
		" (--memleak-prob P tracks a fraction P of the allocations)" },
};

int memleak_set_prob(struct mconfig *c, const char *arg)
{
	char *end;
	errno = 0;
	double p = strtod(arg, &end);
	if (!*arg || *end || errno || !(p > 0 && p <= 1))
		return fth_error("--memleak-prob \"%s\": expected a probability P with 0 < P <= 1",
				 arg);
	uint64_t ppb = (uint64_t)llround(p * MLEAK_PROB_ONE);
	if (ppb == 0)
		return fth_error("--memleak-prob %s: below the resolution of 1e-9", arg);
	bool found = false;
	for (int i = 0; i < c->nevents; i++)
		if (c->ev[i].source == MSOURCE_MEMLEAK) {
			c->ev[i].rate = ppb;
			found = true;
		}
	if (!found)
		return fth_error("--memleak-prob %s without -e MEMLEAK: there is nothing to sample",
				 arg);
	return 0;
}
