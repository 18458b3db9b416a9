/* SPDX-License-Identifier: MIT */
/*
 * dwarf.c: functions, inlined call sites and line rows from DWARF, through libdwfl (which
 * finds separate debug files by build-id and .gnu_debuglink, decompresses sections and
 * follows dwz's alternate file).  Every unit is walked once and every line table read once
 * per DW_AT_stmt_list.  With N threads, each has its own Dwarf handle (libdw handles are not
 * shared between threads), opened on the same Elf so that sections are decompressed once, and
 * claims units from a shared counter; the parts are merged in a canonical order, so the result
 * does not depend on N.
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
	Dwarf *shared_dw; /* a handle opened for this thread on thread 0's Elf, or NULL */
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
	Dwarf_Addr base, lo, hi, lowest = UINT64_MAX, first = UINT64_MAX;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		size_t avail;
		if (hi <= lo || !image_code(t->sh->img, lo, &avail))
			continue;
		hi = FTH_MIN(hi, lo + avail); /* never past the end of its section */
		ALLOC_GROW(d->ranges, d->nranges + 1, d->ranges_cap);
		d->ranges[d->nranges].lo = lo;
		d->ranges[d->nranges].hi = hi;
		d->nranges++;
		lowest = FTH_MIN(lowest, lo);
		if (first == UINT64_MAX)
			first = lo; /* GCC lists the hot part (the entry) before cold parts */
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
	s->die = dwarf_dieoffset(die);
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
		s->noreturn = dwarf_hasattr_integrate(die, DW_AT_noreturn);
		Dwarf_Attribute a;
		Dwarf_Addr entry;
		if (dwarf_attr(die, DW_AT_entry_pc, &a) && dwarf_formaddr(&a, &entry) == 0 &&
		    in_text(t->sh->img, entry))
			s->entry = entry;
		else if (dwarf_hasattr(die, DW_AT_low_pc) && dwarf_lowpc(die, &entry) == 0 &&
			 in_text(t->sh->img, entry))
			s->entry = entry;
		else
			s->entry = first;
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
	if (d->nlines + n > d->lines_cap) {
		d->lines_cap = FTH_MAX(d->nlines + n, d->lines_cap * 3 / 2);
		d->lines = xreallocarray(d->lines, d->lines_cap, sizeof(*d->lines));
	}
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

static int line_order_by(const struct sfile_line *x, const struct sfile_line *y)
{
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	if (x->column != y->column)
		return x->column < y->column ? -1 : 1;
	return 0;
}

static int line_order_local(const void *a, const void *b, void *strings)
{
	const struct sfile_line *x = a, *y = b;
	int d = line_order_by(x, y);
	if (d || x->file == y->file)
		return d;
	const struct strtab *st = strings;
	if (x->file == NONE32 || y->file == NONE32)
		return x->file == NONE32 ? -1 : 1;
	return strcmp(st->v[x->file], st->v[y->file]);
}

/*
 * Sort rows by address: an LSD radix sort on LO over the bits that vary, in digits of at most
 * 11 bits (2048 buckets, so the scatter stays in cache), then runs of equal LO sorted by the
 * full order.  libdw gives each unit's rows sorted; units interleave (hot and cold parts).
 */
#define RADIX_BITS 11
static void sort_lines(struct dw_info *d)
{
	uint64_t n = d->nlines;
	if (n < 2)
		return;
	struct sfile_line *src = d->lines;
	uint64_t lo = src[0].lo, hi = src[0].lo;
	bool sorted = true;
	for (uint64_t i = 1; i < n; i++) {
		lo = FTH_MIN(lo, src[i].lo);
		hi = FTH_MAX(hi, src[i].lo);
		sorted &= src[i - 1].lo < src[i].lo;
	}
	const uint64_t mask = (1u << RADIX_BITS) - 1;
	if (!sorted) {
		unsigned bits = 0;
		while (bits < 64 && ((hi - lo) >> bits))
			bits++;
		unsigned passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
		struct sfile_line *dst = xmalloc(n * sizeof(*dst));
		uint64_t *count = xmalloc(((size_t)1 << RADIX_BITS) * sizeof(uint64_t));
		for (unsigned p = 0; p < passes; p++) {
			unsigned shift = p * RADIX_BITS;
			memset(count, 0, ((size_t)1 << RADIX_BITS) * sizeof(uint64_t));
			for (uint64_t i = 0; i < n; i++)
				count[((src[i].lo - lo) >> shift) & mask]++;
			uint64_t sum = 0;
			for (unsigned k = 0; k < (1u << RADIX_BITS); k++) {
				uint64_t c = count[k];
				count[k] = sum;
				sum += c;
			}
			for (uint64_t i = 0; i < n; i++)
				dst[count[((src[i].lo - lo) >> shift) & mask]++] = src[i];
			struct sfile_line *tmp = src;
			src = dst;
			dst = tmp;
		}
		free(count);
		free(dst);
		d->lines = src;
		d->lines_cap = n;
	}
	for (uint64_t i = 0; i + 1 < n;) {
		uint64_t j = i + 1;
		while (j < n && src[j].lo == src[i].lo)
			j++;
		if (j - i > 1)
			qsort_r(src + i, j - i, sizeof(*src), line_order_local, &d->strings);
		i = j;
	}
}

