/* SPDX-License-Identifier: MIT */
/* dbfile-write.c: writes a database's summary.fdb and, streaming, its threads.fdb. */
#include "compat.h"
#include "dbfile.h"
#include "error.h"
#include "le.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field numbers of the tagged records (doc/formats.md 8.x). */
enum { INFO_PROGRAM = 1, INFO_FLAGS = 2, INFO_GROUP = 3, INFO_STAT_BLOCK = 4 };
enum { MODS_PATH = 1, MODS_BUILD_ID = 2, MODS_FLAGS = 3 };
enum { METR_NAME = 1, METR_DESCRIPTION, METR_UNIT, METR_RATE_KIND, METR_RATE, METR_FLAGS,
       METR_PARENT, METR_THRESHOLD, METR_FORMULA, METR_KIND, METR_ENABLED, METR_RUNNING,
       METR_SAMPLES, METR_NTHREADS, METR_SCALE };
enum { THRD_FILE = 1, THRD_HOST, THRD_PROGRAM, THRD_PID, THRD_TID, THRD_INDEX, THRD_RANK,
       THRD_START, THRD_END };

static uint64_t ref(uint32_t v)
{
	return v == DBFILE_NONE ? 0 : (uint64_t)v + 1;
}

static int put_f64(struct cf_writer *w, double d)
{
	return cf_put_u64(w, le_f64_bits(d));
}

static int open_file(const char *dir, const char *name, char **path, int *fd, void **ws,
		     int level)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	*path = xmalloc(n);
	snprintf(*path, n, "%s/%s", dir, name);
	*fd = open(*path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (*fd < 0) {
		fth_error_errno(errno, "%s: cannot create", *path);
		FREE_AND_NULL(*path);
		return -1;
	}
	size_t size = cf_writer_workspace_size(level);
	*ws = xmalloc(size);
	return 0;
}

uint32_t dbfile_stat_block(uint32_t ncontexts)
{
	uint32_t least = (uint32_t)(((uint64_t)ncontexts + DBFILE_MAX_STAT_CHUNKS - 1) /
				    DBFILE_MAX_STAT_CHUNKS);
	return least > DBFILE_STAT_BLOCK ? least : DBFILE_STAT_BLOCK;
}

/* The block size: DB's when it sets one that keeps the chunks few enough, else the default. */
static uint32_t stat_block_of(const struct dbfile *db)
{
	uint32_t b = db->stat_block;
	if (b && (uint64_t)b * DBFILE_MAX_STAT_CHUNKS >= db->ncontexts)
		return b;
	return dbfile_stat_block(db->ncontexts);
}

static int write_info(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_INFO) < 0 ||
	    cf_field_str(w, INFO_PROGRAM, db->program ? db->program : "") < 0 ||
	    cf_field_varint(w, INFO_FLAGS, db->flags) < 0 ||
	    cf_field_varint(w, INFO_GROUP, db->thread_group) < 0 ||
	    cf_field_varint(w, INFO_STAT_BLOCK, stat_block_of(db)) < 0 || cf_record_end(w) < 0)
		return -1;
	return cf_chunk_end(w);
}

static int write_strings(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_STRINGS) < 0 || cf_put_varint(w, db->nstrings) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nstrings; i++)
		if (cf_put_str(w, db->strings[i]) < 0)
			return -1;
	return cf_chunk_end(w);
}

