/* SPDX-License-Identifier: MIT */
/*
 * t-dbfile.c: the database format: round trip, statistics read a block at a time, per-thread
 * groups, thread values placed by summary entry, corrupt, old and foreign input.
 */
#include "compat.h"
#include "tap.h"
#include "buf.h"
#include "crc32c.h"
#include "dbfile.h"
#include "error.h"
#include "le.h"
#include "mfile.h"
#include "xalloc.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small database: root > function f > line, with one metric, NTHREADS threads. */
static void make_db(struct dbfile *db, uint32_t nthreads)
{
	memset(db, 0, sizeof(*db));
	db->major = DBFILE_MAJOR;
	db->program = xstrdup("/bin/prog \"q\"");
	db->flags = DBFILE_FLAG_NO_LOOPS;
	db->nstrings = 3;
	db->strings = xcalloc(3, sizeof(char *));
	db->strings[0] = xstrdup("/bin/prog");
	db->strings[1] = xstrdup("f");
	db->strings[2] = xstrdup("prog.c");
	db->nmodules = 1;
	db->modules = xcalloc(1, sizeof(*db->modules));
	db->modules[0].path = 0;
	db->modules[0].build_id = xmalloc(2);
	db->modules[0].build_id[0] = 0xab;
	db->modules[0].build_id[1] = 0xcd;
	db->modules[0].build_id_len = 2;
	db->modules[0].flags = DBFILE_MODULE_SAMPLED;
	db->nfunctions = 1;
	db->functions = xcalloc(1, sizeof(*db->functions));
	db->functions[0] = (struct dbfile_function){ 1, 0, 2, 7, 0x1130 };
	db->nmetrics = 2;
	db->metrics = xcalloc(2, sizeof(*db->metrics));
	db->metrics[0] = (struct dbfile_metric){ .name = xstrdup("cycles"),
						 .description = xstrdup("CPU cycles"),
						 .rate_kind = MFILE_RATE_PERIOD, .rate = 1000003,
						 .flags = MFILE_METRIC_MULTIPLEXED, .parent = -1,
						 .threshold = NAN, .formula = xstrdup(""),
						 .time_enabled = 200, .time_running = 100,
						 .samples = 12, .nthreads = nthreads, .scale = 2 };
	db->metrics[1] = (struct dbfile_metric){ .name = xstrdup("retiring"),
						 .description = xstrdup("TMA"),
						 .kind = DBFILE_METRIC_DERIVED, .flags = MFILE_METRIC_TMA,
						 .parent = 0, .threshold = 0.7,
						 .formula = xstrdup("m1 / m0"), .scale = 1 };
	db->nthreads = nthreads;
	db->thread_group = dbfile_thread_group(nthreads);
	db->threads = xcalloc(nthreads, sizeof(*db->threads));
	for (uint32_t t = 0; t < nthreads; t++) {
		char name[32];
		snprintf(name, sizeof(name), "prog-%u.fthm", t);
		db->threads[t] = (struct dbfile_thread){ xstrdup(name), xstrdup("host"),
							 xstrdup("/bin/prog"), 10, 10 + t, t, -1,
							 1000, 2000 };
	}
	db->ncontexts = 3;
	db->contexts = xcalloc(3, sizeof(*db->contexts));
	db->contexts[0] = (struct dbfile_context){ .parent = DBFILE_NONE, .kind = DBFILE_ROOT,
						   .function = DBFILE_NONE, .file = DBFILE_NONE,
						   .module = DBFILE_NONE };
	db->contexts[1] = (struct dbfile_context){ .parent = 0, .kind = DBFILE_FUNCTION,
						   .function = 0, .file = DBFILE_NONE };
	db->contexts[2] = (struct dbfile_context){ .parent = 1, .kind = DBFILE_LINE, .function = 0,
						   .file = 2, .line = 9 };
	db->nsum = 3;
	db->sum_start = xcalloc(4, sizeof(uint32_t));
	db->sum_start[0] = 0;
	db->sum_start[1] = 1;
	db->sum_start[2] = 2;
	db->sum_start[3] = 3;
	db->sum_metric = xcalloc(3, sizeof(uint16_t));
	db->sum_incl = xcalloc(3, sizeof(struct dbfile_stat));
	db->sum_excl = xcalloc(3, sizeof(struct dbfile_stat));
	for (int i = 0; i < 3; i++)
		db->sum_incl[i] = (struct dbfile_stat){ nthreads, 6.5 * nthreads, 6.5, 6.5, 0 };
	db->sum_excl[2] = db->sum_incl[2];
	db->nflat = 1;
	db->flat_start = xcalloc(2, sizeof(uint32_t));
	db->flat_start[1] = 1;
	db->flat_metric = xcalloc(1, sizeof(uint16_t));
	db->flat_incl = xcalloc(1, sizeof(double));
	db->flat_excl = xcalloc(1, sizeof(double));
	db->flat_incl[0] = db->flat_excl[0] = 6.5 * nthreads;
}

