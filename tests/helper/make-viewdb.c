/* SPDX-License-Identifier: MIT */
/*
 * make-viewdb: write one of view's test databases (tests/helper/viewdb.c) to DIR:
 *   make-viewdb small DIR      the small program with known values
 *   make-viewdb tma DIR        the TMA database with known percentages
 *   make-viewdb deep DIR       deep recursion and a very long name
 *   make-viewdb large [--contexts N] [--threads T] [--seed S] DIR
 */
#include "compat.h"
#include "error.h"
#include "viewdb.h"

#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	fth_progname = "make-viewdb";
	if (argc < 3)
		die(2, "usage: make-viewdb small|tma|tma-after|deep|large [--contexts N] [--threads T] [--seed S] DIR");
	int rc;
	if (!strcmp(argv[1], "small") && argc == 3) {
		rc = viewdb_make_small(argv[2]);
	} else if (!strcmp(argv[1], "tma") && argc == 3) {
		rc = viewdb_make_tma(argv[2], false);
	} else if (!strcmp(argv[1], "tma-after") && argc == 3) {
		rc = viewdb_make_tma(argv[2], true);
	} else if (!strcmp(argv[1], "deep") && argc == 3) {
		rc = viewdb_make_deep(argv[2]);
	} else if (!strcmp(argv[1], "large")) {
		unsigned long n = 100000, threads = 4, seed = 1;
		int i = 2;
		for (; i + 1 < argc; i += 2) {
			unsigned long v = strtoul(argv[i + 1], NULL, 10);
			if (!strcmp(argv[i], "--contexts") && v >= 64 && v < (1ul << 31))
				n = v;
			else if (!strcmp(argv[i], "--threads") && v >= 1 && v <= 1000)
				threads = v;
			else if (!strcmp(argv[i], "--seed"))
				seed = v;
			else
				die(2, "make-viewdb large: bad option %s %s", argv[i], argv[i + 1]);
		}
		if (i != argc - 1)
			die(2, "make-viewdb large: no DIR");
		rc = viewdb_make_large(argv[i], (uint32_t)n, (uint32_t)threads, (uint32_t)seed);
	} else {
		die(2, "make-viewdb: unknown database '%s'", argv[1]);
	}
	if (rc < 0)
		die(1, "%s", fth_errmsg());
	return 0;
}
