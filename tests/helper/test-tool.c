/* SPDX-License-Identifier: MIT */
/*
 * test-tool: reach lib/ from shell tests.
 *   test-tool make-mfile [--stored] [--nodes N] OUT   write the sample measurement file
 *   test-tool read-mfile FILE                         read it; print "ok" or the error (exit 1)
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int make_mfile(int argc, char **argv)
{
	int level = 3;
	long nodes = 0;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--stored"))
			level = 0;
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc - 1)
			nodes = strtol(argv[++i], NULL, 10);
		else
			die(2, "make-mfile: unknown option %s", argv[i]);
	}
	if (i != argc - 1)
		die(2, "usage: test-tool make-mfile [--stored] [--nodes N] OUT");
	struct mfile m;
	if (nodes > 0)
		sample_mfile_large(&m, (uint32_t)nodes, 42);
	else
		sample_mfile(&m);
	int rc = mfile_write(argv[i], &m, level);
	mfile_release(&m);
	if (rc < 0)
		die(1, "%s", fth_errmsg());
	return 0;
}

static int read_mfile(int argc, char **argv)
{
	if (argc != 2)
		die(2, "usage: test-tool read-mfile FILE");
	struct mfile m;
	if (mfile_read(argv[1], &m) < 0) {
		printf("%s\n", fth_errmsg());
		return 1;
	}
	mfile_release(&m);
	printf("ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	fth_progname = "test-tool";
	if (argc < 2)
		die(2, "usage: test-tool make-mfile|read-mfile ...");
	if (!strcmp(argv[1], "make-mfile"))
		return make_mfile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "read-mfile"))
		return read_mfile(argc - 1, argv + 1);
	die(2, "unknown command %s", argv[1]);
}
