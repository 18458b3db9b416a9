/* SPDX-License-Identifier: MIT */
/*
 * dbtrace.c: the database's traces (dbtrace.h): the spool prof writes while merging, the
 * conversion into traces.fdb with its levels of summaries, and the reader of pieces on demand.
 * Nothing read is trusted: counts are checked against the bytes that hold them, contexts and
 * threads against the database's, times against their piece's range.
 */
#include "compat.h"
#include "dbtrace.h"
#include "buf.h"
#include "dbfile.h"
#include "dbfile-index.h"
#include "error.h"
#include "le.h"
#include "search.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHUNK_SPOOL CF_ID('R', 'S', 'P', 'L')
#define CHUNK_INFO CF_ID('R', 'I', 'N', 'F')
#define CHUNK_INDEX CF_ID('R', 'I', 'D', 'X')
#define CHUNK_DATA CF_ID('R', 'D', 'A', 'T')
#define SPOOL_MAGIC "FTHMTRSP"

enum { RINF_CONTEXTS = 1, RINF_THREADS, RINF_TRACED, RINF_PIECE, RINF_UNIT, RINF_FANOUT, RINF_TOP };

/* ---- the spool ---- */

int dbtrace_spool_open(struct dbtrace_spool *s, const char *dir)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (dbfile_create(dir, DBTRACE_SPOOL, &s->path, &s->fd) < 0)
		return -1;
	s->ws = xmalloc(cf_writer_workspace_size(0));
	if (cf_writer_open(&s->cf, s->fd, s->path, SPOOL_MAGIC, DBFILE_MAJOR, DBFILE_MINOR, 0, s->ws,
			   cf_writer_workspace_size(0)) < 0) {
		dbtrace_spool_abort(s);
		return -1;
	}
	return 0;
}

int dbtrace_spool_add(struct dbtrace_spool *s, uint32_t thread, const struct dbtrace_record *rec,
		      uint64_t n)
{
	struct cf_writer *cf = &s->cf;
	if (cf_chunk_begin(cf, CHUNK_SPOOL) < 0 || cf_put_varint(cf, thread) < 0 ||
	    cf_put_varint(cf, n) < 0)
		return -1;
	uint8_t tmp[8192];
	size_t k = 0;
	uint64_t prev = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = rec[i].time < prev ? prev : rec[i].time;
		k += le_put_varint(tmp + k, t - prev);
		k += le_put_varint(tmp + k, rec[i].context);
		prev = t;
		if (k > sizeof(tmp) - 24) {
			if (cf_put(cf, tmp, k) < 0)
				return -1;
			k = 0;
		}
	}
	if (k && cf_put(cf, tmp, k) < 0)
		return -1;
	s->records += n;
	return cf_chunk_end(cf);
}

int dbtrace_spool_finish(struct dbtrace_spool *s)
{
	return dbfile_end_spool(&s->fd, &s->path, &s->ws, cf_writer_finish(&s->cf));
}

void dbtrace_spool_abort(struct dbtrace_spool *s)
{
	dbfile_end_spool(&s->fd, &s->path, &s->ws, -1);
}

/* ---- writing traces.fdb ---- */

/* A thread's trace being converted: its records, renumbered, and its levels as built. */
struct converting {
	struct dbtrace_record *rec;
	uint64_t n, cap;
	struct dbtrace_unit *units[DBTRACE_MAX_LEVELS]; /* levels 1 .. */
	uint64_t nunits[DBTRACE_MAX_LEVELS];
	struct dbtrace_thread t;
	uint32_t *scratch; /* for tallies */
};

/* Keep in U the DBTRACE_TOP contexts of the N (context, count) pairs with the largest counts
 * (ties: the smaller context first).  PAIRS is sorted by context and may repeat contexts. */
static void keep_top(struct dbtrace_unit *u, const uint32_t *ctx, const uint32_t *count, size_t n)
{
	u->k = 0;
	for (size_t i = 0; i < n;) {
		uint32_t c = ctx[i], sum = 0;
		while (i < n && ctx[i] == c)
			sum += count[i++];
		uint32_t at = u->k < DBTRACE_TOP ? u->k : DBTRACE_TOP;
		while (at > 0 && (u->count[at - 1] < sum))
			at--;
		if (at >= DBTRACE_TOP)
			continue;
		uint32_t last = u->k < DBTRACE_TOP ? u->k : DBTRACE_TOP - 1;
		memmove(&u->context[at + 1], &u->context[at], (last - at) * sizeof(uint32_t));
		memmove(&u->count[at + 1], &u->count[at], (last - at) * sizeof(uint32_t));
		u->context[at] = c;
		u->count[at] = sum;
		if (u->k < DBTRACE_TOP)
			u->k++;
	}
}

