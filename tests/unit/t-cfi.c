/* SPDX-License-Identifier: MIT */
/*
 * t-cfi.c: measure's CFI tables and stepper: tables of loaded modules against readelf's
 * interpretation of the same CFI, a real unwind from a signal handler through qsort and the
 * signal trampoline, the .plt expression, and lookups outside every FDE.
 */
#include "compat.h"
#include "arena.h"
#include "cfi.h"
#include "cfi-here.h"
#include "error.h"
#include "tap.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------------------- */

static size_t alloc_bytes;

static void *malloc_cb(void *ctx, size_t size, size_t align)
{
	void *p = NULL;
	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, size ? size : 1))
		return NULL;
	memset(p, 0, size);
	alloc_bytes += size;
	return p;
}

static const struct cfi_allocator malloc_al = { malloc_cb, NULL };

static void *arena_cb(void *ctx, size_t size, size_t align)
{
	return arena_alloc(ctx, size, align);
}

struct mod {
	char path[512];
	uint64_t bias, lo, hi; /* hi, lo: the executable extent, absolute */
	struct cfi_table t;
	int build_rc;
};

static struct mod mods[64];
static int nmods;

static int add_mod(struct dl_phdr_info *info, size_t size, void *data)
{
	if (nmods >= (int)ARRAY_SIZE(mods))
		return 1;
	struct mod *m = &mods[nmods++];
	const char *name = info->dlpi_name;
	if (!name[0] && nmods == 1) {
		/* the main program: readelf, run by popen, needs the real path */
		ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
		m->path[n > 0 ? n : 0] = '\0';
	} else {
		snprintf(m->path, sizeof(m->path), "%s", name);
	}
	name = m->path;
	m->bias = info->dlpi_addr;
	struct cfi_image img = { .bias = info->dlpi_addr, .phdr = info->dlpi_phdr,
				 .phnum = info->dlpi_phnum, .name = name };
	m->build_rc = cfi_build(&img, &m->t, &malloc_al);
	m->lo = m->bias + m->t.text_lo;
	m->hi = m->bias + m->t.text_hi;
	if (m->build_rc < 0)
		diag("%s", fth_errmsg());
	return 0;
}

static struct mod *find_mod_by_name(const char *needle)
{
	for (int i = 0; i < nmods; i++)
		if (strstr(mods[i].path, needle))
			return &mods[i];
	return NULL;
}

/* Async-signal-safe: a linear scan of a fixed array. */
static struct mod *mod_of(uint64_t pc)
{
	for (int i = 0; i < nmods; i++)
		if (pc >= mods[i].lo && pc < mods[i].hi)
			return &mods[i];
	return NULL;
}

static bool rows_sorted(const struct cfi_table *t)
{
	for (uint32_t i = 1; i < t->nrows; i++)
		if (t->rows[i].start <= t->rows[i - 1].start)
			return false;
	return t->nrows == 0 || t->rows[t->nrows - 1].kind == CFI_NONE;
}

/* ---- (a) readelf --debug-dump=frames-interp ------------------------------------------------ */

struct rrow {
	uint64_t loc;
	char cfa[24], rbp[24], ra[24];
};

struct rfde {
	uint64_t lo, hi;
	bool signal;
	size_t first, n; /* rows in the global array */
};

struct rdump {
	struct rrow *rows;
	size_t nrows, caprows;
	struct rfde *fdes;
	size_t nfdes, capfdes;
};

struct rcie {
	unsigned long off;
	bool signal;
	struct rrow init;
	bool have_init;
};

static struct rrow *add_rrow(struct rdump *d)
{
	if (d->nrows == d->caprows) {
		d->caprows = d->caprows ? 2 * d->caprows : 1024;
		d->rows = realloc(d->rows, d->caprows * sizeof(*d->rows));
	}
	struct rrow *r = &d->rows[d->nrows++];
	memset(r, 0, sizeof(*r));
	strcpy(r->rbp, "");
	return r;
}

/* Split a row line into fields; "r3 (rbx)" is one field. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = strtok(line, " \t\n"); p; p = strtok(NULL, " \t\n")) {
		if (p[0] == '(' && n > 0)
			continue; /* the register name of "rN (name)" */
		if (n < max)
			f[n++] = p;
	}
	return n;
}

static void fill_row(struct rrow *r, char **cols, int ncols, char **f, int n)
{
	snprintf(r->cfa, sizeof(r->cfa), "%s", n > 1 ? f[1] : "");
	for (int i = 1; i < ncols && i + 1 <= n; i++) {
		if (!strcmp(cols[i], "rbp"))
			snprintf(r->rbp, sizeof(r->rbp), "%s", f[i]);
		else if (!strcmp(cols[i], "ra"))
			snprintf(r->ra, sizeof(r->ra), "%s", f[i]);
	}
}

static bool read_frames(const char *path, struct rdump *d)
{
	char cmd[700], line[4096], *cols[64], *f[64];
	char colbuf[4096];
	int ncols = 0;
	static struct rcie cies[4096];
	int ncies = 0;
	struct rcie *cie = NULL;
	struct rfde *fde = NULL;
	bool in_eh = false;

	memset(d, 0, sizeof(*d));
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	FILE *p = popen(cmd, "r");
	if (!p)
		return false;
	while (fgets(line, sizeof(line), p)) {
		if (!strncmp(line, "Contents of the ", 16)) {
			in_eh = strstr(line, ".eh_frame section") != NULL;
			continue;
		}
		if (!in_eh)
			continue;
		unsigned long off, lo, hi, cieoff;
		char aug[64];
		if (strstr(line, " CIE ")) {
			fde = NULL;
			if (ncies < (int)ARRAY_SIZE(cies) &&
			    sscanf(line, "%lx %*x %*x CIE %63s", &off, aug) == 2) {
				cie = &cies[ncies++];
				memset(cie, 0, sizeof(*cie));
				cie->off = off;
				cie->signal = strchr(aug, 'S') != NULL;
			}
			continue;
		}
		if (strstr(line, " FDE ")) {
			char *c = strstr(line, "cie="), *q = strstr(line, "pc=");
			if (!c || !q || sscanf(c, "cie=%lx", &cieoff) != 1 ||
			    sscanf(q, "pc=%lx..%lx", &lo, &hi) != 2)
				continue;
			cie = NULL;
			for (int i = 0; i < ncies; i++)
				if (cies[i].off == cieoff)
					cie = &cies[i];
			if (d->nfdes == d->capfdes) {
				d->capfdes = d->capfdes ? 2 * d->capfdes : 256;
				d->fdes = realloc(d->fdes, d->capfdes * sizeof(*d->fdes));
			}
			fde = &d->fdes[d->nfdes++];
			memset(fde, 0, sizeof(*fde));
			fde->lo = lo;
			fde->hi = hi;
			fde->signal = cie && cie->signal;
			fde->first = d->nrows;
			/* an FDE without instructions prints no rows: the CIE's initial state */
			if (cie && cie->have_init) {
				struct rrow *r = add_rrow(d);
				*r = cie->init;
				r->loc = lo;
				fde->n = 1;
			}
			cie = NULL;
			continue;
		}
		if (strstr(line, "   LOC ")) {
			snprintf(colbuf, sizeof(colbuf), "%s", line);
			ncols = split(colbuf, cols, 64);
			continue;
		}
		unsigned long long loc;
		char *end;
		loc = strtoull(line, &end, 16);
		if (end == line || *end != ' ' || (end - line) != 16)
			continue;
		int n = split(line, f, 64);
		if (fde) {
			if (fde->n == 1 && d->rows[fde->first].loc == loc) {
				/* the FDE's own first row replaces the CIE's */
				d->nrows--;
				fde->n = 0;
			}
			struct rrow *r = add_rrow(d);
			r->loc = loc;
			fill_row(r, cols, ncols, f, n);
			fde->n++;
		} else if (cie && !cie->have_init) {
			fill_row(&cie->init, cols, ncols, f, n);
			cie->have_init = true;
		}
	}
	pclose(p); /* readelf exits with 1 on some libraries (libc) after a complete dump */
	return d->nfdes > 0;
}

