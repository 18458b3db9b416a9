/* SPDX-License-Identifier: MIT */
/*
 * memleak.c: the MEMLEAK source: wrappers of the malloc family that track each allocation
 * with probability P (--memleak-prob) and credit its bytes allocated, freed and leaked to the
 * allocating context.  How the untracked calls stay cheap (the geometric gap, the free filter),
 * the 16-byte headers of glibc's blocks and the lock-free table of the others:
 * doc/internals.md, 2.7, "MEMLEAK's bookkeeping".
 */
#include "compat.h"
#include "hmap.h"
#include "loadmap.h"
#include "runtime.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define CALLER() (uint64_t)(uintptr_t) __builtin_return_address(0)
#define CALLER_SP() (uint64_t)(uintptr_t) __builtin_dwarf_cfa()

/* ---- the real functions, and the bootstrap buffer used while finding them ---- */

typedef void *(*malloc_fn)(size_t);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef void (*free_fn)(void *);
typedef void *(*memalign_fn)(size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*valloc_fn)(size_t);
typedef size_t (*usable_fn)(void *);

static void free_unresolved(void *p);
static void mark_boot_block(const void *p);

/* The real functions: malloc is set last (release), so that when it is set all the others are;
 * free is never null, to spare free() a test. */
static struct {
	malloc_fn malloc;
	calloc_fn calloc;
	realloc_fn realloc;
	reallocarray_fn reallocarray;
	free_fn free;
	memalign_fn memalign, aligned_alloc;
	posix_memalign_fn posix_memalign;
	valloc_fn valloc, pvalloc;
	usable_fn usable_size;
} real = { .free = free_unresolved };
static int resolving, resolved;

#define BOOT_BYTES (256u << 10)
static _Alignas(4096) unsigned char boot[BOOT_BYTES];
static size_t boot_used;

void rt_memleak_boot_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)boot;
	*hi = (uintptr_t)boot + BOOT_BYTES;
}

static inline bool is_boot(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot < BOOT_BYTES;
}

/* Zero-filled memory from the static buffer; the size is kept in the 16 bytes before it. */
static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	if (n > BOOT_BYTES || align > 4096) {
		errno = ENOMEM;
		return NULL;
	}
	size_t cur = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;
	do {
		start = (cur + 16 + align - 1) & ~(align - 1);
		if (start + n > BOOT_BYTES) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &cur, start + n, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	*(size_t *)(boot + start - 16) = n;
	mark_boot_block(boot + start);
	return boot + start;
}

static size_t boot_size(const void *p)
{
	return *(const size_t *)((const unsigned char *)p - 16);
}

/* Find the real functions; false while that is under way (the caller uses the buffer). */
static bool resolve(void)
{
	if (__atomic_load_n(&resolved, __ATOMIC_ACQUIRE))
		return true;
	if (__atomic_exchange_n(&resolving, 1, __ATOMIC_ACQ_REL))
		return false; /* dlsym is allocating, here or in another thread */
	real.calloc = (calloc_fn)dlsym(RTLD_NEXT, "calloc");
	real.realloc = (realloc_fn)dlsym(RTLD_NEXT, "realloc");
	real.reallocarray = (reallocarray_fn)dlsym(RTLD_NEXT, "reallocarray");
	free_fn f = (free_fn)dlsym(RTLD_NEXT, "free");
	if (f)
		__atomic_store_n(&real.free, f, __ATOMIC_RELEASE);
	real.memalign = (memalign_fn)dlsym(RTLD_NEXT, "memalign");
	real.aligned_alloc = (memalign_fn)dlsym(RTLD_NEXT, "aligned_alloc");
	real.posix_memalign = (posix_memalign_fn)dlsym(RTLD_NEXT, "posix_memalign");
	real.valloc = (valloc_fn)dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = (valloc_fn)dlsym(RTLD_NEXT, "pvalloc");
	real.usable_size = (usable_fn)dlsym(RTLD_NEXT, "malloc_usable_size");
	malloc_fn m = (malloc_fn)dlsym(RTLD_NEXT, "malloc");
	if (!m || !real.calloc || !real.realloc || !f) {
		static const char msg[] = "measure: cannot find the allocator's malloc, calloc, "
					  "realloc and free\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		abort();
	}
	__atomic_store_n(&real.malloc, m, __ATOMIC_RELEASE);
	__atomic_store_n(&resolved, 1, __ATOMIC_RELEASE);
	return true;
}

/* ---- the table of tracked blocks ---- */

#define BIG_BITS 21   /* 2 Mi slots, 64 MiB of address space, touched where blocks live */
#define SMALL_BITS 14 /* 16 Ki slots, 512 KiB at P = 1: the common case, with room to spare */
#define SMALL_BITS_MIN 11 /* at P <= 1/8: 2 Ki slots, 64 KiB */
#define BIG_PROBES 64
#define SMALL_PROBES 16
#define KEY_EMPTY 0
#define KEY_RESERVED 1 /* being filled */
#define SLOTS_PER_PAGE (4096 / sizeof(struct slot))

struct slot {
	uint64_t key; /* the block's address, KEY_EMPTY or KEY_RESERVED (atomic access) */
	struct mthread *owner; /* the allocating thread, whose tree holds NODE */
	uint32_t node;
	uint32_t displaced; /* live entries whose home is this slot but stored further on */
	uint64_t bytes;	    /* what was credited as allocated (scaled by 1/P) */
};

/*
 * Two tables: entries go to the small one, whose slots a hash of the address picks, and to the
 * big one (slots by address: nearby blocks, nearby slots) only when the small one is crowded
 * around their home.  Lookups try the small one first.
 */
struct table {
	struct slot *slot;
	uint32_t mask, probes;
	bool by_address;
	uint64_t *touched; /* pages of the table in use (the big table) */
};

static struct table small, big;
static uint64_t big_touched[(1u << BIG_BITS) / SLOTS_PER_PAGE / 64];
static struct slot *table; /* the big table's slots: MEMLEAK is on */
static int metric_alloc = -1, metric_freed = -1, metric_leaked = -1;
static uint32_t probability; /* billionths */
static double gap_scale;     /* 1 / ln(1 - P) (negative), or 0 when P = 1: every call */
static double inverse_p = 1; /* 1 / P */
static uint64_t crowded;     /* allocations not tracked: no free slot near their home */
static uint64_t big_entries; /* entries in the big table: while 0, lookups skip it */
/* Entries in both tables: while 0 (blocks with a header, see below, need none), frees do not
 * look (each look is a cache miss). */
static uint64_t table_entries;

static __thread uint64_t rng __attribute__((tls_model("initial-exec")));
static __thread int inside __attribute__((tls_model("initial-exec")));
/* Allocations of this thread up to and including the next tracked one; 0: not drawn yet. */
static __thread int64_t countdown __attribute__((tls_model("initial-exec")));

#define HASH_MULT 0x9e3779b97f4a7c15ull

/*
 * While the process has a single thread, nothing else can touch the table or the filter (a
 * signal handler of the program that allocates would have broken the allocator already), so
 * plain loads and stores do what the atomic operations do, without their cost.  glibc clears
 * __libc_single_threaded before it starts a second thread, which only this thread can do; its
 * own malloc relies on the same flag to skip its locks.
 */
