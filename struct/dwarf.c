/* SPDX-License-Identifier: MIT */
/*
 * dwarf.c: functions, inlined call sites and line rows from DWARF, through libdwfl, each unit
 * walked once and each line table read once, by N threads with a Dwarf handle each, merged in
 * a canonical order so that the result does not depend on N; compressed DWARF comes through
 * dwimage.c (doc/internals.md, 3, step 2).
 */
#include "compat.h"
#include "struct.h"
#include "buf.h"
#include "error.h"
#include "hmap.h"
#include "search.h"
#include "srcpath.h"
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

/* A piece of one thread's line rows, sorted on its own. */
struct line_run {
	unsigned part;
	struct sfile_line *rows;
	uint64_t n;
	struct sfile_line *scratch; /* N rows of room for sorting */
};

struct dw_thread;

struct dw_shared {
	const struct image *img;
	struct dw_thread *threads;
	unsigned nthreads;
	struct dw_info *out;
	uint32_t **remap; /* per thread: its string ids to the canonical ones (merge_scopes) */
	unsigned walkers_left; /* under LOCK: threads still walking units */
	pthread_cond_t walked;
	struct line_run *runs; /* planned when the last walker is done */
	struct sfile_line *scratch; /* room for all rows: sorting, then the merged rows */
	unsigned nruns;
	atomic_uint next_run;
	struct dw_image *image; /* compressed DWARF decompressed here, or NULL */
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
	Dwarf_CU *cu;
	Dwarf_Half version; /* of its DWARF */
	Dwarf_Files *files;
	size_t nfiles;
	const char *comp_dir; /* DW_AT_comp_dir, or NULL */
	struct hmap file_ids; /* libdw's name pointer -> string id, for this unit */
};

/*
 * A source file's name as the string table keeps it: a relative NAME (as the compiler was
 * given it: "../src/a.c") is resolved against the unit's compilation directory, so that a
 * viewer run from elsewhere finds it, and addr2line's users recognise it.
 */
static uint32_t intern_file(struct dw_thread *t, const char *name)
{
	uint64_t id;
	if (hmap_get(&t->file_ids, (uintptr_t)name, &id))
		return (uint32_t)id;
	char *path = source_path(t->comp_dir, name);
	id = path ? strtab_intern(&t->part.strings, path)
		  : strtab_intern_stable(&t->part.strings, name);
	free(path);
	hmap_put(&t->file_ids, (uintptr_t)name, id);
	return (uint32_t)id;
}

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

/* A failure reported by dwimage.c (with fth_error). */
static void fail_image(struct dw_thread *t)
{
	if (!t->err[0])
		snprintf(t->err, sizeof(t->err), "%s", fth_errmsg());
	fth_error_clear();
	t->rc = -1;
}

/*
 * The name of the source file that attribute A (DW_AT_decl_file, DW_AT_call_file) refers to,
 * or NULL.  The index is one of the line table of the unit that holds the attribute (not
 * always the unit being walked: DW_AT_abstract_origin may lead to another one).  In DWARF 5,
 * file 0 is the unit's primary source file, and clang uses it; elfutils' dwarf_decl_file()
 * (0.188) returns NULL for it.  Before DWARF 5, index 0 means no file.
 */
