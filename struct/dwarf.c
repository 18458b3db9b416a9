/* SPDX-License-Identifier: MIT */
/*
 * dwarf.c: functions, inlined call sites and line rows from DWARF, through libdwfl (which
 * finds separate debug files by build-id and .gnu_debuglink, decompresses sections and
 * follows dwz's alternate file).  Every unit is walked once and every line table read once
 * per DW_AT_stmt_list.  With N threads, each opens its own Dwarf handle (libdw handles are not
 * shared between threads) and claims units from a shared counter; the parts are merged.
 */
#include "compat.h"
#include "struct.h"
#include "error.h"
#include "xalloc.h"

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <dwarf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIE_DEPTH 512

struct dw_shared {
	const struct image *img;
	atomic_uint next_unit;
	pthread_mutex_t lock;
	struct hmap seen_lines; /* DW_AT_stmt_list offsets already read */
};

struct dw_thread {
	struct dw_shared *sh;
	pthread_t tid;
	struct dw_info part;
	int rc;
	char err[512];
	/* Current unit. */
	Dwarf_Files *files;
	size_t nfiles;
};

static bool in_text(const struct image *img, uint64_t addr)
{
	size_t avail;
	return image_code(img, addr, &avail) != NULL;
}

static int fail(struct dw_thread *t, const char *what)
{
	if (!t->err[0])
		snprintf(t->err, sizeof(t->err), "%s: corrupt DWARF: %s: %s", t->sh->img->path, what,
			 dwarf_errmsg(-1));
	t->rc = -1;
	return -1;
}

static uint32_t add_scope(struct dw_thread *t, Dwarf_Die *die, uint32_t parent, uint8_t kind)
{
	struct dw_info *d = &t->part;
	uint32_t range_start = d->nranges;
	ptrdiff_t off = 0;
	Dwarf_Addr base, lo, hi, lowest = UINT64_MAX;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (hi <= lo || !in_text(t->sh->img, lo))
			continue;
		ALLOC_GROW(d->ranges, d->nranges + 1, d->ranges_cap);
		d->ranges[d->nranges].lo = lo;
		d->ranges[d->nranges].hi = hi;
		d->nranges++;
		lowest = FTH_MIN(lowest, lo);
	}
	if (off < 0) {
		fail(t, "address ranges");
		d->nranges = range_start;
		return NONE32;
	}
	if (d->nranges == range_start)
		return NONE32;
	ALLOC_GROW(d->scopes, d->nscopes + 1, d->scopes_cap);
	uint32_t id = d->nscopes++;
	struct dw_scope *s = &d->scopes[id];
	memset(s, 0, sizeof(*s));
	s->parent = parent;
	s->kind = kind;
	s->range_start = range_start;
	s->nranges = d->nranges - range_start;
	const char *name = dwarf_diename(die);
	s->name = name ? strtab_intern_stable(&d->strings, name)
		       : strtab_intern(&d->strings, "<unnamed>");
	s->file = NONE32;
	if (kind == SFILE_FUNCTION) {
		s->func = id;
		s->depth = 0;
		const char *file = dwarf_decl_file(die);
		int line = 0;
		if (file)
			s->file = strtab_intern_stable(&d->strings, file);
		if (dwarf_decl_line(die, &line) == 0 && line > 0)
			s->line = (uint32_t)line;
		Dwarf_Addr entry;
		s->entry = dwarf_entrypc(die, &entry) == 0 && in_text(t->sh->img, entry) ? entry
											   : lowest;
	} else {
		const struct dw_scope *p = &d->scopes[parent];
		s->func = p->func;
		s->depth = (uint16_t)(p->depth + 1);
		s->entry = lowest;
		Dwarf_Attribute a;
		Dwarf_Word v;
		if (dwarf_attr(die, DW_AT_call_file, &a) && dwarf_formudata(&a, &v) == 0 && t->files &&
		    v < t->nfiles) {
			const char *file = dwarf_filesrc(t->files, v, NULL, NULL);
			if (file)
				s->file = strtab_intern_stable(&d->strings, file);
		}
		if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
			s->line = (uint32_t)FTH_MIN(v, UINT32_MAX);
		if (dwarf_attr(die, DW_AT_call_column, &a) && dwarf_formudata(&a, &v) == 0)
			s->column = (uint32_t)FTH_MIN(v, UINT32_MAX);
	}
	return id;
}

