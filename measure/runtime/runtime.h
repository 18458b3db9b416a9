/* SPDX-License-Identifier: MIT */
/*
 * runtime.h: the state of measure's preloaded library, shared by its files: the process
 * (configuration, shared arena, counters, log) and each thread (arena, tree, sources, the
 * sample statistics).  Everything reachable from the signal handler is async-signal-safe.
 */
#ifndef FATHOM_MEASURE_RUNTIME_H
#define FATHOM_MEASURE_RUNTIME_H

#include "arena.h"
#include "cct.h"
#include "mconfig.h"
#include "error.h"
#include "mfile.h"

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#define RT_MAX_FRAMES 8192
#define RT_MAX_KERNEL_FRAMES 128
#define RT_RING_PAGES 2 /* data pages of a perf sample buffer (plus one header page) */
#define RT_TRACE_CHUNK 4096
/* Partial call paths stopped in tables from the run's directory before the log says so (and
 * only when they are most of the process's samples). */
#define RT_PARTIAL_SHARED_MIN 10

struct rt_frame {
	uint32_t module;
	uint64_t offset;
};

/* A frame a walk stepped through: where its pc was read from the stack (0 for the first). */
struct rt_walk_step {
	uint64_t slot, pc;
	uint32_t depth; /* in a stored walk: frames of the path up to this step, outermost first */
	bool emitted;	/* in the path (measure's own frames are not) */
};

struct rt_trace_chunk {
	struct rt_trace_chunk *next;
	uint32_t n;
	struct mfile_trace_record rec[RT_TRACE_CHUNK];
};

/* Why a sample was not recorded.  X(enum suffix, name in the log and STAT chunk) */
#define RT_DROPS(X)                                                                  \
	X(REENTRANT, "dropped: sample inside measure") \
	X(STOPPED, "dropped: thread finishing")                                          \
	X(MEMORY, "dropped: out of measurement memory")                                  \
	X(SOURCE, "dropped: unknown signal source")                                       \
	X(QUEUE, "dropped: signal queue full")
enum rt_drop {
#define X(e, n) RT_DROP_##e,
	RT_DROPS(X)
#undef X
	RT_DROP_COUNT
};

struct mthread {
	struct mthread *next; /* registry of every thread of the process */
	struct arena arena;
	struct cct cct;	 /* with frames, path and path_nodes: made by rt_thread_tree() */
	bool tree_ready;
	uint32_t index;
	int32_t parent_index;
	pid_t tid;
	uint64_t start_ns, start_mono, end_ns;
	uint64_t stack_lo, stack_hi; /* for validating unwinds */
	/* what the sources measured of each event, for the file (their own state follows the
	 * record: source.h) */
	uint64_t enabled[MCONFIG_MAX_EVENTS], running[MCONFIG_MAX_EVENTS];
	uint64_t samples[MCONFIG_MAX_EVENTS];
	/* state */
	volatile sig_atomic_t busy; /* inside the handler or finishing */
	volatile sig_atomic_t stopped;
	bool quiet; /* its sources are disabled (rt_sources_quiet) */
	int starting; /* its sources are being started (rt_thread_begin): a stop waits for them */
	bool written;
	/* the last sample's path, outermost first, for reusing the common prefix */
	struct rt_frame *path;
	uint32_t *path_nodes;
	uint32_t path_len;
	bool path_partial;
	struct rt_frame *frames; /* scratch for the unwinder, leaf first */
	/* unwind.c: the thread's previous walk from a sample, outermost first, whose outer
	 * frames a walk that reaches them unchanged reuses in place (see there); the frames of
	 * those steps are the first ones of path[] */
	struct rt_walk_step *walk, *walk_new;
	uint32_t walk_n, walk_reusable, walk_modules;
	/* statistics */
	uint64_t taken, recorded, partial, drops[RT_DROP_COUNT];
	uint64_t calls; /* calls of the synchronous sources (IO, MEMLEAK) recorded */
	/* partial walks that stopped in a table mapped from the run's table directory, and the
	 * module of the last one */
	uint64_t partial_shared;
	uint32_t partial_shared_module;
	uint64_t cpu_ns; /* the thread's CPU time when it ended, 0 if unknown */
	struct rt_trace_chunk *trace_head, *trace_tail;
	uint64_t ntrace;
	char end_reason[32];
	uint32_t ncreation;
	struct rt_frame creation[32];
	bool has_entry;
	struct rt_frame entry; /* the function pthread_create was given */
	char name[16];	       /* the thread's name (comm) when it ended */
	struct rt_sync *sync; /* the synchronous sources' state (callsite.c), made on first use */
};

/*
 * The process's state.  The members up to cwd are the ones every process writes, a forked child
 * first of all: they come first, in a page-aligned structure, so that a child copies one page of
 * it rather than four (a copy-on-write fault costs about 13 us in a virtual machine).
 */