/* Level 1 from the records: a unit per DBTRACE_UNIT of them, its contexts counted (a unit
 * has few distinct ones: a short list, kept in context order). */
static void build_level1(struct converting *cv)
{
	uint64_t nu = (cv->n + DBTRACE_UNIT - 1) / DBTRACE_UNIT;
	struct dbtrace_unit *u = xcalloc(nu ? nu : 1, sizeof(*u));
	uint32_t ctx[DBTRACE_UNIT], count[DBTRACE_UNIT];
	for (uint64_t j = 0; j < nu; j++) {
		uint64_t a = j * DBTRACE_UNIT, b = a + DBTRACE_UNIT < cv->n ? a + DBTRACE_UNIT : cv->n;
		uint32_t d = 0;
		for (uint64_t i = a; i < b; i++) {
			uint32_t c = cv->rec[i].context, at = d;
			while (at > 0 && ctx[at - 1] > c)
				at--;
			if (at > 0 && ctx[at - 1] == c) {
				count[at - 1]++;
				continue;
			}
			memmove(&ctx[at + 1], &ctx[at], (d - at) * sizeof(*ctx));
			memmove(&count[at + 1], &count[at], (d - at) * sizeof(*count));
			ctx[at] = c;
			count[at] = 1;
			d++;
		}
		u[j].t_lo = cv->rec[a].time;
		u[j].t_hi = cv->rec[b - 1].time;
		u[j].n = (uint32_t)(b - a);
		keep_top(&u[j], ctx, count, d);
	}
	cv->units[1] = u;
	cv->nunits[1] = nu;
}

struct pair {
	uint32_t context, count;
};

static int cmp_pair_context(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	return (x->context > y->context) - (x->context < y->context);
}

/* Level L + 1 from level L: a unit per DBTRACE_FANOUT of its units. */
static void build_level_above(struct converting *cv, uint32_t l)
{
	const struct dbtrace_unit *below = cv->units[l];
	uint64_t nb = cv->nunits[l], nu = (nb + DBTRACE_FANOUT - 1) / DBTRACE_FANOUT;
	struct dbtrace_unit *u = xcalloc(nu ? nu : 1, sizeof(*u));
	struct pair pairs[DBTRACE_FANOUT * DBTRACE_TOP];
	uint32_t ctx[DBTRACE_FANOUT * DBTRACE_TOP], count[DBTRACE_FANOUT * DBTRACE_TOP];
	for (uint64_t j = 0; j < nu; j++) {
		uint64_t a = j * DBTRACE_FANOUT, b = a + DBTRACE_FANOUT < nb ? a + DBTRACE_FANOUT : nb;
		size_t np = 0;
		u[j].t_lo = below[a].t_lo;
		u[j].t_hi = below[b - 1].t_hi;
		for (uint64_t i = a; i < b; i++) {
			u[j].n += below[i].n;
			for (uint32_t k = 0; k < below[i].k; k++)
				pairs[np++] = (struct pair){ below[i].context[k], below[i].count[k] };
		}
		qsort(pairs, np, sizeof(*pairs), cmp_pair_context);
		for (size_t i = 0; i < np; i++) {
			ctx[i] = pairs[i].context;
			count[i] = pairs[i].count;
		}
		keep_top(&u[j], ctx, count, np);
	}
	cv->units[l + 1] = u;
	cv->nunits[l + 1] = nu;
}

/* Encode level L's units A .. B into RAW (level 0: the records). */
static void encode_units(const struct converting *cv, uint32_t l, uint64_t a, uint64_t b,
			 struct buf *raw)
{
	buf_reset(raw);
	if (l == 0) {
		uint64_t prev = cv->rec[a].time;
		int64_t prev_ctx = 0;
		uint8_t *p = buf_reserve(raw, (size_t)(b - a) * 20), *start = p;
		for (uint64_t i = a; i < b; i++) {
			p += le_put_varint(p, cv->rec[i].time - prev);
			p += le_put_varint(p, le_zigzag((int64_t)cv->rec[i].context - prev_ctx));
			prev = cv->rec[i].time;
			prev_ctx = cv->rec[i].context;
		}
		raw->len += (size_t)(p - start);
		return;
	}
	const struct dbtrace_unit *u = cv->units[l];
	uint64_t prev = u[a].t_lo;
	for (uint64_t i = a; i < b; i++) {
		buf_put_varint(raw, u[i].t_lo - prev);
		buf_put_varint(raw, u[i].t_hi - u[i].t_lo);
		buf_put_varint(raw, u[i].n);
		buf_put_varint(raw, u[i].k);
		for (uint32_t k = 0; k < u[i].k; k++) {
			buf_put_varint(raw, u[i].context[k]);
			buf_put_varint(raw, u[i].count[k]);
		}
		prev = u[i].t_lo;
	}
}

