/* SPDX-License-Identifier: MIT */
/*
 * mfile.h: the measurement file, one per thread (doc/formats.md, "Measurement file").
 *
 * Chunks: IDEN identity, LMAP load map, METR metric table, CCT calling context tree, and the
 * optional TRCE trace and STAT counters.  The writer (mfile_writer) streams through
 * lib/chunkfile.h and is async-signal-safe, so measure's preloaded library uses it at thread
 * exit without malloc; mfile_write() writes a whole struct mfile for the offline tools.  The
 * reader validates every field and refuses bad input with a message naming the file.
 */
#ifndef FATHOM_MFILE_H
#define FATHOM_MFILE_H

#include "chunkfile.h"

#define MFILE_MAGIC "FTHMMEAS"
#define MFILE_MAJOR 1
#define MFILE_MINOR 2

#define MFILE_CHUNK_IDENTITY CF_ID('I', 'D', 'E', 'N')
#define MFILE_CHUNK_LOADMAP CF_ID('L', 'M', 'A', 'P')
#define MFILE_CHUNK_METRICS CF_ID('M', 'E', 'T', 'R')
#define MFILE_CHUNK_CCT CF_ID('C', 'C', 'T', ' ')
#define MFILE_CHUNK_TRACE CF_ID('T', 'R', 'C', 'E')
#define MFILE_CHUNK_STATS CF_ID('S', 'T', 'A', 'T')

#define MFILE_NO_MODULE UINT32_MAX
/* The load map's pseudo-module of the kernel's addresses (offsets are the addresses). */
#define MFILE_KERNEL_MODULE "[kernel.kallsyms]"
#define MFILE_NO_PARENT UINT32_MAX
#define MFILE_MAX_METRICS 65535
#define MFILE_MAX_STRING (16u << 20)

/* Calling-context node kinds.  X(enum suffix, value, name in dumps) */
#define MFILE_NODE_KINDS(X)                                                                   \
	X(ROOT, 0, "root")       /* node 0: the thread's root */                              \
	X(PARTIAL, 1, "partial") /* root of call paths whose unwind did not reach the top */  \
	X(FRAME, 2, "frame")     /* a caller: OFFSET is a return address */                   \
	X(SAMPLE, 3, "sample")   /* the interrupted instruction: OFFSET is its address */      \
	X(SYNTHETIC, 4, "synthetic") /* a marker node made by measure (e.g. "thread start") */
enum mfile_node_kind {
#define X(e, v, n) MFILE_NODE_##e = v,
	MFILE_NODE_KINDS(X)
#undef X
	MFILE_NODE_KIND_COUNT
};

/* Metric units.  X(enum suffix, value, name) */
#define MFILE_UNITS(X) X(COUNT, 0, "count") X(NANOSECONDS, 1, "ns") X(BYTES, 2, "bytes")
enum mfile_unit {
#define X(e, v, n) MFILE_UNIT_##e = v,
	MFILE_UNITS(X)
#undef X
	MFILE_UNIT_COUNT_
};

/* How a metric was sampled. */
#define MFILE_RATES(X) X(NONE, 0, "exact") X(PERIOD, 1, "period") X(FREQUENCY, 2, "frequency")
enum mfile_rate {
#define X(e, v, n) MFILE_RATE_##e = v,
	MFILE_RATES(X)
#undef X
	MFILE_RATE_COUNT_
};

/* Metric flags.  X(enum suffix, bit, name) */
#define MFILE_METRIC_FLAGS(X)                                                               \
	X(MULTIPLEXED, 0, "multiplexed") /* counted for only part of the time it was enabled */ \
	X(PROXY, 1, "proxy")             /* read at another event's samples, not sampled */    \
	X(PRECISE, 2, "precise")         /* a :p/:pp event */                                  \
	X(KERNEL, 3, "kernel")           /* includes kernel-mode counts */                     \
	X(TMA, 4, "tma")                 /* a node of the top-down (TMA) tree */               \
	X(LOST, 5, "lost")               /* some samples were lost (see STAT) */                \
	X(OF_CYCLES, 6, "of-cycles")     /* a TMA node that is a fraction of cycles, not slots */
enum mfile_metric_flag {
#define X(e, b, n) MFILE_METRIC_##e = 1u << b,
	MFILE_METRIC_FLAGS(X)
#undef X
};

struct mfile_frame {
	uint32_t module;
	uint64_t offset;
};

struct mfile_identity {
	char *host;		  /* owned */
	uint32_t pid, ppid, tid;
	int32_t rank;		  /* MPI rank, or -1 */
	uint32_t thread_index;	  /* 0 for the main thread, then in creation order */
	int32_t parent_thread;	  /* index of the creating thread, or -1 */
	char *program;		  /* owned: the executable's path */
	char *cwd;		  /* owned */
	uint32_t argc;
	char **argv;		  /* owned, argc strings */
	uint64_t start_ns, end_ns; /* CLOCK_REALTIME, nanoseconds */
	char *end_reason;	  /* owned: "exit", "exec", "signal 11", "thread exit", ... */
	uint32_t ncreation;
	struct mfile_frame *creation; /* owned: call path that created the thread, leaf first */
	char *name;		  /* owned: the thread's name at its end (Linux's comm), or "" */
	bool has_entry;
	struct mfile_frame entry; /* the function the thread was started with (pthread_create) */
	char *cpu; /* owned: the processor, "VENDOR FAMILY MODEL STEPPING" from cpuid, or "" */
};

