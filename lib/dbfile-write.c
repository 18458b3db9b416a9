/* SPDX-License-Identifier: MIT */
/*
 * dbfile-write.c: writes a database: summary.fdb from the caller's tree and the indices
 * dbfile-index.c derives from it, and threads.fdb from the values spooled while the caller
 * merged (doc/formats.md section 8).  It only encodes: nothing here derives an index or
 * calls the reader.
 */
#include "compat.h"
#include "buf.h"
#include "dbfile.h"
#include "dbtrace.h"
#include "dbfile-fields.h"
#include "dbfile-index.h"
#include "error.h"
#include "le.h"
#include "mfile.h"
#include "piece.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static uint64_t ref(uint32_t v)
{
	return v == DBFILE_NONE ? 0 : (uint64_t)v + 1;
}

static int put_f64(struct cf_writer *w, double d)
{
	return cf_put_u64(w, le_f64_bits(d));
}

int dbfile_create(const char *dir, const char *name, char **path, int *fd)
{
	*path = xpath_join(dir, name);
	*fd = open(*path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (*fd < 0) {
		fth_error_errno(errno, "%s: cannot create", *path);
		FREE_AND_NULL(*path);
		return -1;
	}
	return 0;
}

int dbfile_end(int *fd, const char *path, int rc, bool sync)
{
	if (*fd >= 0) {
		if (rc == 0 && sync && fsync(*fd) < 0 && errno != EINVAL)
			rc = fth_error_errno(errno, "%s: cannot sync", path);
		if (close(*fd) < 0 && rc == 0)
			rc = fth_error_errno(errno, "%s: cannot close", path);
	}
	*fd = -1;
	if (rc < 0 && path)
		unlink(path);
	return rc;
}

int dbfile_end_spool(int *fd, char **path, void **ws, int rc)
{
	rc = dbfile_end(fd, *path, rc, false);
	FREE_AND_NULL(*ws);
	FREE_AND_NULL(*path);
	return rc;
}

int dbfile_open_spool(const char *dir, const char *spool, const char magic[8], const char *kind,
		      struct cf_reader *r)
{
	char *path = xpath_join(dir, spool);
	if (access(path, F_OK) < 0) {
		free(path);
		return 0;
	}
	int rc = cf_open(r, path, magic, kind, DBFILE_MAJOR);
	free(path);
	return rc < 0 ? -1 : 1;
}

int dbfile_convert_spool(const char *dir, const char *spool, const char magic[8], const char *kind,
			 const char *name,
			 int (*convert)(struct cf_reader *r, struct cf_writer *w, void *arg),
			 void *arg)
{
	struct cf_reader r;
	int opened = dbfile_open_spool(dir, spool, magic, kind, &r);
	if (opened <= 0)
		return opened;
	char *from = xstrdup(r.path);
	char *path;
	int fd, rc = -1;
	if (dbfile_create(dir, name, &path, &fd) == 0) {
		size_t size = cf_writer_workspace_size(0);
		void *ws = xmalloc(size);
		struct cf_writer w;
		rc = cf_writer_open(&w, fd, path, DBFILE_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, 0, ws,
				    size) >= 0 &&
				     convert(&r, &w, arg) >= 0 && cf_writer_finish(&w) >= 0
			     ? 0
			     : -1;
		if (dbfile_end(&fd, path, rc, true) < 0) {
			fth_error_prefix("%s", path);
			rc = -1;
		}
		free(ws);
		free(path);
	}
	cf_close(&r);
	if (rc == 0)
		unlink(from);
	free(from);
	return rc;
}

static int open_file(const char *dir, const char *name, char **path, int *fd, void **ws,
		     int level)
{
	if (dbfile_create(dir, name, path, fd) < 0)
		return -1;
	*ws = xmalloc(cf_writer_workspace_size(level));
	return 0;
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
		    ((m->flags & MFILE_METRIC_TMA) && cf_field_varint(w, METR_LEVEL, m->level) < 0) ||
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
		    cf_field_varint(w, THRD_END, t->end_ns) < 0 ||
		    cf_field_varint(w, THRD_PPID, t->ppid) < 0)
			return -1;
		for (uint32_t a = 0; a < t->argc; a++)
			if (cf_field_str(w, THRD_ARG, t->argv[a]) < 0)
				return -1;
		if ((t->name && t->name[0] && cf_field_str(w, THRD_NAME, t->name) < 0) ||
		    (t->entry && t->entry[0] && cf_field_str(w, THRD_ENTRY, t->entry) < 0) ||
		    (t->cpu && t->cpu[0] && cf_field_str(w, THRD_CPU, t->cpu) < 0) ||
		    cf_record_end(w) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}
/* ---- summary.fdb ---- */

static int write_info(struct cf_writer *w, const struct dbfile *db, const struct dbfile_index *d)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_INFO) < 0 ||
	    cf_field_str(w, INFO_PROGRAM, db->program ? db->program : "") < 0 ||
	    cf_field_varint(w, INFO_FLAGS, db->flags) < 0 ||
	    cf_field_varint(w, INFO_GROUP, db->thread_group) < 0 ||
	    cf_field_varint(w, INFO_BLOCK, d->block) < 0 ||
	    cf_field_varint(w, INFO_NCONTEXTS, d->n) < 0 ||
	    cf_field_varint(w, INFO_NSUM, d->nsum) < 0 ||
	    cf_field_varint(w, INFO_LIST_BLOCK, d->list_block) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nnotes; i++)
		if (cf_field_str(w, INFO_NOTE, db->notes[i]) < 0)
			return -1;
	if (cf_record_end(w) < 0)
		return -1;
	return cf_chunk_end(w);
}

static int write_functions(struct cf_writer *w, const struct dbfile *db, const struct dbfile_index *d)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_FUNCTIONS) < 0 || cf_put_varint(w, db->nfunctions) < 0)
		return -1;
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		const struct dbfile_function *f = &db->functions[i];
		if (cf_put_varint(w, ref(f->name)) < 0 || cf_put_varint(w, ref(f->module)) < 0 ||
		    cf_put_varint(w, ref(f->file)) < 0 || cf_put_varint(w, f->line) < 0 ||
		    cf_put_varint(w, f->addr) < 0 || cf_put_varint(w, d->fn_group[i]) < 0)
			return -1;
	}
	return cf_chunk_end(w);
}