static uint64_t unit_t_lo(const struct converting *cv, uint32_t l, uint64_t i)
{
	return l ? cv->units[l][i].t_lo : cv->rec[i].time;
}

static uint64_t unit_t_hi(const struct converting *cv, uint32_t l, uint64_t i)
{
	return l ? cv->units[l][i].t_hi : cv->rec[i].time;
}

/* Write the converted thread's levels as pieces into the RDAT chunk (*OFFSET its bytes so far),
 * filling its index entry. */
static int put_thread(struct cf_writer *w, struct converting *cv, struct piece_codec *pc,
		      uint64_t *offset)
{
	struct dbtrace_thread *t = &cv->t;
	t->nrecords = cv->n;
	if (!cv->n) {
		t->t_first = t->t_last = 0;
		t->nlevels = 0; /* traced, never sampled */
		return 0;
	}
	t->t_first = cv->rec[0].time;
	t->t_last = cv->rec[cv->n - 1].time;
	build_level1(cv);
	t->nlevels = 2;
	while (t->nlevels < DBTRACE_MAX_LEVELS && cv->nunits[t->nlevels - 1] > DBTRACE_FANOUT) {
		build_level_above(cv, t->nlevels - 1);
		t->nlevels++;
	}
	struct buf raw = BUF_INIT, out = BUF_INIT;
	int rc = 0;
	for (uint32_t l = 0; l < t->nlevels && rc == 0; l++) {
		struct dbtrace_level *lv = &t->level[l];
		uint64_t n = l ? cv->nunits[l] : cv->n;
		lv->records_per_unit = l ? DBTRACE_UNIT : 1;
		for (uint32_t k = 1; k < l; k++)
			lv->records_per_unit *= DBTRACE_FANOUT;
		lv->nunits = n;
		lv->npieces = (uint32_t)((n + DBTRACE_PIECE - 1) / DBTRACE_PIECE);
		lv->piece = xcalloc(lv->npieces, sizeof(*lv->piece));
		for (uint32_t p = 0; p < lv->npieces && rc == 0; p++) {
			uint64_t a = (uint64_t)p * DBTRACE_PIECE;
			uint64_t b = a + DBTRACE_PIECE < n ? a + DBTRACE_PIECE : n;
			encode_units(cv, l, a, b, &raw);
			buf_reset(&out);
			rc = piece_put(pc, raw.data, raw.len, &out);
			if (rc == 0)
				rc = cf_put(w, out.data, out.len);
			lv->piece[p] = (struct dbtrace_piece){ *offset, (uint32_t)out.len,
							       (uint32_t)(b - a), unit_t_lo(cv, l, a),
							       unit_t_hi(cv, l, b - 1) };
			*offset += out.len;
		}
	}
	for (uint32_t l = 1; l < DBTRACE_MAX_LEVELS; l++)
		FREE_AND_NULL(cv->units[l]);
	buf_release(&raw);
	buf_release(&out);
	return rc;
}

/* Read one spooled thread (chunk E) into CV, contexts renumbered through NEW_OF. */
static int read_spooled(struct cf_reader *r, const struct cf_entry *e, const uint32_t *new_of,
			uint32_t ncontexts, uint32_t nthreads, struct converting *cv)
{
	uint8_t *data;
	size_t len;
	if (cf_read_chunk(r, e, &data, &len) < 0)
		return -1;
	const uint8_t *p = data, *end = data + len;
	uint64_t thread, n;
	int rc = -1;
	if (le_get_varint(&p, end, &thread) < 0 || le_get_varint(&p, end, &n) < 0 ||
	    thread >= nthreads || n > len / 2) {
		fth_error("%s: chunk RSPL: a thread's header out of range", r->path);
		goto out;
	}
	if (n > cv->cap) {
		cv->cap = n;
		cv->rec = xreallocarray(cv->rec, n, sizeof(*cv->rec));
	}
	uint64_t time = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t dt, ctx;
		if (le_get_varint(&p, end, &dt) < 0 || le_get_varint(&p, end, &ctx) < 0 ||
		    ctx >= ncontexts || dt > UINT64_MAX - time) {
			fth_error("%s: chunk RSPL: thread %llu: record %llu out of range", r->path,
				  (unsigned long long)thread, (unsigned long long)i);
			goto out;
		}
		time += dt;
		cv->rec[i] = (struct dbtrace_record){ time, new_of ? new_of[ctx] : (uint32_t)ctx };
	}
	if (p != end) {
		fth_error("%s: chunk RSPL: %zu bytes left over", r->path, (size_t)(end - p));
		goto out;
	}
	cv->n = n;
	cv->t.thread = (uint32_t)thread;
	rc = 0;
