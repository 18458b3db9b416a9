/* SPDX-License-Identifier: MIT */
/*
 * run.c: one run of prof, shared by prof and prof-mpi: the command line, finding the
 * measurement files, reading them in parallel (files are merged in a fixed order, so the
 * output does not depend on -j), merging them, and writing the database atomically.
 */
#include "compat.h"
#include "escape.h"
#include "run.h"
#include "error.h"
#include "userdir.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>





/* CPU seconds this thread has used. */
double prof_thread_cpu(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/*
 * The per-thread values go to threads.fdb through a writer thread (with -j2 and more), so that
 * encoding and compressing them overlaps with merging the next thread.  A ring of buffers
 * filled by main in order and emptied by the writer in the same order.
 */

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->done && w->written == w->filled)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->written == w->filled)
			break;
		struct dbfile_values *v = &w->bufs[w->written % NBUFS];
		pthread_mutex_unlock(&w->lock);
		int rc = w->err ? 0 : dbfile_threads_add(w->tw, v);
		pthread_mutex_lock(&w->lock);
		if (rc < 0 && !w->err)
			w->err = xstrdup(fth_errmsg());
		w->written++;
		pthread_cond_broadcast(&w->cond);
	}
	w->cpu = prof_thread_cpu();
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* The next buffer for main to fill (waits until the writer has emptied it). */
static struct dbfile_values *writer_buffer(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->filled - w->written >= NBUFS)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return &w->bufs[w->filled % NBUFS];
}

static void writer_post(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	w->filled++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Wait until everything handed over is written; returns -1 if a write failed. */
static int writer_drain(struct writer *w)
{
	pthread_mutex_lock(&w->lock);
	while (w->written != w->filled)
		pthread_cond_wait(&w->cond, &w->lock);
	int rc = w->err ? fth_error("%s", w->err) : 0;
	pthread_mutex_unlock(&w->lock);
	return rc;
}

volatile sig_atomic_t prof_interrupted;

static void on_signal(int sig)
{
	prof_interrupted = sig;
}

void prof_catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void prof_usage(FILE *f)
{
	fprintf(f,
		"usage: prof [options] MEASUREMENTS_DIR...\n"
		"Merge the measurement files of MEASUREMENTS_DIR... and the structure of their\n"
		"binaries into a metric database for view.\n"
		"  -o, --output DIR       write the database to DIR (default: PROGRAM-database)\n"
		"  -j, --jobs N           read measurement files with N threads (default: all cores)\n"
		"  -S, --structs PATH     also use the structure file PATH, or those in directory PATH\n"
		"      --no-struct        ignore structure files: functions and lines from the binaries\n"
		"      --metric-db=STYLE  what is kept per thread: 'threads' (default: every thread's\n"
		"                         values) or 'summary' (statistics over threads only)\n"
		"      --compression=N    zstd level of the database, 0 (stored) to 19 (default: 3\n"
		"                         for the summary, 1 for the per-thread values)\n"
		"      --no-traces        leave out the traces of threads measured with measure -t\n"
		"                         (view's trace timeline then has nothing to show)\n"
		"      --stats            print time, CPU per stage and peak memory at the end\n"
		"      --force            replace an existing database at the output directory\n"
		"  -h, --help             this help;  --version  the version\n"
		"Exit status: 0 when every input was used, 1 when some was skipped (listed at the\n"
		"end) or no database could be written, 2 for a usage error.\n");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append the measurement files of ARG (a directory, or one file) to FILES, sorted. */
int prof_collect(const char *arg, char ***files, size_t *n, size_t *alloc)
{
	struct stat st;
	if (stat(arg, &st) < 0)
		return fth_error_errno(errno, "%s: cannot open", arg);
	if (!S_ISDIR(st.st_mode)) {
		ALLOC_GROW(*files, *n + 1, *alloc);
		(*files)[(*n)++] = xstrdup(arg);
		return 0;
	}
	DIR *d = opendir(arg);
	if (!d)
		return fth_error_errno(errno, "%s: cannot open", arg);
	size_t start = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!fth_has_suffix(e->d_name, ".fthm"))
			continue;
		ALLOC_GROW(*files, *n + 1, *alloc);
		(*files)[(*n)++] = xpath_join(arg, e->d_name);
	}
	closedir(d);
	if (*n == start)
		return fth_error("%s: no measurement files (*.fthm) in this directory", arg);
	qsort(*files + start, *n - start, sizeof(char *), cmp_str);
	return 0;
}

