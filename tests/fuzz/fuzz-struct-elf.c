/* SPDX-License-Identifier: MIT */
/*
 * fuzz-struct-elf.c: the fuzz target of struct's entry point: any bytes as a binary through
 * image_open() and analyse_image() (ELF, symbols, PLT, DWARF, CFG, loops), then the structure
 * file written and read back.  Failures must come with a message; nothing may crash.
 */
#include "compat.h"
#include "error.h"
#include "sfile.h"
#include "struct.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1, out = -1;
	static char path[64], out_path[64];
	if (fd < 0) {
		fd = memfd_create("fuzz-struct-elf", 0);
		out = memfd_create("fuzz-struct-out", 0);
		if (fd < 0 || out < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d", out);
	}
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size) {
		perror("fuzz input");
		abort();
	}
	fth_error_clear();
	struct image img;
	if (image_open(&img, path) < 0) {
		if (!fth_errmsg()[0])
			abort();
		return 0;
	}
	struct sfile sf;
	struct analyse_stats st;
	if (analyse_image(&img, 1, &sf, &st) == 0) {
		for (uint64_t i = 1; i < sf.nranges; i++)
			if (sf.ranges[i].lo < sf.ranges[i - 1].hi)
				abort();
		sfile_release(&sf);
		free(st.dwarf_error);
	} else if (!fth_errmsg()[0]) {
		abort();
	}
	image_close(&img);
	return 0;
}