static int write_db(const char *dir, struct dbfile *db, int level)
{
	mkdir(dir, 0755);
	struct dbfile_thread_writer w;
	struct dbfile_values v = { 0 };
	if (dbfile_threads_open(&w, dir, db->nthreads, db->thread_group, level) < 0)
		return -1;
	for (uint32_t t = 0; t < db->nthreads; t++) {
		dbfile_values_reset(&v);
		dbfile_values_push(&v, 2, 0, 6.5, 6.5);
		dbfile_values_push(&v, 1, 0, 6.5, 0);
		dbfile_values_push(&v, 0, 0, 6.5 + t, (double)t);
		if (dbfile_threads_add(&w, &v) < 0)
			return -1;
	}
	dbfile_values_release(&v);
	if (dbfile_threads_finish(&w) < 0)
		return -1;
	return dbfile_write_summary(dir, db, level);
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct buf b = BUF_INIT;
	char tmp[4096];
	size_t k;
	while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0)
		buf_add(&b, tmp, k);
	fclose(f);
	return buf_detach(&b, n);
}

static void spit(const char *path, const char *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(data, 1, n, f);
		fclose(f);
	}
}

static void test_round_trip(int level)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/rt%d", tap_tmpdir(), level);
	struct dbfile db, back;
	make_db(&db, 3);
	/* Stored: one context per STAT chunk, so that blocks are read one by one below. */
	db.stat_block = level ? 0 : 1;
	ok(write_db(dir, &db, level) == 0, "level %d: written (%s)", level, fth_errmsg());
	ok(dbfile_open(dir, &back) == 0, "level %d: read back (%s)", level, fth_errmsg());
	struct buf a = BUF_INIT, b = BUF_INIT;
	db.dir = xstrdup(dir);
	dbfile_dump(&db, &a, true);
	dbfile_dump(&back, &b, true);
	is_str((char *)b.data, (char *)a.data, "level %d: the dump of what was read equals the "
					       "dump of what was written",
	       level);
	like((char *)b.data, "m0 \"cycles\" raw unit=count rate=period:1000003",
	     "the metric is described");
	like((char *)b.data, "coverage=0.5 scale=2", "multiplexing coverage and scale");
	like((char *)b.data, "parent=0 threshold=0.69999999999999996 formula=\"m1 / m0\"",
	     "TMA parent, threshold and formula");
	like((char *)b.data, "2 line prog.c:9", "the line context");
	like((char *)b.data, "thread t2: 3 values\n  0 m0 8.5 2\n", "per-thread values");
	buf_release(&a);
	buf_release(&b);
	struct dbfile_values v = { 0 };
	ok(dbfile_read_thread(&back, 1, &v) == 0 && v.nvalues == 3 && v.ctx[2] == 0 &&
		   v.incl[2] == 7.5 && v.excl[2] == 1,
	   "thread 1 read on its own");
	ok(dbfile_read_thread(&back, 3, &v) < 0, "no thread 3: %s", fth_errmsg());
	dbfile_values_release(&v);
	dbfile_close(&back);
	/* The statistics, read a block at a time. */
	ok(dbfile_open(dir, &back) == 0 && back.sum_incl == NULL && back.sum_val != NULL,
	   "level %d: opened without the statistics in memory", level);
	is_uint(back.stat_block, level ? DBFILE_STAT_BLOCK : 1, "level %d: block size", level);
	struct dbfile_stat in, ex;
	ok(dbfile_stats(&back, 2, 0, &in, &ex) == 0 && in.count == 3 && in.sum == 19.5 &&
		   in.min == 6.5 && in.max == 6.5 && ex.count == 3 && ex.sum == 19.5,
	   "level %d: statistics of the line: n=3 sum=19.5", level);
	ok(dbfile_stats(&back, 0, 0, &in, &ex) == 0 && in.count == 3 && ex.count == 0 &&
		   ex.sum == 0,
	   "level %d: statistics of the root (another block)", level);
	ok(dbfile_stats(&back, 1, 1, &in, &ex) == 0 && in.count == 0 && ex.count == 0,
	   "level %d: no entry: zero counts", level);
	ok(back.sum_val[4] == 19.5 && back.sum_val[5] == 19.5, "level %d: sums at open", level);
	/* One thread's values placed by summary entry. */
	double val[6] = { -1, -1, -1, -1, -1, -1 };
	ok(dbfile_read_thread_entries(&back, 2, val) == 0 && val[0] == 8.5 && val[1] == 2 &&
		   val[2] == 6.5 && val[3] == 0 && val[4] == 6.5 && val[5] == 6.5,
	   "level %d: thread 2 by summary entry", level);
	ok(dbfile_read_thread_entries(&back, 3, val) < 0, "level %d: no thread 3", level);
	dbfile_close(&back);
	dbfile_close(&db);
}

