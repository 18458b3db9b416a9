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
/* Each of the N strings at S that is NULL becomes a new empty string (a string field that a
 * file left out reads as ""); XSTRDUP_EMPTY_IF_NULL(&a, &b...) for a list of them. */
void xstrdup_empty_if_null(char **const *s, size_t n);
#define XSTRDUP_EMPTY_IF_NULL(...)                                    \
	xstrdup_empty_if_null((char **const[]){ __VA_ARGS__ },       \
			      sizeof((char **[]){ __VA_ARGS__ }) / sizeof(char **))
/* Free the N strings of STRINGS, then STRINGS itself. */
void free_strings(char **strings, size_t n);

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

/* A growing array of uint32_t (indexes, ids): V[0..N) in room for CAP; { 0 } is empty. */
struct u32_vec {
	uint32_t *v;
	uint32_t n, cap;
};

static inline void u32_vec_push(struct u32_vec *u, uint32_t x)
{
	ALLOC_GROW(u->v, u->n + 1, u->cap);
	u->v[u->n++] = x;
}

/*
 * Make room in ARRAY, which holds the N elements appended to it one at a time from NULL, for
 * one more: the growth of ALLOC_GROW (8, then doubling) where the room is not kept, since it
 * follows from N.
 */
#define ALLOC_GROW_BY_COUNT(array, n)                                                       \
	do {                                                                                \
		size_t n_ = (size_t)(n);                                                    \
		if (n_ == 0 || (n_ >= 8 && (n_ & (n_ - 1)) == 0))                           \
			(array) = xreallocarray((array), n_ ? 2 * n_ : 8, sizeof(*(array))); \
	} while (0)

#define FREE_AND_NULL(p) \
	do {             \
		free(p); \
		(p) = NULL; \
	} while (0)

#endif
