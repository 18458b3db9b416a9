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
 * used, the run gets a temporary directory that is removed at its end.  Another user must not
 * be able to change any of these directories under us (the processes use them by path): the
 * base and every directory above it belong to this user or root and are writable by no one
 * else unless sticky, and the launcher's own work in them after the run goes through
 * descriptors of the directories it checked, never by a path checked earlier.
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

/*
 * BASE/NAME as the cache of this build: BASE (created if missing) and every directory above
 * it must be this user's or root's and writable by no one else unless sticky; BASE/NAME is
 * this user's alone.  Sets T's descriptors.
 */
static int use_cache_dir(struct run_tables *t, const char *base, const char *name)
{
	int basefd = safedir_open(base, SAFEDIR_CREATE | SAFEDIR_WHOLE_PATH, 0700);
	if (basefd < 0)
		return -1;
	char *dir = xpath_join(base, name);
	struct stat st;
	int fd = -1, rc = 0;
	if (mkdirat(basefd, name, 0700) < 0 && errno != EEXIST)
		rc = fth_error_errno(errno, "%s: cannot create", dir);
	else if ((fd = safedir_open_at(basefd, name, &st)) < 0)
		rc = fth_error_errno(errno, "%s", dir);
	else if (dir_check_private(&st, dir) < 0 || (access(dir, W_OK | X_OK) < 0 &&
						     fth_error_errno(errno, "%s", dir) < 0))
		rc = -1;
	if (rc < 0) {
		if (fd >= 0)
			close(fd);
		close(basefd);
		free(dir);
		return -1;
	}
	futimens(fd, NULL); /* used now: see remove_stale_builds() */
	t->dir = dir;
	t->dirfd = fd;
	t->basefd = basefd;
	return 0;
}

/*
 * A directory of this run in TMPDIR (or /tmp), which must be this user's or root's, like
 * every directory above it, and writable by no one else unless sticky (like /tmp itself).
 */
static int make_temporary(struct run_tables *t)
{
	const char *tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir)
		tmpdir = "/tmp";
	int parent = safedir_open(tmpdir, SAFEDIR_WHOLE_PATH, 0);
	if (parent < 0)
		return -1;
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s/fathom-unwind-XXXXXX", tmpdir);
	char *dir = buf_detach(&b, NULL);
	struct stat st;
	int fd = -1;
	if (!mkdtemp(dir)) {
		fth_error_errno(errno, "%s", dir);
	} else if ((fd = safedir_open_at(parent, strrchr(dir, '/') + 1, &st)) < 0) {
		fth_error_errno(errno, "%s", dir);
	} else if (dir_check_private(&st, dir) < 0) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		close(parent);
		free(dir);
		return -1;
	}
	t->dir = dir;
	t->dirfd = fd;
	t->basefd = parent;
	t->temporary = true;
	return 0;
}

int run_tables_open(struct run_tables *t, const char *cache, bool no_cache, const char *lib)
{
	memset(t, 0, sizeof(*t));
	t->dirfd = t->basefd = -1;
	char *base = no_cache ? NULL : cache ? xstrdup(cache) : user_cache_dir("unwind");
	char why[1024] = "";
	if (base && base[0] != '/') {
		/* The run's processes may change directory: they get an absolute path. */
		char *cwd = getcwd(NULL, 0);
		char *abs = cwd ? xpath_join(cwd, base) : NULL;
		free(cwd);
		if (abs) {
			free(base);
			base = abs;
		}
	}
	if (base) {
		char *name = build_name(lib);
		int rc = use_cache_dir(t, base, name);
		free(name);
		free(base);
		if (rc == 0)
			return 0;
		fth_format(why, sizeof(why), "%s", fth_errmsg());
	}
	if (make_temporary(t) < 0) {
		char tmp_why[1024];
		fth_format(tmp_why, sizeof(tmp_why), "%s", fth_errmsg());
		return fth_error("%s%s%s: every process builds its own unwind tables", why,
				 *why ? "; " : "", tmp_why);
	}
	if (*why)
		return fth_error("cannot keep unwind tables between runs: %s; this run builds its "
				 "own", why);
	return 0;
}

/* What a build's directory may hold: tables, the stamps, writers' temporary files. */
static bool is_cache_file(const char *name)
{
	size_t n = strlen(name);
	if (!strcmp(name, "verified") || (n > 4 && !strcmp(name + n - 4, ".tmp")))
		return true;
	if (n < 5 || strcmp(name + n - 4, ".cfi"))
		return false;
	return strspn(name, "0123456789abcdef") == n - 4;
}

/*
 * The directories of other builds of measure in the base that no run has used for long.
 * Each is opened without following a link and checked on its descriptor (this user's alone,
 * and stale), and its files are removed relative to that descriptor: a name swapped for a link
 * or for another directory meanwhile is never followed, and only cache files go.
 */
static void remove_stale_builds(int basefd, const char *mine)
{
	int fd = dup(basefd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (strncmp(e->d_name, BUILD_DIR_PREFIX, strlen(BUILD_DIR_PREFIX)) ||
		    !strcmp(e->d_name, mine))
			continue;
		int old = safedir_open_at(basefd, e->d_name, &st);
		if (old < 0)
			continue; /* a link, or not a directory */
		if (st.st_uid == geteuid() && now - st.st_mtim.tv_sec >= CACHE_STALE_S &&
		    safedir_empty(old, is_cache_file) == 0)
			safedir_rmdir_at(basefd, e->d_name, &st);
		close(old);
	}
	closedir(d);
}

/* Remove the files of the temporary directory T, then the directory. */
static int remove_temporary(struct run_tables *t)
{
	struct stat st;
	if (fstat(t->dirfd, &st) < 0)
		return fth_error_errno(errno, "%s", t->dir);
	safedir_empty(t->dirfd, is_cache_file);
	if (safedir_rmdir_at(t->basefd, strrchr(t->dir, '/') + 1, &st) < 0)
		return fth_error_errno(errno, "%s", t->dir);
	return 0;
}

int run_tables_close(struct run_tables *t)
{
	int rc = 0;
	if (t->dir && t->temporary) {
		/* A process still running rebuilds its tables (cfi-cache.c). */
		rc = remove_temporary(t);
	} else if (t->dir) {
		rc = cfi_cache_tidy(t->dirfd, t->dir, CACHE_MAX_TABLES, CACHE_MAX_BYTES);
		remove_stale_builds(t->basefd, strrchr(t->dir, '/') + 1);
	}
	if (t->dirfd >= 0)
		close(t->dirfd);
	if (t->basefd >= 0)
		close(t->basefd);
	t->dirfd = t->basefd = -1;
	FREE_AND_NULL(t->dir);
	return rc;
}
