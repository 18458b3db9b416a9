/* SPDX-License-Identifier: MIT */
/*
 * mconfig.h: the contract between measure's launcher and its preloaded library.  The launcher
 * resolves events (with libpfm4) into perf_event_attr fields and passes them, with the output
 * directory and flags, through the environment; the preloaded library only decodes.  Exec'd
 * children inherit the same environment, so they are measured the same way.
 */
#ifndef FATHOM_MEASURE_MCONFIG_H
#define FATHOM_MEASURE_MCONFIG_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MCONFIG_ENV_EVENTS "FATHOM_EVENTS"
#define MCONFIG_ENV_OUTDIR "FATHOM_OUTDIR"
#define MCONFIG_ENV_FLAGS "FATHOM_FLAGS"
#define MCONFIG_ENV_RUN "FATHOM_RUN" /* the launcher's run, first line of every log */
#define MCONFIG_ENV_TABLES "FATHOM_TABLES" /* a directory of unwind tables shared by the run */
/* PID:DEV:INO:PATH, set by the exec wrappers: the new image of process PID appends to the log
 * PATH, if it is still the file with that device and inode number. */
#define MCONFIG_ENV_LOG "FATHOM_LOG"
#define MCONFIG_MAX_EVENTS 160 /* topdown:all alone plans up to 110 counters */
#define MCONFIG_NAME_MAX 96
#define MCONFIG_MAX_TMA 48	   /* TMA tree nodes (metrics computed from the counters) */
#define MCONFIG_TMA_TEXT 24576	   /* their formulas and descriptions */

/*
 * The sample sources, the one list that names them all: X(KIND, NAME).  KIND is the
 * enum mevent_source value that events carry (MSOURCE_KIND, encoded in the order written
 * here), NAME the source that serves it: in the launcher launcher_NAME_source (events are
 * parsed and checked, measure/launcher/source.h) and in the preloaded library rt_NAME_source
 * (threads are sampled and metrics described, measure/runtime/source.h).  A new source is a
 * row here and a file on each side.
 *   CPUTIME    a per-thread POSIX timer on CLOCK_THREAD_CPUTIME_ID
 *   REALTIME   a per-thread POSIX timer on CLOCK_REALTIME
 *   PERF       a perf_event (and the topdown events' groups)
 *   IO         the read/write wrappers; CONFIG is enum mio_metric
 *   MEMLEAK    the malloc wrappers; CONFIG is enum mleak_metric, RATE the probability of
 *              tracking in billionths
 *   BLOCKTIME  context-switch records and a SIGTRAP when the thread returns from blocking;
 *              unit ns, no rate
 */
#define MSOURCES(X)                                                                          \
	X(CPUTIME, timer)                                                                    \
	X(REALTIME, timer)                                                                   \
	X(PERF, perf)                                                                        \
	X(IO, io)                                                                            \
	X(MEMLEAK, memleak)                                                                  \
	X(BLOCKTIME, blocktime)

enum mevent_source {
#define X(kind, name) MSOURCE_##kind,
	MSOURCES(X)
#undef X
	MSOURCE_COUNT_ /* keep last: the decoder refuses sources from here on */
};

/* The metrics of the synchronous sources: -e IO and -e MEMLEAK each add one event per metric. */
enum mio_metric { MIO_BYTES_READ, MIO_BYTES_WRITTEN, MIO_READ_TIME, MIO_WRITE_TIME, MIO_COUNT };
enum mleak_metric { MLEAK_ALLOCATED, MLEAK_FREED, MLEAK_LEAKED, MLEAK_COUNT };
#define MLEAK_PROB_ONE 1000000000u /* --memleak-prob 1 */

struct mevent {
	char name[MCONFIG_NAME_MAX]; /* as the user wrote it, without the @rate */
	uint8_t source;		     /* enum mevent_source */
	uint8_t unit;		     /* enum mfile_unit */
	uint8_t precise;	     /* 0-3 (:p, :pp, :ppp) */
	bool freq;		     /* RATE is a frequency in Hz, else a period */
	bool sampling;		     /* interrupts; false: read at the group leader's samples */
	bool exclude_kernel;
	int16_t group;		     /* events with the same group >= 0 form one perf group */
	uint32_t type;		     /* perf_event_attr.type */
	uint64_t config, config1, config2;
	uint64_t rate; /* period (events, or microseconds for timers) or frequency */
	uint8_t tma_role; /* input of the TMA tree: enum tma_role of tma.h; 0 for other events */
};

/*
 * -e CPUTIME where perf events can be opened: the kernel's task clock (a software perf event
 * whose period is counted in the thread's CPU time, checked at every context switch), named
 * CPUTIME, period in nanoseconds.  Where they cannot, events_check() makes it an
 * MSOURCE_CPUTIME timer instead.
 */
