/* SPDX-License-Identifier: MIT */
/*
 * fuzz-input.h: the readers take a path, so each fuzz input is written to one memory file
 * whose /proc/self/fd path is returned; the previous input's error message is cleared, so that
 * a failure that gives no reason is caught.  Included by the fuzz targets (a header-only
 * helper, since each target is a separate program).
 */
#ifndef FATHOM_FUZZ_INPUT_H
#define FATHOM_FUZZ_INPUT_H

#include "error.h"

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

#endif
