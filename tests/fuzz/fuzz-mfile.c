/* SPDX-License-Identifier: MIT */
/* fuzz-mfile.c: the fuzz target: feed bytes to the measurement-file reader and dumper. */
#include "compat.h"
#include "buf.h"
#include "error.h"
#include "mfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-mfile", 0);
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
	struct mfile m;
	if (mfile_read(path, &m) == 0) {
		struct buf out = BUF_INIT;
		mfile_dump(&m, &out);
		buf_release(&out);
		mfile_release(&m);
	} else if (!fth_errmsg()[0]) {
		abort(); /* every failure must say why */
	}
	return 0;
}
