/* SPDX-License-Identifier: MIT */
/*
 * tables.c: where the processes of a run share the unwind tables they build (cfi-cache.c).
 * By default that is a directory of the per-user cache, kept between runs, so that a program
 * measured again maps its libraries' tables instead of building them: building libc's costs
 * the measured program some 4 ms of CPU time in every run.  The directory is named after the
 * identity of the preloaded library (device, inode, size, modification time), so a new
 * build of measure never reads the tables of an older one.  After each run the launcher
 * bounds it (the least recently used tables go first) and removes the directories of other
 * builds that no run has used for 30 days.  With --no-cache, or when the cache cannot be
 * used, the run gets a temporary directory that is removed at its end.
 */
#include "compat.h"
#include "tables.h"
#include "buf.h"
#include "cfi.h"
#include "error.h"
#include "hmap.h"
#include "userdir.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX_TABLES 256		    /* the stamps a process reads (cfi-cache.c) */
#define CACHE_MAX_BYTES (512ull << 20)	    /* per build of measure */
#define CACHE_STALE_S (30ll * 24 * 60 * 60) /* another build's directory, unused this long */
#define BUILD_DIR_PREFIX "build-"

/* BUILD_DIR_PREFIX and 16 hex digits that change whenever the library file does. */
static char *build_name(const char *lib)
{
	struct stat st;
	uint64_t h = HMAP_FNV_BASIS;
	if (stat(lib, &st) == 0) {
		uint64_t id[5] = { (uint64_t)st.st_dev, (uint64_t)st.st_ino, (uint64_t)st.st_size,
				   (uint64_t)st.st_mtim.tv_sec, (uint64_t)st.st_mtim.tv_nsec };
		h = hmap_fnv1a(h, id, sizeof(id));
	}
	h = hmap_fnv1a(h, lib, strlen(lib));
	struct buf b = BUF_INIT;
	buf_printf(&b, BUILD_DIR_PREFIX "%016llx", (unsigned long long)h);
	return buf_detach(&b, NULL);
}

/* DIR as the cache of this build: created if missing, and a directory of this user only. */
static int use_cache_dir(const char *dir)
{
	if (mkdir_p(dir, 0700) < 0)
		return -1;
	struct stat st;
	if (lstat(dir, &st) < 0)
		return fth_error_errno(errno, "%s", dir);
	if (!S_ISDIR(st.st_mode))
		return fth_error("%s: not a directory", dir);
	if (st.st_uid != geteuid())
		return fth_error("%s: owned by another user", dir);
	if (st.st_mode & 022)
		return fth_error("%s: writable by other users", dir);
	if (access(dir, W_OK | X_OK) < 0)
		return fth_error_errno(errno, "%s", dir);
	utimensat(AT_FDCWD, dir, NULL, 0); /* used now: see remove_stale_builds() */
	return 0;
}

static int make_temporary(struct run_tables *t)
{
	const char *tmpdir = getenv("TMPDIR");
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s/fathom-unwind-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	char *dir = buf_detach(&b, NULL);
	if (!mkdtemp(dir)) {
		int rc = fth_error_errno(errno, "%s", dir);
		free(dir);
		return rc;
	}
	t->dir = dir;
	t->temporary = true;
	return 0;
}

int run_tables_open(struct run_tables *t, const char *cache, bool no_cache, const char *lib)
{
	memset(t, 0, sizeof(*t));
	char *base = no_cache ? NULL : cache ? xstrdup(cache) : user_cache_dir("unwind");
	char why[512] = "";
	if (base) {
		char *name = build_name(lib);
		char *dir = xpath_join(base, name);
		free(name);
		if (use_cache_dir(dir) == 0) {
			t->dir = dir;
			free(base);
			return 0;
		}
		fth_format(why, sizeof(why), "%s", fth_errmsg());
		free(dir);
		free(base);
	}
	if (make_temporary(t) < 0) {
		char tmp_why[512];
		fth_format(tmp_why, sizeof(tmp_why), "%s", fth_errmsg());
		return fth_error("%s%s%s: every process builds its own unwind tables", why,
				 *why ? "; " : "", tmp_why);
	}
	if (*why)
		return fth_error("cannot keep unwind tables between runs: %s; this run builds its "
				 "own", why);
	return 0;
}

/* Remove the files of DIR, then DIR. */
static int remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	return rmdir(dir);
}

/* The directories of other builds of measure beside DIR that no run has used for long. */
static void remove_stale_builds(const char *dir)
{
	char *base = xstrdup(dir), *slash = strrchr(base, '/');
	const char *mine = slash ? slash + 1 : base;
	if (slash)
		*slash = '\0';
	DIR *d = slash ? opendir(*base ? base : "/") : NULL;
	time_t now = time(NULL);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, BUILD_DIR_PREFIX, strlen(BUILD_DIR_PREFIX)) ||
		    !strcmp(e->d_name, mine) ||
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode) || now - st.st_mtim.tv_sec < CACHE_STALE_S)
			continue;
		char *old = xpath_join(base, e->d_name);
		remove_dir(old);
		free(old);
	}
	if (d)
		closedir(d);
	free(base);
}

int run_tables_close(struct run_tables *t)
{
	int rc = 0;
	if (t->dir && t->temporary) {
		/* A process still running rebuilds its tables (cfi-cache.c). */
		if (remove_dir(t->dir) < 0)
			rc = fth_error_errno(errno, "%s", t->dir);
	} else if (t->dir) {
		rc = cfi_cache_tidy(t->dir, CACHE_MAX_TABLES, CACHE_MAX_BYTES);
		remove_stale_builds(t->dir);
	}
	FREE_AND_NULL(t->dir);
	return rc;
}
