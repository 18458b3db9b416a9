/* SPDX-License-Identifier: MIT */
/* userdir.c: the per-user cache directory, and directories no other user can change (userdir.h). */
#include "compat.h"
#include "userdir.h"
#include "buf.h"
#include "error.h"
#include "xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SAFEDIR_MAX_LINKS 40 /* as the kernel's path walk */

char *user_cache_dir(const char *name)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct buf b = BUF_INIT;
	if (xdg && *xdg)
		buf_printf(&b, "%s/fathom/%s", xdg, name);
	else if (home && *home)
		buf_printf(&b, "%s/.cache/fathom/%s", home, name);
	else
		return NULL;
	return buf_detach(&b, NULL);
}

char *user_path_find(const char *name)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	struct buf b = BUF_INIT;
	for (const char *p = path;; p++) {
		const char *end = strchr(p, ':');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		buf_reset(&b);
		buf_printf(&b, "%.*s/%s", (int)n, n ? p : ".", name);
		struct stat st;
		if (stat((char *)b.data, &st) == 0 && S_ISREG(st.st_mode) &&
		    access((char *)b.data, X_OK) == 0)
			return buf_detach(&b, NULL);
		if (!end)
			break;
		p = end;
	}
	buf_release(&b);
	return NULL;
}

/* "NAME (uid N)", or "uid N" for a uid without an account. */
static void owner_text(uid_t uid, char *buf, size_t size)
{
	struct passwd pw, *found = NULL;
	char scratch[1024];
	if (getpwuid_r(uid, &pw, scratch, sizeof(scratch), &found) == 0 && found)
		snprintf(buf, size, "%s (uid %u)", pw.pw_name, (unsigned)uid);
	else
		snprintf(buf, size, "uid %u", (unsigned)uid);
}

/* PATH's owner and mode, said when it fails a check: "owned by X, mode 0777". */
static int refuse(const struct stat *st, const char *path, const char *why)
{
	char who[320], mode[16];
	owner_text(st->st_uid, who, sizeof(who));
	snprintf(mode, sizeof(mode), "%04o", (unsigned)(st->st_mode & 07777));
	return fth_error("%s: %s (owner %s, mode %s)", path, why, who, mode);
}

int dir_check_owner(const struct stat *st, const char *path)
{
	if (!S_ISDIR(st->st_mode))
		return fth_error("%s: not a directory", path);
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return refuse(st, path, "another user's directory");
	/* Group write is the group's trust (a project directory, a umask of 002): files are
	 * created in it exclusively, never through links, and only our own are removed. */
	if ((st->st_mode & S_IWOTH) && !(st->st_mode & S_ISVTX))
		return refuse(st, path, "writable by every user and not sticky");
	return 0;
}

int dir_check_private(const struct stat *st, const char *path)
{
	if (!S_ISDIR(st->st_mode))
		return fth_error("%s: not a directory", path);
	if (st->st_uid != geteuid())
		return refuse(st, path, "another user's directory");
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return refuse(st, path, "writable by other users");
	return 0;
}

/* SHOWN (the path walked so far, for messages) with COMP added. */
static void shown_add(struct buf *shown, const char *comp, size_t n)
{
	if (shown->len && shown->data[shown->len - 1] != '/')
		buf_addch(shown, '/');
	buf_add(shown, comp, n);
}

