/* SPDX-License-Identifier: MIT */
/* tables.h: the directory where a run's processes share their unwind tables (tables.c). */
#ifndef FATHOM_MEASURE_TABLES_H
#define FATHOM_MEASURE_TABLES_H

#include <stdbool.h>

struct run_tables {
	char *dir;	 /* NULL: none, every process builds its own tables */
	bool temporary; /* made for this run, removed by run_tables_close() */
	int dirfd;	 /* DIR, opened and checked once; -1 without DIR */
	int basefd;	 /* the directory that holds DIR (the cache base, or TMPDIR) */
};

/*
 * Choose the run's directory: CACHE (--cache DIR) or the per-user cache, in a subdirectory
 * named after the identity of LIB (the preloaded library, whose code the tables depend on);
 * with NO_CACHE, or when the cache cannot be used, a temporary directory.  The base and every
 * directory above it must be this user's or root's and writable by no one else unless sticky
 * (dir_check_owner() of userdir.h), the subdirectory this user's alone.  Returns 0, or -1 with
 * fth_error() saying what could not be used and what the run does instead.
 */
int run_tables_open(struct run_tables *t, const char *cache, bool no_cache, const char *lib);
/*
 * After the run: bound the cache (cfi_cache_tidy()) and remove the directories of other
 * builds unused for 30 days, or remove the temporary directory; through descriptors only, so
 * that no name swapped meanwhile is followed.  Returns the number of tables removed from the
 * cache, or -1 with fth_error().
 */
int run_tables_close(struct run_tables *t);

#endif
