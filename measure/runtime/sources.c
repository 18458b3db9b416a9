/* SPDX-License-Identifier: MIT */
/*
 * sources.c: the preloaded library's registry of sample sources, made from mconfig.h's
 * MSOURCES list: which source serves each kind of event, which ones the configuration uses,
 * and where each one's per-thread state lies after a thread's record.
 */
#include "compat.h"
#include "source.h"

#include <stdint.h>

static const struct rt_source *const by_kind[MSOURCE_COUNT_] = {
#define X(kind, name) [MSOURCE_##kind] = &rt_##name##_source,
	MSOURCES(X)
#undef X
};

/* Set up once by rt_sources_setup(), before any thread starts; read-only afterwards. */
static const struct rt_source *used[MSOURCE_COUNT_];
static int nused;
static size_t state_offset[MSOURCE_COUNT_]; /* after the thread record; SIZE_MAX: none */
static size_t state_bytes;

const struct rt_source *rt_source_of(int i)
{
	return by_kind[rt.cfg.ev[i].source];
}

const struct rt_source *const *rt_sources_used(int *n)
{
	*n = nused;
	return used;
}

void rt_sources_setup(void)
{
	bool present[MSOURCE_COUNT_] = { false };
	for (int i = 0; i < rt.cfg.nevents; i++)
		present[rt.cfg.ev[i].source] = true;
	nused = 0;
	state_bytes = 0;
	for (int k = 0; k < MSOURCE_COUNT_; k++) {
		state_offset[k] = SIZE_MAX;
		if (!present[k])
			continue;
		/* A source serving several kinds (the timers) has one state, at its first. */
		int u = 0;
		while (u < nused && used[u] != by_kind[k])
			u++;
		for (int j = 0; j < k && u < nused; j++)
			if (by_kind[j] == by_kind[k] && state_offset[j] != SIZE_MAX)
				state_offset[k] = state_offset[j];
		if (u < nused)
			continue;
		used[nused++] = by_kind[k];
		state_offset[k] = state_bytes;
		state_bytes += (by_kind[k]->thread_bytes + 63) & ~(size_t)63;
	}
}

size_t rt_sources_thread_bytes(void)
{
	return state_bytes;
}

void *rt_source_state(const struct mthread *t, enum mevent_source kind)
{
	size_t offset = state_offset[kind];
	return offset == SIZE_MAX ? NULL : (char *)(uintptr_t)(t + 1) + offset;
}