/* Does ROW agree with readelf's rules? Writes the reason to WHY when not. */
static bool row_matches(const struct cfi_row *r, const struct rrow *e, bool signal, char *why,
			size_t whysize)
{
	int want_kind;
	long n = 0;
	bool unknown = false;

	if (signal) {
		if (r->kind != CFI_SIGNAL)
			goto bad;
		return true;
	}
	if (sscanf(e->cfa, "rsp+%ld", &n) == 1)
		want_kind = CFI_RSP;
	else if (sscanf(e->cfa, "rbp+%ld", &n) == 1)
		want_kind = CFI_RBP;
	else if (sscanf(e->cfa, "rbx+%ld", &n) == 1)
		want_kind = CFI_RBX;
	else if (!strcmp(e->cfa, "exp"))
		want_kind = -1; /* an expression: PLT, RBP_DEREF or unknown */
	else
		want_kind = CFI_UNKNOWN, unknown = true;

	bool ra_undef = !strcmp(e->ra, "u");
	if (!ra_undef && strcmp(e->ra, "c-8"))
		unknown = true;
	bool rbp_same = !e->rbp[0] || !strcmp(e->rbp, "u") || !strcmp(e->rbp, "s");
	long rbp_off = 0;
	bool rbp_saved = sscanf(e->rbp, "c%ld", &rbp_off) == 1;
	bool rbp_exp = !strcmp(e->rbp, "exp");
	if (!rbp_same && !rbp_saved && !rbp_exp)
		unknown = true;
	if (rbp_saved && (rbp_off % 8 || rbp_off == 0 || rbp_off < -1016 || rbp_off > 1016))
		unknown = true;

	if (unknown) {
		if (r->kind != CFI_UNKNOWN || !!(r->flags & CFI_F_RA_UNDEF) != ra_undef)
			goto bad;
		return true;
	}
	if (want_kind == -1) {
		if (r->kind != CFI_PLT && r->kind != CFI_RBP_DEREF && r->kind != CFI_UNKNOWN)
			goto bad;
	} else if (r->kind != want_kind || r->cfa_off != n) {
		goto bad;
	}
	if (r->kind == CFI_UNKNOWN)
		return !!(r->flags & CFI_F_RA_UNDEF) == ra_undef;
	if (!!(r->flags & CFI_F_RA_UNDEF) != ra_undef || (!ra_undef && r->ra != -1))
		goto bad;
	if (rbp_same && (r->flags & (CFI_F_RBP_SAVED | CFI_F_RBP_REGREL)))
		goto bad;
	if (rbp_saved && (!(r->flags & CFI_F_RBP_SAVED) || r->rbp * 8 != rbp_off))
		goto bad;
	if (rbp_exp && !(r->flags & CFI_F_RBP_REGREL))
		goto bad;
	return true;
bad:
	snprintf(why, whysize,
		 "readelf: CFA %s rbp '%s' ra %s; table: kind %u off %d flags %#x rbp %d ra %d",
		 e->cfa, e->rbp, e->ra, r->kind, r->cfa_off, r->flags, r->rbp, r->ra);
	return false;
}

static int cmp_rfde(const void *a, const void *b)
{
	const struct rfde *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void check_against_readelf(const char *label, struct mod *m)
{
	struct rdump d;
	if (!m || m->build_rc < 0) {
		ok(0, "%s: module loaded and table built", label);
		return;
	}
	if (!read_frames(m->path, &d)) {
		skip("readelf not available or no .eh_frame", label);
		return;
	}
	qsort(d.fdes, d.nfdes, sizeof(*d.fdes), cmp_rfde);
	size_t nonempty = 0, checked = 0, bad = 0, gaps = 0, gap_bad = 0;
	char why[512] = "";
	for (size_t i = 0; i < d.nfdes; i++) {
		const struct rfde *f = &d.fdes[i];
		if (f->hi == f->lo)
			continue;
		nonempty++;
		for (size_t j = 0; j < f->n; j++) {
			const struct rrow *e = &d.rows[f->first + j];
			uint64_t next = j + 1 < f->n ? d.rows[f->first + j + 1].loc : f->hi;
			/* at the location change and at the last byte before the next one */
			uint64_t probes[2] = { e->loc, next - 1 };
			for (int k = 0; k < 2; k++) {
				const struct cfi_row *r = cfi_lookup(&m->t, probes[k]);
				checked++;
				char w[256];
				if (!r) {
					if (!bad++)
						snprintf(why, sizeof(why), "no row at %#llx",
							 (unsigned long long)probes[k]);
				} else if (!row_matches(r, e, f->signal, w, sizeof(w))) {
					if (!bad++)
						snprintf(why, sizeof(why), "at %#llx: %s",
							 (unsigned long long)probes[k], w);
				}
			}
		}
		/* (d) the byte after an FDE that the next FDE does not start at */
		if (i + 1 < d.nfdes && d.fdes[i + 1].lo > f->hi) {
			gaps++;
			if (cfi_lookup(&m->t, f->hi) != NULL)
				gap_bad++;
		}
	}
	diag("%s: %zu FDEs, %u rows (%zu bytes + %zu of index), %u unknown; %zu probes", label,
	     nonempty, m->t.nrows, cfi_table_bytes(&m->t), cfi_index_bytes(&m->t), m->t.nunknown,
	     checked);
	is_uint(m->t.nfdes, nonempty, "%s: one FDE per non-empty readelf FDE", label);
	ok(bad == 0 && checked > 100, "%s: %zu of %zu probes agree with readelf%s%s", label,
	   checked - bad, checked, bad ? "; first: " : "", why);
	ok(rows_sorted(&m->t), "%s: rows sorted, ending with a CFI_NONE row", label);
	ok(gap_bad == 0, "%s: lookups in %zu gaps between FDEs find nothing", label, gaps);
	if (d.nfdes) {
		ok(d.fdes[0].lo == 0 || cfi_lookup(&m->t, d.fdes[0].lo - 1) == NULL,
		   "%s: nothing before the first FDE", label);
		uint64_t last = 0;
		for (size_t i = 0; i < d.nfdes; i++)
			last = FTH_MAX(last, d.fdes[i].hi);
		ok(cfi_lookup(&m->t, last) == NULL && cfi_lookup(&m->t, last + 4096) == NULL,
		   "%s: nothing after the last FDE", label);
	}
	free(d.rows);
	free(d.fdes);
}

/* The bucket index finds the same rows as a plain binary search, everywhere. */
static void check_index(const char *label, struct mod *m)
{
	if (!m || m->t.nrows < 2)
		return;
	struct cfi_table plain = m->t;
	plain.index = NULL;
	uint64_t lo = m->t.rows[0].start, hi = m->t.rows[m->t.nrows - 1].start;
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t bad = 0, n = 0;
	for (uint64_t pc = lo >= 64 ? lo - 64 : 0; pc < hi + 64; pc += 1 + (x >> 61)) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		bad += cfi_lookup(&m->t, pc) != cfi_lookup(&plain, pc);
		n++;
	}
	for (uint32_t i = 0; i < m->t.nrows; i++) {
		uint64_t pc = m->t.rows[i].start;
		bad += cfi_lookup(&m->t, pc) != cfi_lookup(&plain, pc);
		bad += pc && cfi_lookup(&m->t, pc - 1) != cfi_lookup(&plain, pc - 1);
		n += 2;
	}
	ok(m->t.index && bad == 0,
	   "%s: indexed lookups agree with binary search at %zu pcs (%u buckets of %u bytes)",
	   label, n, m->t.nbuckets, 1u << m->t.shift);
}

/* Same rows from a file, from the linear .eh_frame walk, and with an arena. */
static void check_variants(const char *label, struct mod *m)
{
	struct cfi_table f, lin, ar;
	if (!m || m->build_rc < 0)
		return;
	int rc = cfi_build_file(m->path, m->bias, 0, &f, &malloc_al);
	ok(rc == 0 && f.nrows == m->t.nrows &&
		   !memcmp(f.rows, m->t.rows, cfi_table_bytes(&f)) && f.text_lo == m->t.text_lo,
	   "%s: the table built from the file equals the in-memory one%s%s", label,
	   rc ? ": " : "", rc ? fth_errmsg() : "");
	rc = cfi_build_file(m->path, m->bias, CFI_BUILD_NO_HDR_TABLE, &lin, &malloc_al);
	ok(rc == 0 && lin.nrows == m->t.nrows &&
		   !memcmp(lin.rows, m->t.rows, cfi_table_bytes(&lin)),
	   "%s: walking .eh_frame without the search table gives the same rows", label);

	struct arena a;
	arena_init(&a, 1 << 20, 0);
	struct cfi_allocator aal = { arena_cb, &a };
	rc = cfi_build_file(m->path, m->bias, 0, &ar, &aal);
	ok(rc == 0 && ar.nrows == m->t.nrows && !memcmp(ar.rows, m->t.rows, cfi_table_bytes(&ar)),
	   "%s: an mmap arena works as the allocator", label);
	arena_release(&a);
}

