/* SPDX-License-Identifier: MIT */
/* t-hmap.c: the 64-bit hash map: special keys, growth, backward-shift removal, iteration. */
#include "compat.h"
#include "hmap.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void)
{
	return tap_rng(&rng_state);
}

static size_t home_of(const struct hmap *m, uint64_t key)
{
	return hmap_mix(key) & (m->cap - 1);
}

/* Count how many keys hmap_next yields, and whether it yields any key twice (small maps). */
static size_t iter_count(const struct hmap *m)
{
	size_t pos = 0, n = 0;
	uint64_t k, v;
	while (hmap_next(m, &pos, &k, &v))
		n++;
	return n;
}

static void test_empty(void)
{
	struct hmap m = HMAP_INIT;
	uint64_t v = 77;
	is_uint(hmap_size(&m), 0, "HMAP_INIT: size 0");
	ok(!hmap_get(&m, 0, &v) && v == 77, "get on an empty map fails and leaves *value");
	ok(!hmap_get(&m, UINT64_MAX, &v) && v == 77, "get of UINT64_MAX on an empty map fails");
	ok(!hmap_remove(&m, 5), "remove on an empty map fails");
	ok(!hmap_remove(&m, UINT64_MAX), "remove of UINT64_MAX on an empty map fails");
	size_t pos = 0;
	uint64_t k;
	ok(!hmap_next(&m, &pos, &k, &v), "iterating an empty map yields nothing");
	hmap_release(&m);
	is_uint(hmap_size(&m), 0, "release of an empty map");

	struct hmap n;
	memset(&n, 0x5a, sizeof(n));
	hmap_init(&n);
	ok(hmap_size(&n) == 0 && n.cap == 0 && !n.has_max && !hmap_get(&n, 1, NULL),
	   "hmap_init gives an empty map");
}

static void test_basic(void)
{
	struct hmap m;
	hmap_init(&m);
	hmap_put(&m, 10, 100);
	hmap_put(&m, 20, 200);
	hmap_put(&m, 0, 1000);
	uint64_t v = 0;
	is_uint(hmap_size(&m), 3, "three puts, size 3");
	ok(hmap_get(&m, 10, &v) && v == 100, "get 10");
	ok(hmap_get(&m, 20, &v) && v == 200, "get 20");
	ok(hmap_get(&m, 0, &v) && v == 1000, "key 0 is an ordinary key");
	ok(hmap_get(&m, 10, NULL), "get with a NULL value pointer");
	ok(!hmap_get(&m, 30, &v), "absent key");
	ok(!hmap_get(&m, UINT64_MAX, &v), "UINT64_MAX absent until inserted");

	hmap_put(&m, 10, 101);
	ok(hmap_get(&m, 10, &v) && v == 101 && hmap_size(&m) == 3, "put replaces the value");

	bool inserted = true;
	uint64_t *p = hmap_upsert(&m, 20, 999, &inserted);
	ok(!inserted && *p == 200, "upsert of a present key: not inserted, old value");
	*p = 201;
	ok(hmap_get(&m, 20, &v) && v == 201, "  writes through its pointer");
	p = hmap_upsert(&m, 30, 300, &inserted);
	ok(inserted && *p == 300 && hmap_size(&m) == 4, "upsert of an absent key inserts VALUE");
	(*p)++;
	ok(hmap_get(&m, 30, &v) && v == 301, "  and its pointer is the stored value");
	p = hmap_upsert(&m, 40, 400, NULL);
	ok(*p == 400 && hmap_get(&m, 40, &v) && v == 400, "upsert with a NULL inserted flag");

	ok(hmap_remove(&m, 10), "remove present key");
	ok(!hmap_get(&m, 10, &v), "  gone");
	ok(!hmap_remove(&m, 10), "  second remove fails");
	is_uint(hmap_size(&m), 4, "size after remove");
	ok(hmap_remove(&m, 0), "remove key 0");
	ok(!hmap_get(&m, 0, NULL) && hmap_size(&m) == 3, "  key 0 gone");
	hmap_put(&m, 10, 5);
	ok(hmap_get(&m, 10, &v) && v == 5, "reinsert after remove");
	hmap_release(&m);
	ok(hmap_size(&m) == 0 && !hmap_get(&m, 20, NULL), "release empties the map");
	hmap_put(&m, 20, 2);
	ok(hmap_get(&m, 20, &v) && v == 2 && hmap_size(&m) == 1,
	   "the map is reusable after release");
	hmap_release(&m);
}