static int write_modules(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_MODULES) < 0 || cf_put_varint(w, db->nmodules) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nmodules; i++) {
		const struct dbfile_module *m = &db->modules[i];
		if (cf_field_varint(w, MODS_PATH, ref(m->path)) < 0 ||
		    cf_field_bytes(w, MODS_BUILD_ID, m->build_id, m->build_id_len) < 0 ||
		    cf_field_varint(w, MODS_FLAGS, m->flags) < 0 || cf_record_end(w) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static int write_functions(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_FUNCTIONS) < 0 || cf_put_varint(w, db->nfunctions) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		const struct dbfile_function *f = &db->functions[i];
		if (cf_put_varint(w, ref(f->name)) < 0 || cf_put_varint(w, ref(f->module)) < 0 ||
		    cf_put_varint(w, ref(f->file)) < 0 || cf_put_varint(w, f->line) < 0 ||
		    cf_put_varint(w, f->addr) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static int write_metrics(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_METRICS) < 0 || cf_put_varint(w, db->nmetrics) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		const struct dbfile_metric *m = &db->metrics[i];
		if (cf_field_str(w, METR_NAME, m->name) < 0 ||
		    cf_field_str(w, METR_DESCRIPTION, m->description) < 0 ||
		    cf_field_varint(w, METR_UNIT, m->unit) < 0 ||
		    cf_field_varint(w, METR_RATE_KIND, m->rate_kind) < 0 ||
		    cf_field_varint(w, METR_RATE, m->rate) < 0 ||
		    cf_field_varint(w, METR_FLAGS, m->flags) < 0 ||
		    cf_field_varint(w, METR_PARENT, le_zigzag(m->parent)) < 0 ||
		    cf_field_fixed64(w, METR_THRESHOLD, le_f64_bits(m->threshold)) < 0 ||
		    cf_field_str(w, METR_FORMULA, m->formula) < 0 ||
		    cf_field_varint(w, METR_KIND, m->kind) < 0 ||
		    cf_field_varint(w, METR_ENABLED, m->time_enabled) < 0 ||
		    cf_field_varint(w, METR_RUNNING, m->time_running) < 0 ||
		    cf_field_varint(w, METR_SAMPLES, m->samples) < 0 ||
		    cf_field_varint(w, METR_NTHREADS, m->nthreads) < 0 ||
		    cf_field_fixed64(w, METR_SCALE, le_f64_bits(m->scale)) < 0 ||
		    cf_record_end(w) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static int write_threads(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_THREADS) < 0 || cf_put_varint(w, db->nthreads) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nthreads; i++) {
		const struct dbfile_thread *t = &db->threads[i];
		if (cf_field_str(w, THRD_FILE, t->file) < 0 ||
		    cf_field_str(w, THRD_HOST, t->host) < 0 ||
		    cf_field_str(w, THRD_PROGRAM, t->program) < 0 ||
		    cf_field_varint(w, THRD_PID, t->pid) < 0 ||
		    cf_field_varint(w, THRD_TID, t->tid) < 0 ||
		    cf_field_varint(w, THRD_INDEX, t->thread_index) < 0 ||
		    cf_field_varint(w, THRD_RANK, le_zigzag(t->rank)) < 0 ||
		    cf_field_varint(w, THRD_START, t->start_ns) < 0 ||
		    cf_field_varint(w, THRD_END, t->end_ns) < 0 || cf_record_end(w) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static int write_contexts(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_CONTEXTS) < 0 || cf_put_varint(w, db->ncontexts) < 0)
		return -1;
	for (uint32_t i = 0; i < db->ncontexts; i++) {
		const struct dbfile_context *c = &db->contexts[i];
		if ((i == 0) != (c->parent == DBFILE_NONE) || (i && c->parent >= i))
			return fth_error("context %u: parent %u is not before it", i, c->parent);
		if (cf_put_varint(w, i ? i - c->parent : 0) < 0 || cf_put_u8(w, c->kind) < 0 ||
		    cf_put_varint(w, ref(c->function)) < 0 || cf_put_varint(w, ref(c->file)) < 0 ||
		    cf_put_varint(w, c->line) < 0 || cf_put_varint(w, ref(c->module)) < 0 ||
		    cf_put_varint(w, c->addr) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

/* The statistics but the sum (which is in SUMM): count, and when not zero min, max, stddev. */
static int put_stat(struct cf_writer *w, const struct dbfile_stat *s)
{
	if (cf_put_varint(w, s->count) < 0)
		return -1;
	if (!s->count)
		return 0;
	if (put_f64(w, s->min) < 0 || put_f64(w, s->max) < 0 || put_f64(w, s->stddev) < 0)
		return -1;
	return 0;
}

/* Metric indices of one row, strictly increasing, as deltas (doc/formats.md 4.5). */
static int put_metric(struct cf_writer *w, const uint16_t *metric, uint64_t j, uint64_t start)
{
	if (j > start && metric[j] <= metric[j - 1])
		return fth_error("metric indices of a row are not increasing");
	return cf_put_varint(w, j == start ? metric[j] : (uint64_t)(metric[j] - metric[j - 1] - 1));
}

/* SUMM: the sums over threads of every (context, metric). */
static int write_summary(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_SUMMARY) < 0 || cf_put_varint(w, db->nsum) < 0)
		return -1;
	for (uint32_t i = 0; i < db->ncontexts; i++) {
		uint64_t a = db->sum_start[i], b = db->sum_start[i + 1];
		if (cf_put_varint(w, b - a) < 0)
			return -1;
		for (uint64_t j = a; j < b; j++) {
			const struct dbfile_stat *in = &db->sum_incl[j], *ex = &db->sum_excl[j];
			if (!in->count && !ex->count)
				return fth_error("context %u: a summary entry no thread has", i);
			if (put_metric(w, db->sum_metric, j, a) < 0 ||
			    put_f64(w, in->count ? in->sum : 0) < 0 ||
			    put_f64(w, ex->count ? ex->sum : 0) < 0)
				return -1;
		}
	}
	return cf_chunk_end(w);
}

/* STAT: the other statistics, one chunk per block of contexts. */
static int write_stats(struct cf_writer *w, const struct dbfile *db)
{
	uint32_t block = stat_block_of(db);
	for (uint32_t first = 0; first < db->ncontexts; first += block) {
		uint32_t end = db->ncontexts - first < block ? db->ncontexts : first + block;
		if (cf_chunk_begin(w, DBFILE_CHUNK_STATS) < 0)
			return -1;
		for (uint64_t j = db->sum_start[first]; j < db->sum_start[end]; j++)
			if (put_stat(w, &db->sum_incl[j]) < 0 || put_stat(w, &db->sum_excl[j]) < 0)
				return -1;
		if (cf_chunk_end(w) < 0)
			return -1;
	}
	return 0;
}

static int write_flat(struct cf_writer *w, const struct dbfile *db)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_FLAT) < 0 || cf_put_varint(w, db->nflat) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		uint64_t a = db->flat_start[i], b = db->flat_start[i + 1];
		if (cf_put_varint(w, b - a) < 0)
			return -1;
		for (uint64_t j = a; j < b; j++)
			if (put_metric(w, db->flat_metric, j, a) < 0 ||
			    put_f64(w, db->flat_incl[j]) < 0 || put_f64(w, db->flat_excl[j]) < 0)
				return -1;
	}
	return cf_chunk_end(w);
}

int dbfile_write_summary(const char *dir, const struct dbfile *db, int level)
{
	char *path;
	int fd;
	void *ws;
	if (open_file(dir, DBFILE_SUMMARY, &path, &fd, &ws, level) < 0)
		return -1;
	struct cf_writer w;
	int rc = -1;
	if (cf_writer_open(&w, fd, path, DBFILE_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, level, ws,
			   cf_writer_workspace_size(level)) < 0 ||
	    write_info(&w, db) < 0 || write_strings(&w, db) < 0 || write_modules(&w, db) < 0 ||
	    write_functions(&w, db) < 0 || write_metrics(&w, db) < 0 ||
	    write_threads(&w, db) < 0 || write_contexts(&w, db) < 0 ||
	    write_summary(&w, db) < 0 || write_flat(&w, db) < 0 || write_stats(&w, db) < 0 ||
	    cf_writer_finish(&w) < 0)
		goto out;
	if (fsync(fd) < 0 && errno != EINVAL) {
		fth_error_errno(errno, "%s: cannot sync", path);
		goto out;
	}
	rc = 0;
out:
	if (close(fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: cannot close", path);
	if (rc < 0) {
		fth_error_prefix("%s", path);
		unlink(path);
	}
	free(ws);
	free(path);
	return rc;
}

/*
 * A value of threads.fdb: a non-negative integer below 2^53 as the varint 2 x value, anything
 * else as the varint 1 and then its fixed64 bits (doc/formats.md 8.7).
 */
static size_t put_number(uint8_t *p, double d)
{
	if (d >= 0 && d < 9007199254740992.0 && d == (double)(uint64_t)d)
		return le_put_varint(p, (uint64_t)d << 1);
	p[0] = 1;
	le_put64(p + 1, le_f64_bits(d));
	return 9;
}

uint32_t dbfile_thread_group(uint32_t nthreads)
{
	uint32_t g = (nthreads + DBFILE_MAX_GROUPS - 1) / DBFILE_MAX_GROUPS;
	return g ? g : 1;
}

int dbfile_threads_open(struct dbfile_thread_writer *w, const char *dir, uint32_t nthreads,
			uint32_t group, int level)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (group == 0 || (uint64_t)nthreads > (uint64_t)group * DBFILE_MAX_GROUPS)
		return fth_error("%u threads cannot be kept in groups of %u", nthreads, group);
	if (open_file(dir, DBFILE_THREADS, &w->path, &w->fd, &w->ws, level) < 0)
		return -1;
	w->nthreads = nthreads;
	w->group = group;
	if (cf_writer_open(&w->cf, w->fd, w->path, DBFILE_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, level,
			   w->ws, cf_writer_workspace_size(level)) < 0) {
		dbfile_threads_abort(w);
		return -1;
	}
	return 0;
}

int dbfile_threads_add(struct dbfile_thread_writer *w, const struct dbfile_values *v)
{
	if (w->next >= w->nthreads)
		return fth_error("%s: more threads than announced", w->path);
	struct cf_writer *cf = &w->cf;
	if (w->next % w->group == 0 && cf_chunk_begin(cf, DBFILE_CHUNK_THREAD_VALUES) < 0)
		return -1;
	if (cf_put_varint(cf, w->next) < 0 || cf_put_varint(cf, v->nvalues) < 0)
		return -1;
	uint8_t tmp[64];
	uint32_t prev = 0;
	for (uint64_t i = 0; i < v->nvalues; i++) {
		size_t n = le_put_varint(tmp, le_zigzag((int64_t)v->ctx[i] - (int64_t)prev));
		n += le_put_varint(tmp + n, v->metric[i]);
		n += put_number(tmp + n, v->incl[i]);
		n += put_number(tmp + n, v->excl[i]);
		prev = v->ctx[i];
		if (cf_put(cf, tmp, n) < 0)
			return -1;
	}
	w->next++;
	if (w->next % w->group == 0 && cf_chunk_end(cf) < 0)
		return -1;
	return 0;
}

int dbfile_threads_finish(struct dbfile_thread_writer *w)
{
	int rc = 0;
	if (w->next % w->group != 0 && cf_chunk_end(&w->cf) < 0)
		rc = -1;
	if (rc == 0 && cf_writer_finish(&w->cf) < 0)
		rc = -1;
	if (rc == 0 && fsync(w->fd) < 0 && errno != EINVAL)
		rc = fth_error_errno(errno, "%s: cannot sync", w->path);
	if (close(w->fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: cannot close", w->path);
	w->fd = -1;
	if (rc < 0)
		unlink(w->path);
	FREE_AND_NULL(w->ws);
	FREE_AND_NULL(w->path);
	return rc;
}

void dbfile_threads_abort(struct dbfile_thread_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->path)
		unlink(w->path);
	FREE_AND_NULL(w->ws);
	FREE_AND_NULL(w->path);
}

void dbfile_values_reset(struct dbfile_values *v)
{
	v->nvalues = 0;
}

void dbfile_values_push(struct dbfile_values *v, uint32_t ctx, uint16_t metric, double incl,
			double excl)
{
	if (v->nvalues == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 256;
		v->ctx = xreallocarray(v->ctx, v->cap, sizeof(*v->ctx));
		v->metric = xreallocarray(v->metric, v->cap, sizeof(*v->metric));
		v->incl = xreallocarray(v->incl, v->cap, sizeof(*v->incl));
		v->excl = xreallocarray(v->excl, v->cap, sizeof(*v->excl));
	}
	v->ctx[v->nvalues] = ctx;
	v->metric[v->nvalues] = metric;
	v->incl[v->nvalues] = incl;
	v->excl[v->nvalues] = excl;
	v->nvalues++;
}

void dbfile_values_release(struct dbfile_values *v)
{
	free(v->ctx);
	free(v->metric);
	free(v->incl);
	free(v->excl);
	memset(v, 0, sizeof(*v));
}