/* ---- (b) unwinding a real stack -------------------------------------------------------------- */

#define MAX_FRAMES 128

struct trace {
	uint64_t pc[MAX_FRAMES];
	bool exact[MAX_FRAMES];
	int rc[MAX_FRAMES]; /* the step from this frame; 100: no module */
	int n;
};

static struct trace from_handler, from_uc, from_uc_cached[2];
static struct cfi_cache cache;
static struct cfi_stack stack_bounds;
static int replay_rc = 99;
static bool replay_same;
static volatile int chain_sink;
static volatile bool in_cmp_chain;

/* Frame R appended to T: its index. */
static int record_frame(struct trace *t, const struct cfi_regs *r)
{
	int i = t->n++;
	t->pc[i] = r->rip;
	t->exact[i] = r->exact;
	return i;
}

static void unwind(struct cfi_regs r, struct trace *t)
{
	t->n = 0;
	while (t->n < MAX_FRAMES) {
		int i = record_frame(t, &r);
		struct mod *m = mod_of(r.rip);
		if (!m) {
			t->rc[i] = 100;
			return;
		}
		struct cfi_regs before = r;
		t->rc[i] = cfi_step(&m->t, &r, &stack_bounds);
		if (t->rc[i] == CFI_STEP_SIGNAL) {
			/* again without any row: the trampoline's code bytes alone must suffice */
			struct cfi_table bare = m->t;
			struct cfi_regs again = before;
			bare.nrows = 0;
			replay_rc = cfi_step(&bare, &again, &stack_bounds);
			replay_same = again.rip == r.rip && again.rsp == r.rsp &&
				      again.rbp == r.rbp && again.exact;
		}
		if (t->rc[i] != CFI_STEP_OK && t->rc[i] != CFI_STEP_SIGNAL)
			return;
	}
}

static const struct cfi_table *find_table(void *ctx, uint64_t pc)
{
	struct mod *m = mod_of(pc);
	return m ? &m->t : NULL;
}

static void unwind_cached(struct cfi_regs r, struct trace *t)
{
	t->n = 0;
	while (t->n < MAX_FRAMES) {
		int i = record_frame(t, &r);
		t->rc[i] = cfi_step_cached(&cache, find_table, NULL, &r, &stack_bounds);
		if (t->rc[i] != CFI_STEP_OK && t->rc[i] != CFI_STEP_SIGNAL)
			return;
	}
}

/* The functions of the chain: external, so that dladdr() names them (-rdynamic). */
void cfi_chain_handler(int sig, siginfo_t *si, void *ucv);
int cfi_chain_top(int x);
int cfi_chain_a(int x);
int cfi_chain_b(int x);
int cfi_chain_cmp(const void *a, const void *b);
int cfi_chain_c(int x);
int cfi_chain_d(int x);

__attribute__((noinline)) void cfi_chain_handler(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;
	struct cfi_regs r;
	CFI_REGS_HERE(r);
	unwind(r, &from_handler);

	r.rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	r.rsp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	r.rbp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	r.exact = true;
	unwind(r, &from_uc);
	cfi_cache_clear(&cache);
	unwind_cached(r, &from_uc_cached[0]); /* cold */
	unwind_cached(r, &from_uc_cached[1]); /* warm */
	chain_sink += sig;
}

__attribute__((noinline, noclone)) int cfi_chain_d(int x)
{
	volatile char pad[40];
	pad[x & 31] = (char)x;
	raise(SIGUSR1);
	return pad[x & 31] + chain_sink + 1;
}

__attribute__((noinline, noclone)) int cfi_chain_c(int x)
{
	int r = cfi_chain_d(x + 1);
	chain_sink += r;
	return r * 3 + x;
}

__attribute__((noinline, noclone)) int cfi_chain_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	if (in_cmp_chain) {
		in_cmp_chain = false;
		chain_sink += cfi_chain_c(x);
	}
	return (x > y) - (x < y);
}

__attribute__((noinline, noclone)) int cfi_chain_b(int x)
{
	/* a variable-length array: this frame's CFA is RBP-based even without frame pointers */
	int n = x + 4;
	int v[n];
	for (int i = 0; i < n; i++)
		v[i] = (n - i) * 7 % 5;
	in_cmp_chain = true;
	qsort(v, (size_t)n, sizeof(v[0]), cfi_chain_cmp);
	chain_sink += v[0];
	return v[n - 1] + 1;
}

__attribute__((noinline, noclone)) int cfi_chain_a(int x)
{
	volatile long big[64];
	big[x & 63] = x;
	int r = cfi_chain_b(x + 1);
	return r + (int)big[x & 63];
}

__attribute__((noinline, noclone)) int cfi_chain_top(int x)
{
	int r = cfi_chain_a(x * 2);
	chain_sink += r;
	return r + 1;
}

static const char *sym_of(uint64_t pc, bool exact, const char **file)
{
	Dl_info info;
	*file = "?";
	if (!dladdr((void *)(uintptr_t)(exact ? pc : pc - 1), &info))
		return "?";
	*file = info.dli_fname ? info.dli_fname : "?";
	return info.dli_sname ? info.dli_sname : "?";
}

static void dump_trace(const struct trace *t)
{
	for (int i = 0; i < t->n; i++) {
		const char *file, *sym = sym_of(t->pc[i], t->exact[i], &file);
		const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
		diag("  #%d %#llx%s %s (%s) -> %d", i, (unsigned long long)t->pc[i],
		     t->exact[i] ? "*" : "", sym, base, t->rc[i]);
	}
}

/* Index of the first frame at or after FROM whose symbol is NAME, or -1. */
static int find_frame(const struct trace *t, int from, const char *name)
{
	for (int i = from < 0 ? 0 : from; i < t->n; i++) {
		const char *file;
		if (!strcmp(sym_of(t->pc[i], t->exact[i], &file), name))
			return i;
	}
	return -1;
}

static bool in_libc(uint64_t pc)
{
	struct mod *m = mod_of(pc);
	return m && strstr(m->path, "libc.so");
}

static int check_chain(const char *label, const struct trace *t, bool with_handler)
{
	static const char *const chain[] = { "cfi_chain_d", "cfi_chain_c", "cfi_chain_cmp",
					     "cfi_chain_b", "cfi_chain_a", "cfi_chain_top",
					     "test_unwind", "main" };
	int at = 0, idx[ARRAY_SIZE(chain)];
	bool order = true;
	if (with_handler) {
		at = find_frame(t, 0, "cfi_chain_handler");
		ok(at == 0, "%s: frame 0 is the handler", label);
		int sig = -1;
		for (int i = 0; i < t->n; i++)
			if (t->rc[i] == CFI_STEP_SIGNAL && sig < 0)
				sig = i;
		ok(sig > 0 && in_libc(t->pc[sig]) && sig + 1 < t->n && t->exact[sig + 1],
		   "%s: the step from the trampoline frame (in libc) crosses the signal", label);
		is_int(replay_rc, CFI_STEP_SIGNAL,
		       "%s: the trampoline is found by its code bytes too", label);
		ok(replay_same, "%s: ... with the same registers", label);
	}
	for (size_t k = 0; k < ARRAY_SIZE(chain); k++) {
		idx[k] = find_frame(t, at, chain[k]);
		if (idx[k] < 0 || (k > 0 && idx[k] != idx[k - 1] + 1 && k != 3 && k != 7))
			order = false;
		if (idx[k] >= 0)
			at = idx[k] + 1;
	}
	ok(order, "%s: d, c, cmp, [qsort], b, a, top, test_unwind, main appear in order", label);
	bool qsort_libc = idx[2] > 0 && idx[3] > idx[2] + 1;
	for (int i = idx[2] + 1; qsort_libc && i < idx[3]; i++)
		qsort_libc = in_libc(t->pc[i]);
	ok(qsort_libc, "%s: only libc frames (qsort) between cmp and b", label);
	bool libc_before = t->n > 0 && in_libc(t->pc[with_handler ? 2 : 0]);
	ok(libc_before, "%s: the interrupted frame is in libc (raise)", label);
	ok(t->n > 0 && t->rc[t->n - 1] == CFI_STEP_END,
	   "%s: the unwind ends at the outermost frame (RA undefined), after main", label);
	return order ? 0 : -1;
}