out:
	free(data);
	return rc;
}

static int put_index(struct cf_writer *w, const struct dbtrace_thread *t, uint32_t ntraced)
{
	if (cf_chunk_begin(w, CHUNK_INDEX) < 0 || cf_put_varint(w, ntraced) < 0)
		return -1;
	for (uint32_t i = 0; i < ntraced; i++) {
		const struct dbtrace_thread *x = &t[i];
		if (cf_put_varint(w, x->thread) < 0 || cf_put_varint(w, x->nrecords) < 0 ||
		    cf_put_varint(w, x->t_first) < 0 || cf_put_varint(w, x->t_last) < 0 ||
		    cf_put_varint(w, x->nlevels) < 0)
			return -1;
		for (uint32_t l = 0; l < x->nlevels; l++) {
			const struct dbtrace_level *lv = &x->level[l];
			if (cf_put_varint(w, lv->nunits) < 0 || cf_put_varint(w, lv->npieces) < 0)
				return -1;
			for (uint32_t p = 0; p < lv->npieces; p++) {
				const struct dbtrace_piece *pc = &lv->piece[p];
				if (cf_put_varint(w, pc->offset) < 0 || cf_put_varint(w, pc->size) < 0 ||
				    cf_put_varint(w, pc->count) < 0 || cf_put_varint(w, pc->t_lo) < 0 ||
				    cf_put_varint(w, pc->t_hi - pc->t_lo) < 0)
					return -1;
			}
		}
	}
	return cf_chunk_end(w);
}

static int cmp_thread(const void *a, const void *b)
{
	const struct dbtrace_thread *x = a, *y = b;
	return (x->thread > y->thread) - (x->thread < y->thread);
}

static int convert(struct cf_reader *r, struct cf_writer *w, const uint32_t *order,
		   uint32_t ncontexts, uint32_t nthreads, int level)
{
	uint32_t *new_of = xmalloc((ncontexts ? ncontexts : 1) * sizeof(*new_of));
	for (uint32_t i = 0; i < ncontexts; i++)
		new_of[order[i]] = i;
	struct dbtrace_thread *traced = NULL;
	uint32_t ntraced = 0;
	size_t alloc = 0;
	struct converting cv;
	memset(&cv, 0, sizeof(cv));
	struct piece_codec pc = { .level = level };
	uint64_t offset = 0;
	bool *seen = xcalloc(nthreads ? nthreads : 1, sizeof(*seen));
	int rc = cf_chunk_begin(w, CHUNK_DATA);
	for (unsigned k = 0; rc == 0; k++) {
		const struct cf_entry *e = cf_find(r, CHUNK_SPOOL, k);
		if (!e)
			break;
		rc = read_spooled(r, e, new_of, ncontexts, nthreads, &cv);
		if (rc < 0)
			continue;
		if (seen[cv.t.thread]) {
			rc = fth_error("%s: thread %u spooled twice", r->path, cv.t.thread);
			break;
		}
		seen[cv.t.thread] = true;
		memset(cv.t.level, 0, sizeof(cv.t.level));
		rc = put_thread(w, &cv, &pc, &offset);
		ALLOC_GROW(traced, ntraced + 1, alloc);
		traced[ntraced++] = cv.t;
	}
	if (rc == 0)
		rc = cf_chunk_end(w);
	if (rc == 0) {
		qsort(traced, ntraced, sizeof(*traced), cmp_thread);
		rc = put_index(w, traced, ntraced);
	}
	if (rc == 0 &&
	    (cf_chunk_begin(w, CHUNK_INFO) < 0 || cf_field_varint(w, RINF_CONTEXTS, ncontexts) < 0 ||
	     cf_field_varint(w, RINF_THREADS, nthreads) < 0 ||
	     cf_field_varint(w, RINF_TRACED, ntraced) < 0 ||
	     cf_field_varint(w, RINF_PIECE, DBTRACE_PIECE) < 0 ||
	     cf_field_varint(w, RINF_UNIT, DBTRACE_UNIT) < 0 ||
	     cf_field_varint(w, RINF_FANOUT, DBTRACE_FANOUT) < 0 ||
	     cf_field_varint(w, RINF_TOP, DBTRACE_TOP) < 0 || cf_record_end(w) < 0 ||
	     cf_chunk_end(w) < 0))
		rc = -1;
	for (uint32_t i = 0; i < ntraced; i++)
		for (uint32_t l = 0; l < traced[i].nlevels; l++)
			free(traced[i].level[l].piece);
	free(traced);
	free(cv.rec);
	free(seen);
	free(new_of);
	piece_codec_release(&pc);
	return rc;
}

