/* SPDX-License-Identifier: MIT */
/*
 * sources.c: the launcher's registry of sample sources, made from mconfig.h's MSOURCES list:
 * which source serves each kind of event, and which one takes a name given to -e.
 */
#include "compat.h"
#include "source.h"

static const struct launcher_source *const by_kind[MSOURCE_COUNT_] = {
#define X(kind, name) [MSOURCE_##kind] = &launcher_##name##_source,
	MSOURCES(X)
#undef X
};

const struct launcher_source *launcher_source_of(enum mevent_source kind)
{
	return by_kind[kind];
}

const struct launcher_source *const *launcher_sources(int *n)
{
	static const struct launcher_source *order[MSOURCE_COUNT_];
	static int norder;
	if (!norder) {
		/* Each source once, in the list's order; the one taking every other name last. */
		const struct launcher_source *rest = NULL;
		for (int k = 0; k < MSOURCE_COUNT_; k++) {
			bool seen = by_kind[k] == rest;
			for (int j = 0; j < norder && !seen; j++)
				seen = order[j] == by_kind[k];
			if (seen)
				continue;
			if (!by_kind[k]->names)
				rest = by_kind[k];
			else
				order[norder++] = by_kind[k];
		}
		if (rest)
			order[norder++] = rest;
	}
	*n = norder;
	return order;
}

const struct launcher_source *launcher_source_named(const char *name)
{
	int n;
	const struct launcher_source *const *s = launcher_sources(&n);
	for (int k = 0; k < n; k++)
		if (!s[k]->names || s[k]->names(name))
			return s[k];
	return NULL;
}
