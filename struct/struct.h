/* SPDX-License-Identifier: MIT */
/*
 * struct.h: the pieces of struct shared between its files: the ELF image (elf.c), the DWARF
 * scopes and line rows (dwarf.c), string interning (strtab.c) and the analysis driver
 * (analyse.c) that turns them, with the CFG and loops, into a structure file.
 */
#ifndef FATHOM_STRUCT_H
#define FATHOM_STRUCT_H

#include "hmap.h"
#include "sfile.h"

#include <gelf.h>
#include <stdlib.h>

#define NONE32 UINT32_MAX

struct span {
	uint64_t lo, hi;
};

/* qsort() that accepts an empty array without a pointer. */
static inline void sort_array(void *base, size_t n, size_t size,
			      int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- strtab.c: interned strings ---- */

struct strtab {
	char **v; /* owned */
	uint32_t n, cap;
	struct hmap by_hash;    /* content hash -> id (collisions probe on) */
	struct hmap by_pointer; /* address of a caller's stable string -> id (a cache) */
};

void strtab_init(struct strtab *t);
void strtab_release(struct strtab *t);
uint32_t strtab_intern(struct strtab *t, const char *s);
/* Like strtab_intern, cached by the address of S, which must not change for T's lifetime. */
uint32_t strtab_intern_stable(struct strtab *t, const char *s);
/*
 * Sort the strings; *RANK (allocated, T->n entries) maps old ids to new ones.  The order is
 * canonical: it does not depend on the order in which strings were interned.
 */
void strtab_sort(struct strtab *t, uint32_t **rank);
/* Move the strings out (the table is empty afterwards). */
char **strtab_detach(struct strtab *t, uint32_t *n);

/* ---- elf.c: the binary ---- */

struct text_section {
	uint64_t addr, size;
	const uint8_t *bytes; /* inside the mapping of the file */
};

#define SYM_GLOBAL 1u
#define SYM_PLT 2u
#define SYM_DYNSYM 4u
#define SYM_NAME_ID 8u /* NAME holds a string id of the image's strtab (while reading) */

struct symbol {
	uint64_t addr, size;
	const char *name; /* inside the mapping, or owned by the image's strtab for PLT names */
	uint32_t flags;
};

/* A GOT slot from the dynamic relocations: "call [rip+slot]" goes where it points. */
struct got_slot {
	uint64_t slot;
	uint64_t addr;	  /* code in this binary it points to, or 0 */
	const char *name; /* the symbol it is bound to (inside the mapping), or NULL */
};

struct image {
	char *path; /* owned */
	int fd;
	Elf *elf;
	uint16_t machine, type;
	uint64_t file_size;
	uint8_t build_id[SFILE_MAX_BUILD_ID];
	uint32_t build_id_len;
	bool has_symtab;
	struct text_section *texts; /* owned, sorted by address */
	uint32_t ntexts;
	struct text_section *loaded; /* owned: every section with bytes in memory, by address */
	uint32_t nloaded;
	uint64_t text_bytes;
	struct symbol *syms; /* owned, sorted by address then name */
	uint32_t nsyms;
	struct strtab names; /* owns PLT labels */
	struct got_slot *got; /* owned, sorted by slot */
	uint32_t ngot;
};

/* Open and check PATH; -1 with a message naming the file for anything we cannot analyse. */
int image_open(struct image *img, const char *path);
/* The same checks, but without symbols (enough for the build-id and the cache key). */
int image_open_headers(struct image *img, const char *path);
void image_close(struct image *img);
/* The bytes at ADDR and how many follow in its section, or NULL outside executable code. */
const uint8_t *image_code(const struct image *img, uint64_t addr, size_t *avail);
/* Read SIZE bytes at ADDR from any allocated section with file contents (tables in .rodata). */
bool image_read(const struct image *img, uint64_t addr, void *out, size_t size);
/* Whether IMG has a section named NAME. */
bool image_has_section(const struct image *img, const char *name);
/* A key for the cache: the build-id in hex, or "sha-" and a 128-bit hash of the contents. */
char *image_key(const struct image *img);
const char *machine_name(unsigned machine);

/* ---- dwimage.c: compressed DWARF, decompressed in memory by the DWARF threads ---- */

struct dw_image;
/*
 * An uncompressed image of IMG's DWARF (in IMG or in its separate debug file), or NULL when
 * that has no compressed DWARF that this path handles (libdwfl then reads it as usual).
 * The sections are filled in by dwimage_work().
 */
struct dw_image *dwimage_find(const struct image *img);
void dwimage_close(struct dw_image *di);
Elf *dwimage_elf(const struct dw_image *di);
const char *dwimage_path(const struct dw_image *di);
/* Decompress one more section (any thread); false when none is left to start. */
bool dwimage_work(struct dw_image *di);
/* Wait for every section but .debug_info; -1 with a message when one was corrupt. */
int dwimage_wait_support(struct dw_image *di);
/*
 * Wait until the unit at *OFFSET in .debug_info is decompressed and set *OFFSET to its end
 * (the next unit).  Units that refer into other units make this wait for all of .debug_info.
 */
int dwimage_wait_unit(struct dw_image *di, uint64_t *offset);

/* ---- dwarf.c: functions, inlined call sites and lines from DWARF ---- */

struct dw_scope {
	uint32_t parent; /* NONE32 for functions */
	uint32_t func;	 /* the function (root) this scope belongs to */
	uint8_t kind;	 /* SFILE_FUNCTION or SFILE_INLINE */
	uint16_t depth;	 /* 0 for functions */
	uint32_t name, file, line, column; /* strings of the strtab; declaration or call site */
	uint32_t decl_file, decl_line;	   /* INLINE: the inlined function's declaration */
	uint64_t entry;
	uint32_t range_start, nranges; /* in dw_info.ranges */
	bool noreturn;		       /* DW_AT_noreturn (on the function or its origin) */
	uint64_t die;		       /* DIE offset: breaks ties between identical functions */
};

/*
 * A lexical block that declares variables: the scope of a for statement's own variable, of a
 * compound statement's locals.  Its LINE is the smallest declaration line of the variables
 * declared directly in it (a "for (long i = ...)" gives the for's line).
 */
struct dw_block {
	uint32_t scope;		       /* the function or inline scope it is in */
	uint32_t parent;	       /* the recorded block of SCOPE around it, or NONE32 */
	uint32_t file, line;	       /* strings of the strtab */
	uint32_t range_start, nranges; /* in dw_info.ranges */
};

struct dw_info {
	struct strtab strings;
	struct dw_scope *scopes;
	uint32_t nscopes, scopes_cap;
	struct span *ranges;
	uint32_t nranges, ranges_cap;
	struct dw_block *blocks; /* in DIE order within each function */
	uint32_t nblocks, blocks_cap;
	struct sfile_line *lines; /* file = string id; sorted and disjoint after dw_read */
	uint64_t nlines, lines_cap;
	char *debug_path; /* owned: where DWARF came from */
	bool found;	  /* any DWARF at all */
	uint32_t bad_units; /* units skipped because libdw reported an error */
};

/* Read every unit of IMG's DWARF with NTHREADS threads.  0 also when there is none. */
int dw_read(const struct image *img, unsigned nthreads, struct dw_info *out);
void dw_release(struct dw_info *d);

/* ---- analyse.c ---- */

struct analyse_stats {
	double seconds;
	/* phases: DWARF reading; which functions return; CFG, loops and tree */
	double dwarf_seconds, noreturn_seconds, cfg_seconds;
	double cpu_seconds, dwarf_cpu, noreturn_cpu, cfg_cpu; /* process CPU time: all, per phase */
	uint32_t functions, loops, irreducible, unresolved_jumps;
	char *dwarf_error; /* owned: why the DWARF was not used (functions from symbols), or NULL */
};

/* Analyse IMG into SF (strings owned by SF).  -1 with a message on failure.  DWARF that
 * cannot be read is not a failure: the symbol table and the machine code give what they can,
 * and STATS->dwarf_error says why (the caller frees it). */
int analyse_image(const struct image *img, unsigned nthreads, struct sfile *sf,
		  struct analyse_stats *stats);

#endif
