/* SPDX-License-Identifier: MIT */
/*
 * cfi.h: per-module unwind "recipe" tables built from .eh_frame CFI (cfi_build(), outside the
 * handler), and the async-signal-safe lookup and one-frame step that measure's sample handler
 * runs on them (x86-64 only).  The rows, their special kinds and how signal frames are stepped:
 * doc/internals.md, 2.3, "The rows" and "Signal frames".
 */
#ifndef FATHOM_CFI_H
#define FATHOM_CFI_H

#include <elf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a row tells cfi_step() to do. */
enum cfi_kind {
	CFI_NONE = 0,	   /* no FDE covers these pcs (a gap, or past the last FDE) */
	CFI_RSP = 1,	   /* CFA = RSP + cfa_off */
	CFI_RBP = 2,	   /* CFA = RBP + cfa_off */
	CFI_RBP_DEREF = 3, /* CFA = *(RBP + cfa_off): "DW_OP_breg6 N; DW_OP_deref" (realigned) */
	CFI_PLT = 4,	   /* CFA = RSP + cfa_off + ((RIP & 15) >= plt_k ? 8 : 0): .plt stubs */
	CFI_SIGNAL = 5,	   /* a signal trampoline (an FDE of an "S" CIE): registers in a ucontext */
	CFI_UNKNOWN = 6,   /* a rule this model cannot express: the caller must fall back */
	CFI_RBX = 7,	   /* CFA = RBX + cfa_off (ld.so's lazy-binding resolver realigns so) */
};

/* Row flags. */
#define CFI_F_RBP_SAVED 0x01  /* the caller's RBP is at CFA + 8*rbp */
#define CFI_F_RBP_REGREL 0x02 /* the caller's RBP is at RBP + 8*rbp (DW_CFA_expression breg6) */
#define CFI_F_RBP_UNDEF 0x04  /* the caller's RBP is undefined (the step sets it to 0) */
#define CFI_F_RA_UNDEF 0x08   /* the return address is undefined: the outermost frame */
#define CFI_F_RBX_SAVED 0x10  /* the caller's RBX is at CFA + 8*rbx */

/* One row: 16 bytes.  Unused fields are 0 so that identical rows compare equal with memcmp. */
struct cfi_row {
	uint32_t start;	 /* first pc covered, as an offset from the module's load bias */
	int32_t cfa_off; /* see enum cfi_kind */
	uint8_t kind;	 /* enum cfi_kind */
	uint8_t flags;	 /* CFI_F_* */
	int8_t rbp;	 /* CFI_F_RBP_SAVED or _REGREL: the slot in 8-byte units; CFI_PLT: plt_k */
	int8_t ra;	 /* return address at CFA + 8*ra (normally -1) */
	int8_t rbx;	 /* with CFI_F_RBX_SAVED: the slot in 8-byte units */
	uint8_t pad[3];
};

/* A module's table: rows sorted by start, ending with a CFI_NONE row. */
struct cfi_table {
	const struct cfi_row *rows; /* from the allocator */
	uint32_t nrows;
	uint32_t nfdes;	       /* FDEs that produced rows */
	uint64_t bias;	       /* the load bias: pc offsets are relative to it */
	uint64_t text_lo;      /* executable PT_LOAD extent, as offsets from bias */
	uint64_t text_hi;
	uint32_t nunknown;     /* rows of kind CFI_UNKNOWN, for statistics */
	uint32_t nbad;	       /* damaged FDEs that were skipped (their pcs have no rows) */
	/*
	 * A bucket index over the rows, so that a lookup is one index load plus a search of a
	 * couple of rows: bucket b covers offsets rows[0].start + (b << shift) on, and index[b] is
	 * the row that covers the bucket's first byte (b = 0 .. nbuckets).  NULL: binary search.
	 */
	const uint32_t *index;
	uint32_t nbuckets;
	uint32_t shift;
};

/* A loaded module, as dl_iterate_phdr() describes it. */
struct cfi_image {
	uint64_t bias;		   /* dlpi_addr */
	const Elf64_Phdr *phdr;	   /* dlpi_phdr */
	unsigned phnum;		   /* dlpi_phnum */
	const char *name;	   /* for error messages only (may be NULL) */
	unsigned flags;		   /* CFI_BUILD_* */
};

