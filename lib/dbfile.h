/* SPDX-License-Identifier: MIT */
/*
 * dbfile.h: the metric database that prof writes and view reads (doc/formats.md, section 8).
 *
 * A database is a directory with two chunk-container files (magic FTHMDBSE):
 *   summary.fdb  strings, modules, functions, metric descriptions, threads, the unified calling
 *                context tree, the sums over threads for every (context, metric) and the flat
 *                (per-function) profile: enough for every view on its own, read at open; and
 *                the other statistics over threads (count, min, max, stddev) in blocks of
 *                contexts, read one block at a time when they are wanted;
 *   threads.fdb  per-thread values, sparse, in groups of threads so that one thread's values
 *                are read by decompressing one chunk.
 * Values are doubles.  "Inclusive" is the whole subtree of a context, "exclusive" what was
 * measured at the context itself, so at every context exclusive + the children's inclusive =
 * inclusive.
 */
#ifndef FATHOM_DBFILE_H
#define FATHOM_DBFILE_H

#include "chunkfile.h"

#define DBFILE_MAGIC "FTHMDBSE"
#define DBFILE_MAJOR 2
#define DBFILE_MINOR 0
#define DBFILE_SUMMARY "summary.fdb"
#define DBFILE_THREADS "threads.fdb"

#define DBFILE_CHUNK_INFO CF_ID('I', 'N', 'F', 'O')
#define DBFILE_CHUNK_STRINGS CF_ID('S', 'T', 'R', 'S')
#define DBFILE_CHUNK_MODULES CF_ID('M', 'O', 'D', 'S')
#define DBFILE_CHUNK_FUNCTIONS CF_ID('F', 'U', 'N', 'C')
#define DBFILE_CHUNK_METRICS CF_ID('M', 'E', 'T', 'R')
#define DBFILE_CHUNK_THREADS CF_ID('T', 'H', 'R', 'D')
#define DBFILE_CHUNK_CONTEXTS CF_ID('C', 'T', 'X', 'T')
#define DBFILE_CHUNK_SUMMARY CF_ID('S', 'U', 'M', 'M')
#define DBFILE_CHUNK_FLAT CF_ID('F', 'L', 'A', 'T')
#define DBFILE_CHUNK_STATS CF_ID('S', 'T', 'A', 'T')
#define DBFILE_CHUNK_THREAD_VALUES CF_ID('T', 'V', 'A', 'L')

#define DBFILE_NONE UINT32_MAX
/* Thread groups in threads.fdb: at most this many chunks, so nthreads / group <= this. */
#define DBFILE_MAX_GROUPS 1000
/* Contexts per STAT chunk: at least this many, and few enough for at most 1000 chunks. */
#define DBFILE_STAT_BLOCK 4096
#define DBFILE_MAX_STAT_CHUNKS 1000

/* Context kinds.  X(enum suffix, value, name in dumps) */
#define DBFILE_KINDS(X)                                                                       \
	X(ROOT, 0, "root")	   /* context 0 only */                                       \
	X(ENTRY, 1, "entry")	   /* how a call path starts: LINE 0 main/thread, 1 partial,  \
				      2 synthetic (ADDR = measure's marker) */                 \
	X(FUNCTION, 2, "function") /* a called function (FUNCTION) */                         \
	X(INLINE, 3, "inline")	   /* an inlined call site: FUNCTION inlined at FILE:LINE */  \
	X(LOOP, 4, "loop")	   /* a loop whose header is at FILE:LINE */                  \
	X(LINE, 5, "line")	   /* a sampled statement FILE:LINE (ADDR when no line) */     \
	X(CALL, 6, "call")	   /* a call site at FILE:LINE (ADDR = the call instruction) */
enum dbfile_kind {
#define X(e, v, n) DBFILE_##e = v,
	DBFILE_KINDS(X)
#undef X
	DBFILE_KIND_COUNT
};

/* Entry kinds (LINE of an ENTRY context). */
enum { DBFILE_ENTRY_ROOT = 0, DBFILE_ENTRY_PARTIAL = 1, DBFILE_ENTRY_SYNTHETIC = 2 };

/* Database flags (INFO). */
#define DBFILE_FLAGS(X)                                                                       \
	X(NO_LOOPS, 0, "no-loops")	   /* some sampled module had no structure file */    \
	X(NO_THREADS, 1, "no-thread-values") /* per-thread values were not kept */