struct convert_args {
	const uint32_t *order;
	uint32_t ncontexts, nthreads;
	int level;
};

static int convert_spool(struct cf_reader *r, struct cf_writer *w, void *arg)
{
	const struct convert_args *a = arg;
	return convert(r, w, a->order, a->ncontexts, a->nthreads, a->level);
}

int dbtrace_write(const char *dir, const uint32_t *order, uint32_t ncontexts, uint32_t nthreads,
		  int level)
{
	struct convert_args a = { order, ncontexts, nthreads, level };
	return dbfile_convert_spool(dir, DBTRACE_SPOOL, SPOOL_MAGIC, "trace spool", DBTRACE_FILE,
				    convert_spool, &a);
}

int dbtrace_spool_each(const char *dir, uint32_t ncontexts, uint32_t nthreads,
		       int (*each)(void *arg, uint32_t thread, const struct dbtrace_record *rec,
				   uint64_t n),
		       void *arg)
{
	struct cf_reader r;
	int rc = dbfile_open_spool(dir, DBTRACE_SPOOL, SPOOL_MAGIC, "trace spool", &r);
	if (rc <= 0)
		return rc;
	rc = 0;
	struct converting cv;
	memset(&cv, 0, sizeof(cv));
	for (unsigned k = 0; rc == 0; k++) {
		const struct cf_entry *e = cf_find(&r, CHUNK_SPOOL, k);
		if (!e)
			break;
		rc = read_spooled(&r, e, NULL, ncontexts, nthreads, &cv);
		if (rc == 0)
			rc = each(arg, cv.t.thread, cv.rec, cv.n);
	}
	free(cv.rec);
	cf_close(&r);
	return rc;
}

/* ---- reading ---- */

static int read_info(struct dbtrace *tr)
{
	const struct cf_entry *e = cf_find(&tr->r, CHUNK_INFO, 0);
	if (!e)
		return fth_error("%s: no RINF chunk", tr->r.path);
	struct cf_stream s;
	if (cf_stream_open(&tr->r, e, &s) < 0)
		return -1;
	uint64_t v[RINF_TOP + 1] = { 0 };
	int rc = 0;
	for (;;) {
		unsigned field, wire;
		if (cf_get_tag(&s, &field, &wire) < 0) {
			rc = -1;
			break;
		}
		if (field == 0)
			break; /* the end of the record */
		if (field <= RINF_TOP && wire != 0)
			rc = cf_stream_error(&s, "field %u has type %u", field, wire);
		else if (field <= RINF_TOP)
			rc = cf_get_varint(&s, &v[field]);
		else
			rc = cf_skip_field(&s, wire);
		if (rc < 0)
			break;
	}
	if (rc == 0)
		rc = cf_stream_finish(&s);
	cf_stream_free(&s);
	if (rc < 0)
		return -1;
	if (v[RINF_CONTEXTS] != tr->ncontexts || v[RINF_THREADS] != tr->nthreads)
		return fth_error("%s: for %llu contexts and %llu threads, not this database's %u "
				 "and %u (a traces file of another run?)", tr->r.path,
				 (unsigned long long)v[RINF_CONTEXTS],
				 (unsigned long long)v[RINF_THREADS], tr->ncontexts, tr->nthreads);
	if (v[RINF_TRACED] > tr->nthreads || v[RINF_TOP] != DBTRACE_TOP)
		return fth_error("%s: RINF: %llu traced threads, %llu contexts a unit: not readable "
				 "here", tr->r.path, (unsigned long long)v[RINF_TRACED],
				 (unsigned long long)v[RINF_TOP]);
	tr->ntraced = (uint32_t)v[RINF_TRACED];
	return 0;
}

