/* SPDX-License-Identifier: MIT */
/* strtab.c: interned strings for struct (names and file paths become small integers). */
#include "compat.h"
#include "struct.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	hmap_init(&t->by_hash);
	hmap_init(&t->by_pointer);
}

void strtab_release(struct strtab *t)
{
	free_strings(t->v, t->n);
	hmap_release(&t->by_hash);
	hmap_release(&t->by_pointer);
	memset(t, 0, sizeof(*t));
}

static uint64_t hash_string(const char *s)
{
	return hmap_mix(hmap_fnv1a(HMAP_FNV_BASIS, s, strlen(s)));
}

uint32_t strtab_intern(struct strtab *t, const char *s)
{
	uint64_t h = hash_string(s), id;
	while (hmap_get(&t->by_hash, h, &id)) {
		if (!strcmp(t->v[id], s))
			return (uint32_t)id;
		h = hmap_mix(h + 1);
	}
	ALLOC_GROW(t->v, t->n + 1, t->cap);
	t->v[t->n] = xstrdup(s);
	hmap_put(&t->by_hash, h, t->n);
	return t->n++;
}

uint32_t strtab_intern_stable(struct strtab *t, const char *s)
{
	uint64_t id;
	if (hmap_get(&t->by_pointer, (uint64_t)(uintptr_t)s, &id))
		return (uint32_t)id;
	id = strtab_intern(t, s);
	hmap_put(&t->by_pointer, (uint64_t)(uintptr_t)s, id);
	return (uint32_t)id;
}

char **strtab_detach(struct strtab *t, uint32_t *n)
{
	char **v = t->v;
	*n = t->n;
	t->v = NULL;
	t->n = t->cap = 0;
	strtab_release(t);
	strtab_init(t);
	return v;
}

static int by_string(const void *a, const void *b)
{
	return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

void strtab_sort(struct strtab *t, uint32_t **rank)
{
	char ***order = xmalloc((t->n ? t->n : 1) * sizeof(*order));
	for (uint32_t i = 0; i < t->n; i++)
		order[i] = &t->v[i];
	sort_array(order, t->n, sizeof(*order), by_string);
	*rank = xmalloc((t->n ? t->n : 1) * sizeof(uint32_t));
	char **sorted = xmalloc((t->n ? t->n : 1) * sizeof(char *));
	for (uint32_t i = 0; i < t->n; i++) {
		(*rank)[order[i] - t->v] = i;
		sorted[i] = *order[i];
	}
	free(order);
	uint32_t n = t->n;
	free(t->v);
	t->v = NULL;
	t->n = t->cap = 0;
	hmap_release(&t->by_hash);
	hmap_release(&t->by_pointer);
	hmap_init(&t->by_hash);
	hmap_init(&t->by_pointer);
	for (uint32_t i = 0; i < n; i++) {
		strtab_intern(t, sorted[i]);
		free(sorted[i]);
	}
	free(sorted);
}
