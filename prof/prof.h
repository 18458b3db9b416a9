/* SPDX-License-Identifier: MIT */
/*
 * prof.h: the parts of prof: structure lookup (structure.c: structure files, or ELF symbols
 * and DWARF lines as a fallback) and unification (unify.c: one calling context tree for all
 * threads, exclusive and inclusive values, statistics over threads, the database contents).
 */
#ifndef FATHOM_PROF_H
#define FATHOM_PROF_H

#include "dbfile.h"
#include "mfile.h"

#include <math.h>

/* What prof skipped or could not do, for the summary at the end. */
struct prof_problems {
	char **msgs; /* input that was skipped: prof exits non-zero */
	size_t n, alloc;
	char **notes; /* what is missing from the database, said once each */
	size_t nnotes, anotes;
};
void problem_add(struct prof_problems *p, const char *msg);
void note_add(struct prof_problems *p, const char *msg);
void problems_release(struct prof_problems *p);

/* ---- structure.c ---- */

/* One static scope of an address, outermost first: function > inlines > loops > line. */
struct scope {
	uint8_t kind;	   /* enum dbfile_kind: FUNCTION, INLINE, LOOP, LINE or CALL */
	const char *name;  /* FUNCTION, INLINE: the function's name */
	const char *file;  /* call site (INLINE), header (LOOP), statement (LINE, CALL); or NULL */
	uint32_t line;
	const char *decl_file; /* FUNCTION and INLINE: the declaration */
	uint32_t decl_line;
	uint64_t addr; /* FUNCTION: entry; LOOP: header; LINE/CALL: address when no line */
};

struct structs;
struct ksyms;
struct structs *structs_new(bool use_dwarf);
void structs_free(struct structs *ss);
/* Load every structure file (*.fthst) in DIR; bad files are reported in P and skipped. */
void structs_add_dir(struct structs *ss, const char *dir, bool quiet_missing,
		     struct prof_problems *p);
/* Read structure files by READ(ARG, PATH, SF) (prof-mpi: one read per node) rather than
 * sfile_read. */
struct sfile;
void structs_set_reader(struct structs *ss,
			int (*read)(void *arg, const char *path, struct sfile *sf), void *arg);
/* Load one structure file. */
int structs_add_file(struct structs *ss, const char *path);
/* Load the kernel symbols files (*.ksyms) that measure saved in measurement directory DIR. */
void structs_add_kernel_symbols(struct structs *ss, const char *dir, struct prof_problems *p);

/* A module of the unified load map, with what is known of its structure. */
struct module_info {
	char *path;
	uint8_t *build_id;
	uint32_t build_id_len;
	const void *sf;	  /* struct sfile *, or NULL */
	void *elf;	  /* fallback symbols and lines, or NULL */
	bool tried;	  /* the fallback was attempted */
	bool loops;
	bool kernel;	  /* MFILE_KERNEL_MODULE: addresses are the kernel's own */
	const struct ksyms *ksyms; /* its symbols, or NULL */
};
/* Attach structure to M: a structure file when one matches, else the fallback. */
void structs_attach(struct structs *ss, struct module_info *m, struct prof_problems *p);
/*
 * Expand ADDR of module M into scopes (outermost first) in OUT (room for CAP); the last is a
 * LINE (SAMPLE) or CALL (IS_CALL: ADDR is the call instruction).  Returns the count.
 */
size_t structs_resolve(struct structs *ss, struct module_info *m, uint64_t addr, bool is_call,
		       struct scope *out, size_t cap);
void structs_release_module(struct module_info *m);

/* ---- unify.c ---- */

/*
 * Running statistics of one (context, metric) and variant over the threads where it is not
 * zero, added in thread order (Welford's mean and M2): prof and prof-mpi add the same values
 * in the same order, so their statistics are the same to the bit.
 */
struct acc {
	uint32_t count;
	double sum, min, max, mean, m2;
};

static inline void acc_add(struct acc *a, double x)
{
	if (a->count == 0) {
		a->min = a->max = x;
	} else {
		if (x < a->min)
			a->min = x;
		if (x > a->max)
			a->max = x;
	}
	a->count++;
	a->sum += x;
	double d = x - a->mean;
	a->mean += d / a->count;
	a->m2 += d * (x - a->mean);
}

static inline void acc_finish(const struct acc *a, struct dbfile_stat *s)
{
	s->count = a->count;
	s->sum = a->sum;
	s->min = a->min;
	s->max = a->max;
	s->stddev = a->count ? sqrt(a->m2 / a->count) : 0;
}

struct unifier;
struct unifier *unifier_new(struct structs *ss, struct prof_problems *p);
void unifier_free(struct unifier *u);
/*
 * Merge thread M (from file NAME) as the next thread; its sparse values go to OUT (when not
 * NULL).  Returns 0, or -1 when the file cannot be merged (nothing of it is kept).
 */
int unifier_add(struct unifier *u, const struct mfile *m, const char *name,
		struct dbfile_values *out);
/*
 * Keep the processes of each program apart: every thread's tree hangs below an ENTRY context
 * of its program (the executable's module), as when a run has several programs.  Before the
 * first unifier_add.
 */
void unifier_by_program(struct unifier *u);
/* Fill DB (released with dbfile_close) with everything merged so far. */
void unifier_finish(struct unifier *u, struct dbfile *db, const char *program);
uint32_t unifier_nthreads(const struct unifier *u);
/* Whether the thread unifier_add merged last was traced (measure -t), and its trace: *N records
 * at *REC, their contexts as in the tree merged so far (none: it was never sampled). */
struct dbtrace_record;
bool unifier_trace(const struct unifier *u, const struct dbtrace_record **rec, uint64_t *n);

/*
 * prof-mpi's reduction: a unifier without statistics over threads (the caller computes them
 * once the trees are one), its tree as bytes, and merging such bytes after what U has: the
 * sender's contexts, functions, modules, strings and metrics keep their first-seen order
 * after U's, its threads follow U's, its problems and notes are added unless U has them.
 * MAP gives the sender's contexts and metrics their numbers in U.
 */
struct buf;
struct unifier_map {
	uint32_t *ctx, *metric;
	uint32_t nctx, nmetrics;
};
void unifier_no_stats(struct unifier *u);
void unifier_pack(const struct unifier *u, struct buf *b);
int unifier_merge(struct unifier *u, const uint8_t *data, size_t len, struct unifier_map *map);
void unifier_map_release(struct unifier_map *map);
const struct dbfile_thread *unifier_thread(const struct unifier *u, uint32_t t);
/* The metrics merged so far: those with values (unifier_finish adds derived ones after). */
uint32_t unifier_nmetrics(const struct unifier *u);

#endif