static const char *attr_file(struct dw_thread *t, Dwarf_Attribute *a)
{
	Dwarf_Word idx;
	if (dwarf_formudata(a, &idx) != 0)
		return NULL;
	Dwarf_Files *files = t->files;
	size_t nfiles = t->nfiles;
	Dwarf_Half version = t->version;
	if (a->cu != t->cu) {
		Dwarf_Die cudie;
		if (!a->cu ||
		    !dwarf_cu_die(a->cu, &cudie, &version, NULL, NULL, NULL, NULL, NULL) ||
		    dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0)
			return NULL;
	}
	if ((idx == 0 && version < 5) || !files || idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

/* The file and line where DIE (or the DIE it is an instance of) is declared. */
static void decl_of(struct dw_thread *t, Dwarf_Die *die, uint32_t *file, uint32_t *line)
{
	Dwarf_Attribute a;
	const char *name = NULL;
	if (dwarf_attr_integrate(die, DW_AT_decl_file, &a))
		name = attr_file(t, &a);
	if (name)
		*file = intern_file(t, name);
	int l = 0;
	if (dwarf_decl_line(die, &l) == 0 && l > 0)
		*line = (uint32_t)l;
}

/* The DIE that declares DIE's function: the end of its DW_AT_abstract_origin and
 * DW_AT_specification chain (bounded: a corrupt file may loop). */
static Dwarf_Die *declaring_die(Dwarf_Die *die, Dwarf_Die *mem)
{
	Dwarf_Die *d = die;
	for (int hops = 0; hops < 8; hops++) {
		Dwarf_Attribute a;
		if (!dwarf_attr(d, DW_AT_abstract_origin, &a) &&
		    !dwarf_attr(d, DW_AT_specification, &a))
			break;
		if (!dwarf_formref_die(&a, mem))
			break;
		d = mem;
	}
	return d;
}

static bool is_cplusplus(Dwarf_Die *die)
{
	Dwarf_Die cu;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	int lang = dwarf_srclang(&cu);
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/*
 * NAME qualified by the scopes that enclose DECL (namespaces, classes, functions), as a C++
 * reader writes it: main::{lambda@18}::operator() for a lambda at line 18 of main, whose
 * closure type has no name.  NULL when there is nothing to add.  The result is malloc'ed.
 */
static char *qualified_name(Dwarf_Die *decl, const char *name)
{
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes_die(decl, &scopes);
	struct buf b = BUF_INIT;
	for (int i = n - 1; i >= 1; i--) {
		int tag = dwarf_tag(&scopes[i]);
		const char *part = dwarf_diename(&scopes[i]);
		if (tag == DW_TAG_namespace || tag == DW_TAG_subprogram ||
		    tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		    tag == DW_TAG_union_type) {
			int line = 0;
			if (part)
				buf_addstr(&b, part);
			else if (tag == DW_TAG_namespace)
				buf_addstr(&b, "(anonymous namespace)");
			else if (dwarf_decl_line(&scopes[i], &line) == 0 && line > 0)
				buf_printf(&b, "{lambda@%d}", line);
			else
				buf_addstr(&b, "{unnamed}");
			buf_addstr(&b, "::");
		}
	}
	free(scopes);
	if (!b.len) {
		buf_release(&b);
		return NULL;
	}
	buf_addstr(&b, name);
	return buf_detach(&b, NULL);
}

/*
 * The name that identifies DIE's function: its linkage name (mangled, so qualified by its
 * namespaces and classes, and distinct for each overload, template instance and lambda) where
 * DWARF gives one, through DW_AT_abstract_origin and DW_AT_specification; in C++ without one
 * (main, extern "C", a lambda's operator()), its name qualified by the enclosing scopes; else
 * its plain name (C).
 */
static uint32_t function_name(struct dw_info *d, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *linkage = NULL;
	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		linkage = dwarf_formstring(&a);
	if (linkage && *linkage)
		return strtab_intern_stable(&d->strings, linkage);
	const char *name = dwarf_diename(die);
	if (!name)
		return strtab_intern(&d->strings, "<unnamed>");
	/* A name that is mangled already (GCC's OpenMP regions: _ZL1fv._omp_fn.0, a child of
	 * f's DIE) is the symbol's name: not qualified again. */
	if (is_cplusplus(die) && strncmp(name, "_Z", 2) != 0) {
		Dwarf_Die mem;
		char *q = qualified_name(declaring_die(die, &mem), name);
		if (q) {
			uint32_t id = strtab_intern(&d->strings, q);
			free(q);
			return id;
		}
	}
	return strtab_intern_stable(&d->strings, name);
}

/*
 * A scope for DIE (a function when KIND is SFILE_FUNCTION, OUTER being the DIE of the
 * function that encloses it, or NULL), or NONE32 when it has no code.
 */
static uint32_t add_scope(struct dw_thread *t, Dwarf_Die *die, uint32_t parent, uint8_t kind,
			  Dwarf_Die *outer)
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
		fail(t, "address ranges (.debug_ranges, .debug_rnglists)");
		d->nranges = range_start;
		return NONE32;
	}
	if (d->nranges == range_start)
		return NONE32;
	ALLOC_GROW(d->scopes, d->nscopes + 1, d->scopes_cap);
	uint32_t id = d->nscopes++;
	struct dw_scope *s = &d->scopes[id];
	*s = (struct dw_scope){ .parent = parent, .kind = kind, .die = dwarf_dieoffset(die),
				.range_start = range_start, .nranges = d->nranges - range_start,
				.file = NONE32, .decl_file = NONE32 };
	s->name = function_name(d, die);
	s->noreturn = dwarf_hasattr_integrate(die, DW_AT_noreturn); /* inlined ones too */
	if (kind == SFILE_FUNCTION) {
		s->func = id;
		s->depth = 0;
		decl_of(t, die, &s->file, &s->line);
		/* A function the compiler made out of part of another (an OpenMP region), with
		 * no declaration of its own, is filed where the other is declared. */
		if (s->file == NONE32 && outer) {
			s->line = 0;
			decl_of(t, outer, &s->file, &s->line);
		}
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
		decl_of(t, die, &s->decl_file, &s->decl_line);
		s->depth = (uint16_t)(p->depth + 1);
		s->entry = lowest;
		Dwarf_Attribute a;
		Dwarf_Word v;
		if (dwarf_attr(die, DW_AT_call_file, &a)) {
			const char *file = attr_file(t, &a);
			if (file)
				s->file = intern_file(t, file);
		}
		if (dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &v) == 0)
			s->line = (uint32_t)FTH_MIN(v, UINT32_MAX);
		if (dwarf_attr(die, DW_AT_call_column, &a) && dwarf_formudata(&a, &v) == 0)
			s->column = (uint32_t)FTH_MIN(v, UINT32_MAX);
	}
	return id;
}