/* A thread value where the summary has no entry: refused when the thread is read. */
static void test_thread_without_summary(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/nosumm", tap_tmpdir());
	mkdir(dir, 0755);
	struct dbfile db, back;
	make_db(&db, 1);
	struct dbfile_thread_writer w;
	struct dbfile_values v = { 0 };
	dbfile_values_push(&v, 2, 1, 3, 3); /* metric 1 has no summary entry at context 2 */
	ok(dbfile_threads_open(&w, dir, 1, 1, 0) == 0 && dbfile_threads_add(&w, &v) == 0 &&
		   dbfile_threads_finish(&w) == 0 && dbfile_write_summary(dir, &db, 0) == 0,
	   "written");
	dbfile_values_release(&v);
	double val[6];
	ok(dbfile_open(dir, &back) == 0, "opened");
	ok(dbfile_read_thread_entries(&back, 0, val) < 0, "refused: %s", fth_errmsg());
	like(fth_errmsg(), "threads.fdb: chunk TVAL: thread 0: context 2, metric 1 has no summary",
	     "the message names the file and the value");
	dbfile_close(&back);
	dbfile_close(&db);
}

static void test_groups(void)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/groups", tap_tmpdir());
	struct dbfile db, back;
	make_db(&db, 2500);
	is_uint(db.thread_group, 3, "2500 threads: 3 per chunk");
	ok(write_db(dir, &db, 1) == 0, "written (%s)", fth_errmsg());
	ok(dbfile_open(dir, &back) == 0, "read back");
	struct dbfile_values v = { 0 };
	bool good = true;
	static const uint32_t probe[] = { 0, 1, 2, 3, 1234, 2497, 2498, 2499 };
	for (size_t i = 0; i < ARRAY_SIZE(probe); i++)
		if (dbfile_read_thread(&back, probe[i], &v) < 0 || v.nvalues != 3 ||
		    v.incl[2] != 6.5 + probe[i])
			good = false;
	ok(good, "threads at both ends of their groups read back");
	dbfile_values_release(&v);
	dbfile_close(&back);
	dbfile_close(&db);
}

