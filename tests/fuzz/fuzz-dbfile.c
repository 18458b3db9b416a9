/* SPDX-License-Identifier: MIT */
/*
 * fuzz-dbfile.c: the fuzz target of the database reader: read a summary, check, read the
 * statistics one block at a time and all at once, dump.
 */
#include "compat.h"
#include "buf.h"
#include "dbfile.h"
#include "error.h"
#include "fuzz-input.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What dbfile_read_summary_file() promises about a file it accepted; abort when it fails. */
static void check_accepted(const struct dbfile *db)
{
	if (!db->program || db->ncontexts == 0 || db->thread_group == 0 || db->stat_block == 0 ||
	    !db->sum_val || db->sum_incl)
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
		    (db->functions[i].module != DBFILE_NONE && db->functions[i].module >= db->nmodules))
			abort();
	for (uint32_t i = 0; i < db->nmetrics; i++)
		if (!db->metrics[i].name || !db->metrics[i].description || !db->metrics[i].formula ||
		    db->metrics[i].parent >= (int32_t)db->nmetrics)
			abort();
	for (uint32_t i = 0; i < db->ncontexts; i++) {
		const struct dbfile_context *c = &db->contexts[i];
		if ((i == 0) != (c->parent == DBFILE_NONE) || (i && c->parent >= i) ||
		    c->kind >= DBFILE_KIND_COUNT ||
		    (c->function != DBFILE_NONE && c->function >= db->nfunctions) ||
		    (c->file != DBFILE_NONE && c->file >= db->nstrings) ||
		    (c->module != DBFILE_NONE && c->module >= db->nmodules))
			abort();
		if (db->sum_start[i] > db->sum_start[i + 1])
			abort();
		for (uint32_t j = db->sum_start[i]; j < db->sum_start[i + 1]; j++)
			if (db->sum_metric[j] >= db->nmetrics ||
			    (j > db->sum_start[i] && db->sum_metric[j] <= db->sum_metric[j - 1]))
				abort();
	}
	if (db->sum_start[db->ncontexts] != db->nsum)
		abort();
	for (uint32_t f = 0; f < db->nfunctions; f++)
		for (uint32_t j = db->flat_start[f]; j < db->flat_start[f + 1]; j++)
			if (db->flat_metric[j] >= db->nmetrics)
				abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	struct dbfile db;
	if (dbfile_read_summary_file(path, &db) == 0) {
		check_accepted(&db);
		/* A few contexts' statistics on demand (blocks read, cached, read again). */
		for (uint32_t c = 0; c < db.ncontexts; c += 1 + db.ncontexts / 7) {
			struct dbfile_stat in, ex;
			if (dbfile_stats(&db, c, 0, &in, &ex) < 0) {
				if (!fth_errmsg()[0])
					abort();
			} else if (in.count > db.nthreads || ex.count > db.nthreads) {
				abort();
			}
		}
		struct buf out = BUF_INIT;
		if (dbfile_dump(&db, &out, false) < 0 && !fth_errmsg()[0])
			abort();
		buf_release(&out);
		dbfile_close(&db);
	} else if (!fth_errmsg()[0]) {
		abort(); /* every failure must say why */
	}
	return 0;
}
