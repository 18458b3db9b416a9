/* SPDX-License-Identifier: MIT */
/*
 * elf.c: the binary as struct sees it: checks that a file is an ELF executable or shared
 * library it can analyse, and reads its build-id, executable sections, function symbols
 * (those of .symtab and .dynsym in the text, through lib/elfsyms.c), PLT entries (labelled
 * "name@plt" from the relocations) and the GOT slots that the dynamic relocations bind to a
 * symbol or to code.
 */
#include "compat.h"
#include "struct.h"
#include "decode.h"
#include "elfsyms.h"
#include "error.h"
#include "input.h"
#include "search.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *machine_name(unsigned machine)
{
	switch (machine) {
	case EM_X86_64: return "x86-64";
	case EM_386: return "i386";
	case EM_AARCH64: return "aarch64";
	case EM_ARM: return "arm";
	case EM_PPC64: return "ppc64";
	case EM_RISCV: return "riscv";
	case EM_S390: return "s390";
	default: return "unknown";
	}
}

static int by_address(const void *a, const void *b)
{
	const struct text_section *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int symbol_order(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Global names first, then PLT labels, then by name: deterministic. */
	if ((x->flags & SYM_GLOBAL) != (y->flags & SYM_GLOBAL))
		return (x->flags & SYM_GLOBAL) ? -1 : 1;
	return strcmp(x->name, y->name);
}

const uint8_t *image_code(const struct image *img, uint64_t addr, size_t *avail)
{
	uint32_t lo = 0, hi = img->ntexts;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct text_section *t = &img->texts[mid];
		if (addr < t->addr)
			hi = mid;
		else if (addr >= t->addr + t->size)
			lo = mid + 1;
		else {
			*avail = (size_t)(t->addr + t->size - addr);
			return t->bytes + (addr - t->addr);
		}
	}
	*avail = 0;
	return NULL;
}

bool image_read(const struct image *img, uint64_t addr, void *out, size_t size)
{
	/* The last section starting at or before ADDR, then any before it (they may overlap). */
	size_t last = FTH_UPPER_BOUND(img->loaded, img->nloaded, addr, addr);
	for (size_t i = last; i-- > 0;) {
		const struct text_section *t = &img->loaded[i];
		if (addr - t->addr <= t->size && size <= t->size - (addr - t->addr)) {
			memcpy(out, t->bytes + (addr - t->addr), size);
			return true;
		}
	}
	return false;
}

static bool in_text(const struct image *img, uint64_t addr)
{
	size_t avail;
	return image_code(img, addr, &avail) != NULL;
}

static void add_symbol(struct image *img, uint32_t *cap, uint64_t addr, uint64_t size,
		       const char *name, uint32_t flags)
{
	ALLOC_GROW(img->syms, img->nsyms + 1, *cap);
	struct symbol *s = &img->syms[img->nsyms++];
	s->addr = addr;
	s->size = size;
	s->name = name;
	s->flags = flags;
}

/* Where the function symbols struct keeps go: those in the executable sections. */
struct symbol_sink {
	struct image *img;
	uint32_t *cap;
};

static bool keep_text_symbol(void *arg, const struct elfsym *sym)
{
	struct symbol_sink *sink = arg;
	if (!in_text(sink->img, sym->addr))
		return false;
	uint32_t flags = (sym->dynamic ? SYM_DYNSYM : 0) | (sym->global ? SYM_GLOBAL : 0);
	add_symbol(sink->img, sink->cap, sym->addr, sym->size, sym->name, flags);
	return true;
}

static int slot_order(const void *a, const void *b)
{
	const struct got_slot *x = a, *y = b;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/*
 * GOT slots from the relocations: JUMP_SLOT, GLOB_DAT and 64-bit ones name a symbol (and
 * its address when this binary defines it in code), RELATIVE ones give an address.
 */
static void read_got(struct image *img)
{
	Elf_Scn *scn = NULL;
	uint32_t cap = 0;
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    (sh.sh_flags & SHF_ALLOC) == 0)
			continue;
		Elf_Scn *symscn = elf_getscn(img->elf, sh.sh_link);
		GElf_Shdr symsh;
		Elf_Data *rd = elf_getdata(scn, NULL), *sd = symscn ? elf_getdata(symscn, NULL) : NULL;
		if (!rd)
			continue;
		bool have_syms = sd && gelf_getshdr(symscn, &symsh);
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela rela;
			GElf_Sym sym;
			if (!gelf_getrela(rd, (int)i, &rela))
				break;
			unsigned type = GELF_R_TYPE(rela.r_info);
			struct got_slot g = { .slot = rela.r_offset };
			if (type == R_X86_64_RELATIVE) {
				if (in_text(img, (uint64_t)rela.r_addend))
					g.addr = (uint64_t)rela.r_addend;
			} else if (type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT ||
				   type == R_X86_64_64) {
				if (!have_syms || !gelf_getsym(sd, (int)GELF_R_SYM(rela.r_info), &sym))
					continue;
				const char *name = elf_strptr(img->elf, symsh.sh_link, sym.st_name);
				if (name && *name)
					g.name = name;
				if (sym.st_shndx != SHN_UNDEF && in_text(img, sym.st_value))
					g.addr = sym.st_value;
			}
			if (!g.addr && !g.name)
				continue;
			ALLOC_GROW(img->got, img->ngot + 1, cap);
			img->got[img->ngot++] = g;
		}
	}
	sort_array(img->got, img->ngot, sizeof(*img->got), slot_order);
}

