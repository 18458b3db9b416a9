/* SPDX-License-Identifier: MIT */
/* t-arena.c: the bump allocator: alignment, zeroing, limits, signal reentrancy, threads, forks. */
#include "compat.h"
#include "arena.h"
#include "hmap.h"
#include "tap.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096

/* A record of one allocation: where, how big, and the byte it was filled with. */
struct rec {
	uintptr_t p;
	size_t size;
	uint8_t tag;
	uint8_t from_signal;
};

static uint8_t tag_of(uint64_t idx)
{
	return (uint8_t)(hmap_mix(idx + 1) | 1); /* never 0, so overlap with fresh memory shows */
}

static bool all_bytes(const void *p, size_t n, uint8_t c)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++)
		if (s[i] != c)
			return false;
	return true;
}

static void fill(void *p, size_t n, uint8_t c)
{
	uint8_t *s = p;
	for (size_t i = 0; i < n; i++)
		s[i] = c;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	return x->p < y->p ? -1 : x->p > y->p;
}

/*
 * Check a set of allocations: each still holds its own tag in every byte, and sorted by
 * address none overlaps the next.  Returns the number of problems; sorts RECS.
 */
static size_t verify_recs(struct rec *recs, size_t n, const char *what)
{
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) {
		if (!all_bytes((void *)recs[i].p, recs[i].size, recs[i].tag)) {
			if (bad++ < 3)
				diag("%s: allocation %#lx+%zu lost its tag", what,
				     (unsigned long)recs[i].p, recs[i].size);
		}
	}
	qsort(recs, n, sizeof(*recs), cmp_rec);
	for (size_t i = 0; i + 1 < n; i++) {
		if (recs[i].p + recs[i].size > recs[i + 1].p) {
			if (bad++ < 6)
				diag("%s: %#lx+%zu (%s) overlaps %#lx+%zu (%s)", what,
				     (unsigned long)recs[i].p, recs[i].size,
				     recs[i].from_signal ? "handler" : "main",
				     (unsigned long)recs[i + 1].p, recs[i + 1].size,
				     recs[i + 1].from_signal ? "handler" : "main");
		}
	}
	return bad;
}

static void test_basics(void)
{
	struct arena a;
	arena_init(&a, 100000, 0);
	ok(a.block_size >= 100000 && a.block_size % PAGE == 0,
	   "block size is rounded up to whole pages (%zu)", a.block_size);
	is_uint(arena_mapped(&a), 0, "nothing is mapped before the first allocation");
	void *p = arena_alloc(&a, 10, 8);
	ok(p != NULL, "a small allocation");
	is_uint(arena_mapped(&a), a.block_size, "  maps one block");
	void *q = arena_alloc(&a, 10, 8);
	ok(q != NULL && q != p && arena_mapped(&a) == a.block_size,
	   "a second one comes from the same block");
	ok((uint8_t *)q >= (uint8_t *)p + 10 || (uint8_t *)p >= (uint8_t *)q + 10,
	   "  without overlapping the first");
	void *z = arena_alloc(&a, 0, 1);
	ok(z != NULL, "a zero-byte allocation returns a pointer");
	arena_release(&a);
	is_uint(arena_mapped(&a), 0, "arena_release unmaps everything");
	ok(a.head == NULL, "  and empties the block list");
	p = arena_alloc(&a, 100, 16);
	ok(p != NULL && all_bytes(p, 100, 0) && arena_mapped(&a) == a.block_size,
	   "the arena is usable after release");
	arena_release(&a);

	struct arena b;
	arena_init(&b, 1, 0);
	ok(b.block_size >= PAGE && b.block_size % PAGE == 0,
	   "a tiny block size becomes whole pages");
	ok(arena_alloc(&b, 1, 1) != NULL, "  and works");
	arena_release(&b);
	arena_release(&b);
	is_uint(arena_mapped(&b), 0, "releasing twice is harmless");
}

