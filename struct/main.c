/* SPDX-License-Identifier: MIT */
/*
 * struct: recover functions, inlined code, loop nests and source lines from binaries.  This
 * file owns the command line, the measurement-directory mode (every binary of every load
 * map), the per-user cache keyed by build-id, and the output files.
 */
#include "compat.h"
#include "escape.h"
#include "struct.h"
#include "buf.h"
#include "error.h"
#include "input.h"
#include "mfile.h"
#include "userdir.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STRUCT_SUFFIX ".fthst"

struct options {
	unsigned threads;
	const char *out_dir; /* NULL: "." for binaries, DIR/structs for a measurement directory */
	char *cache_dir;     /* NULL: no cache */
	int cache_fd;	     /* CACHE_DIR, opened and checked once (userdir.h) */
	bool dump, stats, quiet;
};

/* A directory written to: opened and checked once, then used through its descriptor. */
struct out_dir {
	int fd;
	const char *path; /* for messages */
};

static char **saved_argv;   /* for use_huge_pages() */
static bool said_something; /* anything printed yet (a re-execution would repeat it) */

/*
 * Page faults dominate the analysis of large binaries (libdw's decompressed sections, line
 * tables, per-function arrays): let glibc's malloc back its memory with transparent huge pages
 * (the glibc.malloc.hugetlb tunable, glibc 2.35 and later), which cuts them by an order of
 * magnitude.  A tunable is read at start-up only, so the program re-executes itself once with
 * it set, at its first real analysis (cache hits never pay for it) and only when it has
 * printed nothing yet; any failure just continues without it.  Memory is also kept rather
 * than trimmed or unmapped after each binary's large arrays are freed (trim and mmap
 * thresholds raised), so the next allocation does not fault and zero fresh pages again: this
 * took system time on PETSc's debug library from 0.6-0.9 s to about 0.1 s here.
 */
static void use_huge_pages(void)
{
	char **argv = saved_argv;
	if (said_something || !argv)
		return;
	fflush(stdout);
	const char *old = getenv("GLIBC_TUNABLES");
	if ((old && strstr(old, "glibc.malloc.hugetlb")) || getenv("FATHOM_STRUCT_NO_REEXEC"))
		return;
	char mode[64] = "";
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, mode, sizeof(mode) - 1);
	close(fd);
	if (n <= 0 || strstr(mode, "[never]"))
		return;
	static const char tunables[] = "glibc.malloc.hugetlb=1:glibc.malloc.trim_threshold="
				       "4294967295:glibc.malloc.mmap_threshold=33554432";
	size_t len = (old ? strlen(old) + 1 : 0) + sizeof(tunables);
	char *value = xmalloc(len);
	snprintf(value, len, "%s%s%s", old ? old : "", old ? ":" : "", tunables);
	if (setenv("GLIBC_TUNABLES", value, 1) == 0 && setenv("FATHOM_STRUCT_NO_REEXEC", "1", 1) == 0)
		execv("/proc/self/exe", argv);
	free(value); /* exec failed: go on as we are */
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: struct [options] MEASUREMENTS_DIR\n"
		"       struct [options] BINARY...\n"
		"Recover functions, inlined code, loop nests and source lines from binaries and\n"
		"write one structure file per binary (into MEASUREMENTS_DIR/structs, or -o DIR).\n"
		"  -j N           threads (default: all cores)\n"
		"  -o DIR         write structure files into DIR\n"
		"  --cache DIR    cache of structure files keyed by build-id\n"
		"                 (default: ${XDG_CACHE_HOME:-~/.cache}/fathom/structs)\n"
		"  --no-cache     neither read nor write the cache\n"
		"  --dump         print the structure as text instead of writing files (a\n"
		"                 structure file given as BINARY is read and printed)\n"
		"  --stats        print time, throughput and peak memory per binary\n"
		"  -q, --quiet    no progress lines, only warnings and errors\n"
		"  -h, --help     this text;  --version  the version\n");
}

static double peak_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* NAME.tmpPID, the temporary name of NAME's new contents. */
static char *temporary_name(const char *name)
{
	char *tmp = xmalloc(strlen(name) + 32);
	sprintf(tmp, "%s.tmp%ld", name, (long)getpid());
	return tmp;
}

