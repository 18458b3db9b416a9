/* SPDX-License-Identifier: MIT */
/*
 * run.h: one run of prof, in the parts prof (main.c) and prof-mpi (mpi.c) share: the options,
 * the measurement files, the structure files, the reading pipeline and the merge (run.c).
 */
#ifndef FATHOM_PROF_RUN_H
#define FATHOM_PROF_RUN_H

#include "prof.h"
#include "dbtrace.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

struct options {
	const char *output;
	int jobs;
	bool jobs_given; /* -j was on the command line */
	bool no_struct;
	bool thread_values;
	bool stats;
	bool force; /* replace an existing database */
	bool no_traces; /* leave out the traces of threads measured with -t */
	int level;	   /* zstd level of summary.fdb */
	int thread_level; /* and of threads.fdb: faster by default, it is most of the bytes */
	char **struct_paths;
	size_t nstruct, astruct;
};

/* Where a slot of the reading pipeline is: free, its file being read, read, or unreadable. */
enum slot_state { SLOT_FREE, SLOT_READING, SLOT_READ, SLOT_FAILED };

/* One measurement file in the pipeline. */
struct slot {
	struct mfile m;
	enum slot_state state;
	char *err;
	size_t file;
};

struct pipeline {
	char **files;
	size_t nfiles;
	struct slot *slots;
	size_t nslots;
	size_t next;	 /* next file to hand to a reader */
	bool stop;
	double read_cpu; /* seconds of CPU the reader threads used */
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* The per-thread values' writer thread: a ring of buffers filled by main, emptied in order. */
#define NBUFS 4
struct writer {
	struct dbfile_thread_writer *tw;
	struct dbfile_values bufs[NBUFS];
	size_t filled, written; /* buffers handed over, and written, so far */
	bool done;
	char *err;
	double cpu;
	pthread_mutex_t lock;
	pthread_cond_t cond;
};

/* Where the database is written: a private temporary directory beside its final name. */
struct output {
	char *final, *tmp;
	int tmp_fd; /* TMP, opened and checked once it is made */
	struct stat tmp_st;
};

/* One run of prof: its inputs, the reading pipeline, the merge, and the database's output. */
struct merge {
	const struct options *o;
	struct prof_problems probs;
	char **files;
	size_t nfiles;	   /* the files this process merges (prof-mpi: this rank's share) */
	size_t nfiles_all; /* and of the whole run */
	struct structs *ss;
	struct pipeline p;
	pthread_t *workers;
	int nworkers; /* reader threads (-j2 and more), 0: reading in the main thread */
	struct unifier *u;
	/* the per-thread values: written by the main thread (VALS), or through a writer thread */
	struct dbfile_thread_writer tw;
	bool tw_open;
	struct dbfile_values vals;
	struct writer wr;
	pthread_t writer_thread;
	bool writer_started;
	struct dbtrace_spool traces; /* the traced threads' records, once there is one */
	bool traces_open;
	struct output out;
	const char *spool_dir; /* where the spools go: OUT's TMP, or the rank's directory */
	bool always_spool;     /* the per-thread values even with --metric-db=summary */
	int spool_level;       /* the spool's zstd level; -1: the per-thread values' */
	bool own_stats;	       /* --stats is the caller's to print (prof-mpi's ranks) */
	char *program; /* the first readable file's */
	int status;
};

/* The signal that stopped the run (SIGINT, SIGTERM, SIGHUP), or 0. */
extern volatile sig_atomic_t prof_interrupted;
void prof_catch_signals(void);
/* "interrupted by signal N; no database was written". */
void prof_say_interrupted(void);

/* Parse the command line into O: -1 to go on, else the exit status (usage, --help). */
int prof_parse_options(int argc, char **argv, struct options *o, void (*usage)(FILE *f));
void prof_usage(FILE *f);
/* Append the measurement files of ARG (a directory, or one file) to FILES, sorted. */
int prof_collect(const char *arg, char ***files, size_t *n, size_t *alloc);
/* Whether the threads of FILES ran more than one program (their identities read alone). */
bool prof_several_programs(char **files, size_t nfiles);
/* The database's name for measurements FIRST_ARG of PROGRAM, when -o does not give one. */
char *prof_default_output(const char *first_arg, const char *program);
/* Make OUT's private temporary directory (FINAL must not exist unless FORCE); 0, or -1 said. */
int prof_output_create(struct output *out, bool force);
/* Move TMP to FINAL, replacing an earlier database there (never anything else). */
int prof_publish(const char *tmp, const char *final);
/* Remove the database directory DIR opened as FD (ST): its files, then DIR if still DIR. */
void prof_remove_db_dir(int fd, const char *dir, const struct stat *st);
/*
 * The structure files: each measurement directory's structs/ (unless --no-struct) and kernel
 * symbols, and every -S path; structure files through READ (NULL: sfile_read), see structs_new.
 */
void prof_load_structures(struct structs *ss, int argc, char **argv, const struct options *o,
			  struct prof_problems *probs);
/* The per-thread values' spool (and the traces') in directory DIR, for NFILES threads at most. */
int merge_open_spool(struct merge *m, const char *dir);
/* Read and merge M's files in order; the readers and the writer are stopped on return. */
void merge_inputs(struct merge *m, const char *first_arg);
/* The database of what M merged into DB (its tree, statistics, notes and flags). */
void merge_finish_db(struct merge *m, struct dbfile *db);
/*
 * Write DB (by WRITE, NULL: prof's own, from the spools) and publish it; when anything fails,
 * nothing (M's status then 1).  DB is finished first unless it has its contexts already.
 */
void merge_write(struct merge *m, struct dbfile *db,
		 int (*write)(struct merge *m, struct dbfile *db));
void prof_print_stats(const struct merge *m, const struct timespec *t0);
/* Close the spools written while merging: 0, or -1 said. */
int merge_close_spools(struct merge *m);
/* After the database is written (STATUS 0) or not: notes, missing loops, the line it was
 * written, --stats (since T0), inputs skipped; returns the exit status. */
int prof_report(struct merge *m, struct dbfile *db, const struct timespec *t0);
void merge_release(struct merge *m);
double prof_thread_cpu(void);

#endif