static void test_alignment(void)
{
	struct arena a;
	arena_init(&a, 0, 0);
	size_t misaligned = 0, dirty = 0, nulls = 0, n = 0;
	struct rec *recs = calloc(20000, sizeof(*recs));
	for (int rep = 0; rep < 100; rep++) {
		for (size_t align = 1; align <= PAGE; align *= 2) {
			/* An odd-sized allocation first, so the cursor is misaligned. */
			size_t sizes[2] = { (size_t)(rep % 7) + 1, (size_t)(rep * 37 % 300) + 1 };
			size_t aligns[2] = { 1, align };
			for (int k = 0; k < 2; k++) {
				uint8_t *p = arena_alloc(&a, sizes[k], aligns[k]);
				if (!p) {
					nulls++;
					continue;
				}
				if ((uintptr_t)p & (aligns[k] - 1))
					misaligned++;
				if (!all_bytes(p, sizes[k], 0))
					dirty++;
				recs[n].p = (uintptr_t)p;
				recs[n].size = sizes[k];
				recs[n].tag = tag_of(n);
				fill(p, sizes[k], recs[n].tag);
				n++;
			}
		}
	}
	is_uint(nulls, 0, "no allocation failed");
	is_uint(misaligned, 0, "every alignment from 1 to 4096 is honoured");
	is_uint(dirty, 0, "every allocation is zero-filled");
	is_uint(verify_recs(recs, n, "alignment"), 0,
		"%zu allocations keep their contents, no overlap", n);
	size_t sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += recs[i].size;
	ok(arena_mapped(&a) >= sum && arena_mapped(&a) % PAGE == 0,
	   "mapped (%zu) covers the %zu bytes handed out, in whole pages", arena_mapped(&a), sum);
	/* align 0 is treated as 1 */
	uint8_t *p = arena_alloc(&a, 3, 0);
	ok(p != NULL && all_bytes(p, 3, 0), "align 0 is accepted");
	arena_release(&a);
	free(recs);
}

static void test_large(void)
{
	struct arena a;
	arena_init(&a, 64 * 1024, 0);
	void *small = arena_alloc(&a, 100, 8);
	fill(small, 100, 0x11);
	size_t before = arena_mapped(&a);
	static const size_t sizes[] = { 64 * 1024, 64 * 1024 + 1, 1 << 20, (10 << 20) + 3 };
	static const size_t aligns[] = { 8, 4096, 64, 1 };
	struct rec recs[ARRAY_SIZE(sizes) + 1];
	recs[0] = (struct rec){ (uintptr_t)small, 100, 0x11, 0 };
	bool good = true;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		uint8_t *p = arena_alloc(&a, sizes[i], aligns[i]);
		if (!p) {
			diag("allocation of %zu bytes failed", sizes[i]);
			good = false;
			continue;
		}
		size_t delta = arena_mapped(&a) - before;
		before = arena_mapped(&a);
		ok(delta >= sizes[i] && delta <= sizes[i] + aligns[i] + 4 * PAGE,
		   "%zu bytes (align %zu): mapped grows by %zu", sizes[i], aligns[i], delta);
		if ((uintptr_t)p & (aligns[i] - 1) || !all_bytes(p, sizes[i], 0))
			good = false;
		recs[i + 1] = (struct rec){ (uintptr_t)p, sizes[i], tag_of(i), 0 };
		fill(p, sizes[i], tag_of(i));
	}
	ok(good, "allocations bigger than a block succeed, aligned and zero-filled");
	void *after = arena_alloc(&a, 50, 8);
	ok(after != NULL && all_bytes(after, 50, 0), "small allocations continue afterwards");
	is_uint(verify_recs(recs, ARRAY_SIZE(recs), "large"), 0,
		"large allocations are fully writable and do not overlap");
	arena_release(&a);
	is_uint(arena_mapped(&a), 0, "all released");

	/* Sizes around the block size, where the choice between block and dedicated map is made. */
	arena_init(&a, 64 * 1024, 0);
	size_t n = 0;
	struct rec around[64];
	good = true;
	for (size_t d = 0; d < 16; d++) {
		size_t size = 64 * 1024 - 64 + d * 9;
		size_t align = (size_t)1 << (d % 13);
		uint8_t *p = arena_alloc(&a, size, align);
		if (!p || !all_bytes(p, size, 0) || ((uintptr_t)p & (align - 1))) {
			good = false;
			continue;
		}
		around[n] = (struct rec){ (uintptr_t)p, size, tag_of(n + 100), 0 };
		fill(p, size, around[n].tag);
		n++;
	}
	ok(good && verify_recs(around, n, "around") == 0,
	   "allocations of about one block size each, at various alignments");
	arena_release(&a);
}

