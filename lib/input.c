/* SPDX-License-Identifier: MIT */
/*
 * input.c: input_open(), the one way fathom's readers open a file (input.h).  What is not a
 * regular file is refused before anything is read: the type is checked with stat(2) first, so
 * that a device is not even opened, and again with fstat(2) on the descriptor, which was opened
 * with O_NONBLOCK (a FIFO put in place meanwhile opens at once instead of waiting for a writer)
 * and O_NOCTTY (a terminal never becomes the controlling one).
 */
#include "compat.h"
#include "input.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

const char *file_type_name(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "regular file";
	case S_IFDIR: return "directory";
	case S_IFIFO: return "FIFO";
	case S_IFCHR: return "character device";
	case S_IFBLK: return "block device";
	case S_IFSOCK: return "socket";
	case S_IFLNK: return "symbolic link";
	default: return "file of unknown type";
	}
}

static int refuse(const char *path, mode_t mode)
{
	return fth_error("%s: is a %s, not a regular file", path, file_type_name(mode));
}

int input_open(const char *path, struct stat *st)
{
	struct stat own;
	if (!st)
		st = &own;
	if (stat(path, st) == 0 && !S_ISREG(st->st_mode))
		return refuse(path, st->st_mode);
	int fd;
	do
		fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return fth_error_errno(errno, "%s: cannot open", path);
	int flags;
	if (fstat(fd, st) < 0) {
		fth_error_errno(errno, "%s: cannot stat", path);
	} else if (!S_ISREG(st->st_mode)) {
		refuse(path, st->st_mode);
	} else if ((flags = fcntl(fd, F_GETFL)) < 0 ||
		   fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		fth_error_errno(errno, "%s: cannot set blocking mode", path);
	} else {
		return fd;
	}
	close(fd);
	return -1;
}