/* Label every entry of .plt, .plt.sec and .plt.got that jumps through a named GOT slot. */
static void read_plt(struct image *img, uint32_t *cap)
{
	struct decoder dec;
	if (img->machine != EM_X86_64 || decoder_init(&dec, img->machine) < 0)
		return;
	struct hmap slots = HMAP_INIT;
	for (uint32_t i = 0; i < img->ngot; i++)
		if (img->got[i].name)
			hmap_put(&slots, img->got[i].slot, (uint64_t)(uintptr_t)img->got[i].name);
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (hmap_size(&slots) == 0 || elf_getshdrstrndx(img->elf, &shstrndx) < 0)
		goto out;
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		const char *name = elf_strptr(img->elf, shstrndx, sh.sh_name);
		if (!name || strncmp(name, ".plt", 4) != 0)
			continue;
		uint64_t entsize = sh.sh_entsize == 8 || sh.sh_entsize == 16 ? sh.sh_entsize : 16;
		if (!strcmp(name, ".plt.got") && sh.sh_entsize != 16)
			entsize = 8;
		uint64_t last_entry = UINT64_MAX;
		for (uint64_t addr = sh.sh_addr; addr < sh.sh_addr + sh.sh_size;) {
			size_t avail;
			const uint8_t *p = image_code(img, addr, &avail);
			struct insn in;
			if (!p || decode(&dec, addr, p, avail, &in) < 0) {
				addr++;
				continue;
			}
			uint64_t slot, sym;
			uint64_t entry = sh.sh_addr + (addr - sh.sh_addr) / entsize * entsize;
			if (entry != last_entry && decode_memory_jump(&dec, addr, p, avail, &slot) &&
			    hmap_get(&slots, slot, &sym)) {
				char label[512];
				snprintf(label, sizeof(label), "%s@plt", (const char *)(uintptr_t)sym);
				uint32_t id = strtab_intern(&img->names, label);
				add_symbol(img, cap, entry, entsize, (const char *)(uintptr_t)id,
					   SYM_PLT | SYM_GLOBAL | SYM_NAME_ID);
				last_entry = entry;
			}
			addr += in.len;
		}
	}
out:
	hmap_release(&slots);
}

