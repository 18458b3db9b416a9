/* SPDX-License-Identifier: MIT */
/*
 * hmap.h: an open-addressing hash map from 64-bit keys to 64-bit values, for the offline tools
 * (address and identifier lookups, interning).  Linear probing, power-of-two capacity, load
 * kept under 3/4; every key is allowed, UINT64_MAX included.
 */
#ifndef FATHOM_HMAP_H
#define FATHOM_HMAP_H

struct hmap {
	uint64_t *keys;   /* owned */
	uint64_t *values; /* owned */
	size_t cap;	  /* power of two, or 0 */
	size_t count;	  /* entries, not counting the one stored under UINT64_MAX */
	bool has_max;	  /* whether UINT64_MAX is a key */
	uint64_t max_value;
};

#define HMAP_INIT { NULL, NULL, 0, 0, false, 0 }

void hmap_init(struct hmap *m);
void hmap_release(struct hmap *m);
size_t hmap_size(const struct hmap *m);
/* Look KEY up; returns true and sets *VALUE (when VALUE is not NULL) if present. */
bool hmap_get(const struct hmap *m, uint64_t key, uint64_t *value);
/* Insert or replace. */
void hmap_put(struct hmap *m, uint64_t key, uint64_t value);
/*
 * Return a pointer to KEY's value, inserting it with VALUE when absent (*INSERTED tells which).
 * The pointer is valid until the next insertion.
 */
uint64_t *hmap_upsert(struct hmap *m, uint64_t key, uint64_t value, bool *inserted);
bool hmap_remove(struct hmap *m, uint64_t key);
/* Iterate: start with *POS = 0; returns false at the end. */
bool hmap_next(const struct hmap *m, size_t *pos, uint64_t *key, uint64_t *value);

/* A good 64-bit mixer (the finaliser of splitmix64); also useful for hashing pairs. */
static inline uint64_t hmap_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

#define HMAP_FNV_BASIS 0xcbf29ce484222325ULL

/* FNV-1a over N bytes at P, continuing from H (HMAP_FNV_BASIS to start): a byte string's
 * hash, to be spread with hmap_mix() before it keys a table. */
static inline uint64_t hmap_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

#endif
