/* SPDX-License-Identifier: MIT */
/*
 * structure.c: what prof knows of a binary's static structure.  Structure files written by
 * struct (functions, inline chains, loops, lines) are matched to the load map by build-id;
 * without one prof falls back to the binary itself: ELF symbols for functions and DWARF line
 * tables (libdw) for lines, without loops.
 */
#include "compat.h"
#include "prof.h"
#include "elfsyms.h"
#include "error.h"
#include "hmap.h"
#include "input.h"
#include "ksyms.h"
#include "search.h"
#include "sfile.h"
#include "srcpath.h"
#include "xalloc.h"

#include <dirent.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct structs {
	struct sfile *files;
	char **paths;
	size_t n, alloc;
	bool use_dwarf;
	struct ksyms *kernels; /* one per kernel (build-id): the symbols measure saved */
	size_t nkernels, akernels;
	int (*read)(void *arg, const char *path, struct sfile *sf); /* NULL: sfile_read */
	void *read_arg;
};

struct symbol {
	uint64_t lo, hi; /* hi == lo: size unknown */
	char *name;
};

/* The fallback for one binary: its function symbols, and DWARF for lines. */
struct elfinfo {
	int fd;
	Elf *elf;
	Dwarf *dw;
	struct symbol *syms;
	size_t nsyms;
	struct hmap paths; /* libdw's file name pointer -> the name made absolute (owned), or 0 */
};

void problem_add(struct prof_problems *p, const char *msg)
{
	ALLOC_GROW(p->msgs, p->n + 1, p->alloc);
	p->msgs[p->n++] = xstrdup(msg);
}

void note_add(struct prof_problems *p, const char *msg)
{
	ALLOC_GROW(p->notes, p->nnotes + 1, p->anotes);
	p->notes[p->nnotes++] = xstrdup(msg);
}

void problems_release(struct prof_problems *probs)
{
	for (size_t i = 0; i < probs->n; i++)
		free(probs->msgs[i]);
	free(probs->msgs);
	for (size_t i = 0; i < probs->nnotes; i++)
		free(probs->notes[i]);
	free(probs->notes);
}

struct structs *structs_new(bool use_dwarf)
{
	struct structs *ss = xcalloc(1, sizeof(*ss));
	ss->use_dwarf = use_dwarf;
	elf_version(EV_CURRENT);
	return ss;
}

void structs_free(struct structs *ss)
{
	if (!ss)
		return;
	for (size_t i = 0; i < ss->n; i++) {
		sfile_release(&ss->files[i]);
		free(ss->paths[i]);
	}
	free(ss->files);
	free(ss->paths);
	for (size_t i = 0; i < ss->nkernels; i++)
		ksyms_release(&ss->kernels[i]);
	free(ss->kernels);
	free(ss);
}

int structs_add_file(struct structs *ss, const char *path)
{
	struct sfile sf;
	if ((ss->read ? ss->read(ss->read_arg, path, &sf) : sfile_read(path, &sf)) < 0)
		return -1;
	if (ss->n == ss->alloc) {
		ss->alloc = ss->alloc ? ss->alloc * 2 : 8;
		ss->files = xreallocarray(ss->files, ss->alloc, sizeof(*ss->files));
		ss->paths = xreallocarray(ss->paths, ss->alloc, sizeof(*ss->paths));
	}
	ss->files[ss->n] = sf;
	ss->paths[ss->n] = xstrdup(path);
	ss->n++;
	return 0;
}

void structs_set_reader(struct structs *ss,
			int (*read)(void *arg, const char *path, struct sfile *sf), void *arg)
{
	ss->read = read;
	ss->read_arg = arg;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of DIR's entries that end in SUFFIX, sorted, in *NAMES (the caller frees them);
 * returns how many, or -1 with errno when DIR cannot be opened. */
static ssize_t list_dir(const char *dir, const char *suffix, char ***names)
{
	*names = NULL;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	size_t n = 0, alloc = 0, want = strlen(suffix);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > want && strcmp(e->d_name + len - want, suffix) == 0) {
			ALLOC_GROW(*names, n + 1, alloc);
			(*names)[n++] = xstrdup(e->d_name);
		}
	}
	closedir(d);
	qsort(*names, n, sizeof(**names), cmp_name);
	return (ssize_t)n;
}

void structs_add_dir(struct structs *ss, const char *dir, bool quiet_missing,
		     struct prof_problems *p)
{
	char **names;
	ssize_t n = list_dir(dir, ".fthst", &names);
	if (n < 0) {
		if (!quiet_missing || errno != ENOENT) {
			fth_error_errno(errno, "%s: cannot open structure directory", dir);
			problem_add(p, fth_errmsg());
		}
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		char *path = xpath_join(dir, names[i]);
		if (structs_add_file(ss, path) < 0)
			problem_add(p, fth_errmsg());
		free(path);
		free(names[i]);
	}
	free(names);
}

