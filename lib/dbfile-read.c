/* SPDX-License-Identifier: MIT */
/*
 * dbfile-read.c: reads and validates a database: the tables of summary.fdb at open, with every
 * block checked once, streaming; then blocks of contexts, sums, statistics and function lists,
 * and pieces of threads.fdb, on demand, a few decoded blocks kept.  Nothing is trusted: counts
 * are checked against the chunk's size before anything is allocated, every index against its
 * table, the tree's breadth-first order and children ranges across the blocks.
 */
#include "compat.h"
#include "dbfile.h"
#include "dbfile-index.h"
#include "dbfile-fields.h"
#include "error.h"
#include "le.h"
#include "mfile.h"
#include "piece.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Notes in INFO at most (what prof could not do: a handful). */
#define MAX_NOTES 4096
/* Bytes of a string at most. */
#define MAX_STRING (16u << 20)
/* Arguments of a thread's command line at most. */
#define MAX_ARGS (1u << 20)
#define MAX_BUILD_ID 256

static inline int next_u8(struct cf_stream *s, uint8_t *v)
{
	if (likely(s->p < s->end)) {
		*v = *s->p++;
		return 0;
	}
	return cf_get_u8(s, v);
}

/* A reference to an entry of a table of N: 0 = none, else index + 1. */
static inline int get_ref(struct cf_stream *s, uint32_t *v, uint32_t n, const char *what)
{
	uint32_t x = 0;
	if (cf_get_u32_max(s, &x, n, what) < 0)
		return -1;
	*v = x ? x - 1 : DBFILE_NONE;
	return 0;
}

static inline int get_f64(struct cf_stream *s, double *d)
{
	if (likely(s->end - s->p >= 8)) {
		*d = le_bits_f64(le_get64(s->p));
		s->p += 8;
		return 0;
	}
	uint64_t u;
	if (cf_get_u64(s, &u) < 0)
		return -1;
	*d = le_bits_f64(u);
	return 0;
}

