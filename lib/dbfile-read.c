/* SPDX-License-Identifier: MIT */
/*
 * dbfile-read.c: reads and validates a database: summary.fdb at open but for its STAT chunks,
 * one block of statistics or one thread's values (threads.fdb) on demand.  Nothing is trusted:
 * counts are checked against the chunk's size before anything is allocated, every index
 * against its table.
 */
#include "compat.h"
#include "dbfile.h"
#include "error.h"
#include "le.h"
#include "mfile.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

enum { INFO_PROGRAM = 1, INFO_FLAGS = 2, INFO_GROUP = 3, INFO_STAT_BLOCK = 4 };
enum { MODS_PATH = 1, MODS_BUILD_ID = 2, MODS_FLAGS = 3 };
enum { METR_NAME = 1, METR_DESCRIPTION, METR_UNIT, METR_RATE_KIND, METR_RATE, METR_FLAGS,
       METR_PARENT, METR_THRESHOLD, METR_FORMULA, METR_KIND, METR_ENABLED, METR_RUNNING,
       METR_SAMPLES, METR_NTHREADS, METR_SCALE };
enum { THRD_FILE = 1, THRD_HOST, THRD_PROGRAM, THRD_PID, THRD_TID, THRD_INDEX, THRD_RANK,
       THRD_START, THRD_END };

#define MAX_STRING (16u << 20)
#define MAX_BUILD_ID 256

static int check_count(struct cf_stream *s, uint64_t n, uint64_t limit, unsigned min,
		       const char *what)
{
	if (n > limit || (min && n > s->e->raw / min))
		return cf_stream_error(s, "%llu %s cannot fit", (unsigned long long)n, what);
	return 0;
}

static int open_chunk(struct cf_reader *r, uint32_t id, struct cf_stream *s)
{
	char name[5];
	const struct cf_entry *e = cf_find(r, id, 0);
	if (!e)
		return fth_error("%s: no %s chunk", r->path, cf_id_name(id, name));
	if (cf_find(r, id, 1))
		return fth_error("%s: more than one %s chunk", r->path, cf_id_name(id, name));
	return cf_stream_open(r, e, s);
}

static int get_varint(struct cf_stream *s, unsigned wire, uint64_t *v)
{
	if (wire != CF_WIRE_VARINT)
		return cf_stream_error(s, "number field has type %u", wire);
	return cf_get_varint(s, v);
}

static int get_u32(struct cf_stream *s, uint32_t *v, uint64_t limit, const char *what)
{
	uint64_t x;
	if (cf_get_varint(s, &x) < 0)
		return -1;
	if (x > limit)
		return cf_stream_error(s, "%s %llu out of range", what, (unsigned long long)x);
	*v = (uint32_t)x;
	return 0;
}

/* A reference to an entry of a table of N: 0 = none, else index + 1. */
static int get_ref(struct cf_stream *s, uint32_t *v, uint32_t n, const char *what)
{
	uint64_t x;
	if (cf_get_varint(s, &x) < 0)
		return -1;
	if (x > n)
		return cf_stream_error(s, "%s %llu out of range", what, (unsigned long long)x);
	*v = x ? (uint32_t)(x - 1) : DBFILE_NONE;
	return 0;
}

static int get_str(struct cf_stream *s, unsigned wire, char **dst)
{
	if (wire != CF_WIRE_BYTES)
		return cf_stream_error(s, "string field has type %u", wire);
	char *str;
	if (cf_get_bytes(s, MAX_STRING, &str, NULL) < 0)
		return -1;
	free(*dst);
	*dst = str;
	return 0;
}

static int get_f64(struct cf_stream *s, double *d)
{
	uint64_t u;
	if (cf_get_u64(s, &u) < 0)
		return -1;
	*d = le_bits_f64(u);
	return 0;
}

/* A value of threads.fdb: varint 2 x integer, or varint 1 and fixed64 bits. */
static int get_number(struct cf_stream *s, double *d)
{
	uint64_t u;
	if (cf_get_varint(s, &u) < 0)
		return -1;
	if (!(u & 1)) {
		if ((u >> 1) >= (1ULL << 53))
			return cf_stream_error(s, "integer value %llu is too large",
					       (unsigned long long)(u >> 1));
		*d = (double)(u >> 1);
		return 0;
	}
	if (u != 1)
		return cf_stream_error(s, "bad value tag %llu", (unsigned long long)u);
	return get_f64(s, d);
}

static int finish(struct cf_stream *s)
{
	return cf_stream_finish(s);
}

