/* SPDX-License-Identifier: MIT */
/*
 * userdir.h: directories of this user, for the tools' main()s (not async-signal-safe): the
 * per-user cache directory, the programs on the user's PATH, and directories that no other user can change under us
 * (dir_check_owner(), dir_check_private()), opened once and then used through their
 * descriptor.  Which directories count as this user's, and why: doc/internals.md, 6.
 */
#ifndef FATHOM_USERDIR_H
#define FATHOM_USERDIR_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* ${XDG_CACHE_HOME:-$HOME/.cache}/fathom/NAME in a new string; NULL when neither is set. */
char *user_cache_dir(const char *name);

/* The path of the executable regular file NAME in the first directory of $PATH (the default
 * path when it is unset or empty; an empty entry is the current directory) that has one, in a
 * new string; NULL when none has. */
char *user_path_find(const char *name);

/*
 * Whether ST (of PATH, for the message) is a directory of this user or root that no one else
 * can write to unless it is sticky.  Returns 0, or -1 with fth_error() naming PATH, its owner
 * and its mode.
 */
int dir_check_owner(const struct stat *st, const char *path);
/*
 * Stricter, for a directory this user alone uses: owned by this user, not a link, writable by
 * no one else (sticky or not).  Returns 0, or -1 with fth_error() as above.
 */
int dir_check_private(const struct stat *st, const char *path);

enum safedir_flags {
	SAFEDIR_CREATE = 1 << 0,     /* create missing directories with MODE */
	SAFEDIR_WHOLE_PATH = 1 << 1, /* every directory from / down must pass dir_check_owner() */
};
/*
 * Open the directory PATH, component by component from / (or the working directory for a
 * relative PATH without SAFEDIR_WHOLE_PATH), following a symbolic link only when it belongs
 * to this user or root.  The last directory, and with SAFEDIR_WHOLE_PATH every one on the
 * way, must pass dir_check_owner().  Returns a descriptor (O_RDONLY | O_DIRECTORY, close on
 * exec) or -1 with fth_error() naming the component that failed.
 */
int safedir_open(const char *path, unsigned flags, mode_t mode);

/*
 * Open NAME in directory DIRFD as a directory, never through a link, and fstat() it into ST.
 * Returns a descriptor or -1 with errno set (ELOOP or ENOTDIR: a link or not a directory).
 */
int safedir_open_at(int dirfd, const char *name, struct stat *st);
/*
 * Remove NAME from the directory DIRFD when it is a file (or link) of this user's, not a
 * directory: an entry that another user put there is left alone.  Returns 0, or -1 with
 * errno set (EPERM for another user's entry).
 */
int unlink_own_at(int dirfd, const char *name);
/*
 * Remove the entries of the directory DIRFD that WANTED accepts (all when NULL) with
 * unlink_own_at().  Returns the number left (subdirectories, refused or failed).
 */
int safedir_empty(int dirfd, bool (*wanted)(const char *name));
/*
 * Remove NAME from PARENT, an empty directory, when it is still the directory ST describes
 * (opened with safedir_open_at()).  Returns 0, or -1 with errno set.
 */
int safedir_rmdir_at(int parent, const char *name, const struct stat *st);

#endif
