/* SPDX-License-Identifier: MIT */
/*
 * dbfile.h: the metric database that prof writes and view reads (doc/formats.md, section 8):
 * a directory of two chunk containers, summary.fdb (read at open, the tree and the lists a
 * block at a time) and threads.fdb (per-thread values, each piece read alone).  The writer
 * derives the numbering and every index from a tree given in any parent-first order.  Values
 * are doubles; at every context, exclusive + the children's inclusive = inclusive.
 */
#ifndef FATHOM_DBFILE_H
#define FATHOM_DBFILE_H

#include "chunkfile.h"

#define DBFILE_MAGIC "FTHMDBSE"
#define DBFILE_MAJOR 3
#define DBFILE_MINOR 4
#define DBFILE_SUMMARY "summary.fdb"
#define DBFILE_THREADS "threads.fdb"
/* The per-thread values as the writer was given them, until summary.fdb is written. */
#define DBFILE_SPOOL "threads.spool"
#define DBFILE_SPOOL_MAGIC "FTHMDBSP"

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
#define DBFILE_CHUNK_GROUPS CF_ID('G', 'R', 'P', 'S')
#define DBFILE_CHUNK_GROUP_FLAT CF_ID('G', 'F', 'L', 'T')
#define DBFILE_CHUNK_MODULE_FLAT CF_ID('M', 'F', 'L', 'T')
#define DBFILE_CHUNK_FUNCTION_LISTS CF_ID('F', 'L', 'S', 'T')
#define DBFILE_CHUNK_THREAD_INFO CF_ID('T', 'I', 'N', 'F')

#define DBFILE_NONE UINT32_MAX
/* The one function of a module that holds the code no symbol covers (doc/formats.md 8.3). */
#define DBFILE_UNKNOWN_FUNCTION "<unknown function>"
/* Thread groups in threads.fdb: at most this many chunks, so nthreads / group <= this. */
#define DBFILE_MAX_GROUPS 1000
/*
 * Contexts per block (one CTXT, one SUMM and one STAT chunk each, one piece per thread): at
 * least this many, and few enough for at most DBFILE_MAX_BLOCKS blocks.
 */
#define DBFILE_BLOCK 4096
#define DBFILE_MAX_BLOCKS 300
/* Functions per FLST chunk: at least this many, and few enough for at most 64 chunks. */
#define DBFILE_LIST_BLOCK 256
#define DBFILE_MAX_LIST_CHUNKS 64
/* Decoded blocks the reader keeps (least recently used evicted), unless dbfile_cache_blocks
 * raises them. */
#define DBFILE_CACHE_CONTEXTS 16
#define DBFILE_CACHE_ROWS 8
#define DBFILE_CACHE_LISTS 1

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
enum { DBFILE_ENTRY_ROOT = 0, DBFILE_ENTRY_PARTIAL = 1, DBFILE_ENTRY_SYNTHETIC = 2,
       DBFILE_ENTRY_PROGRAM = 3 /* the processes of one program (MODULE): runs of several */ };

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
	uint32_t group; /* index into groups (derived by the writer; read) */
};

/* A (module, file) group of functions: the flat view's files. */
struct dbfile_group {
	uint32_t module; /* index, or DBFILE_NONE */
	uint32_t file;	 /* string, or DBFILE_NONE */
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
	uint8_t level;	/* TMA nodes: 0 the whole (Total Slots, Active, Stall), then levels 1-4 */
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
	int32_t rank; /* MPI rank, or -1 (not MPI) */
	uint64_t start_ns, end_ns;
	uint32_t ppid;
	uint32_t argc;
	char **argv; /* owned: the process's command line */
	char *name;  /* owned: the name the program gave the thread, or "" */
	char *entry; /* owned: the function the thread started in ("main" ...), or "" */
	char *cpu;   /* owned: the processor, "VENDOR FAMILY MODEL STEPPING" (cpuid), or "" */
};

