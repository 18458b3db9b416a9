/* SPDX-License-Identifier: MIT */
/*
 * xalloc.h: allocation for the offline tools (struct, prof, view, tests).  Running out of
 * memory is fatal there: these print a message and exit, so callers never check for NULL.
 * measure's preloaded library never uses them; it allocates from lib/arena.h.
 */
#ifndef FATHOM_XALLOC_H
#define FATHOM_XALLOC_H

void *xmalloc(size_t size);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t size);
/* xrealloc of N elements of SIZE bytes, failing on multiplication overflow. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* DIR/NAME in a new string. */
char *xpath_join(const char *dir, const char *name);

/* Grow ARRAY (with ALLOC slots) so that it holds at least NEED elements, doubling. */
#define ALLOC_GROW(array, need, alloc)                                                  \
	do {                                                                             \
		if ((size_t)(need) > (size_t)(alloc)) {                                  \
			size_t grow_to_ = (size_t)(alloc) < 8 ? 8 : (size_t)(alloc) * 2; \
			if (grow_to_ < (size_t)(need))                                   \
				grow_to_ = (size_t)(need);                               \
			(array) = xreallocarray((array), grow_to_, sizeof(*(array)));    \
			(alloc) = grow_to_;                                              \
		}                                                                        \
	} while (0)

#define FREE_AND_NULL(p) \
	do {             \
		free(p); \
		(p) = NULL; \
	} while (0)

#endif
