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

/* What prof skipped or could not do, for the summary at the end. */
struct prof_problems {
	char **msgs; /* input that was skipped: prof exits non-zero */
	size_t n, alloc;
	char **notes; /* what is missing from the database, said once each */
	size_t nnotes, anotes;
};
void problem_add(struct prof_problems *p, const char *msg);
void note_add(struct prof_problems *p, const char *msg);

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

#endif