struct runtime {
	bool active;
	bool finished; /* the process's measurement is written (rt_finish_process) */
	pid_t pid;
	int signo;
	int rank;
	struct mthread *_Atomic threads;
	_Atomic uint32_t next_index;
	_Atomic uint64_t files, errors, taken, recorded, dropped, partial, calls;
	_Atomic uint64_t partial_shared; /* of the threads written (struct mthread) */
	_Atomic uint32_t partial_shared_module;
	_Atomic uint64_t cpu_ns; /* of the threads written */
	_Atomic uint64_t unwritten; /* threads that left by exec with nothing measured */
	struct arena shared; /* process-wide metadata: modules, unwind tables, thread records */
	char host[256];
	char cpu[48]; /* "VENDOR FAMILY MODEL STEPPING" (cpuid), or "" */
	char file_prefix[512]; /* OUTDIR/PROGRAM-HOST-PID */
	char log_path[600];    /* the process's log: its first image's FILE_PREFIX.log */
	/* The log as this process created it (preload.c): lines are appended to that very file
	 * only, never to another one put at its name. */
	bool log_made;
	bool log_failed; /* it could not be created: errors go to stderr */
	uint64_t log_dev, log_ino;
	char run[160];	       /* the launcher's run, which the log's first line names */
	/* Log lines held back while a forked child is single-threaded (preload.c). */
	bool holding;
	size_t nheld;
	char held[2048];
	char cwd[4096];
	char program[4096];
	const char *program_base; /* its file name, in program */
	char *cmdline; /* NUL-separated argv (arena) */
	uint32_t argc;
	char **argv;
	struct mconfig cfg;
};

extern struct runtime rt;

/* clock.c */
uint64_t rt_realtime_ns(void);
uint64_t rt_monotonic_ns(void);
/* The CPU time of thread TID of this process (0: the calling thread), or 0 if unknown. */
uint64_t rt_thread_cpu_ns(pid_t tid);

/* log.c: append a line to this process's log (async-signal-safe; opens and closes the file). */
void rt_log(const char *fmt, ...) FTH_PRINTF(1, 2);
/* The log's name for this process (after its file prefix); FORKED: a child, whose log is
 * its own, not the one an exec'd image inherits. */
void rt_log_set_path(bool forked);
/* The log's first line: the launcher's run. */
void rt_log_run(void);
/* Write the lines held back while a forked child was single-threaded (rt.holding). */
void rt_log_flush(void);
/* Keep the log open while the constructor writes its lines, then close it. */
void rt_log_keep_open(void);
void rt_log_close_kept(void);

/* thread.c */
struct mthread *rt_self(void);
/* The load-map number of libmeasure.so itself (its frames are not the program's). */
uint32_t rt_self_module(void);
/* Set up measurement of the calling thread; PARENT is the creating thread or NULL. */
struct mthread *rt_thread_begin(struct mthread *parent, const struct rt_frame *creation,
				uint32_t ncreation);
/*
 * T's tree and the arrays a sample fills, made at its first sample: a thread that is never
 * sampled, such as a forked child between its fork and its exec, maps none of it (its file
 * holds the root alone).  Called with T claimed (busy); async-signal-safe.  False when memory
 * ran out.
 */
bool rt_thread_tree(struct mthread *t);
/* In a forked child: the calling thread no longer has the parent's record (nothing ends it). */
void rt_thread_forget_self(void);
/* Stop sampling T and write its file (once).  REASON goes into the file. */
void rt_thread_end(struct mthread *t, const char *reason);
/* End every thread of the process (exit paths). */
void rt_end_all(const char *reason);

/* log.c: NAME=VALUE for the environment of the image this process execs, which then
 * appends to this process's log; returns its length, or 0 when it does not fit SIZE. */
size_t rt_log_env(char *buf, size_t size);

/* exec.c: rt_exec_resolve() looks up the real exec functions (at the start, like
 * rt_fds_resolve(), for the forked children that exec). */
void rt_exec_resolve(void);

/* preload.c: around exec.  rt_before_exec() stops and writes everything when this process
 * is measured (not in a vfork or posix_spawn child) and says whether it did. */
bool rt_before_exec(void);
void rt_after_failed_exec(void);

/* Write everything and stop measuring this process (exit paths, fatal signals). */
void rt_finish_process(const char *reason);

/* signals.c */
int rt_signals_install(void);
int rt_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* In the handler: a measurement-signal number the program sent itself goes to its handler. */
bool rt_forward_program_signal(int sig, siginfo_t *info, void *uc);

/* sampler.c: the signal handlers, and the configuration's sources (source.h) in turn. */
int rt_sampler_install(void);
/* Whether SIGTRAP carries measure's signals (perf sigtrap sampling, or BLOCKTIME). */
bool rt_sampler_traps(void);
/* In the SIGTRAP handler: a perf trap of ours (a sample, or a BLOCKTIME switch-in) is taken
 * with the context UC; false when the trap is not measure's. */
bool rt_sampler_trap(siginfo_t *info, void *uc);
/* A sample signal became a SIGIO (the signal queue was full): sample with UC if the event
 * is known, else re-arm this thread's events.  False when this thread has no perf events. */
bool rt_sampler_overflow(void *uc);
/* The sources' process set-up (after the load map), end (before the threads are written),
 * and their lines of the log's summary (after). */