static void test_limit(void)
{
	struct arena a;
	arena_init(&a, 64 * 1024, 256 * 1024);
	size_t total = 0, count = 0;
	void *p;
	while ((p = arena_alloc(&a, 1000, 8)) != NULL) {
		total += 1000;
		count++;
		if (count > 1000)
			break;
	}
	ok(p == NULL, "allocation fails once the limit is reached (after %zu)", count);
	ok(arena_mapped(&a) <= 256 * 1024, "mapped (%zu) stays within the limit", arena_mapped(&a));
	ok(total > 256 * 1024 - 2 * 64 * 1024, "  after using most of it (%zu bytes)", total);
	size_t m = arena_mapped(&a);
	ok(arena_alloc(&a, 1000, 8) == NULL && arena_alloc(&a, 1 << 20, 8) == NULL,
	   "further allocations keep failing");
	is_uint(arena_mapped(&a), m, "  without mapping more");
	arena_release(&a);

	arena_init(&a, 64 * 1024, 128 * 1024);
	ok(arena_alloc(&a, 1 << 20, 8) == NULL,
	   "an allocation larger than the limit fails at once");
	is_uint(arena_mapped(&a), 0, "  and maps nothing");
	p = arena_alloc(&a, 100, 8);
	ok(p != NULL, "a small allocation still succeeds");
	uint8_t *big = arena_alloc(&a, 64 * 1024, 8);
	ok(big == NULL && arena_mapped(&a) <= 128 * 1024,
	   "a block that would pass the limit is refused (mapped %zu)", arena_mapped(&a));
	arena_release(&a);

	/* Sizes so large that computing the block size would overflow: NULL, nothing mapped. */
	arena_init(&a, 64 * 1024, 1 << 20);
	p = arena_alloc(&a, 10, 8);
	m = arena_mapped(&a);
	static const size_t huge[] = { SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 8, SIZE_MAX - 4000,
				       SIZE_MAX - 2 * PAGE, SIZE_MAX / 2 };
	size_t wrong = 0;
	for (size_t i = 0; i < ARRAY_SIZE(huge); i++) {
		for (size_t align = 1; align <= PAGE; align *= 16) {
			if (arena_alloc(&a, huge[i], align) != NULL)
				wrong++;
			if (arena_mapped(&a) != m) {
				if (wrong++ < 3)
					diag("size %#zx align %zu mapped %zu bytes", huge[i], align,
					     arena_mapped(&a) - m);
				m = arena_mapped(&a);
			}
		}
	}
	is_uint(wrong, 0, "absurd sizes fail without mapping anything");
	ok(arena_alloc(&a, 10, 8) != NULL, "  and the arena still works");
	arena_release(&a);

	/*
	 * The same without a limit must also fail (promptly, not by mapping blocks until memory
	 * runs out); only tried when the limited arena showed nothing gets mapped.
	 */
	if (wrong) {
		skip("absurd sizes map memory", "absurd sizes in an arena without a limit");
		return;
	}
	arena_init(&a, 0, 0);
	ok(arena_alloc(&a, SIZE_MAX, 8) == NULL && arena_alloc(&a, SIZE_MAX - 100, 64) == NULL,
	   "absurd sizes fail in an arena without a limit");
	is_uint(arena_mapped(&a), 0, "  mapping nothing");
	arena_release(&a);
}