static int write_groups(struct cf_writer *w, const struct dbfile_index *d)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_GROUPS) < 0 || cf_put_varint(w, d->ngroups) < 0)
		return -1;
	for (uint32_t g = 0; g < d->ngroups; g++)
		if (cf_put_varint(w, ref(d->groups[g].module)) < 0 ||
		    cf_put_varint(w, ref(d->groups[g].file)) < 0)
			return -1;
	return cf_chunk_end(w);
}

/* CTXT: one block of contexts. */
static int write_context_block(struct cf_writer *w, const struct dbfile *db,
			       const struct dbfile_index *d, uint32_t first, uint32_t end)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_CONTEXTS) < 0 ||
	    cf_put_varint(w, d->ctx[first].first_child) < 0)
		return -1;
	for (uint32_t i = first; i < end; i++) {
		const struct dbfile_context *c = &d->ctx[i];
		if (cf_put_varint(w, i ? i - c->parent : 0) < 0 || cf_put_u8(w, c->kind) < 0 ||
		    cf_put_u8(w, c->flags) < 0 || cf_put_varint(w, c->nchildren) < 0 ||
		    cf_put_varint(w, ref(c->function)) < 0 || cf_put_varint(w, ref(c->file)) < 0 ||
		    cf_put_varint(w, c->line) < 0 || cf_put_varint(w, ref(c->module)) < 0 ||
		    cf_put_varint(w, c->addr) < 0 ||
		    cf_put_varint(w, c->outer == DBFILE_NONE ? 0 : (uint64_t)(i - c->outer) + 1) <
			    0)
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

/* SUMM: the sums over threads of every (context, metric) of one block. */
static int write_summary_block(struct cf_writer *w, const struct dbfile *db,
			       const struct dbfile_index *d, uint32_t first, uint32_t end)
{
	uint64_t total = 0;
	for (uint32_t i = first; i < end; i++)
		total += db->sum_start[d->order[i] + 1] - db->sum_start[d->order[i]];
	if (cf_chunk_begin(w, DBFILE_CHUNK_SUMMARY) < 0 || cf_put_varint(w, total) < 0)
		return -1;
	for (uint32_t i = first; i < end; i++) {
		uint32_t old = d->order[i];
		uint64_t a = db->sum_start[old], b = db->sum_start[old + 1];
		if (cf_put_varint(w, b - a) < 0)
			return -1;
		for (uint64_t j = a; j < b; j++) {
			const struct dbfile_stat *in = &db->sum_incl[j], *ex = &db->sum_excl[j];
			if (!in->count && !ex->count)
				return fth_error("context %u: a summary entry no thread has", old);
			if (put_metric(w, db->sum_metric, j, a) < 0 ||
			    put_f64(w, in->count ? in->sum : 0) < 0 ||
			    put_f64(w, ex->count ? ex->sum : 0) < 0)
				return -1;
		}
	}
	return cf_chunk_end(w);
}

/* STAT: the other statistics of one block. */
static int write_stat_block(struct cf_writer *w, const struct dbfile *db, const struct dbfile_index *d,
			    uint32_t first, uint32_t end)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_STATS) < 0)
		return -1;
	for (uint32_t i = first; i < end; i++) {
		uint32_t old = d->order[i];
		for (uint64_t j = db->sum_start[old]; j < db->sum_start[old + 1]; j++)
			if (put_stat(w, &db->sum_incl[j]) < 0 || put_stat(w, &db->sum_excl[j]) < 0)
				return -1;
	}
	return cf_chunk_end(w);
}

static int put_list(struct cf_writer *w, const uint32_t *list, uint32_t a, uint32_t b)
{
	if (cf_put_varint(w, b - a) < 0)
		return -1;
	for (uint32_t i = a; i < b; i++)
		if (cf_put_varint(w, i == a ? list[i] : list[i] - list[i - 1] - 1) < 0)
			return -1;
	return 0;
}

/* FLST: the two lists of contexts of every function of one block of functions. */
static int write_list_block(struct cf_writer *w, const struct dbfile *db,
			    const struct dbfile_index *d, uint32_t first, uint32_t end)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_FUNCTION_LISTS) < 0)
		return -1;
	for (uint32_t f = first; f < end; f++)
		if (put_list(w, d->fl_list, d->fl_start[f], d->fl_start[f + 1]) < 0 ||
		    put_list(w, d->inl_list, d->inl_start[f], d->inl_start[f + 1]) < 0)
			return -1;
	return cf_chunk_end(w);
}

static int write_flat(struct cf_writer *w, uint32_t id, const struct dbfile_flat *fl)
{
	if (cf_chunk_begin(w, id) < 0 || cf_put_varint(w, fl->nvalues) < 0)
		return -1;
	for (uint32_t i = 0; i < fl->nrows; i++) {
		uint64_t a = fl->start[i], b = fl->start[i + 1];
		if (cf_put_varint(w, b - a) < 0)
			return -1;
		for (uint64_t j = a; j < b; j++)
			if (put_metric(w, fl->metric, j, a) < 0 || put_f64(w, fl->incl[j]) < 0 ||
			    put_f64(w, fl->excl[j]) < 0)
				return -1;
	}
	return cf_chunk_end(w);
}

static int write_summary_file(struct cf_writer *w, const struct dbfile *db,
			      const struct dbfile_index *d)
{
	if (write_info(w, db, d) < 0 ||
	    cf_put_string_table(w, DBFILE_CHUNK_STRINGS, db->strings, db->nstrings) < 0 ||
	    write_modules(w, db) < 0 || write_functions(w, db, d) < 0 || write_groups(w, d) < 0 ||
	    write_metrics(w, db) < 0 || write_threads(w, db) < 0 || write_flat(w, DBFILE_CHUNK_FLAT, &d->flat) < 0 ||
	    write_flat(w, DBFILE_CHUNK_GROUP_FLAT, &d->group_flat) < 0 ||
	    write_flat(w, DBFILE_CHUNK_MODULE_FLAT, &d->module_flat) < 0)
		return -1;
	/* The blocked chunks, each kind in turn: contexts, sums, statistics, function lists. */
	static int (*const write_block[])(struct cf_writer *, const struct dbfile *,
					  const struct dbfile_index *, uint32_t, uint32_t) = {
		write_context_block, write_summary_block, write_stat_block, write_list_block
	};
	for (size_t k = 0; k < sizeof(write_block) / sizeof(write_block[0]); k++) {
		bool functions = write_block[k] == write_list_block;
		uint32_t n = functions ? d->nf : d->n, block = functions ? d->list_block : d->block;
		for (uint32_t first = 0; first < n; first += block)
			if (write_block[k](w, db, d, first, dbfile_block_end(first, block, n)) < 0)
				return -1;
	}
	return 0;
}