__attribute__((noinline)) int test_unwind(void);
__attribute__((noinline)) int test_unwind(void)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		pthread_attr_getstack(&attr, &addr, &size);
		stack_bounds.lo = (uint64_t)(uintptr_t)addr;
		stack_bounds.hi = stack_bounds.lo + size;
		pthread_attr_destroy(&attr);
	}
	/* the handler runs on an alternate stack: the step must cross from it to the thread's */
	static char alt[64 * 1024] __attribute__((aligned(16)));
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	sigaltstack(&ss, NULL);
	stack_bounds.alt_lo = (uint64_t)(uintptr_t)alt;
	stack_bounds.alt_hi = stack_bounds.alt_lo + sizeof(alt);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = cfi_chain_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	int r = cfi_chain_top(3);
	signal(SIGUSR1, SIG_DFL);

	if (check_chain("from the handler", &from_handler, true) < 0)
		dump_trace(&from_handler);
	if (check_chain("from the ucontext", &from_uc, false) < 0)
		dump_trace(&from_uc);
	/* after the signal frame, both walks see the same frames */
	int sig = 0;
	while (sig < from_handler.n && from_handler.rc[sig] != CFI_STEP_SIGNAL)
		sig++;
	bool same = from_handler.n - sig - 1 == from_uc.n;
	for (int i = 0; same && i < from_uc.n; i++)
		same = from_uc.pc[i] == from_handler.pc[sig + 1 + i];
	ok(same, "the walk from the handler continues exactly like the walk from the ucontext");
	for (int k = 0; k < 2; k++) {
		const struct trace *c = &from_uc_cached[k];
		same = c->n == from_uc.n;
		for (int i = 0; same && i < c->n; i++)
			same = c->pc[i] == from_uc.pc[i] && c->rc[i] == from_uc.rc[i];
		ok(same, "cfi_step_cached (%s cache) walks the same %d frames", k ? "warm" : "cold",
		   from_uc.n);
	}
	return r + chain_sink;
}

/* ---- (c) the .plt expression --------------------------------------------------------------- */

static bool find_section(const char *path, const char *want, uint64_t *addr, uint64_t *size)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	bool found = false;
	if (fd < 0 || fstat(fd, &st) < 0)
		return false;
	const uint8_t *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return false;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	const char *strs = (const char *)map + sh[eh->e_shstrndx].sh_offset;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		if (!strcmp(strs + sh[i].sh_name, want)) {
			*addr = sh[i].sh_addr;
			*size = sh[i].sh_size;
			found = true;
		}
	}
	munmap((void *)map, (size_t)st.st_size);
	return found;
}

static void test_plt(struct mod *self)
{
	uint64_t plt = 0, size = 0;
	if (!self || !find_section("/proc/self/exe", ".plt", &plt, &size) || size < 32) {
		skip("the test binary has no .plt", "PLT rows");
		return;
	}
	const struct cfi_row *r = cfi_lookup(&self->t, plt + 16);
	ok(r && r->kind == CFI_PLT && r->cfa_off == 8 && r->rbp == 11,
	   "the test binary's .plt stubs have the PLT kind (rsp+8, threshold 11)");
	if (!r || r->kind != CFI_PLT)
		return;
	/* a fake stack: at stub offset 0 RSP points at the return address; after the stub's
	 * push (offset 11) the return address is one word higher */
	uint64_t fake[4] = { 7, (uint64_t)(uintptr_t)&test_plt, 0, 0 };
	struct cfi_regs regs = { .rip = self->bias + plt + 16, .rsp = (uint64_t)(uintptr_t)&fake[1],
				 .exact = true, .rbp = 1234 };
	int rc = cfi_step(&self->t, &regs, NULL);
	ok(rc == CFI_STEP_OK && regs.rip == fake[1] && regs.rsp == (uint64_t)(uintptr_t)&fake[2] &&
		   regs.rbp == 1234,
	   "step at a stub's first instruction: RA at RSP");
	regs = (struct cfi_regs){ .rip = self->bias + plt + 16 + 11,
				  .rsp = (uint64_t)(uintptr_t)&fake[0],
				  .exact = true,
				  .rbp = 1234 };
	rc = cfi_step(&self->t, &regs, NULL);
	ok(rc == CFI_STEP_OK && regs.rip == fake[1] && regs.rsp == (uint64_t)(uintptr_t)&fake[2],
	   "step after the stub's push: RA at RSP+8");
}

/* ---- synthetic CFI: opcodes, encodings and row kinds that real binaries rarely show --------- */

/* A fake module: one R+X segment at vaddr 0; CFI at 0x2000 (.eh_frame_hdr) and 0x2100. */
#define SYN_SIZE 0x3000
#define SYN_HDR 0x2000
#define SYN_FRAME 0x2100

struct syn {
	uint8_t *mem;
	size_t pos; /* write cursor, as a vaddr */
	Elf64_Phdr ph[2];
	uint64_t fde_vaddr[8], fde_pc[8];
	int nfde;
};

static void put(struct syn *y, const void *p, size_t n)
{
	if (n)
		memcpy(y->mem + y->pos, p, n);
	y->pos += n;
}

static void put8(struct syn *y, uint8_t v)
{
	put(y, &v, 1);
}

static void put32(struct syn *y, uint32_t v)
{
	put(y, &v, 4);
}

static void put64(struct syn *y, uint64_t v)
{
	put(y, &v, 8);
}

/* A CIE: code align 1, data align -8, RA 16, "CFA = rsp+8, RA at CFA-8". */
static uint64_t syn_cie(struct syn *y, const char *aug, const uint8_t *augdata, size_t augn)
{
	uint64_t at = y->pos;
	put32(y, 0); /* length, patched */
	put32(y, 0); /* CIE id */
	put8(y, 1);
	put(y, aug, strlen(aug) + 1);
	put8(y, 1);    /* code alignment */
	put8(y, 0x78); /* data alignment -8 */
	put8(y, 16);   /* return address register (version 1: a byte) */
	if (aug[0] == 'z') {
		put8(y, (uint8_t)augn);
		put(y, augdata, augn);
	}
	static const uint8_t init[] = { 0x0c, 7, 8, 0x90, 1 }; /* def_cfa rsp 8; offset r16 c-8 */
	put(y, init, sizeof(init));
	while ((y->pos - at) % 8)
		put8(y, 0);
	uint32_t len = (uint32_t)(y->pos - at - 4);
	memcpy(y->mem + at, &len, 4);
	return at;
}

/* An FDE for [pc, pc + len) with pc_begin in ENC (pcrel sdata4 or absolute udata8). */
static void syn_fde(struct syn *y, uint64_t cie, uint8_t enc, uint64_t pc, uint32_t len,
		    const uint8_t *aug, size_t augn, const uint8_t *prog, size_t n)
{
	uint64_t at = y->pos;
	put32(y, 0);
	put32(y, (uint32_t)(y->pos - cie));
	if (enc == 0x1b) {
		put32(y, (uint32_t)(pc - y->pos));
		put32(y, len);
	} else {
		put64(y, (uint64_t)(uintptr_t)y->mem + pc); /* absolute: a run-time address */
		put64(y, len);
	}
	put8(y, (uint8_t)augn);
	put(y, aug, augn);
	put(y, prog, n);
	while ((y->pos - at) % 8)
		put8(y, 0);
	uint32_t l = (uint32_t)(y->pos - at - 4);
	memcpy(y->mem + at, &l, 4);
	y->fde_vaddr[y->nfde] = at;
	y->fde_pc[y->nfde++] = pc;
}