static int read_info(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	if (open_chunk(r, DBFILE_CHUNK_INFO, &s) < 0)
		return -1;
	db->thread_group = 1;
	db->stat_block = DBFILE_STAT_BLOCK;
	for (;;) {
		unsigned f, wire;
		uint64_t v;
		if (cf_get_tag(&s, &f, &wire) < 0)
			goto fail;
		if (f == 0)
			break;
		if (f == INFO_PROGRAM) {
			if (get_str(&s, wire, &db->program) < 0)
				goto fail;
		} else if (f == INFO_FLAGS || f == INFO_GROUP || f == INFO_STAT_BLOCK) {
			if (get_varint(&s, wire, &v) < 0)
				goto fail;
			if (v > UINT32_MAX || (f != INFO_FLAGS && v == 0)) {
				cf_stream_error(&s, "field %u: %llu out of range", f,
						(unsigned long long)v);
				goto fail;
			}
			if (f == INFO_FLAGS)
				db->flags = (uint32_t)v;
			else if (f == INFO_GROUP)
				db->thread_group = (uint32_t)v;
			else
				db->stat_block = (uint32_t)v;
		} else if (cf_skip_field(&s, wire) < 0) {
			goto fail;
		}
	}
	if (!db->program)
		db->program = xstrdup("");
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_strings(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_STRINGS, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 1, 1, "strings") < 0)
		goto fail;
	db->strings = xcalloc(n ? n : 1, sizeof(char *));
	for (uint64_t i = 0; i < n; i++) {
		if (cf_get_bytes(&s, MAX_STRING, &db->strings[i], NULL) < 0)
			goto fail;
		db->nstrings = (uint32_t)i + 1;
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_modules(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_MODULES, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 1, 1, "modules") < 0)
		goto fail;
	db->modules = xcalloc(n ? n : 1, sizeof(*db->modules));
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_module *m = &db->modules[i];
		m->path = DBFILE_NONE;
		db->nmodules = (uint32_t)i + 1;
		for (;;) {
			unsigned f, wire;
			uint64_t v;
			if (cf_get_tag(&s, &f, &wire) < 0)
				goto fail;
			if (f == 0)
				break;
			if (f == MODS_BUILD_ID) {
				char *b = NULL;
				size_t len;
				if (wire != CF_WIRE_BYTES) {
					cf_stream_error(&s, "build-id field has type %u", wire);
					goto fail;
				}
				if (cf_get_bytes(&s, MAX_BUILD_ID, &b, &len) < 0)
					goto fail;
				free(m->build_id);
				m->build_id = len ? (uint8_t *)b : NULL;
				m->build_id_len = (uint32_t)len;
				if (!len)
					free(b);
			} else if (f == MODS_PATH || f == MODS_FLAGS) {
				if (get_varint(&s, wire, &v) < 0)
					goto fail;
				if (f == MODS_PATH) {
					if (v > db->nstrings) {
						cf_stream_error(&s, "module %llu: bad path",
								(unsigned long long)i);
						goto fail;
					}
					m->path = v ? (uint32_t)(v - 1) : DBFILE_NONE;
				} else {
					m->flags = (uint32_t)v;
				}
			} else if (cf_skip_field(&s, wire) < 0) {
				goto fail;
			}
		}
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_functions(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_FUNCTIONS, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 1, 5, "functions") < 0)
		goto fail;
	db->functions = xcalloc(n ? n : 1, sizeof(*db->functions));
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_function *f = &db->functions[i];
		if (get_ref(&s, &f->name, db->nstrings, "function name") < 0 ||
		    get_ref(&s, &f->module, db->nmodules, "function module") < 0 ||
		    get_ref(&s, &f->file, db->nstrings, "function file") < 0 ||
		    get_u32(&s, &f->line, UINT32_MAX, "function line") < 0 ||
		    cf_get_varint(&s, &f->addr) < 0)
			goto fail;
		if (f->name == DBFILE_NONE) {
			cf_stream_error(&s, "function %llu has no name", (unsigned long long)i);
			goto fail;
		}
		db->nfunctions = (uint32_t)i + 1;
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int metric_field(struct cf_stream *s, struct dbfile_metric *m, unsigned f, unsigned wire)
{
	uint64_t v;
	switch (f) {
	case METR_NAME: return get_str(s, wire, &m->name);
	case METR_DESCRIPTION: return get_str(s, wire, &m->description);
	case METR_FORMULA: return get_str(s, wire, &m->formula);
	case METR_THRESHOLD:
	case METR_SCALE:
		if (wire != CF_WIRE_FIXED64)
			return cf_stream_error(s, "floating-point field has type %u", wire);
		if (cf_get_u64(s, &v) < 0)
			return -1;
		if (f == METR_THRESHOLD)
			m->threshold = le_bits_f64(v);
		else
			m->scale = le_bits_f64(v);
		return 0;
	default: break;
	}
	if (f > METR_SCALE)
		return cf_skip_field(s, wire);
	if (get_varint(s, wire, &v) < 0)
		return -1;
	switch (f) {
	case METR_UNIT:
		if (v >= MFILE_UNIT_COUNT_)
			return cf_stream_error(s, "unknown unit %llu", (unsigned long long)v);
		m->unit = (uint8_t)v;
		break;
	case METR_RATE_KIND:
		if (v >= MFILE_RATE_COUNT_)
			return cf_stream_error(s, "unknown rate kind %llu", (unsigned long long)v);
		m->rate_kind = (uint8_t)v;
		break;
	case METR_KIND:
		if (v > DBFILE_METRIC_DERIVED)
			return cf_stream_error(s, "unknown metric kind %llu", (unsigned long long)v);
		m->kind = (uint8_t)v;
		break;
	case METR_RATE: m->rate = v; break;
	case METR_FLAGS:
	case METR_NTHREADS:
		if (v > UINT32_MAX)
			return cf_stream_error(s, "field %u: %llu out of range", f,
					       (unsigned long long)v);
		if (f == METR_FLAGS)
			m->flags = (uint32_t)v;
		else
			m->nthreads = (uint32_t)v;
		break;
	case METR_PARENT: {
		int64_t p = le_unzigzag(v);
		if (p < -1 || p >= MFILE_MAX_METRICS)
			return cf_stream_error(s, "parent metric %lld out of range", (long long)p);
		m->parent = (int32_t)p;
		break;
	}
	case METR_ENABLED: m->time_enabled = v; break;
	case METR_RUNNING: m->time_running = v; break;
	case METR_SAMPLES: m->samples = v; break;
	default: break;
	}
	return 0;
}

