/* SPDX-License-Identifier: MIT */
/* hmap.c: the 64-bit open-addressing hash map of hmap.h (UINT64_MAX marks an empty slot). */
#include "compat.h"
#include "hmap.h"
#include "xalloc.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY UINT64_MAX

void hmap_init(struct hmap *m)
{
	memset(m, 0, sizeof(*m));
}

void hmap_release(struct hmap *m)
{
	free(m->keys);
	free(m->values);
	hmap_init(m);
}

size_t hmap_size(const struct hmap *m)
{
	return m->count + (m->has_max ? 1 : 0);
}

static size_t find_slot(const uint64_t *keys, size_t cap, uint64_t key)
{
	size_t mask = cap - 1;
	size_t i = hmap_mix(key) & mask;
	while (keys[i] != key && keys[i] != EMPTY)
		i = (i + 1) & mask;
	return i;
}

static void grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 16;
	uint64_t *keys = xreallocarray(NULL, cap, sizeof(*keys));
	uint64_t *values = xreallocarray(NULL, cap, sizeof(*values));
	memset(keys, 0xff, cap * sizeof(*keys));
	for (size_t i = 0; i < m->cap; i++) {
		if (m->keys[i] == EMPTY)
			continue;
		size_t j = find_slot(keys, cap, m->keys[i]);
		keys[j] = m->keys[i];
		values[j] = m->values[i];
	}
	free(m->keys);
	free(m->values);
	m->keys = keys;
	m->values = values;
	m->cap = cap;
}

bool hmap_get(const struct hmap *m, uint64_t key, uint64_t *value)
{
	if (key == EMPTY) {
		if (m->has_max && value)
			*value = m->max_value;
		return m->has_max;
	}
	if (!m->cap)
		return false;
	size_t i = find_slot(m->keys, m->cap, key);
	if (m->keys[i] == EMPTY)
		return false;
	if (value)
		*value = m->values[i];
	return true;
}

uint64_t *hmap_upsert(struct hmap *m, uint64_t key, uint64_t value, bool *inserted)
{
	bool dummy;
	if (!inserted)
		inserted = &dummy;
	if (key == EMPTY) {
		*inserted = !m->has_max;
		if (!m->has_max) {
			m->has_max = true;
			m->max_value = value;
		}
		return &m->max_value;
	}
	size_t i = 0;
	/* Updating a present key is not an insertion: it must not grow (and move) the table. */
	if (m->cap) {
		i = find_slot(m->keys, m->cap, key);
		if (m->keys[i] == key) {
			*inserted = false;
			return &m->values[i];
		}
	}
	if ((m->count + 1) * 4 > m->cap * 3) {
		grow(m);
		i = find_slot(m->keys, m->cap, key);
	}
	*inserted = true;
	m->keys[i] = key;
	m->values[i] = value;
	m->count++;
	return &m->values[i];
}

void hmap_put(struct hmap *m, uint64_t key, uint64_t value)
{
	*hmap_upsert(m, key, value, NULL) = value;
}

bool hmap_remove(struct hmap *m, uint64_t key)
{
	if (key == EMPTY) {
		bool had = m->has_max;
		m->has_max = false;
		return had;
	}
	if (!m->cap)
		return false;
	size_t mask = m->cap - 1;
	size_t i = find_slot(m->keys, m->cap, key);
	if (m->keys[i] == EMPTY)
		return false;
	/* Backward-shift deletion keeps probe sequences intact without tombstones. */
	size_t j = i;
	for (;;) {
		m->keys[i] = EMPTY;
		for (;;) {
			j = (j + 1) & mask;
			if (m->keys[j] == EMPTY) {
				m->count--;
				return true;
			}
			size_t home = hmap_mix(m->keys[j]) & mask;
			/* Move the entry at j to i unless its home lies cyclically in (i, j]. */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		m->keys[i] = m->keys[j];
		m->values[i] = m->values[j];
		i = j;
	}
}

bool hmap_next(const struct hmap *m, size_t *pos, uint64_t *key, uint64_t *value)
{
	while (*pos < m->cap) {
		size_t i = (*pos)++;
		if (m->keys[i] != EMPTY) {
			*key = m->keys[i];
			if (value)
				*value = m->values[i];
			return true;
		}
	}
	if (*pos == m->cap && m->has_max) {
		(*pos)++;
		*key = EMPTY;
		if (value)
			*value = m->max_value;
		return true;
	}
	return false;
}