static void test_max_key(void)
{
	struct hmap m = HMAP_INIT;
	uint64_t v = 0;
	bool inserted;
	hmap_put(&m, UINT64_MAX, 42);
	ok(hmap_get(&m, UINT64_MAX, &v) && v == 42, "UINT64_MAX is a key");
	is_uint(hmap_size(&m), 1, "  counted in the size");
	ok(!hmap_get(&m, 0, NULL) && !hmap_get(&m, UINT64_MAX - 1, NULL),
	   "  without making other keys appear");
	hmap_put(&m, UINT64_MAX, 43);
	ok(hmap_get(&m, UINT64_MAX, &v) && v == 43 && hmap_size(&m) == 1, "put replaces it");
	uint64_t *p = hmap_upsert(&m, UINT64_MAX, 7, &inserted);
	ok(!inserted && *p == 43, "upsert of present UINT64_MAX");
	*p = 44;
	ok(hmap_get(&m, UINT64_MAX, &v) && v == 44, "  writes through");

	hmap_put(&m, UINT64_MAX - 1, 1);
	hmap_put(&m, 0, 2);
	is_uint(hmap_size(&m), 3, "UINT64_MAX, UINT64_MAX - 1 and 0 together");
	ok(hmap_get(&m, UINT64_MAX - 1, &v) && v == 1, "UINT64_MAX - 1");
	ok(hmap_get(&m, 0, &v) && v == 2, "0");

	size_t pos = 0;
	uint64_t k, sum = 0;
	int seen_max = 0, n = 0;
	while (hmap_next(&m, &pos, &k, &v)) {
		n++;
		sum += v;
		if (k == UINT64_MAX)
			seen_max++;
	}
	ok(n == 3 && seen_max == 1 && sum == 47, "iteration yields UINT64_MAX exactly once");
	pos = 0;
	n = 0;
	while (hmap_next(&m, &pos, &k, NULL))
		n++;
	is_int(n, 3, "iteration with a NULL value pointer");

	ok(hmap_remove(&m, UINT64_MAX), "remove UINT64_MAX");
	ok(!hmap_get(&m, UINT64_MAX, NULL) && hmap_size(&m) == 2, "  gone, size 2");
	ok(!hmap_remove(&m, UINT64_MAX), "  second remove fails");
	ok(hmap_get(&m, UINT64_MAX - 1, NULL) && hmap_get(&m, 0, NULL), "  others kept");
	is_uint(iter_count(&m), 2, "  iteration no longer yields it");
	p = hmap_upsert(&m, UINT64_MAX, 9, &inserted);
	ok(inserted && *p == 9 && hmap_size(&m) == 3, "upsert inserts UINT64_MAX again");
	hmap_release(&m);
	ok(!hmap_get(&m, UINT64_MAX, NULL) && hmap_size(&m) == 0, "release forgets UINT64_MAX");

	/* UINT64_MAX alone in a map that has no table. */
	hmap_put(&m, UINT64_MAX, 1);
	is_uint(iter_count(&m), 1, "a map holding only UINT64_MAX iterates once");
	hmap_release(&m);
}

