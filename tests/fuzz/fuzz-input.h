/* SPDX-License-Identifier: MIT */
/*
 * fuzz-input.h: the readers take a path, so each fuzz input is written to one memory file
 * whose /proc/self/fd path is returned; the previous input's error message is cleared, so that
 * a failure that gives no reason is caught.  A reader of a directory gets its other files in
 * one private directory (fuzz_dir_file).  Included by the fuzz targets (a header-only helper,
 * since each target is a separate program).
 */
#ifndef FATHOM_FUZZ_INPUT_H
#define FATHOM_FUZZ_INPUT_H

#include "error.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static inline const char *fuzz_input_path(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-input", 0);
		if (fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("fuzz input");
		abort();
	}
	fth_error_clear();
	return path;
}

/* The private directory of fuzz_dir_file, and the file in it, removed at exit. */
static char fuzz_dir[] = "/tmp/fuzz-dir-XXXXXX";
static char fuzz_dir_path[sizeof(fuzz_dir) + 32];

static inline void fuzz_dir_remove(void)
{
	unlink(fuzz_dir_path);
	rmdir(fuzz_dir);
}

/* Write SIZE bytes of DATA as the file NAME of a private directory (none when SIZE is 0), the
 * same NAME at every call; returns the directory. */
static inline const char *fuzz_dir_file(const char *name, const uint8_t *data, size_t size)
{
	if (!fuzz_dir_path[0]) {
		if (!mkdtemp(fuzz_dir)) {
			perror("mkdtemp");
			abort();
		}
		snprintf(fuzz_dir_path, sizeof(fuzz_dir_path), "%s/%s", fuzz_dir, name);
		atexit(fuzz_dir_remove);
	}
	unlink(fuzz_dir_path);
	if (!size)
		return fuzz_dir;
	int fd = open(fuzz_dir_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		perror(fuzz_dir_path);
		abort();
	}
	close(fd);
	return fuzz_dir;
}

#endif