static void walk(struct dw_thread *t, Dwarf_Die *parent_die, uint32_t scope, unsigned level)
{
	Dwarf_Die child;
	if (t->rc < 0 || dwarf_child(parent_die, &child) != 0)
		return;
	if (level > MAX_DIE_DEPTH) {
		fail(t, "DIEs nested too deeply");
		return;
	}
	do {
		uint32_t s;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			s = add_scope(t, &child, NONE32, SFILE_FUNCTION);
			if (s != NONE32)
				walk(t, &child, s, level + 1);
			break;
		case DW_TAG_inlined_subroutine:
			if (scope == NONE32)
				break;
			s = add_scope(t, &child, scope, SFILE_INLINE);
			walk(t, &child, s != NONE32 ? s : scope, level + 1);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (scope != NONE32)
				walk(t, &child, scope, level + 1);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (scope == NONE32)
				walk(t, &child, NONE32, level + 1);
			break;
		default:
			break;
		}
	} while (t->rc == 0 && dwarf_siblingof(&child, &child) == 0);
}

static void add_line(struct dw_info *d, uint64_t lo, uint64_t hi, uint32_t file, uint32_t line,
		     uint32_t column)
{
	if (d->nlines == d->lines_cap) {
		d->lines_cap = d->lines_cap ? d->lines_cap * 2 : 4096;
		d->lines = xreallocarray(d->lines, d->lines_cap, sizeof(*d->lines));
	}
	struct sfile_line *l = &d->lines[d->nlines++];
	l->lo = lo;
	l->hi = hi;
	l->file = file;
	l->line = line;
	l->column = column;
}

static void read_lines(struct dw_thread *t, Dwarf_Die *cudie)
{
	Dwarf_Attribute a;
	Dwarf_Word off;
	if (!dwarf_attr(cudie, DW_AT_stmt_list, &a) || dwarf_formudata(&a, &off) != 0)
		return;
	bool inserted;
	pthread_mutex_lock(&t->sh->lock);
	hmap_upsert(&t->sh->seen_lines, off, 0, &inserted);
	pthread_mutex_unlock(&t->sh->lock);
	if (!inserted)
		return;
	Dwarf_Lines *lines;
	size_t n;
	if (dwarf_getsrclines(cudie, &lines, &n) != 0) {
		fail(t, "line table");
		return;
	}
	struct dw_info *d = &t->part;
	bool open = false;
	uint64_t prev_addr = 0;
	uint32_t prev_file = NONE32, prev_line = 0, prev_col = 0;
	const char *prev_name = NULL;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr addr;
		bool end = false;
		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		dwarf_lineendsequence(l, &end);
		if (open && addr > prev_addr && in_text(t->sh->img, prev_addr))
			add_line(d, prev_addr, addr, prev_file, prev_line, prev_col);
		if (end) {
			open = false;
			continue;
		}
		int line = 0, col = 0;
		dwarf_lineno(l, &line);
		dwarf_linecol(l, &col);
		const char *name = dwarf_linesrc(l, NULL, NULL);
		if (name != prev_name) {
			prev_file = name ? strtab_intern_stable(&d->strings, name) : NONE32;
			prev_name = name;
		}
		prev_addr = addr;
		prev_line = line > 0 ? (uint32_t)line : 0;
		prev_col = col > 0 ? (uint32_t)col : 0;
		open = true;
	}
}

static void *thread_main(void *arg)
{
	struct dw_thread *t = arg;
	const struct image *img = t->sh->img;
	char *debuginfo_path = NULL;
	Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	if (!dwfl)
		return NULL;
	Dwfl_Module *mod = dwfl_report_offline(dwfl, "", img->path, -1);
	dwfl_report_end(dwfl, NULL, NULL);
	Dwarf_Addr bias;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	if (!dw) {
		dwfl_end(dwfl);
		return NULL;
	}
	t->part.found = true;
	const char *debugfile = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	t->part.debug_path = xstrdup(debugfile ? debugfile : img->path);
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t unit_type;
	unsigned index = 0, mine = atomic_fetch_add(&t->sh->next_unit, 1);
	int rc;
	while ((rc = dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, &subdie)) == 0) {
		if (index++ != mine)
			continue;
		mine = atomic_fetch_add(&t->sh->next_unit, 1);
		if (unit_type == DW_UT_partial || unit_type == DW_UT_type ||
		    unit_type == DW_UT_split_type)
			continue;
		Dwarf_Die *die = &cudie;
		int tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_skeleton_unit) {
			fail(t, "a unit without a valid compile-unit DIE");
			break;
		}
		if (unit_type == DW_UT_skeleton && dwarf_tag(&subdie) == DW_TAG_compile_unit)
			die = &subdie;
		t->files = NULL;
		t->nfiles = 0;
		if (dwarf_getsrcfiles(die, &t->files, &t->nfiles) != 0) {
			t->files = NULL;
			t->nfiles = 0;
		}
		read_lines(t, &cudie);
		walk(t, die, NONE32, 0);
		if (t->rc < 0)
			break;
	}
	if (rc < 0 && t->rc == 0)
		fail(t, "unit headers");
	dwfl_end(dwfl);
	return NULL;
}