static void test_mix(void)
{
	/* The first output of splitmix64 seeded with 0 is mix(golden gamma). */
	is_uint(hmap_mix(0x9e3779b97f4a7c15ULL), 0xe220a8397b1dcdafULL, "hmap_mix is splitmix64's");
	is_uint(hmap_mix(0), 0, "hmap_mix(0) = 0");
	ok(hmap_mix(1) != hmap_mix(2) && hmap_mix(1) != 1, "hmap_mix mixes");
}

/*
 * Upserting a key that is already present is not an insertion: it must not grow the table,
 * so a pointer from an earlier upsert stays valid (hmap.h: "valid until the next insertion").
 */
static void test_upsert_pointer(void)
{
	struct hmap m = HMAP_INIT;
	uint64_t k = 1;
	/* Fill to the most a table of 64 holds: one more insertion would grow it. */
	while (hmap_size(&m) < 48)
		hmap_put(&m, k++, 0);
	size_t cap = m.cap;
	bool inserted;
	uint64_t *a = hmap_upsert(&m, 1, 0, &inserted);
	uint64_t *b = hmap_upsert(&m, 2, 0, &inserted);
	ok(!inserted && m.cap == cap, "upsert of a present key in a full table does not grow it");
	hmap_put(&m, 3, 33);
	ok(m.cap == cap, "  nor does put of a present key");
	*a = 11;
	*b = 22;
	uint64_t v1 = 0, v2 = 0, v3 = 0;
	ok(hmap_get(&m, 1, &v1) && hmap_get(&m, 2, &v2) && hmap_get(&m, 3, &v3) && v1 == 11 &&
		   v2 == 22 && v3 == 33,
	   "  so earlier pointers still reach the stored values");
	b = hmap_upsert(&m, k, 7, &inserted);
	ok(inserted && m.cap == 2 * cap && *b == 7, "the next real insertion grows the table");
	ok(hmap_get(&m, 1, &v1) && v1 == 11 && hmap_size(&m) == 49, "  keeping the values");
	hmap_release(&m);
}

#define BIG 1000000

static void test_growth(void)
{
	struct hmap m = HMAP_INIT;
	size_t bad_cap = 0;
	for (uint64_t i = 0; i < BIG; i++) {
		hmap_put(&m, i, i * 3 + 1);
		if (m.cap & (m.cap - 1) || m.count * 4 > m.cap * 3)
			bad_cap++;
	}
	is_uint(hmap_size(&m), BIG, "1e6 keys inserted");
	is_uint(bad_cap, 0, "capacity stays a power of two with load at most 3/4");
	ok(m.cap >= BIG * 4 / 3 && m.cap <= BIG * 4, "capacity %zu", m.cap);
	size_t missing = 0, wrong = 0;
	for (uint64_t i = 0; i < BIG; i++) {
		uint64_t v;
		if (!hmap_get(&m, i, &v))
			missing++;
		else if (v != i * 3 + 1)
			wrong++;
	}
	ok(missing == 0 && wrong == 0, "every key found with its value (%zu missing, %zu wrong)",
	   missing, wrong);
	size_t phantom = 0;
	for (uint64_t i = BIG; i < 2 * BIG; i++)
		if (hmap_get(&m, i, NULL))
			phantom++;
	is_uint(phantom, 0, "no key beyond those inserted is found");

	uint8_t *seen = calloc(BIG, 1);
	size_t pos = 0, visits = 0, twice = 0, out_of_range = 0, bad_value = 0;
	uint64_t k, v;
	while (hmap_next(&m, &pos, &k, &v)) {
		visits++;
		if (k >= BIG) {
			out_of_range++;
			continue;
		}
		if (seen[k]++)
			twice++;
		if (v != k * 3 + 1)
			bad_value++;
	}
	ok(visits == BIG && twice == 0 && out_of_range == 0 && bad_value == 0,
	   "hmap_next visits each of 1e6 keys exactly once with its value");

	/* Remove every other key, then check all of them. */
	size_t remove_failed = 0;
	for (uint64_t i = 0; i < BIG; i += 2)
		if (!hmap_remove(&m, i))
			remove_failed++;
	is_uint(remove_failed, 0, "removing half the keys succeeds");
	is_uint(hmap_size(&m), BIG / 2, "  size halves");
	missing = wrong = 0;
	for (uint64_t i = 0; i < BIG; i++) {
		uint64_t val;
		bool found = hmap_get(&m, i, &val);
		if (found != (i % 2 == 1))
			missing++;
		else if (found && val != i * 3 + 1)
			wrong++;
	}
	ok(missing == 0 && wrong == 0, "  exactly the odd keys remain, with their values");
	memset(seen, 0, BIG);
	pos = visits = twice = 0;
	size_t even = 0;
	while (hmap_next(&m, &pos, &k, NULL)) {
		visits++;
		if (k >= BIG || k % 2 == 0)
			even++;
		else if (seen[k]++)
			twice++;
	}
	ok(visits == BIG / 2 && twice == 0 && even == 0, "  and iteration sees only those, once");
	free(seen);
	hmap_release(&m);

	/* Scattered 64-bit keys. */
	uint64_t *keys = malloc(BIG * sizeof(*keys));
	rng_state = 12345;
	for (size_t i = 0; i < BIG; i++) {
		keys[i] = rng();
		hmap_put(&m, keys[i], i);
	}
	missing = 0;
	for (size_t i = 0; i < BIG; i++) {
		uint64_t val;
		if (!hmap_get(&m, keys[i], &val) || val != i)
			missing++;
	}
	ok(hmap_size(&m) == BIG && missing == 0, "1e6 random 64-bit keys round trip");
	free(keys);
	hmap_release(&m);
}

