/* SPDX-License-Identifier: MIT */
/* symbols.c: ELF symbol lookup for tests (symbols.h). */
#include "compat.h"
#include "symbols.h"
#include "xalloc.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sym {
	uint64_t lo, hi;
	char *name;
};

struct module_syms {
	struct sym *v;
	size_t n;
};

struct symbols {
	uint32_t nmodules;
	struct module_syms *mods;
};

static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void load_module(struct module_syms *ms, const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t cap = 0;
	for (Elf_Scn *scn = NULL; e && (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t count = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < count; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    !s.st_value)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, s.st_name);
			ALLOC_GROW(ms->v, ms->n + 1, cap);
			ms->v[ms->n++] = (struct sym){ s.st_value, s.st_value + (s.st_size ? s.st_size : 1),
						       xstrdup(name ? name : "?") };
		}
	}
	if (ms->n)
		qsort(ms->v, ms->n, sizeof(*ms->v), sym_cmp);
	if (e)
		elf_end(e);
	close(fd);
}

struct symbols *symbols_load(const struct mfile *m)
{
	elf_version(EV_CURRENT);
	struct symbols *s = xcalloc(1, sizeof(*s));
	s->nmodules = m->nmodules;
	s->mods = xcalloc(m->nmodules ? m->nmodules : 1, sizeof(*s->mods));
	for (uint32_t i = 0; i < m->nmodules; i++)
		load_module(&s->mods[i], m->modules[i].path);
	return s;
}

const char *symbols_node(struct symbols *s, const struct mfile *m, uint32_t node)
{
	uint32_t mod = m->cct.module[node];
	if (mod == MFILE_NO_MODULE || mod >= s->nmodules)
		return "?";
	uint64_t off = m->cct.offset[node];
	if (m->cct.kind[node] == MFILE_NODE_FRAME && off)
		off--; /* a return address: the call is the instruction before */
	const struct module_syms *ms = &s->mods[mod];
	const char *best = "?";
	size_t lo = 0, hi = ms->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ms->v[mid].lo <= off) {
			if (off < ms->v[mid].hi)
				best = ms->v[mid].name;
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	/* Overlapping symbols (aliases): scan back a little for a containing one. */
	for (size_t i = lo; best[0] == '?' && i-- > 0 && lo - i < 16;)
		if (ms->v[i].lo <= off && off < ms->v[i].hi)
			best = ms->v[i].name;
	return best;
}

void symbols_free(struct symbols *s)
{
	for (uint32_t i = 0; i < s->nmodules; i++) {
		for (size_t k = 0; k < s->mods[i].n; k++)
			free(s->mods[i].v[k].name);
		free(s->mods[i].v);
	}
	free(s->mods);
	free(s);
}