static int read_index(struct dbtrace *tr)
{
	const struct cf_entry *e = cf_find(&tr->r, CHUNK_INDEX, 0);
	tr->data = cf_find(&tr->r, CHUNK_DATA, 0);
	if (!e || !tr->data)
		return fth_error("%s: no %s chunk", tr->r.path, e ? "RDAT" : "RIDX");
	struct cf_stream s;
	if (cf_stream_open(&tr->r, e, &s) < 0)
		return -1;
	uint64_t n;
	int rc = cf_get_varint(&s, &n);
	if (rc == 0 && n != tr->ntraced)
		rc = cf_stream_error(&s, "%llu threads, RINF says %u", (unsigned long long)n,
				     tr->ntraced);
	tr->traced = xcalloc(tr->ntraced ? tr->ntraced : 1, sizeof(*tr->traced));
	for (uint32_t i = 0; rc == 0 && i < tr->ntraced; i++) {
		struct dbtrace_thread *t = &tr->traced[i];
		uint64_t thread, nlevels;
		if (cf_get_varint(&s, &thread) < 0 || cf_get_varint(&s, &t->nrecords) < 0 ||
		    cf_get_varint(&s, &t->t_first) < 0 || cf_get_varint(&s, &t->t_last) < 0 ||
		    cf_get_varint(&s, &nlevels) < 0) {
			rc = -1;
			break;
		}
		if (thread >= tr->nthreads || (i && thread <= tr->traced[i - 1].thread) ||
		    nlevels > DBTRACE_MAX_LEVELS || t->t_last < t->t_first ||
		    (t->nrecords == 0) != (nlevels == 0)) {
			rc = cf_stream_error(&s, "thread entry %u out of range", i);
			break;
		}
		t->thread = (uint32_t)thread;
		t->nlevels = (uint32_t)nlevels;
		for (uint32_t l = 0; rc == 0 && l < t->nlevels; l++) {
			struct dbtrace_level *lv = &t->level[l];
			uint64_t np;
			if (cf_get_varint(&s, &lv->nunits) < 0 || cf_get_varint(&s, &np) < 0) {
				rc = -1;
				break;
			}
			lv->records_per_unit = l ? DBTRACE_UNIT : 1;
			for (uint32_t k = 1; k < l; k++)
				lv->records_per_unit *= DBTRACE_FANOUT;
			if (np == 0 || np > e->raw / 5 ||
			    lv->nunits > np * DBTRACE_PIECE || lv->nunits < (np - 1) * DBTRACE_PIECE + 1 ||
			    (l == 0 && lv->nunits != t->nrecords)) {
				rc = cf_stream_error(&s, "thread %u level %u: %llu pieces of %llu "
							 "units out of range", t->thread, l,
						     (unsigned long long)np,
						     (unsigned long long)lv->nunits);
				break;
			}
			lv->npieces = (uint32_t)np;
			lv->piece = xcalloc(np, sizeof(*lv->piece));
			for (uint32_t p = 0; p < lv->npieces; p++) {
				struct dbtrace_piece *pc = &lv->piece[p];
				uint64_t size, count, span;
				if (cf_get_varint(&s, &pc->offset) < 0 || cf_get_varint(&s, &size) < 0 ||
				    cf_get_varint(&s, &count) < 0 || cf_get_varint(&s, &pc->t_lo) < 0 ||
				    cf_get_varint(&s, &span) < 0) {
					rc = -1;
					break;
				}
				pc->t_hi = pc->t_lo + span;
				uint64_t want = p + 1 < lv->npieces ? DBTRACE_PIECE
								     : lv->nunits - (uint64_t)p * DBTRACE_PIECE;
				if (size < PIECE_HEADER || size > tr->data->stored ||
				    pc->offset > tr->data->stored - size || count != want ||
				    span > UINT64_MAX - pc->t_lo || pc->t_lo < t->t_first ||
				    pc->t_hi > t->t_last || (p && pc->t_lo < lv->piece[p - 1].t_hi)) {
					rc = cf_stream_error(&s, "thread %u level %u piece %u out of "
								 "range", t->thread, l, p);
					break;
				}
				pc->size = (uint32_t)size;
				pc->count = (uint32_t)count;
			}
		}
	}
	if (rc == 0)
		rc = cf_stream_finish(&s);
	cf_stream_free(&s);
	return rc;
}

int dbtrace_open(struct dbtrace *tr, const char *dir, uint32_t ncontexts, uint32_t nthreads)
{
	memset(tr, 0, sizeof(*tr));
	tr->r.fd = -1;
	char *path = xpath_join(dir, DBTRACE_FILE);
	if (access(path, F_OK) < 0 && errno == ENOENT) {
		free(path);
		return 1;
	}
	tr->ncontexts = ncontexts;
	tr->nthreads = nthreads;
	int rc = cf_open(&tr->r, path, DBFILE_MAGIC, "database traces file", DBFILE_MAJOR);
	free(path);
	if (rc < 0)
		return -1;
	if (read_info(tr) < 0 || read_index(tr) < 0) {
		dbtrace_close(tr);
		return -1;
	}
	tr->of_thread = xmalloc((nthreads ? nthreads : 1) * sizeof(*tr->of_thread));
	for (uint32_t i = 0; i < nthreads; i++)
		tr->of_thread[i] = -1;
	for (uint32_t i = 0; i < tr->ntraced; i++)
		tr->of_thread[tr->traced[i].thread] = (int32_t)i;
	return 0;
}

