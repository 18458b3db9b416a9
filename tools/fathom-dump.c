/* SPDX-License-Identifier: MIT */
/* fathom-dump: print any fathom file (measurement, structure, database) as text, every field;
 * the format is told by its magic, through a table of the formats. */
#include "compat.h"
#include "escape.h"
#include "buf.h"
#include "dbfile.h"
#include "dbtrace.h"
#include "error.h"
#include "input.h"
#include "mfile.h"
#include "sfile.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: fathom-dump [-h] [--version] FILE...\n"
		   "Print fathom measurement files, structure files and databases (a database\n"
		   "directory, with its traces, or its summary.fdb) as text.  Exit status: 0 when every file was\n"
		   "read, 1 when one could not be read (the message names it and the problem).\n");
}

static void print_text(struct buf *out)
{
	esc_write(stdout, out->data, out->len);
	buf_release(out);
}

/* Each format's reader and dump: the file at PATH as text into OUT, 0 or -1 with a message
 * (a database's dump may fail part way, after some text). */
static int dump_measurement(const char *path, struct buf *out)
{
	struct mfile m;
	if (mfile_read(path, &m) < 0)
		return -1;
	mfile_dump(&m, out);
	mfile_release(&m);
	return 0;
}

static int dump_structure(const char *path, struct buf *out)
{
	struct sfile sf;
	if (sfile_read(path, &sf) < 0)
		return -1;
	sfile_dump(&sf, out);
	sfile_release(&sf);
	return 0;
}

/* A database: its directory or its summary.fdb; every thread's values too. */
static int dump_database(const char *path, struct buf *out)
{
	struct dbfile db;
	if (dbfile_open(path, &db) < 0)
		return -1;
	int rc = dbfile_dump(&db, out, true);
	struct dbtrace tr;
	int traced = rc == 0 ? dbtrace_open(&tr, db.dir, db.ncontexts, db.nthreads) : 1;
	if (traced == 0) {
		rc = dbtrace_dump(&tr, out);
		dbtrace_close(&tr);
	} else if (traced < 0) {
		rc = -1;
	}
	dbfile_close(&db);
	return rc;
}

/* Print what DUMP makes of PATH, all of it even when it fails part way. */
static int print_dump(int (*dump)(const char *path, struct buf *out), const char *path)
{
	struct buf out = BUF_INIT;
	int rc = dump(path, &out);
	print_text(&out);
	return rc;
}

/* The kinds of file fathom-dump prints, told by their magic number. */
static const struct format {
	const char *magic; /* 8 bytes */
	int (*dump)(const char *path, struct buf *out);
} formats[] = {
	{ MFILE_MAGIC, dump_measurement },
	{ SFILE_MAGIC, dump_structure },
	{ DBFILE_MAGIC, dump_database },
};

static int dump_one(const char *path)
{
	char magic[8] = { 0 };
	/* A directory is a database when it holds a summary.fdb. */
	struct stat st;
	char summary[4096];
	snprintf(summary, sizeof(summary), "%s/%s", path, DBFILE_SUMMARY);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode) && stat(summary, &st) == 0)
		return print_dump(dump_database, path);
	/* A database's traces are dumped with it: they need its summary's numbers. */
	const char *base = strrchr(path, '/');
	if (!strcmp(base ? base + 1 : path, DBTRACE_FILE))
		return fth_error("%s: the traces of a database: give the database's directory", path);
	int fd = input_open(path, NULL);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, magic, sizeof(magic));
	int err = errno;
	close(fd);
	if (n < 0)
		return fth_error_errno(err, "%s: cannot read", path);
	if (n < (ssize_t)sizeof(magic))
		return fth_error("%s: not a fathom file: %s (%zd bytes: not yet written, cut short, "
				 "or something else)", path, n ? "too short" : "empty", n);
	for (size_t i = 0; i < ARRAY_SIZE(formats); i++)
		if (memcmp(magic, formats[i].magic, 8) == 0)
			return print_dump(formats[i].dump, path);
	if (memcmp(magic, "FTHM", 4) == 0)
		return fth_error("%s: fathom '%.8s' files cannot be dumped by this version", path,
				 magic);
	return fth_error("%s: not a fathom file (unknown magic number)", path);
}

int main(int argc, char **argv)
{
	fth_progname = "fathom-dump";
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' },
					      { "version", no_argument, NULL, 'V' },
					      { NULL, 0, NULL, 0 } };
	int c;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h': usage(stdout); return 0;
		case 'V': printf("fathom-dump (fathom) %s\n", PACKAGE_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	int status = 0;
	for (int i = optind; i < argc; i++) {
		if (argc - optind > 1)
			esc_printf(stdout, "%s==> %s <==\n", i > optind ? "\n" : "", argv[i]);
		if (dump_one(argv[i]) < 0) {
			fflush(stdout);
			esc_printf(stderr, "fathom-dump: %s\n", fth_errmsg());
			status = 1;
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		esc_printf(stderr, "fathom-dump: error writing output: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
