/* SPDX-License-Identifier: MIT */
/*
 * events.c: the launcher's events, whatever their source (events.h): -e specifications and
 * perf groups parsed, each name given to the source that takes it (source.h's registry),
 * every event checked by its source, the default chosen, and -L listed.  Also what the
 * sources share: names compared, rates parsed, events made.  Every refusal says why,
 * specifically.
 */
#include "compat.h"
#include "events.h"
#include "buf.h"
#include "error.h"
#include "source.h"
#include "tma.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool events_same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++) {
		char x = (char)tolower((unsigned char)*a), y = (char)tolower((unsigned char)*b);
		if (x == '_')
			x = '-';
		if (y == '_')
			y = '-';
		if (x != y)
			return false;
	}
	return *a == *b;
}

uint64_t events_max_frequency(void)
{
	long long v = tma_read_sysctl("kernel/perf_event_max_sample_rate", 0);
	return v > 0 ? (uint64_t)v : 0;
}

int events_read_paranoid(void)
{
	return (int)tma_read_sysctl("kernel/perf_event_paranoid", 2);
}

int events_parse_rate(const char *s, uint64_t *rate, bool *freq)
{
	*freq = false;
	if (*s == 'f' || *s == 'F') {
		*freq = true;
		s++;
	}
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || v == 0 || *s == '-')
		return fth_error("bad rate \"%s\": expected a period N or a frequency fN (N > 0)", s);
	*rate = v;
	return 0;
}

void events_strip_modifiers(struct mevent *e)
{
	for (;;) {
		size_t n = strlen(e->name);
		char *colon = strrchr(e->name, ':');
		if (!colon || colon == e->name || colon[-1] == ':')
			return;
		const char *mod = colon + 1;
		if (mod[0] == 'p' && strspn(mod, "p") == strlen(mod) && strlen(mod) <= 3) {
			e->precise = (uint8_t)strlen(mod);
		} else if (!strcmp(mod, "u")) {
			e->exclude_kernel = true;
		} else {
			return;
		}
		(void)n;
		*colon = '\0';
	}
}

struct mevent *events_new(struct mconfig *c, const char *name, const struct event_defaults *d,
			  int16_t group, bool leader)
{
	if (c->nevents == MCONFIG_MAX_EVENTS) {
		fth_error("too many events (at most %d)", MCONFIG_MAX_EVENTS);
		return NULL;
	}
	struct mevent *e = &c->ev[c->nevents];
	memset(e, 0, sizeof(*e));
	fth_format(e->name, sizeof(e->name), "%s", name);
	e->group = group;
	e->sampling = leader;
	e->exclude_kernel = !d->kernel_allowed;
	return e;
}

int events_rate(struct mevent *e, const char *rate, const struct event_defaults *d)
{
	if (!rate) {
		e->rate = d->rate;
		e->freq = d->freq;
		return 0;
	}
	if (events_parse_rate(rate, &e->rate, &e->freq) < 0)
		return fth_error_prefix("event %s", e->name);
	return 0;
}

int events_timer_rate(struct mevent *e, const char *rate, const struct event_defaults *d)
{
	if (events_rate(e, rate, d) < 0)
		return -1;
	if (e->group >= 0)
		return fth_error("%s cannot be in a perf group", e->name);
	if (e->freq) /* timers take periods in microseconds */
		e->rate = e->rate >= 1000000 ? 1 : 1000000 / e->rate;
	if (e->rate < 10)
		return fth_error("%s@%llu: a timer period below 10 microseconds is not useful",
				 e->name, (unsigned long long)e->rate);
	e->freq = false;
	return 0;
}

int events_add_wrapper_metrics(struct mconfig *c, const char *source,
			       const struct wrapper_metrics *w, const char *rate_given,
			       int16_t group)
{
	if (rate_given)
		return fth_error("%s takes no period or rate: it counts every call%s", source,
				 w->rate_hint);
	if (group >= 0)
		return fth_error("%s cannot be in a perf group", source);
	for (int i = 0; i < c->nevents; i++)
		if (c->ev[i].source == w->kind)
			return 0; /* -e IO twice is -e IO */
	if (c->nevents + (int)w->n > MCONFIG_MAX_EVENTS)
		return fth_error("too many events (at most %d)", MCONFIG_MAX_EVENTS);
	for (unsigned m = 0; m < w->n; m++) {
		struct mevent *e = &c->ev[c->nevents++];
		memset(e, 0, sizeof(*e));
		fth_format(e->name, sizeof(e->name), "%s", w->metric[m].name);
		e->source = w->kind;
		e->unit = w->metric[m].unit;
		e->config = m;
		e->group = -1;
		e->exclude_kernel = true;
		e->rate = w->rate;
	}
	return 0;
}