/*
 * Reentrancy: SIGPROF (ITIMER_PROF) and SIGALRM (ITIMER_REAL) handlers allocate from the
 * arena the main loop is allocating from; SIGPROF may also interrupt the SIGALRM handler.
 */
#define SIG_RECS (1 << 17)
#define ROUND_BYTES (8u << 20)

static struct arena sig_arena;
static struct rec *sig_recs;
static size_t sig_nrecs;		/* atomic */
static volatile sig_atomic_t sig_enabled;
static volatile sig_atomic_t in_alloc;	/* main is inside arena_alloc */
/* Counted by the handlers. */
static volatile unsigned long sig_calls, sig_allocs, sig_inside, sig_nested;
static volatile unsigned long sig_failed, sig_dirty, sig_misaligned, sig_dropped;
static volatile sig_atomic_t handler_depth;

/* Take a record slot, fill the memory with the slot's tag and record it. */
static bool record(void *p, size_t size, size_t align, bool from_signal,
		   volatile unsigned long *dirty, volatile unsigned long *misaligned,
		   volatile unsigned long *dropped)
{
	if (!all_bytes(p, size, 0))
		(*dirty)++;
	if ((uintptr_t)p & (align - 1))
		(*misaligned)++;
	size_t idx = __atomic_fetch_add(&sig_nrecs, 1, __ATOMIC_RELAXED);
	if (idx >= SIG_RECS) {
		(*dropped)++;
		return false;
	}
	uint8_t tag = tag_of(idx);
	fill(p, size, tag);
	sig_recs[idx] = (struct rec){ (uintptr_t)p, size, tag, from_signal };
	return true;
}

static void on_signal(int sig)
{
	int saved = errno;
	sig_calls++;
	if (handler_depth)
		sig_nested++;
	handler_depth++;
	if (sig_enabled) {
		if (in_alloc)
			sig_inside++;
		uint64_t seed = hmap_mix(sig_calls * 2 + (unsigned)(sig == SIGALRM));
		int n = 4 + (int)(seed % 5);
		for (int i = 0; i < n; i++) {
			uint64_t x = hmap_mix(seed + (uint64_t)i);
			size_t size = 1 + (size_t)(x % 700);
			size_t align = (size_t)1 << ((x >> 16) % 13);
			if (i == 0 && (x >> 40) % 8 == 0)
				size = 70000; /* bigger than a block */
			void *p = arena_alloc(&sig_arena, size, align);
			if (!p) {
				sig_failed++;
				continue;
			}
			sig_allocs++;
			record(p, size, align, true, &sig_dirty, &sig_misaligned, &sig_dropped);
		}
	}
	handler_depth--;
	errno = saved;
}