/*
 * A context.  Read: numbered breadth-first, so that the children of a context are consecutive
 * (first_child .. first_child + nchildren - 1; a leaf's first_child is where its children
 * would start).  Given to the writer: any order where a parent comes before its children;
 * only PARENT, FUNCTION, FILE, LINE, MODULE, KIND and ADDR are used then.
 */
struct dbfile_context {
	uint32_t parent;      /* DBFILE_NONE for the root */
	uint32_t first_child; /* children: first_child .. first_child + nchildren - 1 */
	uint32_t nchildren;
	uint32_t function; /* FUNCTION, INLINE; the enclosing function for LOOP, LINE, CALL */
	uint32_t file;	   /* string, or DBFILE_NONE */
	uint32_t line;
	uint32_t module; /* index, or DBFILE_NONE */
	uint32_t outer;	 /* the outermost FUNCTION/INLINE context of FUNCTION on the path
			    from the root to this context, itself included; or DBFILE_NONE */
	uint8_t kind;	 /* enum dbfile_kind */
	uint8_t flags;	 /* DBFILE_CTX_OUTER_* */
	uint64_t addr;	 /* offset in MODULE (see the kinds), or 0 */
};

/* Flags of a FUNCTION or INLINE context. */
enum {
	DBFILE_CTX_OUTER_FN = 1,  /* no ancestor is an instance (FUNCTION/INLINE) of its function */
	DBFILE_CTX_OUTER_GRP = 2, /* ... of a function of its function's group */
	DBFILE_CTX_OUTER_MOD = 4, /* ... of a function of its function's module */
};

/* A row of values: N entries, METRIC ascending, VAL[2 i] inclusive and VAL[2 i + 1] exclusive. */
struct dbfile_row {
	uint32_t n;
	const uint16_t *metric;
	const double *val;
};

/*
 * Flat profiles: NROWS rows, row r's entries start[r] .. start[r + 1] - 1, metrics ascending.
 * Inclusive counts each call path once however deep the recursion (the outermost instances);
 * exclusive is everything measured in the row's own code (lines, loops, inlined code).
 */
struct dbfile_flat {
	uint32_t nrows;
	uint32_t *start; /* nrows + 1 */
	uint64_t nvalues;
	uint16_t *metric;
	double *incl, *excl;
};

/* Statistics over the threads whose value is not zero; mean = sum / count. */
struct dbfile_stat {
	uint32_t count;
	double sum, min, max, stddev; /* stddev: population */
};

struct dbfile_cache; /* dbfile-read.c */

