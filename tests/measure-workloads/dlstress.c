/* SPDX-License-Identifier: MIT */
/* dlstress.c: loop over dlopen, dlsym and dlclose of several libraries for argv[1] seconds. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	static const char *const libs[] = { "libm.so.6", "libzstd.so.1", "libelf.so.1",
					    "libdw.so.1", "libpfm.so.4" };
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long rounds = 0;
	do {
		for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
			void *h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
			if (!h) {
				fprintf(stderr, "dlstress: %s\n", dlerror());
				return 1;
			}
			if (!dlsym(h, "cos") && !dlsym(h, "ZSTD_versionNumber") &&
			    !dlsym(h, "elf_version") && !dlsym(h, "dwarf_begin") &&
			    !dlsym(h, "pfm_initialize"))
				return 1;
			dlclose(h);
		}
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	printf("dlstress: %ld rounds\n", rounds);
	return 0;
}
