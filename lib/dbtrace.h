/* SPDX-License-Identifier: MIT */
/*
 * dbtrace.h: the database's traces (traces.fdb, formats.md 8.9): for every traced thread, the
 * time-ordered contexts it was sampled in, in pieces of records with their time ranges, and
 * above them levels of summaries (each unit: a span of records and the contexts that took
 * most of it), so that a window of any width is drawn from a few pieces of one level, not
 * from every record.  prof spools the records while merging (contexts as it numbers them) and
 * writes traces.fdb with the database's numbering; view reads pieces on demand.
 */
#ifndef FATHOM_DBTRACE_H
#define FATHOM_DBTRACE_H

#include "chunkfile.h"
#include "piece.h"

#include <stdbool.h>
#include <stdint.h>

#define DBTRACE_FILE "traces.fdb"
#define DBTRACE_SPOOL "traces.spool"
#define DBTRACE_PIECE 1024   /* records, or units, per piece */
#define DBTRACE_UNIT 64      /* records per unit of level 1 */
#define DBTRACE_FANOUT 16    /* units of level L per unit of level L + 1 */
#define DBTRACE_TOP 4	     /* contexts a unit keeps */
#define DBTRACE_MAX_LEVELS 8
#define DBTRACE_LEVEL 1	     /* zstd level of the pieces prof writes */

/* A sample of the trace: TIME in ns since the thread's start (its start_ns), its CONTEXT. */
struct dbtrace_record {
	uint64_t time;
	uint32_t context;
};

/*
 * A unit of a level: records T_LO .. T_HI (times of its first and last record), N of them, and
 * the K contexts that took most of them with their record counts, most first.  Level 0's
 * units are the records themselves (N 1, K 1).
 */
struct dbtrace_unit {
	uint64_t t_lo, t_hi;
	uint32_t n;
	uint32_t k;
	uint32_t context[DBTRACE_TOP];
	uint32_t count[DBTRACE_TOP];
};

/* ---- writing (prof) ---- */

struct dbtrace_spool {
	struct cf_writer cf;
	int fd;
	char *path;
	void *ws;
	uint64_t records;
};

/* Start DIR/traces.spool. */
int dbtrace_spool_open(struct dbtrace_spool *s, const char *dir);
/* Thread THREAD's trace, N records (0: traced, never sampled), times not decreasing, contexts
 * as given to the writer. */
int dbtrace_spool_add(struct dbtrace_spool *s, uint32_t thread, const struct dbtrace_record *rec,
		      uint64_t n);
int dbtrace_spool_finish(struct dbtrace_spool *s);
/* Close and remove what was written (after a failure). */
void dbtrace_spool_abort(struct dbtrace_spool *s);
/*
 * When DIR/traces.spool exists: write DIR/traces.fdb from it, the contexts renumbered as the
 * database numbers them (ORDER[new] = old, NCONTEXTS of them) for a database of NTHREADS
 * threads, pieces compressed at LEVEL, and remove the spool.  0, or -1 with a message.
 */
int dbtrace_write(const char *dir, const uint32_t *order, uint32_t ncontexts, uint32_t nthreads,
		  int level);

/*
 * Each thread of DIR/traces.spool (none when there is none), in the order spooled, to EACH
 * (contexts as spooled, below NCONTEXTS; threads below NTHREADS); stops at the first that
 * EACH fails.  0, or -1 with a message.
 */
int dbtrace_spool_each(const char *dir, uint32_t ncontexts, uint32_t nthreads,
		       int (*each)(void *arg, uint32_t thread, const struct dbtrace_record *rec,
				   uint64_t n),
		       void *arg);

/* ---- reading (view, fathom-dump) ---- */

struct dbtrace_piece {
	uint64_t offset; /* in the RDAT chunk */
	uint32_t size, count;
	uint64_t t_lo, t_hi;
};

struct dbtrace_level {
	uint64_t records_per_unit; /* 1 for level 0 */
	uint64_t nunits;
	uint32_t npieces;
	struct dbtrace_piece *piece;
};

struct dbtrace_thread {
	uint32_t thread; /* the database's thread index */
	uint64_t nrecords, t_first, t_last;
	uint32_t nlevels;
	struct dbtrace_level level[DBTRACE_MAX_LEVELS];
};

/* The decoded pieces kept, the least recently used replaced. */
#define DBTRACE_CACHE 64
struct dbtrace_cached {
	uint32_t thread, level, piece;
	uint64_t used;
	struct dbtrace_unit *unit;
	uint32_t n;
};

struct dbtrace {
	struct cf_reader r;
	const struct cf_entry *data;
	uint32_t ncontexts, nthreads;
	uint32_t ntraced;
	struct dbtrace_thread *traced; /* by ascending thread */
	int32_t *of_thread;	       /* database thread -> index in traced, or -1 */
	struct piece_codec codec;
	uint8_t *stored;
	size_t stored_cap;
	struct dbtrace_cached cache[DBTRACE_CACHE];
	uint64_t clock;
};

/* Open DIR/traces.fdb of a database of NCONTEXTS contexts and NTHREADS threads: 0, 1 when the
 * database has no traces, or -1 with a message naming the file and the problem. */
int dbtrace_open(struct dbtrace *tr, const char *dir, uint32_t ncontexts, uint32_t nthreads);
void dbtrace_close(struct dbtrace *tr);
/* Thread THREAD's trace, or NULL when it was not traced. */
const struct dbtrace_thread *dbtrace_thread(const struct dbtrace *tr, uint32_t thread);
/*
 * Call FN, in time order, for every unit of level LEVEL of thread THREAD's trace that meets
 * [T0, T1] (ns since the thread's start), reading only the pieces that do; FN returns 0 to go
 * on, 1 to stop.  0, or -1 with a message (a damaged piece).
 */
int dbtrace_scan(struct dbtrace *tr, uint32_t thread, uint32_t level, uint64_t t0, uint64_t t1,
		 int (*fn)(void *ctx, const struct dbtrace_unit *u), void *ctx);

/* Every field of the traces as text (fathom-dump): the index, each level's pieces, and the
 * samples and units themselves.  0, or -1 with a message (a damaged piece). */
struct buf;
int dbtrace_dump(struct dbtrace *tr, struct buf *out);

#endif
