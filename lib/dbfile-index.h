/* SPDX-License-Identifier: MIT */
/*
 * dbfile-index.h: the indices dbfile-write.c derives from the caller's tree before it writes
 * (dbfile-index.c), the flat-profile accumulators it fills per thread, and the creating and
 * closing of a database's files that it and dbtrace.c share.  Internal to lib/.
 */
#ifndef FATHOM_DBFILE_INDEX_H
#define FATHOM_DBFILE_INDEX_H

#include "dbfile.h"

/* What the writer derives from the caller's tree (contexts in the new, breadth-first order). */
struct dbfile_index {
	uint32_t n, nf, nm;
	uint32_t *order; /* new -> given */
	uint32_t *newid; /* given -> new */
	struct dbfile_context *ctx;
	uint32_t *fn_group;
	uint32_t ngroups;
	struct dbfile_group *groups;
	uint32_t *fl_start, *fl_list;	/* contexts by function */
	uint32_t *inl_start, *inl_list; /* INLINE contexts by the function they are inlined in */
	uint32_t block, nblocks, list_block, nlists;
	uint64_t nsum;
	struct dbfile_flat flat, group_flat, module_flat;
};

/*
 * Number DB's contexts breadth-first and derive the rest of D (groups, lists, outermost
 * instances, block sizes, the flat profiles of the sums).  Returns 0, or -1 with a message
 * (D then released).
 */
int dbfile_index_build(const struct dbfile *db, struct dbfile_index *d);
void dbfile_index_release(struct dbfile_index *d);

/* Dense accumulators of the flat profiles of one source (the sums, or one thread). */
struct dbfile_flat_acc {
	double *fn, *grp, *mod; /* 2 per (row, metric): inclusive, exclusive */
};

void dbfile_flat_acc_init(struct dbfile_flat_acc *a, const struct dbfile *db,
			  const struct dbfile_index *d);
/* Zero every accumulator, for the next thread. */
void dbfile_flat_acc_clear(struct dbfile_flat_acc *a, const struct dbfile *db,
			   const struct dbfile_index *d);
void dbfile_flat_acc_release(struct dbfile_flat_acc *a);
/* Add the value (INCL, EXCL) of context C (new number) for metric M. */
void dbfile_flat_acc_add(struct dbfile_flat_acc *a, const struct dbfile *db,
			 const struct dbfile_index *d, uint32_t c, uint16_t m, double incl,
			 double excl);
/* The groups' and modules' exclusive values (their functions'), then the sparse profiles
 * FN, GRP and MOD (the caller releases them). */
void dbfile_flat_acc_finish(struct dbfile_flat_acc *a, const struct dbfile *db,
			    const struct dbfile_index *d, struct dbfile_flat *fn,
			    struct dbfile_flat *grp, struct dbfile_flat *mod);

/*
 * The values of a piece of one thread's values (doc/formats.md 8.7) of a block of NC contexts
 * and NMETRICS metrics: BEGIN(ARG, count), when not NULL, then VALUE(ARG, context in the
 * block, metric, inclusive, exclusive) for each, in order.  0, or -1 with what is wrong, for
 * the caller to prefix with where the piece is.
 */
struct dbfile_piece_sink {
	void (*begin)(void *arg, uint64_t n);
	void (*value)(void *arg, uint32_t at, uint16_t metric, double incl, double excl);
	void *arg;
};
int dbfile_piece_values(const uint8_t *raw, size_t len, uint32_t nc, uint32_t nmetrics,
			const struct dbfile_piece_sink *sink);

/* Create DIR/NAME, which must not exist, for writing: *PATH (allocated) and *FD; 0, or -1 with
 * a message (nothing left allocated). */
int dbfile_create(const char *dir, const char *name, char **path, int *fd);
/* End the file at PATH open on *FD (if it is), RC saying whether writing it succeeded (0) or
 * failed (-1): synced first when SYNC and RC is 0, closed, removed if anything failed; *FD
 * becomes -1.  Returns RC, or -1 with a message when syncing or closing fails. */
int dbfile_end(int *fd, const char *path, int rc, bool sync);
/* End a spool written (RC 0) or not (-1) as dbfile_end does, unsynced; then free its *PATH
 * and its writer's workspace *WS, both NULL after. */
int dbfile_end_spool(int *fd, char **path, void **ws, int rc);
/* Open the spool DIR/SPOOL (a container with MAGIC, KIND in messages) into R: 1, 0 when there
 * is none, or -1 with a message. */
struct cf_reader;
int dbfile_open_spool(const char *dir, const char *spool, const char magic[8], const char *kind,
		      struct cf_reader *r);
/*
 * When the spool DIR/SPOOL (a container with MAGIC, KIND in messages) exists: write DIR/NAME,
 * a container of stored chunks, by CONVERT(spool, writer, ARG), then remove the spool.  0 (also
 * when there is no spool), or -1 with a message; a file not written whole is removed.
 */
struct cf_reader;
struct cf_writer;
int dbfile_convert_spool(const char *dir, const char *spool, const char magic[8], const char *kind,
			 const char *name,
			 int (*convert)(struct cf_reader *r, struct cf_writer *w, void *arg),
			 void *arg);

#endif