static int read_info(struct cf_reader *r, struct dbfile *db, uint32_t *list_block)
{
	struct cf_stream s;
	if (cf_open_unique(r, DBFILE_CHUNK_INFO, &s) < 0)
		return -1;
	db->thread_group = 1;
	bool seen[INFO_LIST_BLOCK + 1] = { false };
	for (;;) {
		unsigned f, wire;
		uint64_t v;
		if (cf_get_tag(&s, &f, &wire) < 0)
			goto fail;
		if (f == 0)
			break;
		if (f == INFO_PROGRAM) {
			if (cf_get_str_field(&s, wire, MAX_STRING, &db->program) < 0)
				goto fail;
		} else if (f <= INFO_LIST_BLOCK) {
			if (cf_get_varint_field(&s, wire, &v) < 0)
				goto fail;
			uint64_t max = f == INFO_NSUM ? UINT32_MAX - 1
				       : f == INFO_NCONTEXTS ? UINT32_MAX - 2
							     : UINT32_MAX;
			if (v > max || (f != INFO_FLAGS && f != INFO_NSUM && v == 0)) {
				cf_stream_error(&s, "field %u: %llu out of range", f,
						(unsigned long long)v);
				goto fail;
			}
			seen[f] = true;
			if (f == INFO_FLAGS)
				db->flags = (uint32_t)v;
			else if (f == INFO_GROUP)
				db->thread_group = (uint32_t)v;
			else if (f == INFO_BLOCK)
				db->block = (uint32_t)v;
			else if (f == INFO_NCONTEXTS)
				db->ncontexts = (uint32_t)v;
			else if (f == INFO_NSUM)
				db->nsum = v;
			else
				*list_block = (uint32_t)v;
		} else if (f == INFO_NOTE) {
			char *note = NULL;
			if (db->nnotes >= MAX_NOTES) {
				cf_stream_error(&s, "more than %u notes", MAX_NOTES);
				goto fail;
			}
			if (cf_get_str_field(&s, wire, MAX_STRING, &note) < 0)
				goto fail;
			db->notes = xreallocarray(db->notes, db->nnotes + 1, sizeof(char *));
			db->notes[db->nnotes++] = note;
		} else if (cf_skip_field(&s, wire) < 0) {
			goto fail;
		}
	}
	if (!seen[INFO_BLOCK] || !seen[INFO_NCONTEXTS] || !seen[INFO_NSUM] ||
	    !seen[INFO_LIST_BLOCK]) {
		cf_stream_error(&s, "the block sizes or the counts are missing");
		goto fail;
	}
	XSTRDUP_EMPTY_IF_NULL(&db->program);
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_strings(struct cf_reader *r, struct dbfile *db)
{
	return cf_read_string_table(r, DBFILE_CHUNK_STRINGS, MAX_STRING, &db->strings,
				    &db->nstrings);
}

/* A field of the module being read, DB's last. */
static int module_field(struct cf_stream *s, void *arg, unsigned f, unsigned wire)
{
	struct dbfile *db = arg;
	uint32_t i = db->nmodules - 1;
	struct dbfile_module *m = &db->modules[i];
	uint64_t v;
	if (f == MODS_BUILD_ID) {
		char *b = NULL;
		size_t len;
		if (cf_get_bytes_field(s, wire, "build-id", MAX_BUILD_ID, &b, &len) < 0)
			return -1;
		free(m->build_id);
		m->build_id = len ? (uint8_t *)b : NULL;
		m->build_id_len = (uint32_t)len;
		if (!len)
			free(b);
		return 0;
	}
	if (f != MODS_PATH && f != MODS_FLAGS)
		return cf_skip_field(s, wire);
	if (cf_get_varint_field(s, wire, &v) < 0)
		return -1;
	if (f == MODS_FLAGS) {
		m->flags = (uint32_t)v;
		return 0;
	}
	if (v > db->nstrings)
		return cf_stream_error(s, "module %u: bad path", i);
	m->path = v ? (uint32_t)(v - 1) : DBFILE_NONE;
	return 0;
}

static int read_module(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct dbfile *db = arg;
	db->modules[i].path = DBFILE_NONE;
	db->nmodules = (uint32_t)i + 1;
	return cf_read_fields(s, module_field, db);
}

static int read_modules(struct cf_reader *r, struct dbfile *db)
{
	static const struct cf_table modules = { DBFILE_CHUNK_MODULES, UINT32_MAX - 1, 1, "modules",
						 sizeof(*db->modules), read_module, NULL };
	return cf_read_table(r, &modules, (void **)&db->modules, db);
}

static int read_function(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct dbfile *db = arg;
	struct dbfile_function *f = &db->functions[i];
	if (get_ref(s, &f->name, db->nstrings, "function name") < 0 ||
	    get_ref(s, &f->module, db->nmodules, "function module") < 0 ||
	    get_ref(s, &f->file, db->nstrings, "function file") < 0 ||
	    cf_get_u32_max(s, &f->line, UINT32_MAX, "function line") < 0 ||
	    cf_next_varint(s, &f->addr) < 0 ||
	    cf_get_u32_max(s, &f->group, UINT32_MAX - 1, "function group") < 0)
		return -1;
	if (f->name == DBFILE_NONE)
		return cf_stream_error(s, "function %llu has no name", (unsigned long long)i);
	db->nfunctions = (uint32_t)i + 1;
	return 0;
}

static int read_functions(struct cf_reader *r, struct dbfile *db)
{
	static const struct cf_table functions = { DBFILE_CHUNK_FUNCTIONS, UINT32_MAX - 1, 6,
						   "functions", sizeof(*db->functions),
						   read_function, NULL };
	return cf_read_table(r, &functions, (void **)&db->functions, db);
}

static int metric_value(struct cf_stream *s, struct dbfile_metric *m, unsigned f, unsigned wire)
{
	uint64_t v;
	switch (f) {
	case METR_NAME: return cf_get_str_field(s, wire, MAX_STRING, &m->name);
	case METR_DESCRIPTION: return cf_get_str_field(s, wire, MAX_STRING, &m->description);
	case METR_FORMULA: return cf_get_str_field(s, wire, MAX_STRING, &m->formula);
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
	if (f > METR_LEVEL)
		return cf_skip_field(s, wire);
	if (cf_get_varint_field(s, wire, &v) < 0)
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
	case METR_LEVEL:
		if (v > 15)
			return cf_stream_error(s, "TMA level %llu out of range", (unsigned long long)v);
		m->level = (uint8_t)v;
		break;
	case METR_ENABLED: m->time_enabled = v; break;
	case METR_RUNNING: m->time_running = v; break;
	case METR_SAMPLES: m->samples = v; break;
	default: break;
	}
	return 0;
}

/* A field of the metric being read, DB's last; its errors name the metric. */
static int metric_field(struct cf_stream *s, void *arg, unsigned f, unsigned wire)
{
	struct dbfile *db = arg;
	uint32_t i = db->nmetrics - 1;
	if (metric_value(s, &db->metrics[i], f, wire) < 0)
		return fth_error_prefix("metric %u", i);
	return 0;
}

static int read_metric(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct dbfile *db = arg;
	struct dbfile_metric *m = &db->metrics[i];
	m->parent = -1;
	m->threshold = NAN;
	m->scale = 1;
	db->nmetrics = (uint32_t)i + 1;
	if (cf_read_fields(s, metric_field, db) < 0)
		return -1;
	if (!m->name || !*m->name)
		return cf_stream_error(s, "metric %llu has no name", (unsigned long long)i);
	XSTRDUP_EMPTY_IF_NULL(&m->description, &m->formula);
	return 0;
}

/* Every metric's chain of parents ends. */
static int check_parents(struct cf_stream *s, void *arg)
{
	struct dbfile *db = arg;
	for (uint32_t i = 0; i < db->nmetrics; i++) {
		int32_t p = db->metrics[i].parent;
		for (uint32_t steps = 0; p >= 0; steps++) {
			if ((uint32_t)p >= db->nmetrics || steps > db->nmetrics)
				return cf_stream_error(s, "metric %u: bad parent chain", i);
			p = db->metrics[p].parent;
		}
	}
	return 0;
}

static int read_metrics(struct cf_reader *r, struct dbfile *db)
{
	static const struct cf_table metrics = { DBFILE_CHUNK_METRICS, MFILE_MAX_METRICS, 1,
						 "metrics", sizeof(*db->metrics), read_metric,
						 check_parents };
	return cf_read_table(r, &metrics, (void **)&db->metrics, db);
}

static int thread_field(struct cf_stream *s, void *thread, unsigned f, unsigned wire)
{
	struct dbfile_thread *t = thread;
	switch (f) {
	case THRD_FILE: return cf_get_str_field(s, wire, MAX_STRING, &t->file);
	case THRD_HOST: return cf_get_str_field(s, wire, MAX_STRING, &t->host);
	case THRD_PROGRAM: return cf_get_str_field(s, wire, MAX_STRING, &t->program);
	case THRD_NAME: return cf_get_str_field(s, wire, MAX_STRING, &t->name);
	case THRD_ENTRY: return cf_get_str_field(s, wire, MAX_STRING, &t->entry);
	case THRD_CPU: return cf_get_str_field(s, wire, MAX_STRING, &t->cpu);
	case THRD_ARG: {
		char *arg = NULL;
		if (t->argc >= MAX_ARGS)
			return cf_stream_error(s, "more than %u arguments", MAX_ARGS);
		if (cf_get_str_field(s, wire, MAX_STRING, &arg) < 0)
			return -1;
		t->argv = xreallocarray(t->argv, t->argc + 1, sizeof(*t->argv));
		t->argv[t->argc++] = arg;
		return 0;
	}
	default: break;
	}
	if (f > THRD_PPID)
		return cf_skip_field(s, wire);
	uint64_t v;
	if (cf_get_varint_field(s, wire, &v) < 0)
		return -1;
	switch (f) {
	case THRD_PID:
	case THRD_TID:
	case THRD_INDEX:
	case THRD_PPID:
		if (v > UINT32_MAX)
			return cf_stream_error(s, "field %u: %llu out of range", f,
					       (unsigned long long)v);
		*(f == THRD_PID	  ? &t->pid
		  : f == THRD_TID ? &t->tid
		  : f == THRD_PPID ? &t->ppid
				   : &t->thread_index) = (uint32_t)v;
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

static int read_thread(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct dbfile *db = arg;
	struct dbfile_thread *t = &db->threads[i];
	t->rank = -1;
	db->nthreads = (uint32_t)i + 1;
	if (cf_read_fields(s, thread_field, t) < 0)
		return -1;
	XSTRDUP_EMPTY_IF_NULL(&t->file, &t->host, &t->program, &t->name, &t->entry, &t->cpu);
	return 0;
}

static int read_threads(struct cf_reader *r, struct dbfile *db)
{
	static const struct cf_table threads = { DBFILE_CHUNK_THREADS, UINT32_MAX - 1, 1,
						 "threads", sizeof(*db->threads), read_thread, NULL };
	return cf_read_table(r, &threads, (void **)&db->threads, db);
}

static int read_group(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct dbfile *db = arg;
	struct dbfile_group *g = &db->groups[i];
	if (get_ref(s, &g->module, db->nmodules, "group module") < 0 ||
	    get_ref(s, &g->file, db->nstrings, "group file") < 0)
		return -1;
	db->ngroups = (uint32_t)i + 1;
	return 0;
}

/* Every function is in a group of its module. */
static int check_groups(struct cf_stream *s, void *arg)
{
	struct dbfile *db = arg;
	for (uint32_t f = 0; f < db->nfunctions; f++)
		if (db->functions[f].group >= db->ngroups ||
		    db->groups[db->functions[f].group].module != db->functions[f].module)
			return cf_stream_error(s, "function %u: bad group %u", f,
					       db->functions[f].group);
	return 0;
}

static int read_groups(struct cf_reader *r, struct dbfile *db)
{
	static const struct cf_table groups = { DBFILE_CHUNK_GROUPS, UINT32_MAX - 1, 2, "groups",
						sizeof(*db->groups), read_group, check_groups };
	return cf_read_table(r, &groups, (void **)&db->groups, db);
}

static inline int get_metric(struct cf_stream *s, uint64_t j, uint64_t start,
			     const uint16_t *metric, uint32_t nmetrics, uint16_t *out)
{
	uint64_t d;
	if (cf_next_varint(s, &d) < 0)
		return -1;
	uint64_t m = j == start ? d : (uint64_t)metric[j - 1] + 1 + d;
	if (d >= nmetrics || m >= nmetrics)
		return cf_stream_error(s, "metric index out of range");
	*out = (uint16_t)m;
	return 0;
}

/* A flat profile of ROWS rows (FLAT, GFLT, MFLT). */
static int read_flat(struct cf_reader *r, uint32_t id, uint32_t rows, uint32_t nmetrics,
		     struct dbfile_flat *fl)
{
	struct cf_stream s;
	uint64_t n;
	if (cf_open_table(r, id, UINT32_MAX - 1, 17, "flat values", &s, &n) < 0)
		return -1;
	fl->nrows = rows;
	fl->start = xcalloc((size_t)rows + 1, sizeof(*fl->start));
	fl->metric = xcalloc(n ? n : 1, sizeof(*fl->metric));
	fl->incl = xcalloc(n ? n : 1, sizeof(*fl->incl));
	fl->excl = xcalloc(n ? n : 1, sizeof(*fl->excl));
	uint64_t j = 0;
	for (uint32_t i = 0; i < rows; i++) {
		uint64_t k;
		fl->start[i] = (uint32_t)j;
		if (cf_next_varint(&s, &k) < 0)
			goto fail;
		if (k > n - j || k > nmetrics) {
			cf_stream_error(&s, "row %u: %llu values is too many", i,
					(unsigned long long)k);
			goto fail;
		}
		for (uint64_t e = j + k; j < e; j++)
			if (get_metric(&s, j, fl->start[i], fl->metric, nmetrics, &fl->metric[j]) <
				    0 ||
			    get_f64(&s, &fl->incl[j]) < 0 || get_f64(&s, &fl->excl[j]) < 0)
				goto fail;
	}
	if (j != n) {
		cf_stream_error(&s, "%llu values announced, %llu found", (unsigned long long)n,
				(unsigned long long)j);
		goto fail;
	}
	fl->start[rows] = (uint32_t)j;
	fl->nvalues = n;
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

/* ---- blocks and the cache ---- */

struct ctx_slot {
	uint32_t block; /* DBFILE_NONE: empty */
	uint64_t used;
	struct dbfile_context *c;
};

/* Rows of one block: the sums (THREAD = DBFILE_NONE) or a thread's values. */
struct row_slot {
	uint32_t thread, block; /* block DBFILE_NONE: empty */
	uint64_t used;
	uint32_t *start; /* contexts of the block + 1 */
	uint16_t *metric;
	double *val;
	uint64_t cap;
};

/* A decoded FLST block. */
struct list_slot {
	uint32_t block; /* DBFILE_NONE: empty */
	uint64_t used;
	uint32_t *start; /* 2 per function of the block + 1 */
	uint32_t *item;
	uint64_t cap;
};

/*
 * The decoded blocks kept, least recently used evicted: NCTX slots of contexts, NROWS of rows,
 * NLIST of function lists (dbfile_cache_blocks raises them), found through the per-block
 * indexes (CTX_AT, SUM_AT, THREAD_AT: the slot, or DBFILE_NONE) without a scan.
 */
struct dbfile_cache {
	uint32_t block, nblocks, list_block, nlists;
	uint32_t slot; /* contexts a decoded block holds at most: min(block, ncontexts) */
	uint32_t *first_child; /* per block: its first context's, as checked at open */
	uint64_t *nsum;	       /* per block: summary entries */
	uint64_t clock;
	struct ctx_slot *ctx;
	struct row_slot *rows;
	struct list_slot *lists;
	uint32_t nctx, nrows, nlist;
	uint32_t *ctx_at, *sum_at, *thread_at, *list_at;
	uint32_t stat_cached; /* the STAT block in stat_incl, stat_excl */
	struct dbfile_stat *stat_incl, *stat_excl;
	uint64_t stat_cap;
	struct piece_codec codec; /* decodes the pieces of threads.fdb */
	uint8_t *piece;
	size_t piece_cap;
};

/*
 * The slot to reuse of the N at SLOTS (STRIDE bytes each; at byte BLOCK the uint32_t block it
 * holds, DBFILE_NONE when empty, at byte USED the uint64_t clock of its last use): the last
 * empty one, else the least recently used.
 */
static uint32_t lru_slot(const void *slots, uint32_t n, size_t stride, size_t block,
			 size_t used)
{
	const char *base = slots;
	uint32_t victim = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t sb, vb;
		uint64_t su, vu;
		memcpy(&sb, base + i * stride + block, sizeof(sb));
		memcpy(&vb, base + victim * stride + block, sizeof(vb));
		memcpy(&su, base + i * stride + used, sizeof(su));
		memcpy(&vu, base + victim * stride + used, sizeof(vu));
		if (sb == DBFILE_NONE || (vb != DBFILE_NONE && su < vu))
			victim = i;
	}
	return victim;
}

#define LRU_SLOT(slots, n)                                                              \
	lru_slot((slots), (n), sizeof(*(slots)), offsetof(__typeof__(*(slots)), block), \
		 offsetof(__typeof__(*(slots)), used))

static uint32_t block_end(const struct dbfile *db, uint32_t b)
{
	return dbfile_block_end(b * db->block, db->block, db->ncontexts);
}

static void cache_free(struct dbfile_cache *c)
{
	if (!c)
		return;
	free(c->first_child);
	free(c->nsum);
	for (uint32_t i = 0; i < c->nctx; i++)
		free(c->ctx[i].c);
	for (uint32_t i = 0; i < c->nrows; i++) {
		free(c->rows[i].start);
		free(c->rows[i].metric);
		free(c->rows[i].val);
	}
	for (uint32_t i = 0; i < c->nlist; i++) {
		free(c->lists[i].start);
		free(c->lists[i].item);
	}
	free(c->ctx);
	free(c->rows);
	free(c->lists);
	free(c->ctx_at);
	free(c->sum_at);
	free(c->thread_at);
	free(c->list_at);
	free(c->stat_incl);
	free(c->stat_excl);
	piece_codec_release(&c->codec);
	free(c->piece);
	free(c);
}

static const char *db_name(const struct dbfile *db)
{
	return db->summary_open ? db->summary_file.path : db->dir ? db->dir : "database";
}

/* Chunk number B of ID in the summary file, opened as a stream. */
static int open_block(struct dbfile *db, uint32_t id, uint32_t b, struct cf_stream *s)
{
	struct cf_reader *r = &db->summary_file;
	const struct cf_entry *e = cf_find(r, id, b);
	char name[5];
	if (!e)
		return fth_error("%s: no %s chunk %u", r->path, cf_id_name(id, name), b);
	return cf_stream_open(r, e, s);
}

/*
 * Decode CTXT block B into OUT, checking what can be checked within the block (and its first
 * context's first child against EXPECT_FC unless DBFILE_NONE).
 */
static int decode_context_block(struct dbfile *db, uint32_t b, struct dbfile_context *out,
				uint32_t expect_fc)
{
	struct cf_stream s;
	if (open_block(db, DBFILE_CHUNK_CONTEXTS, b, &s) < 0)
		return -1;
	uint32_t first = b * db->block, end = block_end(db, b), n = db->ncontexts;
	uint64_t fc;
	if (cf_next_varint(&s, &fc) < 0)
		goto fail;
	if (fc > n || fc <= first || (expect_fc != DBFILE_NONE && fc != expect_fc)) {
		cf_stream_error(&s, "block %u: first child %llu inconsistent", b,
				(unsigned long long)fc);
		goto fail;
	}
	uint32_t prev_parent = 0;
	for (uint32_t i = first; i < end; i++) {
		struct dbfile_context *c = &out[i - first];
		uint64_t dist, nch, outer;
		uint8_t kind, flags;
		if (cf_next_varint(&s, &dist) < 0 || next_u8(&s, &kind) < 0 ||
		    next_u8(&s, &flags) < 0 || cf_next_varint(&s, &nch) < 0)
			goto fail;
		if ((i == 0 && dist != 0) || (i > 0 && (dist == 0 || dist > i)) ||
		    (i > 0 && i - dist < prev_parent)) {
			cf_stream_error(&s, "context %u: bad parent distance %llu", i,
					(unsigned long long)dist);
			goto fail;
		}
		if ((i == 0) != (kind == DBFILE_ROOT) || kind >= DBFILE_KIND_COUNT) {
			cf_stream_error(&s, "context %u: bad kind %u", i, kind);
			goto fail;
		}
		if (flags > 7 || (flags && kind != DBFILE_FUNCTION && kind != DBFILE_INLINE)) {
			cf_stream_error(&s, "context %u: bad flags %u", i, flags);
			goto fail;
		}
		if (nch > n - fc || fc <= i) {
			cf_stream_error(&s, "context %u: %llu children from %llu out of range", i,
					(unsigned long long)nch, (unsigned long long)fc);
			goto fail;
		}
		c->parent = i ? (uint32_t)(i - dist) : DBFILE_NONE;
		prev_parent = i ? c->parent : 0;
		c->kind = kind;
		c->flags = flags;
		c->first_child = (uint32_t)fc;
		c->nchildren = (uint32_t)nch;
		fc += nch;
		if (get_ref(&s, &c->function, db->nfunctions, "context function") < 0 ||
		    get_ref(&s, &c->file, db->nstrings, "context file") < 0 ||
		    cf_get_u32_max(&s, &c->line, UINT32_MAX, "context line") < 0 ||
		    get_ref(&s, &c->module, db->nmodules, "context module") < 0 ||
		    cf_next_varint(&s, &c->addr) < 0 || cf_next_varint(&s, &outer) < 0)
			goto fail;
		if (outer > (uint64_t)i + 1 || (outer && c->function == DBFILE_NONE)) {
			cf_stream_error(&s, "context %u: outer instance out of range", i);
			goto fail;
		}
		c->outer = outer ? (uint32_t)(i - (outer - 1)) : DBFILE_NONE;
		if (c->outer != DBFILE_NONE && c->outer >= first) {
			const struct dbfile_context *o = &out[c->outer - first];
			if ((o->kind != DBFILE_FUNCTION && o->kind != DBFILE_INLINE) ||
			    o->function != c->function) {
				cf_stream_error(
					&s, "context %u: outer %u is no instance of its function",
					i, c->outer);
				goto fail;
			}
		}
		if (i && c->parent >= first) {
			const struct dbfile_context *p = &out[c->parent - first];
			if (i < p->first_child || i - p->first_child >= p->nchildren) {
				cf_stream_error(&s, "context %u: not among its parent's children",
						i);
				goto fail;
			}
		}
	}
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static void row_reserve(struct row_slot *r, uint32_t ctxs, uint64_t n)
{
	if (!r->start)
		r->start = xcalloc((size_t)ctxs + 1, sizeof(uint32_t));
	if (n > r->cap) {
		r->cap = n;
		r->metric = xreallocarray(r->metric, n, sizeof(uint16_t));
		r->val = xreallocarray(r->val, 2 * n, sizeof(double));
	}
}

/* Decode SUMM block B into R (EXPECT entries unless UINT64_MAX). */
static int decode_summary_block(struct dbfile *db, uint32_t b, struct row_slot *r,
				uint64_t expect)
{
	struct cf_stream s;
	if (open_block(db, DBFILE_CHUNK_SUMMARY, b, &s) < 0)
		return -1;
	uint32_t first = b * db->block, end = block_end(db, b);
	uint64_t n;
	if (cf_get_count(&s, UINT32_MAX - 1, 17, "summary values", &n) < 0)
		goto fail;
	if (expect != UINT64_MAX && n != expect) {
		cf_stream_error(&s, "block %u: %llu entries where %llu were counted", b,
				(unsigned long long)n, (unsigned long long)expect);
		goto fail;
	}
	row_reserve(r, db->cache->slot, n ? n : 1);
	uint64_t j = 0;
	for (uint32_t i = first; i < end; i++) {
		uint64_t k;
		r->start[i - first] = (uint32_t)j;
		if (cf_next_varint(&s, &k) < 0)
			goto fail;
		if (k > n - j || k > db->nmetrics) {
			cf_stream_error(&s, "context %u: %llu values is too many", i,
					(unsigned long long)k);
			goto fail;
		}
		for (uint64_t x = j + k; j < x; j++)
			if (get_metric(&s, j, r->start[i - first], r->metric, db->nmetrics,
				       &r->metric[j]) < 0 ||
			    get_f64(&s, &r->val[2 * j]) < 0 || get_f64(&s, &r->val[2 * j + 1]) < 0)
				goto fail;
	}
	if (j != n) {
		cf_stream_error(&s, "%llu values announced, %llu found", (unsigned long long)n,
				(unsigned long long)j);
		goto fail;
	}
	r->start[end - first] = (uint32_t)j;
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int get_stat(struct cf_stream *s, struct dbfile_stat *st, double sum, uint32_t nthreads)
{
	uint64_t count;
	if (cf_next_varint(s, &count) < 0)
		return -1;
	if (count > nthreads)
		return cf_stream_error(s, "thread count %llu out of range",
				       (unsigned long long)count);
	st->count = (uint32_t)count;
	if (st->count && (get_f64(s, &st->min) < 0 || get_f64(s, &st->max) < 0 ||
			  get_f64(s, &st->stddev) < 0))
		return -1;
	if (!st->count) {
		if (sum != 0)
			return cf_stream_error(s, "no thread, but a sum of %g", sum);
		st->min = st->max = st->stddev = 0;
	}
	st->sum = sum;
	return 0;
}

/* Decode STAT block B, whose sums are in SUM, into INCL and EXCL. */
static int decode_stat_block(struct dbfile *db, uint32_t b, const struct row_slot *sum,
			     struct dbfile_stat *incl, struct dbfile_stat *excl)
{
	struct cf_stream s;
	if (open_block(db, DBFILE_CHUNK_STATS, b, &s) < 0)
		return -1;
	uint64_t n = sum->start[block_end(db, b) - b * db->block];
	for (uint64_t j = 0; j < n; j++) {
		if (get_stat(&s, &incl[j], sum->val[2 * j], db->nthreads) < 0 ||
		    get_stat(&s, &excl[j], sum->val[2 * j + 1], db->nthreads) < 0)
			goto fail;
		if (!incl[j].count && !excl[j].count) {
			cf_stream_error(&s, "summary entry %llu of block %u: no thread has it",
					(unsigned long long)j, b);
			goto fail;
		}
	}
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

/* A list of AT MOST n ascending contexts into ITEMS from *J. */
static int get_list(struct cf_stream *s, struct list_slot *c, uint64_t *j, uint32_t ncontexts,
		    uint32_t f)
{
	uint64_t k;
	if (cf_next_varint(s, &k) < 0)
		return -1;
	if (k > ncontexts || k > s->e->raw)
		return cf_stream_error(s, "function %u: %llu contexts", f, (unsigned long long)k);
	if (*j + k > c->cap) {
		c->cap = (*j + k) * 2;
		c->item = xreallocarray(c->item, c->cap, sizeof(uint32_t));
	}
	uint64_t prev = 0;
	for (uint64_t i = 0; i < k; i++) {
		uint64_t d;
		if (cf_next_varint(s, &d) < 0)
			return -1;
		uint64_t x = i ? prev + 1 + d : d;
		if (d >= ncontexts || x >= ncontexts)
			return cf_stream_error(s, "function %u: context out of range", f);
		c->item[(*j)++] = (uint32_t)x;
		prev = x;
	}
	return 0;
}

/* Decode FLST block B into list slot L. */
static int decode_list_block(struct dbfile *db, uint32_t b, struct list_slot *l)
{
	struct dbfile_cache *c = db->cache;
	l->block = DBFILE_NONE;
	struct cf_stream s;
	if (open_block(db, DBFILE_CHUNK_FUNCTION_LISTS, b, &s) < 0)
		return -1;
	uint32_t first = b * c->list_block;
	uint32_t end = dbfile_block_end(first, c->list_block, db->nfunctions);
	if (!l->start)
		l->start = xcalloc(2 * (size_t)FTH_MIN(c->list_block, db->nfunctions) + 1,
				   sizeof(uint32_t));
	uint64_t j = 0;
	for (uint32_t f = first; f < end; f++) {
		l->start[2 * (f - first)] = (uint32_t)j;
		if (get_list(&s, l, &j, db->ncontexts, f) < 0)
			goto fail;
		l->start[2 * (f - first) + 1] = (uint32_t)j;
		if (get_list(&s, l, &j, db->ncontexts, f) < 0)
			goto fail;
	}
	l->start[2 * (end - first)] = (uint32_t)j;
	if (cf_stream_finish(&s) < 0)
		return -1;
	l->block = b;
	return 0;
fail:
	cf_stream_free(&s);
	return -1;
}

/*
 * Check every block once, streaming: the tree's breadth-first order and children ranges
 * across blocks (NCHILDREN, temporary, holds every context's count of children), the summary
 * entries and statistics, the function lists.  KEEP: every block of contexts, sums and lists
 * stays decoded in the cache, as dbfile_load_blocks leaves them.
 */
static int check_blocks(struct dbfile *db, bool keep)
{
	struct dbfile_cache *c = db->cache;
	struct cf_reader *r = &db->summary_file;
	const uint32_t ids[4] = { DBFILE_CHUNK_CONTEXTS, DBFILE_CHUNK_SUMMARY, DBFILE_CHUNK_STATS,
				  DBFILE_CHUNK_FUNCTION_LISTS };
	for (int k = 0; k < 4; k++) {
		uint64_t want = k == 3 ? c->nlists : c->nblocks, have = 0;
		for (uint32_t i = 0; i < r->nchunks; i++)
			have += r->toc[i].id == ids[k];
		char name[5];
		if (have != want)
			return fth_error("%s: %llu %s chunks where %llu are needed", r->path,
					 (unsigned long long)have, cf_id_name(ids[k], name),
					 (unsigned long long)want);
	}
	uint32_t n = db->ncontexts;
	if (keep && dbfile_cache_blocks(db, UINT32_MAX, UINT32_MAX, UINT32_MAX) < 0)
		return -1;
	uint32_t *nch = xmalloc((size_t)n * sizeof(uint32_t));
	struct dbfile_context *tmp = keep ? NULL : xcalloc(c->slot, sizeof(*tmp));
	struct row_slot rs = { 0 };
	struct dbfile_stat *si = xcalloc(1, sizeof(*si)), *se = xcalloc(1, sizeof(*se));
	uint64_t scap = 1, nsum = 0;
	uint32_t fc = 1, owner = 0, left = 0;
	int rc = -1;
	for (uint32_t b = 0; b < c->nblocks; b++) {
		uint32_t first = b * db->block, end = block_end(db, b);
		struct dbfile_context *blk = tmp;
		struct row_slot *sums = &rs;
		if (keep) {
			blk = c->ctx[b].c = xcalloc(c->slot, sizeof(*blk));
			sums = &c->rows[b];
		}
		if (decode_context_block(db, b, blk, fc) < 0)
			goto out;
		for (uint32_t i = first; i < end; i++) {
			const struct dbfile_context *x = &blk[i - first];
			nch[i] = x->nchildren;
			fc = x->first_child + x->nchildren;
			if (i == 0) {
				left = x->nchildren;
				continue;
			}
			while (left == 0 && owner < i)
				left = nch[++owner];
			if (left == 0 || x->parent != owner) {
				fth_error("%s: context %u: parent %u, but it is in the children of "
					  "%u",
					  r->path, i, x->parent, owner);
				goto out;
			}
			left--;
		}
		c->first_child[b] = blk[0].first_child;
		if (decode_summary_block(db, b, sums, UINT64_MAX) < 0)
			goto out;
		if (keep) {
			c->ctx[b].block = sums->block = b;
			sums->thread = DBFILE_NONE;
			c->ctx[b].used = sums->used = ++c->clock;
			c->ctx_at[b] = c->sum_at[b] = b;
		}
		uint64_t k = sums->start[end - first];
		c->nsum[b] = k;
		nsum += k;
		if (k > scap) {
			scap = k;
			si = xreallocarray(si, k, sizeof(*si));
			se = xreallocarray(se, k, sizeof(*se));
		}
		if (decode_stat_block(db, b, sums, si, se) < 0)
			goto out;
	}
	if (fc != n) {
		fth_error("%s: the children ranges end at %u, not at %u contexts", r->path, fc, n);
		goto out;
	}
	if (nsum != db->nsum) {
		fth_error("%s: %llu summary entries where %llu were announced", r->path,
			  (unsigned long long)nsum, (unsigned long long)db->nsum);
		goto out;
	}
	for (uint32_t b = 0; b < c->nlists; b++) {
		struct list_slot *l = &c->lists[keep ? b : 0];
		if (decode_list_block(db, b, l) < 0)
			goto out;
		if (keep) {
			l->used = ++c->clock;
			c->list_at[b] = b;
		}
	}
	if (!keep)
		c->lists[0].block = DBFILE_NONE; /* not indexed: decoded again when asked for */
	rc = 0;
out:
	free(nch);
	free(tmp);
	free(rs.start);
	free(rs.metric);
	free(rs.val);
	free(si);
	free(se);
	return rc;
}

static int init_cache(struct dbfile *db, uint32_t list_block)
{
	struct dbfile_cache *c = xcalloc(1, sizeof(*c));
	db->cache = c;
	c->block = db->block;
	c->nblocks = (uint32_t)(((uint64_t)db->ncontexts + db->block - 1) / db->block);
	c->list_block = list_block;
	c->nlists = (uint32_t)(((uint64_t)db->nfunctions + list_block - 1) / list_block);
	if (c->nblocks > DBFILE_MAX_BLOCKS)
		return fth_error("%s: %u blocks of %u contexts are too many", db_name(db),
				 c->nblocks, db->block);
	if (c->nlists > DBFILE_MAX_LIST_CHUNKS)
		return fth_error("%s: %u blocks of %u functions are too many", db_name(db),
				 c->nlists, list_block);
	c->slot = FTH_MIN(db->block, db->ncontexts);
	/* Every context takes 10 bytes at least: the counts must fit in the blocks. */
	uint64_t raw = 0;
	for (uint32_t i = 0; i < db->summary_file.nchunks; i++)
		if (db->summary_file.toc[i].id == DBFILE_CHUNK_CONTEXTS)
			raw += db->summary_file.toc[i].raw;
	if (raw / 10 < db->ncontexts)
		return fth_error("%s: %u contexts cannot fit in %llu bytes", db_name(db),
				 db->ncontexts, (unsigned long long)raw);
	c->first_child = xcalloc((size_t)c->nblocks + 1, sizeof(uint32_t));
	c->nsum = xcalloc((size_t)c->nblocks + 1, sizeof(uint64_t));
	c->ctx_at = xmalloc(((size_t)c->nblocks + 1) * sizeof(uint32_t));
	c->sum_at = xmalloc(((size_t)c->nblocks + 1) * sizeof(uint32_t));
	c->thread_at = xmalloc(((size_t)c->nblocks + 1) * sizeof(uint32_t));
	c->list_at = xmalloc(((size_t)c->nlists + 1) * sizeof(uint32_t));
	for (uint32_t b = 0; b <= c->nblocks; b++)
		c->ctx_at[b] = c->sum_at[b] = c->thread_at[b] = DBFILE_NONE;
	for (uint32_t b = 0; b <= c->nlists; b++)
		c->list_at[b] = DBFILE_NONE;
	c->stat_cached = DBFILE_NONE;
	return dbfile_cache_blocks(db, DBFILE_CACHE_CONTEXTS, DBFILE_CACHE_ROWS, DBFILE_CACHE_LISTS);
}

int dbfile_cache_blocks(struct dbfile *db, uint32_t contexts, uint32_t rows, uint32_t lists)
{
	struct dbfile_cache *c = db->cache;
	if (!c)
		return fth_error("%s: not open", db_name(db));
	contexts = FTH_MAX(1, FTH_MIN(contexts, c->nblocks));
	/* The sums and a thread's rows of every block, at most. */
	rows = FTH_MAX(1, FTH_MIN(rows, 2 * c->nblocks));
	lists = FTH_MAX(1, FTH_MIN(lists, c->nlists));
	if (contexts > c->nctx) {
		c->ctx = xreallocarray(c->ctx, contexts, sizeof(*c->ctx));
		for (uint32_t i = c->nctx; i < contexts; i++)
			c->ctx[i] = (struct ctx_slot){ .block = DBFILE_NONE };
		c->nctx = contexts;
	}
	if (rows > c->nrows) {
		c->rows = xreallocarray(c->rows, rows, sizeof(*c->rows));
		for (uint32_t i = c->nrows; i < rows; i++)
			c->rows[i] = (struct row_slot){ .block = DBFILE_NONE };
		c->nrows = rows;
	}
	if (lists > c->nlist) {
		c->lists = xreallocarray(c->lists, lists, sizeof(*c->lists));
		for (uint32_t i = c->nlist; i < lists; i++)
			c->lists[i] = (struct list_slot){ .block = DBFILE_NONE };
		c->nlist = lists;
	}
	return 0;
}

int dbfile_context(struct dbfile *db, uint32_t ctx, struct dbfile_context *out)
{
	struct dbfile_cache *c = db->cache;
	if (!c || ctx >= db->ncontexts)
		return fth_error("%s: no context %u", db_name(db), ctx);
	uint32_t b = ctx / db->block;
	struct ctx_slot *slot = NULL;
	if (c->ctx_at[b] != DBFILE_NONE && c->ctx[c->ctx_at[b]].block == b)
		slot = &c->ctx[c->ctx_at[b]];
	if (!slot) {
		slot = &c->ctx[LRU_SLOT(c->ctx, c->nctx)];
		if (slot->block != DBFILE_NONE)
			c->ctx_at[slot->block] = DBFILE_NONE;
		slot->block = DBFILE_NONE;
		if (!slot->c)
			slot->c = xcalloc(c->slot, sizeof(*slot->c));
		if (decode_context_block(db, b, slot->c, c->first_child[b]) < 0)
			return -1;
		slot->block = b;
		c->ctx_at[b] = (uint32_t)(slot - c->ctx);
	}
	slot->used = ++c->clock;
	*out = slot->c[ctx - b * db->block];
	return 0;
}

/* The row slot of (THREAD, B), decoding it when not cached. */
static int decode_thread_block(struct dbfile *db, uint32_t t, uint32_t b, struct row_slot *r);

static struct row_slot *row_block(struct dbfile *db, uint32_t thread, uint32_t b)
{
	struct dbfile_cache *c = db->cache;
	uint32_t *at = thread == DBFILE_NONE ? c->sum_at : c->thread_at;
	if (at[b] != DBFILE_NONE) {
		struct row_slot *s = &c->rows[at[b]];
		if (s->block == b && s->thread == thread) {
			s->used = ++c->clock;
			return s;
		}
	}
	for (uint32_t i = 0; i < c->nrows; i++) {
		struct row_slot *s = &c->rows[i];
		if (s->block == b && s->thread == thread) {
			s->used = ++c->clock;
			at[b] = i;
			return s;
		}
	}
	struct row_slot *victim = &c->rows[LRU_SLOT(c->rows, c->nrows)];
	if (victim->block != DBFILE_NONE) {
		uint32_t *vat = victim->thread == DBFILE_NONE ? c->sum_at : c->thread_at;
		if (vat[victim->block] == (uint32_t)(victim - c->rows))
			vat[victim->block] = DBFILE_NONE;
	}
	victim->block = DBFILE_NONE;
	int rc = thread == DBFILE_NONE ? decode_summary_block(db, b, victim, c->nsum[b])
				       : decode_thread_block(db, thread, b, victim);
	if (rc < 0)
		return NULL;
	victim->block = b;
	victim->thread = thread;
	victim->used = ++c->clock;
	at[b] = (uint32_t)(victim - c->rows);
	if (thread == DBFILE_NONE && c->stat_cached == b)
		c->stat_cached = DBFILE_NONE; /* its sums were decoded again: decode it again too */
	return victim;
}

static int function_list(struct dbfile *db, uint32_t f, int which, uint32_t **list, uint32_t *n);

static int row_of(struct dbfile *db, uint32_t thread, uint32_t ctx, struct dbfile_row *out)
{
	memset(out, 0, sizeof(*out));
	if (!db->cache || ctx >= db->ncontexts)
		return fth_error("%s: no context %u", db_name(db), ctx);
	uint32_t b = ctx / db->block, at = ctx - b * db->block;
	struct row_slot *r = row_block(db, thread, b);
	if (!r)
		return -1;
	out->n = r->start[at + 1] - r->start[at];
	out->metric = r->metric + r->start[at];
	out->val = r->val + 2 * (size_t)r->start[at];
	return 0;
}

int dbfile_load_blocks(struct dbfile *db, uint32_t thread)
{
	struct dbfile_cache *c = db->cache;
	if (!c)
		return fth_error("%s: not open", db_name(db));
	if (dbfile_cache_blocks(db, UINT32_MAX, UINT32_MAX, UINT32_MAX) < 0)
		return -1;
	struct dbfile_context x;
	for (uint32_t b = 0; b < c->nblocks; b++)
		if (dbfile_context(db, b * db->block, &x) < 0 || !row_block(db, DBFILE_NONE, b) ||
		    (thread != DBFILE_NONE && !row_block(db, thread, b)))
			return -1;
	for (uint32_t b = 0; b < c->nlists; b++) {
		uint32_t *list, n;
		if (function_list(db, b * c->list_block, 0, &list, &n) < 0)
			return -1;
		free(list);
	}
	return 0;
}

int dbfile_summary_row(struct dbfile *db, uint32_t ctx, struct dbfile_row *out)
{
	return row_of(db, DBFILE_NONE, ctx, out);
}

int dbfile_stats(struct dbfile *db, uint32_t ctx, uint16_t metric, struct dbfile_stat *incl,
		 struct dbfile_stat *excl)
{
	memset(incl, 0, sizeof(*incl));
	memset(excl, 0, sizeof(*excl));
	if (!db->cache || ctx >= db->ncontexts)
		return fth_error("%s: no context %u", db_name(db), ctx);
	struct dbfile_cache *c = db->cache;
	uint32_t b = ctx / db->block, at = ctx - b * db->block;
	struct row_slot *r = row_block(db, DBFILE_NONE, b);
	if (!r)
		return -1;
	uint32_t j = r->start[at];
	while (j < r->start[at + 1] && r->metric[j] != metric)
		j++;
	if (j == r->start[at + 1])
		return 0;
	if (c->stat_cached != b) {
		uint64_t n = c->nsum[b];
		if (n > c->stat_cap) {
			c->stat_cap = n;
			c->stat_incl = xreallocarray(c->stat_incl, n, sizeof(*c->stat_incl));
			c->stat_excl = xreallocarray(c->stat_excl, n, sizeof(*c->stat_excl));
		}
		c->stat_cached = DBFILE_NONE;
		if (decode_stat_block(db, b, r, c->stat_incl, c->stat_excl) < 0)
			return -1;
		c->stat_cached = b;
	}
	*incl = c->stat_incl[j];
	*excl = c->stat_excl[j];
	return 0;
}

static int function_list(struct dbfile *db, uint32_t f, int which, uint32_t **list, uint32_t *n)
{
	*list = NULL;
	*n = 0;
	if (!db->cache || f >= db->nfunctions)
		return fth_error("%s: no function %u", db_name(db), f);
	struct dbfile_cache *c = db->cache;
	uint32_t b = f / c->list_block;
	struct list_slot *l = NULL;
	if (c->list_at[b] != DBFILE_NONE && c->lists[c->list_at[b]].block == b)
		l = &c->lists[c->list_at[b]];
	if (!l) {
		l = &c->lists[LRU_SLOT(c->lists, c->nlist)];
		if (l->block != DBFILE_NONE)
			c->list_at[l->block] = DBFILE_NONE;
		if (decode_list_block(db, b, l) < 0)
			return -1;
		c->list_at[b] = (uint32_t)(l - c->lists);
	}
	l->used = ++c->clock;
	uint32_t k = 2 * (f - b * c->list_block) + (uint32_t)which;
	uint32_t a = l->start[k], e = l->start[k + 1];
	*list = xmalloc(((size_t)(e - a) + 1) * sizeof(uint32_t));
	memcpy(*list, l->item + a, (size_t)(e - a) * sizeof(uint32_t));
	*n = e - a;
	return 0;
}

int dbfile_function_contexts(struct dbfile *db, uint32_t f, uint32_t **list, uint32_t *n)
{
	return function_list(db, f, 0, list, n);
}

int dbfile_inlined_contexts(struct dbfile *db, uint32_t f, uint32_t **list, uint32_t *n)
{
	return function_list(db, f, 1, list, n);
}

/* ---- threads.fdb ---- */

int dbfile_open_threads(struct dbfile *db)
{
	if (db->threads_open)
		return 0;
	if (db->flags & DBFILE_FLAG_NO_THREADS)
		return fth_error("%s: per-thread values were not kept (prof --metric-db=summary)",
				 db->dir ? db->dir : "database");
	char *path = xpath_join(db->dir ? db->dir : ".", DBFILE_THREADS);
	struct cf_reader *r = &db->threads_file;
	int rc = cf_open(r, path, DBFILE_MAGIC, "database file", DBFILE_MAJOR);
	free(path);
	if (rc < 0)
		return -1;
	struct cf_stream s;
	uint64_t want[5] = { 0, db->nthreads, db->thread_group, db->block, db->ncontexts };
	bool seen[5] = { false };
	if (r->major != DBFILE_MAJOR) {
		fth_error("%s: database format version %u.%u, not %u", r->path, r->major, r->minor,
			  DBFILE_MAJOR);
		goto fail_close;
	}
	if (cf_open_unique(r, DBFILE_CHUNK_THREAD_INFO, &s) < 0)
		goto fail_close;
	for (;;) {
		unsigned f, wire;
		uint64_t v;
		if (cf_get_tag(&s, &f, &wire) < 0)
			goto fail;
		if (f == 0)
			break;
		if (f > TINF_NCONTEXTS) {
			if (cf_skip_field(&s, wire) < 0)
				goto fail;
			continue;
		}
		if (cf_get_varint_field(&s, wire, &v) < 0)
			goto fail;
		if (v != want[f]) {
			cf_stream_error(&s, "field %u: %llu where the summary has %llu", f,
					(unsigned long long)v, (unsigned long long)want[f]);
			goto fail;
		}
		seen[f] = true;
	}
	if (!seen[1] || !seen[2] || !seen[3] || !seen[4]) {
		cf_stream_error(&s, "a field is missing");
		goto fail;
	}
	if (cf_stream_finish(&s) < 0)
		goto fail_close;
	uint64_t chunks = 0,
		 need = ((uint64_t)db->nthreads + db->thread_group - 1) / db->thread_group;
	for (uint32_t i = 0; i < r->nchunks; i++)
		if (r->toc[i].id == DBFILE_CHUNK_THREAD_VALUES) {
			chunks++;
			if (r->toc[i].flags != 0) {
				fth_error("%s: TVAL chunks must be stored", r->path);
				goto fail_close;
			}
		}
	if (chunks != need) {
		fth_error("%s: %llu TVAL chunks where %llu are needed", r->path,
			  (unsigned long long)chunks, (unsigned long long)need);
		goto fail_close;
	}
	db->threads_open = true;
	return 0;
fail:
	cf_stream_free(&s);
fail_close:
	cf_close(r);
	return -1;
}

/*
 * Piece P of thread T (0 .. nblocks - 1: values of a block; nblocks: the flat profiles): its
 * raw bytes in the cache's buffer, *LEN of them (0: no piece).
 */
static int thread_piece(struct dbfile *db, uint32_t t, uint32_t p, const uint8_t **raw,
			size_t *len)
{
	*raw = NULL;
	*len = 0;
	if (t >= db->nthreads)
		return fth_error("%s: no thread %u", db->dir ? db->dir : "database", t);
	if (dbfile_open_threads(db) < 0)
		return -1;
	struct dbfile_cache *c = db->cache;
	struct cf_reader *r = &db->threads_file;
	uint32_t chunk = t / db->thread_group, g0 = chunk * db->thread_group;
	const struct cf_entry *e = cf_find(r, DBFILE_CHUNK_THREAD_VALUES, chunk);
	if (!e)
		return fth_error("%s: no values for thread %u", r->path, t);
	uint32_t k = db->nthreads - g0 < db->thread_group ? db->nthreads - g0 : db->thread_group;
	uint64_t per = (uint64_t)c->nblocks + 1, idx = (uint64_t)(t - g0) * per + p;
	uint64_t table = ((uint64_t)k * per + 1) * 8;
	uint8_t two[16];
	if (table > e->stored)
		return fth_error("%s: chunk TVAL %u: offset table past its end", r->path, chunk);
	if (cf_pread(r->fd, r->path, two, 16, e->offset + idx * 8) < 0)
		return -1;
	uint64_t a = le_get64(two), b = le_get64(two + 8);
	if (a < table || b < a || b > e->stored || (b > a && b - a < 9))
		return fth_error("%s: thread %u: piece %u at %llu..%llu out of range", r->path, t,
				 p, (unsigned long long)a, (unsigned long long)b);
	if (a == b)
		return 0;
	size_t stored = (size_t)(b - a);
	if (stored > c->piece_cap) {
		c->piece_cap = stored;
		free(c->piece);
		c->piece = xmalloc(stored);
	}
	if (cf_pread(r->fd, r->path, c->piece, stored, e->offset + a) < 0)
		return -1;
	if (piece_get(&c->codec, c->piece, stored, raw, len) < 0)
		return fth_error_prefix("%s: thread %u: piece %u", r->path, t, p);
	return 0;
}

/* Decoding of a piece's raw bytes: the first failure's message is WHAT. */
struct mem {
	const uint8_t *p, *end;
};

static int mem_varint(struct mem *m, uint64_t *v)
{
	if (le_get_varint(&m->p, m->end, v) < 0)
		return fth_error("malformed number");
	return 0;
}

static int mem_number(struct mem *m, double *d)
{
	uint64_t u;
	if (mem_varint(m, &u) < 0)
		return -1;
	if (!(u & 1)) {
		if ((u >> 1) >= (1ULL << 53))
			return fth_error("integer value too large");
		*d = (double)(u >> 1);
		return 0;
	}
	if (u != 1 || m->end - m->p < 8)
		return fth_error("bad value");
	*d = le_bits_f64(le_get64(m->p));
	m->p += 8;
	return 0;
}

/* The next metric index of a row: a delta from PREV, the row's one before (FIRST: none). */
static int mem_metric(struct mem *m, bool first, uint64_t prev, uint32_t nmetrics,
		      uint16_t *out)
{
	uint64_t d;
	if (mem_varint(m, &d) < 0)
		return -1;
	uint64_t x = first ? d : prev + 1 + d;
	if (d >= nmetrics || x >= nmetrics)
		return fth_error("metric index out of range");
	*out = (uint16_t)x;
	return 0;
}

int dbfile_piece_values(const uint8_t *raw, size_t len, uint32_t nc, uint32_t nmetrics,
			const struct dbfile_piece_sink *sink)
{
	struct mem m = { raw, raw + len };
	uint64_t n = 0;
	if (len && (mem_varint(&m, &n) < 0 || n > len / 3 || n == 0))
		return fth_error("bad count of values");
	if (sink->begin)
		sink->begin(sink->arg, n);
	uint64_t j = 0;
	uint32_t next = 0; /* the block's contexts below NEXT are done */
	while (j < n) {
		uint64_t d, k;
		if (mem_varint(&m, &d) < 0 || mem_varint(&m, &k) < 0)
			return -1;
		uint64_t at = (next == 0 && j == 0) ? d : (uint64_t)next + d;
		if (d >= nc || at >= nc || k == 0 || k > nmetrics || k > n - j)
			return fth_error("context or count out of range");
		next = (uint32_t)at + 1;
		uint16_t metric = 0;
		for (uint64_t e = j + k, s = j; j < e; j++) {
			double in, ex;
			if (mem_metric(&m, j == s, metric, nmetrics, &metric) < 0 ||
			    mem_number(&m, &in) < 0 || mem_number(&m, &ex) < 0)
				return -1;
			sink->value(sink->arg, (uint32_t)at, metric, in, ex);
		}
	}
	if (m.p != m.end)
		return fth_error("bytes after the values");
	return 0;
}

/* Rows of a block from a piece: the sink's side. */
struct row_fill {
	struct row_slot *r;
	uint32_t slot, next;
	uint64_t j;
};

static void row_begin(void *arg, uint64_t n)
{
	struct row_fill *f = arg;
	row_reserve(f->r, f->slot, n ? n : 1);
}

static void row_value(void *arg, uint32_t at, uint16_t metric, double incl, double excl)
{
	struct row_fill *f = arg;
	struct row_slot *r = f->r;
	for (; f->next <= at; f->next++)
		r->start[f->next] = (uint32_t)f->j;
	r->metric[f->j] = metric;
	r->val[2 * f->j] = incl;
	r->val[2 * f->j + 1] = excl;
	f->j++;
}

static int decode_thread_block(struct dbfile *db, uint32_t t, uint32_t b, struct row_slot *r)
{
	const uint8_t *raw;
	size_t len;
	if (thread_piece(db, t, b, &raw, &len) < 0)
		return -1;
	uint32_t first = b * db->block, end = block_end(db, b), nc = end - first;
	struct row_fill f = { r, db->cache->slot, 0, 0 };
	struct dbfile_piece_sink sink = { row_begin, row_value, &f };
	if (dbfile_piece_values(raw, len, nc, db->nmetrics, &sink) < 0)
		return fth_error_prefix("%s: thread %u: piece %u", db->threads_file.path, t, b);
	for (; f.next <= nc; f.next++)
		r->start[f.next] = (uint32_t)f.j;
	return 0;
}

int dbfile_thread_row(struct dbfile *db, uint32_t t, uint32_t ctx, struct dbfile_row *out)
{
	if (t >= db->nthreads) {
		memset(out, 0, sizeof(*out));
		return fth_error("%s: no thread %u", db->dir ? db->dir : "database", t);
	}
	return row_of(db, t, ctx, out);
}

int dbfile_read_thread(struct dbfile *db, uint32_t thread, struct dbfile_values *out)
{
	dbfile_values_reset(out);
	if (!db->cache)
		return fth_error("%s: not open", db_name(db));
	struct row_slot r = { 0 };
	int rc = 0;
	for (uint32_t b = 0; b < db->cache->nblocks && rc == 0; b++) {
		rc = decode_thread_block(db, thread, b, &r);
		uint32_t first = b * db->block, nc = block_end(db, b) - first;
		for (uint32_t i = 0; i < nc && rc == 0; i++)
			for (uint32_t j = r.start[i]; j < r.start[i + 1]; j++)
				dbfile_values_push(out, first + i, r.metric[j], r.val[2 * j],
						   r.val[2 * j + 1]);
	}
	free(r.start);
	free(r.metric);
	free(r.val);
	return rc;
}

static int mem_flat(struct mem *m, uint32_t rows, uint32_t nmetrics, struct dbfile_flat *fl)
{
	uint64_t n;
	memset(fl, 0, sizeof(*fl));
	if (mem_varint(m, &n) < 0)
		return -1;
	if (n > (uint64_t)(m->end - m->p) / 3)
		return fth_error("bad count of flat values");
	fl->nrows = rows;
	fl->start = xcalloc((size_t)rows + 1, sizeof(uint32_t));
	fl->metric = xcalloc(n ? n : 1, sizeof(uint16_t));
	fl->incl = xcalloc(n ? n : 1, sizeof(double));
	fl->excl = xcalloc(n ? n : 1, sizeof(double));
	uint64_t j = 0;
	for (uint32_t i = 0; i < rows; i++) {
		uint64_t k;
		fl->start[i] = (uint32_t)j;
		if (mem_varint(m, &k) < 0)
			return -1;
		if (k > n - j || k > nmetrics)
			return fth_error("too many flat values in a row");
		for (uint64_t e = j + k; j < e; j++)
			if (mem_metric(m, j == fl->start[i], j ? fl->metric[j - 1] : 0, nmetrics,
				       &fl->metric[j]) < 0 ||
			    mem_number(m, &fl->incl[j]) < 0 || mem_number(m, &fl->excl[j]) < 0)
				return -1;
	}
	if (j != n)
		return fth_error("flat values announced and found differ");
	fl->start[rows] = (uint32_t)j;
	fl->nvalues = n;
	return 0;
}

int dbfile_thread_flats(struct dbfile *db, uint32_t t, struct dbfile_flat *fn,
			struct dbfile_flat *grp, struct dbfile_flat *mod)
{
	memset(fn, 0, sizeof(*fn));
	memset(grp, 0, sizeof(*grp));
	memset(mod, 0, sizeof(*mod));
	if (!db->cache)
		return fth_error("%s: not open", db_name(db));
	const uint8_t *raw;
	size_t len;
	if (thread_piece(db, t, db->cache->nblocks, &raw, &len) < 0)
		return -1;
	struct mem m = { raw, raw + len };
	if ((!len && fth_error("no flat profiles") < 0) ||
	    mem_flat(&m, db->nfunctions, db->nmetrics, fn) < 0 ||
	    mem_flat(&m, db->ngroups, db->nmetrics, grp) < 0 ||
	    mem_flat(&m, db->nmodules + 1, db->nmetrics, mod) < 0 ||
	    (m.p != m.end && fth_error("bytes after the flat profiles") < 0)) {
		dbfile_flats_release(fn, grp, mod);
		return fth_error_prefix("%s: thread %u: piece %u", db->threads_file.path, t,
					db->cache->nblocks);
	}
	return 0;
}

static int read_summary_file(const char *path, struct dbfile *db, bool keep)
{
	memset(db, 0, sizeof(*db));
	struct cf_reader r;
	if (cf_open(&r, path, DBFILE_MAGIC, "database file", DBFILE_MAJOR) < 0)
		return -1;
	db->major = r.major;
	db->minor = r.minor;
	uint32_t list_block = 0;
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
	if (read_info(&r, db, &list_block) < 0 || read_strings(&r, db) < 0 ||
	    read_modules(&r, db) < 0 || read_functions(&r, db) < 0 || read_groups(&r, db) < 0 ||
	    read_metrics(&r, db) < 0 || read_threads(&r, db) < 0 ||
	    read_flat(&r, DBFILE_CHUNK_FLAT, db->nfunctions, db->nmetrics, &db->flat) < 0 ||
	    read_flat(&r, DBFILE_CHUNK_GROUP_FLAT, db->ngroups, db->nmetrics, &db->group_flat) <
		    0 ||
	    read_flat(&r, DBFILE_CHUNK_MODULE_FLAT, db->nmodules + 1, db->nmetrics,
		      &db->module_flat) < 0)
		goto out;
	db->summary_file = r;
	db->summary_open = true;
	if (init_cache(db, list_block) < 0 || check_blocks(db, keep) < 0)
		goto out;
	rc = 0;
out:
	if (rc < 0) {
		if (!db->summary_open)
			cf_close(&r);
		char *msg = xstrdup(fth_errmsg());
		dbfile_close(db);
		fth_error("%s", msg);
		free(msg);
	}
	return rc;
}

int dbfile_read_summary_file(const char *path, struct dbfile *db)
{
	return read_summary_file(path, db, false);
}

static int open_database(const char *dir, struct dbfile *db, bool keep)
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
		path = xpath_join(dir, DBFILE_SUMMARY);
		d = xstrdup(dir);
	}
	int rc = read_summary_file(path, db, keep);
	free(path);
	if (rc < 0) {
		free(d);
		return -1;
	}
	db->dir = d;
	return 0;
}

int dbfile_open(const char *dir, struct dbfile *db)
{
	return open_database(dir, db, false);
}

int dbfile_open_whole(const char *dir, struct dbfile *db)
{
	return open_database(dir, db, true);
}

void dbfile_close(struct dbfile *db)
{
	free(db->program);
	free_strings(db->notes, db->nnotes);
	free_strings(db->strings, db->nstrings);
	for (uint32_t i = 0; i < db->nmodules; i++)
		free(db->modules[i].build_id);
	free(db->modules);
	free(db->functions);
	free(db->groups);
	dbfile_metrics_free(db->metrics, db->nmetrics);
	dbfile_threads_free(db->threads, db->nthreads);
	free(db->contexts);
	free(db->sum_start);
	free(db->sum_metric);
	free(db->sum_incl);
	free(db->sum_excl);
	dbfile_flats_release(&db->flat, &db->group_flat, &db->module_flat);
	cache_free(db->cache);
	if (db->summary_open)
		cf_close(&db->summary_file);
	if (db->threads_open)
		cf_close(&db->threads_file);
	free(db->dir);
	memset(db, 0, sizeof(*db));
}

const char *dbfile_str(const struct dbfile *db, uint32_t index)
{
	return index < db->nstrings ? db->strings[index] : "?";
}

const char *dbfile_kind_name(unsigned kind)
{
	static const char *const names[] = { DBFILE_KINDS(FTH_NAME_ENTRY) };
	return fth_name_at(names, ARRAY_SIZE(names), kind, "?");
}