static void *reader(void *arg)
{
	struct pipeline *p = arg;
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->next < p->nfiles &&
		       p->slots[p->next % p->nslots].state != SLOT_FREE)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->stop || p->next >= p->nfiles)
			break;
		size_t i = p->next++;
		struct slot *s = &p->slots[i % p->nslots];
		s->state = SLOT_READING;
		s->file = i;
		pthread_mutex_unlock(&p->lock);
		int rc = mfile_read(p->files[i], &s->m);
		char *err = rc < 0 ? xstrdup(fth_errmsg()) : NULL;
		pthread_mutex_lock(&p->lock);
		s->err = err;
		s->state = rc < 0 ? SLOT_FAILED : SLOT_READ;
		pthread_cond_broadcast(&p->cond);
	}
	p->read_cpu += prof_thread_cpu();
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Remove the database directory DIR, opened as FD (ST): its files by name relative to FD, so
 * that nothing else is removed if DIR was swapped for a link or another directory meanwhile,
 * then DIR itself if it is still that directory.
 */
void prof_remove_db_dir(int fd, const char *dir, const struct stat *st)
{
	unlink_own_at(fd, DBFILE_SUMMARY);
	unlink_own_at(fd, DBFILE_THREADS);
	unlink_own_at(fd, DBFILE_SPOOL);
	safedir_rmdir_at(AT_FDCWD, dir, st);
}

/*
 * Whether FINAL may take the new database: absent, or an earlier database (a directory with
 * a summary file) of this user or root that not every user can write to, unless sticky.  Opens
 * the earlier one into *FD and *ST, else sets *FD to -1.  Returns 0, or -1 with fth_error().
 */
static int open_old_database(const char *final, int *fd, struct stat *st)
{
	*fd = -1;
	struct stat lst, summary;
	if (lstat(final, &lst) < 0)
		return errno == ENOENT ? 0 : fth_error_errno(errno, "%s", final);
	if (S_ISDIR(lst.st_mode) && (*fd = safedir_open_at(AT_FDCWD, final, st)) < 0)
		return fth_error_errno(errno, "%s", final);
	if (*fd >= 0 && dir_check_owner(st, final) < 0) {
		close(*fd);
		*fd = -1;
		char why[1024];
		snprintf(why, sizeof(why), "%s", fth_errmsg());
		return fth_error("%s; prof replaces only an earlier database of this user or root "
				 "that not every user can write to, unless it is sticky", why);
	}
	if (*fd < 0 || fstatat(*fd, DBFILE_SUMMARY, &summary, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(summary.st_mode)) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return fth_error("%s exists and is not a fathom database; not replaced", final);
	}
	return 0;
}

/*
 * Whether the threads of FILES ran more than one program (a pipeline, a fork and exec): their
 * trees are then kept apart below each program.  Reads the identities alone; a file that
 * cannot be read is said later, when it is merged.
 */
bool prof_several_programs(char **files, size_t nfiles)
{
	char *first = NULL;
	bool several = false;
	for (size_t i = 0; i < nfiles && !several; i++) {
		struct mfile_identity id;
		if (mfile_read_identity(files[i], &id) < 0)
			continue;
		if (!first)
			first = xstrdup(id.program);
		else
			several = strcmp(first, id.program) != 0;
		mfile_identity_release(&id);
	}
	free(first);
	fth_error_clear();
	return several;
}

char *prof_default_output(const char *first_arg, const char *program)
{
	char *base = xstrdup(first_arg);
	size_t n = strlen(base);
	while (n > 1 && base[n - 1] == '/')
		base[--n] = '\0';
	const char *name = strrchr(base, '/');
	name = name ? name + 1 : base;
	char *out;
	if (fth_has_suffix(name, "-measurements")) {
		size_t k = strlen(name) - strlen("-measurements");
		out = xmalloc(k + sizeof("-database"));
		memcpy(out, name, k);
		strcpy(out + k, "-database");
	} else {
		const char *p = strrchr(program, '/');
		p = p && p[1] ? p + 1 : (*program ? program : "fathom");
		out = xmalloc(strlen(p) + sizeof("-database"));
		strcpy(out, p);
		strcat(out, "-database");
	}
	free(base);
	return out;
}