static void set_timers(long prof_usec, long real_usec)
{
	struct itimerval it;
	memset(&it, 0, sizeof(it));
	it.it_interval.tv_usec = prof_usec;
	it.it_value.tv_usec = prof_usec;
	setitimer(ITIMER_PROF, &it, NULL);
	it.it_interval.tv_usec = real_usec;
	it.it_value.tv_usec = real_usec;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void test_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0 || sigaction(SIGALRM, &sa, NULL) != 0) {
		skip("sigaction failed", "allocation from signal handlers");
		return;
	}
	sig_recs = calloc(SIG_RECS, sizeof(*sig_recs));

	volatile unsigned long main_dirty = 0, main_misaligned = 0, main_dropped = 0;
	unsigned long main_failed = 0;
	size_t bad = 0, total_recs = 0, main_allocs = 0, bad_mapped = 0;
	int rounds = 0;
	uint64_t x = 1;
	set_timers(100, 1000);
	while (rounds < 400 && (sig_allocs < 2000 || rounds < 3)) {
		rounds++;
		arena_init(&sig_arena, 64 * 1024, 0);
		__atomic_store_n(&sig_nrecs, 0, __ATOMIC_RELAXED);
		size_t bytes = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		sig_enabled = 1;
		while (bytes < ROUND_BYTES &&
		       __atomic_load_n(&sig_nrecs, __ATOMIC_RELAXED) < SIG_RECS - 8192) {
			x = hmap_mix(x);
			size_t size = 1 + (size_t)(x % 400);
			size_t align = (size_t)1 << ((x >> 20) % 8);
			if ((x >> 32) % 64 == 0)
				size = 10000 + (size_t)((x >> 40) % 90000);
			in_alloc = 1;
			void *p = arena_alloc(&sig_arena, size, align);
			in_alloc = 0;
			if (!p) {
				main_failed++;
				continue;
			}
			main_allocs++;
			bytes += size;
			record(p, size, align, false, &main_dirty, &main_misaligned, &main_dropped);
		}
		sig_enabled = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		size_t n = __atomic_load_n(&sig_nrecs, __ATOMIC_RELAXED);
		if (n > SIG_RECS)
			n = SIG_RECS;
		size_t sum = 0;
		for (size_t i = 0; i < n; i++)
			sum += sig_recs[i].size;
		if (arena_mapped(&sig_arena) < sum || arena_mapped(&sig_arena) % PAGE)
			bad_mapped++;
		bad += verify_recs(sig_recs, n, "signals");
		total_recs += n;
		arena_release(&sig_arena);
	}
	set_timers(0, 0);
	signal(SIGPROF, SIG_IGN);
	signal(SIGALRM, SIG_IGN);

	diag("%d rounds: %zu allocations in main, %lu in %lu handler calls (%lu while main was in "
	     "arena_alloc, %lu nested handlers)",
	     rounds, main_allocs, sig_allocs, sig_calls, sig_inside, sig_nested);
	ok(sig_allocs > 0, "the signal handlers allocated (%lu times)", sig_allocs);
	is_uint(main_failed + sig_failed, 0, "no allocation failed");
	is_uint(main_dirty + sig_dirty, 0, "every allocation was zero-filled when handed out");
	is_uint(main_misaligned + sig_misaligned, 0, "every allocation was aligned");
	is_uint(main_dropped + sig_dropped, 0, "every allocation was recorded");
	is_uint(bad, 0, "%zu allocations from main and handlers: no overlap, no lost tags",
		total_recs);
	is_uint(bad_mapped, 0, "mapped covers everything handed out in every round");
	free(sig_recs);
}

/* Several threads, each with its own arena. */
#define N_THREADS 4
#define THREAD_ALLOCS 50000

struct thread_result {
	int id;
	size_t bad, nulls, dirty, misaligned, mapped_ok;
};

static void *arena_thread(void *arg)
{
	struct thread_result *r = arg;
	struct arena a;
	arena_init(&a, 64 * 1024 + (size_t)r->id * PAGE, 0);
	struct rec *recs = calloc(THREAD_ALLOCS, sizeof(*recs));
	uint64_t x = (uint64_t)r->id * 1000003 + 7;
	size_t sum = 0;
	for (size_t i = 0; i < THREAD_ALLOCS; i++) {
		x = hmap_mix(x);
		size_t size = 1 + (size_t)(x % 300);
		size_t align = (size_t)1 << ((x >> 20) % 13);
		if ((x >> 32) % 1000 == 0)
			size = 100000; /* bigger than a block */
		uint8_t *p = arena_alloc(&a, size, align);
		if (!p) {
			r->nulls++;
			recs[i].size = 0;
			continue;
		}
		if ((uintptr_t)p & (align - 1))
			r->misaligned++;
		if (!all_bytes(p, size, 0))
			r->dirty++;
		uint8_t tag = (uint8_t)(tag_of(i) ^ (uint8_t)(r->id << 4));
		recs[i] = (struct rec){ (uintptr_t)p, size, tag | 1, 0 };
		fill(p, size, tag | 1);
		sum += size;
	}
	r->bad = verify_recs(recs, THREAD_ALLOCS, "thread");
	r->mapped_ok = arena_mapped(&a) >= sum && arena_mapped(&a) % PAGE == 0;
	arena_release(&a);
	r->mapped_ok = r->mapped_ok && arena_mapped(&a) == 0;
	free(recs);
	return NULL;
}