static int add_one(struct mconfig *c, const char *name, size_t len, const char *rate,
		   const struct event_defaults *d, int16_t group, bool leader)
{
	if (len == 0 || len >= MCONFIG_NAME_MAX)
		return fth_error("bad event name \"%.*s\"", (int)len, name);
	if (memchr(name, ';', len) || memchr(name, ',', len))
		return fth_error("bad event name \"%.*s\"", (int)len, name);
	char want[MCONFIG_NAME_MAX];
	memcpy(want, name, len);
	want[len] = '\0';
	return launcher_source_add(launcher_source_named(want), c, want, rate, d, group, leader);
}

int events_add(struct mconfig *c, const char *spec, const struct event_defaults *d)
{
	if (spec[0] == '{') {
		const char *close = strchr(spec, '}');
		if (!close)
			return fth_error("event group \"%s\" has no closing }", spec);
		const char *rate = NULL;
		if (close[1] == '@')
			rate = close + 2;
		else if (close[1])
			return fth_error("unexpected \"%s\" after the event group", close + 1);
		int16_t group = 0;
		for (int i = 0; i < c->nevents; i++)
			if (c->ev[i].group >= group)
				group = (int16_t)(c->ev[i].group + 1);
		const char *p = spec + 1;
		bool first = true;
		while (p < close) {
			const char *end = memchr(p, ',', (size_t)(close - p));
			if (!end)
				end = close;
			/* A source whose events cannot be in a perf group says so. */
			if (add_one(c, p, (size_t)(end - p), first ? rate : NULL, d, group, first) < 0)
				return -1;
			first = false;
			p = end + 1;
		}
		if (first)
			return fth_error("empty event group");
		return 0;
	}
	const char *at = strrchr(spec, '@');
	size_t len = at ? (size_t)(at - spec) : strlen(spec);
	return add_one(c, spec, len, at ? at + 1 : NULL, d, -1, true);
}

int events_check(struct mconfig *c)
{
	int n;
	const struct launcher_source *const *s = launcher_sources(&n);
	for (int k = 0; k < n; k++)
		if (s[k]->prepare && s[k]->prepare(c) < 0)
			return -1;
	for (int i = 0; i < c->nevents; i++) {
		const struct launcher_source *src = launcher_source_of(c->ev[i].source);
		if (src->check && src->check(c, i) < 0)
			return -1;
	}
	return 0;
}

const char *events_notes(void)
{
	static struct buf all = BUF_INIT;
	buf_reset(&all);
	int n;
	const struct launcher_source *const *s = launcher_sources(&n);
	for (int k = 0; k < n; k++)
		if (s[k]->notes)
			buf_addstr(&all, s[k]->notes());
	return all.len ? (const char *)all.data : "";
}

bool events_sample_threads(const struct mconfig *c, bool *needs_samples)
{
	bool samples = false;
	*needs_samples = false;
	for (int i = 0; i < c->nevents; i++) {
		const struct launcher_source *s = launcher_source_of(c->ev[i].source);
		samples |= s->samples;
		*needs_samples |= s->needs_samples;
	}
	return samples;
}

int events_default(struct mconfig *c, const struct event_defaults *d, struct buf *note)
{
	static const char *const choices[] = { "CYCLES", "task-clock", "CPUTIME" };
	static const char *const why[] = {
		"hardware counters work here",
		"hardware counters are not available here, and perf's task-clock delivers the "
		"rate asked for (POSIX CPU timers fire only at the kernel tick)",
		"perf_events cannot be used here",
	};
	struct event_defaults dd = *d;
	if (!dd.rate) {
		dd.rate = 300;
		dd.freq = true;
	}
	for (size_t i = 0; i < ARRAY_SIZE(choices); i++) {
		int saved = c->nevents;
		if (events_add(c, choices[i], &dd) == 0 && events_check(c) == 0) {
			const struct mevent *e = &c->ev[saved];
			buf_printf(note, "%s %s@%s%llu%s because %s",
				   saved ? "-e BLOCKTIME alone: also measuring"
					 : "no -e given: measuring",
				   e->name, dd.freq ? "f" : "", (unsigned long long)dd.rate,
				   saved ? " for the time threads run (another -e chooses it)" : "",
				   why[i]);
			return 0;
		}
		c->nevents = saved;
	}
	return fth_error("no usable default event: %s", fth_errmsg());
}

/* ---- -L ---- */