/* Append the code ranges of DIE to the ranges of T's part; false when it has none. */
static bool add_ranges(struct dw_thread *t, Dwarf_Die *die)
{
	struct dw_info *d = &t->part;
	uint32_t start = d->nranges;
	ptrdiff_t off = 0;
	Dwarf_Addr base, lo, hi;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		size_t avail;
		if (hi <= lo || !image_code(t->sh->img, lo, &avail))
			continue;
		ALLOC_GROW(d->ranges, d->nranges + 1, d->ranges_cap);
		d->ranges[d->nranges].lo = lo;
		d->ranges[d->nranges].hi = FTH_MIN(hi, lo + avail);
		d->nranges++;
	}
	if (off < 0)
		d->nranges = start; /* a bad range list: the block is just not known */
	return d->nranges > start;
}

/*
 * Record the lexical block DIE of SCOPE (inside block PARENT) when it declares variables and
 * has code; its index, or NONE32.
 */
static uint32_t add_block(struct dw_thread *t, Dwarf_Die *die, uint32_t scope, uint32_t parent)
{
	Dwarf_Die child;
	uint32_t best = 0, file = NONE32;
	if (dwarf_child(die, &child) != 0)
		return NONE32;
	do {
		/* decl_of reads DWARF 5's file 0 too (clang) */
		uint32_t f = NONE32, line = 0;
		if (dwarf_tag(&child) == DW_TAG_variable) {
			decl_of(t, &child, &f, &line);
			if (line > 0 && f != NONE32 && (!best || line < best)) {
				best = line;
				file = f;
			}
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	struct dw_info *d = &t->part;
	uint32_t start = d->nranges;
	if (!best || file == NONE32 || !add_ranges(t, die))
		return NONE32;
	ALLOC_GROW(d->blocks, d->nblocks + 1, d->blocks_cap);
	d->blocks[d->nblocks++] = (struct dw_block){ .scope = scope, .parent = parent, .file = file,
						     .line = best, .range_start = start,
						     .nranges = d->nranges - start };
	return d->nblocks - 1;
}

/*
 * Walk the children of PARENT_DIE, inside function or inline SCOPE (NONE32 outside any: in
 * an abstract instance, only functions are looked for) and lexical BLOCK; OUTER is the DIE of
 * the innermost function around them.
 */
static void walk(struct dw_thread *t, Dwarf_Die *parent_die, uint32_t scope, uint32_t block,
		 Dwarf_Die *outer,
		 unsigned level)
{
	Dwarf_Die child;
	if (t->rc < 0 || dwarf_child(parent_die, &child) != 0)
		return;
	if (level > MAX_DIE_DEPTH) {
		fail(t, "DIEs nested too deeply (.debug_info)");
		return;
	}
	do {
		uint32_t s;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
			/*
			 * A function with code, wherever its DIE is nested.  One without code
			 * (a declaration, an abstract instance: DW_AT_inline) is still walked,
			 * outside any scope, for the concrete functions it holds: GCC puts
			 * the outlined regions of "#pragma omp parallel" (f._omp_fn.N) inside
			 * the abstract instance of F when F is inlined into its callers.
			 */
			s = add_scope(t, &child, NONE32, SFILE_FUNCTION, outer);
			walk(t, &child, s, NONE32, &child, level + 1);
			break;
		case DW_TAG_inlined_subroutine:
			if (scope == NONE32) {
				walk(t, &child, NONE32, NONE32, outer, level + 1); /* functions inside */
				break;
			}
			s = add_scope(t, &child, scope, SFILE_INLINE, NULL);
			if (s != NONE32)
				walk(t, &child, s, NONE32, outer, level + 1);
			else
				walk(t, &child, scope, block, outer, level + 1);
			break;
		case DW_TAG_lexical_block:
			s = scope != NONE32 ? add_block(t, &child, scope, block) : NONE32;
			walk(t, &child, scope, s != NONE32 ? s : block, outer, level + 1);
			break;
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			walk(t, &child, scope, block, outer, level + 1);
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			if (scope == NONE32)
				walk(t, &child, NONE32, NONE32, outer, level + 1);
			break;
		default:
			break;
		}
	} while (t->rc == 0 && dwarf_siblingof(&child, &child) == 0);
}

/*
 * Room for NEED rows.  Past LINES_SMALL rows the array jumps to LINES_LARGE rows, more than
 * glibc's mmap threshold (at most 32 MiB, as main() sets it): glibc then maps it on its own
 * and grows it with mremap, without copying, and pages never touched cost nothing.  Growing
 * by copies costs more on a thread other than the first: its arena cannot extend a block in
 * place at the top of the heap as the main one does, so every step copied the rows into
 * fresh pages.
 */
#define LINES_SMALL (1u << 18)
#define LINES_LARGE ((64u << 20) / sizeof(struct sfile_line))
static void grow_lines(struct dw_info *d, uint64_t need)
{
	uint64_t cap = d->lines_cap ? d->lines_cap * 3 / 2 : 4096;
	if (cap > LINES_SMALL && cap < LINES_LARGE)
		cap = LINES_LARGE;
	d->lines_cap = FTH_MAX(need, cap);
	d->lines = xreallocarray(d->lines, d->lines_cap, sizeof(*d->lines));
}

static void add_line(struct dw_info *d, uint64_t lo, uint64_t hi, uint32_t file, uint32_t line,
		     uint32_t column)
{
	if (d->nlines == d->lines_cap)
		grow_lines(d, d->nlines + 1);
	d->lines[d->nlines++] = (struct sfile_line){ lo, hi, file, line, column };
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
		fail(t, "line table (.debug_line)");
		return;
	}
	struct dw_info *d = &t->part;
	if (d->nlines + n > d->lines_cap)
		grow_lines(d, d->nlines + n);
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
			prev_file = name ? intern_file(t, name) : NONE32;
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
	const uint64_t kx[] = { x->lo, x->hi, x->line, x->column };
	const uint64_t ky[] = { y->lo, y->hi, y->line, y->column };
	return fth_compare_keys(kx, ky, ARRAY_SIZE(kx));
}

