/* SPDX-License-Identifier: MIT */
/*
 * fuzz-dbtrace.c: the fuzz target of the traces reader (lib/dbtrace.h).  An input is a
 * database's summary.fdb followed by its traces.fdb (the summary ends at its first "FTHM-END"
 * footer magic); the summary gives the numbers of contexts and threads the traces must match
 * (when it does not read, 1000 and 64).  Open the traces, check what was accepted, read every
 * level of every thread whole and in windows, and dump them.  A refused input must leave a
 * message.
 */
#include "compat.h"
#include "buf.h"
#include "dbfile.h"
#include "dbtrace.h"
#include "error.h"
#include "fuzz-input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct check {
	uint64_t t0, t1, prev;
	uint32_t ncontexts, level;
	uint64_t units;
};

/* What dbtrace_scan promises of a unit: in the window, in time order, contexts in range. */
static int check_unit(void *ctx, const struct dbtrace_unit *u)
{
	struct check *c = ctx;
	if (u->t_hi < u->t_lo || u->t_hi < c->t0 || u->t_lo > c->t1 || u->t_lo < c->prev ||
	    u->k < 1 || u->k > DBTRACE_TOP || u->n < 1 || (c->level == 0 && u->n != 1))
		abort();
	uint64_t total = 0;
	for (uint32_t k = 0; k < u->k; k++) {
		if (u->context[k] >= c->ncontexts || !u->count[k])
			abort();
		total += u->count[k];
	}
	if (total > u->n)
		abort();
	c->prev = u->t_lo;
	c->units++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t split = size;
	const uint8_t *end = memmem(data, size, CF_END_MAGIC, 8);
	if (end)
		split = (size_t)(end - data) + 8;
	uint32_t ncontexts = 1000, nthreads = 64;
	struct dbfile db;
	if (split < size && dbfile_read_summary_file(fuzz_input_path(data, split), &db) == 0) {
		ncontexts = db.ncontexts;
		nthreads = db.nthreads;
		dbfile_close(&db);
	}
	const char *dir = fuzz_dir_file(DBTRACE_FILE, data + split, size - split);
	struct dbtrace tr;
	int rc = dbtrace_open(&tr, dir, ncontexts, nthreads);
	if (rc < 0 && !fth_errmsg()[0])
		abort();
	if (rc != 0)
		return 0;
	if (tr.ntraced > nthreads)
		abort();
	for (uint32_t i = 0; i < tr.ntraced; i++) {
		const struct dbtrace_thread *t = &tr.traced[i];
		if (t->thread >= nthreads || dbtrace_thread(&tr, t->thread) != t)
			abort();
		for (uint32_t l = 0; l < t->nlevels; l++) {
			uint64_t mid = t->t_first + (t->t_last - t->t_first) / 2;
			struct check whole = { 0, UINT64_MAX, 0, ncontexts, l, 0 };
			struct check half = { mid, t->t_last, 0, ncontexts, l, 0 };
			if (dbtrace_scan(&tr, t->thread, l, 0, UINT64_MAX, check_unit, &whole) < 0 ||
			    dbtrace_scan(&tr, t->thread, l, mid, t->t_last, check_unit, &half) < 0) {
				if (!fth_errmsg()[0])
					abort();
				continue;
			}
			if (whole.units != t->level[l].nunits || half.units > whole.units)
				abort();
		}
	}
	struct buf out = BUF_INIT;
	if (dbtrace_dump(&tr, &out) < 0 && !fth_errmsg()[0])
		abort();
	buf_release(&out);
	dbtrace_close(&tr);
	return 0;
}