static void syn_make(struct syn *y, bool generic_hdr)
{
	memset(y, 0, sizeof(*y));
	y->mem = mmap(NULL, SYN_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	y->pos = SYN_FRAME;
	/* the .plt-style stub at 0x400 needs a 16-byte aligned bias: mmap gives a page */
	static const uint8_t aug_zr[] = { 0x1b };
	/* zPLR: personality indirect|pcrel|sdata4 (to zeroes), LSDA pcrel|sdata4, R udata8 */
	uint8_t aug_zplr[] = { 0x9b, 0, 0, 0, 0, 0x1b, 0x04 };
	uint64_t cie1 = syn_cie(y, "zR", aug_zr, sizeof(aug_zr));
	uint64_t cie2_at = y->pos;
	int32_t rel = (int32_t)(0x2ff0 - (cie2_at + 4 + 4 + 1 + 5 + 3 + 1 + 1));
	memcpy(aug_zplr + 1, &rel, 4);
	uint64_t cie2 = syn_cie(y, "zPLR", aug_zplr, sizeof(aug_zplr));
	uint64_t cie3 = syn_cie(y, "zRS", aug_zr, sizeof(aug_zr));

	/* A: push rbp; mov rsp,rbp; an early return under remember/restore_state */
	static const uint8_t a[] = {
		0x41, 0x0e, 16, 0x86, 2, /* +1: def_cfa_offset 16; rbp at c-16 */
		0x43, 0x0d, 6,		  /* +3: def_cfa_register rbp */
		0x50, 0x0a, 0x0c, 7, 8, 0xc6, /* +16: remember; def_cfa rsp 8; restore rbp */
		0x42, 0x0b,		  /* +2: restore_state */
	};
	syn_fde(y, cie1, 0x1b, 0x100, 0x40, NULL, 0, a, sizeof(a));
	/* B: stack realignment through r10 (DRAP), then sf forms, args_size, val_offset */
	static const uint8_t b[] = {
		0x02, 5, 0x0c, 10, 0,			 /* +5: def_cfa r10 0 */
		0x44, 0x10, 6, 2, 0x76, 0,		 /* +4: rbp at *(rbp + 0) */
		0x0f, 3, 0x76, 0x78, 0x06,		 /* CFA = *(rbp - 8) */
		0x03, 0x20, 0, 0x12, 7, 0x7e, 0x11, 6, 2, /* +32: def_cfa_sf rsp 16; rbp c-16 */
		0x2e, 8,				 /* GNU_args_size 8 */
		0x04, 8, 0, 0, 0, 0x14, 6, 2,		 /* +8: val_offset rbp: not expressible */
	};
	syn_fde(y, cie1, 0x1b, 0x140, 0x40, NULL, 0, b, sizeof(b));
	/* C: the outermost frame: RA undefined (zPLR CIE, absolute pcs, an LSDA pointer) */
	static const uint8_t c[] = { 0x07, 16 };
	static const uint8_t c_aug[] = { 0, 0, 0, 0 };
	syn_fde(y, cie2, 0x04, 0x200, 0x10, c_aug, sizeof(c_aug), c, sizeof(c));
	/* D: a signal trampoline ("S") */
	syn_fde(y, cie3, 0x1b, 0x300, 0x10, NULL, 0, NULL, 0);
	/* E: the .plt expression, then set_loc and def_cfa_offset on an expression (invalid) */
	uint8_t e[] = { 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
			0x01, 0, 0, 0, 0, 0x0e, 24 };
	/* set_loc's operand is pcrel sdata4: relative to its own position in the FDE */
	uint64_t e_field = y->pos + 4 + 4 + 4 + 4 + 1 + 14;
	int32_t to = (int32_t)(0x408 - e_field);
	memcpy(e + 14, &to, 4);
	syn_fde(y, cie1, 0x1b, 0x400, 0x20, NULL, 0, e, sizeof(e));
	/* F: the remaining register rules, one per byte */
	static const uint8_t f[] = {
		0x41, 0x05, 6, 2,	   /* offset_extended rbp c-16 */
		0x41, 0x08, 6,		   /* same_value rbp */
		0x41, 0x09, 6, 3,	   /* register rbp = rbx: not expressible */
		0x41, 0x06, 6,		   /* restore_extended rbp: the CIE's (no rule) */
		0x41, 0x07, 6,		   /* undefined rbp */
		0x41, 0x2f, 6, 2,	   /* GNU_negative_offset_extended rbp: c+16 */
		0x41, 0x13, 0x7e,	   /* def_cfa_offset_sf -2: rsp+16 */
		0x41, 0x16, 16, 2, 0x77, 8, /* val_expression RA: not expressible */
	};
	syn_fde(y, cie1, 0x1b, 0x500, 0x40, NULL, 0, f, sizeof(f));
	put32(y, 0); /* the terminator */

	/* .eh_frame_hdr */
	y->pos = SYN_HDR;
	if (!generic_hdr) {
		static const uint8_t h[] = { 1, 0x1b, 0x03, 0x3b };
		put(y, h, 4);
		put32(y, (uint32_t)(SYN_FRAME - y->pos));
		put32(y, (uint32_t)y->nfde);
		for (int i = 0; i < y->nfde; i++) {
			put32(y, (uint32_t)(y->fde_pc[i] - SYN_HDR));
			put32(y, (uint32_t)(y->fde_vaddr[i] - SYN_HDR));
		}
	} else {
		/* absolute udata8 pointers, an sdata8 count and an absolute sdata8 table */
		static const uint8_t h[] = { 1, 0x04, 0x0c, 0x0c };
		put(y, h, 4);
		put64(y, (uint64_t)(uintptr_t)y->mem + SYN_FRAME);
		put64(y, (uint64_t)y->nfde);
		for (int i = 0; i < y->nfde; i++) {
			put64(y, (uint64_t)(uintptr_t)y->mem + y->fde_pc[i]);
			put64(y, (uint64_t)(uintptr_t)y->mem + y->fde_vaddr[i]);
		}
	}
	y->ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_vaddr = 0,
				 .p_memsz = SYN_SIZE, .p_filesz = SYN_SIZE };
	y->ph[1] = (Elf64_Phdr){ .p_type = PT_GNU_EH_FRAME, .p_flags = PF_R, .p_vaddr = SYN_HDR,
				 .p_memsz = y->pos - SYN_HDR };
}

struct want {
	uint32_t pc;
	int kind, off, flags, rbp;
};

static void check_rows(const char *label, const struct cfi_table *t)
{
	static const struct want w[] = {
		{ 0x0ff, -1, 0, 0, 0 },
		{ 0x100, CFI_RSP, 8, 0, 0 },
		{ 0x101, CFI_RSP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x103, CFI_RSP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x104, CFI_RBP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x114, CFI_RSP, 8, 0, 0 },
		{ 0x116, CFI_RBP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x13f, CFI_RBP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x140, CFI_RSP, 8, 0, 0 },
		{ 0x145, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x149, CFI_RBP_DEREF, -8, CFI_F_RBP_REGREL, 0 },
		{ 0x169, CFI_RSP, 16, CFI_F_RBP_SAVED, -2 },
		{ 0x171, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x17f, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x180, -1, 0, 0, 0 },
		{ 0x200, CFI_RSP, 8, CFI_F_RA_UNDEF, 0 },
		{ 0x20f, CFI_RSP, 8, CFI_F_RA_UNDEF, 0 },
		{ 0x210, -1, 0, 0, 0 },
		{ 0x300, CFI_SIGNAL, 0, 0, 0 },
		{ 0x400, CFI_PLT, 8, 0, 11 },
		{ 0x407, CFI_PLT, 8, 0, 11 },
		{ 0x408, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x41f, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x420, -1, 0, 0, 0 },
		{ 0x500, CFI_RSP, 8, 0, 0 },
		{ 0x501, CFI_RSP, 8, CFI_F_RBP_SAVED, -2 },
		{ 0x502, CFI_RSP, 8, 0, 0 },
		{ 0x503, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x504, CFI_RSP, 8, 0, 0 },
		{ 0x505, CFI_RSP, 8, CFI_F_RBP_UNDEF, 0 },
		{ 0x506, CFI_RSP, 8, CFI_F_RBP_SAVED, 2 },
		{ 0x507, CFI_RSP, 16, CFI_F_RBP_SAVED, 2 },
		{ 0x508, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x53f, CFI_UNKNOWN, 0, 0, 0 },
		{ 0x540, -1, 0, 0, 0 },
	};
	int bad = 0;
	for (size_t i = 0; i < ARRAY_SIZE(w); i++) {
		const struct cfi_row *r = cfi_lookup(t, w[i].pc);
		bool good = w[i].kind < 0 ? r == NULL
					  : r && r->kind == w[i].kind && r->cfa_off == w[i].off &&
						    r->flags == w[i].flags && r->rbp == w[i].rbp &&
						    (r->kind >= CFI_SIGNAL || r->ra == -1 ||
						     (r->flags & CFI_F_RA_UNDEF));
		if (!good && !bad++)
			diag("%s: at %#x: kind %d off %d flags %#x rbp %d", label, w[i].pc,
			     r ? r->kind : -1, r ? r->cfa_off : 0, r ? r->flags : 0,
			     r ? r->rbp : 0);
	}
	ok(bad == 0, "%s: rows at %zu pcs as expected", label, ARRAY_SIZE(w));
}

