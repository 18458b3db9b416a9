/* SPDX-License-Identifier: MIT */
/*
 * fuzz-dbfile.c: the fuzz target of the database reader.  An input is a summary.fdb, possibly
 * followed by a threads.fdb (the summary ends at its first "FTHM-END" footer magic): read the
 * summary (every block checked), check what was accepted, read contexts, rows, statistics and
 * function lists through the block cache, each thread's rows and flat profiles, and dump all.
 */
#include "compat.h"
#include "buf.h"
#include "dbfile.h"
#include "error.h"
#include "fuzz-input.h"
#include "xalloc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_flat(const struct dbfile_flat *f, uint32_t rows, uint32_t nmetrics)
{
	if (f->nrows != rows || f->start[0] != 0 || f->start[rows] != f->nvalues)
		abort();
	for (uint32_t r = 0; r < rows; r++) {
		if (f->start[r] > f->start[r + 1])
			abort();
		for (uint32_t j = f->start[r]; j < f->start[r + 1]; j++)
			if (f->metric[j] >= nmetrics ||
			    (j > f->start[r] && f->metric[j] <= f->metric[j - 1]))
				abort();
	}
}

/* What dbfile_read_summary_file() promises about a file it accepted; abort when it fails. */
static void check_accepted(const struct dbfile *db)
{
	if (!db->program || db->ncontexts == 0 || db->thread_group == 0 || db->block == 0 ||
	    db->contexts || db->sum_incl)
		abort();
	for (uint32_t i = 0; i < db->nstrings; i++)
		if (!db->strings[i])
			abort();
	for (uint32_t i = 0; i < db->nmodules; i++)
		if ((db->modules[i].path != DBFILE_NONE && db->modules[i].path >= db->nstrings) ||
		    (db->modules[i].build_id_len && !db->modules[i].build_id))
			abort();
	for (uint32_t i = 0; i < db->nfunctions; i++)
		if (db->functions[i].name >= db->nstrings ||
		    (db->functions[i].module != DBFILE_NONE &&
		     db->functions[i].module >= db->nmodules) ||
		    db->functions[i].group >= db->ngroups)
			abort();
	for (uint32_t g = 0; g < db->ngroups; g++)
		if ((db->groups[g].module != DBFILE_NONE && db->groups[g].module >= db->nmodules) ||
		    (db->groups[g].file != DBFILE_NONE && db->groups[g].file >= db->nstrings))
			abort();
	for (uint32_t i = 0; i < db->nmetrics; i++)
		if (!db->metrics[i].name || !db->metrics[i].description || !db->metrics[i].formula ||
		    db->metrics[i].parent >= (int32_t)db->nmetrics)
			abort();
	check_flat(&db->flat, db->nfunctions, db->nmetrics);
	check_flat(&db->group_flat, db->ngroups, db->nmetrics);
	check_flat(&db->module_flat, db->nmodules + 1, db->nmetrics);
}

/* Context C as the reader promises it, and its summary row. */
static void check_context(struct dbfile *db, uint32_t i)
{
	struct dbfile_context c;
	struct dbfile_row row;
	if (dbfile_context(db, i, &c) < 0 || dbfile_summary_row(db, i, &row) < 0) {
		if (!fth_errmsg()[0])
			abort();
		return;
	}
	if ((i == 0) != (c.parent == DBFILE_NONE) || (i && c.parent >= i) ||
	    c.kind >= DBFILE_KIND_COUNT || c.first_child <= i ||
	    c.first_child > db->ncontexts || c.nchildren > db->ncontexts - c.first_child ||
	    (c.outer != DBFILE_NONE && c.outer > i) ||
	    (c.function != DBFILE_NONE && c.function >= db->nfunctions) ||
	    (c.file != DBFILE_NONE && c.file >= db->nstrings) ||
	    (c.module != DBFILE_NONE && c.module >= db->nmodules) || row.n > db->nmetrics)
		abort();
	for (uint32_t j = 0; j < row.n; j++)
		if (row.metric[j] >= db->nmetrics || (j && row.metric[j] <= row.metric[j - 1]))
			abort();
	if (i) {
		struct dbfile_context p;
		if (dbfile_context(db, c.parent, &p) == 0 &&
		    (i < p.first_child || i - p.first_child >= p.nchildren))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t split = size;
	const uint8_t *end = memmem(data, size, CF_END_MAGIC, 8);
	if (end)
		split = (size_t)(end - data) + 8;
	const char *dir = fuzz_dir_file(DBFILE_THREADS, data + split, size - split);
	const char *path = fuzz_input_path(data, split);
	struct dbfile db;
	if (dbfile_read_summary_file(path, &db) == 0) {
		check_accepted(&db);
		db.dir = xstrdup(dir);
		/* Contexts and statistics on demand, in an order that makes the cache evict. */
		for (uint32_t k = 0; k < 64 && k < 2 * db.ncontexts; k++) {
			uint32_t c = (uint32_t)(((uint64_t)k * 7919) % db.ncontexts);
			check_context(&db, c);
			struct dbfile_stat in, ex;
			if (dbfile_stats(&db, c, 0, &in, &ex) < 0) {
				if (!fth_errmsg()[0])
					abort();
			} else if (in.count > db.nthreads || ex.count > db.nthreads) {
				abort();
			}
		}
		for (uint32_t f = 0; f < db.nfunctions && f < 16; f++) {
			uint32_t *list, n;
			for (int which = 0; which < 2; which++) {
				int rc = which ? dbfile_inlined_contexts(&db, f, &list, &n)
					       : dbfile_function_contexts(&db, f, &list, &n);
				if (rc < 0 && !fth_errmsg()[0])
					abort();
				for (uint32_t i = 0; rc == 0 && i < n; i++)
					if (list[i] >= db.ncontexts ||
					    (i && list[i] <= list[i - 1]))
						abort();
				free(list);
			}
		}
		for (uint32_t t = 0; t < db.nthreads && t < 4; t++) {
			struct dbfile_row row;
			for (uint32_t c = 0; c < db.ncontexts && c < 64; c += 5)
				if (dbfile_thread_row(&db, t, c, &row) < 0) {
					if (!fth_errmsg()[0])
						abort();
					break;
				} else if (row.n > db.nmetrics) {
					abort();
				}
			struct dbfile_flat fl[3];
			if (dbfile_thread_flats(&db, t, &fl[0], &fl[1], &fl[2]) == 0) {
				check_flat(&fl[0], db.nfunctions, db.nmetrics);
				check_flat(&fl[1], db.ngroups, db.nmetrics);
				check_flat(&fl[2], db.nmodules + 1, db.nmetrics);
			} else if (!fth_errmsg()[0]) {
				abort();
			}
			for (int k = 0; k < 3; k++)
				dbfile_flat_release(&fl[k]);
		}
		struct buf out = BUF_INIT;
		if (dbfile_dump(&db, &out, true) < 0 && !fth_errmsg()[0])
			abort();
		buf_release(&out);
		dbfile_close(&db);
	} else if (!fth_errmsg()[0]) {
		abort(); /* every failure must say why */
	}
	return 0;
}
