/* SPDX-License-Identifier: MIT */
/*
 * search.h: binary search over an array of records sorted by a uint64_t field (addresses of
 * symbols, sections and line rows, the times of trace pieces), one loop for every table the
 * tools look a key up in; and the order of values and of records by several keys, for
 * sorting them.
 */
#ifndef FATHOM_SEARCH_H
#define FATHOM_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * How many of the N records at ROWS (STRIDE bytes each, sorted by the uint64_t at byte FIELD
 * of each) have that field at most KEY: the index of the first one above KEY.
 */
static inline size_t fth_upper_bound(const void *rows, size_t n, size_t stride, size_t field,
				     uint64_t key)
{
	const char *base = rows;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		memcpy(&v, base + mid * stride + field, sizeof(v));
		if (v <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* fth_upper_bound over the array ROWS of N records, by their uint64_t MEMBER. */
#define FTH_UPPER_BOUND(rows, n, member, key)                                               \
	fth_upper_bound((rows), (n), sizeof(*(rows)), offsetof(__typeof__(*(rows)), member), \
			(key))

/* The index of the first of the N records at ROWS with the field at least KEY. */
static inline size_t fth_lower_bound(const void *rows, size_t n, size_t stride, size_t field,
				     uint64_t key)
{
	return key ? fth_upper_bound(rows, n, stride, field, key - 1) : 0;
}

#define FTH_LOWER_BOUND(rows, n, member, key)                                               \
	fth_lower_bound((rows), (n), sizeof(*(rows)), offsetof(__typeof__(*(rows)), member), \
			(key))

/* qsort's order of two uint64_t values. */
static inline int fth_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The order of two records by their N keys A and B, the first that differs deciding: -1, 0, 1. */
static inline int fth_compare_keys(const uint64_t *a, const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

#endif
