/* SPDX-License-Identifier: MIT */
/*
 * cfi-bench.c: the CFI unwinder's benchmark: table build time and size per loaded module, and
 * the cost per frame of cfi_step on a 200-deep recursion.
 *
 *   cfi-bench [--runs R] [--depth D]
 *
 * The program links libc, libm, libzstd and libdw (and so libelf, libz, liblzma, libbz2) and
 * calls one function of each so that they stay loaded.  For every module that dl_iterate_phdr
 * reports, it builds the table R times (malloc allocator) and prints the median build time,
 * FDEs, rows and bytes.  Then it recurses D levels (-O2, no frame pointers), captures the
 * registers at the leaf and, still at the leaf, unwinds the whole stack to _start many times
 * with cfi_step; each sample times 50 unwinds, and the median over R samples is reported in ns
 * per frame (the frame -> module lookup included), next to the cost of cfi_lookup alone, of
 * cfi_step_cached with a warm per-thread cache, and of one dependent load per frame (what a
 * frame-pointer walk costs on this machine: a calibration for noisy hosts).
 * Target: 5-10 ns per frame.
 */
#include "compat.h"
#include "bench-stats.h"
#include "cfi.h"
#include "cfi-here.h"
#include "error.h"

#include <elfutils/libdwfl.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#define MAX_RUNS 1001
#define MAX_MODS 64
#define MAX_FRAMES 1024
#define UNWINDS_PER_SAMPLE 50

struct mod {
	char name[256];
	uint64_t lo, hi;
	struct cfi_table t;
	struct cfi_image img;
	double build_ms;
	size_t build_bytes;
};

static struct mod mods[MAX_MODS];
static int nmods, runs = 101, depth = 200;
static size_t alloc_bytes;

static void *malloc_cb(void *ctx, size_t size, size_t align)
{
	void *p = NULL;
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align, size ? size : 1))
		return NULL;
	alloc_bytes += size;
	return p;
}

static const struct cfi_allocator al = { malloc_cb, NULL };

static int add_mod(struct dl_phdr_info *info, size_t size, void *data)
{
	if (nmods >= MAX_MODS)
		return 1;
	struct mod *m = &mods[nmods++];
	const char *n = info->dlpi_name[0] ? info->dlpi_name : "(main program)";
	const char *slash = strrchr(n, '/');
	snprintf(m->name, sizeof(m->name), "%s", slash ? slash + 1 : n);
	m->img = (struct cfi_image){ .bias = info->dlpi_addr, .phdr = info->dlpi_phdr,
				     .phnum = info->dlpi_phnum, .name = m->name };
	return 0;
}

static void bench_build(void)
{
	static double t[MAX_RUNS];
	double total = 0;
	size_t total_bytes = 0, total_rows = 0;
	printf("%-26s %6s %7s %9s %8s %7s %10s\n", "module", "FDEs", "rows", "bytes*", "B/FDE",
	       "unknown", "build ms");
	for (int i = 0; i < nmods; i++) {
		struct mod *m = &mods[i];
		for (int r = 0; r < runs; r++) {
			struct cfi_table tab;
			size_t before = alloc_bytes;
			double t0 = bench_now();
			if (cfi_build(&m->img, &tab, &al) < 0) {
				fprintf(stderr, "cfi-bench: %s\n", fth_errmsg());
				exit(1);
			}
			t[r] = bench_now() - t0;
			m->build_bytes = alloc_bytes - before;
			if (r + 1 < runs)
				free((void *)tab.rows);
			else
				m->t = tab;
		}
		m->build_ms = bench_median(t, runs) * 1e3;
		m->lo = m->t.bias + m->t.text_lo;
		m->hi = m->t.bias + m->t.text_hi;
		total += m->build_ms;
		total_bytes += cfi_table_bytes(&m->t) + cfi_index_bytes(&m->t);
		total_rows += m->t.nrows;
		size_t bytes = cfi_table_bytes(&m->t) + cfi_index_bytes(&m->t);
		printf("%-26s %6u %7u %9zu %8.1f %7u %10.3f\n", m->name, m->t.nfdes, m->t.nrows,
		       bytes, m->t.nfdes ? (double)bytes / m->t.nfdes : 0.0, m->t.nunknown,
		       m->build_ms);
	}
	printf("%-26s %6s %7zu %9zu %8s %7s %10.3f\n", "total", "", total_rows, total_bytes, "", "",
	       total);
	printf("(* rows of 16 bytes plus the bucket index)\n");
}

/* ---- the unwind ------------------------------------------------------------------------------ */

static struct mod *mod_of(uint64_t pc, struct mod *hint)
{
	if (hint && pc >= hint->lo && pc < hint->hi)
		return hint;
	for (int i = 0; i < nmods; i++)
		if (pc >= mods[i].lo && pc < mods[i].hi)
			return &mods[i];
	return NULL;
}

/* A full unwind from R: returns the number of frames, and the last step's result in *RC. */
static int unwind(struct cfi_regs r, uint64_t *pcs, int *rc)
{
	struct mod *m = NULL;
	int n = 0;
	*rc = CFI_STEP_NO_ROW;
	while (n < MAX_FRAMES) {
		pcs[n++] = r.rip;
		m = mod_of(r.rip, m);
		if (!m)
			break;
		*rc = cfi_step(&m->t, &r, NULL);
		if (*rc != CFI_STEP_OK && *rc != CFI_STEP_SIGNAL)
			break;
	}
	return n;
}

static struct cfi_cache cache;

