/* SPDX-License-Identifier: MIT */
/* tables.h: the directory where a run's processes share their unwind tables (tables.c). */
#ifndef FATHOM_MEASURE_TABLES_H
#define FATHOM_MEASURE_TABLES_H

#include <stdbool.h>

struct run_tables {
	char *dir;	 /* NULL: none, every process builds its own tables */
	bool temporary; /* made for this run, removed by run_tables_close() */
};

/*
 * Choose the run's directory: CACHE (--cache DIR) or the per-user cache, in a subdirectory
 * named after the identity of LIB (the preloaded library, whose code the tables depend on);
 * with NO_CACHE, or when the cache cannot be used, a temporary directory.  Returns 0, or -1
 * with fth_error() saying what could not be used and what the run does instead.
 */
int run_tables_open(struct run_tables *t, const char *cache, bool no_cache, const char *lib);
/*
 * After the run: bound the cache (cfi_cache_tidy()), or remove the temporary directory.
 * Returns the number of tables removed from the cache, or -1 with fth_error().
 */
int run_tables_close(struct run_tables *t);

#endif