static inline bool mevent_is_cputime(const struct mevent *e)
{
	return e->source == MSOURCE_PERF && e->type == PERF_TYPE_SOFTWARE &&
	       e->config == PERF_COUNT_SW_TASK_CLOCK && !strcmp(e->name, "CPUTIME");
}

/* A node of the TMA tree: a metric of the measurement file computed from the counters. */
struct mtma_node {
	char name[32];
	int32_t parent;		       /* its metric index in the measurement file, or -1 */
	int32_t threshold_ppm;	       /* threshold in millionths, or -1 for none */
	uint8_t level;		       /* 0 Total Slots / Active / Stall, then TMA levels 1-4 */
	bool of_cycles;		       /* a fraction of cycles, not of pipeline slots */
	uint32_t formula, description; /* offsets into mconfig.tma_text */
};

enum mconfig_flags {
	MCONFIG_TRACE = 1 << 0,	 /* -t: time-ordered trace per thread */
	MCONFIG_KERNEL = 1 << 1, /* kernel frames when allowed */
	MCONFIG_VERBOSE = 1 << 2,
	MCONFIG_NO_FOLLOW = 1 << 3, /* --no-follow: only the top process */
	/* The launcher tried perf's SIGTRAP (mconfig_probe_sigtrap) and found it works, or not:
	 * the processes it measures need not try again. */
	MCONFIG_SIGTRAP_PROBED = 1 << 4,
	MCONFIG_SIGTRAP = 1 << 5,
};

/* The counts and small fields come first: a process touches few of the structure's pages. */
struct mconfig {
	int nevents;
	uint32_t flags;
	/* The TMA nodes follow the events in the metric table: node J is metric nevents + J. */
	int ntma;
	uint32_t tma_text_len;
	/* Before the tables, which a measured process mostly never touches (preload.c maps ahead
	 * only the pages up to its first events). */
	char outdir[4096];
	/* Launcher only, never encoded: the topdown events asked for, planned by events_check(). */
	struct {
		unsigned subtrees; /* enum tma_subtree bits */
		uint64_t rate[4];
		bool freq[4];
		bool exclude_kernel;
		bool planned;
	} tma_req;
	struct mevent ev[MCONFIG_MAX_EVENTS];
	struct mtma_node tma[MCONFIG_MAX_TMA];
	char tma_text[MCONFIG_TMA_TEXT];
};

/*
 * Encode the events (and the TMA nodes) into BUF (NUL-terminated); returns 0, or -1 when BUF
 * is too small.
 */
int mconfig_encode_events(const struct mconfig *c, char *buf, size_t size);
/*
 * Decode the three environment values into C (no malloc, async-signal-safe): EVENTS and
 * OUTDIR are required.  Entries of ev[] and tma[] past nevents and ntma are left as they were
 * (not cleared).  Returns 0, or -1 with a message.
 */
int mconfig_decode(struct mconfig *c, const char *events, const char *outdir, const char *flags);
/* Append a TMA node; returns 0, or -1 when the table or its text is full. */
int mconfig_add_tma(struct mconfig *c, const char *name, int32_t parent, int32_t threshold_ppm,
		    uint8_t level, bool of_cycles, const char *formula, const char *description);
struct perf_event_attr;
/* The perf_event_attr of event E (LEADER: created disabled, the group starts with it), as
 * both the launcher's check and the preloaded library open it. */
void mconfig_perf_attr(const struct mevent *e, struct perf_event_attr *a, bool leader);
/*
 * The perf_event_attr of BLOCKTIME's per-thread event, as the launcher's check and the library
 * open it: a context-switch counter that overflows at every switch-out, with context-switch
 * records (PERF_RECORD_SWITCH) timed on CLOCK_MONOTONIC, and a synchronous SIGTRAP carrying
 * MCONFIG_BLOCKTIME_SIGDATA at the thread's next return to user mode.
 */
#define MCONFIG_BLOCKTIME_SIGDATA 0x66746d426c6f636bull /* "ftmBlock" */
void mconfig_blocktime_attr(struct perf_event_attr *a);
/* Whether this kernel raises perf's synchronous SIGTRAP at a sample (Linux 5.13), tried on a
 * user-mode task-clock, which anyone may open. */
bool mconfig_probe_sigtrap(void);
/* A, cleared: a disabled event TYPE CONFIG counting the program only (not the kernel, not the
 * hypervisor), as the probes that see whether an event opens use it. */
void mconfig_probe_attr(struct perf_event_attr *a, uint32_t type, uint64_t config);
/* The MPI rank from the environment (Open MPI, PMI, PMIx, Slurm, MVAPICH), or -1. */
int mconfig_mpi_rank(void);
/* The number of MPI ranks from the environment (the same launchers), or -1. */
int mconfig_mpi_size(void);

#endif