static void test_synthetic(void)
{
	struct syn y;
	struct cfi_table t;
	for (int generic = 0; generic < 2; generic++) {
		syn_make(&y, generic);
		struct cfi_image img = { .bias = (uint64_t)(uintptr_t)y.mem,
					 .phdr = y.ph,
					 .phnum = 2,
					 .name = "synthetic" };
		const char *label = generic ? "synthetic, absolute pointers" : "synthetic";
		int rc = cfi_build(&img, &t, &malloc_al);
		ok(rc == 0 && t.nfdes == 6 && t.nbad == 0, "%s: built (%u FDEs, %u rows)%s%s", label, t.nfdes,
		   t.nrows, rc ? ": " : "", rc ? fth_errmsg() : "");
		check_rows(label, &t);
		img.flags = CFI_BUILD_NO_HDR_TABLE;
		struct cfi_table lin;
		rc = cfi_build(&img, &lin, &malloc_al);
		ok(rc == 0 && lin.nrows == t.nrows &&
			   !memcmp(lin.rows, t.rows, cfi_table_bytes(&t)),
		   "%s: the same rows from a linear walk of .eh_frame", label);
		if (generic)
			break;

		/* damaged CFI: every build must fail cleanly or give sorted rows */
		uint8_t *saved = malloc(SYN_SIZE);
		memcpy(saved, y.mem, SYN_SIZE);
		uint64_t x = 0x2545f4914f6cdd1dULL;
		int clean = 0, failed = 0, rounds = 3000;
		for (int k = 0; k < rounds; k++) {
			memcpy(y.mem, saved, SYN_SIZE);
			for (int m = 0; m < 1 + k % 4; m++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				size_t at = SYN_HDR + (size_t)(x % (y.pos - SYN_HDR + 0x200));
				if (at >= SYN_FRAME + 0x200)
					at = SYN_FRAME + (at % 0x200);
				y.mem[at] = (uint8_t)(x >> 32);
			}
			struct cfi_table d;
			img.flags = k & 1 ? CFI_BUILD_NO_HDR_TABLE : 0;
			if (cfi_build(&img, &d, &malloc_al) < 0) {
				failed++;
				continue;
			}
			clean += rows_sorted(&d);
			free((void *)d.rows);
			free((void *)d.index);
		}
		img.flags = 0;
		ok(clean + failed == rounds,
		   "%d damaged images: %d failed cleanly, %d gave sorted rows", rounds, failed,
		   clean);
		memcpy(y.mem, saved, SYN_SIZE);
		free(saved);

		/* steps on fake stacks (no bounds) */
		uint64_t bias = t.bias, st[8] = { 0 };
		uint64_t ra = (uint64_t)(uintptr_t)&test_synthetic;
		/* RBP-based: CFA = rbp + 16, saved rbp at CFA - 16, RA at CFA - 8 */
		st[0] = 0x1111;
		st[1] = ra;
		struct cfi_regs r = { .rip = bias + 0x105, .rsp = (uint64_t)(uintptr_t)&st[0] - 64,
				      .rbp = (uint64_t)(uintptr_t)&st[0], .exact = true };
		rc = cfi_step(&t, &r, NULL);
		ok(rc == CFI_STEP_OK && r.rip == ra && r.rsp == (uint64_t)(uintptr_t)&st[2] &&
			   r.rbp == 0x1111,
		   "step with CFA = RBP+16 and RBP saved");
		/* a return address at 0x105 looks up 0x104 */
		r = (struct cfi_regs){ .rip = bias + 0x105, .rsp = (uint64_t)(uintptr_t)&st[0] - 64,
				       .rbp = (uint64_t)(uintptr_t)&st[0], .exact = false };
		ok(cfi_step(&t, &r, NULL) == CFI_STEP_OK && r.rip == ra,
		   "a caller's pc is looked up at pc-1");
		r = (struct cfi_regs){ .rip = bias + 0x104, .rsp = (uint64_t)(uintptr_t)&st[0],
				       .rbp = 0x2222, .exact = false };
		rc = cfi_step(&t, &r, NULL);
		ok(rc == CFI_STEP_OK && r.rip == ra && r.rsp == (uint64_t)(uintptr_t)&st[2] &&
			   r.rbp == 0x1111,
		   "pc-1 of 0x104 is in the RSP+16 row: RBP saved at CFA-16 is read");
		/* DRAP: CFA = *(rbp - 8), caller's RBP = *(rbp) */
		uint64_t frame[4] = { 0, 0, 0x3333, 0 };
		frame[1] = (uint64_t)(uintptr_t)&st[4]; /* *(rbp - 8): the CFA */
		st[3] = ra;				/* CFA - 8 */
		r = (struct cfi_regs){ .rip = bias + 0x150, .rsp = (uint64_t)(uintptr_t)&frame[0],
				       .rbp = (uint64_t)(uintptr_t)&frame[2], .exact = true };
		rc = cfi_step(&t, &r, NULL);
		ok(rc == CFI_STEP_OK && r.rip == ra && r.rsp == (uint64_t)(uintptr_t)&st[4] &&
			   r.rbp == 0x3333,
		   "step with CFA = *(RBP-8) and RBP at *(RBP)");
		r = (struct cfi_regs){ .rip = bias + 0x146, .rsp = 0x1000, .exact = true };
		is_int(cfi_step(&t, &r, NULL), CFI_STEP_UNKNOWN, "CFA = r10: UNKNOWN");
		r = (struct cfi_regs){ .rip = bias + 0x201, .rsp = 0x1000, .exact = true };
		is_int(cfi_step(&t, &r, NULL), CFI_STEP_END, "RA undefined: END");
		/* the signal row: RSP points at a ucontext */
		ucontext_t uc;
		memset(&uc, 0, sizeof(uc));
		uc.uc_mcontext.gregs[REG_RIP] = 0x123456;
		uc.uc_mcontext.gregs[REG_RSP] = 0x7000;
		uc.uc_mcontext.gregs[REG_RBP] = 0x4444;
		r = (struct cfi_regs){ .rip = bias + 0x301, .rsp = (uint64_t)(uintptr_t)&uc };
		rc = cfi_step(&t, &r, NULL);
		ok(rc == CFI_STEP_SIGNAL && r.rip == 0x123456 && r.rsp == 0x7000 &&
			   r.rbp == 0x4444 && r.exact,
		   "an S-augmented FDE: registers from the ucontext, exact pc");
		/* the .plt row in a module at a 16-byte aligned bias */
		st[0] = ra;
		r = (struct cfi_regs){ .rip = bias + 0x400,
				       .rsp = (uint64_t)(uintptr_t)&st[0],
				       .exact = true };
		ok(cfi_step(&t, &r, NULL) == CFI_STEP_OK && r.rip == ra, "the PLT row steps");
		munmap(y.mem, SYN_SIZE);
	}
	munmap(y.mem, SYN_SIZE);
}

/* ---- (d) and API edges ----------------------------------------------------------------------- */

static void test_edges(struct mod *self)
{
	struct cfi_table empty = { 0 };
	ok(cfi_lookup(&empty, 0x1000) == NULL, "an empty table finds nothing");
	ok(cfi_lookup(&self->t, 0) == NULL, "offset 0 (the ELF header) has no row");
	ok(cfi_lookup(&self->t, self->t.text_hi + 0x100000) == NULL, "far past the text: no row");
	ok(cfi_lookup(&self->t, (uint64_t)UINT32_MAX + 0x1000) == NULL, "beyond 4 GiB: no row");
	struct cfi_regs regs = { .rip = self->bias, .rsp = 0x1000, .exact = true };
	is_int(cfi_step(&self->t, &regs, NULL), CFI_STEP_NO_ROW, "step without a row: NO_ROW");
	ok(regs.rip == self->bias && regs.rsp == 0x1000, "... and the registers are unchanged");

	/* a read outside the stack bounds is refused */
	uint64_t top = (uint64_t)(uintptr_t)&cfi_chain_top;
	const struct cfi_row *r = cfi_lookup(&self->t, top - self->bias);
	ok(r && r->kind == CFI_RSP, "cfi_chain_top starts with an RSP row");
	uint64_t word[2] = { 0, 0 };
	struct cfi_stack tiny = { .lo = 16, .hi = 32 };
	regs = (struct cfi_regs){ .rip = (uint64_t)(uintptr_t)&cfi_chain_top,
				  .rsp = (uint64_t)(uintptr_t)word, .exact = true };
	is_int(cfi_step(&self->t, &regs, &tiny), CFI_STEP_BAD, "a read outside the stack: BAD");
	struct cfi_stack fits = { .lo = (uint64_t)(uintptr_t)word,
				  .hi = (uint64_t)(uintptr_t)word + sizeof(word) };
	is_int(cfi_step(&self->t, &regs, &fits), CFI_STEP_BAD, "a return address of 0: BAD");
	word[0] = (uint64_t)(uintptr_t)&test_edges;
	is_int(cfi_step(&self->t, &regs, &fits), CFI_STEP_OK, "inside the bounds: OK");
	ok(regs.rip == word[0] && regs.rsp == (uint64_t)(uintptr_t)&word[1] && !regs.exact,
	   "caller: RIP from the stack, RSP = CFA, not exact");
}

