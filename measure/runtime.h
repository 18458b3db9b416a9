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
#include "config.h"
#include "error.h"
#include "mfile.h"

#include <signal.h>
#include <sys/types.h>
#include <time.h>

#define RT_MAX_FRAMES 8192
#define RT_MAX_KERNEL_FRAMES 128
#define RT_RING_PAGES 2 /* data pages of a perf sample buffer (plus one header page) */
#define RT_TRACE_CHUNK 4096

struct rt_frame {
	uint32_t module;
	uint64_t offset;
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
	struct cct cct;
	uint32_t index;
	int32_t parent_index;
	pid_t tid;
	uint64_t start_ns, start_mono, end_ns;
	uint64_t stack_lo, stack_hi; /* for validating unwinds */
	/* sources */
	int fd[MCONFIG_MAX_EVENTS];	  /* perf fd per event, -1 */
	uint64_t last[MCONFIG_MAX_EVENTS]; /* last count (perf) or clock (timers) */
	uint64_t enabled[MCONFIG_MAX_EVENTS], running[MCONFIG_MAX_EVENTS];
	uint64_t samples[MCONFIG_MAX_EVENTS];
	void *ring[MCONFIG_MAX_EVENTS];	  /* perf sample buffer (kernel call chains), or NULL */
	timer_t timer;
	bool has_timer;
	/* state */
	volatile sig_atomic_t busy; /* inside the handler or finishing */
	volatile sig_atomic_t stopped;
	bool written;
	/* the last sample's path, outermost first, for reusing the common prefix */
	struct rt_frame *path;
	uint32_t *path_nodes;
	uint32_t path_len;
	bool path_partial;
	struct rt_frame *frames; /* scratch for the unwinder, leaf first */
	/* statistics */
	uint64_t taken, recorded, partial, drops[RT_DROP_COUNT];
	struct rt_trace_chunk *trace_head, *trace_tail;
	uint64_t ntrace;
	char end_reason[32];
	uint32_t ncreation;
	struct rt_frame creation[32];
};

struct runtime {
	bool active;
	struct mconfig cfg;
	int signo;
	struct arena shared; /* process-wide metadata: modules, unwind tables, thread records */
	pid_t pid;
	char host[256];
	char program[4096];
	char cwd[4096];
	char *cmdline; /* NUL-separated argv (arena) */
	uint32_t argc;
	char **argv;
	int rank;
	char file_prefix[512]; /* OUTDIR/PROGRAM-HOST-PID */
	struct mthread *_Atomic threads;
	_Atomic uint32_t next_index;
	_Atomic uint64_t files, errors, taken, recorded, dropped, partial;
};

extern struct runtime rt;

uint64_t rt_realtime_ns(void);
uint64_t rt_monotonic_ns(void);
/* Append a line to this process's log (async-signal-safe; opens and closes the file). */
void rt_log(const char *fmt, ...) FTH_PRINTF(1, 2);

/* thread.c */
struct mthread *rt_self(void);
/* The load-map number of libmeasure.so itself (its frames are not the program's). */
uint32_t rt_self_module(void);
/* Set up measurement of the calling thread; PARENT is the creating thread or NULL. */
struct mthread *rt_thread_begin(struct mthread *parent, const struct rt_frame *creation,
				uint32_t ncreation);
/* Stop sampling T and write its file (once).  REASON goes into the file. */
void rt_thread_end(struct mthread *t, const char *reason);
/* End every thread of the process (exit paths). */
void rt_end_all(const char *reason);

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

/* sampler.c */
int rt_sampler_install(void);
/* A sample signal became a SIGIO (the signal queue was full): sample with UC if the event
 * is known, else re-arm this thread's events.  False when this thread has no perf events. */
bool rt_sampler_overflow(void *uc);
int rt_sources_start(struct mthread *t);
/* Stop T's sources, read the counters' final enabled/running times and close them. */
void rt_sources_stop(struct mthread *t);

/* unwind.c: fill OUT (leaf first, at most MAX) from UC; returns the count, *COMPLETE when
 * the walk reached the thread's outermost frame. */
uint32_t rt_unwind(struct mthread *t, const ucontext_t *uc, struct rt_frame *out, uint32_t max,
		   bool *complete);
/* The caller's frames of the current code (for creation contexts), outermost excluded. */
uint32_t rt_unwind_here(struct rt_frame *out, uint32_t max);

/* fds.c: mark descriptors as measure's, close ours, and learn that one moved. */
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
