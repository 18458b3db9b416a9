/* SPDX-License-Identifier: MIT */
/* arena.c: the lock-free mmap bump allocator of arena.h. */
#include "compat.h"
#include "arena.h"

#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

struct arena_block {
	uintptr_t cursor; /* atomic access */
	uintptr_t end;
	size_t size; /* bytes mapped, header included */
	struct arena_block *older;
};

void arena_init(struct arena *a, size_t block_size, size_t limit)
{
	size_t page = 4096;
	if (block_size < 16 * page)
		block_size = 16 * page;
	a->head = NULL;
	a->block_size = (block_size + page - 1) & ~(page - 1);
	a->mapped = 0;
	a->limit = limit;
	a->not_inherited = false;
}

void arena_not_inherited(struct arena *a)
{
	a->not_inherited = true;
}

void arena_start_over(struct arena *a)
{
	__atomic_store_n(&a->head, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&a->mapped, 0, __ATOMIC_RELAXED);
}

static struct arena_block *map_block(struct arena *a, size_t need)
{
	size_t size = a->block_size;
	size_t min = need + sizeof(struct arena_block) + 4096;
	if (size < min)
		size = (min + 4095) & ~(size_t)4095;
	if (a->limit && a->mapped + size > a->limit)
		return NULL;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (a->not_inherited)
		(void)madvise(p, size, MADV_DONTFORK);
	arena_prefault(p, sizeof(struct arena_block)); /* the header is written now */
	struct arena_block *b = p;
	b->cursor = (uintptr_t)(b + 1);
	b->end = (uintptr_t)p + size;
	b->size = size;
	b->older = NULL;
	return b;
}

void *arena_alloc(struct arena *a, size_t size, size_t align)
{
	if (align == 0)
		align = 1;
	/*
	 * Nothing this big can be mapped; refusing it here also keeps size + align and the block
	 * size computed in map_block() from wrapping around, which made the loop below map
	 * block after block (until the limit, or forever) for sizes near SIZE_MAX.
	 */
	if (size > SIZE_MAX / 2)
		return NULL;
	for (;;) {
		struct arena_block *b = __atomic_load_n(&a->head, __ATOMIC_ACQUIRE);
		if (b) {
			uintptr_t cur = __atomic_load_n(&b->cursor, __ATOMIC_ACQUIRE);
			uintptr_t start = (cur + align - 1) & ~(uintptr_t)(align - 1);
			if (start + size <= b->end && start + size >= start) {
				if (__atomic_compare_exchange_n(&b->cursor, &cur, start + size, false,
								__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
					return (void *)start;
				continue; /* a nested allocation moved the cursor: try again */
			}
		}
		struct arena_block *fresh = map_block(a, size + align);
		if (!fresh)
			return NULL;
		fresh->older = b;
		if (__atomic_compare_exchange_n(&a->head, &b, fresh, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&a->mapped, fresh->size, __ATOMIC_RELAXED);
		} else {
			munmap(fresh, fresh->size);
		}
	}
}

void arena_prefault(const void *p, size_t size)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095;
	uintptr_t hi = ((uintptr_t)p + size + 4095) & ~(uintptr_t)4095;
	if (p && hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head;
	a->head = NULL;
	while (b) {
		struct arena_block *older = b->older;
		munmap(b, b->size);
		b = older;
	}
	a->mapped = 0;
}

size_t arena_mapped(const struct arena *a)
{
	return __atomic_load_n(&a->mapped, __ATOMIC_RELAXED);
}