static void test_threads(void)
{
	pthread_t tids[N_THREADS];
	struct thread_result res[N_THREADS];
	int started = 0;
	for (int i = 0; i < N_THREADS; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].id = i;
		if (pthread_create(&tids[i], NULL, arena_thread, &res[i]) != 0)
			break;
		started++;
	}
	is_int(started, N_THREADS, "started %d threads", N_THREADS);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (int i = 0; i < started; i++) {
		ok(res[i].nulls == 0 && res[i].dirty == 0 && res[i].misaligned == 0,
		   "thread %d: every allocation succeeded, zeroed and aligned", i);
		is_uint(res[i].bad, 0, "thread %d: %d allocations keep their tags, no overlap", i,
			THREAD_ALLOCS);
		ok(res[i].mapped_ok, "thread %d: mapped accounting", i);
	}
}

/* Whether [P, P + 1) is mapped in this process (mincore fails with ENOMEM where it is not). */
static bool mapped_here(const void *p)
{
	unsigned char vec;
	return mincore((void *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1)), PAGE, &vec) == 0;
}

/* 1 when P is mapped in a forked child, 0 when not, -1 when the child could not tell. */
static int child_sees(const void *p)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(mapped_here(p) ? 1 : 0);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void test_fork(void)
{
	struct arena kept, own;
	arena_init(&kept, 64 * 1024, 0);
	arena_init(&own, 64 * 1024, 0);
	arena_not_inherited(&own);
	char *k = arena_alloc(&kept, 100, 8), *o = arena_alloc(&own, 100, 8);
	ok(k && o, "allocations from both arenas");
	fill((uint8_t *)o, 100, 0x5a);
	is_int(child_sees(k), 1, "a forked child inherits an ordinary arena's blocks");
	is_int(child_sees(o), 0, "a forked child does not inherit a not-inherited arena's blocks");
	ok(all_bytes((uint8_t *)o, 100, 0x5a), "the parent keeps them, contents intact");
	char *big = arena_alloc(&own, 200 * 1024, 64); /* a block of its own, mapped later */
	is_int(big ? child_sees(big) : -1, 0, "nor the blocks mapped afterwards");

	/* Starting over: the old blocks stay as they are, new allocations go to a new block. */
	fill((uint8_t *)k, 100, 0x33);
	size_t before = arena_mapped(&kept);
	arena_start_over(&kept);
	is_uint(arena_mapped(&kept), 0, "starting over counts no block mapped");
	char *fresh = arena_alloc(&kept, 100, 8);
	size_t apart = fresh > k ? (size_t)(fresh - k) : (size_t)(k - fresh);
	ok(fresh && all_bytes((uint8_t *)fresh, 100, 0) && apart >= 64 * 1024,
	   "the next allocation comes from a fresh, zero-filled block");
	ok(all_bytes((uint8_t *)k, 100, 0x33), "the forgotten block is still mapped and intact");
	ok(before > 0 && arena_mapped(&kept) > 0, "the fresh block is counted");
	arena_release(&kept); /* unmaps the fresh block only: the old one is no longer known */
	ok(mapped_here(k), "releasing after starting over leaves the forgotten block alone");
	arena_release(&own);
}

int main(void)
{
	test_basics();
	test_alignment();
	test_large();
	test_limit();
	test_signals();
	test_threads();
	test_fork();
	return done_testing();
}