static int read_metrics(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_METRICS, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, MFILE_MAX_METRICS, 1, "metrics") < 0)
		goto fail;
	db->metrics = xcalloc(n ? n : 1, sizeof(*db->metrics));
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_metric *m = &db->metrics[i];
		m->parent = -1;
		m->threshold = NAN;
		m->scale = 1;
		db->nmetrics = (uint32_t)i + 1;
		for (;;) {
			unsigned f, wire;
			if (cf_get_tag(&s, &f, &wire) < 0)
				goto fail;
			if (f == 0)
				break;
			if (metric_field(&s, m, f, wire) < 0) {
				fth_error_prefix("metric %llu", (unsigned long long)i);
				goto fail;
			}
		}
		if (!m->name || !*m->name) {
			cf_stream_error(&s, "metric %llu has no name", (unsigned long long)i);
			goto fail;
		}
		if (!m->description)
			m->description = xstrdup("");
		if (!m->formula)
			m->formula = xstrdup("");
	}
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		int32_t p = db->metrics[i].parent;
		for (uint32_t steps = 0; p >= 0; steps++) {
			if ((uint32_t)p >= db->nmetrics || steps > db->nmetrics) {
				cf_stream_error(&s, "metric %u: bad parent chain", i);
				goto fail;
			}
			p = db->metrics[p].parent;
		}
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int thread_field(struct cf_stream *s, struct dbfile_thread *t, unsigned f, unsigned wire)
{
	uint64_t v;
	switch (f) {
	case THRD_FILE: return get_str(s, wire, &t->file);
	case THRD_HOST: return get_str(s, wire, &t->host);
	case THRD_PROGRAM: return get_str(s, wire, &t->program);
	default: break;
	}
	if (f > THRD_END)
		return cf_skip_field(s, wire);
	if (get_varint(s, wire, &v) < 0)
		return -1;
	switch (f) {
	case THRD_PID:
	case THRD_TID:
	case THRD_INDEX:
		if (v > UINT32_MAX)
			return cf_stream_error(s, "field %u: %llu out of range", f,
					       (unsigned long long)v);
		*(f == THRD_PID ? &t->pid : f == THRD_TID ? &t->tid : &t->thread_index) =
			(uint32_t)v;
		break;
	case THRD_RANK: {
		int64_t rank = le_unzigzag(v);
		if (rank < -1 || rank > INT32_MAX)
			return cf_stream_error(s, "rank %lld out of range", (long long)rank);
		t->rank = (int32_t)rank;
		break;
	}
	case THRD_START: t->start_ns = v; break;
	case THRD_END: t->end_ns = v; break;
	default: break;
	}
	return 0;
}