/* Tables kept in files: the same rows and index back, and nothing from a damaged file. */
static void same_table(const char *what, const struct cfi_table *a, const struct cfi_table *b)
{
	ok(a->nrows == b->nrows && a->nfdes == b->nfdes && a->nunknown == b->nunknown &&
		   a->nbad == b->nbad && a->text_lo == b->text_lo && a->text_hi == b->text_hi &&
		   !memcmp(a->rows, b->rows, cfi_table_bytes(a)) && (a->index != NULL) == (b->index != NULL) &&
		   (!a->index || (a->nbuckets == b->nbuckets && a->shift == b->shift &&
				  !memcmp(a->index, b->index, cfi_index_bytes(a)))),
	   "%s: the table read back equals the one written", what);
}

static void damage(const char *path, off_t at, uint8_t xor_mask)
{
	int fd = open(path, O_RDWR);
	uint8_t c = 0;
	bool done = fd >= 0 && pread(fd, &c, 1, at) == 1;
	c ^= xor_mask;
	done = done && pwrite(fd, &c, 1, at) == 1;
	if (fd >= 0)
		close(fd);
	if (!done)
		ok(false, "damage byte %lld of %s", (long long)at, path);
}

static void test_cache(struct mod *libc, struct mod *small)
{
	char dir[512], path[600];
	snprintf(dir, sizeof(dir), "%s/t-cfi-cache.XXXXXX", tap_tmpdir());
	if (!mkdtemp(dir)) {
		ok(false, "mkdtemp %s", dir);
		return;
	}
	static const uint8_t key[20] = { 0xab, 0xcd, 1, 2, 3 }, other[20] = { 0xab, 0xce };
	struct cfi_table t;
	memset(&t, 0, sizeof(t));
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), 0, "no file: 0, build the table");
	is_int(cfi_cache_store(dir, key, sizeof(key), &libc->t), 0, "libc's table stored");
	snprintf(path, sizeof(path), "%s/abcd010203000000000000000000000000000000.cfi", dir);
	ok(access(path, R_OK) == 0, "named by the key in hex");
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), 1, "and loaded");
	same_table("libc", &libc->t, &t);
	ok(libc->t.index != NULL, "libc's table has an index");
	/* A lookup through the mapped table answers as the built one. */
	int same = 0, tries = 0;
	for (uint64_t pc = libc->lo; pc < libc->hi; pc += 997, tries++)
		same += cfi_lookup(&t, pc - libc->bias) == NULL
				? cfi_lookup(&libc->t, pc - libc->bias) == NULL
				: !memcmp(cfi_lookup(&t, pc - libc->bias),
					  cfi_lookup(&libc->t, pc - libc->bias), sizeof(struct cfi_row));
	is_int(same, tries, "every lookup of %d in libc gives the same row", tries);
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), 0, "another key: no file");

	/* A small table without an index. */
	struct cfi_table tiny = small->t;
	tiny.nrows = 3;
	struct cfi_row rows[3];
	memcpy(rows, small->t.rows, sizeof(rows));
	rows[2].kind = CFI_NONE;
	tiny.rows = rows;
	tiny.index = NULL;
	tiny.nbuckets = tiny.shift = 0;
	is_int(cfi_cache_store(dir, other, sizeof(other), &tiny), 0, "a table without index stored");
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), 1, "and loaded");
	same_table("three rows", &tiny, &t);

	/* A file whose checksum is right but whose table would send the handler astray. */
	struct cfi_row bad_rows[8];
	for (int i = 0; i < 8; i++)
		bad_rows[i] = (struct cfi_row){ .start = 16u * (uint32_t)i, .kind = CFI_RSP, .cfa_off = 8 };
	bad_rows[7].kind = CFI_NONE;
	uint32_t bad_index[8] = { 0, 1, 2, 3, 4, 5, 6, 9 };
	struct cfi_table bad = { .rows = bad_rows, .nrows = 8, .index = bad_index, .nbuckets = 7,
				 .shift = 4 };
	is_int(cfi_cache_store(dir, other, sizeof(other), &bad), 0, "a table with a bad index stored");
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), -1, "refused on load: %s", fth_errmsg());
	bad_index[7] = 7;
	bad_rows[3].start = 100;
	cfi_cache_store(dir, other, sizeof(other), &bad);
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), -1, "rows out of order: %s",
	       fth_errmsg());
	bad_rows[3].start = 48;
	bad_rows[7].kind = CFI_RSP;
	cfi_cache_store(dir, other, sizeof(other), &bad);
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), -1, "not closed: %s", fth_errmsg());
	bad_rows[7].kind = CFI_NONE;
	cfi_cache_store(dir, other, sizeof(other), &bad);
	is_int(cfi_cache_load(dir, other, sizeof(other), &t), 1, "mended: loaded");

	/* Damage: a flipped byte anywhere (header, rows, index), truncation, a wrong key. */
	struct stat st;
	stat(path, &st);
	off_t spots[] = { 0, 12, 20, 60, 100, st.st_size / 2, st.st_size - 1 };
	for (size_t i = 0; i < ARRAY_SIZE(spots); i++) {
		damage(path, spots[i], 0x10);
		is_int(cfi_cache_load(dir, key, sizeof(key), &t), -1, "byte %lld flipped: refused (%s)",
		       (long long)spots[i], fth_errmsg());
		damage(path, spots[i], 0x10);
	}
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), 1, "restored: loaded again");
	ok(truncate(path, st.st_size - 16) == 0, "truncated");
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), -1, "a truncated file is refused: %s",
	       fth_errmsg());
	ok(truncate(path, 10) == 0, "cut to 10 bytes");
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), -1, "refused: %s", fth_errmsg());
	char other_path[600];
	snprintf(other_path, sizeof(other_path), "%s/abce000000000000000000000000000000000000.cfi", dir);
	ok(rename(other_path, path) == 0, "another module's file under this key");
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), -1, "refused: %s", fth_errmsg());
	ok(strstr(fth_errmsg(), "another module") != NULL, "the message says so");
	is_int(cfi_cache_store("/nonexistent-dir", key, sizeof(key), &libc->t), -1,
	       "an unwritable directory: %s", fth_errmsg());
	unlink(path);
	rmdir(dir);
}

/*
 * Wait until PATH's change time is old enough for a stamp (cfi-cache.c: 10 ms, 2 s on a file
 * system with whole-second times), with a margin.
 */
static bool settle(const char *path)
{
	struct stat st;
	for (int i = 0; i < 1000 && stat(path, &st) == 0; i++) {
		struct timespec now;
		clock_gettime(CLOCK_REALTIME_COARSE, &now);
		long long age = (now.tv_sec - st.st_ctim.tv_sec) * 1000000000ll +
				(now.tv_nsec - st.st_ctim.tv_nsec);
		if (age > (st.st_ctim.tv_nsec ? 30000000ll : 2500000000ll))
			return true;
		usleep(5000);
	}
	return false;
}

/*
 * Stamps: a file checked in full once is taken on its header by later processes of the run
 * (2), as long as it is unchanged; a changed file is checked in full again and a damaged one
 * refused.  A process reads the stamps once per directory name, so each "later process" here
 * names the directory differently (extra slashes).
 */