/* The kernel symbols loaded for the kernel with build-id ID (LEN bytes), or NULL. */
static struct ksyms *kernel_by_id(struct structs *ss, const uint8_t *id, uint32_t len)
{
	for (size_t i = 0; i < ss->nkernels; i++)
		if (ss->kernels[i].build_id_len == len && !memcmp(ss->kernels[i].build_id, id, len))
			return &ss->kernels[i];
	return NULL;
}

void structs_add_kernel_symbols(struct structs *ss, const char *dir, struct prof_problems *p)
{
	char **names;
	ssize_t n = list_dir(dir, KSYMS_SUFFIX, &names);
	/* A directory that cannot be read is said by the reading of its measurement files. */
	for (ssize_t i = 0; i < n; i++) {
		char *path = xpath_join(dir, names[i]);
		struct ksyms k;
		struct ksyms *have;
		if (ksyms_read(path, &k) < 0) {
			problem_add(p, fth_errmsg());
		} else if (!(have = kernel_by_id(ss, k.build_id, k.build_id_len))) {
			ALLOC_GROW(ss->kernels, ss->nkernels + 1, ss->akernels);
			ss->kernels[ss->nkernels++] = k;
		} else {
			ksyms_merge(have, &k);
			if (!k.n && k.hidden && !have->hidden && !have->n) {
				have->hidden = k.hidden;
				k.hidden = NULL;
			}
			ksyms_release(&k);
		}
		free(path);
		free(names[i]);
	}
	free(names);
}

static void hex(char *out, const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < 64; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	if (!n)
		strcpy(out, "none");
}