static inline bool one_thread(void)
{
	return __libc_single_threaded;
}

static inline uint32_t home_of(const struct table *t, uint64_t p)
{
	if (t->by_address)
		return (uint32_t)(((p >> 4) + ((p >> 25) * HASH_MULT >> 40)) & t->mask);
	return (uint32_t)((p * HASH_MULT) >> 40) & t->mask;
}

/* Start fetching the small table's home slot of P, likely in no cache: tracking a block and
 * untracking it each overlap that miss with other work. */
static inline void prefetch_slot(uint64_t p)
{
	__builtin_prefetch(&small.slot[home_of(&small, p)], 1);
}

static bool insert_in(struct table *t, uint64_t p, struct mthread *owner, uint32_t node,
		      uint64_t bytes)
{
	uint32_t h = home_of(t, p);
	bool counted = false;
	if (one_thread()) {
		for (uint32_t i = 0; i < t->probes; i++) {
			struct slot *s = &t->slot[(h + i) & t->mask];
			if (s->key != KEY_EMPTY && s->key != p)
				continue;
			if (i)
				t->slot[h].displaced++;
			*s = (struct slot){ p, owner, node, s->displaced, bytes };
			if (t->touched) {
				uint32_t page = ((h + i) & t->mask) / SLOTS_PER_PAGE;
				t->touched[page / 64] |= 1ull << (page % 64);
			}
			return true;
		}
		return false;
	}
	for (uint32_t i = 0; i < t->probes; i++) {
		uint32_t at = (h + i) & t->mask;
		struct slot *s = &t->slot[at];
		uint64_t k = __atomic_load_n(&s->key, __ATOMIC_RELAXED);
		/* An entry with this very address is stale (its free went unseen): replace it. */
		if (k != KEY_EMPTY && k != p)
			goto next;
		if (!__atomic_compare_exchange_n(&s->key, &k, KEY_RESERVED, false, __ATOMIC_ACQ_REL,
						  __ATOMIC_RELAXED)) {
			i--; /* taken meanwhile: look at this slot again */
			continue;
		}
		s->owner = owner;
		s->node = node;
		s->bytes = bytes;
		if (t->touched) {
			uint32_t page = at / SLOTS_PER_PAGE;
			uint64_t bit = 1ull << (page % 64);
			if (!(__atomic_load_n(&t->touched[page / 64], __ATOMIC_RELAXED) & bit))
				__atomic_fetch_or(&t->touched[page / 64], bit, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&s->key, p, __ATOMIC_RELEASE);
		return true;
	next:
		if (i == 0 && !counted) {
			/* Lookups of entries from H must go on past H from now on. */
			__atomic_fetch_add(&t->slot[h].displaced, 1, __ATOMIC_ACQ_REL);
			counted = true;
		}
	}
	if (counted)
		__atomic_fetch_sub(&t->slot[h].displaced, 1, __ATOMIC_RELEASE);
	return false;
}

/* Remove P's entry from T into *E; false when it is not there. */
static bool take_from(struct table *t, uint64_t p, struct slot *e)
{
	uint32_t h = home_of(t, p);
	if (one_thread()) {
		for (uint32_t i = 0; i < t->probes; i++) {
			struct slot *s = &t->slot[(h + i) & t->mask];
			if (s->key == p) {
				*e = *s;
				s->key = KEY_EMPTY;
				if (i)
					t->slot[h].displaced--;
				return true;
			}
			if (i == 0 && !s->displaced)
				return false;
		}
		return false;
	}
	for (uint32_t i = 0; i < t->probes; i++) {
		struct slot *s = &t->slot[(h + i) & t->mask];
		if (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) == p) {
			e->owner = s->owner;
			e->node = s->node;
			e->bytes = s->bytes;
			uint64_t k = p;
			if (!__atomic_compare_exchange_n(&s->key, &k, KEY_EMPTY, false,
							 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				return false; /* freed twice at once: the program's bug, not ours */
			if (i)
				__atomic_fetch_sub(&t->slot[h].displaced, 1, __ATOMIC_RELEASE);
			return true;
		}
		if (i == 0 && !__atomic_load_n(&t->slot[h].displaced, __ATOMIC_ACQUIRE))
			return false;
	}
	return false;
}

/*
 * The filter in front of the table: counter H is at least the number of tracked blocks whose
 * address hashes to H, so a free that finds 0 there needs nothing else.  A counter that
 * reaches FILTER_FULL stays there (its blocks are then always looked up in the table).  Every
 * free reads the filter, so what it reads is a bitmap, 2 KiB that stay in the first-level
 * cache (the 16 KiB of counters did not, with the program's own data going through): bit H is
 * set whenever counter H is not 0, and the counter is read only when it is.  While the process
 * has one thread, a bit is cleared when its counter returns to 0; with more threads, bits are
 * only set (clearing one could race with another thread's setting), and the counters decide.
 * Never touched when MEMLEAK is off: all zero, and frees look no further.
 */
#define FILTER_BITS 14
#define FILTER_FULL 255

static _Alignas(64) uint8_t filter[1u << FILTER_BITS];
static _Alignas(64) uint64_t filter_bits[(1u << FILTER_BITS) / 64];

static inline uint32_t filter_index(uint64_t p)
{
	return (uint32_t)((p * HASH_MULT) >> (64 - FILTER_BITS));
}

static void filter_add(uint64_t p)
{
	uint32_t h = filter_index(p);
	uint8_t *c = &filter[h], v = __atomic_load_n(c, __ATOMIC_RELAXED);
	uint64_t bit = 1ull << (h % 64), *word = &filter_bits[h / 64];
	if (one_thread()) {
		*c = (uint8_t)(v + (v != FILTER_FULL));
		*word |= bit;
		return;
	}
	while (v != FILTER_FULL &&
	       !__atomic_compare_exchange_n(c, &v, (uint8_t)(v + 1), true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
	if (!(__atomic_load_n(word, __ATOMIC_RELAXED) & bit))
		__atomic_fetch_or(word, bit, __ATOMIC_RELAXED);
}

static void filter_remove(uint64_t p)
{
	uint32_t h = filter_index(p);
	uint8_t *c = &filter[h], v = __atomic_load_n(c, __ATOMIC_RELAXED);
	if (one_thread()) {
		v = (uint8_t)(v - (v != FILTER_FULL && v != 0));
		*c = v;
		if (!v)
			filter_bits[h / 64] &= ~(1ull << (h % 64));
		return;
	}
	while (v != FILTER_FULL && v != 0 &&
	       !__atomic_compare_exchange_n(c, &v, (uint8_t)(v - 1), true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/* Whether P may be tracked, by the bitmap alone: false proves it is not. */
static inline bool maybe_tracked(const void *p)
{
	uint32_t h = filter_index((uint64_t)(uintptr_t)p);
	return __atomic_load_n(&filter_bits[h / 64], __ATOMIC_RELAXED) & (1ull << (h % 64));
}

/* Whether P may be tracked, by its counter (after maybe_tracked() said it may; while the
 * process has one thread, the bit says as much). */
static inline bool counter_nonzero(const void *p)
{
	return __atomic_load_n(&filter[filter_index((uint64_t)(uintptr_t)p)], __ATOMIC_RELAXED);
}

/*
 * A bootstrap block's counter is full (never decremented) and its bit set, so that free and
 * realloc find every bootstrap block through the filter, and their fast paths need no check of
 * their own.
 */
static void mark_boot_block(const void *p)
{
	uint32_t h = filter_index((uint64_t)(uintptr_t)p);
	__atomic_store_n(&filter[h], FILTER_FULL, __ATOMIC_RELAXED);
	__atomic_fetch_or(&filter_bits[h / 64], 1ull << (h % 64), __ATOMIC_RELAXED);
}

static inline bool table_empty(void)
{
	return !__atomic_load_n(&table_entries, __ATOMIC_ACQUIRE);
}

/* Track P: its entry, then its count in the filter (both before the program can free it). */
static bool track_block(uint64_t p, struct mthread *owner, uint32_t node, uint64_t bytes)
{
	/* Counted first: a lookup that finds 0 must not miss an entry on its way in. */
	__atomic_fetch_add(&table_entries, 1, __ATOMIC_SEQ_CST);
	if (!insert_in(&small, p, owner, node, bytes)) {
		__atomic_fetch_add(&big_entries, 1, __ATOMIC_SEQ_CST);
		if (!insert_in(&big, p, owner, node, bytes)) {
			__atomic_fetch_sub(&big_entries, 1, __ATOMIC_RELAXED);
			__atomic_fetch_sub(&table_entries, 1, __ATOMIC_RELAXED);
			return false;
		}
	}
	filter_add(p);
	return true;
}

/* Stop tracking P (before the real free: the address cannot be handed out again meanwhile). */
static bool untrack_block(uint64_t p, struct slot *e)
{
	if (table_empty())
		return false;
	if (!take_from(&small, p, e)) {
		if (!__atomic_load_n(&big_entries, __ATOMIC_ACQUIRE) || !take_from(&big, p, e))
			return false;
		__atomic_fetch_sub(&big_entries, 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_sub(&table_entries, 1, __ATOMIC_RELAXED);
	filter_remove(p);
	return true;
}

/* ---- which allocations are tracked ---- */

static inline bool tracking(void)
{
	return table && rt.active;
}

/* SplitMix64: a Weyl sequence through a mixing function (independent steps overlap). */
static inline uint64_t next_random(void)
{
	if (!rng)
		rng = (uint64_t)(uintptr_t)&rng ^ rt_monotonic_ns();
	rng += 0x9e3779b97f4a7c15ull;
	return hmap_mix(rng);
}

/*
 * The logarithms made at start, without libm (measure's library then maps one library fewer):
 * ln(1 + X) = 2 atanh(S) with S = X / (2 + X), by the series S + S^3/3 + S^5/5 + ..., for X
 * in [-1/4, 1/4] (|S| < 1/7: 20 terms leave an error far below 1e-16); other arguments are
 * first scaled by a power of 2 into [sqrt(1/2), sqrt(2)).
 */
static double ln1p_near_zero(double x)
{
	double s = x / (2 + x), s2 = s * s, term = s, sum = 0;
	for (int k = 1; k < 40; k += 2) {
		sum += term / k;
		term *= s2;
	}
	return 2 * sum;
}

/* ln X for a finite X > 0. */
static double ln_positive(double x)
{
	union {
		double d;
		uint64_t bits;
	} m = { .d = x };
	int e = (int)((m.bits >> 52) & 0x7ff) - 1023;
	if (e == -1023) { /* subnormal: scaled up first */
		m.d = x * 0x1p64;
		e = (int)((m.bits >> 52) & 0x7ff) - 1023 - 64;
	}
	m.bits = (m.bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52); /* [1, 2) */
	if (m.d > 1.4142135623730951) {
		m.d /= 2;
		e++;
	}
	return e * 0.6931471805599453 + ln1p_near_zero(m.d - 1);
}

/* ln(1 + X) for X > -1, precise also when X is tiny. */
static double ln1p(double x)
{
	return x >= -0.25 && x <= 0.25 ? ln1p_near_zero(x) : ln_positive(1 + x);
}

/*
 * ln U for U in (0, 1], inline, without a table (a table's lines were cache misses at small
 * P, where draws are rare): U = M 2^E with M in [sqrt(1/2), sqrt(2)), and ln M = 2 atanh(S),
 * S = (M - 1) / (M + 1), |S| < 0.172, by the series to S^15 (relative error below 1e-12, far
 * below what could bias the draws).  Draws come in batches, so the divisions overlap.
 */
static inline double ln_unit(double u)
{
	union {
		double d;
		uint64_t bits;
	} x = { .d = u };
	int e = (int)((x.bits >> 52) & 0x7ff) - 1023;
	x.bits = (x.bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1023) << 52); /* M in [1, 2) */
	bool high = x.d > 1.4142135623730951;
	x.d = high ? x.d * 0.5 : x.d;
	e += high;
	double s = (x.d - 1) / (x.d + 1), s2 = s * s;
	double series =
		s * (2 + s2 * (2.0 / 3 + s2 * (2.0 / 5 + s2 * (2.0 / 7 + s2 * (2.0 / 9 +
			s2 * (2.0 / 11 + s2 * (2.0 / 13 + s2 * (2.0 / 15))))))));
	return e * 0.6931471805599453 + series;
}

/*
 * The number of allocations up to and including the next tracked one: geometric, P(G > k) =
 * (1 - P)^k, by inversion of a uniform U in (0, 1]: G = 1 + floor(ln U / ln(1 - P)).  Drawn
 * GAP_BATCH at a time: the logarithms are chains of dependent operations, and independent
 * chains overlap.
 */
#define GAP_BATCH 8

static __thread int64_t gaps[GAP_BATCH] __attribute__((tls_model("initial-exec")));
static __thread uint32_t ngaps __attribute__((tls_model("initial-exec")));

static void draw_gaps(void)
{
	double u[GAP_BATCH];
	for (int i = 0; i < GAP_BATCH; i++) /* 53 bits: a multiple of 2^-53, never 0 */
		u[i] = (double)((next_random() >> 11) + 1) * 0x1p-53;
	for (int i = 0; i < GAP_BATCH; i++) {
		double g = ln_unit(u[i]) * gap_scale; /* >= 0 */
		gaps[i] = g < 0x1p62 ? (int64_t)g + 1 : INT64_C(1) << 62;
	}
	ngaps = GAP_BATCH;
}

static int64_t next_gap(void)
{
	if (!table)
		return INT64_C(1) << 62; /* MEMLEAK is off (or not yet on: see memleak_process_init) */
	if (gap_scale == 0)
		return 1;
	if (!ngaps)
		draw_gaps();
	return gaps[--ngaps];
}

/* The slow half of the decision, once the count reached 0: whether this call is tracked. */
static bool decide(void)
{
	if (countdown < 0) {
		/* The thread's first allocation: the count was never drawn. */
		countdown = next_gap() - 1;
		if (countdown > 0)
			return false;
	}
	countdown = next_gap();
	return true;
}

/* N bytes scaled by 1/P (exact at P = 1). */
static uint64_t scaled(size_t n)
{
	if (inverse_p == 1)
		return n;
	double x = (double)n * inverse_p + 0.5;
	return x < 0x1p64 ? (uint64_t)x : UINT64_MAX;
}

static void say_crowded(void)
{
	if (__atomic_fetch_add(&crowded, 1, __ATOMIC_RELAXED) == 0)
		rt_log("error: MEMLEAK: the table of live blocks is crowded (%u slots): some "
		       "allocations are not tracked; use --memleak-prob below 1", big.mask + 1);
}

/* The block P of N bytes was just allocated by CALLEE, called at RA with stack pointer SP,
 * and chosen for tracking. */
static void track(void *p, size_t n, const void *callee, uint64_t ra, uint64_t sp)
{
	if (!p || inside || !tracking() || rt_sync_from_measure(ra))
		return;
	prefetch_slot((uint64_t)(uintptr_t)p); /* arrives while the context is found */
	struct mthread *t = rt_self();
	if (!t)
		return;
	int saved = errno;
	inside = 1;
	if (rt_sync_claim(t)) {
		uint32_t leaf = rt_sync_context(t, callee, ra, sp);
		uint64_t bytes = scaled(n);
		if (leaf != UINT32_MAX) {
			if (track_block((uint64_t)(uintptr_t)p, t, leaf, bytes))
				rt_sync_credit(t, leaf, metric_alloc, bytes);
			else
				say_crowded();
		}
		rt_sync_release(t);
	}
	inside = 0;
	errno = saved;
}

/*
 * After the real allocation: one decrement and a branch for the calls that are not tracked
 * (the caller inlines this); the rest goes to chosen(), out of line.
 */
#define AFTER_ALLOCATION(p, n, callee, ra, sp)                                                  \
	do {                                                                                    \
		if (unlikely(--countdown <= 0))                                                 \
			chosen(p, n, callee, ra, sp);                                           \
	} while (0)

static __attribute__((noinline)) void chosen(void *p, size_t n, const void *callee, uint64_t ra,
					     uint64_t sp)
{
	if (decide())
		track(p, n, callee, ra, sp);
}

/* A tracked block was freed: BYTES to the allocating context (NODE in the tree of OWNER), in
 * this thread's tree. */
static void credit_freed_to(const struct mthread *owner, uint32_t node, uint64_t bytes)
{
	struct mthread *t = rt_self();
	if (!t || inside)
		return;
	int saved = errno;
	inside = 1;
	if (rt_sync_claim(t)) {
		rt_sync_credit(t, rt_sync_copy_context(t, owner, node), metric_freed, bytes);
		rt_sync_release(t);
	}
	inside = 0;
	errno = saved;
}

static void credit_freed(const struct slot *e)
{
	credit_freed_to(e->owner, e->node, e->bytes);
}

/* ---- tracked blocks that carry their entry in front (glibc's allocator) ---- */

/*
 * With glibc's allocator, a tracked malloc, calloc or realloc asks for 16 bytes more and keeps
 * the block's entry in front of what it returns: the free finds it in the cache line that the
 * allocator reads next anyway, where a slot of the table was a cache miss of its own, at the
 * allocation and again at the free.  Which addresses are such blocks is known exactly, never
 * guessed from bytes in memory: a bitmap with a bit per 16 bytes of address space (a leaf of
 * 1 MiB per 128 MiB, mapped when first needed, touched only where blocks live) says so.  A bit
 * is set before the program has the block and cleared before the allocator has it back, so no
 * other block can start at a marked address.  glibc only: other allocators have calls of their
 * own on a block (sdallocx, tc_free_sized, ...) that would be given the shifted address; with
 * them, and for the memalign family (whose alignment a header would break), the table does it.
 * The bitmap is read only for the frees that the filter lets through.
 */
#define FAT_HEADER 16
#define FAT_LEAF_SHIFT 27			      /* 128 MiB of address space per leaf */
#define FAT_LEAF_WORDS ((1u << (FAT_LEAF_SHIFT - 4)) / 64) /* bits per 16 bytes: 1 MiB */
#define FAT_DIR_SIZE (1u << (47 - FAT_LEAF_SHIFT))	      /* user space below 2^47 */
#define FAT_LEAVES_MAX 1024				      /* 128 GiB; beyond, the table */
#define FAT_SIZE_MAX ((size_t)1 << 31)
#define FAT_UNTRACKED UINT32_MAX
#define FAT_OWNER_MASK ((UINT64_C(1) << 48) - 1)

struct fat_header {
	uint64_t owner; /* the allocating thread (struct mthread *), the generation in bits 48-63 */
	uint32_t node;	/* its context in the owner's tree; FAT_UNTRACKED: none */
	uint32_t size;	/* the bytes asked for */
};

static bool fat_on;
static uint64_t **fat_dir; /* the leaf of each 128 MiB, or null */
/* The leaves made, as their index in fat_dir plus 1 (0: being recorded), for the end. */
static uint32_t fat_leaf_id[FAT_LEAVES_MAX], fat_leaves;
/* One more in each forked child: blocks of an older generation are the parent's. */
static uint16_t fat_generation;
/*
 * With more than one thread, frees of blocks with a header are counted while they read and
 * unmark it (fat_busy), and wait while memleak_process_finish reads the headers (fat_scanning):
 * it never reads the header of a block being given back.  The count is split by thread, in
 * lines of their own, so that threads freeing at once do not fight over one line.
 */
#define FAT_BUSY_STRIPES 64
static int fat_scanning;
static struct {
	_Alignas(64) uint64_t n;
} fat_busy[FAT_BUSY_STRIPES];

static inline struct fat_header *header_of(const void *p)
{
	return (struct fat_header *)(uintptr_t)p - 1;
}

/* The word and bit of address P in the bitmap, null when P has no leaf (or cannot have one). */
static inline uint64_t *fat_word(uint64_t p, uint64_t *bit)
{
	if (p >> 47 || (p & 15))
		return NULL;
	uint64_t *leaf = __atomic_load_n(&fat_dir[p >> FAT_LEAF_SHIFT], __ATOMIC_ACQUIRE);
	if (!leaf)
		return NULL;
	uint64_t i = (p & ((UINT64_C(1) << FAT_LEAF_SHIFT) - 1)) >> 4;
	*bit = UINT64_C(1) << (i % 64);
	return &leaf[i / 64];
}

/* Whether P is a block with a header: exact. */
static inline bool is_fat(const void *p)
{
	uint64_t bit, *w;
	return fat_dir && (w = fat_word((uint64_t)(uintptr_t)p, &bit)) &&
	       (__atomic_load_n(w, __ATOMIC_ACQUIRE) & bit);
}

/* Mark P as a block with a header (its leaf mapped if need be); false when it cannot be. */
static bool fat_mark(uint64_t p)
{
	if (p >> 47 || (p & 15))
		return false;
	uint64_t **at = &fat_dir[p >> FAT_LEAF_SHIFT];
	if (!__atomic_load_n(at, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&fat_leaves, __ATOMIC_RELAXED) >= FAT_LEAVES_MAX)
			return false;
		uint64_t *leaf = mmap(NULL, FAT_LEAF_WORDS * sizeof(uint64_t),
				      PROT_READ | PROT_WRITE,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (leaf == MAP_FAILED)
			return false;
		uint64_t *none = NULL;
		if (__atomic_compare_exchange_n(at, &none, leaf, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			uint32_t i = __atomic_fetch_add(&fat_leaves, 1, __ATOMIC_ACQ_REL);
			uint32_t id = (uint32_t)(p >> FAT_LEAF_SHIFT) + 1;
			if (i < FAT_LEAVES_MAX)
				__atomic_store_n(&fat_leaf_id[i], id, __ATOMIC_RELEASE);
		} else {
			munmap(leaf, FAT_LEAF_WORDS * sizeof(uint64_t)); /* another thread's won */
		}
	}
	uint64_t bit = 0, *w = fat_word(p, &bit);
	if (one_thread())
		*w |= bit;
	else
		__atomic_fetch_or(w, bit, __ATOMIC_RELEASE);
	return true;
}

static void fat_unmark(uint64_t p)
{
	uint64_t bit = 0, *w = fat_word(p, &bit);
	if (one_thread())
		*w &= ~bit;
	else
		__atomic_fetch_and(w, ~bit, __ATOMIC_RELEASE);
}

/* This thread's part of fat_busy. */
static inline uint64_t *fat_busy_mine(void)
{
	return &fat_busy[((uint64_t)(uintptr_t)&inside * HASH_MULT) >> 58].n;
}

/* Enter the section where a header is read and unmarked; the count to leave, or null. */
static uint64_t *fat_enter(void)
{
	if (one_thread())
		return NULL;
	uint64_t *busy = fat_busy_mine();
	for (;;) {
		__atomic_fetch_add(busy, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&fat_scanning, __ATOMIC_SEQ_CST))
			return busy;
		__atomic_fetch_sub(busy, 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&fat_scanning, __ATOMIC_ACQUIRE))
			sched_yield();
	}
}

static void fat_leave(uint64_t *busy)
{
	if (busy)
		__atomic_fetch_sub(busy, 1, __ATOMIC_RELEASE);
}

/* Whether a free of a block with a header is under way in some thread. */
static bool fat_freeing(void)
{
	for (uint32_t i = 0; i < FAT_BUSY_STRIPES; i++)
		if (__atomic_load_n(&fat_busy[i].n, __ATOMIC_SEQ_CST))
			return true;
	return false;
}

/* The bytes the program may use in P, a block with a header. */
static size_t fat_usable_size(void *p)
{
	return real.usable_size(header_of(p)) - FAT_HEADER;
}

/* Whether an allocation of N bytes called at RA, chosen for tracking, gets a header. */
static inline bool fat_eligible(size_t n, uint64_t ra)
{
	return fat_on && n <= FAT_SIZE_MAX && !inside && tracking() && !rt_sync_from_measure(ra);
}

/* Take P's header (unmarked, out of the filter) into *E, before the allocator has it back. */
static void fat_take(void *p, struct fat_header *e)
{
	uint64_t *busy = fat_enter();
	*e = *header_of(p);
	fat_unmark((uint64_t)(uintptr_t)p);
	filter_remove((uint64_t)(uintptr_t)p);
	fat_leave(busy);
}

/* A header E taken from a block being freed: its bytes as freed, when they were credited. */
static void fat_credit_freed(const struct fat_header *e)
{
	if (e->node != FAT_UNTRACKED && e->owner >> 48 == fat_generation)
		credit_freed_to((const struct mthread *)(uintptr_t)(e->owner & FAT_OWNER_MASK),
				e->node, scaled(e->size));
}

static void free_fat(void *p)
{
	/* The allocator's size field before the header may be in the line before. */
	__builtin_prefetch((const char *)p - FAT_HEADER - 8);
	struct fat_header e;
	fat_take(p, &e);
	real.free(header_of(p));
	fat_credit_freed(&e);
}

/*
 * Q was allocated with N + FAT_HEADER bytes: give the block behind its header, untracked for
 * now.  Null when it cannot have one (no leaf for it): the caller keeps Q, in the table.
 */
static void *fat_adopt(void *q, size_t n)
{
	void *p = (char *)q + FAT_HEADER;
	if (!fat_mark((uint64_t)(uintptr_t)p))
		return NULL;
	*(struct fat_header *)q =
		(struct fat_header){ (uint64_t)fat_generation << 48, FAT_UNTRACKED, (uint32_t)n };
	filter_add((uint64_t)(uintptr_t)p);
	return p;
}

/* The block P (with a header) of N bytes was just allocated by CALLEE, called at RA with
 * stack pointer SP: its bytes to the calling context. */
static void fat_track(void *p, size_t n, const void *callee, uint64_t ra, uint64_t sp)
{
	struct mthread *t = rt_self();
	if (!t || (uintptr_t)t > FAT_OWNER_MASK)
		return;
	int saved = errno;
	inside = 1;
	if (rt_sync_claim(t)) {
		uint32_t leaf = rt_sync_context(t, callee, ra, sp);
		if (leaf != UINT32_MAX) {
			struct fat_header *h = header_of(p);
			h->owner |= (uint64_t)(uintptr_t)t;
			h->node = leaf;
			rt_sync_credit(t, leaf, metric_alloc, scaled(n));
		}
		rt_sync_release(t);
	}
	inside = 0;
	errno = saved;
}

/* A tracked allocation of N bytes by CALLEE (malloc or calloc), which gave Q for N +
 * FAT_HEADER: the block for the program. */
static void *fat_allocated(void *q, size_t n, const void *callee, uint64_t ra, uint64_t sp)
{
	if (!q)
		return NULL;
	void *p = fat_adopt(q, n);
	if (!p) {
		track(q, n, callee, ra, sp); /* Q as it is, FAT_HEADER bytes larger */
		return q;
	}
	fat_track(p, n, callee, ra, sp);
	return p;
}

/* realloc of P, a block with a header, to BYTES; DUE: the new block is the one to track. */
static void *realloc_fat(void *p, size_t bytes, bool due, const void *callee, uint64_t ra,
			 uint64_t sp)
{
	if (!bytes) {
		free_fat(p); /* as glibc's realloc(p, 0) */
		return NULL;
	}
	if (!due || bytes > FAT_SIZE_MAX) {
		/*
		 * A new block not tracked (or too large for the header): a plain one, the data
		 * copied once, as when realloc moves a block.  Kept with a header, it would cost
		 * the bookkeeping of one at every realloc and free of it, for nothing to credit.
		 */
		void *q = real.malloc(bytes);
		if (!q)
			return NULL;
		memcpy(q, p, FTH_MIN(bytes, fat_usable_size(p)));
		free_fat(p);
		if (due)
			track(q, bytes, callee, ra, sp);
		return q;
	}
	struct fat_header e;
	fat_take(p, &e);
	char *q = real.realloc(header_of(p), bytes + FAT_HEADER);
	if (!q) {
		/* Failed: P is untouched, and still the program's. */
		fat_mark((uint64_t)(uintptr_t)p);
		filter_add((uint64_t)(uintptr_t)p);
		return NULL;
	}
	fat_credit_freed(&e);
	void *np = fat_adopt(q, bytes);
	if (!np) {
		memmove(q, q + FAT_HEADER, bytes); /* no leaf for it: a plain block */
		if (due)
			track(q, bytes, callee, ra, sp);
		return q;
	}
	if (fat_eligible(bytes, ra))
		fat_track(np, bytes, callee, ra, sp);
	return np;
}

/*
 * realloc of P (untracked, without a header, or null) to BYTES for a block that is tracked: a
 * new block with a header, the data copied once (as when realloc moves a block; growing in
 * place and then moving the data behind the header copied it twice when realloc moved it).
 */
static void *realloc_to_fat(void *p, size_t bytes, const void *callee, uint64_t ra, uint64_t sp)
{
	char *q = real.malloc(bytes + FAT_HEADER);
	if (!q)
		return NULL;
	void *np = fat_adopt(q, bytes);
	if (!np) {
		real.free(q); /* no leaf for it: realloc as it is, the block in the table */
		q = real.realloc(p, bytes);
		if (q)
			track(q, bytes, callee, ra, sp);
		return q;
	}
	if (p) {
		memcpy(np, p, FTH_MIN(real.usable_size(p), bytes));
		real.free(p);
	}
	fat_track(np, bytes, callee, ra, sp);
	return np;
}

/* The blocks with a header still allocated at the end: credited as leaked by ME (CLAIMED: its
 * tree may be written), then untracked; totals in *BLOCKS, *BYTES and *LOST. */
static void finish_fat(struct mthread *me, bool claimed, uint64_t *blocks, uint64_t *bytes,
		       uint64_t *lost)
{
	if (!fat_dir)
		return;
	bool many = !one_thread();
	if (many) {
		__atomic_store_n(&fat_scanning, 1, __ATOMIC_SEQ_CST);
		for (uint32_t i = 0; fat_freeing(); i++) {
			if (i == 100000) {
				rt_log("error: MEMLEAK: frees in other threads did not finish: the "
				       "blocks with a header were not counted as leaks");
				__atomic_store_n(&fat_scanning, 0, __ATOMIC_SEQ_CST);
				return;
			}
			sched_yield();
		}
	}
	uint32_t leaves = FTH_MIN(__atomic_load_n(&fat_leaves, __ATOMIC_ACQUIRE), FAT_LEAVES_MAX);
	for (uint32_t l = 0; l < leaves; l++) {
		uint32_t id = __atomic_load_n(&fat_leaf_id[l], __ATOMIC_ACQUIRE);
		uint64_t *leaf = id ? __atomic_load_n(&fat_dir[id - 1], __ATOMIC_ACQUIRE) : NULL;
		if (!leaf)
			continue;
		uint64_t base = (uint64_t)(id - 1) << FAT_LEAF_SHIFT;
		for (uint32_t w = 0; w < FAT_LEAF_WORDS; w++) {
			for (uint64_t bits = __atomic_load_n(&leaf[w], __ATOMIC_ACQUIRE); bits;
			     bits &= bits - 1) {
				uint64_t bit = (uint64_t)w * 64 + (uint64_t)__builtin_ctzll(bits);
				uint64_t p = base + (bit << 4);
				struct fat_header *h = header_of((const void *)(uintptr_t)p);
				if (h->node == FAT_UNTRACKED || h->owner >> 48 != fat_generation)
					continue;
				uint64_t n = scaled(h->size);
				uint64_t owner_bits = h->owner & FAT_OWNER_MASK;
				const struct mthread *owner =
					(const struct mthread *)(uintptr_t)owner_bits;
				uint32_t node = claimed ? rt_sync_copy_context(me, owner, h->node)
							: UINT32_MAX;
				h->node = FAT_UNTRACKED; /* a later free credits nothing */
				(*blocks)++;
				*bytes += n;
				if (node == UINT32_MAX)
					*lost += n;
				else
					rt_sync_credit(me, node, metric_leaked, n);
			}
		}
	}
	if (many)
		__atomic_store_n(&fat_scanning, 0, __ATOMIC_SEQ_CST);
}

static void memleak_process_finish(void)
{
	if (!table)
		return;
	struct mthread *me = rt_self();
	bool claimed = me && !inside && rt_sync_claim(me);
	uint64_t blocks = 0, bytes = 0, lost = 0;
	inside = 1;
	for (uint32_t i = 0; i <= small.mask + ARRAY_SIZE(big_touched) * 64 * SLOTS_PER_PAGE; i++) {
		struct slot *s;
		if (i <= small.mask) {
			s = &small.slot[i];
		} else {
			uint32_t at = i - small.mask - 1, page = at / SLOTS_PER_PAGE;
			if (!(__atomic_load_n(&big_touched[page / 64], __ATOMIC_ACQUIRE) &
			      (1ull << (page % 64)))) {
				i += SLOTS_PER_PAGE - 1 - at % SLOTS_PER_PAGE; /* the next page */
				continue;
			}
			s = &big.slot[at];
		}
		uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
		if (k == KEY_EMPTY || k == KEY_RESERVED)
			continue;
		struct slot e;
		if (!untrack_block(k, &e))
			continue; /* freed meanwhile by another thread */
		blocks++;
		bytes += e.bytes;
		uint32_t node = claimed ? rt_sync_copy_context(me, e.owner, e.node) : UINT32_MAX;
		if (node == UINT32_MAX)
			lost += e.bytes;
		else
			rt_sync_credit(me, node, metric_leaked, e.bytes);
	}
	finish_fat(me, claimed, &blocks, &bytes, &lost);
	inside = 0;
	if (claimed)
		rt_sync_release(me);
	rt_log("MEMLEAK: %llu blocks, %llu bytes still allocated at the end%s",
	       (unsigned long long)blocks, (unsigned long long)bytes,
	       probability < MLEAK_PROB_ONE ? " (estimated from the tracked fraction)" : "");
	if (lost)
		rt_log("error: MEMLEAK: %llu leaked bytes could not be recorded (%s)",
		       (unsigned long long)lost,
		       !me ? "the process ended in a thread that is not measured"
			   : "the thread ending the process was inside measure or out of memory");
	if (crowded)
		rt_log("error: MEMLEAK: %llu allocations were not tracked: the table was crowded",
		       (unsigned long long)crowded);
}

/*
 * The child of fork starts with nothing tracked (the blocks it inherits are the parent's), and
 * draws its own random numbers from now on.
 */
static void forget_in_child(void)
{
	rng = 0;
	ngaps = 0;
	countdown = 0;
	fat_generation++;
	memset(fat_busy, 0, sizeof(fat_busy)); /* the other threads are not in the child */
	fat_scanning = 0;
	if (!table)
		return;
	madvise(small.slot, (size_t)(small.mask + 1) * sizeof(struct slot), MADV_DONTNEED);
	madvise(big.slot, (size_t)(big.mask + 1) * sizeof(struct slot), MADV_DONTNEED);
	/* The filter stays: the blocks with a header that the child inherits must still be found
	 * (their counts are right), and counts of the forgotten entries only make it look
	 * further now and then. */
	memset(big_touched, 0, sizeof(big_touched));
	crowded = 0;
	big_entries = 0;
	table_entries = 0;
}

static void memleak_process_init(void)
{
	for (int i = 0; i < rt.cfg.nevents; i++) {
		const struct mevent *e = &rt.cfg.ev[i];
		if (e->source != MSOURCE_MEMLEAK)
			continue;
		if (e->config == MLEAK_ALLOCATED)
			metric_alloc = i;
		else if (e->config == MLEAK_FREED)
			metric_freed = i;
		else if (e->config == MLEAK_LEAKED)
			metric_leaked = i;
		probability = e->rate ? (uint32_t)FTH_MIN(e->rate, MLEAK_PROB_ONE) : MLEAK_PROB_ONE;
	}
	if (metric_alloc < 0 || metric_freed < 0 || metric_leaked < 0)
		return;
	gap_scale = probability >= MLEAK_PROB_ONE
			    ? 0
			    : 1 / ln1p(-(double)probability / MLEAK_PROB_ONE);
	inverse_p = probability >= MLEAK_PROB_ONE ? 1 : (double)MLEAK_PROB_ONE / probability;
	resolve();
	/* Say so when the program's own malloc comes first: nothing of it can be seen. */
	void *first = dlsym(RTLD_DEFAULT, "malloc");
	if (first && !rt_sync_from_measure((uint64_t)(uintptr_t)first + 1)) {
		Dl_info info;
		rt_log("error: MEMLEAK cannot measure this program: its malloc (in %s) comes before "
		       "measure's in the symbol search order (a statically linked allocator?)",
		       dladdr(first, &info) && info.dli_fname ? info.dli_fname : "an unknown module");
		return;
	}
	/*
	 * Huge pages where the kernel allows (transparent huge pages, "madvise" mode included):
	 * table lookups are scattered, and a TLB miss in a virtual machine walks two sets of page
	 * tables.  The small table comes first, in a 2 MiB page of its own (with 4 KiB pages, the
	 * prefetch of a slot in a page not yet touched cost as much as the rest of tracking the
	 * block), then the big one; the mapping is aligned to 2 MiB by hand.
	 */
	const size_t huge = (size_t)2 << 20;
	size_t big_bytes = ((size_t)1 << BIG_BITS) * sizeof(struct slot);
	size_t small_bytes = ((size_t)1 << SMALL_BITS) * sizeof(struct slot);
	/*
	 * The small table is sized for the tracked blocks among some 16 Ki live ones: at P < 1 a
	 * fraction P of them, so it has fewer slots, and its entries share fewer cache lines (at
	 * P = 0.1, 2 Ki slots: -2 to -4% of the time of an allocation-heavy program).
	 */
	uint32_t small_bits = SMALL_BITS;
	while (small_bits > SMALL_BITS_MIN &&
	       (uint64_t)probability << (SMALL_BITS - small_bits + 1) <= MLEAK_PROB_ONE)
		small_bits--;
	size_t small_room = (small_bytes + huge - 1) & ~(huge - 1);
	char *raw = mmap(NULL, small_room + big_bytes + huge, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED) {
		rt_log("error: MEMLEAK: no memory for the table of live blocks; not measured");
		return;
	}
	char *mem = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	small = (struct table){ (struct slot *)mem, (1u << small_bits) - 1, SMALL_PROBES, false,
				NULL };
	big = (struct table){ (struct slot *)(mem + small_room), (1u << BIG_BITS) - 1, BIG_PROBES,
			      true, big_touched };
	madvise(mem, small_room + big_bytes, MADV_HUGEPAGE);
	Dl_info where;
	if (dladdr((const void *)real.malloc, &where) && where.dli_fname &&
	    strstr(where.dli_fname, "/libc.so") && real.usable_size) {
		void *dir = mmap(NULL, FAT_DIR_SIZE * sizeof(uint64_t *), PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (dir != MAP_FAILED) {
			fat_dir = dir;
			fat_on = true;
		}
	}
	pthread_atfork(NULL, NULL, forget_in_child);
	__atomic_store_n(&table, big.slot, __ATOMIC_RELEASE);
	countdown = 0; /* drawn again, now that tracking is on */
}

/* ---- the wrappers ---- */

static inline bool resolved_or_boot(void)
{
	return likely(__atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL) || resolve();
}

/*
 * malloc and calloc decide before the real call whether this allocation is the one tracked (the
 * decision does not depend on the block), so that the calls not tracked jump to the real
 * function with nothing to do after it: no frame of their own, no registers kept across.
 */
static __attribute__((noinline)) void *malloc_slow(size_t n, uint64_t ra, uint64_t sp)
{
	if (unlikely(!resolved_or_boot()))
		return boot_alloc(n, 16);
	if (countdown > 0 || !decide())
		return real.malloc(n);
	if (fat_eligible(n, ra))
		return fat_allocated(real.malloc(n + FAT_HEADER), n, (const void *)real.malloc, ra,
				     sp);
	void *p = real.malloc(n);
	track(p, n, (const void *)real.malloc, ra, sp);
	return p;
}

EXPORT void *malloc(size_t n)
{
	malloc_fn f = __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE);
	if (likely(f != NULL) && likely(--countdown > 0))
		return f(n);
	return malloc_slow(n, CALLER(), CALLER_SP());
}

static __attribute__((noinline)) void *calloc_slow(size_t n, size_t size, uint64_t ra,
						   uint64_t sp)
{
	if (unlikely(!resolved_or_boot())) {
		size_t bytes;
		if (__builtin_mul_overflow(n, size, &bytes)) {
			errno = ENOMEM;
			return NULL;
		}
		return boot_alloc(bytes, 16); /* never used before: zero */
	}
	if (countdown > 0 || !decide())
		return real.calloc(n, size);
	size_t bytes;
	if (!__builtin_mul_overflow(n, size, &bytes) && fat_eligible(bytes, ra))
		return fat_allocated(real.calloc(1, bytes + FAT_HEADER), bytes,
				     (const void *)real.calloc, ra, sp);
	void *p = real.calloc(n, size);
	track(p, n * size, (const void *)real.calloc, ra, sp);
	return p;
}

EXPORT void *calloc(size_t n, size_t size)
{
	/* real.calloc is set before real.malloc (see resolve), so this one load says both. */
	if (likely(__atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL) &&
	    likely(--countdown > 0))
		return real.calloc(n, size);
	return calloc_slow(n, size, CALLER(), CALLER_SP());
}

/* The free of P, which the filter says may be tracked. */
static __attribute__((noinline)) void free_maybe_tracked(void *p)
{
	if (unlikely(is_boot(p)))
		return;
	if (!resolved_or_boot())
		return; /* only bootstrap blocks can exist yet */
	if (is_fat(p)) {
		free_fat(p);
		return;
	}
	/*
	 * The block's entry was last touched when it was allocated, and so was the allocator's
	 * header in front of the block: both are likely in no cache, and their misses should
	 * overlap.  While the process has one thread, no other can be handed the address
	 * meanwhile, so the real free goes first, the slot fetched during it.  Otherwise the
	 * block is untracked first, while the address cannot be handed out again, the header
	 * fetched during the lookup.
	 */
	struct slot e;
	if (table_empty()) {
		real.free(p);
		return;
	}
	if (p && table && one_thread()) {
		prefetch_slot((uint64_t)(uintptr_t)p);
		real.free(p);
		if (untrack_block((uint64_t)(uintptr_t)p, &e))
			credit_freed(&e);
		return;
	}
	__builtin_prefetch((const char *)p - 16, 1);
	if (p && table && counter_nonzero(p) &&
	    untrack_block((uint64_t)(uintptr_t)p, &e)) {
		real.free(p);
		credit_freed(&e);
		return;
	}
	real.free(p);
}

/* real.free until the real functions are found: only a null pointer can come here then (a
 * bootstrap block's bit is set in the filter), or one from the real allocator called directly. */
static void free_unresolved(void *p)
{
	if (p && resolve())
		real.free(p);
}

/* The common case a hash, a bit and a jump: bootstrap blocks are in the filter too. */
EXPORT void free(void *p)
{
	if (unlikely(maybe_tracked(p))) {
		free_maybe_tracked(p);
		return;
	}
	__atomic_load_n(&real.free, __ATOMIC_RELAXED)(p);
}

/*
 * realloc and reallocarray: the old block is freed, the new one allocated.  DUE: the count of
 * allocations reached this one, which is tracked (the caller decremented it).
 */
static __attribute__((noinline)) void *reallocate(void *p, size_t n, size_t count, bool array,
						   bool due, uint64_t ra, uint64_t sp)
{
	size_t bytes = n;
	if (array && __builtin_mul_overflow(count, n, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	if (unlikely(!resolved_or_boot())) {
		void *q = boot_alloc(bytes, 16);
		if (q && p)
			memcpy(q, p, FTH_MIN(bytes, boot_size(p)));
		return q;
	}
	if (unlikely(p && is_boot(p))) {
		/* A bootstrap block grows into a real one; the buffer keeps the old. */
		void *q = real.malloc(bytes ? bytes : 1);
		if (q)
			memcpy(q, p, FTH_MIN(bytes, boot_size(p)));
		if (due)
			chosen(q, bytes, (const void *)real.malloc, ra, sp);
		return q;
	}
	const void *callee = array && real.reallocarray ? (const void *)real.reallocarray
							 : (const void *)real.realloc;
	due = due && decide(); /* from here on: whether the new block is tracked */
	bool maybe = p && unlikely(maybe_tracked(p));
	if (maybe && is_fat(p))
		return realloc_fat(p, bytes, due, callee, ra, sp);
	bool in_table = maybe && table && !table_empty(); /* may be */
	if (due && !in_table && bytes && fat_eligible(bytes, ra))
		return realloc_to_fat(p, bytes, callee, ra, sp);
	struct slot e;
	bool had = false, after = false;
	if (in_table) {
		/* Untracked after the real call, or before with other threads, as in
		 * free_maybe_tracked(). */
		if (one_thread()) {
			prefetch_slot((uint64_t)(uintptr_t)p);
			after = true;
		} else {
			__builtin_prefetch((const char *)p - 16, 1);
			had = counter_nonzero(p) && untrack_block((uint64_t)(uintptr_t)p, &e);
		}
	}
	void *q = array && real.reallocarray ? real.reallocarray(p, count, n)
					     : real.realloc(p, bytes);
	if (unlikely(!q && bytes)) {
		/* Failed: P is untouched, and still tracked. */
		if (had && !track_block((uint64_t)(uintptr_t)p, e.owner, e.node, e.bytes))
			say_crowded();
		return q;
	}
	if (after)
		had = untrack_block((uint64_t)(uintptr_t)p, &e);
	if (unlikely(had))
		credit_freed(&e);
	if (q && due)
		track(q, bytes, callee, ra, sp);
	return q;
}

EXPORT void *realloc(void *p, size_t n)
{
	/* The common case a jump: resolved (real.realloc is set before real.malloc), P not maybe
	 * tracked by the filter (which holds the bootstrap blocks too), and the new block not the
	 * one tracked. */
	bool due = unlikely(--countdown <= 0);
	if (likely(!due && __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE) != NULL &&
		   !maybe_tracked(p)))
		return real.realloc(p, n);
	return reallocate(p, n, 1, false, due, CALLER(), CALLER_SP());
}

EXPORT void *reallocarray(void *p, size_t count, size_t n)
{
	bool due = --countdown <= 0;
	return reallocate(p, n, count, true, due, CALLER(), CALLER_SP());
}

static void *aligned(memalign_fn f, size_t align, size_t n, uint64_t ra, uint64_t sp)
{
	if (unlikely(!resolved_or_boot()))
		return boot_alloc(n, align);
	if (!f) {
		/* The allocator lacks this one: memalign does the same. */
		f = real.memalign;
		if (!f) {
			errno = ENOMEM;
			return NULL;
		}
	}
	void *p = f(align, n);
	AFTER_ALLOCATION(p, n, (const void *)f, ra, sp);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	return aligned(real.memalign, align, n, CALLER(), CALLER_SP());
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	return aligned(real.aligned_alloc, align, n, CALLER(), CALLER_SP());
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (unlikely(!resolved_or_boot())) {
		*out = boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	int rc = real.posix_memalign(out, align, n);
	if (rc == 0)
		AFTER_ALLOCATION(*out, n, (const void *)real.posix_memalign, CALLER(), CALLER_SP());
	return rc;
}

EXPORT void *valloc(size_t n)
{
	if (!real.valloc && __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE))
		return aligned(NULL, (size_t)sysconf(_SC_PAGESIZE), n, CALLER(), CALLER_SP());
	if (unlikely(!resolved_or_boot()))
		return boot_alloc(n, 4096);
	void *p = real.valloc(n);
	AFTER_ALLOCATION(p, n, (const void *)real.valloc, CALLER(), CALLER_SP());
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (!real.pvalloc && __atomic_load_n(&real.malloc, __ATOMIC_ACQUIRE))
		return aligned(NULL, page, (n + page - 1) & ~(page - 1), CALLER(), CALLER_SP());
	if (unlikely(!resolved_or_boot()))
		return boot_alloc((n + page - 1) & ~(page - 1), 4096);
	void *p = real.pvalloc(n);
	AFTER_ALLOCATION(p, n, (const void *)real.pvalloc, CALLER(), CALLER_SP());
	return p;
}

EXPORT size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (is_boot(p))
		return boot_size(p);
	if (!resolved_or_boot())
		return 0;
	if (maybe_tracked(p) && is_fat(p))
		return fat_usable_size(p);
	return real.usable_size ? real.usable_size(p) : 0;
}

/* What a MEMLEAK metric holds, with its probability P in decimal (the formatter has no %g). */
static void memleak_describe(const struct mevent *e, struct mfile_metric *x, char *out,
			     size_t size)
{
	char prob[16] = "1";
	if (e->rate < MLEAK_PROB_ONE) {
		fth_format(prob, sizeof(prob), "0.%09llu", (unsigned long long)e->rate);
		for (size_t n = strlen(prob); prob[n - 1] == '0'; n--)
			prob[n - 1] = '\0';
	}
	fth_format(out, size, "bytes %s, by allocating context (malloc family); allocations "
		   "tracked with probability %s%s",
		   e->config == MLEAK_ALLOCATED ? "allocated"
		   : e->config == MLEAK_FREED	? "freed"
						: "still allocated at the end",
		   prob, e->rate < MLEAK_PROB_ONE ? ", bytes scaled by 1/P" : "");
	rt_describe_every_event(x);
}

const struct rt_source rt_memleak_source = {
	.name = "MEMLEAK",
	.process_init = memleak_process_init,
	.process_finish = memleak_process_finish,
	.describe = memleak_describe,
};
