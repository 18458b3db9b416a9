/* SPDX-License-Identifier: MIT */
/*
 * loadmap.h: measure's own map of the modules loaded in the process, kept by scanning
 * dl_iterate_phdr() at start-up and after every dlopen and dlclose (outside any handler), so
 * that the sample handler never calls into the loader.  Each module carries its unwind table.
 * Readers in the handler see an immutable sorted array of executable ranges, replaced whole
 * (and never freed) when the map changes.  Modules are never forgotten: an unloaded one keeps
 * its number and its unload time, so old samples still resolve to it.
 */
#ifndef FATHOM_MEASURE_LOADMAP_H
#define FATHOM_MEASURE_LOADMAP_H

#include "cfi.h"
#include "mfile.h"

#define LOADMAP_MAX_MODULES 8192
#define LOADMAP_MAX_RANGES 8

struct lm_module {
	uint32_t id;		 /* index in the load map written to measurement files */
	char *path;		 /* arena */
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint64_t bias;		 /* dlpi_addr */
	uint64_t load_ns, unload_ns; /* CLOCK_REALTIME */
	uint32_t nranges;
	struct mfile_range ranges[LOADMAP_MAX_RANGES];
	struct cfi_table cfi;	 /* empty when the module has no .eh_frame_hdr */
	bool table_shared;	 /* CFI was mapped from the run's table directory, not built */
	bool unloaded;
	bool seen;		 /* scratch for rescans */
};

/* One executable range for the handler's binary search. */
struct lm_exec {
	uint64_t start, end;
	const struct lm_module *module;
};

/* Scan the modules loaded now.  Not for signal context.  Returns 0 or -1 with a message. */
int loadmap_init(void);
/* Rescan after dlopen/dlclose (records new and unloaded modules).  Not for signal context. */
void loadmap_rescan(void);
/* The module whose executable range holds ADDR, or NULL.  Async-signal-safe. */
const struct lm_module *loadmap_find(uint64_t addr);
/* All modules ever seen, in id order (for the writer). */
uint32_t loadmap_count(void);
const struct lm_module *loadmap_get(uint32_t id);
/* Add the pseudo-module of kernel addresses ("[kernel.kallsyms]"); not for signal context. */
void loadmap_add_kernel(void);
/* Its number, or MFILE_NO_MODULE before loadmap_add_kernel().  Async-signal-safe. */
uint32_t loadmap_kernel(void);
/* The run's table directory (MCONFIG_ENV_TABLES), or "". */
const char *loadmap_tables_dir(void);
/* Bytes of unwind tables, for the log; how many this process built, mapped from the run's, and
 * (a forked child) found made by its parent. */
size_t loadmap_table_bytes(uint32_t *built, uint32_t *mapped, uint32_t *inherited);

#endif