/* ---- threads.fdb ---- */

/*
 * A value of threads.fdb: a non-negative integer below 2^53 as the varint 2 x value, anything
 * else as the varint 1 and then its fixed64 bits (doc/formats.md 8.7).
 */
static inline size_t put_number(uint8_t *p, double d)
{
	if (d >= 0 && d < 9007199254740992.0 && d == (double)(uint64_t)d)
		return le_put_varint(p, (uint64_t)d << 1);
	p[0] = 1;
	le_put64(p + 1, le_f64_bits(d));
	return 9;
}

static void buf_number(struct buf *b, double d)
{
	uint8_t *p = buf_reserve(b, 9);
	b->len += put_number(p, d);
}

/* The fixed64 part of a number of the spool, through the stream. */
static int get_number_tail(struct cf_stream *s, double *d)
{
	uint64_t u;
	if (cf_get_u64(s, &u) < 0)
		return -1;
	*d = le_bits_f64(u);
	return 0;
}

/* One value of a thread, in the new numbering, for sorting. */
struct tvalue {
	uint64_t key; /* context << MBITS | metric, MBITS the bits of the largest metric */
	double incl, excl;
};

/* Bits of the metric part of a key: enough for NMETRICS - 1. */
static unsigned metric_bits(uint32_t nmetrics)
{
	unsigned b = 0;
	while (b < 16 && (nmetrics - 1) >> b)
		b++;
	return b;
}

#define KEY_CTX(k, mbits) ((uint32_t)((k) >> (mbits)))
#define KEY_METRIC(k, mbits) ((uint16_t)((k) & ((1u << (mbits)) - 1)))

/* Sort *V (N values) by key below MAXKEY: LSD radix, 11-bit digits, through *TMP (as large). */
static void sort_values(struct tvalue **v, struct tvalue **tmp, uint64_t n, uint64_t maxkey)
{
	uint64_t count[2048];
	struct tvalue *a = *v, *b = *tmp;
	for (unsigned shift = 0; shift < 64 && (maxkey >> shift); shift += 11) {
		memset(count, 0, sizeof(count));
		for (uint64_t i = 0; i < n; i++)
			count[(a[i].key >> shift) & 2047]++;
		uint64_t at = 0;
		for (unsigned k = 0; k < 2048; k++) {
			uint64_t c = count[k];
			count[k] = at;
			at += c;
		}
		for (uint64_t i = 0; i < n; i++)
			b[count[(a[i].key >> shift) & 2047]++] = a[i];
		struct tvalue *t = a;
		a = b;
		b = t;
	}
	*v = a;
	*tmp = b;
}

/* The values of one thread, growing arrays. */
struct tbuf {
	struct tvalue *v, *tmp;
	uint64_t n, cap;
};

/* The state of one thread that converts: compressor, buffers, accumulators. */
struct converter {
	const struct dbfile *db;
	const struct dbfile_index *d;
	unsigned mbits;
	struct piece_codec codec;
	struct buf raw, pieces;
	struct dbfile_flat_acc acc;
	struct tbuf tb;
	uint64_t *off; /* the offsets of a group's pieces */
};

/* The raw bytes of one flat profile: entries, then per row its count and entries. */
static void buf_flat(struct buf *b, const struct dbfile_flat *fl)
{
	buf_put_varint(b, fl->nvalues);
	for (uint32_t r = 0; r < fl->nrows; r++) {
		uint32_t a = fl->start[r], e = fl->start[r + 1];
		buf_put_varint(b, e - a);
		for (uint32_t j = a; j < e; j++) {
			buf_put_varint(b, j == a ? fl->metric[j]
						 : fl->metric[j] - fl->metric[j - 1] - 1);
			buf_number(b, fl->incl[j]);
			buf_number(b, fl->excl[j]);
		}
	}
}

/*
 * One thread's pieces (NVALUES values sorted) into OUT, their offsets (from the chunk's start,
 * less BASE) into OFF: one piece per block of contexts, then one of the flat profiles.
 */
static int encode_thread(struct converter *cv, const struct tvalue *v, uint64_t nvalues,
			 struct buf *out, uint64_t *off)
{
	const struct dbfile_index *d = cv->d;
	uint64_t i = 0;
	for (uint32_t b = 0; b < d->nblocks; b++) {
		off[b] = out->len;
		uint32_t first = b * d->block, end = dbfile_block_end(first, d->block, d->n);
		uint64_t k = i;
		while (k < nvalues && KEY_CTX(v[k].key, cv->mbits) < end)
			k++;
		if (k == i)
			continue;
		buf_reset(&cv->raw);
		buf_put_varint(&cv->raw, k - i);
		uint32_t prev = first;
		bool started = false;
		while (i < k) {
			uint32_t c = KEY_CTX(v[i].key, cv->mbits);
			uint64_t e = i;
			while (e < k && KEY_CTX(v[e].key, cv->mbits) == c)
				e++;
			/* Room for the record: two varints, then per entry a varint, two numbers.
			 */
			uint8_t *p = buf_reserve(&cv->raw, 2 * LE_VARINT_MAX + (e - i) * 30);
			uint8_t *p0 = p;
			p += le_put_varint(p, started ? c - prev - 1 : c - first);
			p += le_put_varint(p, e - i);
			started = true;
			for (uint64_t j = i; j < e; j++) {
				uint16_t m = KEY_METRIC(v[j].key, cv->mbits);
				p += le_put_varint(
					p,
					j == i ? m : m - KEY_METRIC(v[j - 1].key, cv->mbits) - 1);
				p += put_number(p, v[j].incl);
				p += put_number(p, v[j].excl);
			}
			cv->raw.len += (size_t)(p - p0);
			prev = c;
			i = e;
		}
		if (piece_put(&cv->codec, cv->raw.data, cv->raw.len, out) < 0)
			return -1;
	}
	off[d->nblocks] = out->len;
	dbfile_flat_acc_clear(&cv->acc, cv->db, d);
	for (uint64_t j = 0; j < nvalues; j++)
		dbfile_flat_acc_add(&cv->acc, cv->db, d, KEY_CTX(v[j].key, cv->mbits),
			KEY_METRIC(v[j].key, cv->mbits),
			v[j].incl, v[j].excl);
	struct dbfile_flat fl[3];
	dbfile_flat_acc_finish(&cv->acc, cv->db, d, &fl[0], &fl[1], &fl[2]);
	buf_reset(&cv->raw);
	for (int k = 0; k < 3; k++) {
		buf_flat(&cv->raw, &fl[k]);
		dbfile_flat_release(&fl[k]);
	}
	return piece_put(&cv->codec, cv->raw.data, cv->raw.len, out);
}