/* Move TMP to FINAL, replacing an earlier database there (never anything else). */
int prof_publish(const char *tmp, const char *final)
{
	struct stat st;
	int old;
	if (open_old_database(final, &old, &st) < 0) {
		char why[1100];
		snprintf(why, sizeof(why), "%s", fth_errmsg());
		return fth_error("%s (the new one is in %s)", why, tmp);
	}
	if (old >= 0) {
		size_t n = strlen(final) + 32;
		char *aside = xmalloc(n);
		snprintf(aside, n, "%s.old-%ld", final, (long)getpid());
		if (rename(final, aside) < 0) {
			int err = errno;
			close(old);
			free(aside);
			return fth_error_errno(err, "%s: cannot move the old database aside", final);
		}
		if (rename(tmp, final) < 0) {
			int err = errno;
			rename(aside, final);
			close(old);
			free(aside);
			return fth_error_errno(err, "%s: cannot rename to %s", tmp, final);
		}
		prof_remove_db_dir(old, aside, &st);
		close(old);
		free(aside);
		return 0;
	}
	if (rename(tmp, final) < 0)
		return fth_error_errno(errno, "%s: cannot rename to %s", tmp, final);
	return 0;
}

int prof_parse_options(int argc, char **argv, struct options *o, void (*usage)(FILE *f))
{
	enum { OPT_NO_STRUCT = 256, OPT_METRIC_DB, OPT_VERSION, OPT_LEVEL, OPT_STATS, OPT_FORCE,
	       OPT_NO_TRACES };
	static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "structs", required_argument, NULL, 'S' },
		{ "no-struct", no_argument, NULL, OPT_NO_STRUCT },
		{ "metric-db", required_argument, NULL, OPT_METRIC_DB },
		{ "compression", required_argument, NULL, OPT_LEVEL },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "no-traces", no_argument, NULL, OPT_NO_TRACES },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	int c;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	o->jobs = online > 0 ? (int)FTH_MIN(online, 256) : 1;
	o->thread_values = true;
	o->level = 3;
	o->thread_level = 1;
	while ((c = getopt_long(argc, argv, "o:j:S:h", opts, NULL)) != -1) {
		char *end;
		long v;
		switch (c) {
		case 'o': o->output = optarg; break;
		case 'j':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || *end || v < 1 || v > 1024) {
				esc_printf(stderr, "%s: -j: '%s' is not a number of threads (1-1024)\n", fth_progname,
					optarg);
				return 2;
			}
			o->jobs = (int)v;
			o->jobs_given = true;
			break;
		case 'S':
			ALLOC_GROW(o->struct_paths, o->nstruct + 1, o->astruct);
			o->struct_paths[o->nstruct++] = optarg;
			break;
		case OPT_NO_STRUCT: o->no_struct = true; break;
		case OPT_STATS: o->stats = true; break;
		case OPT_FORCE: o->force = true; break;
		case OPT_NO_TRACES: o->no_traces = true; break;
		case OPT_METRIC_DB:
			if (strcmp(optarg, "threads") == 0) {
				o->thread_values = true;
			} else if (strcmp(optarg, "summary") == 0) {
				o->thread_values = false;
			} else {
				esc_printf(stderr, "%s: --metric-db: '%s' is neither 'threads' nor "
						"'summary'\n", fth_progname,
					optarg);
				return 2;
			}
			break;
		case OPT_LEVEL:
			v = strtol(optarg, &end, 10);
			if (*end || v < 0 || v > 19) {
				esc_printf(stderr, "%s: --compression: '%s' is not a level 0-19\n", fth_progname,
					optarg);
				return 2;
			}
			o->level = o->thread_level = (int)v;
			break;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("%s (fathom) %s\n", fth_progname, PACKAGE_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* The structure files prof reads: each measurement directory's structs/ (unless
 * --no-struct) and its kernel symbols, and every --struct path. */
void prof_load_structures(struct structs *ss, int argc, char **argv, const struct options *o,
			  struct prof_problems *probs)
{
	for (int i = optind; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			structs_add_kernel_symbols(ss, argv[i], probs);
	}
	if (!o->no_struct) {
		for (int i = optind; i < argc; i++) {
			struct stat st;
			if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
				char *d = xpath_join(argv[i], "structs");
				structs_add_dir(ss, d, true, probs);
				free(d);
			}
		}
	}
	for (size_t i = 0; i < o->nstruct; i++) {
		struct stat st;
		if (stat(o->struct_paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			structs_add_dir(ss, o->struct_paths[i], false, probs);
		else if (structs_add_file(ss, o->struct_paths[i]) < 0)
			problem_add(probs, fth_errmsg());
	}
}

/* Start the reader threads (with -j2 and more: NWORKERS of them). */
static void pipeline_start(struct pipeline *p, pthread_t *workers, int nworkers)
{
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	for (int i = 0; i < nworkers; i++)
		if (pthread_create(&workers[i], NULL, reader, p) != 0)
			die(1, "cannot start a reader thread");
}

/* The slot of file I, read (by a reader thread, or here without one). */
static struct slot *pipeline_take(struct pipeline *p, size_t i, bool readers)
{
	struct slot *s = &p->slots[i % p->nslots];
	if (readers) {
		pthread_mutex_lock(&p->lock);
		while (!(s->file == i && s->state >= SLOT_READ))
			pthread_cond_wait(&p->cond, &p->lock);
		pthread_mutex_unlock(&p->lock);
	} else {
		s->file = i;
		s->state = mfile_read(p->files[i], &s->m) < 0 ? SLOT_FAILED : SLOT_READ;
		s->err = s->state == SLOT_FAILED ? xstrdup(fth_errmsg()) : NULL;
	}
	return s;
}

/* Slot S is merged: free it for the next file. */
static void pipeline_release(struct pipeline *p, struct slot *s)
{
	free(s->err);
	s->err = NULL;
	pthread_mutex_lock(&p->lock);
	s->state = SLOT_FREE;
	s->file = SIZE_MAX;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

/* Stop the readers and let go of what they read ahead. */
static void pipeline_stop(struct pipeline *p, pthread_t *workers, int nworkers)
{
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	for (int i = 0; i < nworkers; i++)
		pthread_join(workers[i], NULL);
	for (size_t i = 0; i < p->nslots; i++) {
		if (p->slots[i].state == SLOT_READ)
			mfile_release(&p->slots[i].m);
		free(p->slots[i].err);
	}
}


/* Make the temporary directory for the database FINAL (which must not exist, unless FORCE);
 * 0, or -1 with the message said. */
int prof_output_create(struct output *out, bool force)
{
	int old;
	if (open_old_database(out->final, &old, &out->tmp_st) < 0) {
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		return -1;
	}
	if (old >= 0)
		close(old);
	if (old >= 0 && !force) {
		esc_printf(stderr, "%s: %s: a database is there already; prof replaces one only "
				   "with --force (or give -o another name)\n", fth_progname, out->final);
		return -1;
	}
	size_t n = strlen(out->final) + 32;
	out->tmp = xmalloc(n);
	snprintf(out->tmp, n, "%s.tmp-%ld", out->final, (long)getpid());
	if (mkdir(out->tmp, 0755) < 0) {
		esc_printf(stderr, "%s: %s: cannot create: %s\n", fth_progname, out->tmp, strerror(errno));
		FREE_AND_NULL(out->tmp);
		return -1;
	}
	/* Made just now: still ours, or someone swapped it. */
	if ((out->tmp_fd = safedir_open_at(AT_FDCWD, out->tmp, &out->tmp_st)) < 0 ||
	    dir_check_private(&out->tmp_st, out->tmp) < 0) {
		if (out->tmp_fd < 0)
			fth_error_errno(errno, "%s", out->tmp);
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		if (out->tmp_fd >= 0)
			close(out->tmp_fd);
		out->tmp_fd = -1;
		return -1;
	}
	return 0;
}

/* The modules sampled without a structure file that has loops, said after the database. */
static void report_missing_loops(const struct dbfile *db)
{
	size_t missing = 0;
	for (uint32_t i = 0; i < db->nmodules; i++)
		if ((db->modules[i].flags & DBFILE_MODULE_SAMPLED) &&
		    !(db->modules[i].flags & DBFILE_MODULE_LOOPS) &&
		    dbfile_str(db, db->modules[i].path)[0] != '[') {
			if (!missing++)
				esc_printf(stderr, "%s: no structure file with loops for:\n", fth_progname);
			esc_printf(stderr, "%s:   %s\n", fth_progname, dbfile_str(db, db->modules[i].path));
		}
	if (missing)
		esc_printf(stderr, "%s: their functions and lines come from the binaries (ELF "
				   "symbols, DWARF): loops are missing there (run 'struct "
				   "MEASUREMENTS_DIR' first)\n", fth_progname);
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

/* The number of MPI ranks the threads of DB ran in (0: none ran in one). */
static uint32_t count_ranks(const struct dbfile *db)
{
	int32_t *r = xcalloc(db->nthreads ? db->nthreads : 1, sizeof(*r));
	uint32_t n = 0, distinct = 0;
	for (uint32_t t = 0; t < db->nthreads; t++)
		if (db->threads[t].rank >= 0)
			r[n++] = db->threads[t].rank;
	qsort(r, n, sizeof(*r), cmp_i32);
	for (uint32_t i = 0; i < n; i++)
		distinct += i == 0 || r[i] != r[i - 1];
	free(r);
	return distinct;
}

/* The inputs skipped, with a word when they look unfinished; whether there were any. */
static bool report_skipped(const struct prof_problems *probs)
{
	if (!probs->n)
		return false;
	esc_printf(stderr, "%s: skipped %zu input%s:\n", fth_progname, probs->n, probs->n == 1 ? "" : "s");
	size_t unfinished = 0;
	for (size_t i = 0; i < probs->n; i++) {
		esc_printf(stderr, "%s:   %s\n", fth_progname, probs->msgs[i]);
		unfinished += strstr(probs->msgs[i], "truncated or unfinished") ||
			      strstr(probs->msgs[i], "not yet written");
	}
	if (unfinished)
		esc_printf(stderr, "%s: %zu of them look%s unfinished: the run may still be going "
				   "on (run prof once it has ended), or a process was killed while "
				   "writing\n", fth_progname, unfinished, unfinished == 1 ? "s" : "");
	return true;
}



int merge_open_spool(struct merge *m, const char *dir)
{
	const struct options *o = m->o;
	m->spool_dir = dir;
	m->nworkers = o->jobs > 1 ? o->jobs : 0;
	if (!o->thread_values && !m->always_spool)
		return 0;
	if (dbfile_threads_open(&m->tw, dir, (uint32_t)m->nfiles,
				dbfile_thread_group((uint32_t)m->nfiles),
				m->spool_level >= 0 ? m->spool_level : o->thread_level) < 0) {
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		return -1;
	}
	m->tw_open = true;
	m->wr.tw = &m->tw;
	if (m->nworkers && pthread_create(&m->writer_thread, NULL, writer_main, &m->wr) == 0)
		m->writer_started = true;
	return 0;
}

/* At the first readable file S (unless the caller made the output): where the database
 * goes, and its per-thread values' file. */
static int merge_open_output(struct merge *m, const struct slot *s, const char *first_arg)
{
	const struct options *o = m->o;
	m->program = xstrdup(s->m.id.program);
	if (m->spool_dir)
		return 0;
	m->out.final = o->output ? xstrdup(o->output) : prof_default_output(first_arg, m->program);
	if (prof_output_create(&m->out, o->force) < 0)
		return -1;
	return merge_open_spool(m, m->out.tmp);
}

/* The trace of the thread merged last, if it has one, to the spool. */
static int merge_trace(struct merge *m)
{
	const struct dbtrace_record *rec;
	uint64_t n;
	if (!unifier_trace(m->u, &rec, &n) || m->o->no_traces)
		return 0;
	if (!m->traces_open) {
		if (dbtrace_spool_open(&m->traces, m->spool_dir) < 0) {
			esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
			return -1;
		}
		m->traces_open = true;
	}
	if (dbtrace_spool_add(&m->traces, unifier_nthreads(m->u) - 1, rec, n) < 0) {
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		return -1;
	}
	return 0;
}

/* Merge file I, read into slot S; -1 when the run cannot go on. */
static int merge_file(struct merge *m, size_t i, struct slot *s, const char *first_arg)
{
	if (s->state == SLOT_FAILED) {
		problem_add(&m->probs, s->err);
		esc_printf(stderr, "%s: skipped: %s\n", fth_progname, s->err);
		return 0;
	}
	if (!m->program && merge_open_output(m, s, first_arg) < 0) {
		mfile_release(&s->m);
		return -1;
	}
	int rc = 0;
	struct dbfile_values *thread_values = !m->tw_open	 ? NULL
					      : m->writer_started ? writer_buffer(&m->wr)
								  : &m->vals;
	if (unifier_add(m->u, &s->m, m->files[i], thread_values) < 0) {
		problem_add(&m->probs, fth_errmsg());
	} else if (m->writer_started) {
		writer_post(&m->wr);
	} else if (m->tw_open && dbfile_threads_add(&m->tw, &m->vals) < 0) {
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		rc = -1;
	}
	mfile_release(&s->m);
	return rc < 0 ? -1 : merge_trace(m);
}

/* Read and merge every input in order; the readers and the writer are stopped on return. */
void merge_inputs(struct merge *m, const char *first_arg)
{
	struct pipeline *p = &m->p;
	p->files = m->files;
	p->nfiles = m->nfiles;
	p->nslots = (size_t)m->o->jobs * 2;
	p->slots = xcalloc(p->nslots, sizeof(*p->slots));
	m->nworkers = m->o->jobs > 1 ? m->o->jobs : 0;
	m->workers = xcalloc((size_t)m->nworkers + 1, sizeof(*m->workers));
	pipeline_start(p, m->workers, m->nworkers);
	for (size_t i = 0; i < m->nfiles && !prof_interrupted; i++) {
		struct slot *s = pipeline_take(p, i, m->nworkers > 0);
		int rc = merge_file(m, i, s, first_arg);
		pipeline_release(p, s);
		if (rc < 0) {
			m->status = 1;
			break;
		}
	}
	pipeline_stop(p, m->workers, m->nworkers);
	if (m->writer_started) {
		if (writer_drain(&m->wr) < 0) {
			esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
			m->status = 1;
		}
		pthread_mutex_lock(&m->wr.lock);
		m->wr.done = true;
		pthread_cond_broadcast(&m->wr.cond);
		pthread_mutex_unlock(&m->wr.lock);
		pthread_join(m->writer_thread, NULL);
	}
}

int merge_close_spools(struct merge *m)
{
	int rc = 0;
	if (m->tw_open) {
		m->tw_open = false;
		if (dbfile_threads_finish(&m->tw) < 0) {
			esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
			rc = -1;
		}
	}
	if (m->traces_open) {
		m->traces_open = false;
		if (dbtrace_spool_finish(&m->traces) < 0) {
			esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
			rc = -1;
		}
	}
	return rc;
}

void merge_finish_db(struct merge *m, struct dbfile *db)
{
	const struct options *o = m->o;
	unifier_finish(m->u, db, m->program);
	/* What is missing from the database, for view's information too. */
	db->notes = xcalloc(m->probs.nnotes + 1, sizeof(char *));
	for (size_t i = 0; i < m->probs.nnotes; i++)
		db->notes[db->nnotes++] = xstrdup(m->probs.notes[i]);
	if (!o->thread_values)
		db->flags |= DBFILE_FLAG_NO_THREADS;
	db->thread_group = dbfile_thread_group((uint32_t)m->nfiles_all);
	db->jobs = (uint32_t)o->jobs;
}

/* prof's writing: the spools closed, then the database's files from DB and them. */
static int write_database(struct merge *m, struct dbfile *db)
{
	if (merge_close_spools(m) < 0)
		return -1;
	if (dbfile_write_summary(m->out.tmp, db, m->o->level) < 0) {
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
		return -1;
	}
	return 0;
}

void prof_say_interrupted(void)
{
	esc_printf(stderr, "%s: interrupted by signal %d; no database was written\n", fth_progname,
		   (int)prof_interrupted);
}

void merge_write(struct merge *m, struct dbfile *db, int (*write)(struct merge *m, struct dbfile *db))
{
	if (prof_interrupted) {
		prof_say_interrupted();
		m->status = 1;
	} else if (m->status == 0) {
		if (!db->contexts)
			merge_finish_db(m, db);
		if (db->nthreads == 0) {
			esc_printf(stderr, "%s: no measurement file could be read; no database was "
					   "written\n", fth_progname);
			m->status = 1;
		} else if ((write ? write : write_database)(m, db) < 0) {
			m->status = 1;
		}
		if (m->status == 0 && prof_interrupted) {
			/* Stopped while writing: the temporary directory goes, nothing is published. */
			prof_say_interrupted();
			m->status = 1;
		}
		if (m->status == 0 && prof_publish(m->out.tmp, m->out.final) < 0) {
			esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
			m->status = 1;
		}
	}
	if (m->tw_open)
		dbfile_threads_abort(&m->tw);
	if (m->traces_open)
		dbtrace_spool_abort(&m->traces);
	if (m->status != 0 && m->out.tmp_fd >= 0)
		prof_remove_db_dir(m->out.tmp_fd, m->out.tmp, &m->out.tmp_st);
	if (m->out.tmp_fd >= 0)
		close(m->out.tmp_fd);
	m->out.tmp_fd = -1;
}

/* --stats: the run's wall time since T0, each thread's CPU time and the peak memory. */
void prof_print_stats(const struct merge *m, const struct timespec *t0)
{
	struct timespec t1;
	struct rusage ru;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	double wall = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	int n = m->nworkers;
	fprintf(stderr,
		"%s: stats: wall %.2f s; cpu: merge (main thread) %.2f s, reading %.2f s in %d "
		"thread%s, writing per-thread values %.2f s%s; peak memory %ld MB\n", fth_progname,
		wall, prof_thread_cpu(), n ? m->p.read_cpu : 0, n, n == 1 ? "" : "s", m->wr.cpu,
		n ? "" : " (-j1: reading and writing in the main thread)", ru.ru_maxrss / 1024);
}

void merge_release(struct merge *m)
{
	dbfile_values_release(&m->vals);
	for (int i = 0; i < NBUFS; i++)
		dbfile_values_release(&m->wr.bufs[i]);
	free(m->wr.err);
	pthread_mutex_destroy(&m->wr.lock);
	pthread_cond_destroy(&m->wr.cond);
	unifier_free(m->u);
	structs_free(m->ss);
	for (size_t i = 0; i < m->nfiles; i++)
		free(m->files[i]);
	free(m->files);
	problems_release(&m->probs);
	free(m->p.slots);
	free(m->workers);
	free(m->out.final);
	free(m->out.tmp);
	free(m->program);
	pthread_mutex_destroy(&m->p.lock);
	pthread_cond_destroy(&m->p.cond);
}


int prof_report(struct merge *m, struct dbfile *db, const struct timespec *t0)
{
	for (size_t i = 0; i < m->probs.nnotes; i++)
		esc_printf(stderr, "%s: note: %s\n", fth_progname, m->probs.notes[i]);
	if (m->status == 0) {
		report_missing_loops(db);
		char ranks[48] = "";
		uint32_t nranks = count_ranks(db);
		if (nranks)
			snprintf(ranks, sizeof(ranks), " (%u MPI rank%s)", nranks, nranks == 1 ? "" : "s");
		esc_printf(stdout, "%s: wrote %s: %u threads%s, %u contexts, %u metrics, %u "
				   "functions\n", fth_progname, m->out.final, db->nthreads, ranks, db->ncontexts,
			   db->nmetrics, db->nfunctions);
	}
	if (m->o->stats && !m->own_stats)
		prof_print_stats(m, t0);
	if (report_skipped(&m->probs))
		m->status = 1;
	return prof_interrupted ? 128 + (int)prof_interrupted : m->status;
}