/* Ignore .eh_frame_hdr's search table and walk .eh_frame linearly (mainly for tests). */
#define CFI_BUILD_NO_HDR_TABLE 0x1

/*
 * Memory for the table: ALLOC(CTX, SIZE, ALIGN) returns SIZE bytes aligned to ALIGN, or NULL.
 * Builders never free: with malloc, release table.rows and table.index with free() (and, after
 * a CFI_BUILD_NO_HDR_TABLE build or for a module without a search table, a temporary FDE list
 * of 16 bytes per FDE is not returned).  measure passes its mmap arena.
 */
struct cfi_allocator {
	void *(*alloc)(void *ctx, size_t size, size_t align);
	void *ctx;
};

/*
 * Build the table of the module IMG, which must be loaded in this process: its PT_GNU_EH_FRAME
 * leads to .eh_frame_hdr and .eh_frame.  A module without PT_GNU_EH_FRAME gets an empty table
 * (every lookup fails).  A damaged FDE is skipped and counted in nbad; a damaged .eh_frame_hdr
 * fails the build.  Not async-signal-safe in general: it calls the allocator, uses about 4 KiB
 * of stack and, without a search table, qsort; it does not call malloc itself.  Rows are
 * produced in two passes over the CFI (count, then fill), so the allocator is asked for exact
 * sizes.  Returns 0, or -1 with fth_error().
 */
int cfi_build(const struct cfi_image *img, struct cfi_table *out, const struct cfi_allocator *al);

/*
 * Build the table of the ELF file PATH without loading it (for tests and offline tools): it is
 * mapped read-only, .eh_frame_hdr is found through the section headers (or PT_GNU_EH_FRAME) and
 * offsets are relative to the file's link-time addresses.  BIAS is stored in the table.
 */
int cfi_build_file(const char *path, uint64_t bias, unsigned flags, struct cfi_table *out,
		   const struct cfi_allocator *al);

/*
 * The row that covers PC_OFFSET (an offset from the load bias), or NULL when no FDE covers it.
 * Async-signal-safe.
 */
const struct cfi_row *cfi_lookup(const struct cfi_table *t, uint64_t pc_offset);

/* The registers of one frame. */
struct cfi_regs {
	uint64_t rip, rsp, rbp;
	uint64_t rbx; /* tracked only for CFAs based on it (CFI_RBX) */
	/*
	 * true when RIP is the exact pc of an interrupted instruction (the first frame, or a frame
	 * that a signal interrupted); false when it is a return address, so that the lookup uses
	 * RIP - 1 (the call instruction).  cfi_step() sets it for the caller.
	 */
	bool exact;
};

/*
 * Where cfi_step() may read the stack: [lo, hi) and, if the thread has one, its alternate signal
 * stack [alt_lo, alt_hi).  A read outside both is refused (CFI_STEP_BAD).  Pass NULL to read
 * without checks (only with a SIGSEGV guard, or in tests).
 */
struct cfi_stack {
	uint64_t lo, hi;
	uint64_t alt_lo, alt_hi;
};

/* cfi_step() results. */
enum {
	CFI_STEP_OK = 0,	 /* REGS now describes the caller */
	CFI_STEP_SIGNAL = 1,	 /* crossed a signal frame: REGS is the interrupted frame, exact */
	CFI_STEP_END = 2,	 /* the outermost frame (RA undefined): REGS unchanged */
	CFI_STEP_NO_ROW = -1,	 /* no FDE covers the pc */
	CFI_STEP_UNKNOWN = -2,	 /* the row's rule is not expressible (CFI_UNKNOWN) */
	CFI_STEP_BAD = -3,	 /* a read outside the stack, a CFA that does not grow, RA < 4096 */
};

