/* SPDX-License-Identifier: MIT */
/*
 * source.h: what the launcher asks of a sample source.  Each source (timer.c, perf.c, io.c,
 * memleak.c, blocktime.c) fills one struct launcher_source; sources.c's registry, made from
 * mconfig.h's MSOURCES list, alone knows them all, and events.c reaches them only through it.
 * The launcher parses, checks and lists events; the preloaded library's side of the same
 * sources (sampling, metric descriptions) is measure/runtime/source.h, which links neither
 * libpfm4 nor the TMA planner.
 */
#ifndef FATHOM_MEASURE_LAUNCHER_SOURCE_H
#define FATHOM_MEASURE_LAUNCHER_SOURCE_H

#include "events.h"

struct buf;

/* -L and the suggestions for an unknown name: a name a source takes, and what it measures. */
typedef void source_show_fn(void *ctx, const char *name, const char *description);

/* The metrics of a source counted by wrappers in the program's calls (IO, MEMLEAK): one event
 * each, added once, each event's rate RATE; the source takes no rate (RATE_HINT says what to
 * use instead) and no group. */
struct wrapper_metric {
	const char *name;
	uint8_t unit;
};
struct wrapper_metrics {
	enum mevent_source kind;
	const struct wrapper_metric *metric;
	unsigned n;
	uint64_t rate;
	const char *rate_hint;
};

struct launcher_source {
	const char *name;
	/* A source that takes one name, its .name (REALTIME, IO, MEMLEAK, BLOCKTIME): what it
	 * measures, for -L (list is then NULL). */
	const char *description;
	/* Whether -e NAME (as written, modifiers included, without the @RATE) is this source's.
	 * NULL: NAME is .name, for a source with a description; else the source takes every
	 * name no other source takes (perf, tried last). */
	bool (*names)(const char *name);
	/* Append the events of -e NAME[@RATE] to C (RATE NULL: D's), in perf group GROUP (-1:
	 * none) of which it is the first event when LEADER; 0 or -1 with a message.  NULL for a
	 * source counted by wrappers, which says what it adds in wrapped. */
	int (*add)(struct mconfig *c, const char *name, const char *rate,
		   const struct event_defaults *d, int16_t group, bool leader);
	const struct wrapper_metrics *wrapped;
	/* Once every -e is known, before the checks: complete C (the topdown plan). */
	int (*prepare)(struct mconfig *c);
	/* Whether event I of C can be measured here (its whole perf group with its leader);
	 * may change the event (CPUTIME becomes a timer where perf events cannot open); 0 or -1
	 * with a specific reason. */
	int (*check)(struct mconfig *c, int i);
	/* What the last checks have to say (multiplexing, a fallback), or "". */
	const char *(*notes)(void);
	/* Every name it takes, for -L (a name that needs a value shows an example). */
	void (*list)(source_show_fn *show, void *ctx);
	/* Its events sample where the threads run (else the default event joins them when
	 * needs_samples). */
	bool samples;
	bool needs_samples;
};

/* sources.c: the registry. */
/* The source of events of KIND. */
const struct launcher_source *launcher_source_of(enum mevent_source kind);
/* The source that takes -e NAME: the first whose names() says so, else the one that takes
 * the rest. */
const struct launcher_source *launcher_source_named(const char *name);
/* The distinct sources, in the order names are matched (the one taking the rest last). */
const struct launcher_source *const *launcher_sources(int *n);
/* S's add (or its wrapped metrics added), and S's list (or its one name and description). */
int launcher_source_add(const struct launcher_source *s, struct mconfig *c, const char *name,
			const char *rate, const struct event_defaults *d, int16_t group,
			bool leader);
void launcher_source_list(const struct launcher_source *s, source_show_fn *show, void *ctx);

#define X(kind, name) extern const struct launcher_source launcher_##name##_source;
MSOURCES(X)
#undef X

/* events.c: what the sources share. */
/* Case-insensitive, with '_' and '-' equal. */
bool events_same_name(const char *a, const char *b);
/* A new event named NAME in C (not yet counted: the source then does c->nevents++), in
 * perf group GROUP (-1: none), LEADER when it samples, counting the kernel when D allows. */
struct mevent *events_new(struct mconfig *c, const char *name, const struct event_defaults *d,
			  int16_t group, bool leader);
/* Split "NAME:p[p[p]]" and ":u" suffixes off E->name. */
void events_strip_modifiers(struct mevent *e);
/* E's @RATE (NULL: D's) as a timer period: microseconds, at least 10; refused in a group. */
int events_timer_rate(struct mevent *e, const char *rate, const struct event_defaults *d);
/* The metrics W of SOURCE (struct wrapper_metrics), unless RATE_GIVEN or GROUP refuse them. */
int events_add_wrapper_metrics(struct mconfig *c, const char *source,
			       const struct wrapper_metrics *w, const char *rate_given,
			       int16_t group);
/* E's @RATE (NULL: D's) as perf_events reads it: a period, or a frequency with @fHZ. */
int events_rate(struct mevent *e, const char *rate, const struct event_defaults *d);
/* kernel.perf_event_paranoid (2 when it cannot be read). */
int events_read_paranoid(void);

/* memleak.c: --memleak-prob ARG, the probability (0 < P <= 1) of tracking an allocation, for
 * the MEMLEAK events of C (which must be there); 0 or -1 with a message. */
int memleak_set_prob(struct mconfig *c, const char *arg);

#endif