static inline int spool_number(struct cf_stream *s, double *d)
{
	uint64_t u;
	if (cf_next_varint(s, &u) < 0)
		return -1;
	if (!(u & 1)) {
		*d = (double)(u >> 1);
		return 0;
	}
	if (u != 1)
		return cf_stream_error(s, "bad value tag %llu", (unsigned long long)u);
	if (likely(s->end - s->p >= 8)) {
		*d = le_bits_f64(le_get64(s->p));
		s->p += 8;
		return 0;
	}
	return get_number_tail(s, d);
}

/* One thread's values from the spool, renumbered and sorted, into B. */
static int spool_thread(struct cf_stream *s, const struct dbfile *db, const struct dbfile_index *d,
			const struct dbfile_part_maps *maps, unsigned mbits, uint32_t t,
			struct tbuf *b)
{
	uint64_t idx, n;
	if (cf_next_varint(s, &idx) < 0 || cf_next_varint(s, &n) < 0)
		return -1;
	if (idx != t || n > s->e->raw / 4)
		return cf_stream_error(s, "thread %llu where thread %u was expected",
				       (unsigned long long)idx, t);
	if (n > b->cap) {
		b->cap = n;
		b->v = xreallocarray(b->v, n, sizeof(*b->v));
		b->tmp = xreallocarray(b->tmp, n, sizeof(*b->tmp));
	}
	int64_t ctx = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t delta, metric;
		struct tvalue *x = &b->v[i];
		if (cf_next_varint(s, &delta) < 0 || cf_next_varint(s, &metric) < 0 ||
		    spool_number(s, &x->incl) < 0 || spool_number(s, &x->excl) < 0)
			return -1;
		ctx += le_unzigzag(delta);
		int64_t c = ctx;
		if (maps && ctx >= 0 && ctx < maps->nctx && metric < maps->nmetrics) {
			c = maps->ctx[ctx];
			metric = maps->metric[metric];
		} else if (maps) {
			c = -1;
		}
		if (c < 0 || c >= d->n || metric >= d->nm)
			return cf_stream_error(
				s, "thread %u: context %lld or metric %llu out of range", t,
				(long long)ctx, (unsigned long long)metric);
		x->key = (uint64_t)d->newid[c] << mbits | metric;
		if (maps)
			continue; /* the statistics are being made from these values */
		uint32_t j = db->sum_start[c], end = db->sum_start[c + 1];
		while (j < end && db->sum_metric[j] != metric)
			j++;
		if (j == end)
			return cf_stream_error(
				s,
				"thread %u: context %lld, metric %llu has no summary "
				"entry",
				t, (long long)ctx, (unsigned long long)metric);
	}
	sort_values(&b->v, &b->tmp, n, (uint64_t)d->n << mbits);
	for (uint64_t i = 1; i < n; i++)
		if (b->v[i].key == b->v[i - 1].key)
			return cf_stream_error(s, "thread %u: context %u, metric %u twice", t,
					       d->order[KEY_CTX(b->v[i].key, mbits)],
					       KEY_METRIC(b->v[i].key, mbits));
	b->n = n;
	return 0;
}

static int write_thread_info(struct cf_writer *w, const struct dbfile *db,
			     const struct dbfile_index *d)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_THREAD_INFO) < 0 ||
	    cf_field_varint(w, TINF_NTHREADS, db->nthreads) < 0 ||
	    cf_field_varint(w, TINF_GROUP, db->thread_group) < 0 ||
	    cf_field_varint(w, TINF_BLOCK, d->block) < 0 ||
	    cf_field_varint(w, TINF_NCONTEXTS, d->n) < 0 || cf_record_end(w) < 0)
		return -1;
	return cf_chunk_end(w);
}

/* The spool's compression level and threads per chunk (its TINF chunk). */
static int spool_info(struct cf_reader *r, int *level, uint32_t *group)
{
	uint8_t *data;
	size_t len;
	const struct cf_entry *e = cf_find(r, DBFILE_CHUNK_THREAD_INFO, 0);
	if (!e || cf_read_chunk(r, e, &data, &len) < 0)
		return fth_error("%s: no TINF chunk", r->path);
	const uint8_t *p = data, *end = data + len;
	uint64_t tag, v;
	int rc = 0;
	*level = -1;
	*group = 0;
	while (rc == 0 && le_get_varint(&p, end, &tag) == 0 && tag != 0) {
		if ((tag & 3) != CF_WIRE_VARINT || le_get_varint(&p, end, &v) < 0)
			rc = -1;
		else if (tag >> 2 == TINF_LEVEL && v <= 22)
			*level = (int)v;
		else if (tag >> 2 == TINF_GROUP && v >= 1 && v <= UINT32_MAX)
			*group = (uint32_t)v;
	}
	free(data);
	if (rc < 0 || *level < 0 || *group == 0)
		return fth_error("%s: bad TINF chunk", r->path);
	return 0;
}

/* One converter per thread that converts: compressor, buffers, accumulators. */
static int converter_init(struct converter *cv, const struct dbfile *db,
			  const struct dbfile_index *d, int level)
{
	memset(cv, 0, sizeof(*cv));
	cv->db = db;
	cv->d = d;
	cv->codec.level = level;
	cv->mbits = metric_bits(d->nm);
	buf_init(&cv->raw);
	buf_init(&cv->pieces);
	dbfile_flat_acc_init(&cv->acc, db, d);
	cv->off = xcalloc((size_t)db->thread_group * (d->nblocks + 1) + 1, sizeof(uint64_t));
	return 0;
}