/* Open IMG's DWARF through libdwfl (debug files by build-id and .gnu_debuglink). */
static Dwarf *open_dwarf(const struct image *img, Dwfl **dwflp, char **debug_path)
{
	static char *debuginfo_path = NULL;
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_build_id_find_elf,
		.find_debuginfo = dwfl_standard_find_debuginfo,
		.section_address = dwfl_offline_section_address,
		.debuginfo_path = &debuginfo_path,
	};
	*dwflp = dwfl_begin(&cb);
	if (!*dwflp)
		return NULL;
	Dwfl_Module *mod = dwfl_report_offline(*dwflp, "", img->path, -1);
	dwfl_report_end(*dwflp, NULL, NULL);
	Dwarf_Addr bias;
	Dwarf *dw = mod ? dwfl_module_getdwarf(mod, &bias) : NULL;
	if (!dw) {
		dwfl_end(*dwflp);
		*dwflp = NULL;
		return NULL;
	}
	const char *debugfile = NULL;
	dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	*debug_path = xstrdup(debugfile ? debugfile : img->path);
	return dw;
}

static void *thread_main(void *arg)
{
	struct dw_thread *t = arg;
	const struct image *img = t->sh->img;
	Dwfl *dwfl = NULL;
	Dwarf *dw = t->shared_dw;
	if (!dw && !(dw = open_dwarf(img, &dwfl, &t->part.debug_path)))
		return NULL;
	t->part.found = true;
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
	if (dwfl)
		dwfl_end(dwfl);
	/* Sort here, in parallel; ties are broken by content so the order is canonical. */
	sort_lines(&t->part);
	return NULL;
}

/* Canonical order of rows whose file ids are canonical (sorted strings). */
static int line_order(const struct sfile_line *x, const struct sfile_line *y)
{
	int d = line_order_by(x, y);
	if (d || x->file == y->file)
		return d;
	return x->file < y->file ? -1 : 1; /* NONE32 last */
}

/*
 * Merge the parts of all threads into OUT with canonical string ids (sorted strings), so that
 * the result does not depend on which thread read which unit.
 */