static int addr_order(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The first section named NAME, of type TYPE (SHT_NULL: any), with its header in *SH; or NULL. */
static Elf_Scn *section_named(const struct image *img, const char *name, GElf_Word type,
			      GElf_Shdr *sh)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	if (elf_getshdrstrndx(img->elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(img->elf, scn))) {
		const char *n;
		if (gelf_getshdr(scn, sh) && (type == SHT_NULL || sh->sh_type == type) &&
		    (n = elf_strptr(img->elf, shstrndx, sh->sh_name)) && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

bool image_has_section(const struct image *img, const char *name)
{
	GElf_Shdr sh;
	return section_named(img, name, SHT_NULL, &sh) != NULL;
}

/*
 * Function starts from .eh_frame_hdr's search table (the form GNU ld writes: table of
 * datarel sdata4 pairs), for code that has no symbol: essential in stripped executables,
 * whose .dynsym names only imports.  They get made-up names "func_ADDR".
 */
static void read_fde_starts(struct image *img, uint32_t *cap)
{
	GElf_Shdr sh;
	Elf_Scn *scn = section_named(img, ".eh_frame_hdr", SHT_PROGBITS, &sh);
	if (!scn)
		return;
	Elf_Data *d = elf_rawdata(scn, NULL);
	const uint8_t *p = d ? d->d_buf : NULL;
	if (!p || d->d_size < 12 || p[0] != 1 || p[1] != 0x1b || p[2] != 0x03 || p[3] != 0x3b)
		return;
	uint32_t count;
	memcpy(&count, p + 8, 4);
	if (count > (d->d_size - 12) / 8)
		return;
	uint32_t known = img->nsyms;
	sort_array(img->syms, img->nsyms, sizeof(*img->syms), addr_order);
	for (uint32_t i = 0; i < count; i++) {
		int32_t rel;
		memcpy(&rel, p + 12 + 8 * (size_t)i, 4);
		uint64_t start = sh.sh_addr + (uint64_t)(int64_t)rel;
		if (!in_text(img, start))
			continue;
		uint32_t lo = (uint32_t)FTH_LOWER_BOUND(img->syms, known, addr, start);
		if (lo < known && img->syms[lo].addr == start)
			continue;
		char label[40];
		snprintf(label, sizeof(label), "func_%llx", (unsigned long long)start);
		uint32_t id = strtab_intern(&img->names, label);
		add_symbol(img, cap, start, 0, (const char *)(uintptr_t)id, SYM_NAME_ID);
	}
}

static int check_sections(struct image *img, bool symbols)
{
	size_t shstrndx, nsec;
	if (elf_getshdrnum(img->elf, &nsec) < 0 || elf_getshdrstrndx(img->elf, &shstrndx) < 0)
		return fth_error("%s: bad section headers: %s", img->path, elf_errmsg(-1));
	uint32_t cap = 0, loaded_cap = 0, symcap = 0;
	Elf_Scn *scn = NULL;
	const uint8_t *id;
	uint32_t idlen = elf_build_id(img->elf, &id);
	if (idlen > 0 && idlen <= SFILE_MAX_BUILD_ID) {
		memcpy(img->build_id, id, idlen);
		img->build_id_len = idlen;
	}
	while ((scn = elf_nextscn(img->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			return fth_error("%s: bad section header: %s", img->path, elf_errmsg(-1));
		if (sh.sh_type != SHT_NOBITS &&
		    (sh.sh_offset > img->file_size || sh.sh_size > img->file_size - sh.sh_offset))
			return fth_error("%s: truncated ELF file: section %zu ends at byte %llu of %llu",
					 img->path, elf_ndxscn(scn),
					 (unsigned long long)(sh.sh_offset + sh.sh_size),
					 (unsigned long long)img->file_size);
		if (sh.sh_type == SHT_SYMTAB)
			img->has_symtab = true;
		if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		Elf_Data *d = elf_rawdata(scn, NULL);
		bool readable = d && d->d_buf && d->d_size >= sh.sh_size;
		if (readable) { /* else image_read fails there */
			ALLOC_GROW(img->loaded, img->nloaded + 1, loaded_cap);
			img->loaded[img->nloaded++] = (struct text_section){ sh.sh_addr, sh.sh_size,
									      d->d_buf };
		}
		if (sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
			continue;
		if (!readable)
			return fth_error("%s: cannot read section %zu: %s", img->path, elf_ndxscn(scn),
					 elf_errmsg(-1));
		ALLOC_GROW(img->texts, img->ntexts + 1, cap);
		img->texts[img->ntexts].addr = sh.sh_addr;
		img->texts[img->ntexts].size = sh.sh_size;
		img->texts[img->ntexts].bytes = d->d_buf;
		img->ntexts++;
		img->text_bytes += sh.sh_size;
	}
	sort_array(img->texts, img->ntexts, sizeof(*img->texts), by_address);
	sort_array(img->loaded, img->nloaded, sizeof(*img->loaded), by_address);
	for (uint32_t i = 1; i < img->ntexts; i++)
		if (img->texts[i].addr < img->texts[i - 1].addr + img->texts[i - 1].size)
			return fth_error("%s: executable sections overlap", img->path);
	if (!symbols)
		return 0;
	struct symbol_sink sink = { img, &symcap };
	elfsyms_read(img->elf, ELFSYMS_SYMTAB | ELFSYMS_DYNSYM, keep_text_symbol, &sink);
	if (img->machine == EM_X86_64)
		read_got(img);
	read_plt(img, &symcap);
	read_fde_starts(img, &symcap);
	/* Made-up names were stored as ids while the table could still move: resolve them. */
	for (uint32_t i = 0; i < img->nsyms; i++)
		if (img->syms[i].flags & SYM_NAME_ID) {
			img->syms[i].name = img->names.v[(uintptr_t)img->syms[i].name];
			img->syms[i].flags &= ~SYM_NAME_ID;
		}
	sort_array(img->syms, img->nsyms, sizeof(*img->syms), symbol_order);
	return 0;
}

static int open_image(struct image *img, const char *path, bool symbols)
{
	memset(img, 0, sizeof(*img));
	img->fd = -1;
	img->path = xstrdup(path);
	strtab_init(&img->names);
	elf_version(EV_CURRENT);
	struct stat st;
	img->fd = input_open(path, &st);
	if (img->fd < 0)
		goto fail;
	img->file_size = (uint64_t)st.st_size;
	unsigned char ident[EI_NIDENT];
	ssize_t got = pread(img->fd, ident, sizeof(ident), 0);
	if (got < 4 || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		fth_error("%s: not an ELF file", path);
		goto fail;
	}
	if (got < (ssize_t)sizeof(ident)) {
		fth_error("%s: truncated ELF file (%zd bytes)", path, got);
		goto fail;
	}
	/* The identification bytes that libelf would only call "invalid", said as they are. */
	if (ident[EI_CLASS] != ELFCLASS32 && ident[EI_CLASS] != ELFCLASS64) {
		fth_error("%s: corrupt ELF header: its class byte (EI_CLASS) is %u, neither 32-bit "
			  "(1) nor 64-bit (2)", path, ident[EI_CLASS]);
		goto fail;
	}
	if (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB) {
		fth_error("%s: corrupt ELF header: its byte-order byte (EI_DATA) is %u, neither "
			  "little-endian (1) nor big-endian (2)", path, ident[EI_DATA]);
		goto fail;
	}
	if (ident[EI_DATA] == ELFDATA2MSB) {
		fth_error("%s: a big-endian ELF file: struct analyses x86-64 binaries, which are "
			  "little-endian", path);
		goto fail;
	}
	img->elf = elf_begin(img->fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	if (!img->elf || elf_kind(img->elf) != ELF_K_ELF || !gelf_getehdr(img->elf, &eh)) {
		fth_error("%s: truncated or corrupt ELF file: %s", path, elf_errmsg(-1));
		goto fail;
	}
	img->machine = eh.e_machine;
	img->type = eh.e_type;
	if (eh.e_shoff > img->file_size ||
	    (uint64_t)eh.e_shnum * eh.e_shentsize > img->file_size - eh.e_shoff ||
	    eh.e_phoff > img->file_size ||
	    (uint64_t)eh.e_phnum * eh.e_phentsize > img->file_size - eh.e_phoff) {
		fth_error("%s: truncated ELF file: its headers end past its %llu bytes", path,
			  (unsigned long long)img->file_size);
		goto fail;
	}
	if (eh.e_shoff == 0) {
		fth_error("%s: an ELF file without section headers: nothing to analyse", path);
		goto fail;
	}
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) {
		fth_error("%s: an ELF %s, not an executable or shared library", path,
			  eh.e_type == ET_REL ? "relocatable object" :
			  eh.e_type == ET_CORE ? "core file" : "file of unknown type");
		goto fail;
	}
	if (eh.e_machine != EM_X86_64 || ident[EI_CLASS] != ELFCLASS64) {
		fth_error("%s: unsupported architecture %s (machine %u, %s): struct analyses "
			  "x86-64 binaries", path, machine_name(eh.e_machine), eh.e_machine,
			  ident[EI_CLASS] == ELFCLASS64 ? "64-bit" : "32-bit");
		goto fail;
	}
	if (check_sections(img, symbols) < 0)
		goto fail;
	return 0;
fail:
	image_close(img);
	return -1;
}

int image_open(struct image *img, const char *path)
{
	return open_image(img, path, true);
}

int image_open_headers(struct image *img, const char *path)
{
	return open_image(img, path, false);
}

void image_close(struct image *img)
{
	if (img->elf)
		elf_end(img->elf);
	if (img->fd >= 0)
		close(img->fd);
	free(img->path);
	free(img->texts);
	free(img->loaded);
	free(img->syms);
	free(img->got);
	strtab_release(&img->names);
	memset(img, 0, sizeof(*img));
	img->fd = -1;
}

char *image_key(const struct image *img)
{
	char *key = xmalloc(2 * SFILE_MAX_BUILD_ID + 40);
	if (img->build_id_len) {
		for (uint32_t i = 0; i < img->build_id_len; i++)
			sprintf(key + 2 * i, "%02x", img->build_id[i]);
		return key;
	}
	/* No build-id: two independent 64-bit hashes of the whole file. */
	uint64_t h1 = 0x9e3779b97f4a7c15ULL, h2 = img->file_size;
	uint8_t chunk[1 << 16];
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pread(img->fd, chunk, sizeof(chunk), (off_t)off);
		if (n <= 0)
			break;
		for (ssize_t i = 0; i < n; i += 8) {
			uint64_t w = 0;
			memcpy(&w, chunk + i, (size_t)FTH_MIN(8, n - i));
			h1 = hmap_mix(h1 ^ w) + off + (uint64_t)i;
			h2 = (h2 ^ w) * 0x100000001b3ULL + (h2 >> 29);
		}
		off += (uint64_t)n;
	}
	sprintf(key, "hash-%016llx%016llx", (unsigned long long)h1,
		(unsigned long long)hmap_mix(h2));
	return key;
}