/*
 * Keys whose home slot in a table of 16 is HOME: a cluster can be built at any place,
 * including across the end of the table.
 */
static size_t keys_with_home(size_t home, uint64_t *out, size_t n, uint64_t start)
{
	size_t got = 0;
	for (uint64_t k = start; got < n; k++)
		if ((hmap_mix(k) & 15) == home)
			out[got++] = k;
	return got;
}

static void shuffle(uint64_t *a, size_t n)
{
	for (size_t i = n; i > 1; i--) {
		size_t j = rng() % i;
		uint64_t t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* Check that exactly KEYS[0..N) with PRESENT set are in M, with value key ^ 0xabc. */
static bool check_set(const struct hmap *m, const uint64_t *keys, const bool *present, size_t n)
{
	size_t want = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		bool found = hmap_get(m, keys[i], &v);
		if (found != present[i] || (found && v != (keys[i] ^ 0xabc)))
			return false;
		want += present[i];
	}
	return hmap_size(m) == want && iter_count(m) == want;
}

/* Clusters that wrap around the end of a 16-slot table, removed in random orders. */
static void test_wrap_clusters(void)
{
	int bad = 0, bad_cap = 0, rounds = 0;
	for (int round = 0; round < 400; round++) {
		uint64_t keys[12];
		bool present[12];
		size_t n = 0;
		/* Homes near the end and the start, so probing wraps from slot 15 to slot 0. */
		static const size_t homes[] = { 14, 15, 15, 13, 0, 1, 15, 14, 0, 2, 15, 12 };
		uint64_t start = (uint64_t)round * 1000003;
		for (size_t i = 0; i < 12; i++) {
			keys_with_home(homes[i], &keys[n], 1, start);
			start = keys[n] + 1;
			n++;
		}
		shuffle(keys, n);
		struct hmap m = HMAP_INIT;
		for (size_t i = 0; i < n; i++) {
			hmap_put(&m, keys[i], keys[i] ^ 0xabc);
			present[i] = true;
		}
		if (m.cap != 16)
			bad_cap++;
		if (!check_set(&m, keys, present, n))
			bad++;
		/* Remove in a random order, checking all after each removal; reinsert some. */
		uint64_t order[12];
		memcpy(order, keys, sizeof(order));
		shuffle(order, n);
		for (size_t r = 0; r < n; r++) {
			if (!hmap_remove(&m, order[r]))
				bad++;
			for (size_t i = 0; i < n; i++)
				if (keys[i] == order[r])
					present[i] = false;
			if (!check_set(&m, keys, present, n))
				bad++;
			if (r % 4 == 3) {
				size_t back = rng() % (r + 1);
				hmap_put(&m, order[back], order[back] ^ 0xabc);
				for (size_t i = 0; i < n; i++)
					if (keys[i] == order[back])
						present[i] = true;
				if (!check_set(&m, keys, present, n))
					bad++;
			}
		}
		rounds++;
		hmap_release(&m);
	}
	is_int(bad_cap, 0, "12 keys fit a table of 16 (so the clusters are long)");
	is_int(bad, 0, "%d rounds of wrapping clusters: removal keeps every other key reachable",
	       rounds);

	/* One explicit case: the table really wraps. */
	struct hmap m = HMAP_INIT;
	uint64_t k15[3], k0[2];
	keys_with_home(15, k15, 3, 1);
	keys_with_home(0, k0, 2, 1);
	for (int i = 0; i < 3; i++)
		hmap_put(&m, k15[i], k15[i] ^ 0xabc);
	for (int i = 0; i < 2; i++)
		hmap_put(&m, k0[i], k0[i] ^ 0xabc);
	ok(m.cap == 16 && home_of(&m, k15[0]) == 15 && m.keys[15] == k15[0] &&
		   m.keys[0] == k15[1] && m.keys[1] == k15[2] && m.keys[2] == k0[0] &&
		   m.keys[3] == k0[1],
	   "a cluster homed at slot 15 wraps to slots 0..3");
	hmap_remove(&m, k15[0]);
	ok(m.keys[15] == k15[1] && m.keys[0] == k15[2] && m.keys[1] == k0[0] &&
		   m.keys[2] == k0[1] && m.keys[3] == UINT64_MAX,
	   "removing its head shifts every entry back across the wrap");
	uint64_t v;
	ok(hmap_get(&m, k15[1], &v) && v == (k15[1] ^ 0xabc) && hmap_get(&m, k15[2], NULL) &&
		   hmap_get(&m, k0[0], NULL) && hmap_get(&m, k0[1], NULL) && hmap_size(&m) == 4,
	   "  and all four stay reachable");
	hmap_remove(&m, k15[2]);
	ok(m.keys[15] == k15[1] && m.keys[0] == k0[0] && m.keys[1] == k0[1] &&
		   m.keys[2] == UINT64_MAX,
	   "removing from the wrapped part shifts the slot-0 entries home");
	hmap_release(&m);
}

/*
 * Random operations on a small key space against a reference: the table stays between half
 * and three quarters full, so clusters are long and every removal shifts entries.
 */
#define POOL 382 /* with key 0, under 3/4 of 512: the table settles at 512 slots */

static void random_ops(const char *name, const uint64_t *pool)
{
	struct hmap m = HMAP_INIT;
	bool present[POOL + 2];
	uint64_t value[POOL + 2];
	uint64_t keys[POOL + 2];
	size_t nkeys = POOL + 2;
	memcpy(keys, pool, POOL * sizeof(*keys));
	keys[POOL] = UINT64_MAX;
	keys[POOL + 1] = 0;
	memset(present, 0, sizeof(present));
	int bad_op = 0, bad_state = 0, checks = 0;
	size_t max_size = 0;
	/* Phases with different insert:remove ratios: sparse, middling and nearly full. */
	static const unsigned put_pct[] = { 30, 55, 90, 50, 95, 10, 70 };
	for (size_t phase = 0; phase < ARRAY_SIZE(put_pct); phase++) {
		for (int op = 0; op < 40000; op++) {
			size_t i = rng() % nkeys;
			unsigned r = (unsigned)(rng() % 100);
			uint64_t nv = rng();
			if (r < put_pct[phase]) {
				if (r & 1) {
					hmap_put(&m, keys[i], nv);
					present[i] = true;
					value[i] = nv;
				} else {
					bool ins;
					uint64_t *p = hmap_upsert(&m, keys[i], nv, &ins);
					if (ins == present[i] || *p != (present[i] ? value[i] : nv))
						bad_op++;
					if (!present[i])
						value[i] = nv;
					present[i] = true;
				}
			} else if (r < 97) {
				if (hmap_remove(&m, keys[i]) != present[i])
					bad_op++;
				present[i] = false;
			} else {
				uint64_t v = 0;
				bool found = hmap_get(&m, keys[i], &v);
				if (found != present[i] || (found && v != value[i]))
					bad_op++;
			}
			if (hmap_size(&m) > max_size)
				max_size = hmap_size(&m);
			if (op % 32 == 0) {
				checks++;
				size_t want = 0;
				bool good = true;
				for (size_t j = 0; j < nkeys; j++) {
					uint64_t v = 0;
					bool found = hmap_get(&m, keys[j], &v);
					if (found != present[j] || (found && v != value[j]))
						good = false;
					want += present[j];
				}
				if (hmap_size(&m) != want || iter_count(&m) != want)
					good = false;
				bad_state += !good;
			}
		}
	}
	is_int(bad_op, 0, "%s: 280000 random put/upsert/remove/get results match a reference",
	       name);
	is_int(bad_state, 0, "%s: the whole map matches the reference at %d checkpoints", name,
	       checks);
	ok(max_size > POOL * 9 / 10 && m.cap == 512, "%s: the table was loaded up to %zu/%zu", name,
	   max_size, m.cap);

	/* Iteration visits each present key exactly once. */
	int visits[POOL + 2];
	memset(visits, 0, sizeof(visits));
	size_t pos = 0, stray = 0;
	uint64_t k, v;
	while (hmap_next(&m, &pos, &k, &v)) {
		size_t j;
		for (j = 0; j < nkeys && keys[j] != k; j++)
			;
		if (j == nkeys || v != value[j])
			stray++;
		else
			visits[j]++;
	}
	bool once = stray == 0;
	for (size_t j = 0; j < nkeys; j++)
		if (visits[j] != (present[j] ? 1 : 0))
			once = false;
	ok(once, "%s: hmap_next visits each present key exactly once", name);

	/* Remove everything. */
	int bad_remove = 0;
	for (size_t j = 0; j < nkeys; j++)
		if (hmap_remove(&m, keys[j]) != present[j])
			bad_remove++;
	ok(bad_remove == 0 && hmap_size(&m) == 0 && iter_count(&m) == 0,
	   "%s: removing every key empties the map", name);
	size_t used = 0;
	for (size_t s = 0; s < m.cap; s++)
		used += m.keys[s] != UINT64_MAX;
	is_uint(used, 0, "%s: no slot is left occupied (no tombstones)", name);
	hmap_release(&m);
}

static void test_random(void)
{
	uint64_t pool[POOL];
	for (size_t i = 0; i < POOL; i++)
		pool[i] = i + 1;
	rng_state = 777;
	random_ops("small keys", pool);
	for (size_t i = 0; i < POOL; i++) {
		pool[i] = rng();
		if (pool[i] == UINT64_MAX || pool[i] == 0)
			pool[i] = 1234567;
	}
	random_ops("random keys", pool);
	/* Keys that all share a handful of home slots in the 512 table: maximal collisions. */
	size_t n = 0;
	for (uint64_t k = 1; n < POOL; k++)
		if ((hmap_mix(k) & 511) < 4 || ((hmap_mix(k) & 511) >= 508))
			pool[n++] = k;
	random_ops("colliding keys", pool);
}

int main(void)
{
	test_empty();
	test_basic();
	test_max_key();
	test_mix();
	test_upsert_pointer();
	test_growth();
	test_wrap_clusters();
	test_random();
	return done_testing();
}
