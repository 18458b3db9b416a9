/* SPDX-License-Identifier: MIT */
/*
 * model-trace.h: the trace timeline's model: for a window of time cut into bins, what each
 * traced thread did in each bin (the scope at the chosen call-path depth that took most of
 * the bin's samples, or why there was nothing: not running, not yet started, ended), the share
 * of each scope across all threads per bin, and the sample under a point.  It reads the
 * database's traces (lib/dbtrace.h) a level at a time, so that what it reads and keeps follows
 * the window, not the trace.
 */
#ifndef FATHOM_VIEW_MODEL_TRACE_H
#define FATHOM_VIEW_MODEL_TRACE_H

#include "dbfile.h"
#include "dbtrace.h"

#include <stdbool.h>
#include <stdint.h>

enum trace_cell_kind {
	TRACE_WORK,	/* SCOPE took most of the bin */
	TRACE_IDLE,	/* alive, but sampled nowhere in the bin: blocked, or not scheduled */
	TRACE_UNBORN,	/* before the thread started */
	TRACE_ENDED,	/* after it ended */
	TRACE_UNTRACED, /* the thread has no trace (measured without -t) */
};

struct trace_cell {
	uint8_t kind;	/* enum trace_cell_kind */
	uint32_t scope; /* TRACE_WORK: the context at the depth (a FUNCTION or INLINE one) */
	uint32_t samples; /* records that fell in the bin (level 0), or their estimate */
};

/* A scope's share of a bin across the threads (the summary strip). */
struct trace_share {
	uint32_t scope;
	double share; /* of the threads alive in the bin whose cell it is, 0 .. 1 */
};

struct trace_row_cache;

struct trace_model {
	struct dbfile *db;
	struct dbtrace tr;
	uint64_t t_begin, t_end; /* the traces' span, absolute (ns of CLOCK_REALTIME) */
	uint32_t ntraced;
	uint32_t depth;	    /* call-path depth: 0 the outermost function */
	uint32_t max_depth; /* the deepest path seen so far */
	uint32_t *scope_of; /* context -> its scope at DEPTH (or DBFILE_NONE), memo; NONE + 1 unset */
	uint64_t *hold;	    /* per thread: the longest gap between samples while it runs (ns) */
	struct trace_row_cache *rows; /* per thread: its last row (model-trace.c) */
};

/* Open the traces of DB (read from DIR): 0, 1 when it has none (M is then empty), or -1. */
int trace_model_open(struct trace_model *m, struct dbfile *db, const char *dir);
void trace_model_close(struct trace_model *m);
void trace_model_set_depth(struct trace_model *m, uint32_t depth);
/* The scope of context CTX at the model's depth (the deepest function on its path when the
 * path is shorter), or DBFILE_NONE (the root). */
uint32_t trace_model_scope(struct trace_model *m, uint32_t ctx);
/* Thread THREAD's row: NBINS cells covering [T0, T1) (absolute ns). */
int trace_model_row(struct trace_model *m, uint32_t thread, uint64_t t0, uint64_t t1,
		    uint32_t nbins, struct trace_cell *out);
/*
 * The summary strip over every traced thread: per bin, up to MAXK scopes with the share of the
 * threads alive there whose cell they are (hpctraceviewer's summary), largest first, into
 * OUT[bin * MAXK ...], NOUT[bin] of them.
 */
int trace_model_summary(struct trace_model *m, uint64_t t0, uint64_t t1, uint32_t nbins,
			uint32_t maxk, struct trace_share *out, uint32_t *nout);
/* The threads in the order the timeline shows them: by host and process, then thread index
 * (an array of db->nthreads the caller frees). */
uint32_t *trace_model_thread_order(const struct trace_model *m);
/* The depth to open at: the shallowest at which some thread's row over [T0, T1) changes scope
 * (below the thread entry and main, where every thread looks the same). */
uint32_t trace_model_default_depth(struct trace_model *m, uint64_t t0, uint64_t t1);
/* The same over the threads I with INCLUDE[I] (NULL: all). */
int trace_model_summary_of(struct trace_model *m, uint64_t t0, uint64_t t1, uint32_t nbins,
			   uint32_t maxk, struct trace_share *out, uint32_t *nout,
			   const bool *include);
/* The sample of THREAD that stands at time T (absolute ns): the last one at or before T, or the
 * next, within the thread's running gap; its context and time; 1 when there is none. */
int trace_model_sample_at(struct trace_model *m, uint32_t thread, uint64_t t, uint32_t *ctx,
			  uint64_t *when);

#endif