void dbtrace_close(struct dbtrace *tr)
{
	for (uint32_t i = 0; tr->traced && i < tr->ntraced; i++)
		for (uint32_t l = 0; l < tr->traced[i].nlevels; l++)
			free(tr->traced[i].level[l].piece);
	free(tr->traced);
	free(tr->of_thread);
	for (int i = 0; i < DBTRACE_CACHE; i++)
		free(tr->cache[i].unit);
	free(tr->stored);
	piece_codec_release(&tr->codec);
	if (tr->r.fd >= 0 || tr->r.path)
		cf_close(&tr->r);
	memset(tr, 0, sizeof(*tr));
	tr->r.fd = -1;
}

const struct dbtrace_thread *dbtrace_thread(const struct dbtrace *tr, uint32_t thread)
{
	if (!tr->of_thread || thread >= tr->nthreads || tr->of_thread[thread] < 0)
		return NULL;
	return &tr->traced[tr->of_thread[thread]];
}

/* Decode the raw bytes of piece P of level L of thread T into U (its count of units). */
static int decode_piece(const struct dbtrace *tr, const struct dbtrace_thread *t, uint32_t l,
			const struct dbtrace_piece *p, const uint8_t *raw, size_t len,
			struct dbtrace_unit *u)
{
	const uint8_t *q = raw, *end = raw + len;
	uint64_t prev = p->t_lo;
	int64_t prev_ctx = 0;
	for (uint32_t i = 0; i < p->count; i++) {
		uint64_t a, b;
		if (l == 0) {
			if (le_get_varint(&q, end, &a) < 0 || le_get_varint(&q, end, &b) < 0)
				return fth_error("truncated");
			int64_t ctx = prev_ctx + le_unzigzag(b);
			if (a > p->t_hi - prev || ctx < 0 || ctx >= tr->ncontexts)
				return fth_error("record %u out of range", i);
			prev += a;
			prev_ctx = ctx;
			u[i] = (struct dbtrace_unit){ .t_lo = prev, .t_hi = prev, .n = 1, .k = 1 };
			u[i].context[0] = (uint32_t)ctx;
			u[i].count[0] = 1;
			continue;
		}
		uint64_t n, k;
		if (le_get_varint(&q, end, &a) < 0 || le_get_varint(&q, end, &b) < 0 ||
		    le_get_varint(&q, end, &n) < 0 || le_get_varint(&q, end, &k) < 0)
			return fth_error("truncated");
		if (a > p->t_hi - prev || b > p->t_hi - prev - a || k < 1 || k > DBTRACE_TOP ||
		    n == 0 || n > UINT32_MAX)
			return fth_error("unit %u out of range", i);
		prev += a;
		u[i] = (struct dbtrace_unit){ .t_lo = prev, .t_hi = prev + b, .n = (uint32_t)n,
					      .k = (uint32_t)k };
		uint64_t total = 0;
		for (uint32_t j = 0; j < k; j++) {
			uint64_t c, count;
			if (le_get_varint(&q, end, &c) < 0 || le_get_varint(&q, end, &count) < 0)
				return fth_error("truncated");
			total += count;
			if (c >= tr->ncontexts || count == 0 || total > n)
				return fth_error("unit %u: context %u out of range", i, j);
			u[i].context[j] = (uint32_t)c;
			u[i].count[j] = (uint32_t)count;
		}
	}
	(void)t;
	if (q != end)
		return fth_error("%zu bytes left over", (size_t)(end - q));
	return 0;
}