static void converter_release(struct converter *cv)
{
	free(cv->tb.v);
	free(cv->tb.tmp);
	free(cv->off);
	dbfile_flat_acc_release(&cv->acc);
	buf_release(&cv->raw);
	buf_release(&cv->pieces);
	piece_codec_release(&cv->codec);
}

/*
 * The TVAL chunk of thread group G (spool chunk G holds the same threads) into OUT: the
 * offsets of the pieces, then the pieces.
 */
static int convert_group(struct converter *cv, struct cf_reader *r, uint32_t g, struct buf *out)
{
	const struct dbfile *db = cv->db;
	uint32_t group = db->thread_group, g0 = g * group, per = cv->d->nblocks + 1;
	uint32_t k = db->nthreads - g0 < group ? db->nthreads - g0 : group;
	const struct cf_entry *e = cf_find(r, DBFILE_CHUNK_THREAD_VALUES, g);
	if (!e)
		return fth_error("%s: no chunk for thread %u", r->path, g0);
	struct cf_stream s;
	if (cf_stream_open(r, e, &s) < 0)
		return -1;
	buf_reset(&cv->pieces);
	for (uint32_t i = 0; i < k; i++)
		if (spool_thread(&s, db, cv->d, NULL, cv->mbits, g0 + i, &cv->tb) < 0 ||
		    encode_thread(cv, cv->tb.v, cv->tb.n, &cv->pieces, cv->off + (size_t)i * per) <
			    0)
			goto fail;
	if (cf_need(&s, 1) != 0) {
		cf_stream_error(&s, "more threads than announced");
		goto fail;
	}
	if (cf_stream_finish(&s) < 0)
		return -1;
	uint64_t base = ((uint64_t)k * per + 1) * 8;
	cv->off[(size_t)k * per] = cv->pieces.len;
	buf_reset(out);
	for (size_t i = 0; i <= (size_t)k * per; i++)
		buf_put_u64(out, base + cv->off[i]);
	buf_add(out, cv->pieces.data, cv->pieces.len);
	return 0;
fail:
	cf_stream_free(&s);
	return -1;
}

static int put_chunk(struct cf_writer *w, const struct buf *chunk)
{
	if (cf_chunk_begin(w, DBFILE_CHUNK_THREAD_VALUES) < 0 ||
	    cf_put(w, chunk->data, chunk->len) < 0 || cf_chunk_end(w) < 0)
		return -1;
	return 0;
}

/*
 * The groups converted by worker threads, written in order by the caller's: a worker takes
 * the next group unless it is WINDOW groups ahead of the writing, so that memory stays bounded.
 */
struct pool {
	struct cf_reader *r;
	const struct dbfile *db;
	const struct dbfile_index *d;
	int level;
	uint32_t ngroups, next, written, window;
	struct buf *chunk;
	bool *ready;
	bool failed;
	char *err;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

static void *convert_worker(void *arg)
{
	struct pool *p = arg;
	struct converter cv;
	int init = converter_init(&cv, p->db, p->d, p->level);
	pthread_mutex_lock(&p->lock);
	if (init < 0) {
		if (!p->failed)
			p->err = xstrdup(fth_errmsg());
		p->failed = true;
		pthread_cond_broadcast(&p->cond);
	}
	for (;;) {
		while (!p->failed && p->next < p->ngroups && p->next >= p->written + p->window)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->failed || p->next >= p->ngroups)
			break;
		uint32_t g = p->next++;
		pthread_mutex_unlock(&p->lock);
		struct buf out;
		buf_init(&out);
		int rc = convert_group(&cv, p->r, g, &out);
		pthread_mutex_lock(&p->lock);
		if (rc < 0) {
			if (!p->failed)
				p->err = xstrdup(fth_errmsg());
			p->failed = true;
			buf_release(&out);
		} else {
			p->chunk[g] = out;
			p->ready[g] = true;
		}
		pthread_cond_broadcast(&p->cond);
	}
	pthread_mutex_unlock(&p->lock);
	converter_release(&cv);
	return NULL;
}

static int convert_parallel(struct cf_reader *r, struct cf_writer *w, const struct dbfile *db,
			    const struct dbfile_index *d, int level, uint32_t ngroups, uint32_t jobs)
{
	struct pool p = { .r = r, .db = db, .d = d, .level = level, .ngroups = ngroups,
			  .window = 2 * jobs };
	p.chunk = xcalloc(ngroups, sizeof(*p.chunk));
	p.ready = xcalloc(ngroups, sizeof(*p.ready));
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	pthread_t *tid = xcalloc(jobs, sizeof(*tid));
	uint32_t started = 0;
	for (; started < jobs; started++)
		if (pthread_create(&tid[started], NULL, convert_worker, &p) != 0)
			break;
	int rc = 0;
	if (!started)
		rc = fth_error("cannot start a thread");
	for (uint32_t g = 0; rc == 0 && g < ngroups; g++) {
		pthread_mutex_lock(&p.lock);
		while (!p.ready[g] && !p.failed)
			pthread_cond_wait(&p.cond, &p.lock);
		bool have = p.ready[g];
		pthread_mutex_unlock(&p.lock);
		if (!have || put_chunk(w, &p.chunk[g]) < 0)
			rc = -1;
		pthread_mutex_lock(&p.lock);
		buf_release(&p.chunk[g]);
		p.ready[g] = false;
		p.written = g + 1;
		if (rc < 0 && !p.failed) {
			p.err = xstrdup(fth_errmsg());
			p.failed = true;
		}
		pthread_cond_broadcast(&p.cond);
		pthread_mutex_unlock(&p.lock);
	}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (p.failed) {
		rc = fth_error("%s", p.err);
		for (uint32_t g = 0; g < ngroups; g++)
			if (p.ready[g])
				buf_release(&p.chunk[g]);
	}
	free(p.err);
	free(tid);
	free(p.chunk);
	free(p.ready);
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	return rc;
}