static int read_threads(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_THREADS, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 1, 1, "threads") < 0)
		goto fail;
	db->threads = xcalloc(n ? n : 1, sizeof(*db->threads));
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_thread *t = &db->threads[i];
		t->rank = -1;
		db->nthreads = (uint32_t)i + 1;
		for (;;) {
			unsigned f, wire;
			if (cf_get_tag(&s, &f, &wire) < 0)
				goto fail;
			if (f == 0)
				break;
			if (thread_field(&s, t, f, wire) < 0)
				goto fail;
		}
		if (!t->file)
			t->file = xstrdup("");
		if (!t->host)
			t->host = xstrdup("");
		if (!t->program)
			t->program = xstrdup("");
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_contexts(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_CONTEXTS, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 2, 7, "contexts") < 0)
		goto fail;
	if (n == 0) {
		cf_stream_error(&s, "no contexts");
		goto fail;
	}
	db->contexts = xcalloc(n, sizeof(*db->contexts));
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_context *c = &db->contexts[i];
		uint64_t dist;
		uint8_t kind;
		if (cf_get_varint(&s, &dist) < 0 || cf_get_u8(&s, &kind) < 0)
			goto fail;
		if ((i == 0 && dist != 0) || (i > 0 && (dist == 0 || dist > i))) {
			cf_stream_error(&s, "context %llu: bad parent distance %llu",
					(unsigned long long)i, (unsigned long long)dist);
			goto fail;
		}
		if ((i == 0) != (kind == DBFILE_ROOT) || kind >= DBFILE_KIND_COUNT) {
			cf_stream_error(&s, "context %llu: bad kind %u", (unsigned long long)i, kind);
			goto fail;
		}
		c->parent = i ? (uint32_t)(i - dist) : DBFILE_NONE;
		c->kind = kind;
		if (get_ref(&s, &c->function, db->nfunctions, "context function") < 0 ||
		    get_ref(&s, &c->file, db->nstrings, "context file") < 0 ||
		    get_u32(&s, &c->line, UINT32_MAX, "context line") < 0 ||
		    get_ref(&s, &c->module, db->nmodules, "context module") < 0 ||
		    cf_get_varint(&s, &c->addr) < 0)
			goto fail;
		db->ncontexts = (uint32_t)i + 1;
	}
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int get_metric(struct cf_stream *s, uint64_t j, uint64_t start, const uint16_t *metric,
		      uint32_t nmetrics, uint16_t *out)
{
	uint64_t d;
	if (cf_get_varint(s, &d) < 0)
		return -1;
	uint64_t m = j == start ? d : (uint64_t)metric[j - 1] + 1 + d;
	if (d >= nmetrics || m >= nmetrics)
		return cf_stream_error(s, "metric index out of range");
	*out = (uint16_t)m;
	return 0;
}

/*
 * Large arrays (the summary of a database with millions of contexts): backed by huge pages
 * where the kernel allows, so that filling them costs few page faults.
 */