static int line_order_local(const void *a, const void *b, void *strings)
{
	const struct sfile_line *x = a, *y = b;
	int d = line_order_by(x, y);
	if (d || x->file == y->file)
		return d;
	const struct strtab *st = strings;
	if (x->file == NONE32 || y->file == NONE32)
		return x->file == NONE32 ? 1 : -1; /* last, as in line_order() */
	return strcmp(st->v[x->file], st->v[y->file]);
}

/*
 * Sort rows by address: an LSD radix sort on LO over the bits that vary, in an even number of
 * digits of at most 12 bits (4096 buckets, so the scatter stays in cache) so that the rows end
 * where they started (SCRATCH, as large, holds them in between), then runs of equal LO sorted
 * by the full order.  libdw gives each unit's rows sorted; units interleave (hot and cold
 * parts).
 */
#define RADIX_MAX_BITS 12
static void sort_rows(struct sfile_line *rows, uint64_t n, const struct strtab *strings,
		      struct sfile_line *scratch)
{
	if (n < 2)
		return;
	uint64_t lo = rows[0].lo, hi = rows[0].lo;
	bool sorted = true;
	for (uint64_t i = 1; i < n; i++) {
		lo = FTH_MIN(lo, rows[i].lo);
		hi = FTH_MAX(hi, rows[i].lo);
		sorted &= rows[i - 1].lo < rows[i].lo;
	}
	if (!sorted && hi > lo) {
		unsigned bits = 0;
		while (bits < 64 && ((hi - lo) >> bits))
			bits++;
		unsigned passes = (bits + RADIX_MAX_BITS - 1) / RADIX_MAX_BITS;
		passes += passes & 1;
		unsigned digit = (bits + passes - 1) / passes;
		size_t buckets = (size_t)1 << digit;
		const uint64_t mask = buckets - 1;
		uint64_t *count = xmalloc(buckets * sizeof(uint64_t));
		struct sfile_line *src = rows, *dst = scratch;
		for (unsigned p = 0; p < passes; p++) {
			unsigned shift = p * digit;
			memset(count, 0, buckets * sizeof(uint64_t));
			for (uint64_t i = 0; i < n; i++)
				count[((src[i].lo - lo) >> shift) & mask]++;
			uint64_t sum = 0;
			for (size_t k = 0; k < buckets; k++) {
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
	}
	for (uint64_t i = 0; i + 1 < n;) {
		uint64_t j = i + 1;
		while (j < n && rows[j].lo == rows[i].lo)
			j++;
		if (j - i > 1)
			qsort_r(rows + i, j - i, sizeof(*rows), line_order_local, (void *)strings);
		i = j;
	}
}

/*
 * The rows of every part are sorted in runs of about equal size, claimed by the threads once
 * all have walked their units (a thread that read more units does not sort alone for longer),
 * then merged by merge_lines() into the scratch space that the sort has already touched (fresh
 * pages cost more than the copies here).  One thread sorts its part as one run.
 */
static void plan_runs(struct dw_shared *sh)
{
	uint64_t total = 0;
	for (unsigned k = 0; k < sh->nthreads; k++)
		total += sh->threads[k].part.nlines;
	uint64_t chunk = total + 1;
	if (sh->nthreads > 1)
		chunk = total / (2 * sh->nthreads) + 1; /* at most 3 runs per thread */
	sh->runs = NULL;
	sh->nruns = 0;
	sh->scratch = xmalloc((total ? total : 1) * sizeof(*sh->scratch));
	uint64_t at = 0;
	for (unsigned k = 0; k < sh->nthreads; k++) {
		struct dw_info *part = &sh->threads[k].part;
		uint64_t n = part->nlines, pieces = (n + chunk - 1) / chunk;
		if (k)
			at += sh->threads[k - 1].part.nlines;
		for (uint64_t p = 0; p < pieces; p++) {
			uint64_t from = n * p / pieces, to = n * (p + 1) / pieces;
			sh->runs = xreallocarray(sh->runs, sh->nruns + 1, sizeof(*sh->runs));
			sh->runs[sh->nruns++] = (struct line_run){ .part = k,
								   .rows = part->lines + from,
								   .n = to - from,
								   .scratch = sh->scratch + at + from };
		}
	}
}

static void merge_scopes(struct dw_info *out, struct dw_shared *sh);

static void sort_runs(struct dw_thread *t)
{
	struct dw_shared *sh = t->sh;
	pthread_mutex_lock(&sh->lock);
	bool last = --sh->walkers_left == 0;
	if (last) {
		plan_runs(sh);
		pthread_cond_broadcast(&sh->walked);
	}
	while (sh->walkers_left)
		pthread_cond_wait(&sh->walked, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
	/* The last one merges strings and scopes while the others start sorting. */
	if (last)
		merge_scopes(sh->out, sh);
	for (;;) {
		unsigned r = atomic_fetch_add(&sh->next_run, 1);
		if (r >= sh->nruns)
			break;
		struct line_run *run = &sh->runs[r];
		sort_rows(run->rows, run->n, &sh->threads[run->part].part.strings, run->scratch);
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

static void walk_units(struct dw_thread *t)
{
	const struct image *img = t->sh->img;
	struct dw_image *di = t->sh->image;
	Dwfl *dwfl = NULL;
	Dwarf *dw = t->shared_dw;
	if (di) {
		/* Decompress sections until none is left, then read units as they come. */
		while (dwimage_work(di))
			;
		if (dwimage_wait_support(di) < 0) {
			fail_image(t);
			return;
		}
	}
	if (!dw && !(dw = open_dwarf(img, &dwfl, &t->part.debug_path)))
		return;
	t->part.found = true;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	uint8_t unit_type;
	unsigned index = 0, mine = atomic_fetch_add(&t->sh->next_unit, 1);
	uint64_t next_offset = 0; /* of the next unit in .debug_info */
	int rc;
	for (;;) {
		if (di && dwimage_wait_unit(di, &next_offset) < 0) {
			fail_image(t);
			rc = 1;
			break;
		}
		if ((rc = dwarf_get_units(dw, cu, &cu, NULL, &unit_type, &cudie, &subdie)) != 0)
			break;
		if (index++ != mine)
			continue;
		mine = atomic_fetch_add(&t->sh->next_unit, 1);
		if (unit_type == DW_UT_partial || unit_type == DW_UT_type ||
		    unit_type == DW_UT_split_type)
			continue;
		Dwarf_Die *die = &cudie;
		int tag = dwarf_tag(&cudie);
		if (tag != DW_TAG_compile_unit && tag != DW_TAG_skeleton_unit) {
			fail(t, "a unit without a valid compile-unit DIE (.debug_info)");
			break;
		}
		if (unit_type == DW_UT_skeleton && dwarf_tag(&subdie) == DW_TAG_compile_unit)
			die = &subdie;
		t->files = NULL;
		t->nfiles = 0;
		t->cu = die->cu;
		t->version = 0;
		dwarf_cu_die(die->cu, &(Dwarf_Die){ 0 }, &t->version, NULL, NULL, NULL, NULL, NULL);
		Dwarf_Attribute cd;
		t->comp_dir = dwarf_formstring(dwarf_attr(die, DW_AT_comp_dir, &cd));
		hmap_release(&t->file_ids);
		hmap_init(&t->file_ids);
		if (dwarf_getsrcfiles(die, &t->files, &t->nfiles) != 0) {
			t->files = NULL;
			t->nfiles = 0;
		}
		read_lines(t, &cudie);
		walk(t, die, NONE32, NONE32, NULL, 0);
		if (t->rc < 0)
			break;
	}
	if (rc < 0 && t->rc == 0)
		fail(t, "unit headers (.debug_info)");
	if (dwfl)
		dwfl_end(dwfl);
}

static void *thread_main(void *arg)
{
	struct dw_thread *t = arg;
	walk_units(t);
	/* Sort here, in parallel; ties are broken by content so the order is canonical. */
	sort_runs(t);
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
 * Merge the strings, scopes and ranges of all threads' parts into OUT with canonical string
 * ids (sorted strings), so that the result does not depend on which thread read which unit;
 * SH->remap keeps each part's ids to canonical ones for merge_lines().  Runs on the last
 * thread to finish walking, while the others sort line rows.
 */
static void merge_scopes(struct dw_info *out, struct dw_shared *sh)
{
	struct dw_thread *th = sh->threads;
	unsigned nthreads = sh->nthreads;
	uint32_t **remap = xcalloc(nthreads, sizeof(*remap));
	for (unsigned k = 0; k < nthreads; k++) {
		struct dw_info *part = &th[k].part;
		remap[k] = xmalloc((part->strings.n ? part->strings.n : 1) * sizeof(uint32_t));
		for (uint32_t i = 0; i < part->strings.n; i++)
			remap[k][i] = strtab_intern(&out->strings, part->strings.v[i]);
	}
	uint32_t *rank;
	strtab_sort(&out->strings, &rank);
	unsigned base = 0;
	for (unsigned k = 0; k < nthreads; k++) {
		struct dw_info *part = &th[k].part;
		for (uint32_t i = 0; i < part->strings.n; i++)
			remap[k][i] = rank[remap[k][i]];
		if (part->found && !out->debug_path) {
			out->debug_path = part->debug_path;
			part->debug_path = NULL;
		}
		out->found |= part->found;
		if (part->nscopes > th[base].part.nscopes)
			base = k;
	}
	/*
	 * The scopes and ranges of the largest part stay where they are (not copied: fewer fresh
	 * pages to fault in), the others are appended.  Scope ids need not be canonical:
	 * functions are put in a canonical order later.
	 */
	for (unsigned step = 0; step < nthreads; step++) {
		unsigned k = step == 0 ? base : step <= base ? step - 1 : step;
		struct dw_info *part = &th[k].part;
#define REMAP(x) ((x) == NONE32 ? NONE32 : remap[k][x])
		if (step == 0) {
			out->scopes = part->scopes;
			out->nscopes = part->nscopes;
			out->scopes_cap = part->scopes_cap;
			out->ranges = part->ranges;
			out->nranges = part->nranges;
			out->ranges_cap = part->ranges_cap;
			out->blocks = part->blocks;
			out->nblocks = part->nblocks;
			out->blocks_cap = part->blocks_cap;
			part->scopes = NULL;
			part->ranges = NULL;
			part->blocks = NULL;
			part->nscopes = part->scopes_cap = part->nranges = part->ranges_cap = 0;
			part->nblocks = part->blocks_cap = 0;
			for (uint32_t i = 0; i < out->nblocks; i++)
				out->blocks[i].file = REMAP(out->blocks[i].file);
			for (uint32_t i = 0; i < out->nscopes; i++) {
				out->scopes[i].name = REMAP(out->scopes[i].name);
				out->scopes[i].file = REMAP(out->scopes[i].file);
				out->scopes[i].decl_file = REMAP(out->scopes[i].decl_file);
			}
			continue;
		}
		uint32_t scope0 = out->nscopes, range0 = out->nranges;
		ALLOC_GROW(out->scopes, out->nscopes + part->nscopes, out->scopes_cap);
		for (uint32_t i = 0; i < part->nscopes; i++) {
			struct dw_scope sc = part->scopes[i];
			sc.parent = sc.parent == NONE32 ? NONE32 : sc.parent + scope0;
			sc.func += scope0;
			sc.name = REMAP(sc.name);
			sc.file = REMAP(sc.file);
			sc.decl_file = REMAP(sc.decl_file);
			sc.range_start += range0;
			out->scopes[out->nscopes++] = sc;
		}
		ALLOC_GROW(out->ranges, out->nranges + part->nranges, out->ranges_cap);
		if (part->nranges)
			memcpy(out->ranges + out->nranges, part->ranges,
			       part->nranges * sizeof(*part->ranges));
		out->nranges += part->nranges;
		uint32_t block0 = out->nblocks;
		ALLOC_GROW(out->blocks, out->nblocks + part->nblocks, out->blocks_cap);
		for (uint32_t i = 0; i < part->nblocks; i++) {
			struct dw_block b = part->blocks[i];
			b.scope += scope0;
			if (b.parent != NONE32)
				b.parent += block0;
			b.file = REMAP(b.file);
			b.range_start += range0;
			out->blocks[out->nblocks++] = b;
		}
#undef REMAP
	}
	free(rank);
	sh->remap = remap;
}

/* Merge the sorted runs of line rows into OUT, with canonical file ids. */
static void merge_lines(struct dw_info *out, struct dw_shared *sh)
{
	struct dw_thread *th = sh->threads;
	uint32_t **remap = sh->remap;
	uint64_t total = 0;
	for (unsigned k = 0; k < sh->nthreads; k++)
		total += th[k].part.nlines;
	/* K-way merge of the sorted runs (in place when there is only one). */
	struct line_run *runs = sh->runs;
	unsigned nruns = 0, only = 0;
	for (unsigned r = 0; r < sh->nruns; r++)
		if (runs[r].n) {
			nruns++;
			only = r;
		}
#define CANON(run, f) ((f) == NONE32 ? NONE32 : remap[(run)->part][f])
	if (nruns == 1) {
		struct line_run *run = &runs[only]; /* the whole of its part's array */
		out->lines = th[run->part].part.lines;
		out->lines_cap = total;
		th[run->part].part.lines = NULL;
		th[run->part].part.nlines = 0;
		free(sh->scratch);
		uint64_t n = 0;
		for (uint64_t i = 0; i < total; i++) {
			struct sfile_line l = out->lines[i];
			l.file = CANON(run, l.file);
			struct sfile_line *last = n ? &out->lines[n - 1] : NULL;
			if (last && l.lo < last->hi) {
				if (l.lo == last->lo)
					continue;
				last->hi = l.lo;
			}
			out->lines[n++] = l;
		}
		out->nlines = n;
	} else if (nruns == 0) {
		out->lines = sh->scratch;
		out->lines_cap = 1;
	} else {
		out->lines = sh->scratch;
		out->lines_cap = total;
		/* The head of every run with its canonical file id; K is small (2 per thread). */
		uint64_t *pos = xcalloc(sh->nruns, sizeof(uint64_t));
		struct sfile_line *head = xmalloc(sh->nruns * sizeof(*head));
		unsigned live = 0;
		unsigned *order = xmalloc(sh->nruns * sizeof(*order));
		for (unsigned r = 0; r < sh->nruns; r++) {
			if (!runs[r].n)
				continue;
			head[r] = runs[r].rows[0];
			head[r].file = CANON(&runs[r], head[r].file);
			order[live++] = r;
		}
		while (live) {
			unsigned bi = 0;
			for (unsigned i = 1; i < live; i++) {
				const struct sfile_line *x = &head[order[i]], *y = &head[order[bi]];
				if (x->lo < y->lo || (x->lo == y->lo && line_order(x, y) < 0))
					bi = i;
			}
			unsigned best = order[bi];
			struct sfile_line l = head[best];
			if (++pos[best] < runs[best].n) {
				head[best] = runs[best].rows[pos[best]];
				head[best].file = CANON(&runs[best], head[best].file);
			} else {
				order[bi] = order[--live];
			}
			struct sfile_line *last = out->nlines ? &out->lines[out->nlines - 1] : NULL;
			if (last && l.lo < last->hi) {
				/* Overlapping rows (sequences of discarded or duplicated code):
				 * a row that starts later cuts the one before it; of rows that
				 * start together, the shortest stays. */
				if (l.lo == last->lo)
					continue;
				last->hi = l.lo;
			}
			out->lines[out->nlines++] = l;
		}
		free(order);
		free(head);
		free(pos);
	}
#undef CANON
	sh->scratch = NULL;
	for (unsigned k = 0; k < sh->nthreads; k++)
		free(remap[k]);
	free(remap);
	sh->remap = NULL;
}

void dw_release(struct dw_info *d)
{
	strtab_release(&d->strings);
	free(d->scopes);
	free(d->ranges);
	free(d->blocks);
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
	unsigned nallocated = nthreads;
	for (unsigned i = 0; i < nthreads; i++) {
		th[i].sh = &sh;
		hmap_init(&th[i].file_ids);
		strtab_init(&th[i].part.strings);
	}
	sh.threads = th;
	sh.out = out;
	sh.nthreads = sh.walkers_left = nthreads;
	pthread_cond_init(&sh.walked, NULL);
	atomic_init(&sh.next_run, 0);
	/*
	 * Thread 0's handle is opened first.  When its DWARF has no dwz alternate file, the
	 * other threads get handles on the same Elf: its sections are already decompressed,
	 * so a compressed debug file is decompressed (and held in memory) once, not per thread.
	 * Compressed DWARF, in the binary or in its debug file, becomes a dwimage instead, whose
	 * sections the threads decompress between them.
	 */
	Dwfl *dwfl0 = NULL;
	Dwarf *dw0 = NULL;
	Elf *delf = NULL;
	struct dw_image *di = dwimage_find(img);
	if (!di)
		dw0 = open_dwarf(img, &dwfl0, &th[0].part.debug_path);
	if (di) {
		dw0 = dwarf_begin_elf(dwimage_elf(di), DWARF_C_READ, NULL);
		if (dw0) {
			delf = dwimage_elf(di);
			free(th[0].part.debug_path);
			th[0].part.debug_path = xstrdup(dwimage_path(di));
			sh.image = di;
		}
	} else if (dw0 && !dwarf_getalt(dw0)) {
		delf = dwarf_getelf(dw0);
	}
	th[0].shared_dw = dw0;
	for (unsigned i = 1; i < nthreads && dw0; i++) {
		if (delf)
			th[i].shared_dw = dwarf_begin_elf(delf, DWARF_C_READ, NULL);
		if (pthread_create(&th[i].tid, NULL, thread_main, &th[i]) != 0) {
			th[i].rc = 1; /* not started: thread 0 and the others take its units */
			pthread_mutex_lock(&sh.lock);
			sh.walkers_left--;
			pthread_mutex_unlock(&sh.lock);
		}
	}
	if (dw0) {
		thread_main(&th[0]);
	} else {
		nthreads = sh.nthreads = 1; /* no DWARF at all */
		plan_runs(&sh);
		merge_scopes(out, &sh);
	}
	for (unsigned i = 1; i < nthreads; i++) {
		if (th[i].rc != 1)
			pthread_join(th[i].tid, NULL);
		if (th[i].shared_dw)
			dwarf_end(th[i].shared_dw);
	}
	if (dwfl0)
		dwfl_end(dwfl0);
	else if (dw0 && di)
		dwarf_end(dw0);
	dwimage_close(di);
	int rc = 0;
	for (unsigned i = 0; i < nthreads; i++)
		if (th[i].rc < 0 && rc == 0)
			rc = fth_error("%s", th[i].err);
	merge_lines(out, &sh);
	for (unsigned i = 0; i < nallocated; i++) {
		dw_release(&th[i].part);
		hmap_release(&th[i].file_ids);
	}
	free(th);
	free(sh.runs);
	hmap_release(&sh.seen_lines);
	pthread_cond_destroy(&sh.walked);
	pthread_mutex_destroy(&sh.lock);
	return rc;
}
