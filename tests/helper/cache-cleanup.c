/* SPDX-License-Identifier: MIT */
/*
 * cache-cleanup.c: measure's launcher-side handling of the unwind-table cache, alone and
 * repeated: run_tables_open() and run_tables_close() (measure/tables.c) on a cache base, as
 * measure does around every run; the close bounds the cache and removes the directories of
 * other builds unused for 30 days.  For tests/e2e/t0117-measure-file-safety.sh, which races
 * it against another user renaming entries of the base.
 *   cache-cleanup BASE LIBRARY ITERATIONS [WATCH]
 * With WATCH, it stops after the first iteration at whose end WATCH is gone.  Prints
 * "iterations N cleanups K" (K: the iterations that used BASE rather than a temporary
 * directory) and exits 1 when WATCH went, else 0.
 */
#include "compat.h"
#include "error.h"
#include "tables.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	fth_progname = "cache-cleanup";
	if (argc != 4 && argc != 5)
		die(2, "usage: cache-cleanup BASE LIBRARY ITERATIONS [WATCH]");
	char *end;
	long want = strtol(argv[3], &end, 10);
	if (*end || want < 1)
		die(2, "ITERATIONS: a positive number, not '%s'", argv[3]);
	const char *watch = argc == 5 ? argv[4] : NULL;
	long done = 0, cleanups = 0;
	bool said = false, gone = false;
	while (done < want && !gone) {
		struct run_tables t;
		if (run_tables_open(&t, argv[1], false, argv[2]) < 0 && !said) {
			warn("%s", fth_errmsg()); /* once: every iteration would say the same */
			said = true;
		}
		if (t.dir && !t.temporary)
			cleanups++;
		if (run_tables_close(&t) < 0)
			warn("%s", fth_errmsg());
		done++;
		gone = watch && access(watch, F_OK) < 0;
	}
	printf("iterations %ld cleanups %ld\n", done, cleanups);
	if (gone)
		fprintf(stderr, "cache-cleanup: %s is gone after iteration %ld\n", watch, done);
	return gone ? 1 : 0;
}