static void test_stamps(struct mod *libc)
{
	char dir[512], path[600], stamps[600], later[600];
	snprintf(dir, sizeof(dir), "%s/t-cfi-stamps.XXXXXX", tap_tmpdir());
	if (!mkdtemp(dir)) {
		ok(false, "mkdtemp %s", dir);
		return;
	}
	static const uint8_t key[20] = { 0x5a, 0x17 };
	snprintf(path, sizeof(path), "%s/5a17000000000000000000000000000000000000.cfi", dir);
	snprintf(stamps, sizeof(stamps), "%s/verified", dir);
	struct cfi_table t;
	struct stat st;
	is_int(cfi_cache_store(dir, key, sizeof(key), &libc->t), 0, "libc's table stored");
	ok(settle(path), "the clock has moved past the file's change time");
	is_int(cfi_cache_load(dir, key, sizeof(key), &t), 1, "first load: checked in full");
	memset(&st, 0, sizeof(st));
	stat(stamps, &st);
	is_int(st.st_size, 72, "and stamped: one record");
	snprintf(later, sizeof(later), "%s/", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 2, "a later process takes the stamp");
	same_table("stamped", &libc->t, &t);
	off_t middle = (off_t)(96 + cfi_table_bytes(&libc->t) / 2);
	damage(path, middle, 0x04);
	snprintf(later, sizeof(later), "%s//", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), -1,
	       "a byte flipped after stamping: refused (%s)", fth_errmsg());
	ok(strstr(fth_errmsg(), "checksum") != NULL, "by its checksum");
	damage(path, middle, 0x04);
	snprintf(later, sizeof(later), "%s///", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 1, "restored: checked in full again");
	/* A damaged stamp matches no file: the table is checked again. */
	ok(settle(path), "settled again");
	snprintf(later, sizeof(later), "%s////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 1, "checked in full and stamped");
	snprintf(later, sizeof(later), "%s/////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 2, "then taken on its stamp");
	ok(stat(stamps, &st) == 0, "stamps exist");
	for (off_t at = 0; at < st.st_size; at++)
		damage(stamps, at, 0x01);
	snprintf(later, sizeof(later), "%s//////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 1, "damaged stamps: checked in full");
	/* A replaced file (a new inode) is checked in full. */
	is_int(cfi_cache_store(dir, key, sizeof(key), &libc->t), 0, "stored again");
	ok(settle(path), "settled");
	snprintf(later, sizeof(later), "%s///////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 1, "a replaced file: checked in full");
	/* A link put at the stamps' name is neither read nor written through. */
	char elsewhere[600];
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
	close(open(elsewhere, O_WRONLY | O_CREAT | O_EXCL, 0600));
	unlink(stamps);
	ok(symlink(elsewhere, stamps) == 0, "a link at the stamps' name");
	snprintf(later, sizeof(later), "%s////////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), 1, "no stamp read: checked in full");
	ok(stat(elsewhere, &st) == 0 && st.st_size == 0, "and no stamp written through the link");
	/* A link in place of a table is not mapped. */
	unlink(stamps);
	ok(rename(path, elsewhere) == 0 && symlink(elsewhere, path) == 0, "a link at a table's name");
	snprintf(later, sizeof(later), "%s/////////", dir);
	is_int(cfi_cache_load(later, key, sizeof(key), &t), -1, "refused: %s", fth_errmsg());
	unlink(path);
	unlink(elsewhere);
	unlink(stamps);
	is_int(rmdir(dir), 0, "nothing else was left");
}

/* Set PATH's access and modification times to AGO seconds before now. */
static void age(const char *path, long ago)
{
	struct timespec now, ts[2];
	clock_gettime(CLOCK_REALTIME, &now);
	ts[0] = ts[1] = (struct timespec){ now.tv_sec - ago, 0 };
	utimensat(AT_FDCWD, path, ts, 0);
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* The launcher bounds a directory kept between runs: least recently used tables first. */
static void test_tidy(struct mod *small)
{
	char dir[512], paths[4][600], stamps[600], old_tmp[600], new_tmp[600];
	snprintf(dir, sizeof(dir), "%s/t-cfi-tidy.XXXXXX", tap_tmpdir());
	if (!mkdtemp(dir)) {
		ok(false, "mkdtemp %s", dir);
		return;
	}
	uint8_t keys[4][20];
	struct cfi_table t;
	for (int i = 0; i < 4; i++) {
		memset(keys[i], 0, sizeof(keys[i]));
		keys[i][0] = (uint8_t)(0x70 + i);
		snprintf(paths[i], sizeof(paths[i]), "%s/%02x00000000000000000000000000000000000000.cfi",
			 dir, 0x70 + i);
		is_int(cfi_cache_store(dir, keys[i], sizeof(keys[i]), &small->t), 0, "table %d stored", i);
		age(paths[i], 100 * (i + 1)); /* table 0 was used last */
	}
	/* Tables 0 and 1 are checked (and stamped): reading them makes them no older. */
	for (int i = 0; i < 2; i++) {
		ok(settle(paths[i]), "table %d settled", i);
		is_int(cfi_cache_load(dir, keys[i], sizeof(keys[i]), &t), 1, "table %d checked", i);
	}
	snprintf(stamps, sizeof(stamps), "%s/verified", dir);
	struct stat st;
	memset(&st, 0, sizeof(st));
	stat(stamps, &st);
	is_int(st.st_size, 2 * 72, "two stamps");
	snprintf(old_tmp, sizeof(old_tmp), "%s/7100.cfi.99.tmp", dir);
	snprintf(new_tmp, sizeof(new_tmp), "%s/7200.cfi.98.tmp", dir);
	close(open(old_tmp, O_WRONLY | O_CREAT, 0600));
	close(open(new_tmp, O_WRONLY | O_CREAT, 0600));
	age(old_tmp, 7200);

	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok(dirfd >= 0, "the directory opened");
	is_int(cfi_cache_tidy(dirfd, dir, 2, UINT64_MAX), 2, "at most 2 tables: 2 removed");
	ok(exists(paths[0]) && exists(paths[1]) && !exists(paths[2]) && !exists(paths[3]),
	   "the two least recently used are gone");
	ok(!exists(old_tmp) && exists(new_tmp), "a dead writer's file is gone, a live one's kept");
	memset(&st, 0, sizeof(st));
	stat(stamps, &st);
	is_int(st.st_size, 2 * 72, "the stamps of the tables kept are kept");

	is_int(cfi_cache_store(dir, keys[1], sizeof(keys[1]), &small->t), 0, "table 1 replaced");
	is_int(cfi_cache_tidy(dirfd, dir, 256, UINT64_MAX), 0, "within bounds: nothing removed");
	memset(&st, 0, sizeof(st));
	stat(stamps, &st);
	is_int(st.st_size, 72, "the stamp of the replaced file is gone");
	is_int(cfi_cache_load(dir, keys[0], sizeof(keys[0]), &t), 2, "the other is still taken");
	stat(paths[0], &st);
	is_int(cfi_cache_tidy(dirfd, dir, 256, (uint64_t)st.st_size), 1,
	       "room for one table: 1 removed");
	ok(exists(paths[1]) && !exists(paths[0]), "the one written last is kept");
	/* Damaged stamps: whole records that match nothing go, and so does a torn tail. */
	int fd = open(stamps, O_WRONLY | O_APPEND);
	ok(fd >= 0, "the stamps file is there");
	for (int i = 0; i < 1000 && fd >= 0; i++) {
		uint8_t junk[37];
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)(i * 31 + k * 7);
		if (write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk))
			break;
	}
	if (fd >= 0)
		close(fd);
	is_int(cfi_cache_tidy(dirfd, dir, 256, UINT64_MAX), 0, "damaged stamps: no table removed");
	memset(&st, 0, sizeof(st));
	stat(stamps, &st);
	is_int(st.st_size, 0, "and the stamps file holds no record of theirs");
	is_int(cfi_cache_tidy(-1, "/nonexistent-dir", 2, 1), -1, "no directory: %s", fth_errmsg());
	ok(strstr(fth_errmsg(), "/nonexistent-dir") != NULL, "the message names it");
	close(dirfd);
	unlink(paths[1]);
	unlink(new_tmp);
	unlink(stamps);
	is_int(rmdir(dir), 0, "nothing else was left");
}

int main(void)
{
	dl_iterate_phdr(add_mod, NULL);
	struct mod *self = &mods[0];
	struct mod *libc = find_mod_by_name("libc.so.6");
	struct mod *zstd = find_mod_by_name("libzstd");
	if (!zstd && dlopen("libzstd.so.1", RTLD_NOW)) {
		nmods = 0;
		dl_iterate_phdr(add_mod, NULL);
		self = &mods[0];
		libc = find_mod_by_name("libc.so.6");
		zstd = find_mod_by_name("libzstd");
	}
	int built = 0;
	for (int i = 0; i < nmods; i++)
		built += mods[i].build_rc == 0;
	is_int(built, nmods, "tables built for all %d loaded modules", nmods);
	ok(self->t.nrows > 10 && libc && libc->t.nrows > 1000 && zstd && zstd->t.nrows > 100,
	   "the test binary, libc and libzstd have tables");
	diag("table memory for %d modules: %zu bytes", nmods, alloc_bytes);

	check_against_readelf("test binary", self);
	check_against_readelf("libc.so.6", libc);
	check_against_readelf("libzstd", zstd);
	check_index("test binary", self);
	check_index("libc.so.6", libc);
	check_variants("test binary", self);
	check_variants("libc.so.6", libc);

	test_unwind();
	test_plt(self);
	test_edges(self);
	test_synthetic();
	test_cache(libc, self);
	test_stamps(libc);
	test_tidy(self);
	return done_testing();
}