/* An event that cannot be used here, and why. */
struct unusable_event {
	char *name, *reason;
};

struct list_ctx {
	struct buf *usable;
	unsigned nusable;
	struct unusable_event *unusable;
	size_t nunusable, alloc;
	struct buf notes; /* what a source says about its list */
};

/* A name of a source's list: usable here, or why not (NAME NULL: a note about the list). */
static void list_event(void *ctx, const char *name, const char *description)
{
	struct list_ctx *lc = ctx;
	if (!name) {
		buf_printf(&lc->notes, "%s\n", description);
		return;
	}
	struct mconfig c;
	memset(&c, 0, sizeof(c));
	struct event_defaults d = { 1000000, false, true };
	char shown[200];
	fth_format(shown, sizeof(shown), "%s", description ? description : "");
	if (events_add(&c, name, &d) == 0 && events_check(&c) == 0) {
		buf_printf(lc->usable, "  %-34s %s\n", name, shown);
		lc->nusable++;
	} else {
		const char *msg = fth_errmsg();
		const char *reason = strstr(msg, ": ");
		ALLOC_GROW(lc->unusable, lc->nunusable + 1, lc->alloc);
		lc->unusable[lc->nunusable].name = xstrdup(name);
		lc->unusable[lc->nunusable].reason = xstrdup(reason ? reason + 2 : msg);
		lc->nunusable++;
	}
}

/* Append TEXT's words to OUT in lines of at most WIDTH columns, each starting with INDENT. */
static void add_wrapped(struct buf *out, const char *text, const char *indent, size_t width)
{
	size_t col = 0;
	while (*text) {
		while (*text == ' ')
			text++;
		size_t len = strcspn(text, " ");
		if (!len)
			break;
		if (col && col + 1 + len > width) {
			buf_addch(out, '\n');
			col = 0;
		}
		if (!col) {
			buf_addstr(out, indent);
			col = strlen(indent);
		} else {
			buf_addch(out, ' ');
			col++;
		}
		buf_add(out, text, len);
		col += len;
		text += len;
	}
	if (col)
		buf_addch(out, '\n');
}

/* The unusable events, grouped under each reason (in the order the reasons first come). */
static void list_unusable(struct buf *out, struct unusable_event *ev, size_t n)
{
	bool *done = xcalloc(n ? n : 1, sizeof(*done));
	for (size_t i = 0; i < n; i++) {
		if (done[i])
			continue;
		size_t count = 0;
		struct buf names = BUF_INIT;
		for (size_t j = i; j < n; j++) {
			if (done[j] || strcmp(ev[j].reason, ev[i].reason))
				continue;
			done[j] = true;
			count++;
			buf_printf(&names, "%s%s", names.len ? " " : "", ev[j].name);
		}
		struct buf head = BUF_INIT;
		buf_printf(&head, "%zu because %s:", count, ev[i].reason);
		add_wrapped(out, (const char *)head.data, "  ", 100);
		add_wrapped(out, (const char *)names.data, "      ", 100);
		buf_release(&head);
		buf_release(&names);
	}
	free(done);
}

void events_list(struct buf *out)
{
	struct buf usable = BUF_INIT;
	struct list_ctx lc = { .usable = &usable, .notes = BUF_INIT };
	int n;
	const struct launcher_source *const *src = launcher_sources(&n);
	for (int k = 0; k < n; k++)
		launcher_source_list(src[k], list_event, &lc);
	buf_printf(out, "Events usable on this machine (%u):\n%s\n", lc.nusable,
		   (const char *)usable.data);
	if (lc.notes.len)
		buf_printf(out, "%s\n", (const char *)lc.notes.data);
	buf_printf(out, "Events known but not usable here (%zu), by reason:\n", lc.nunusable);
	list_unusable(out, lc.unusable, lc.nunusable);
	buf_addch(out, '\n');
	buf_addstr(out, "Top-down: topdown[:retiring|:frontend|:backend|:all][@RATE] (Intel ICX, SPR, "
			"EMR, GNR; AMD Zen 4, Zen 5); measure --plan -e EVENT shows the groups.\n"
			"Syntax: -e NAME[@PERIOD|@fRATE], -e '{LEADER,MEMBER,...}@RATE' (members are "
			"read at the leader's samples), NAME:p/:pp/:ppp precise, NAME:u user only.\n");
	buf_release(&usable);
	buf_release(&lc.notes);
	for (size_t i = 0; i < lc.nunusable; i++) {
		free(lc.unusable[i].name);
		free(lc.unusable[i].reason);
	}
	free(lc.unusable);
}
