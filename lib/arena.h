/* SPDX-License-Identifier: MIT */
/*
 * arena.h: an mmap-backed bump allocator that is async-signal-safe and reentrant.
 *
 * measure's signal handlers and interposed functions allocate from a per-thread arena: no
 * malloc, no locks.  An allocation is a compare-and-swap on the current block's cursor, so a
 * signal that interrupts an allocation and allocates itself is safe.  A full block is replaced
 * by a fresh mmap'ed one.  Memory is returned only by arena_release(), all at once.
 */
#ifndef FATHOM_ARENA_H
#define FATHOM_ARENA_H

#include <stdbool.h>
#include <stddef.h>

struct arena_block;

struct arena {
	struct arena_block *head; /* owned: newest block, linked to older ones (atomic access) */
	size_t block_size;	  /* bytes mapped per block (a multiple of the page size) */
	size_t mapped;		  /* total bytes mapped, for statistics and limits (atomic) */
	size_t limit;			  /* refuse to map beyond this many bytes (0: no limit) */
	bool not_inherited;		  /* blocks are left out of forked children */
};

/* Set up an empty arena; nothing is mapped until the first allocation. */
void arena_init(struct arena *a, size_t block_size, size_t limit);
/*
 * Blocks mapped from now on are not inherited by forked children (MADV_DONTFORK), for memory
 * that a child never reads: fork then copies no page-table entries for it, and the parent
 * keeps writing to it without a copy-on-write fault a page after each fork.
 */
void arena_not_inherited(struct arena *a);
/*
 * Forget the blocks without unmapping them: later allocations map a fresh block.  For a
 * forked child, whose inherited blocks stay readable: its own allocations then go to pages of
 * its own instead of copies of its parent's, each of which costs a copy-on-write fault.
 */
void arena_start_over(struct arena *a);
/*
 * SIZE bytes aligned to ALIGN (a power of two up to the page size), zero-filled.  Returns NULL
 * when mmap fails or the limit would be exceeded; never calls malloc.
 */
void *arena_alloc(struct arena *a, size_t size, size_t align);
/*
 * Map the pages of [P, P + SIZE) now, in one system call, where the kernel can (Linux 5.14 and
 * later); otherwise nothing happens.  For memory about to be written: each page faulted in
 * one by one costs an exception, which a virtual machine makes expensive (about 10 us here,
 * against 0.5 us a page this way).  Async-signal-safe.
 */
void arena_prefault(const void *p, size_t size);
/* Unmap every block.  Not for signal context while other code may still use the arena. */
void arena_release(struct arena *a);
size_t arena_mapped(const struct arena *a);

#endif