static const struct cfi_table *find_table(void *ctx, uint64_t pc)
{
	struct mod *m = mod_of(pc, NULL);
	return m ? &m->t : NULL;
}

/* The same walk through the per-thread recipe cache. */
static int unwind_cached(struct cfi_regs r, uint64_t *pcs, int *rc)
{
	int n = 0;
	*rc = CFI_STEP_NO_ROW;
	while (n < MAX_FRAMES) {
		pcs[n++] = r.rip;
		*rc = cfi_step_cached(&cache, find_table, NULL, &r, NULL);
		if (*rc != CFI_STEP_OK && *rc != CFI_STEP_SIGNAL)
			break;
	}
	return n;
}

static volatile int sink;

/* Seconds per frame of UNWINDS_PER_SAMPLE unwinds from R by WALK (the PCS, RC and FRAMES of
 * the last). */
static double per_frame(int (*walk)(struct cfi_regs, uint64_t *, int *),
			const struct cfi_regs *r, uint64_t *pcs, int *rc, int *frames)
{
	double t0 = bench_now();
	for (int k = 0; k < UNWINDS_PER_SAMPLE; k++)
		*frames = walk(*r, pcs, rc);
	return (bench_now() - t0) / ((double)UNWINDS_PER_SAMPLE * *frames);
}

static __attribute__((noinline)) void at_leaf(const struct cfi_regs *r)
{
	static uint64_t pcs[MAX_FRAMES];
	static double t[MAX_RUNS], tl[MAX_RUNS];
	int rc, frames = unwind(*r, pcs, &rc);
	struct mod *self = &mods[0];

	printf("\nunwind from a %d-deep recursion: %d frames, last step %s\n", depth, frames,
	       rc == CFI_STEP_END ? "END (outermost frame)" : "FAILED");
	if (rc != CFI_STEP_END)
		exit(1);
	for (int s = 0; s < runs; s++) {
		t[s] = per_frame(unwind, r, pcs, &rc, &frames);
		/* the binary search alone, on the same pcs */
		double t0 = bench_now();
		uintptr_t acc = 0;
		for (int k = 0; k < UNWINDS_PER_SAMPLE; k++)
			for (int i = 0; i < frames; i++)
				acc += (uintptr_t)cfi_lookup(&self->t, pcs[i] - self->t.bias - 1);
		tl[s] = (bench_now() - t0) / ((double)UNWINDS_PER_SAMPLE * frames);
		sink += (int)acc;
	}
	printf("cfi_step (with module lookup): median %.2f ns/frame, %.2f us per %d-frame stack "
	       "(%d samples x %d unwinds)\n",
	       bench_median(t, runs) * 1e9, bench_median(t, runs) * 1e6 * frames, frames, runs,
	       UNWINDS_PER_SAMPLE);
	printf("cfi_lookup alone (%u rows):  median %.2f ns/frame\n", self->t.nrows,
	       bench_median(tl, runs) * 1e9);

	int cached_frames = unwind_cached(*r, pcs, &rc);
	if (rc != CFI_STEP_END || cached_frames != frames) {
		printf("cached unwind FAILED: %d frames\n", cached_frames);
		exit(1);
	}
	for (int s = 0; s < runs; s++)
		t[s] = per_frame(unwind_cached, r, pcs, &rc, &frames);
	printf("cfi_step_cached (warm %d-slot cache): median %.2f ns/frame, %.2f us per stack\n",
	       CFI_CACHE_SLOTS, bench_median(t, runs) * 1e9, bench_median(t, runs) * 1e6 * frames);

	/* calibration: one dependent load per frame (what a frame-pointer walk costs) */
	static uint64_t chain[MAX_FRAMES * 8];
	for (int i = 0; i < frames; i++)
		chain[i * 8] = (uint64_t)(uintptr_t)&chain[(i + 1) * 8];
	chain[frames * 8] = 0;
	for (int s = 0; s < runs; s++) {
		double t0 = bench_now();
		for (int k = 0; k < UNWINDS_PER_SAMPLE; k++) {
			const uint64_t *p = chain;
			while (p)
				p = (const uint64_t *)(uintptr_t)*(const volatile uint64_t *)p;
		}
		tl[s] = (bench_now() - t0) / ((double)UNWINDS_PER_SAMPLE * frames);
	}
	printf("calibration, one dependent load per frame: median %.2f ns/frame\n",
	       bench_median(tl, runs) * 1e9);
}

static __attribute__((noinline)) int recurse(int n)
{
	volatile int pad[6];
	pad[n % 6] = n;
	if (n == 0) {
		struct cfi_regs r;
		CFI_REGS_HERE(r);
		at_leaf(&r);
		return pad[0];
	}
	return recurse(n - 1) + pad[n % 6];
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--depth") && i + 1 < argc)
			depth = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: cfi-bench [--runs R] [--depth D]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > MAX_RUNS || depth < 1 || depth > MAX_FRAMES - 32) {
		fprintf(stderr, "cfi-bench: --runs 1..%d, --depth 1..%d\n", MAX_RUNS,
			MAX_FRAMES - 32);
		return 2;
	}
	/* keep libm, libzstd and libdw loaded */
	volatile double x = 0.5;
	printf("libm cos(0.5)=%.3f, zstd %u, libdw %s\n", cos(x), ZSTD_versionNumber(),
	       dwfl_version(NULL));

	dl_iterate_phdr(add_mod, NULL);
	printf("table build, median of %d runs:\n", runs);
	bench_build();
	sink += recurse(depth);
	return 0;
}