/*
 * Step from the frame REGS to its caller, with T the table of the module that contains
 * REGS->rip.  The signal trampoline (glibc's __restore_rt: "mov $15,%rax; syscall") is
 * recognised by its CFI_SIGNAL row or, when it has no usable row, by its code bytes (read from
 * the module's executable segment): its frame's RSP points at the kernel's ucontext, whose
 * saved RIP, RSP and RBP become the caller's.  On failure REGS is unchanged.
 * Async-signal-safe.
 */
int cfi_step(const struct cfi_table *t, struct cfi_regs *regs, const struct cfi_stack *stack);

/*
 * An optional per-thread cache of recipes by pc, for the hot path: a hit costs one load of the
 * slot and the step's own stack reads, with no module search and no binary search.  Rows of
 * kinds CFI_RSP, CFI_RBP, CFI_RBP_DEREF and CFI_PLT are cached; the others always take the
 * slow path.  Keys are absolute pcs: clear the cache whenever a module is unloaded (or the
 * load map changes).  A cache must not be shared between threads; a signal that interrupts
 * cfi_step_cached() on the same thread is safe (the slot is invalidated while written).
 */
#define CFI_CACHE_SLOTS 1024 /* a power of two */

struct cfi_cache_slot {
	uint64_t key; /* rip << 1 | exact; 0: empty */
	struct cfi_row row;
};

struct cfi_cache {
	struct cfi_cache_slot slot[CFI_CACHE_SLOTS]; /* 24 KiB */
};

/* The table of the module that contains PC, or NULL: called on cache misses only. */
typedef const struct cfi_table *(*cfi_find_fn)(void *ctx, uint64_t pc);

/* Empty CACHE (zero-filled memory is an empty cache, too).  Async-signal-safe. */
void cfi_cache_clear(struct cfi_cache *cache);

/*
 * cfi_step() through CACHE: on a miss, FIND(CTX, regs->rip) gives the table (NULL:
 * CFI_STEP_NO_ROW), and a cacheable row is remembered.  Same results as cfi_step().
 * Async-signal-safe if FIND is.
 */
int cfi_step_cached(struct cfi_cache *cache, cfi_find_fn find, void *ctx, struct cfi_regs *regs,
		    const struct cfi_stack *stack);

/* ---- tables kept in files (cfi-cache.c) ---- */

#define CFI_CACHE_KEY_MAX 32 /* a build-id */

/*
 * The table of the module named KEY (its build-id) from the file DIR/HEX.cfi, mapped read-only
 * into OUT (rows and index; the caller sets OUT->bias).  Returns 1 after checking the whole
 * file (and stamping it in DIR/verified), 2 when a stamp shows that an earlier process checked
 * this same unchanged file (only its header is checked), 0 when there is no such file, or -1
 * with fth_error() when it exists but is damaged or not this version's.  Not thread-safe
 * (measure calls it under the load map's lock).
 */
int cfi_cache_load(const char *dir, const uint8_t *key, unsigned key_len, struct cfi_table *out);
/* Write T as DIR/HEX.cfi (a new file renamed into place).  Returns 0, or -1 with fth_error(). */
int cfi_cache_store(const char *dir, const uint8_t *key, unsigned key_len,
		    const struct cfi_table *t);

/*
 * Keep the directory DIRFD (DIR, for messages), of tables kept between runs, within
 * MAX_TABLES files and MAX_BYTES: the least recently used tables go first (the later of their
 * access and modification times).  Also removes the temporary files of writers that died over
 * an hour ago, and the stamps of tables that are gone or changed.  Every name is used
 * relative to DIRFD and never through a link.  For the launcher, after a run: it allocates
 * and reads the directory, which the preloaded library never does.  Returns the number of
 * tables removed, or -1 with fth_error() when the directory cannot be read.
 */
int cfi_cache_tidy(int dirfd, const char *dir, unsigned max_tables, uint64_t max_bytes);

/* Bytes of the table's rows. */
static inline size_t cfi_table_bytes(const struct cfi_table *t)
{
	return (size_t)t->nrows * sizeof(struct cfi_row);
}

/* Bytes of the table's bucket index. */
static inline size_t cfi_index_bytes(const struct cfi_table *t)
{
	return t->index ? ((size_t)t->nbuckets + 1) * sizeof(uint32_t) : 0;
}

#endif