struct mfile_range {
	uint64_t start, end; /* run-time addresses, END exclusive */
	uint64_t file_offset;
	uint32_t prot; /* PROT_READ | PROT_WRITE | PROT_EXEC */
};

struct mfile_module {
	char *path;	  /* owned */
	uint8_t *build_id; /* owned, or NULL */
	uint32_t build_id_len;
	uint64_t load_ns, unload_ns; /* CLOCK_REALTIME ns; unload 0: still loaded at the end */
	uint64_t base;		     /* load bias: run-time address minus link-time address */
	uint32_t nranges;
	struct mfile_range *ranges; /* owned */
};

struct mfile_metric {
	char *name;	   /* owned: the event as the user named it, e.g. "cpu-clock" */
	char *description; /* owned */
	uint8_t unit;	   /* enum mfile_unit */
	uint8_t rate_kind; /* enum mfile_rate */
	uint64_t rate;	   /* period in events (or microseconds for timers), or Hz */
	uint32_t flags;	   /* enum mfile_metric_flag */
	uint64_t time_enabled, time_running; /* ns, from perf's read format; 0 when not perf */
	uint64_t samples;		     /* samples that credited this metric */
	int32_t parent;			     /* TMA tree: index of the parent metric, or -1 */
	uint8_t level; /* TMA nodes: 0 the whole (Total Slots, Active, Stall), then levels 1-4 */
	double threshold;		     /* TMA: fraction above which the node is flagged; NaN none */
	char *formula;			     /* owned: TMA formula over other metrics, or "" */
};

/*
 * The calling context tree, as parallel arrays: node I has parent PARENT[I] < I (node 0 is the
 * root), and its values are VAL_METRIC/VAL[VAL_START[I] .. VAL_START[I+1]), metric indices
 * strictly increasing.
 */
struct mfile_cct {
	uint32_t nnodes;
	uint32_t *parent; /* owned */
	uint8_t *kind;	  /* owned */
	uint32_t *module; /* owned: load-map index or MFILE_NO_MODULE (OFFSET is then an address) */
	uint64_t *offset; /* owned: address relative to the module's load bias */
	uint32_t *val_start; /* owned, nnodes + 1 entries */
	uint64_t nvalues;
	uint16_t *val_metric; /* owned */
	uint64_t *val;	      /* owned */
};

struct mfile_trace_record {
	uint64_t time_ns; /* since the thread's start */
	uint32_t node;
};

struct mfile_stat {
	char *name; /* owned */
	uint64_t value;
};

struct mfile {
	uint16_t major, minor; /* as read */
	struct mfile_identity id;
	uint32_t nmodules;
	struct mfile_module *modules;
	uint32_t nmetrics;
	struct mfile_metric *metrics;
	struct mfile_cct cct;
	bool has_trace;
	uint64_t ntrace;
	struct mfile_trace_record *trace;
	uint32_t nstats;
	struct mfile_stat *stats;
};

/* ---- streaming writer (async-signal-safe) ---- */

struct mfile_writer {
	struct cf_writer cf;
	uint32_t nodes_left, nodes_written;
	uint64_t values_left;
	uint64_t trace_left, trace_last;
	uint32_t nmodules, nmetrics, modules_left;
};

size_t mfile_writer_workspace_size(int level);
int mfile_writer_open(struct mfile_writer *w, int fd, const char *path, int level, void *ws,
		      size_t ws_size);
int mfile_write_identity(struct mfile_writer *w, const struct mfile_identity *id);
int mfile_write_loadmap(struct mfile_writer *w, const struct mfile_module *m, uint32_t n);
/* The same one module at a time: announce N, give each, then end. */
int mfile_write_loadmap_begin(struct mfile_writer *w, uint32_t n);
int mfile_write_module(struct mfile_writer *w, const struct mfile_module *m);
int mfile_write_loadmap_end(struct mfile_writer *w);
int mfile_write_metrics(struct mfile_writer *w, const struct mfile_metric *m, uint32_t n);
/* Announce NNODES nodes holding NVALUES values in all, then give each node in order. */
int mfile_write_cct_begin(struct mfile_writer *w, uint32_t nnodes, uint64_t nvalues);
int mfile_write_node(struct mfile_writer *w, uint32_t parent, uint8_t kind, uint32_t module,
		     uint64_t offset, uint32_t nvals, const uint16_t *metric, const uint64_t *val);
int mfile_write_cct_end(struct mfile_writer *w);
int mfile_write_trace_begin(struct mfile_writer *w, uint64_t nrecords);
int mfile_write_trace_record(struct mfile_writer *w, uint64_t time_ns, uint32_t node);
int mfile_write_trace_end(struct mfile_writer *w);
int mfile_write_stats(struct mfile_writer *w, const struct mfile_stat *s, uint32_t n);
int mfile_writer_finish(struct mfile_writer *w);

/* ---- whole-file helpers (offline tools) ---- */

/* Write M to PATH (created with O_EXCL; removed again on failure).  LEVEL 0 stores. */
int mfile_write(const char *path, const struct mfile *m, int level);
/* Read and validate PATH into M.  On failure M is empty and the message names the file. */
int mfile_read(const char *path, struct mfile *m);
void mfile_release(struct mfile *m);
/* Read PATH's identity alone (a cheap look before the whole file is read). */
int mfile_read_identity(const char *path, struct mfile_identity *id);
void mfile_identity_release(struct mfile_identity *id);
/* Append a textual dump of M (every field) to OUT. */
struct buf;
void mfile_dump(const struct mfile *m, struct buf *out);
const char *mfile_node_kind_name(unsigned kind);
const char *mfile_unit_name(unsigned unit);

#endif