static void test_corrupt(void)
{
	char dir[4096], path[4200];
	snprintf(dir, sizeof(dir), "%s/bad", tap_tmpdir());
	struct dbfile db, back;
	make_db(&db, 2);
	ok(write_db(dir, &db, 0) == 0, "stored database written");
	dbfile_close(&db);
	snprintf(path, sizeof(path), "%s/%s", dir, DBFILE_SUMMARY);
	size_t n;
	char *orig = slurp(path, &n);
	ok(orig != NULL, "read the summary's bytes");
	if (!orig)
		return;
	/* Truncated. */
	spit(path, orig, n / 2);
	ok(dbfile_open(dir, &back) < 0, "truncated: refused");
	like(fth_errmsg(), "summary.fdb", "truncated: the message names the file: %s",
	     fth_errmsg());
	/*
	 * Every single-byte change in the payload is refused (checksums), never a crash: at open,
	 * or, in a STAT chunk, when the statistics are read.
	 */
	int refused = 0, total = 0;
	for (size_t i = 32; i + 32 < n; i += 7) {
		char *c = xmalloc(n);
		memcpy(c, orig, n);
		c[i] ^= 0x5a;
		spit(path, c, n);
		free(c);
		total++;
		if (dbfile_open(dir, &back) < 0) {
			refused++;
		} else {
			if (dbfile_load_stats(&back) < 0 && fth_errmsg()[0])
				refused++;
			dbfile_close(&back);
		}
	}
	is_int(refused, total, "every changed byte is refused");
	/* A damaged STAT chunk: the database opens, the statistics say what is wrong. */
	{
		char *c = xmalloc(n);
		memcpy(c, orig, n);
		/* The footer gives the table of contents: (id, flags, offset, ...) per chunk. */
		uint64_t toc = le_get64((const uint8_t *)c + n - 32);
		uint32_t nchunks = le_get32((const uint8_t *)c + n - 24);
		uint64_t off = 0;
		for (uint32_t i = 0; i < nchunks && toc + 40 * (i + 1) <= n; i++) {
			const char *e = c + toc + 40 * i;
			if (!memcmp(e, "STAT", 4))
				off = le_get64((const uint8_t *)e + 8);
		}
		ok(off > 0 && off < n, "found the last STAT chunk at %llu",
		   (unsigned long long)off);
		if (off > 0 && off < n)
			c[off] ^= 0x40;
		spit(path, c, n);
		free(c);
		struct dbfile_stat in, ex;
		ok(dbfile_open(dir, &back) == 0, "damaged STAT: opened");
		ok(dbfile_stats(&back, 2, 0, &in, &ex) < 0, "damaged STAT: statistics refused: %s",
		   fth_errmsg());
		like(fth_errmsg(), "summary.fdb: chunk STAT: ",
		     "the message names the file and chunk");
		ok(dbfile_stats(&back, 2, 0, &in, &ex) < 0, "still refused when asked again");
		dbfile_close(&back);
	}
	/* A database of format version 1 (before STAT): refused with what to do. */
	{
		char *c = xmalloc(n);
		memcpy(c, orig, n);
		le_put16((uint8_t *)c + 8, 1);
		le_put32((uint8_t *)c + 28, crc32c(0, c, 28));
		spit(path, c, n);
		free(c);
		ok(dbfile_open(dir, &back) < 0, "version 1: refused");
		like(fth_errmsg(), "version 1.0 was written by an older prof", "version 1: %s",
		     fth_errmsg());
	}
	/* A newer major version. */
	char *c = xmalloc(n);
	memcpy(c, orig, n);
	c[8] = 9;
	spit(path, c, n);
	ok(dbfile_open(dir, &back) < 0, "another major version: refused: %s", fth_errmsg());
	free(c);
	/* A measurement file is not a database. */
	spit(path, "FTHMMEAS", 8);
	ok(dbfile_open(dir, &back) < 0, "a measurement file: refused: %s", fth_errmsg());
	/* threads.fdb is not a summary. */
	snprintf(path, sizeof(path), "%s/%s", dir, DBFILE_THREADS);
	ok(dbfile_open(path, &back) < 0, "threads.fdb alone: refused: %s", fth_errmsg());
	ok(dbfile_open("/nonexistent-db", &back) < 0, "missing: refused: %s", fth_errmsg());
	free(orig);
}

int main(void)
{
	test_round_trip(0);
	test_round_trip(3);
	test_groups();
	test_thread_without_summary();
	test_corrupt();
	return done_testing();
}