/*
 * Copy SRC to NAME in DIR through a temporary file (created there exclusively, never through a
 * link) and renameat(2), so readers never see half a file.
 */
static int copy_file(const char *src, const struct out_dir *dir, const char *name)
{
	char *tmp = temporary_name(name);
	int in = input_open(src, NULL);
	if (in < 0) {
		free(tmp);
		return -1;
	}
	unlink_own_at(dir->fd, tmp); /* a dead struct's of the same pid */
	int out = openat(dir->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int rc = 0;
	if (out < 0) {
		rc = fth_error_errno(errno, "%s/%s: cannot create", dir->path, tmp);
	} else {
		char buf[1 << 16];
		ssize_t n;
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(out, buf, (size_t)n) != n) {
				rc = fth_error_errno(errno, "%s/%s: write failed", dir->path, tmp);
				break;
			}
		if (n < 0 && rc == 0)
			rc = fth_error_errno(errno, "%s: read failed", src);
		if (close(out) < 0 && rc == 0)
			rc = fth_error_errno(errno, "%s/%s: close failed", dir->path, tmp);
		if (rc == 0 && renameat(dir->fd, tmp, dir->fd, name) < 0)
			rc = fth_error_errno(errno, "%s/%s: cannot rename to %s", dir->path, tmp, name);
		if (rc < 0)
			unlinkat(dir->fd, tmp, 0);
	}
	close(in);
	free(tmp);
	return rc;
}

/* Write SF to NAME in DIR through a temporary file, as copy_file() does. */
static int write_atomically(const struct sfile *sf, const struct out_dir *dir, const char *name)
{
	char *tmp = temporary_name(name);
	char *shown = xpath_join(dir->path, tmp);
	unlink_own_at(dir->fd, tmp);
	int rc = sfile_write_at(dir->fd, tmp, shown, sf, 1);
	if (rc == 0 && renameat(dir->fd, tmp, dir->fd, name) < 0) {
		rc = fth_error_errno(errno, "%s: cannot rename to %s", shown, name);
		unlinkat(dir->fd, tmp, 0);
	}
	free(shown);
	free(tmp);
	return rc;
}

static bool current_structure_file(const char *path)
{
	struct cf_reader r;
	if (cf_open(&r, path, SFILE_MAGIC, "fathom structure file", SFILE_MAJOR) < 0) {
		fth_error_clear();
		return false;
	}
	/* An older struct's file lacks what this one records (names, declarations). */
	bool current = r.major == SFILE_MAJOR && r.minor == SFILE_MINOR;
	cf_close(&r);
	return current;
}

static void print_dump(const struct sfile *sf)
{
	struct buf out = BUF_INIT;
	sfile_dump(sf, &out);
	esc_write(stdout, out.data, out.len);
	buf_release(&out);
}

static int dump_structure_file(const char *path)
{
	struct sfile sf;
	if (sfile_read(path, &sf) < 0)
		return -1;
	print_dump(&sf);
	sfile_release(&sf);
	return 0;
}

