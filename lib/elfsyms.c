/* SPDX-License-Identifier: MIT */
/* elfsyms.c: the function symbols of an ELF file's symbol tables, and its build-id (elfsyms.h). */
#include "compat.h"
#include "elfsyms.h"

#include <string.h>

/* The function symbols of one symbol table SCN (header SH), offered to KEEP. */
static size_t read_table(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, elfsyms_keep_fn *keep,
			 void *arg)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	if (!d || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize, kept = 0;
	/* Entry 0 is the null symbol (STN_UNDEF); gelf_getsym fails from the first entry the
	 * data does not hold on. */
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym))
			break;
		unsigned type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		const char *name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		struct elfsym s = { .addr = sym.st_value,
				    .size = sym.st_size,
				    .name = name,
				    .dynamic = sh->sh_type == SHT_DYNSYM,
				    .global = GELF_ST_BIND(sym.st_info) != STB_LOCAL };
		kept += keep(arg, &s);
	}
	return kept;
}

/* Every table of the selected types, in section order. */
static size_t read_tables(Elf *elf, bool symtab, bool dynsym, elfsyms_keep_fn *keep, void *arg)
{
	size_t kept = 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && ((symtab && sh.sh_type == SHT_SYMTAB) ||
					       (dynsym && sh.sh_type == SHT_DYNSYM)))
			kept += read_table(elf, scn, &sh, keep, arg);
	}
	return kept;
}

size_t elfsyms_read(Elf *elf, unsigned tables, elfsyms_keep_fn *keep, void *arg)
{
	bool symtab = tables & ELFSYMS_SYMTAB, dynsym = tables & ELFSYMS_DYNSYM;
	if (!(tables & ELFSYMS_DYNSYM_FALLBACK))
		return read_tables(elf, symtab, dynsym, keep, arg);
	size_t kept = read_tables(elf, symtab, false, keep, arg);
	return kept ? kept : read_tables(elf, false, true, keep, arg);
}

uint32_t elf_build_id(Elf *elf, const uint8_t **id)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((const char *)data->d_buf + name_off, "GNU", 4) == 0) {
				*id = (const uint8_t *)data->d_buf + desc_off;
				return nh.n_descsz;
			}
		}
	}
	return 0;
}
