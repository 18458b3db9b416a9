/* SPDX-License-Identifier: MIT */
/*
 * events.h: the launcher's side of events: parse hpcrun-style specifications
 * (NAME[@PERIOD|@fRATE], {A,B}@RATE groups, :p modifiers), give each name to its source
 * (source.h) to resolve, check that this machine can count them (and say why not), pick the
 * default event, and list what is usable for -L.  Never used by the preloaded library.
 */
#ifndef FATHOM_MEASURE_EVENTS_H
#define FATHOM_MEASURE_EVENTS_H

#include "mconfig.h"

struct buf;

struct event_defaults {
	uint64_t rate; /* default -c: frequency or period */
	bool freq;
	bool kernel_allowed; /* include kernel counts/frames when the kernel permits */
};

/* Parse "-c" (N or fN) into D; returns 0 or -1. */
int events_parse_rate(const char *s, uint64_t *rate, bool *freq);
/*
 * Parse one -e SPEC and append its events to C; returns 0 or -1 with a message (for an
 * unknown event the message lists the closest known names).
 */
int events_add(struct mconfig *c, const char *spec, const struct event_defaults *d);
/*
 * Check that every event of C can be counted here (opening each perf event once); returns 0
 * or -1 with a specific reason: no PMU, perf_event_paranoid, counters exhausted.
 */
int events_check(struct mconfig *c);
/*
 * Plan the topdown events of C without opening anything (measure --plan): append the groups
 * and the TMA nodes to C and describe them in OUT.  Returns 0 or -1 with a message.
 */
int events_plan(struct mconfig *c, struct buf *out);
/* What events_check() had to say about the topdown plan (multiplexing, omissions), or "". */
const char *events_notes(void);
/* Whether C's events sample where the threads run; *NEEDS_SAMPLES when one of them (BLOCKTIME)
 * wants the default event beside it if none does. */
bool events_sample_threads(const struct mconfig *c, bool *needs_samples);
/* Choose the default when no -e was given; NOTE gets the sentence saying which and why. */
int events_default(struct mconfig *c, const struct event_defaults *d, struct buf *note);
/* Append the -L listing to OUT. */
void events_list(struct buf *out);
/* The highest frequency the kernel allows (perf_event_max_sample_rate), or 0 if unknown. */
uint64_t events_max_frequency(void);

#endif