static int by_lo(const void *a, const void *b)
{
	const struct sfile_line *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void merge_part(struct dw_info *out, struct dw_info *part)
{
	uint32_t *remap = xcalloc(part->strings.n ? part->strings.n : 1, sizeof(uint32_t));
	for (uint32_t i = 0; i < part->strings.n; i++)
		remap[i] = strtab_intern(&out->strings, part->strings.v[i]);
#define REMAP(x) ((x) == NONE32 ? NONE32 : remap[x])
	uint32_t scope0 = out->nscopes, range0 = out->nranges;
	ALLOC_GROW(out->scopes, out->nscopes + part->nscopes, out->scopes_cap);
	for (uint32_t i = 0; i < part->nscopes; i++) {
		struct dw_scope s = part->scopes[i];
		s.parent = s.parent == NONE32 ? NONE32 : s.parent + scope0;
		s.func += scope0;
		s.name = REMAP(s.name);
		s.file = REMAP(s.file);
		s.range_start += range0;
		out->scopes[out->nscopes++] = s;
	}
	ALLOC_GROW(out->ranges, out->nranges + part->nranges, out->ranges_cap);
	memcpy(out->ranges + out->nranges, part->ranges, part->nranges * sizeof(*part->ranges));
	out->nranges += part->nranges;
	if (out->nlines + part->nlines > out->lines_cap) {
		out->lines_cap = out->nlines + part->nlines;
		out->lines = xreallocarray(out->lines, out->lines_cap, sizeof(*out->lines));
	}
	for (uint64_t i = 0; i < part->nlines; i++) {
		struct sfile_line l = part->lines[i];
		l.file = REMAP(l.file);
		out->lines[out->nlines++] = l;
	}
#undef REMAP
	if (part->found && !out->debug_path) {
		out->debug_path = part->debug_path;
		part->debug_path = NULL;
	}
	out->found |= part->found;
	free(remap);
}

/* Sort the rows and make them disjoint (the first row for an address wins). */
static void normalise_lines(struct dw_info *d)
{
	bool sorted = true;
	for (uint64_t i = 1; i < d->nlines && sorted; i++)
		sorted = d->lines[i - 1].lo <= d->lines[i].lo;
	if (!sorted)
		qsort(d->lines, d->nlines, sizeof(*d->lines), by_lo);
	uint64_t n = 0;
	for (uint64_t i = 0; i < d->nlines; i++) {
		struct sfile_line l = d->lines[i];
		if (n && l.lo < d->lines[n - 1].hi) {
			if (l.hi <= d->lines[n - 1].hi)
				continue;
			l.lo = d->lines[n - 1].hi;
		}
		d->lines[n++] = l;
	}
	d->nlines = n;
}

void dw_release(struct dw_info *d)
{
	strtab_release(&d->strings);
	free(d->scopes);
	free(d->ranges);
	free(d->lines);
	free(d->debug_path);
	memset(d, 0, sizeof(*d));
}

int dw_read(const struct image *img, unsigned nthreads, struct dw_info *out)
{
	memset(out, 0, sizeof(*out));
	strtab_init(&out->strings);
	struct dw_shared sh = { .img = img };
	atomic_init(&sh.next_unit, 0);
	pthread_mutex_init(&sh.lock, NULL);
	hmap_init(&sh.seen_lines);
	if (nthreads < 1)
		nthreads = 1;
	struct dw_thread *th = xcalloc(nthreads, sizeof(*th));
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].sh = &sh;
		strtab_init(&th[i].part.strings);
	}
	for (unsigned i = 1; i < nthreads; i++)
		if (pthread_create(&th[i].tid, NULL, thread_main, &th[i]) != 0)
			th[i].rc = 1; /* not started: thread 0 and the others take its units */
	thread_main(&th[0]);
	for (unsigned i = 1; i < nthreads; i++)
		if (th[i].rc != 1)
			pthread_join(th[i].tid, NULL);
	int rc = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		if (th[i].rc < 0 && rc == 0)
			rc = fth_error("%s", th[i].err);
		merge_part(out, &th[i].part);
		dw_release(&th[i].part);
	}
	free(th);
	hmap_release(&sh.seen_lines);
	pthread_mutex_destroy(&sh.lock);
	normalise_lines(out);
	return rc;
}
