/* SPDX-License-Identifier: MIT */
/*
 * prof: merge measurements and structure into a metric database, in one process (threads with
 * -j).  main.c is the order of the run; its parts are in run.c, shared with prof-mpi.
 */
#include "compat.h"
#include "error.h"
#include "run.h"
#include "xalloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	fth_progname = "prof";
	struct options o = { 0 };
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int rc = prof_parse_options(argc, argv, &o, prof_usage);
	if (rc >= 0)
		return rc;
	struct merge m = { .o = &o, .out = { .tmp_fd = -1 }, .spool_level = -1 };
	size_t afiles = 0;
	for (int i = optind; i < argc; i++)
		if (prof_collect(argv[i], &m.files, &m.nfiles, &afiles) < 0)
			problem_add(&m.probs, fth_errmsg());
	m.nfiles_all = m.nfiles;
	m.ss = structs_new(true);
	prof_load_structures(m.ss, argc, argv, &o, &m.probs);
	prof_catch_signals();
	m.u = unifier_new(m.ss, &m.probs);
	if (prof_several_programs(m.files, m.nfiles))
		unifier_by_program(m.u);
	pthread_mutex_init(&m.wr.lock, NULL);
	pthread_cond_init(&m.wr.cond, NULL);
	merge_inputs(&m, argv[optind]);
	struct dbfile db;
	memset(&db, 0, sizeof(db));
	merge_write(&m, &db, NULL);
	rc = prof_report(&m, &db, &t0);
	dbfile_close(&db);
	merge_release(&m);
	free(o.struct_paths);
	return rc;
}