void rt_sources_init(void);
void rt_sources_finish(void);
void rt_sources_summary(void);
/* A fresh thread record T (its sources' states), before it is registered. */
void rt_sources_thread_init(struct mthread *t);
int rt_sources_start(struct mthread *t);
/* Disable T's timer and perf events, so that they raise no more samples; a sample already
 * raised is still taken. */
void rt_sources_quiet(struct mthread *t);
/* Whether a perf event of T raised a sample that T has not taken yet (a quiet thread that was
 * preempted just then takes it when it next runs). */
bool rt_sources_raised(const struct mthread *t);
/* Stop T's sources, read the counters' final enabled/running times and close them (unless the
 * process is ending: rt.finished). */
void rt_sources_stop(struct mthread *t);
/* Unmap and close a stopped thread's perf events (those rt_sources_stop left to the exit). */
void rt_sources_release(struct mthread *t);
/* In a forked child: let go of the parent's thread T's sources (its rings and descriptors),
 * which belong to the parent, without touching them. */
void rt_sources_forget(struct mthread *t);
/* T's file was written: the sources count what they report in the process's summary. */
void rt_sources_written(const struct mthread *t);

/*
 * unwind.c: the call path of a sample at UC.  *COMPLETE when the walk reached the thread's
 * outermost frame.  The outermost *REUSED frames are the previous sample's path[0..*REUSED)
 * unchanged (not written again); the frames inside them go to OUT, leaf first, and their
 * count is returned; *REUSED + that count <= MAX.  The caller must store the path in
 * path[] (sampler.c insert_path) or call rt_unwind_forget().
 */
uint32_t rt_unwind(struct mthread *t, const ucontext_t *uc, struct rt_frame *out, uint32_t max,
		   bool *complete, uint32_t *reused);
/* Drop T's previous walk: its path was not stored. */
void rt_unwind_forget(struct mthread *t);
/*
 * After a partial walk of N frames (OUT of rt_unwind()): count it in T when it stopped in a
 * module whose table was mapped from the run's table directory (a damaged or crafted table
 * there shows so).  Async-signal-safe.
 */
void rt_unwind_note_partial(struct mthread *t, const struct rt_frame *out, uint32_t n);
/* Make T's record of the previous walk (with its tree; rt_unwind() retries if this failed). */
void rt_unwind_prepare(struct mthread *t);
/* The caller's frames of the current code (for creation contexts), outermost excluded. */
uint32_t rt_unwind_here(struct rt_frame *out, uint32_t max);

/*
 * unwind.c: for a synchronous source, the program's frames that called into measure, from the
 * current frame (measure's own frames dropped), with where each return address was read
 * (SLOTS) and *CACHEABLE when the path depends only on the first frame's pc and stack pointer
 * and on those stack words.
 */
uint32_t rt_unwind_caller(struct mthread *t, struct rt_frame *out, uint64_t *slots, uint32_t max,
			  bool *complete, bool *cacheable);

/* callsite.c: the calling contexts of the synchronous sources (IO, MEMLEAK). */
/* Set up what the synchronous sources need (constructor, after the load map). */
void rt_sync_init(void);
/* True when RA, a return address, lies in measure's own code (its calls are not counted). */
bool rt_sync_from_measure(uint64_t ra);
/* Take T for an update of its tree outside the signal handler: false when it is finishing or
 * already busy (a sample, or another wrapper further up this thread's stack). */
bool rt_sync_claim(struct mthread *t);
void rt_sync_release(struct mthread *t);
/*
 * The leaf node of T's tree for a call of CALLEE (the real function) made at return address
 * RA with stack pointer CFA in the caller; T must be claimed.  UINT32_MAX when out of memory.
 */
uint32_t rt_sync_context(struct mthread *t, const void *callee, uint64_t ra, uint64_t cfa);
/* The node of T's tree with the path of node NODE of FROM's tree (copied), T claimed. */
uint32_t rt_sync_copy_context(struct mthread *t, const struct mthread *from, uint32_t node);
/* Add V to metric M at NODE of claimed T (and count one event of M). */
void rt_sync_credit(struct mthread *t, uint32_t node, int metric, uint64_t v);

/* memleak.c: the bootstrap heap's bounds (in this library's zero-initialized data). */
void rt_memleak_boot_range(uintptr_t *lo, uintptr_t *hi);

/* io.c: look up the real functions of the IO wrappers (at the start, for the forked
 * children, whatever the events). */
void rt_io_resolve(void);

/* fds.c: mark descriptors as measure's, close ours, and learn that one moved.
 * rt_fds_resolve() looks up the real close (done at the start, so that a forked child,
 * whose copy-on-write pages make each first touch cost, does not look it up itself). */
void rt_fds_resolve(void);
void rt_fd_own(int fd, bool own);
int rt_close(int fd);
/* sampler.c / writer.c: our descriptor OLDFD now lives at NEWFD. */
void rt_fd_moved(int oldfd, int newfd);

/* writer.c */
int rt_write_thread(struct mthread *t);
/* Keep one descriptor in reserve for writing files when the program has used up the rest. */
void rt_writer_reserve_fd(void);
void rt_writer_fd_moved(int oldfd, int newfd);

#endif