/* threads.fdb from the spool R: one TVAL chunk per group of threads, stored. */
static int convert_threads(struct cf_reader *r, struct cf_writer *w, const struct dbfile *db,
			   const struct dbfile_index *d)
{
	int level = 0;
	uint32_t spool_group = 0;
	if (spool_info(r, &level, &spool_group) < 0)
		return -1;
	uint32_t group = db->thread_group;
	if (group == 0 || spool_group != group)
		return fth_error("%s: groups of %u threads, but the database's are of %u", r->path,
				 spool_group, group);
	uint32_t ngroups = (uint32_t)(((uint64_t)db->nthreads + group - 1) / group);
	if ((ngroups && !cf_find(r, DBFILE_CHUNK_THREAD_VALUES, ngroups - 1)) ||
	    cf_find(r, DBFILE_CHUNK_THREAD_VALUES, ngroups))
		return fth_error("%s: the values of another number of threads than %u", r->path,
				 db->nthreads);
	if (write_thread_info(w, db, d) < 0)
		return -1;
	uint32_t jobs = FTH_MIN(db->jobs, ngroups);
	if (jobs > 1)
		return convert_parallel(r, w, db, d, level, ngroups, jobs);
	struct converter cv;
	if (converter_init(&cv, db, d, level) < 0) {
		converter_release(&cv);
		return -1;
	}
	struct buf chunk;
	buf_init(&chunk);
	int rc = 0;
	for (uint32_t g = 0; rc == 0 && g < ngroups; g++)
		if (convert_group(&cv, r, g, &chunk) < 0 || put_chunk(w, &chunk) < 0)
			rc = -1;
	buf_release(&chunk);
	converter_release(&cv);
	return rc;
}

/*
 * The end of writing PATH on FD, RC 0 when all went well so far: synced and closed, or removed
 * after any failure (the message then names PATH).  PATH and the workspace WS are freed.
 */
static int close_file(int fd, char *path, void *ws, int rc)
{
	if (dbfile_end(&fd, path, rc, true) < 0) {
		fth_error_prefix("%s", path);
		rc = -1;
	}
	free(ws);
	free(path);
	return rc;
}

struct threads_args {
	const struct dbfile *db;
	const struct dbfile_index *d;
};

static int convert_spool(struct cf_reader *r, struct cf_writer *w, void *arg)
{
	const struct threads_args *a = arg;
	return convert_threads(r, w, a->db, a->d);
}

/* DIR/threads.fdb from DIR/threads.spool when there is one; the spool removed. */
static int write_threads_file(const char *dir, const struct dbfile *db, const struct dbfile_index *d)
{
	struct threads_args a = { db, d };
	return dbfile_convert_spool(dir, DBFILE_SPOOL, DBFILE_SPOOL_MAGIC, "thread spool",
				    DBFILE_THREADS, convert_spool, &a);
}

/* ---- parts: the converted values of a share of the threads (prof-mpi) ---- */

/*
 * A part file: PART_MAGIC, u64 threads, u64 blocks; then per thread u64 N (its bytes), u64
 * offsets of its BLOCKS + 1 pieces from the start of its bytes (the last, its flat piece),
 * and its N bytes: the pieces encode_thread() makes, as they go into a TVAL chunk.
 */
#define PART_MAGIC "FTHPART1"