static int cmp_symbol(const void *a, const void *b)
{
	const struct symbol *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Prefer the sized symbol, then the shorter name, then by bytes: deterministic. */
	if ((x->hi > x->lo) != (y->hi > y->lo))
		return x->hi > x->lo ? -1 : 1;
	size_t lx = strlen(x->name), ly = strlen(y->name);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Where the function symbols prof keeps go: those not at address 0. */
struct symbol_sink {
	struct elfinfo *ei;
	size_t cap;
};

static bool keep_symbol(void *arg, const struct elfsym *sym)
{
	struct symbol_sink *sink = arg;
	struct elfinfo *ei = sink->ei;
	if (!sym->addr)
		return false;
	ALLOC_GROW(ei->syms, ei->nsyms + 1, sink->cap);
	ei->syms[ei->nsyms++] =
		(struct symbol){ sym->addr, sym->addr + sym->size, xstrdup(sym->name) };
	return true;
}

/* The binary's function symbols: .symtab's, else .dynsym's; sorted, aliases dropped. */
static void read_symbols(struct elfinfo *ei)
{
	struct symbol_sink sink = { ei, 0 };
	elfsyms_read(ei->elf, ELFSYMS_SYMTAB | ELFSYMS_DYNSYM_FALLBACK, keep_symbol, &sink);
	qsort(ei->syms, ei->nsyms, sizeof(*ei->syms), cmp_symbol);
	/* Drop aliases (same start): the first, by cmp_symbol's order, stays. */
	size_t k = 0;
	for (size_t i = 0; i < ei->nsyms; i++) {
		if (k && ei->syms[k - 1].lo == ei->syms[i].lo) {
			free(ei->syms[i].name);
			continue;
		}
		ei->syms[k++] = ei->syms[i];
	}
	ei->nsyms = k;
}

static void elfinfo_free(struct elfinfo *ei)
{
	if (!ei)
		return;
	for (size_t i = 0; i < ei->nsyms; i++)
		free(ei->syms[i].name);
	free(ei->syms);
	size_t pos = 0;
	uint64_t key, path;
	while (hmap_next(&ei->paths, &pos, &key, &path))
		free((char *)(uintptr_t)path);
	hmap_release(&ei->paths);
	if (ei->dw)
		dwarf_end(ei->dw);
	if (ei->elf)
		elf_end(ei->elf);
	if (ei->fd >= 0)
		close(ei->fd);
	free(ei);
}

static struct elfinfo *elfinfo_open(struct structs *ss, struct module_info *m,
				    struct prof_problems *p)
{
	char msg[1024];
	struct elfinfo *ei = xcalloc(1, sizeof(*ei));
	hmap_init(&ei->paths);
	ei->fd = input_open(m->path, NULL);
	if (ei->fd < 0) {
		snprintf(msg, sizeof(msg), "%s: its samples are shown by address", fth_errmsg());
		goto fail;
	}
	ei->elf = elf_begin(ei->fd, ELF_C_READ_MMAP, NULL);
	if (!ei->elf || elf_kind(ei->elf) != ELF_K_ELF) {
		snprintf(msg, sizeof(msg), "%s: not an ELF file: its samples are shown by address",
			 m->path);
		goto fail;
	}
	const uint8_t *id = NULL;
	uint32_t idlen = elf_build_id(ei->elf, &id);
	if (m->build_id_len && (idlen != m->build_id_len || memcmp(id, m->build_id, idlen))) {
		char want[130], got[130];
		hex(want, m->build_id, m->build_id_len);
		hex(got, id, idlen);
		snprintf(msg, sizeof(msg),
			 "%s: the binary changed since it was measured (build-id %s, measured %s): "
			 "its samples are shown by address",
			 m->path, got, want);
		goto fail;
	}
	read_symbols(ei);
	if (ss->use_dwarf)
		ei->dw = dwarf_begin_elf(ei->elf, DWARF_C_READ, NULL);
	return ei;
fail:
	note_add(p, msg);
	elfinfo_free(ei);
	return NULL;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

/* The kernel's symbols that measure saved, matched by build-id (or the only ones, without). */
static void attach_kernel(struct structs *ss, struct module_info *m, struct prof_problems *p)
{
	const struct ksyms *k = kernel_by_id(ss, m->build_id, m->build_id_len);
	if (!k && !m->build_id_len && ss->nkernels == 1)
		k = &ss->kernels[0];
	m->ksyms = k && k->n ? k : NULL;
	if (m->ksyms)
		return;
	char msg[1024];
	if (k && k->hidden)
		snprintf(msg, sizeof(msg), "kernel frames are shown by address: when measured, %s",
			 k->hidden);
	else
		snprintf(msg, sizeof(msg), "kernel frames are shown by address: no kernel symbols "
					   "were saved with the measurements for this kernel");
	note_add(p, msg);
}

void structs_attach(struct structs *ss, struct module_info *m, struct prof_problems *p)
{
	char msg[1024];
	m->tried = true;
	for (size_t i = 0; i < ss->n; i++) {
		const struct sfile *sf = &ss->files[i];
		bool same_id = m->build_id_len && sf->build_id_len == m->build_id_len &&
			       memcmp(sf->build_id, m->build_id, m->build_id_len) == 0;
		bool same_path = sf->path && strcmp(sf->path, m->path) == 0;
		if (same_id || (same_path && !m->build_id_len && !sf->build_id_len)) {
			m->sf = sf;
			m->loops = (sf->flags & SFILE_MODULE_LOOPS) != 0;
			return;
		}
	}
	/* A structure file for a binary of the same name but another build: say so. */
	for (size_t i = 0; i < ss->n; i++) {
		const struct sfile *sf = &ss->files[i];
		if (sf->path && strcmp(base_name(sf->path), base_name(m->path)) == 0) {
			char want[130], got[130];
			hex(want, m->build_id, m->build_id_len);
			hex(got, sf->build_id, sf->build_id_len);
			snprintf(msg, sizeof(msg),
				 "%s: structure file does not match %s (build-id %s, measured %s); "
				 "not used",
				 ss->paths[i], m->path, got, want);
			problem_add(p, msg);
		}
	}
	if (m->kernel) {
		attach_kernel(ss, m, p);
		return;
	}
	/* "[vdso]" and the like: not files; their samples are shown by address. */
	if (m->path[0] != '[')
		m->elf = elfinfo_open(ss, m, p);
}

void structs_release_module(struct module_info *m)
{
	elfinfo_free(m->elf);
	m->elf = NULL;
}

static const struct symbol *find_symbol(const struct elfinfo *ei, uint64_t a)
{
	size_t after = FTH_UPPER_BOUND(ei->syms, ei->nsyms, lo, a);
	if (!after)
		return NULL;
	const struct symbol *s = &ei->syms[after - 1];
	if (s->hi > s->lo && a >= s->hi)
		return NULL;
	return s;
}

/* ADDR's function from symbols alone (the kernel's, or a binary's): one unknown function per
 * module where none has it, so that every sample is in some function. */
static size_t resolve_symbols(const struct module_info *m, uint64_t addr, bool is_call,
			      struct scope *out)
{
	const struct ksym *k = m && m->ksyms ? ksyms_find(m->ksyms, addr) : NULL;
	const struct symbol *s = !k && m && m->elf ? find_symbol(m->elf, addr) : NULL;
	if (k)
		out[0] = (struct scope){ .kind = DBFILE_FUNCTION, .name = k->name, .addr = k->start };
	else if (s)
		out[0] = (struct scope){ .kind = DBFILE_FUNCTION, .name = s->name, .addr = s->lo };
	else
		out[0] = (struct scope){ .kind = DBFILE_FUNCTION, .name = DBFILE_UNKNOWN_FUNCTION };
	out[1] = (struct scope){ .kind = is_call ? DBFILE_CALL : DBFILE_LINE, .addr = addr };
	return 2;
}

/* FILE of unit CU, relative to its compilation directory, as an absolute name (as struct). */
static const char *absolute_source(struct elfinfo *ei, Dwarf_Die *cu, const char *file)
{
	uint64_t path;
	if (!hmap_get(&ei->paths, (uintptr_t)file, &path)) {
		Dwarf_Attribute a;
		path = (uintptr_t)source_path(dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &a)),
					      file);
		hmap_put(&ei->paths, (uintptr_t)file, path);
	}
	return path ? (const char *)(uintptr_t)path : file;
}