/* Piece P of level L of traced thread T, decoded (from the cache when it is there). */
static int get_piece(struct dbtrace *tr, const struct dbtrace_thread *t, uint32_t l, uint32_t p,
		     const struct dbtrace_unit **units)
{
	struct dbtrace_cached *slot = &tr->cache[0];
	tr->clock++;
	for (int i = 0; i < DBTRACE_CACHE; i++) {
		struct dbtrace_cached *c = &tr->cache[i];
		if (c->unit && c->thread == t->thread && c->level == l && c->piece == p) {
			c->used = tr->clock;
			*units = c->unit;
			return 0;
		}
		if (!c->unit || c->used < slot->used)
			slot = c;
		if (!slot->unit)
			break;
	}
	const struct dbtrace_piece *pc = &t->level[l].piece[p];
	if (pc->size > tr->stored_cap) {
		tr->stored_cap = pc->size;
		free(tr->stored);
		tr->stored = xmalloc(tr->stored_cap);
	}
	uint64_t at = tr->data->offset + pc->offset;
	for (size_t done = 0; done < pc->size;) {
		ssize_t k = pread(tr->r.fd, tr->stored + done, pc->size - done, (off_t)(at + done));
		if (k <= 0)
			return k < 0 ? fth_error_errno(errno, "%s: read", tr->r.path)
				     : fth_error("%s: truncated", tr->r.path);
		done += (size_t)k;
	}
	const uint8_t *raw;
	size_t len;
	free(slot->unit);
	slot->unit = xcalloc(pc->count, sizeof(*slot->unit));
	slot->n = pc->count;
	if (piece_get(&tr->codec, tr->stored, pc->size, &raw, &len) < 0 ||
	    decode_piece(tr, t, l, pc, raw, len, slot->unit) < 0) {
		FREE_AND_NULL(slot->unit);
		return fth_error_prefix("%s: thread %u: level %u: piece %u", tr->r.path, t->thread, l,
					p);
	}
	slot->thread = t->thread;
	slot->level = l;
	slot->piece = p;
	slot->used = tr->clock;
	*units = slot->unit;
	return 0;
}

int dbtrace_scan(struct dbtrace *tr, uint32_t thread, uint32_t level, uint64_t t0, uint64_t t1,
		 int (*fn)(void *ctx, const struct dbtrace_unit *u), void *ctx)
{
	const struct dbtrace_thread *t = dbtrace_thread(tr, thread);
	if (!t || level >= t->nlevels || t1 < t0)
		return 0;
	const struct dbtrace_level *lv = &t->level[level];
	/* The first piece that ends at or after T0. */
	uint32_t first = (uint32_t)FTH_LOWER_BOUND(lv->piece, lv->npieces, t_hi, t0);
	for (uint32_t p = first; p < lv->npieces && lv->piece[p].t_lo <= t1; p++) {
		const struct dbtrace_unit *u = NULL;
		if (get_piece(tr, t, level, p, &u) < 0)
			return -1;
		/* The first unit that ends at or after T0 (units are in time order). */
		uint32_t from = (uint32_t)FTH_LOWER_BOUND(u, lv->piece[p].count, t_hi, t0);
		for (uint32_t i = from; i < lv->piece[p].count; i++) {
			if (u[i].t_hi < t0)
				continue;
			if (u[i].t_lo > t1)
				return 0;
			int r = fn(ctx, &u[i]);
			if (r)
				return r < 0 ? -1 : 0;
		}
	}
	return 0;
}

struct dump_ctx {
	struct buf *out;
	uint32_t level;
};

static int dump_unit(void *ctx, const struct dbtrace_unit *u)
{
	struct dump_ctx *d = ctx;
	if (d->level == 0) {
		buf_printf(d->out, "    sample %llu %u\n", (unsigned long long)u->t_lo, u->context[0]);
		return 0;
	}
	buf_printf(d->out, "    unit %llu..%llu n %u:", (unsigned long long)u->t_lo,
		   (unsigned long long)u->t_hi, u->n);
	for (uint32_t k = 0; k < u->k; k++)
		buf_printf(d->out, " %u x%u", u->context[k], u->count[k]);
	buf_addch(d->out, '\n');
	return 0;
}

int dbtrace_dump(struct dbtrace *tr, struct buf *out)
{
	buf_printf(out, "traces: %u of %u threads traced, %u contexts\n", tr->ntraced, tr->nthreads,
		   tr->ncontexts);
	for (uint32_t i = 0; i < tr->ntraced; i++) {
		const struct dbtrace_thread *t = &tr->traced[i];
		buf_printf(out, "thread %u: %llu samples, %llu..%llu ns, %u levels\n", t->thread,
			   (unsigned long long)t->nrecords, (unsigned long long)t->t_first,
			   (unsigned long long)t->t_last, t->nlevels);
		for (uint32_t l = 0; l < t->nlevels; l++) {
			const struct dbtrace_level *lv = &t->level[l];
			buf_printf(out, "  level %u: %llu units of %llu samples in %u pieces\n", l,
				   (unsigned long long)lv->nunits,
				   (unsigned long long)lv->records_per_unit, lv->npieces);
			struct dump_ctx d = { out, l };
			if (dbtrace_scan(tr, t->thread, l, 0, UINT64_MAX, dump_unit, &d) < 0)
				return -1;
		}
	}
	return 0;
}