struct dbfile {
	uint16_t major, minor;
	char *program; /* owned */
	uint32_t flags; /* enum dbfile_flag */
	uint32_t nnotes;
	char **notes; /* owned: what prof could not do ("kernel frames are shown by address...") */
	uint32_t nstrings;
	char **strings; /* owned */
	uint32_t nmodules;
	struct dbfile_module *modules;
	uint32_t nfunctions;
	struct dbfile_function *functions;
	uint32_t ngroups; /* read (the writer derives them) */
	struct dbfile_group *groups;
	uint32_t nmetrics;
	struct dbfile_metric *metrics;
	uint32_t nthreads;
	struct dbfile_thread *threads;
	uint32_t thread_group; /* threads per TVAL chunk */
	uint32_t ncontexts;
	uint64_t nsum; /* summary entries */
	/*
	 * The writer's input, not filled by the reader: the contexts (parent-first), and the
	 * (context, metric) summary entries, contexts ascending, metrics ascending, with every
	 * statistic over threads.
	 */
	struct dbfile_context *contexts;
	uint32_t *sum_start; /* ncontexts + 1 */
	uint16_t *sum_metric;
	struct dbfile_stat *sum_incl, *sum_excl;
	uint32_t block; /* contexts per block (the writer: 0 chooses) */
	uint32_t jobs;	/* the writer: threads converting the per-thread values (0, 1: none) */
	/* Read: the flat profiles (sums over threads) of functions, groups, modules (+ none). */
	struct dbfile_flat flat, group_flat, module_flat;
	/* Reader state. */
	char *dir; /* owned */
	struct cf_reader summary_file;
	bool summary_open;
	struct cf_reader threads_file;
	bool threads_open;
	struct dbfile_cache *cache;
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

/*
 * Write DB's summary to DIR/summary.fdb (O_EXCL).  LEVEL 0 stores.  When the per-thread values
 * were spooled to DIR (dbfile_threads_*, finished), write DIR/threads.fdb from them too, with
 * the contexts numbered as in summary.fdb, and remove the spool.
 */
int dbfile_write_summary(const char *dir, const struct dbfile *db, int level);

/*
 * prof-mpi: each rank converts the spool of its share of the threads (in its own numbering,
 * MAPS giving the database's contexts and metrics) into a part; the statistics over threads
 * are made from the parts' values; then threads.fdb is written from the parts in order.
 */
struct dbfile_index;
struct dbfile_part_maps {
	const uint32_t *ctx, *metric;
	uint32_t nctx, nmetrics;
};
/* The NTHREADS threads of SPOOL_DIR/threads.spool into the part file PATH (O_EXCL), for the
 * database DB numbered as D says (its statistics are not needed), pieces at zstd LEVEL. */
int dbfile_part_write(const char *spool_dir, const struct dbfile *db, const struct dbfile_index *d,
		      const struct dbfile_part_maps *maps, uint32_t nthreads, int level,
		      const char *path);
/* Every value of blocks B0..B1 (exclusive) of every thread of the parts, threads in order,
 * to VALUE (contexts in D's numbering).  0, or -1 with a message. */
int dbfile_parts_values(char *const *parts, uint32_t nparts, const struct dbfile_index *d,
			uint32_t b0, uint32_t b1,
			void (*value)(void *arg, uint32_t ctx, uint16_t metric, double incl,
				      double excl),
			void *arg);
/* dbfile_write_summary, threads.fdb from the NPARTS parts (in thread order) rather than a
 * spool; DIR/traces.spool, when there is one, becomes traces.fdb as there. */
int dbfile_write_from_parts(const char *dir, const struct dbfile *db, int level,
			    char *const *parts, uint32_t nparts);

/*
 * Streaming writer of the per-thread values: up to NTHREADS threads in order, with the context
 * indices of DB->contexts as given to dbfile_write_summary, spooled to DIR (GROUP threads per
 * chunk) until dbfile_write_summary writes threads.fdb from them.
 */
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

/*
 * Read DIR/summary.fdb (DIR may also name the summary file itself): the tables at once, and
 * every block once, streaming, to check it (memory stays bounded).  Every reader function
 * returns 0, or -1 with a message naming the file and what is wrong.
 */
int dbfile_open(const char *dir, struct dbfile *db);
/*
 * dbfile_open, keeping every block of contexts, sums and function lists decoded as it is
 * checked: what dbfile_load_blocks(db, DBFILE_NONE) leaves, without decoding twice (memory
 * grows to the decoded database, about 100 bytes a context).
 */
int dbfile_open_whole(const char *dir, struct dbfile *db);
/* Context CTX (< db->ncontexts), reading and checking its block when not cached. */
int dbfile_context(struct dbfile *db, uint32_t ctx, struct dbfile_context *out);
/* CTX's sums over threads.  Valid until the next dbfile_summary_row or dbfile_thread_row call. */
int dbfile_summary_row(struct dbfile *db, uint32_t ctx, struct dbfile_row *out);
/* CTX's values in thread T (n = 0 where T has none).  Same validity. */
int dbfile_thread_row(struct dbfile *db, uint32_t t, uint32_t ctx, struct dbfile_row *out);
/*
 * Contexts whose `function` is F, of kinds FUNCTION, INLINE, LOOP, LINE, CALL (not ROOT or
 * ENTRY), ascending: *N of them in *LIST, which the caller frees (free()).
 */
int dbfile_function_contexts(struct dbfile *db, uint32_t f, uint32_t **list, uint32_t *n);
/* INLINE contexts whose parent's `function` is F (code inlined into F), ascending; same. */
int dbfile_inlined_contexts(struct dbfile *db, uint32_t f, uint32_t **list, uint32_t *n);
/* Free what thread T owns (its strings and command line). */
void dbfile_thread_release(struct dbfile_thread *t);
/* Free what metric M owns (its name, description and formula). */
void dbfile_metric_release(struct dbfile_metric *m);
/* Release each of the N threads (metrics) at T (M), then free the array. */
void dbfile_threads_free(struct dbfile_thread *t, uint32_t n);
void dbfile_metrics_free(struct dbfile_metric *m, uint32_t n);
void dbfile_flat_release(struct dbfile_flat *f);
/* dbfile_flat_release of the three flat profiles of one source: by function, group, module. */
void dbfile_flats_release(struct dbfile_flat *fn, struct dbfile_flat *grp, struct dbfile_flat *mod);
/*
 * Thread T's profiles of functions, groups and modules (same shapes as db->flat,
 * db->group_flat, db->module_flat), into caller-owned FN, GRP, MOD.
 */
int dbfile_thread_flats(struct dbfile *db, uint32_t t, struct dbfile_flat *fn,
			struct dbfile_flat *grp, struct dbfile_flat *mod);
/*
 * The statistics over threads of (CTX, METRIC) into INCL and EXCL (zero counts when it has no
 * summary entry), reading and checking its block of contexts when it is not cached.
 */
int dbfile_stats(struct dbfile *db, uint32_t ctx, uint16_t metric, struct dbfile_stat *incl,
		 struct dbfile_stat *excl);
/*
 * Keep up to CONTEXTS decoded blocks of contexts, ROWS of rows (sums or a thread's values) and
 * LISTS of function lists (at most what the database has; never fewer than already kept).
 * For a walk with no locality in the database's breadth-first order, such as a depth-first
 * walk of the whole tree with children sorted by value (view --batch), which comes back to
 * every block again and again: with every block kept, each is decoded once, as in one
 * sequential pass, and memory grows to the decoded database (about 100 bytes a context).
 */
int dbfile_cache_blocks(struct dbfile *db, uint32_t contexts, uint32_t rows, uint32_t lists);
/*
 * Decode every block of contexts, of sums (and of thread THREAD's values, unless DBFILE_NONE)
 * and of function lists, and keep them all: one sequential pass, after which reading any of
 * them cannot fail.
 */
int dbfile_load_blocks(struct dbfile *db, uint32_t thread);
/* Contexts per block for NCONTEXTS (what prof writes). */
uint32_t dbfile_block_size(uint32_t ncontexts);
/* The end of the block of BLOCK items (contexts, functions) that starts at item FIRST of N. */
uint32_t dbfile_block_end(uint32_t first, uint32_t block, uint32_t n);
/* Open threads.fdb now rather than on first use (it is then read through the descriptor even
 * once its name is gone).  -1 when the database kept no per-thread values or it fails. */
int dbfile_open_threads(struct dbfile *db);
/* Read one thread's values (sparse, contexts ascending) from threads.fdb, for dumps. */
int dbfile_read_thread(struct dbfile *db, uint32_t thread, struct dbfile_values *out);
void dbfile_close(struct dbfile *db);
/* Read the summary file PATH (the fuzzer's entry): same checks as dbfile_open. */
int dbfile_read_summary_file(const char *path, struct dbfile *db);

void dbfile_values_reset(struct dbfile_values *v);
void dbfile_values_push(struct dbfile_values *v, uint32_t ctx, uint16_t metric, double incl,
			double excl);
void dbfile_values_release(struct dbfile_values *v);

const char *dbfile_str(const struct dbfile *db, uint32_t index);
const char *dbfile_kind_name(unsigned kind);

/*
 * Append DB as text to OUT: groups, tree with summaries, function lists, flat profiles;
 * THREADS: per-thread values and flat profiles.
 */
struct buf;
int dbfile_dump(struct dbfile *db, struct buf *out, bool threads);

#endif
