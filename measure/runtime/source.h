/* SPDX-License-Identifier: MIT */
/*
 * source.h: what the preloaded library asks of a sample source.  Each source (timer.c,
 * perf.c, blocktime.c, io.c, memleak.c) fills one struct rt_source; sources.c's registry,
 * indexed by enum mevent_source, alone knows them all, and sampler.c, thread.c, writer.c and
 * preload.c reach them only through it.  A source keeps its per-thread state in the bytes it
 * asks for (thread_bytes), which follow the thread's record (rt_source_state).  Every
 * operation a signal handler can reach is async-signal-safe.  The launcher's side of the
 * same sources is measure/launcher/source.h.
 */
#ifndef FATHOM_MEASURE_RUNTIME_SOURCE_H
#define FATHOM_MEASURE_RUNTIME_SOURCE_H

#include "runtime.h"

struct mfile_metric;

struct rt_source {
	const char *name;
	/* Bytes of per-thread state, zeroed, then set up by thread_init (0: none). */
	size_t thread_bytes;
	/* At the constructor, after the load map and before any thread starts. */
	void (*process_init)(void);
	/* At the end of the process, before the threads are written (MEMLEAK's leaks). */
	void (*process_finish)(void);
	/* After the threads are written: what the source has to say in the log's summary. */
	void (*process_summary)(void);
	/* A fresh thread record, before it is registered: nothing is open yet. */
	void (*thread_init)(struct mthread *t);
	/* Start event I of this source on the calling thread T (a group's events with their
	 * leader, which is the one called); 0 or -1 with a message. */
	int (*thread_start)(struct mthread *t, int i);
	/* Raise no more samples on T (a sample already raised is still taken). */
	void (*thread_quiet)(struct mthread *t);
	/* Whether T has a sample raised that it has not taken yet. */
	bool (*thread_raised)(const struct mthread *t);
	/* T is stopped (quiet, no sample running): read the final counts; release unless the
	 * process is ending (rt.finished), whose exit or exec releases at less cost. */
	void (*thread_stop)(struct mthread *t);
	/* Unmap and close what T opened; FORGET (a forked child with its parent's record):
	 * close the descriptors only, and leave the record as it is. */
	void (*thread_release)(struct mthread *t, bool forget);
	/* T's file was written: add what the source counts for the process's summary. */
	void (*thread_written)(const struct mthread *t);
	/* A sample of T refused (reentrant, stopping, out of memory): note what it leaves. */
	void (*sample_refused)(struct mthread *t);
	/* The event of T that signal INFO (the measurement signal) stands for, or -1. */
	int (*signalled)(const struct mthread *t, const siginfo_t *info);
	/* Take a sample of event I on T, interrupted at UC (from signalled or overflow). */
	void (*sample)(struct mthread *t, int i, void *uc);
	/* SIGTRAP: whether INFO is this source's; trap() then handles it on T (which may be
	 * NULL: an unregistered thread) with the context UC. */
	bool (*traps)(const siginfo_t *info);
	void (*trap)(struct mthread *t, const siginfo_t *info, void *uc);
	/* Whether the source asks for SIGTRAP at all (perf sigtrap sampling, BLOCKTIME). */
	bool (*uses_sigtrap)(void);
	/* A sample signal became a SIGIO (the signal queue was full): true when handled. */
	bool (*overflow)(struct mthread *t, void *uc);
	/* Descriptor OLDFD of T now lives at NEWFD. */
	void (*fd_moved)(struct mthread *t, int oldfd, int newfd);
	/* Event E's metric for the writer: its description into DESC (SIZE bytes), and its
	 * rate, rate kind and flags in X (the rest is the writer's). */
	void (*describe)(const struct mevent *e, struct mfile_metric *x, char *desc, size_t size);
};

/* sources.c: the registry. */
/* The source of event I of the configuration. */
const struct rt_source *rt_source_of(int i);
/* The sources of the configuration, each once, in registry order: *N of them. */
const struct rt_source *const *rt_sources_used(int *n);
/* After the configuration is decoded: lay out the per-thread states of its sources. */
void rt_sources_setup(void);
/* The bytes of per-thread state the configuration's sources need (after the thread record). */
size_t rt_sources_thread_bytes(void);
/* T's state for the source of events of KIND (NULL when the configuration has none). */
void *rt_source_state(const struct mthread *t, enum mevent_source kind);

/* The per-kind sources, for the registry. */
extern const struct rt_source rt_timer_source, rt_perf_source, rt_io_source, rt_memleak_source,
	rt_blocktime_source;

/* sampler.c: what every source's sample shares. */
/* Count a sample of T taken and claim T for it (T->busy, which the sample clears when done):
 * false (the drop counted) when T is inside measure already, stopping, or out of memory for
 * its tree. */
bool rt_sample_claim(struct mthread *t);
/* Count a sample dropped for WHY and let the sources note what it leaves. */
void rt_sample_refuse(struct mthread *t, enum rt_drop why);
/* Unwind the sample at UC below the NKERNEL kernel frames already in t->frames and insert
 * its path: the leaf's node (UINT32_MAX when out of memory), *COMPLETE and *N frames. */
uint32_t rt_sample_path(struct mthread *t, void *uc, uint32_t nkernel, bool *complete,
			uint32_t *n);
/* After the source credited LEAF: count the sample recorded (and traced when TRACE). */
void rt_sample_recorded(struct mthread *t, uint32_t leaf, bool complete, uint32_t n, bool trace);


/* writer.c: for describe(), a source whose every event is measured: no rate, not a proxy. */
void rt_describe_every_event(struct mfile_metric *x);

#endif
