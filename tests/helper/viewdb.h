/* SPDX-License-Identifier: MIT */
/*
 * viewdb.h: metric databases with known values for view's tests and benchmark, written
 * through lib/dbfile-write.c.  A builder takes the calling context tree and each thread's
 * exclusive values, and derives the rest as prof does (inclusive values, statistics over
 * threads); the writer derives the breadth-first numbering, the indices and the flat profiles.
 */
#ifndef FATHOM_TESTS_VIEWDB_H
#define FATHOM_TESTS_VIEWDB_H

#include "dbfile.h"

struct viewdb_value;

struct viewdb {
	struct dbfile db;
	uint32_t astrings, afunctions, acontexts, amodules, ametrics;
	struct viewdb_value *values;
	uint64_t nvalues, avalues;
};

void viewdb_init(struct viewdb *b, const char *program, uint32_t nthreads);
uint32_t viewdb_string(struct viewdb *b, const char *s);	    /* always a new string */
uint32_t viewdb_module(struct viewdb *b, const char *path);
uint32_t viewdb_function(struct viewdb *b, const char *name, uint32_t module, uint32_t file,
			 uint32_t line);
/* A metric; derived when FORMULA is not NULL.  Returns its index; adjust the fields after. */
uint32_t viewdb_metric(struct viewdb *b, const char *name, unsigned unit, const char *formula);
uint32_t viewdb_context(struct viewdb *b, uint32_t parent, unsigned kind, uint32_t function,
			uint32_t file, uint32_t line, uint32_t module, uint64_t addr);
/* Add V to THREAD's exclusive value of METRIC at CTX (raw metrics only). */
void viewdb_value(struct viewdb *b, uint32_t ctx, uint32_t thread, uint32_t metric, double v);
/* Derive everything and write DIR (created) with summary.fdb and threads.fdb. */
int viewdb_write(struct viewdb *b, const char *dir, int level);
void viewdb_release(struct viewdb *b);

/* The databases of the tests: see viewdb.c for what each holds and its known values. */
int viewdb_make_small(const char *dir);
int viewdb_make_tma(const char *dir, bool after);
int viewdb_make_deep(const char *dir);
/* NCONTEXTS contexts, NTHREADS threads, generated from SEED. */
int viewdb_make_large(const char *dir, uint32_t ncontexts, uint32_t nthreads, uint32_t seed);

#endif