enum dbfile_flag {
#define X(e, b, n) DBFILE_FLAG_##e = 1u << b,
	DBFILE_FLAGS(X)
#undef X
};

/* Module flags. */
#define DBFILE_MODULE_STRUCT 1u /* a structure file was used */
#define DBFILE_MODULE_LOOPS 2u	/* ... and it had loops */
#define DBFILE_MODULE_SAMPLED 4u /* addresses in it were measured */

/* Metric kinds: measured values, or derived by view from others with FORMULA. */
enum { DBFILE_METRIC_RAW = 0, DBFILE_METRIC_DERIVED = 1 };

struct dbfile_module {
	uint32_t path; /* string */
	uint8_t *build_id; /* owned, or NULL */
	uint32_t build_id_len;
	uint32_t flags;
};

struct dbfile_function {
	uint32_t name;	 /* string */
	uint32_t module; /* index, or DBFILE_NONE */
	uint32_t file;	 /* string, or DBFILE_NONE */
	uint32_t line;
	uint64_t addr; /* entry offset in the module, 0 when unknown */
};

struct dbfile_metric {
	char *name;	   /* owned */
	char *description; /* owned */
	uint8_t unit;	   /* enum mfile_unit */
	uint8_t rate_kind; /* enum mfile_rate */
	uint8_t kind;	   /* DBFILE_METRIC_RAW or DBFILE_METRIC_DERIVED */
	uint64_t rate;
	uint32_t flags; /* enum mfile_metric_flag, or-ed over the threads */
	int32_t parent; /* TMA hierarchy: index of the parent metric, or -1 */
	double threshold;
	char *formula; /* owned: derived metrics and TMA nodes; "" none */
	uint64_t time_enabled, time_running; /* ns, summed over threads */
	uint64_t samples;		     /* summed over threads */
	uint32_t nthreads;		     /* threads that had this metric */
	double scale; /* factor applied to the raw values (multiplexing); 1 when none */
};

struct dbfile_thread {
	char *file; /* owned: the measurement file's name */
	char *host; /* owned */
	char *program; /* owned */
	uint32_t pid, tid, thread_index;
	int32_t rank;
	uint64_t start_ns, end_ns;
};

/* 32 bytes (KIND after the 32-bit fields): a viewer holds one per context. */
struct dbfile_context {
	uint32_t parent; /* DBFILE_NONE for the root */
	uint32_t function; /* FUNCTION, INLINE; the enclosing function for LOOP, LINE, CALL */
	uint32_t file;	 /* string, or DBFILE_NONE */
	uint32_t line;
	uint32_t module; /* index, or DBFILE_NONE */
	uint8_t kind;	 /* enum dbfile_kind */
	uint64_t addr;	 /* offset in MODULE (see the kinds), or 0 */
};

/* Statistics over the threads whose value is not zero; mean = sum / count. */
struct dbfile_stat {
	uint32_t count;
	double sum, min, max, stddev; /* stddev: population */
};

struct dbfile {
	uint16_t major, minor;
	char *program; /* owned */
	uint32_t flags; /* enum dbfile_flag */
	uint32_t nstrings;
	char **strings; /* owned */
	uint32_t nmodules;
	struct dbfile_module *modules;
	uint32_t nfunctions;
	struct dbfile_function *functions;
	uint32_t nmetrics;
	struct dbfile_metric *metrics;
	uint32_t nthreads;
	struct dbfile_thread *threads;
	uint32_t thread_group; /* threads per TVAL chunk */
	uint32_t ncontexts;
	struct dbfile_context *contexts;
	/* Summary: (context, metric) entries, contexts ascending, metrics ascending. */
	uint32_t *sum_start; /* ncontexts + 1 */
	uint64_t nsum;
	uint16_t *sum_metric;
	double *sum_val; /* read: 2 per entry, the inclusive and exclusive sums over threads */
	/*
	 * Every statistic per entry: what the writer writes (sum_val is not used then).  A
	 * database that was read has them only after dbfile_load_stats(); dbfile_stats() reads
	 * one block of contexts at a time instead.
	 */
	struct dbfile_stat *sum_incl, *sum_excl;
	uint32_t stat_block; /* contexts per STAT chunk (the writer: 0 chooses) */
	/*
	 * Flat profile per function: inclusive counts each call path once however deep the
	 * recursion; exclusive is everything measured in the function's own code (its lines,
	 * loops and inlined code, not its calls).
	 */
	uint32_t *flat_start; /* nfunctions + 1 */
	uint64_t nflat;
	uint16_t *flat_metric;
	double *flat_incl, *flat_excl;
	/* Reader state. */
	char *dir; /* owned */
	struct cf_reader threads_file;
	bool threads_open;
	struct cf_reader summary_file; /* kept open for the STAT chunks */
	bool summary_open;
	uint32_t stat_cached; /* the block in stat_incl and stat_excl, or DBFILE_NONE */
	struct dbfile_stat *stat_incl, *stat_excl;
	uint64_t stat_cap;
};

