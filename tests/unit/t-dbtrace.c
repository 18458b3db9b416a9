/* SPDX-License-Identifier: MIT */
/*
 * t-dbtrace.c: lib/dbtrace.h, the database's traces: records spooled with prof's context
 * numbers come back renumbered, in time order, for any window (only the records in it); each
 * level's units count exactly the records they span and keep the contexts that took most of
 * them (checked against a count of the records); a damaged file is refused by name.
 */
#include "compat.h"
#include "dbfile.h"
#include "dbtrace.h"
#include "error.h"
#include "tap.h"
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NCONTEXTS 50
#define NTHREADS 4

static struct dbtrace_record *trace[NTHREADS];
static uint64_t ntrace[NTHREADS] = { 70000, 0, 300, 5000 }; /* thread 1 is not traced */
static uint32_t order[NCONTEXTS]; /* new -> old */
static uint32_t new_of[NCONTEXTS];

/* Phases of a few contexts each, times advancing irregularly (and sometimes not at all). */
static void make_traces(uint64_t *rng)
{
	for (uint32_t i = 0; i < NCONTEXTS; i++)
		order[i] = i;
	for (uint32_t i = NCONTEXTS - 1; i > 0; i--) {
		uint32_t j = (uint32_t)(tap_rng(rng) % (i + 1)), x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	for (uint32_t i = 0; i < NCONTEXTS; i++)
		new_of[order[i]] = i;
	for (int t = 0; t < NTHREADS; t++) {
		trace[t] = xcalloc(ntrace[t] ? ntrace[t] : 1, sizeof(*trace[t]));
		uint64_t time = tap_rng(rng) % 1000;
		for (uint64_t i = 0; i < ntrace[t]; i++) {
			uint32_t phase = (uint32_t)(i / 3000) % 5;
			uint64_t r = tap_rng(rng);
			trace[t][i].context = phase * 10 + (uint32_t)(r % 3 == 0 ? r % 10 : r % 2);
			time += r % 7 == 0 ? 0 : 1000 + r % 5000;
			trace[t][i].time = time;
		}
	}
}

static char *write_database_traces(void)
{
	char *dir = xstrdup(tap_tmpdir());
	struct dbtrace_spool s;
	ok(dbtrace_spool_open(&s, dir) == 0, "spool opens: %s", fth_errmsg());
	for (int t = NTHREADS - 1; t >= 0; t--) /* any order of threads */
		if (ntrace[t])
			ok(dbtrace_spool_add(&s, (uint32_t)t, trace[t], ntrace[t]) == 0,
			   "thread %d spooled", t);
	ok(dbtrace_spool_finish(&s) == 0, "spool finishes");
	ok(dbtrace_write(dir, order, NCONTEXTS, NTHREADS, 3) == 0, "traces.fdb written: %s",
	   fth_errmsg());
	char spool[4096];
	snprintf(spool, sizeof(spool), "%s/%s", dir, DBTRACE_SPOOL);
	ok(access(spool, F_OK) < 0, "the spool is removed");
	return dir;
}

struct collect {
	struct dbtrace_unit *u;
	size_t n, cap;
};

static int collect_unit(void *ctx, const struct dbtrace_unit *u)
{
	struct collect *c = ctx;
	ALLOC_GROW(c->u, c->n + 1, c->cap);
	c->u[c->n++] = *u;
	return 0;
}

static void test_records(struct dbtrace *tr, uint64_t *rng)
{
	for (int t = 0; t < NTHREADS; t++) {
		const struct dbtrace_thread *th = dbtrace_thread(tr, (uint32_t)t);
		if (!ntrace[t]) {
			ok(th == NULL, "thread %d: not traced", t);
			continue;
		}
		if (!ok(th != NULL, "thread %d: traced", t))
			continue;
		is_uint(th->nrecords, ntrace[t], "thread %d: records", t);
		is_uint(th->t_first, trace[t][0].time, "thread %d: first time", t);
		is_uint(th->t_last, trace[t][ntrace[t] - 1].time, "thread %d: last time", t);
		struct collect c = { 0 };
		ok(dbtrace_scan(tr, (uint32_t)t, 0, 0, UINT64_MAX, collect_unit, &c) == 0,
		   "thread %d: the whole trace reads", t);
		bool same = c.n == ntrace[t];
		for (size_t i = 0; same && i < c.n; i++)
			same = c.u[i].t_lo == trace[t][i].time &&
			       c.u[i].context[0] == new_of[trace[t][i].context];
		ok(same, "thread %d: every record, renumbered, in order", t);
		/* Windows: exactly the records inside. */
		bool windows = true;
		for (int w = 0; w < 20; w++) {
			uint64_t span = th->t_last - th->t_first + 1;
			uint64_t a = th->t_first + tap_rng(rng) % span, b = a + tap_rng(rng) % (span / 8 + 1);
			c.n = 0;
			dbtrace_scan(tr, (uint32_t)t, 0, a, b, collect_unit, &c);
			size_t want = 0, first = SIZE_MAX;
			for (uint64_t i = 0; i < ntrace[t]; i++)
				if (trace[t][i].time >= a && trace[t][i].time <= b) {
					want++;
					if (first == SIZE_MAX)
						first = i;
				}
			windows &= c.n == want &&
				   (!want || (c.u[0].t_lo == trace[t][first].time));
		}
		ok(windows, "thread %d: a window reads the records in it, no others", t);
		free(c.u);
	}
}

/* Level L of thread T: the units partition the records, and each keeps the contexts that took
 * most of its span (level 1 exactly; above, each kept count is at most the true one). */
static void test_levels(struct dbtrace *tr)
{
	for (int t = 0; t < NTHREADS; t++) {
		const struct dbtrace_thread *th = dbtrace_thread(tr, (uint32_t)t);
		if (!th)
			continue;
		ok(th->nlevels >= 2, "thread %d: %u levels", t, th->nlevels);
		for (uint32_t l = 1; l < th->nlevels; l++) {
			struct collect c = { 0 };
			dbtrace_scan(tr, (uint32_t)t, l, 0, UINT64_MAX, collect_unit, &c);
			uint64_t at = 0;
			bool exact = true, bounded = true, partition = c.n == th->level[l].nunits;
			for (size_t i = 0; i < c.n; i++) {
				const struct dbtrace_unit *u = &c.u[i];
				partition &= at + u->n <= ntrace[t] && u->t_lo == trace[t][at].time &&
					     u->t_hi == trace[t][at + u->n - 1].time;
				if (!partition)
					break;
				uint32_t count[NCONTEXTS] = { 0 };
				for (uint64_t j = at; j < at + u->n; j++)
					count[new_of[trace[t][j].context]]++;
				for (uint32_t k = 0; k < u->k; k++) {
					bounded &= u->count[k] <= count[u->context[k]];
					exact &= u->count[k] == count[u->context[k]];
					/* nothing left out had more than the last kept */
					for (uint32_t x = 0; l == 1 && k + 1 == u->k && x < NCONTEXTS; x++) {
						bool kept = false;
						for (uint32_t y = 0; y < u->k; y++)
							kept |= u->context[y] == x;
						exact &= kept || count[x] <= u->count[k];
					}
				}
				at += u->n;
			}
			ok(partition && at == ntrace[t], "thread %d level %u: units partition the "
							 "records", t, l);
			if (l == 1)
				ok(exact, "thread %d level 1: the most frequent contexts, counted "
					  "exactly", t);
			else
				ok(bounded, "thread %d level %u: kept counts within the true ones", t, l);
			free(c.u);
		}
	}
}

static void test_damaged(const char *dir)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, DBTRACE_FILE);
	struct dbtrace tr;
	is_int(dbtrace_open(&tr, dir, NCONTEXTS + 1, NTHREADS), -1,
	       "another database's traces are refused");
	like(fth_errmsg(), "traces.fdb", "the message names the file");
	FILE *f = fopen(path, "r+b");
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	/* A byte of the data chunk flipped: the open succeeds, the piece is refused. */
	fseek(f, 40, SEEK_SET);
	int c = fgetc(f);
	fseek(f, 40, SEEK_SET);
	fputc(c ^ 0x55, f);
	fclose(f);
	int rc = dbtrace_open(&tr, dir, NCONTEXTS, NTHREADS);
	if (rc == 0) {
		struct collect col = { 0 };
		int scan = 0;
		for (uint32_t t = 0; t < NTHREADS && scan == 0; t++)
			scan = dbtrace_scan(&tr, t, 0, 0, UINT64_MAX, collect_unit, &col);
		is_int(scan, -1, "a damaged piece is refused");
		like(fth_errmsg(), "piece", "and named");
		free(col.u);
		dbtrace_close(&tr);
	} else {
		ok(rc < 0, "a damaged file is refused at open");
	}
	ok(truncate(path, size / 2) == 0, "truncated");
	is_int(dbtrace_open(&tr, dir, NCONTEXTS, NTHREADS), -1, "a truncated file is refused");
	unlink(path);
	is_int(dbtrace_open(&tr, dir, NCONTEXTS, NTHREADS), 1, "no traces file: no traces");
}

int main(void)
{
	uint64_t rng = 42;
	make_traces(&rng);
	char *dir = write_database_traces();
	struct dbtrace tr;
	if (!ok(dbtrace_open(&tr, dir, NCONTEXTS, NTHREADS) == 0, "traces.fdb opens: %s",
		fth_errmsg()))
		return done_testing();
	is_uint(tr.ntraced, 3, "three threads traced");
	test_records(&tr, &rng);
	test_levels(&tr);
	dbtrace_close(&tr);
	test_damaged(dir);
	for (int t = 0; t < NTHREADS; t++)
		free(trace[t]);
	free(dir);
	return done_testing();
}