static void merge_parts(struct dw_info *out, struct dw_thread *th, unsigned nthreads)
{
	uint32_t **remap = xcalloc(nthreads, sizeof(*remap));
	for (unsigned k = 0; k < nthreads; k++) {
		struct dw_info *part = &th[k].part;
		remap[k] = xmalloc((part->strings.n ? part->strings.n : 1) * sizeof(uint32_t));
		for (uint32_t i = 0; i < part->strings.n; i++)
			remap[k][i] = strtab_intern(&out->strings, part->strings.v[i]);
	}
	uint32_t *rank;
	strtab_sort(&out->strings, &rank);
	uint64_t total = 0;
	for (unsigned k = 0; k < nthreads; k++) {
		struct dw_info *part = &th[k].part;
		for (uint32_t i = 0; i < part->strings.n; i++)
			remap[k][i] = rank[remap[k][i]];
#define REMAP(x) ((x) == NONE32 ? NONE32 : remap[k][x])
		uint32_t scope0 = out->nscopes, range0 = out->nranges;
		ALLOC_GROW(out->scopes, out->nscopes + part->nscopes, out->scopes_cap);
		for (uint32_t i = 0; i < part->nscopes; i++) {
			struct dw_scope sc = part->scopes[i];
			sc.parent = sc.parent == NONE32 ? NONE32 : sc.parent + scope0;
			sc.func += scope0;
			sc.name = REMAP(sc.name);
			sc.file = REMAP(sc.file);
			sc.range_start += range0;
			out->scopes[out->nscopes++] = sc;
		}
		ALLOC_GROW(out->ranges, out->nranges + part->nranges, out->ranges_cap);
		if (part->nranges)
			memcpy(out->ranges + out->nranges, part->ranges,
			       part->nranges * sizeof(*part->ranges));
		out->nranges += part->nranges;
		for (uint64_t i = 0; i < part->nlines; i++)
			part->lines[i].file = REMAP(part->lines[i].file);
#undef REMAP
		total += part->nlines;
		if (part->found && !out->debug_path) {
			out->debug_path = part->debug_path;
			part->debug_path = NULL;
		}
		out->found |= part->found;
		free(remap[k]);
	}
	free(remap);
	free(rank);
	/* K-way merge of the sorted rows (in place when one part holds them all). */
	unsigned nonempty = 0, only = 0;
	for (unsigned k = 0; k < nthreads; k++)
		if (th[k].part.nlines) {
			nonempty++;
			only = k;
		}
	if (nonempty == 1) {
		out->lines = th[only].part.lines;
		out->lines_cap = th[only].part.nlines;
		th[only].part.lines = NULL;
		th[only].part.nlines = 0;
		uint64_t n = 0;
		for (uint64_t i = 0; i < total; i++) {
			struct sfile_line l = out->lines[i];
			struct sfile_line *last = n ? &out->lines[n - 1] : NULL;
			if (last && l.lo < last->hi) {
				if (l.lo == last->lo)
					continue;
				last->hi = l.lo;
			}
			out->lines[n++] = l;
		}
		out->nlines = n;
		return;
	}
	out->lines = xmalloc((total ? total : 1) * sizeof(*out->lines));
	out->lines_cap = total;
	uint64_t *pos = xcalloc(nthreads, sizeof(uint64_t));
	for (;;) {
		int best = -1;
		for (unsigned k = 0; k < nthreads; k++)
			if (pos[k] < th[k].part.nlines &&
			    (best < 0 || line_order(&th[k].part.lines[pos[k]],
						    &th[best].part.lines[pos[best]]) < 0))
				best = (int)k;
		if (best < 0)
			break;
		struct sfile_line l = th[best].part.lines[pos[best]++];
		struct sfile_line *last = out->nlines ? &out->lines[out->nlines - 1] : NULL;
		if (last && l.lo < last->hi) {
			/* Overlapping rows (sequences of discarded or duplicated code): a row that
			 * starts later cuts the one before it; of rows that start together, the
			 * shortest stays. */
			if (l.lo == last->lo)
				continue;
			last->hi = l.lo;
		}
		out->lines[out->nlines++] = l;
	}
	free(pos);
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
	/*
	 * Thread 0's handle is opened first.  When its DWARF has no dwz alternate file, the
	 * other threads get handles on the same Elf: its sections are already decompressed,
	 * so a compressed debug file is decompressed (and held in memory) once, not per thread.
	 */
	Dwfl *dwfl0 = NULL;
	Dwarf *dw0 = open_dwarf(img, &dwfl0, &th[0].part.debug_path);
	Elf *delf = dw0 && !dwarf_getalt(dw0) ? dwarf_getelf(dw0) : NULL;
	th[0].shared_dw = dw0;
	for (unsigned i = 1; i < nthreads && dw0; i++) {
		if (delf)
			th[i].shared_dw = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
		if (pthread_create(&th[i].tid, NULL, thread_main, &th[i]) != 0)
			th[i].rc = 1; /* not started: thread 0 and the others take its units */
	}
	if (dw0)
		thread_main(&th[0]);
	else
		nthreads = 1; /* no DWARF at all */
	for (unsigned i = 1; i < nthreads; i++) {
		if (th[i].rc != 1)
			pthread_join(th[i].tid, NULL);
		if (th[i].shared_dw)
			dwarf_end(th[i].shared_dw);
	}
	if (dwfl0)
		dwfl_end(dwfl0);
	int rc = 0;
	for (unsigned i = 0; i < nthreads; i++)
		if (th[i].rc < 0 && rc == 0)
			rc = fth_error("%s", th[i].err);
	merge_parts(out, th, nthreads);
	for (unsigned i = 0; i < nthreads; i++)
		dw_release(&th[i].part);
	free(th);
	hmap_release(&sh.seen_lines);
	pthread_mutex_destroy(&sh.lock);
	return rc;
}
