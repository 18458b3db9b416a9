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
			if (!by_kind[k]->names && !by_kind[k]->description)
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
	for (int k = 0; k < n; k++) {
		if (s[k]->names ? s[k]->names(name)
				: !s[k]->description || events_same_name(name, s[k]->name))
			return s[k];
	}
	return NULL;
}

int launcher_source_add(const struct launcher_source *s, struct mconfig *c, const char *name,
			const char *rate, const struct event_defaults *d, int16_t group,
			bool leader)
{
	if (s->wrapped)
		return events_add_wrapper_metrics(c, s->name, s->wrapped, rate, group);
	return s->add(c, name, rate, d, group, leader);
}

void launcher_source_list(const struct launcher_source *s, source_show_fn *show, void *ctx)
{
	if (s->description)
		show(ctx, s->name, s->description);
	else
		s->list(show, ctx);
}
