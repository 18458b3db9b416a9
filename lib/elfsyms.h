/* SPDX-License-Identifier: MIT */
/*
 * elfsyms.h: the function symbols of an ELF file's symbol tables, read one way for struct and
 * prof (what each keeps of them, the text it analyses, address 0, aliases, is its own
 * filter), and its build-id note, for them and for view.
 */
#ifndef FATHOM_ELFSYMS_H
#define FATHOM_ELFSYMS_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A defined, named STT_FUNC or STT_GNU_IFUNC symbol. */
struct elfsym {
	uint64_t addr, size;
	const char *name; /* in the ELF's string table: lives as long as the Elf handle */
	bool dynamic;	  /* from .dynsym */
	bool global;	  /* any binding but STB_LOCAL */
};

/* Which symbol tables are read. */
enum elfsyms_tables {
	ELFSYMS_SYMTAB = 1,
	ELFSYMS_DYNSYM = 2,
	/* .dynsym only when .symtab gave nothing that was kept (with ELFSYMS_SYMTAB). */
	ELFSYMS_DYNSYM_FALLBACK = 4,
};

/* Whether the caller keeps symbol S (and does whatever keeping means, with ARG). */
typedef bool elfsyms_keep_fn(void *arg, const struct elfsym *s);

/*
 * Offer every function symbol of ELF's tables that TABLES selects to KEEP: with both tables,
 * in the order of the sections in the file; with the fallback, the .symtab sections first.
 * Returns how many KEEP kept.
 */
size_t elfsyms_read(Elf *elf, unsigned tables, elfsyms_keep_fn *keep, void *arg);

/* The GNU build-id note of ELF: its length, with *ID pointing at it in ELF's data; 0 none. */
uint32_t elf_build_id(Elf *elf, const uint8_t **id);

#endif