/* A fresh start of the walk at "/" (or "."): the directory, checked with WHOLE. */
static int walk_start(bool absolute, bool whole, struct buf *shown)
{
	buf_reset(shown);
	buf_addstr(shown, absolute ? "/" : "");
	int fd = open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return fth_error_errno(err, "%s", absolute ? "/" : ".");
	}
	if (whole && dir_check_owner(&st, absolute ? "/" : ".") < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int safedir_open(const char *path, unsigned flags, mode_t mode)
{
	bool whole = flags & SAFEDIR_WHOLE_PATH;
	struct buf rest = BUF_INIT, shown = BUF_INIT;
	if (!*path)
		return fth_error("an empty directory name");
	if (path[0] != '/' && whole) {
		char *cwd = getcwd(NULL, 0);
		if (!cwd)
			return fth_error_errno(errno, "%s: the working directory", path);
		buf_printf(&rest, "%s/%s", cwd, path);
		free(cwd);
	} else {
		buf_addstr(&rest, path);
	}
	int cur = walk_start(rest.data[0] == '/', whole, &shown);
	size_t pos = 0;
	int links = 0, rc = 0;
	while (cur >= 0) {
		const char *text = (const char *)rest.data;
		while (text[pos] == '/')
			pos++;
		if (!text[pos])
			break;
		size_t n = strcspn(text + pos, "/");
		char comp[NAME_MAX + 1];
		if (n > NAME_MAX) {
			rc = fth_error("%s: a name longer than %d bytes", path, NAME_MAX);
			break;
		}
		memcpy(comp, text + pos, n);
		comp[n] = '\0';
		pos += n;
		if (!strcmp(comp, "."))
			continue;
		int fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT && (flags & SAFEDIR_CREATE)) {
			if (mkdirat(cur, comp, mode) < 0 && errno != EEXIST) {
				int err = errno;
				shown_add(&shown, comp, n);
				rc = fth_error_errno(err, "%s: cannot create", (char *)shown.data);
				break;
			}
			fd = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		struct stat st;
		if (fd < 0 && (errno == ENOTDIR || errno == ELOOP) &&
		    fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
			/* A link is the choice of its owner: this user's, root's, or no one's. */
			shown_add(&shown, comp, n);
			if (st.st_uid != geteuid() && st.st_uid != 0) {
				rc = refuse(&st, (char *)shown.data,
					    "a symbolic link of another user, not followed");
				break;
			}
			char target[PATH_MAX];
			ssize_t len = readlinkat(cur, comp, target, sizeof(target) - 1);
			if (len <= 0 || ++links > SAFEDIR_MAX_LINKS) {
				rc = fth_error_errno(len < 0 ? errno : ELOOP, "%s", (char *)shown.data);
				break;
			}
			target[len] = '\0';
			struct buf next = BUF_INIT;
			buf_printf(&next, "%s/%s", target, text + pos);
			buf_release(&rest);
			rest = next;
			pos = 0;
			/* Messages name the path as walked: the link's target from here on. */
			shown.len -= n;
			shown.data[shown.len] = '\0';
			if (target[0] == '/') {
				close(cur);
				cur = walk_start(true, whole, &shown);
			}
			continue;
		}
		shown_add(&shown, comp, n);
		if (fd < 0) {
			rc = fth_error_errno(errno, "%s", (char *)shown.data);
			break;
		}
		close(cur);
		cur = fd;
		if (fstat(fd, &st) < 0) {
			rc = fth_error_errno(errno, "%s", (char *)shown.data);
			break;
		}
		if (whole && dir_check_owner(&st, (char *)shown.data) < 0) {
			rc = -1;
			break;
		}
	}
	int dir = -1;
	if (cur >= 0 && rc == 0) {
		struct stat st;
		const char *name = shown.len ? (char *)shown.data : path;
		dir = openat(cur, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0 || fstat(dir, &st) < 0)
			rc = fth_error_errno(errno, "%s", name);
		else if (!whole)
			rc = dir_check_owner(&st, name);
		if (rc < 0 && dir >= 0) {
			close(dir);
			dir = -1;
		}
	}
	if (cur >= 0)
		close(cur);
	buf_release(&rest);
	buf_release(&shown);
	return dir;
}

int safedir_open_at(int dirfd, const char *name, struct stat *st)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && fstat(fd, st) < 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int unlink_own_at(int dirfd, const char *name)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EPERM;
		return -1;
	}
	return unlinkat(dirfd, name, 0);
}

int safedir_empty(int dirfd, bool (*wanted)(const char *name))
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	rewinddir(d);
	int left = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((wanted && !wanted(e->d_name)) || unlink_own_at(dirfd, e->d_name) < 0)
			left++;
	}
	closedir(d);
	return left;
}

int safedir_rmdir_at(int parent, const char *name, const struct stat *st)
{
	struct stat now;
	if (fstatat(parent, name, &now, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(now.st_mode) || now.st_dev != st->st_dev || now.st_ino != st->st_ino) {
		errno = ESTALE; /* another directory took the name: not ours to remove */
		return -1;
	}
	return unlinkat(parent, name, AT_REMOVEDIR);
}