static int write_full(int fd, const char *path, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return fth_error_errno(errno, "%s: cannot write", path);
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int dbfile_part_write(const char *spool_dir, const struct dbfile *db, const struct dbfile_index *d,
		      const struct dbfile_part_maps *maps, uint32_t nthreads, int level,
		      const char *path)
{
	char *from = xpath_join(spool_dir, DBFILE_SPOOL);
	struct cf_reader r;
	int rc = cf_open(&r, from, DBFILE_SPOOL_MAGIC, "thread spool", DBFILE_MAJOR);
	free(from);
	if (rc < 0)
		return -1;
	int spooled = 0;
	uint32_t group = 0;
	int fd = -1;
	struct converter cv;
	bool cv_init = false;
	struct buf head;
	buf_init(&head);
	rc = -1;
	if (spool_info(&r, &spooled, &group) < 0)
		goto out;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		fth_error_errno(errno, "%s: cannot create", path);
		goto out;
	}
	converter_init(&cv, db, d, level);
	cv_init = true;
	buf_add(&head, PART_MAGIC, 8);
	buf_put_u64(&head, nthreads);
	buf_put_u64(&head, d->nblocks);
	if (write_full(fd, path, head.data, head.len) < 0)
		goto out;
	uint32_t per = d->nblocks + 1;
	for (uint32_t g0 = 0; g0 < nthreads; g0 += group) {
		const struct cf_entry *e = cf_find(&r, DBFILE_CHUNK_THREAD_VALUES, g0 / group);
		struct cf_stream st;
		if (!e) {
			fth_error("%s: no chunk for thread %u", r.path, g0);
			goto out;
		}
		if (cf_stream_open(&r, e, &st) < 0)
			goto out;
		for (uint32_t t = g0; t < nthreads && t < g0 + group; t++) {
			buf_reset(&cv.pieces);
			if (spool_thread(&st, db, d, maps, cv.mbits, t, &cv.tb) < 0 ||
			    encode_thread(&cv, cv.tb.v, cv.tb.n, &cv.pieces, cv.off) < 0) {
				cf_stream_free(&st);
				goto out;
			}
			buf_reset(&head);
			buf_put_u64(&head, cv.pieces.len);
			for (uint32_t b = 0; b < per; b++)
				buf_put_u64(&head, cv.off[b]);
			if (write_full(fd, path, head.data, head.len) < 0 ||
			    write_full(fd, path, cv.pieces.data, cv.pieces.len) < 0) {
				cf_stream_free(&st);
				goto out;
			}
		}
		if (cf_stream_finish(&st) < 0)
			goto out;
	}
	rc = 0;
out:
	if (cv_init)
		converter_release(&cv);
	buf_release(&head);
	cf_close(&r);
	if (fd >= 0 && close(fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: cannot close", path);
	if (rc < 0 && fd >= 0)
		unlink(path);
	return rc;
}

/* Reading the parts in order, one thread after another. */
struct parts_reader {
	char *const *paths;
	uint32_t nparts, part, left; /* the part open, threads left in it */
	int fd;
	uint64_t pos;
	uint32_t nblocks;
	uint64_t *off; /* the thread's NBLOCKS + 1 offsets */
	uint64_t len;  /* and its bytes, at POS */
};

static void parts_open(struct parts_reader *pr, char *const *paths, uint32_t nparts,
		       uint32_t nblocks)
{
	memset(pr, 0, sizeof(*pr));
	pr->paths = paths;
	pr->nparts = nparts;
	pr->fd = -1;
	pr->nblocks = nblocks;
	pr->off = xcalloc((size_t)nblocks + 1, sizeof(*pr->off));
	pr->part = UINT32_MAX;
}

static void parts_close(struct parts_reader *pr)
{
	if (pr->fd >= 0)
		close(pr->fd);
	pr->fd = -1;
	free(pr->off);
	pr->off = NULL;
}

/* The next thread's offsets and length; 0, 1 when there is none, or -1 with a message. */
static int parts_next(struct parts_reader *pr)
{
	const char *path;
	while (pr->left == 0) {
		if (pr->fd >= 0)
			close(pr->fd);
		pr->fd = -1;
		pr->part = pr->part == UINT32_MAX ? 0 : pr->part + 1;
		if (pr->part >= pr->nparts)
			return 1;
		path = pr->paths[pr->part];
		pr->fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (pr->fd < 0)
			return fth_error_errno(errno, "%s: cannot open", path);
		uint8_t h[24];
		if (cf_pread(pr->fd, path, h, sizeof(h), 0) < 0)
			return -1;
		if (memcmp(h, PART_MAGIC, 8) != 0 || le_get64(h + 16) != pr->nblocks ||
		    le_get64(h + 8) > UINT32_MAX)
			return fth_error("%s: not a part of this database", path);
		pr->left = (uint32_t)le_get64(h + 8);
		pr->pos = sizeof(h);
	}
	path = pr->paths[pr->part];
	size_t n = ((size_t)pr->nblocks + 2) * 8;
	uint8_t *h = xmalloc(n);
	int rc = cf_pread(pr->fd, path, h, n, pr->pos);
	if (rc == 0) {
		pr->len = le_get64(h);
		for (uint32_t b = 0; b <= pr->nblocks; b++) {
			pr->off[b] = le_get64(h + 8 * (b + 1));
			if (pr->off[b] > pr->len || (b && pr->off[b] < pr->off[b - 1]))
				rc = fth_error("%s: a thread's pieces out of range", path);
		}
	}
	free(h);
	pr->pos += n;
	pr->left--;
	return rc;
}

/* The bytes of the thread parts_next() gave, appended to B; then the next one can be read. */
static int parts_bytes(struct parts_reader *pr, struct buf *b)
{
	int rc = cf_pread(pr->fd, pr->paths[pr->part], buf_reserve(b, pr->len), pr->len,
			  pr->pos);
	if (rc == 0)
		b->len += pr->len;
	return rc;
}

static void parts_skip(struct parts_reader *pr)
{
	pr->pos += pr->len;
}

struct shift {
	void (*value)(void *, uint32_t, uint16_t, double, double);
	void *arg;
	uint32_t first;
};

static void shifted_value(void *arg, uint32_t at, uint16_t metric, double incl, double excl)
{
	const struct shift *sh = arg;
	sh->value(sh->arg, sh->first + at, metric, incl, excl);
}

int dbfile_parts_values(char *const *parts, uint32_t nparts, const struct dbfile_index *d,
			uint32_t b0, uint32_t b1,
			void (*value)(void *arg, uint32_t ctx, uint16_t metric, double incl,
				      double excl),
			void *arg)
{
	/*
	 * Block by block, every thread's piece of the block: what the values go to stays in the
	 * cache while the threads pass.  First where each thread's pieces of B0..B1 are.
	 */
	uint32_t span = b1 - b0 + 1, nthreads = 0, athreads = 0;
	uint64_t *off = NULL; /* per thread SPAN offsets in its part's file */
	uint32_t *part_of = NULL;
	int *fd = xcalloc(nparts ? nparts : 1, sizeof(*fd));
	for (uint32_t p = 0; p < nparts; p++)
		fd[p] = -1;
	struct parts_reader pr;
	parts_open(&pr, parts, nparts, d->nblocks);
	int rc;
	while ((rc = parts_next(&pr)) == 0) {
		if (nthreads == athreads) {
			athreads = athreads ? athreads * 2 : 64;
			off = xreallocarray(off, (size_t)athreads * span, sizeof(*off));
			part_of = xreallocarray(part_of, athreads, sizeof(*part_of));
		}
		for (uint32_t k = 0; k < span; k++)
			off[(size_t)nthreads * span + k] = pr.pos + pr.off[b0 + k];
		part_of[nthreads++] = pr.part;
		if (fd[pr.part] < 0) {
			fd[pr.part] = dup(pr.fd);
			if (fd[pr.part] < 0) {
				rc = fth_error_errno(errno, "%s", parts[pr.part]);
				break;
			}
		}
		parts_skip(&pr);
	}
	parts_close(&pr);
	struct piece_codec pc = { 0 };
	struct buf bytes;
	buf_init(&bytes);
	for (uint32_t b = b0; rc >= 0 && b < b1; b++) {
		uint32_t first = b * d->block, nc = dbfile_block_end(first, d->block, d->n) - first;
		/* contexts from the block's first, in the new numbering */
		struct shift sh = { value, arg, first };
		struct dbfile_piece_sink sink = { NULL, shifted_value, &sh };
		for (uint32_t t = 0; rc >= 0 && t < nthreads; t++) {
			uint64_t a = off[(size_t)t * span + (b - b0)], e = off[(size_t)t * span + (b - b0) + 1];
			if (a == e)
				continue;
			const uint8_t *raw;
			size_t len;
			buf_reset(&bytes);
			if (cf_pread(fd[part_of[t]], parts[part_of[t]], buf_reserve(&bytes, e - a),
				      (size_t)(e - a), a) < 0 ||
			    piece_get(&pc, bytes.data, (size_t)(e - a), &raw, &len) < 0 ||
			    dbfile_piece_values(raw, len, nc, d->nm, &sink) < 0)
				rc = fth_error_prefix("%s: thread %u: piece %u", parts[part_of[t]], t, b);
		}
	}
	for (uint32_t p = 0; p < nparts; p++)
		if (fd[p] >= 0)
			close(fd[p]);
	free(fd);
	free(off);
	free(part_of);
	piece_codec_release(&pc);
	buf_release(&bytes);
	return rc < 0 ? -1 : 0;
}

/* threads.fdb's TVAL chunks from the parts: the pieces of each group of threads, in order. */
static int convert_parts(struct cf_writer *w, const struct dbfile *db, const struct dbfile_index *d,
			 char *const *parts, uint32_t nparts)
{
	if (write_thread_info(w, db, d) < 0)
		return -1;
	struct parts_reader pr;
	parts_open(&pr, parts, nparts, d->nblocks);
	uint32_t group = db->thread_group, per = d->nblocks + 1;
	struct buf chunk, bytes;
	buf_init(&chunk);
	buf_init(&bytes);
	int rc = 0;
	for (uint32_t g0 = 0; rc == 0 && g0 < db->nthreads; g0 += group) {
		uint32_t k = db->nthreads - g0 < group ? db->nthreads - g0 : group;
		uint64_t base = ((uint64_t)k * per + 1) * 8, at = 0;
		buf_reset(&chunk);
		buf_reset(&bytes);
		for (uint32_t i = 0; rc == 0 && i < k; i++) {
			int got = parts_next(&pr);
			if (got != 0) {
				rc = got < 0 ? -1 : fth_error("%s: fewer threads than %u", parts[0],
							       db->nthreads);
				break;
			}
			for (uint32_t b = 0; b < per; b++)
				buf_put_u64(&chunk, base + at + pr.off[b]);
			rc = parts_bytes(&pr, &bytes);
			parts_skip(&pr);
			at += pr.len;
		}
		if (rc < 0)
			break;
		/* the offsets, then the pieces: one chunk, written in two puts */
		buf_put_u64(&chunk, base + at);
		if (cf_chunk_begin(w, DBFILE_CHUNK_THREAD_VALUES) < 0 ||
		    cf_put(w, chunk.data, chunk.len) < 0 || cf_put(w, bytes.data, bytes.len) < 0 ||
		    cf_chunk_end(w) < 0)
			rc = -1;
	}
	if (rc == 0 && parts_next(&pr) != 1)
		rc = fth_error("%s: more threads than %u", parts[0], db->nthreads);
	parts_close(&pr);
	buf_release(&chunk);
	buf_release(&bytes);
	return rc;
}

struct parts_args {
	const struct dbfile *db;
	const struct dbfile_index *d;
	char *const *parts;
	uint32_t nparts;
};

static int write_parts(struct cf_writer *w, const struct parts_args *a)
{
	return convert_parts(w, a->db, a->d, a->parts, a->nparts);
}

/* DIR/threads.fdb from the parts of A. */
static int write_threads_from_parts(const char *dir, const struct parts_args *a)
{
	char *path;
	int fd;
	void *ws;
	if (open_file(dir, DBFILE_THREADS, &path, &fd, &ws, 0) < 0)
		return -1;
	struct cf_writer w;
	bool written = cf_writer_open(&w, fd, path, DBFILE_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, 0,
				      ws, cf_writer_workspace_size(0)) >= 0 &&
		       write_parts(&w, a) >= 0 && cf_writer_finish(&w) >= 0;
	return close_file(fd, path, ws, written ? 0 : -1);
}

int dbfile_write_summary(const char *dir, const struct dbfile *db, int level)
{
	return dbfile_write_from_parts(dir, db, level, NULL, 0);
}

int dbfile_write_from_parts(const char *dir, const struct dbfile *db, int level,
			    char *const *parts, uint32_t nparts)
{
	struct dbfile_index d;
	if (dbfile_index_build(db, &d) < 0) {
		fth_error_prefix("%s/%s", dir, DBFILE_SUMMARY);
		return -1;
	}
	char *path;
	int fd;
	void *ws;
	if (open_file(dir, DBFILE_SUMMARY, &path, &fd, &ws, level) < 0) {
		dbfile_index_release(&d);
		return -1;
	}
	struct cf_writer w;
	bool written = cf_writer_open(&w, fd, path, DBFILE_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, level,
				      ws, cf_writer_workspace_size(level)) >= 0 &&
		       write_summary_file(&w, db, &d) >= 0 && cf_writer_finish(&w) >= 0;
	int rc = close_file(fd, path, ws, written ? 0 : -1);
	struct parts_args a = { db, &d, parts, nparts };
	if (rc == 0 && ((parts ? write_threads_from_parts(dir, &a) : write_threads_file(dir, db, &d)) < 0 ||
			dbtrace_write(dir, d.order, db->ncontexts, db->nthreads, DBTRACE_LEVEL) < 0)) {
		char *p = xpath_join(dir, DBFILE_SUMMARY);
		unlink(p);
		free(p);
		rc = -1;
	}
	dbfile_index_release(&d);
	return rc;
}

/* ---- the spool of per-thread values (the caller's numbering) ---- */

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
	if (level < 0 || level > 22)
		return fth_error("compression level %d out of range", level);
	if (open_file(dir, DBFILE_SPOOL, &w->path, &w->fd, &w->ws, level) < 0)
		return -1;
	w->nthreads = nthreads;
	w->group = group;
	if (cf_writer_open(&w->cf, w->fd, w->path, DBFILE_SPOOL_MAGIC, DBFILE_MAJOR, DBFILE_MINOR,
			   level, w->ws, cf_writer_workspace_size(level)) < 0 ||
	    cf_chunk_begin(&w->cf, DBFILE_CHUNK_THREAD_INFO) < 0 ||
	    cf_field_varint(&w->cf, TINF_GROUP, group) < 0 ||
	    cf_field_varint(&w->cf, TINF_LEVEL, (uint64_t)level) < 0 ||
	    cf_record_end(&w->cf) < 0 || cf_chunk_end(&w->cf) < 0) {
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
	bool written = (w->next % w->group == 0 || cf_chunk_end(&w->cf) >= 0) &&
		       cf_writer_finish(&w->cf) >= 0;
	return dbfile_end_spool(&w->fd, &w->path, &w->ws, written ? 0 : -1);
}

void dbfile_threads_abort(struct dbfile_thread_writer *w)
{
	dbfile_end_spool(&w->fd, &w->path, &w->ws, -1);
}