/* One thread's sparse values: NVALUES (context, metric, inclusive, exclusive). */
struct dbfile_values {
	uint64_t nvalues;
	uint32_t *ctx;
	uint16_t *metric;
	double *incl, *excl;
	uint64_t cap;
};

/* ---- writer ---- */

/* Write DB's summary to DIR/summary.fdb (O_EXCL).  LEVEL 0 stores. */
int dbfile_write_summary(const char *dir, const struct dbfile *db, int level);

/* Streaming writer of DIR/threads.fdb: up to NTHREADS threads in order, GROUP per chunk. */
struct dbfile_thread_writer {
	struct cf_writer cf;
	int fd;
	char *path;
	void *ws;
	uint32_t nthreads, group, next;
};
int dbfile_threads_open(struct dbfile_thread_writer *w, const char *dir, uint32_t nthreads,
			uint32_t group, int level);
/* Thread number W->next's values (contexts in any order, each (ctx, metric) once). */
int dbfile_threads_add(struct dbfile_thread_writer *w, const struct dbfile_values *v);
int dbfile_threads_finish(struct dbfile_thread_writer *w);
/* Close and remove what was written (after a failure). */
void dbfile_threads_abort(struct dbfile_thread_writer *w);
/* Threads per chunk for NTHREADS. */
uint32_t dbfile_thread_group(uint32_t nthreads);

/* ---- reader ---- */

/* Read DIR/summary.fdb (DIR may also name the summary file itself). */
int dbfile_open(const char *dir, struct dbfile *db);
/*
 * The statistics over threads of (CTX, METRIC) into INCL and EXCL (zero counts when it has no
 * summary entry), reading and checking its block of contexts when it is not the one cached.
 */
int dbfile_stats(struct dbfile *db, uint32_t ctx, uint16_t metric, struct dbfile_stat *incl,
		 struct dbfile_stat *excl);
/* Read every block: sum_incl and sum_excl complete (for dumps: memory for the whole file). */
int dbfile_load_stats(struct dbfile *db);
/* Contexts per STAT chunk for NCONTEXTS (what prof writes). */
uint32_t dbfile_stat_block(uint32_t ncontexts);
/* Read one thread's values from threads.fdb (opened on first use). */
int dbfile_read_thread(struct dbfile *db, uint32_t thread, struct dbfile_values *out);
/*
 * The same values placed by summary entry: VAL[2 j] and VAL[2 j + 1] are the thread's
 * inclusive and exclusive values of summary entry j (2 x nsum doubles; zero where the thread
 * has none).  No sorting, no hashing: what a viewer needs to show one thread.  A value without
 * a summary entry is an error (a corrupt database).
 */
int dbfile_read_thread_entries(struct dbfile *db, uint32_t thread, double *val);
void dbfile_close(struct dbfile *db);
/* Read the summary file PATH (the fuzzer's entry): same checks as dbfile_open. */
int dbfile_read_summary_file(const char *path, struct dbfile *db);

void dbfile_values_reset(struct dbfile_values *v);
void dbfile_values_push(struct dbfile_values *v, uint32_t ctx, uint16_t metric, double incl,
			double excl);
void dbfile_values_release(struct dbfile_values *v);

/* The summary entry of (CTX, METRIC), or -1 when it has none. */
int64_t dbfile_find_summary(const struct dbfile *db, uint32_t ctx, uint16_t metric);
const char *dbfile_str(const struct dbfile *db, uint32_t index);
const char *dbfile_kind_name(unsigned kind);

/* Append DB as text to OUT: tree with summaries, flat profile; THREADS: per-thread values. */
struct buf;
int dbfile_dump(struct dbfile *db, struct buf *out, bool threads);

#endif