static size_t resolve_elf(const struct module_info *m, uint64_t addr, bool is_call,
			  struct scope *out)
{
	struct elfinfo *ei = m ? m->elf : NULL;
	size_t n = resolve_symbols(m, addr, is_call, out) - 1;
	struct scope leaf = { .kind = is_call ? DBFILE_CALL : DBFILE_LINE, .addr = addr };
	if (ei && ei->dw) {
		Dwarf_Die cu;
		if (dwarf_addrdie(ei->dw, addr, &cu)) {
			Dwarf_Line *l = dwarf_getsrc_die(&cu, addr);
			int line;
			const char *file = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
			if (file && dwarf_lineno(l, &line) == 0 && line > 0) {
				leaf.file = absolute_source(ei, &cu, file);
				leaf.line = (uint32_t)line;
				leaf.addr = 0;
			}
		}
	}
	out[n++] = leaf;
	return n;
}

/*
 * A function's name as the views show it: the ELF symbol at its entry where that says more
 * than DWARF's name, which is a clone's symbol (helper.constprop.0, _ZL6helperi.part.0: clones
 * stay apart and say what they are) and a mangled symbol where DWARF gives no linkage name (a
 * static C++ function: its parameters); else the DWARF name.
 */
static const char *function_label(const struct sfile *sf, const struct sfile_node *sn)
{
	const char *name = sfile_str(sf, sn->name);
	if (sn->symbol == SFILE_NONE)
		return name;
	const char *sym = sfile_str(sf, sn->symbol);
	bool mangled = strncmp(sym, "_Z", 2) == 0 && strncmp(name, "_Z", 2) != 0;
	return (sn->flags & SFILE_NODE_CLONE) || mangled ? sym : name;
}

size_t structs_resolve(struct structs *ss, struct module_info *m, uint64_t addr, bool is_call,
		       struct scope *out, size_t cap)
{
	(void)ss;
	const struct sfile *sf = m ? m->sf : NULL;
	if (!sf || cap < 3)
		return resolve_elf(m, addr, is_call, out);
	uint32_t node = sfile_lookup(sf, addr);
	if (node == SFILE_NONE)
		return resolve_symbols(NULL, addr, is_call, out);
	/* The chain innermost first, then reversed; keep the innermost CAP - 1 levels. */
	size_t n = 0;
	uint32_t chain[256];
	for (uint32_t k = node; k != SFILE_NONE && n < ARRAY_SIZE(chain); k = sf->nodes[k].parent)
		chain[n++] = k;
	if (n > cap - 1)
		n = cap - 1;
	size_t o = 0;
	for (size_t i = n; i-- > 0;) {
		const struct sfile_node *sn = &sf->nodes[chain[i]];
		struct scope *s = &out[o++];
		memset(s, 0, sizeof(*s));
		switch (sn->kind) {
		case SFILE_FUNCTION:
			s->kind = DBFILE_FUNCTION;
			s->name = function_label(sf, sn);
			s->decl_file = sn->file == SFILE_NONE ? NULL : sfile_str(sf, sn->file);
			s->decl_line = sn->line;
			s->addr = sn->addr;
			break;
		case SFILE_INLINE:
			s->kind = DBFILE_INLINE;
			s->name = sfile_str(sf, sn->name);
			s->file = sn->file == SFILE_NONE ? NULL : sfile_str(sf, sn->file);
			s->line = sn->line;
			s->decl_file = sn->decl_file == SFILE_NONE ? NULL
								   : sfile_str(sf, sn->decl_file);
			s->decl_line = sn->decl_line;
			break;
		default:
			s->kind = DBFILE_LOOP;
			s->file = sn->file == SFILE_NONE ? NULL : sfile_str(sf, sn->file);
			s->line = sn->line;
			s->addr = sn->addr;
			break;
		}
	}
	struct scope *leaf = &out[o++];
	memset(leaf, 0, sizeof(*leaf));
	leaf->kind = is_call ? DBFILE_CALL : DBFILE_LINE;
	leaf->addr = addr;
	const struct sfile_line *l = sfile_line_at(sf, addr);
	if (l && l->line && l->file != SFILE_NONE) {
		leaf->file = sfile_str(sf, l->file);
		leaf->line = l->line;
		leaf->addr = 0;
	}
	return o;
}