static bool is_structure_file(const char *path)
{
	char magic[8];
	int fd = input_open(path, NULL);
	if (fd < 0) {
		fth_error_clear(); /* opening it as a binary says what is wrong */
		return false;
	}
	bool yes = read(fd, magic, 8) == 8 && !memcmp(magic, SFILE_MAGIC, 8);
	close(fd);
	return yes;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static char *hex(const uint8_t *p, uint32_t n)
{
	char *s = xmalloc(2 * (size_t)n + 1);
	for (uint32_t i = 0; i < n; i++)
		sprintf(s + 2 * i, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

static void report(const struct options *o, const struct sfile *sf,
		   const struct analyse_stats *st, double seconds, bool cached)
{
	said_something = true;
	if (!cached && st->dwarf_error)
		warn("%s: using the symbol table and the machine code alone (functions and loops, "
		     "no inline chains or lines)",
		     st->dwarf_error);
	else if (!cached && !(sf->flags & SFILE_MODULE_LINES))
		warn("%s: no line information (%s): functions and loops have no file:line", sf->path,
		     (sf->flags & SFILE_MODULE_DWARF) ? "the DWARF has no line table"
						      : "no DWARF in the file or a debug file");
	if (o->quiet && !o->stats)
		return;
	if (cached) {
		esc_printf(stderr, "struct: %s: from the cache (%.3f s)\n", sf->path, seconds);
		return;
	}
	esc_printf(stderr, "struct: %s: %u functions, %u loops (%u irreducible), %llu line rows%s, %.2f s\n",
		sf->path, st->functions, st->loops, st->irreducible, (unsigned long long)sf->nlines,
		(sf->flags & SFILE_MODULE_STRIPPED) ? ", stripped" : "", seconds);
	if (o->stats) {
		double mb = (double)sf->text_bytes / 1e6;
		fprintf(stderr,
			"struct: stats: time %.3f s, text %.1f MB, %.1f MB/s, peak RSS %.0f MB, "
			"%u threads, %u unresolved indirect jumps; phases (wall/CPU): DWARF "
			"%.2f/%.2f s, calls that return %.2f/%.2f s, functions and loops %.2f/%.2f s, "
			"the rest %.2f/%.2f s\n",
			seconds, mb, seconds > 0 ? mb / seconds : 0.0, peak_rss_mb(), o->threads,
			st->unresolved_jumps, st->dwarf_seconds, st->dwarf_cpu, st->noreturn_seconds,
			st->noreturn_cpu, st->cfg_seconds, st->cfg_cpu,
			st->seconds - st->dwarf_seconds - st->noreturn_seconds - st->cfg_seconds,
			st->cpu_seconds - st->dwarf_cpu - st->noreturn_cpu - st->cfg_cpu);
	}
}

/*
 * Analyse the binary at PATH (expected build-id WANT_ID when not NULL) into OUT_DIR, through
 * the cache.  With --dump (OUT_DIR NULL), print it instead.
 */
static uint32_t functions_besides_plt(const struct sfile *sf)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < sf->nnodes; i++)
		n += sf->nodes[i].kind == SFILE_FUNCTION && !(sf->nodes[i].flags & SFILE_NODE_PLT);
	return n;
}

static int process_binary(const struct options *o, const char *path, const uint8_t *want_id,
			  uint32_t want_len, const struct out_dir *out_dir)
{
	double t0 = now();
	if (o->dump && is_structure_file(path))
		return dump_structure_file(path);
	struct image img;
	if (image_open_headers(&img, path) < 0)
		return -1;
	if (want_id && want_len && (want_len != img.build_id_len || memcmp(want_id, img.build_id, want_len))) {
		char *a = hex(want_id, want_len), *b = hex(img.build_id, img.build_id_len);
		fth_error("%s: build-id is %s now but was %s when measured: the file changed", path,
			  img.build_id_len ? b : "none", a);
		free(a);
		free(b);
		image_close(&img);
		return -1;
	}
	char *key = image_key(&img);
	char *name = xmalloc(strlen(base_name(path)) + strlen(key) + 16);
	sprintf(name, "%s-%s%s", base_name(path), key, STRUCT_SUFFIX);
	char *cached = NULL, *cname = NULL;
	struct out_dir cache_dir = { o->cache_fd, o->cache_dir };
	if (o->cache_dir) {
		cname = xmalloc(strlen(key) + 16);
		sprintf(cname, "%s%s", key, STRUCT_SUFFIX);
		cached = xpath_join(o->cache_dir, cname);
	}
	int rc = 0;
	struct sfile sf;
	struct analyse_stats st;
	if (cached && current_structure_file(cached)) {
		image_close(&img);
		if (o->dump)
			rc = dump_structure_file(cached);
		else if (out_dir)
			rc = copy_file(cached, out_dir, name);
		if (rc == 0) {
			memset(&sf, 0, sizeof(sf));
			sf.path = (char *)path;
			sf.flags = SFILE_MODULE_LINES;
			report(o, &sf, &st, now() - t0, true);
		}
		goto out;
	}
	image_close(&img);
	use_huge_pages();
	if ((rc = image_open(&img, path)) < 0)
		goto out;
	rc = analyse_image(&img, o->threads, &sf, &st);
	if (rc == 0 && !functions_besides_plt(&sf) && img.text_bytes)
		warn("%s: no functions found in its %llu bytes of code (PLT entries aside): no symbol "
		     "table, no DWARF and no unwind table to find them in%s",
		     path, (unsigned long long)img.text_bytes,
		     image_has_section(&img, ".gopclntab")
			     ? " (a Go binary: struct does not read Go's function table, .gopclntab)"
			     : "");
	image_close(&img);
	if (rc < 0)
		goto out;
	sf.major = SFILE_MAJOR;
	sf.minor = SFILE_MINOR;
	/* Not cached when the DWARF could not be read: a debug file installed later is read. */
	if (cached && !st.dwarf_error && write_atomically(&sf, &cache_dir, cname) < 0) {
		warn("cannot write the cache: %s", fth_errmsg());
		fth_error_clear();
	}
	if (o->dump)
		print_dump(&sf);
	else if (out_dir)
		rc = write_atomically(&sf, out_dir, name);
	if (rc == 0)
		report(o, &sf, &st, now() - t0, false);
	free(st.dwarf_error);
	sfile_release(&sf);
out:
	free(key);
	free(name);
	free(cached);
	free(cname);
	return rc;
}

struct module_ref {
	char *path;
	uint8_t *build_id;
	uint32_t build_id_len;
};

/* Whether PATH, an entry of a measurement directory, is a measurement file; a file named like
 * one (*.fthm) that is not a regular file is warned about. */
static bool is_measurement_file(const char *path)
{
	char magic[8];
	size_t len = strlen(path);
	int fd = input_open(path, NULL);
	if (fd < 0) {
		if (len > 5 && !strcmp(path + len - 5, ".fthm")) {
			warn("skipping %s", fth_errmsg());
			said_something = true;
		}
		fth_error_clear();
		return false;
	}
	bool yes = read(fd, magic, 8) == 8 && !memcmp(magic, MFILE_MAGIC, 8);
	close(fd);
	return yes;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int process_directory(const struct options *o, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		die(1, "%s: cannot open: %s", dir, strerror(errno));
	char **names = NULL;
	size_t nnames = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		ALLOC_GROW(names, nnames + 1, cap);
		names[nnames++] = xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, nnames, sizeof(*names), by_name);
	struct module_ref *mods = NULL;
	size_t nmods = 0, mcap = 0, nfiles = 0;
	for (size_t i = 0; i < nnames; i++) {
		char *p = xpath_join(dir, names[i]);
		if (is_measurement_file(p)) {
			struct mfile m;
			nfiles++;
			if (mfile_read(p, &m) < 0) {
				warn("%s", fth_errmsg());
				said_something = true;
			} else {
				for (uint32_t k = 0; k < m.nmodules; k++) {
					const struct mfile_module *mm = &m.modules[k];
					bool seen = false;
					for (size_t j = 0; j < nmods && !seen; j++)
						seen = !strcmp(mods[j].path, mm->path) &&
						       mods[j].build_id_len == mm->build_id_len &&
						       !memcmp(mods[j].build_id, mm->build_id, mm->build_id_len);
					if (seen)
						continue;
					ALLOC_GROW(mods, nmods + 1, mcap);
					mods[nmods].path = xstrdup(mm->path);
					mods[nmods].build_id_len = mm->build_id_len;
					mods[nmods].build_id = xmalloc(mm->build_id_len + 1);
					memcpy(mods[nmods].build_id, mm->build_id, mm->build_id_len);
					nmods++;
				}
				mfile_release(&m);
			}
		}
		free(p);
		free(names[i]);
	}
	free(names);
	if (!nfiles)
		die(1, "%s: no measurement files in this directory", dir);
	char *out_dir = o->out_dir ? xstrdup(o->out_dir) : xpath_join(dir, "structs");
	struct out_dir out = { -1, out_dir };
	if (!o->dump && (out.fd = safedir_open(out_dir, SAFEDIR_CREATE, 0755)) < 0)
		die(1, "%s; struct writes only into a directory of this user or root that not "
		       "every user can write to, unless it is sticky", fth_errmsg());
	size_t failed = 0, done = 0;
	for (size_t i = 0; i < nmods; i++) {
		const char *path = mods[i].path;
		if (!path[0] || path[0] == '[') {
			if (!o->quiet)
				esc_printf(stderr, "struct: note: skipping %s: not a file\n",
					path[0] ? path : "(unnamed module)");
			said_something = true;
		} else if (process_binary(o, path, mods[i].build_id, mods[i].build_id_len,
					  o->dump ? NULL : &out) < 0) {
			warn("skipping %s: %s", path, fth_errmsg());
			said_something = true;
			failed++;
		} else {
			done++;
		}
		free(mods[i].path);
		free(mods[i].build_id);
	}
	free(mods);
	if (!o->quiet)
		esc_printf(stderr, "struct: %zu binaries analysed, %zu skipped, %lu warning%s, into %s\n",
			   done, failed, fth_warnings, fth_warnings == 1 ? "" : "s", out_dir);
	if (out.fd >= 0)
		close(out.fd);
	free(out_dir);
	return failed && !done ? 1 : 0;
}

int main(int argc, char **argv)
{
	fth_progname = "struct";
	/* Keep freed memory for reuse instead of returning it: page faults are costly, and
	 * the analysis allocates and frees large arrays for every function. */
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	saved_argv = argv;
	struct options o = { 0 };
	o.cache_fd = -1;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	o.threads = ncpu > 0 ? (unsigned)ncpu : 1;
	bool no_cache = false;
	const char *cache = NULL;
	enum { OPT_CACHE = 256, OPT_NO_CACHE, OPT_DUMP, OPT_STATS, OPT_VERSION };
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },	     { "version", no_argument, NULL, OPT_VERSION },
		{ "cache", required_argument, NULL, OPT_CACHE }, { "no-cache", no_argument, NULL, OPT_NO_CACHE },
		{ "dump", no_argument, NULL, OPT_DUMP },     { "stats", no_argument, NULL, OPT_STATS },
		{ "quiet", no_argument, NULL, 'q' },	     { NULL, 0, NULL, 0 }
	};
	int c;
	while ((c = getopt_long(argc, argv, "hj:o:q", opts, NULL)) != -1) {
		char *end;
		long n;
		switch (c) {
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("struct (fathom) %s\n", PACKAGE_VERSION); return 0;
		case 'j':
			n = strtol(optarg, &end, 10);
			if (*end || n < 1 || n > 1024)
				die(2, "-j wants a number of threads from 1 to 1024, not '%s'", optarg);
			o.threads = (unsigned)n;
			break;
		case 'o': o.out_dir = optarg; break;
		case 'q': o.quiet = true; break;
		case OPT_CACHE: cache = optarg; break;
		case OPT_NO_CACHE: no_cache = true; break;
		case OPT_DUMP: o.dump = true; break;
		case OPT_STATS: o.stats = true; break;
		default: usage(stderr); return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	if (!no_cache) {
		/* The cache and every directory above it must be this user's or root's and
		 * writable by every user only if sticky: a structure file read from it is
		 * trusted. */
		o.cache_dir = cache ? xstrdup(cache) : user_cache_dir("structs");
		if (o.cache_dir &&
		    (o.cache_fd = safedir_open(o.cache_dir, SAFEDIR_CREATE | SAFEDIR_WHOLE_PATH,
					       0755)) < 0) {
			warn("no cache: %s", fth_errmsg());
			FREE_AND_NULL(o.cache_dir);
		}
	}
	struct stat st;
	int status = 0;
	if (argc - optind == 1 && stat(argv[optind], &st) == 0 && S_ISDIR(st.st_mode)) {
		status = process_directory(&o, argv[optind]);
	} else {
		struct out_dir out = { -1, o.dump ? NULL : o.out_dir ? o.out_dir : "." };
		if (out.path && (out.fd = safedir_open(out.path, SAFEDIR_CREATE, 0755)) < 0)
			die(1, "%s; struct writes only into a directory of this user or root that "
			       "not every user can write to, unless it is sticky", fth_errmsg());
		for (int i = optind; i < argc; i++) {
			if (process_binary(&o, argv[i], NULL, 0, out.path ? &out : NULL) < 0) {
				fflush(stdout);
				esc_printf(stderr, "struct: %s\n", fth_errmsg());
				said_something = true;
				status = 1;
			}
		}
		if (out.fd >= 0)
			close(out.fd);
	}
	free(o.cache_dir);
	if (o.cache_fd >= 0)
		close(o.cache_fd);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		esc_printf(stderr, "struct: error writing output: %s\n", strerror(errno));
		status = 1;
	}
	return status;
}