static void *big_calloc(size_t n, size_t size)
{
	void *p = xcalloc(n, size);
	size_t bytes = n * size, huge = 2u << 20;
	if (bytes >= 4 * huge) {
		uintptr_t a = ((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1);
		uintptr_t e = ((uintptr_t)p + bytes) & ~(uintptr_t)(huge - 1);
		if (e > a)
			madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
	return p;
}

/* SUMM: the sums of every (context, metric). */
static int read_summary(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_SUMMARY, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 ||
	    check_count(&s, n, UINT32_MAX - 1, 17, "summary values") < 0)
		goto fail;
	db->sum_start = big_calloc((size_t)db->ncontexts + 1, sizeof(*db->sum_start));
	db->sum_metric = big_calloc(n ? n : 1, sizeof(*db->sum_metric));
	db->sum_val = big_calloc(2 * (n ? n : 1), sizeof(*db->sum_val));
	uint64_t j = 0;
	for (uint32_t i = 0; i < db->ncontexts; i++) {
		uint64_t k;
		db->sum_start[i] = (uint32_t)j;
		if (cf_get_varint(&s, &k) < 0)
			goto fail;
		if (k > n - j || k > db->nmetrics) {
			cf_stream_error(&s, "context %u: %llu values is too many", i,
					(unsigned long long)k);
			goto fail;
		}
		for (uint64_t e = j + k; j < e; j++) {
			if (get_metric(&s, j, db->sum_start[i], db->sum_metric, db->nmetrics,
				       &db->sum_metric[j]) < 0)
				goto fail;
			/* Fast path: both sums in the window. */
			if (likely(s.end - s.p >= 16)) {
				db->sum_val[2 * j] = le_bits_f64(le_get64(s.p));
				db->sum_val[2 * j + 1] = le_bits_f64(le_get64(s.p + 8));
				s.p += 16;
			} else if (get_f64(&s, &db->sum_val[2 * j]) < 0 ||
				   get_f64(&s, &db->sum_val[2 * j + 1]) < 0) {
				goto fail;
			}
		}
	}
	if (j != n) {
		cf_stream_error(&s, "%llu values announced, %llu found", (unsigned long long)n,
				(unsigned long long)j);
		goto fail;
	}
	db->sum_start[db->ncontexts] = (uint32_t)j;
	db->nsum = n;
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

/* The STAT chunks: one per block of contexts, checked against the TOC only (read later). */
static int check_stat_chunks(struct cf_reader *r, struct dbfile *db)
{
	uint64_t want = ((uint64_t)db->ncontexts + db->stat_block - 1) / db->stat_block;
	uint64_t have = 0;
	for (uint32_t i = 0; i < r->nchunks; i++)
		have += r->toc[i].id == DBFILE_CHUNK_STATS;
	if (have != want)
		return fth_error("%s: %llu STAT chunks where %u contexts in blocks of %u need %llu",
				 r->path, (unsigned long long)have, db->ncontexts, db->stat_block,
				 (unsigned long long)want);
	return 0;
}

static int get_stat(struct cf_stream *s, struct dbfile_stat *st, double sum, uint32_t nthreads)
{
	/* Fast path: the whole entry is in the window (count, then three doubles). */
	if (likely(s->end - s->p >= LE_VARINT_MAX + 24) && *s->p < 0x80) {
		st->count = *s->p++;
		if (st->count && st->count <= nthreads) {
			st->min = le_bits_f64(le_get64(s->p));
			st->max = le_bits_f64(le_get64(s->p + 8));
			st->stddev = le_bits_f64(le_get64(s->p + 16));
			s->p += 24;
		}
	} else {
		uint64_t count;
		if (cf_get_varint(s, &count) < 0)
			return -1;
		if (count > nthreads)
			return cf_stream_error(s, "thread count %llu out of range",
					       (unsigned long long)count);
		st->count = (uint32_t)count;
		if (st->count && (get_f64(s, &st->min) < 0 || get_f64(s, &st->max) < 0 ||
				  get_f64(s, &st->stddev) < 0))
			return -1;
	}
	if (st->count > nthreads)
		return cf_stream_error(s, "thread count %u out of range", st->count);
	if (!st->count) {
		if (sum != 0)
			return cf_stream_error(s, "no thread, but a sum of %g", sum);
		st->min = st->max = st->stddev = 0;
	}
	st->sum = sum;
	return 0;
}

/* Decode STAT chunk BLOCK into INCL and EXCL (indexed from its first entry). */
static int read_stat_block(struct dbfile *db, uint32_t block, struct dbfile_stat *incl,
			   struct dbfile_stat *excl)
{
	struct cf_reader *r = &db->summary_file;
	const struct cf_entry *e = cf_find(r, DBFILE_CHUNK_STATS, block);
	if (!e)
		return fth_error("%s: no STAT chunk %u", r->path, block);
	uint32_t first = block * db->stat_block;
	uint32_t end = db->ncontexts - first < db->stat_block ? db->ncontexts
							      : first + db->stat_block;
	uint64_t a = db->sum_start[first], b = db->sum_start[end];
	struct cf_stream s;
	if (cf_stream_open(r, e, &s) < 0)
		return -1;
	for (uint64_t j = a; j < b; j++) {
		if (get_stat(&s, &incl[j - a], db->sum_val[2 * j], db->nthreads) < 0 ||
		    get_stat(&s, &excl[j - a], db->sum_val[2 * j + 1], db->nthreads) < 0)
			goto fail;
		if (!incl[j - a].count && !excl[j - a].count) {
			cf_stream_error(&s, "summary entry %llu: no thread has it",
					(unsigned long long)j);
			goto fail;
		}
	}
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

int dbfile_stats(struct dbfile *db, uint32_t ctx, uint16_t metric, struct dbfile_stat *incl,
		 struct dbfile_stat *excl)
{
	memset(incl, 0, sizeof(*incl));
	memset(excl, 0, sizeof(*excl));
	int64_t j = dbfile_find_summary(db, ctx, metric);
	if (j < 0)
		return 0;
	if (db->sum_incl) {
		*incl = db->sum_incl[j];
		*excl = db->sum_excl[j];
		return 0;
	}
	if (!db->summary_open)
		return fth_error("%s: the statistics are not available",
				 db->dir ? db->dir : "database");
	uint32_t block = ctx / db->stat_block;
	if (db->stat_cached != block) {
		uint32_t first = block * db->stat_block;
		uint32_t end = db->ncontexts - first < db->stat_block ? db->ncontexts
								      : first + db->stat_block;
		uint64_t n = db->sum_start[end] - db->sum_start[first];
		if (n > db->stat_cap) {
			db->stat_cap = n;
			db->stat_incl = xreallocarray(db->stat_incl, n, sizeof(*db->stat_incl));
			db->stat_excl = xreallocarray(db->stat_excl, n, sizeof(*db->stat_excl));
		}
		db->stat_cached = DBFILE_NONE;
		if (read_stat_block(db, block, db->stat_incl, db->stat_excl) < 0)
			return -1;
		db->stat_cached = block;
	}
	uint64_t at = (uint64_t)j - db->sum_start[block * db->stat_block];
	*incl = db->stat_incl[at];
	*excl = db->stat_excl[at];
	return 0;
}

int dbfile_load_stats(struct dbfile *db)
{
	if (db->sum_incl)
		return 0;
	if (!db->summary_open)
		return fth_error("%s: the statistics are not available",
				 db->dir ? db->dir : "database");
	struct dbfile_stat *incl = xcalloc(db->nsum ? db->nsum : 1, sizeof(*incl));
	struct dbfile_stat *excl = xcalloc(db->nsum ? db->nsum : 1, sizeof(*excl));
	for (uint32_t first = 0, block = 0; first < db->ncontexts;
	     first += db->stat_block, block++) {
		uint64_t a = db->sum_start[first];
		if (read_stat_block(db, block, incl + a, excl + a) < 0) {
			free(incl);
			free(excl);
			return -1;
		}
		if (db->ncontexts - first <= db->stat_block)
			break;
	}
	db->sum_incl = incl;
	db->sum_excl = excl;
	return 0;
}

static int read_flat(struct cf_reader *r, struct dbfile *db)
{
	struct cf_stream s;
	uint64_t n;
	if (open_chunk(r, DBFILE_CHUNK_FLAT, &s) < 0)
		return -1;
	if (cf_get_varint(&s, &n) < 0 || check_count(&s, n, UINT32_MAX - 1, 17, "flat values") < 0)
		goto fail;
	db->flat_start = xcalloc((size_t)db->nfunctions + 1, sizeof(*db->flat_start));
	db->flat_metric = xcalloc(n ? n : 1, sizeof(*db->flat_metric));
	db->flat_incl = xcalloc(n ? n : 1, sizeof(*db->flat_incl));
	db->flat_excl = xcalloc(n ? n : 1, sizeof(*db->flat_excl));
	uint64_t j = 0;
	for (uint32_t i = 0; i < db->nfunctions; i++) {
		uint64_t k;
		db->flat_start[i] = (uint32_t)j;
		if (cf_get_varint(&s, &k) < 0)
			goto fail;
		if (k > n - j || k > db->nmetrics) {
			cf_stream_error(&s, "function %u: %llu values is too many", i,
					(unsigned long long)k);
			goto fail;
		}
		for (uint64_t e = j + k; j < e; j++)
			if (get_metric(&s, j, db->flat_start[i], db->flat_metric, db->nmetrics,
				       &db->flat_metric[j]) < 0 ||
			    get_f64(&s, &db->flat_incl[j]) < 0 || get_f64(&s, &db->flat_excl[j]) < 0)
				goto fail;
	}
	if (j != n) {
		cf_stream_error(&s, "%llu values announced, %llu found", (unsigned long long)n,
				(unsigned long long)j);
		goto fail;
	}
	db->flat_start[db->nfunctions] = (uint32_t)j;
	db->nflat = n;
	return finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

int dbfile_read_summary_file(const char *path, struct dbfile *db)
{
	memset(db, 0, sizeof(*db));
	db->stat_cached = DBFILE_NONE;
	struct cf_reader r;
	if (cf_open(&r, path, DBFILE_MAGIC, "database file", DBFILE_MAJOR) < 0)
		return -1;
	db->major = r.major;
	db->minor = r.minor;
	int rc = -1;
	if (cf_find(&r, DBFILE_CHUNK_THREAD_VALUES, 0) && !cf_find(&r, DBFILE_CHUNK_INFO, 0)) {
		fth_error("%s: this is the per-thread file of a database; open its directory or "
			  "summary.fdb",
			  path);
		goto out;
	}
	if (r.major < DBFILE_MAJOR) {
		fth_error("%s: database format version %u.%u was written by an older prof; this "
			  "build reads major version %u (run prof again)",
			  path, r.major, r.minor, DBFILE_MAJOR);
		goto out;
	}
	if (read_info(&r, db) < 0 || read_strings(&r, db) < 0 || read_modules(&r, db) < 0 ||
	    read_functions(&r, db) < 0 || read_metrics(&r, db) < 0 || read_threads(&r, db) < 0 ||
	    read_contexts(&r, db) < 0 || read_summary(&r, db) < 0 || read_flat(&r, db) < 0 ||
	    check_stat_chunks(&r, db) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0) {
		cf_close(&r);
		char *msg = xstrdup(fth_errmsg());
		dbfile_close(db);
		fth_error("%s", msg);
		free(msg);
		return rc;
	}
	/* Kept open: the STAT chunks are read when they are wanted. */
	db->summary_file = r;
	db->summary_open = true;
	return rc;
}

int dbfile_open(const char *dir, struct dbfile *db)
{
	struct stat st;
	char *d, *path;
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		/* The summary file itself: its directory is the database. */
		path = xstrdup(dir);
		const char *slash = strrchr(dir, '/');
		d = slash ? xstrndup(dir, (size_t)(slash - dir)) : xstrdup(".");
		if (!*d) {
			free(d);
			d = xstrdup("/");
		}
	} else {
		size_t n = strlen(dir) + sizeof(DBFILE_SUMMARY) + 2;
		path = xmalloc(n);
		snprintf(path, n, "%s/%s", dir, DBFILE_SUMMARY);
		d = xstrdup(dir);
	}
	int rc = dbfile_read_summary_file(path, db);
	free(path);
	if (rc < 0) {
		free(d);
		return -1;
	}
	db->dir = d;
	return 0;
}

static int open_threads_file(struct dbfile *db)
{
	if (db->threads_open)
		return 0;
	size_t n = strlen(db->dir ? db->dir : ".") + sizeof(DBFILE_THREADS) + 2;
	char *path = xmalloc(n);
	snprintf(path, n, "%s/%s", db->dir ? db->dir : ".", DBFILE_THREADS);
	int rc = cf_open(&db->threads_file, path, DBFILE_MAGIC, "database file", DBFILE_MAJOR);
	free(path);
	if (rc < 0)
		return -1;
	db->threads_open = true;
	return 0;
}

/*
 * A number of threads.fdb from the window (at least 19 bytes there), as get_number; returned,
 * not stored, so that it stays in a register; *BAD set (with the message) on an error.
 */
static inline double number_fast(struct cf_stream *s, int *bad)
{
	uint64_t u;
	if (le_get_varint(&s->p, s->end, &u) < 0) {
		*bad = cf_stream_error(s, "malformed number");
		return 0;
	}
	if (likely(!(u & 1))) {
		if ((u >> 1) >= (1ULL << 53))
			*bad = cf_stream_error(s, "integer value %llu is too large",
					       (unsigned long long)(u >> 1));
		return (double)(u >> 1);
	}
	if (u != 1) {
		*bad = cf_stream_error(s, "bad value tag %llu", (unsigned long long)u);
		return 0;
	}
	double d = le_bits_f64(le_get64(s->p));
	s->p += 8;
	return d;
}

/* One value of a thread: (context delta, metric, inclusive, exclusive). */
static inline int thread_value(struct cf_stream *s, uint64_t *delta, uint64_t *metric,
			       double *incl, double *excl)
{
	/* Four varints and two doubles at most: decode straight from the window. */
	if (likely(s->end - s->p >= 4 * LE_VARINT_MAX + 16)) {
		if (le_get_varint(&s->p, s->end, delta) < 0 ||
		    le_get_varint(&s->p, s->end, metric) < 0)
			return cf_stream_error(s, "malformed number");
		int bad = 0;
		double a = number_fast(s, &bad);
		double b = bad ? 0 : number_fast(s, &bad);
		*incl = a;
		*excl = b;
		return bad;
	}
	double a, b;
	if (cf_get_varint(s, delta) < 0 || cf_get_varint(s, metric) < 0 ||
	    get_number(s, &a) < 0 || get_number(s, &b) < 0)
		return -1;
	*incl = a;
	*excl = b;
	return 0;
}

/*
 * Read thread THREAD's values: into OUT (sparse), or into VAL (2 per summary entry,
 * inclusive then exclusive, the other entries zero).
 */
static int read_thread(struct dbfile *db, uint32_t thread, struct dbfile_values *out,
		       double *val)
{
	if (out)
		dbfile_values_reset(out);
	if (thread >= db->nthreads)
		return fth_error("%s: no thread %u", db->dir ? db->dir : "database", thread);
	if (db->flags & DBFILE_FLAG_NO_THREADS)
		return fth_error("%s: per-thread values were not kept (prof --metric-db=summary)",
				 db->dir ? db->dir : "database");
	if (open_threads_file(db) < 0)
		return -1;
	/* VAL below NEXT is written or zeroed: zeros are filled in as the entries go by. */
	uint64_t next = 0;
	struct cf_reader *r = &db->threads_file;
	const struct cf_entry *e = cf_find(r, DBFILE_CHUNK_THREAD_VALUES, thread / db->thread_group);
	if (!e)
		return fth_error("%s: no values for thread %u", r->path, thread);
	struct cf_stream s;
	if (cf_stream_open(r, e, &s) < 0)
		return -1;
	uint32_t first = thread / db->thread_group * db->thread_group;
	for (uint32_t t = first;; t++) {
		uint64_t idx, n;
		if (cf_get_varint(&s, &idx) < 0 || cf_get_varint(&s, &n) < 0)
			goto fail;
		if (idx != t || n > s.e->raw / 4) {
			cf_stream_error(&s, "thread %llu with %llu values where thread %u was expected",
					(unsigned long long)idx, (unsigned long long)n, t);
			goto fail;
		}
		int64_t ctx = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t delta, metric;
			double incl = 0, excl = 0;
			if (thread_value(&s, &delta, &metric, &incl, &excl) < 0)
				goto fail;
			ctx += le_unzigzag(delta);
			if (ctx < 0 || ctx >= db->ncontexts || metric >= db->nmetrics) {
				cf_stream_error(&s, "thread %u: context %lld or metric %llu out of "
						    "range",
						t, (long long)ctx, (unsigned long long)metric);
				goto fail;
			}
			if (t != thread)
				continue;
			if (out) {
				dbfile_values_push(out, (uint32_t)ctx, (uint16_t)metric, incl, excl);
				continue;
			}
			uint32_t j = db->sum_start[ctx], end = db->sum_start[ctx + 1];
			while (j < end && db->sum_metric[j] != metric)
				j++;
			if (j == end) {
				cf_stream_error(&s,
						"thread %u: context %lld, metric %llu has no summary",
						t, (long long)ctx, (unsigned long long)metric);
				goto fail;
			}
			if (j >= next) {
				for (; next < j; next++) /* gaps are short: no call */
					val[2 * next] = val[2 * next + 1] = 0;
				next = j + 1;
			}
			val[2 * (size_t)j] = incl;
			val[2 * (size_t)j + 1] = excl;
		}
		if (t == thread)
			break;
	}
	if (val)
		memset(val + 2 * next, 0, 2 * (db->nsum - next) * sizeof(double));
	/*
	 * The last thread of its chunk: check that the chunk ends there and its checksums.
	 * Otherwise later threads of the group are not read, nor is the chunk checked whole.
	 */
	if (thread % db->thread_group == db->thread_group - 1 || thread == db->nthreads - 1)
		return cf_stream_finish(&s) < 0 ? -1 : 0;
	cf_stream_free(&s);
	return 0;
fail:
	cf_stream_free(&s);
	return -1;
}

int dbfile_read_thread(struct dbfile *db, uint32_t thread, struct dbfile_values *out)
{
	return read_thread(db, thread, out, NULL);
}

int dbfile_read_thread_entries(struct dbfile *db, uint32_t thread, double *val)
{
	return read_thread(db, thread, NULL, val);
}

void dbfile_close(struct dbfile *db)
{
	free(db->program);
	for (uint32_t i = 0; i < db->nstrings; i++)
		free(db->strings[i]);
	free(db->strings);
	for (uint32_t i = 0; i < db->nmodules; i++)
		free(db->modules[i].build_id);
	free(db->modules);
	free(db->functions);
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		free(db->metrics[i].name);
		free(db->metrics[i].description);
		free(db->metrics[i].formula);
	}
	free(db->metrics);
	for (uint32_t i = 0; i < db->nthreads; i++) {
		free(db->threads[i].file);
		free(db->threads[i].host);
		free(db->threads[i].program);
	}
	free(db->threads);
	free(db->contexts);
	free(db->sum_start);
	free(db->sum_metric);
	free(db->sum_val);
	free(db->sum_incl);
	free(db->sum_excl);
	free(db->stat_incl);
	free(db->stat_excl);
	if (db->summary_open)
		cf_close(&db->summary_file);
	free(db->flat_start);
	free(db->flat_metric);
	free(db->flat_incl);
	free(db->flat_excl);
	free(db->dir);
	if (db->threads_open)
		cf_close(&db->threads_file);
	memset(db, 0, sizeof(*db));
}

int64_t dbfile_find_summary(const struct dbfile *db, uint32_t ctx, uint16_t metric)
{
	if (ctx >= db->ncontexts)
		return -1;
	for (uint64_t j = db->sum_start[ctx]; j < db->sum_start[ctx + 1]; j++)
		if (db->sum_metric[j] == metric)
			return (int64_t)j;
	return -1;
}

const char *dbfile_str(const struct dbfile *db, uint32_t index)
{
	return index < db->nstrings ? db->strings[index] : "?";
}

const char *dbfile_kind_name(unsigned kind)
{
	switch (kind) {
#define X(e, v, n) \
	case v: return n;
		DBFILE_KINDS(X)
#undef X
	default: return "?";
	}
}
