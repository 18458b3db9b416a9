/* SPDX-License-Identifier: MIT */
/* t-format.c: fth_format against libc snprintf, truncation, per-thread errors, fth_strerror. */
#include "compat.h"
#include "error.h"
#include "tap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

#define SENTINEL 0x5a
#define OUT_SIZE 512

static uint64_t rng_state = 0x853c49e6748fea9bULL;

static uint64_t rng(void)
{
	return tap_rng(&rng_state);
}

static uint64_t rng_value(void)
{
	return tap_rng_value(&rng_state);
}

/*
 * Compare fth_vformat(FMT, AP) with snprintf's output for the same call, at every buffer size
 * from 0 to the full length + 2: same return value, same (truncated) text, NUL-terminated,
 * and no byte written at or after SIZE.  WANT is snprintf's full output and WANT_N its return.
 */
static bool check_sizes(const char *what, const char *want, int want_n, const char *fmt,
			va_list ap) FTH_PRINTF(4, 0);

static bool check_sizes(const char *what, const char *want, int want_n, const char *fmt,
			va_list ap)
{
	char got[OUT_SIZE + 8];
	if (want_n < 0 || want_n >= OUT_SIZE - 4) {
		diag("%s: reference output too long (%d)", what, want_n);
		return false;
	}
	for (size_t size = 0; size <= (size_t)want_n + 2; size++) {
		memset(got, SENTINEL, sizeof(got));
		va_list cp;
		va_copy(cp, ap);
		size_t n = fth_vformat(got, size, fmt, cp);
		va_end(cp);
		if (n != (size_t)want_n) {
			diag("%s: size %zu: returned %zu, want %d", what, size, n, want_n);
			return false;
		}
		if (size > 0) {
			size_t keep = FTH_MIN((size_t)want_n, size - 1);
			if (memcmp(got, want, keep) != 0 || got[keep] != '\0') {
				diag("%s: size %zu: got '%.*s', want '%.*s'", what, size,
				     (int)keep, got, (int)keep, want);
				return false;
			}
		}
		for (size_t i = size; i < sizeof(got); i++) {
			if ((unsigned char)got[i] != SENTINEL) {
				diag("%s: size %zu: byte %zu written", what, size, i);
				return false;
			}
		}
	}
	return true;
}

static bool cmp_one(const char *what, const char *want, int want_n, const char *fmt, ...)
	FTH_PRINTF(4, 5);

static bool cmp_one(const char *what, const char *want, int want_n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	bool pass = check_sizes(what, want, want_n, fmt, ap);
	va_end(ap);
	return pass;
}

/*
 * CMP(fmt, args...): one check that fth_format and snprintf agree on this call at every
 * buffer size.  The format must be a literal so that both calls are checked by the compiler.
 */
#define CMP(...)                                                                    \
	do {                                                                        \
		char want_[OUT_SIZE];                                               \
		int want_n_ = snprintf(want_, sizeof(want_), __VA_ARGS__);          \
		ok(cmp_one(#__VA_ARGS__, want_, want_n_, __VA_ARGS__),              \
		   "format %s -> '%s'", #__VA_ARGS__, want_);                      \
	} while (0)

/* Like CMP but for loops: counts mismatches instead of emitting a check per call. */
#define AGREE(counter, ...)                                                         \
	do {                                                                        \
		char want_[OUT_SIZE];                                               \
		int want_n_ = snprintf(want_, sizeof(want_), __VA_ARGS__);          \
		if (!cmp_one(#__VA_ARGS__, want_, want_n_, __VA_ARGS__))            \
			(counter)++;                                                \
	} while (0)

static void test_basic(void)
{
	CMP("plain text");
	CMP("%s", "");
	CMP("%s", "hello");
	CMP("<%s|%s>", "a", "bc");
	CMP("%%");
	CMP("100%% sure %%%s%%", "x");
	CMP("%c", 'x');
	CMP("%c%c%c", 'a', '\t', '~');
	CMP("%d", 0);
	CMP("%d", 42);
	CMP("%d", -42);
	CMP("%i", 123456);
	CMP("%i", -7);
	CMP("%d", INT_MAX);
	CMP("%d", INT_MIN);
	CMP("%u", 0u);
	CMP("%u", UINT_MAX);
	CMP("%x", 0u);
	CMP("%x", 0xdeadbeefu);
	CMP("%X", 0xdeadbeefu);
	CMP("%x", (unsigned)-1);
	CMP("%ld", LONG_MAX);
	CMP("%ld", LONG_MIN);
	CMP("%li", -1L);
	CMP("%lu", ULONG_MAX);
	CMP("%lx", 0x123456789abcdefUL);
	CMP("%lX", ULONG_MAX);
	CMP("%lld", LLONG_MAX);
	CMP("%lld", LLONG_MIN);
	CMP("%lli", -1234567890123LL);
	CMP("%llu", ULLONG_MAX);
	CMP("%llx", 0xfedcba9876543210ULL);
	CMP("%llX", 0xfedcba9876543210ULL);
	CMP("%zu", (size_t)0);
	CMP("%zu", SIZE_MAX);
	CMP("%zx", SIZE_MAX);
	CMP("%zX", (size_t)0xabcdef);
	CMP("%zd", (ssize_t)-1);
	CMP("%zd", (ssize_t)SSIZE_MAX);
	CMP("%zi", (ssize_t)-SSIZE_MAX - 1);
	CMP("%p", (void *)0x1234);
	CMP("%p", (void *)(uintptr_t)UINTPTR_MAX);
	CMP("%p", (void *)&rng_state);
	CMP("chunk %s: %llu nodes in %zu bytes (%d%%)", "CCT", 12345ULL, (size_t)99, -3);
}

static void test_width_flags(void)
{
	CMP("[%5d]", 42);
	CMP("[%5d]", -42);
	CMP("[%-5d]", 42);
	CMP("[%-5d]", -42);
	CMP("[%05d]", 42);
	CMP("[%05d]", -42);
	CMP("[%05d]", 0);
	CMP("[%01d]", -42);
	CMP("[%02d]", -42);
	CMP("[%03d]", -42);
	CMP("[%2d]", 12345);
	CMP("[%020lld]", LLONG_MIN);
	CMP("[%-20lld]", LLONG_MIN);
	CMP("[%25llu]", ULLONG_MAX);
	CMP("[%08x]", 0xbeefu);
	CMP("[%-8x]", 0xbeefu);
	CMP("[%8X]", 0xbeefu);
	CMP("[%016llx]", 1ULL);
	CMP("[%010u]", 7u);
	CMP("[%-10u]", 7u);
	CMP("[%4zu]", (size_t)3);
	CMP("[%-4zd]", (ssize_t)-3);
	CMP("[%06zd]", (ssize_t)-3);
	CMP("[%8s]", "abc");
	CMP("[%-8s]", "abc");
	CMP("[%2s]", "abcdef");
	CMP("[%3c]", 'q');
	CMP("[%-3c]", 'q');
	CMP("[%1c]", 'q');
	CMP("[%100d]", 1);
	CMP("[%-100s]", "wide");
	CMP("[%20p]", (void *)0x1234);
	CMP("[%-20p]", (void *)0x1234);
	CMP("[%3p]", (void *)0x1234);
	/* The '#' flag: "0x" before nonzero hexadecimal numbers only. */
	CMP("[%#x]", 0xbeefu);
	CMP("[%#x]", 0u);
	CMP("[%#X]", 0xbeefu);
	CMP("[%#llx]", 0x123456789abcULL);
	CMP("[%#10x]", 0xbeefu);
	CMP("[%#-10x]", 0xbeefu);
	CMP("[%#010x]", 0xbeefu);
	CMP("[%#lx] and %s", 1ul, "the next argument");
}

static void test_precision_string(void)
{
	CMP("[%.*s]", 3, "abcdef");
	CMP("[%.*s]", 0, "abcdef");
	CMP("[%.*s]", 10, "abc");
	CMP("[%.*s]", -1, "abcdef");
	CMP("[%.3s]", "abcdef");
	CMP("[%.0s]", "abcdef");
	CMP("[%.10s]", "abc");
	CMP("[%8.*s]", 2, "abcdef");
	CMP("[%-8.*s]", 2, "abcdef");
	CMP("[%.*s|%d]", 4, "key=value", 9);

	/* An array without a terminator: %.*s must not look beyond PRECISION bytes. */
	long page = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		skip("mmap failed", "%.*s stops at the precision");
		return;
	}
	mprotect(map + page, (size_t)page, PROT_NONE);
	char *s = map + page - 5;
	memcpy(s, "xyzzy", 5);
	char out[32];
	size_t n = fth_format(out, sizeof(out), "<%.*s>", 5, s);
	is_str(out, "<xyzzy>", "%%.*s reads an unterminated array up to the precision only");
	is_uint(n, 7, "  and returns its length");
	fth_format(out, sizeof(out), "<%.3s>", s + 2);
	is_str(out, "<zzy>", "%%.3s: a 3-byte array at the end of a page");
	fth_format(out, sizeof(out), "<%-6.*s>", 2, s + 3);
	is_str(out, "<zy    >", "%%-6.*s: the last 2 bytes of a page");
	s[4] = '\0';
	n = fth_format(out, sizeof(out), "<%.*s>", 5, s);
	is_str(out, "<xyzz>", "%%.*s stops at a NUL before the precision");
	munmap(map, (size_t)page * 2);
}

static void test_own_behaviour(void)
{
	char out[64];
	const char *volatile null_str = NULL;

	size_t n = fth_format(out, sizeof(out), "[%s]", null_str);
	is_str(out, "[(null)]", "%%s of NULL prints (null)");
	is_uint(n, 8, "  length 8");
	fth_format(out, sizeof(out), "%p", (void *)0);
	is_str(out, "0x0", "%%p of NULL prints 0x0");
	n = fth_format(NULL, 0, "%s=%d", "answer", 42);
	is_uint(n, 9, "size 0 with a NULL buffer only measures");
	memset(out, 'Z', sizeof(out));
	n = fth_format(out, 1, "%s", "abc");
	ok(n == 3 && out[0] == '\0' && out[1] == 'Z', "size 1 gives the empty string");
	n = fth_format(out, sizeof(out), "%c", '\0');
	ok(n == 1 && out[0] == '\0' && out[1] == '\0', "%%c of NUL counts one byte");
	n = fth_format(out, sizeof(out), "%s", "");
	ok(n == 0 && out[0] == '\0', "empty result");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#pragma GCC diagnostic ignored "-Wformat-security"
	n = fth_format(out, sizeof(out), "%0-5d|%-05d|", 7, -7);
	is_str(out, "7    |-7   |", "'-' wins over '0' in either order");
	const char *volatile lone = "abc%";
	n = fth_format(out, sizeof(out), lone);
	is_str(out, "abc%", "a lone '%%' at the end is printed and the NUL not passed");
	is_uint(n, 4, "  length 4");
	n = fth_format(out, sizeof(out), "%q%d", 5);
	is_str(out, "%q5", "an unknown conversion is printed as is without taking an argument");
#pragma GCC diagnostic pop
}

/* Many values of random magnitude through every numeric conversion, against snprintf. */
static void test_random_numbers(void)
{
	int bad_int = 0, bad_long = 0, bad_ll = 0, bad_z = 0, bad_p = 0, bad_mix = 0;
	for (int i = 0; i < 3000; i++) {
		uint64_t v = rng_value();
		unsigned int ui = (unsigned int)v;
		int si = (int)ui;
		unsigned long ul = (unsigned long)v;
		long sl = (long)ul;
		unsigned long long ull = v;
		long long sll = (long long)ull;
		size_t z = (size_t)v;
		ssize_t sz = (ssize_t)z;
		void *p = (void *)(uintptr_t)(v | 1);

		AGREE(bad_int, "%d|%i|%u|%x|%X", si, si, ui, ui, ui);
		AGREE(bad_int, "%12d|%-12d|%012d|%1d", si, si, si, si);
		AGREE(bad_int, "%12u|%-12u|%012u|%09x|%-9X|", ui, ui, ui, ui, ui);
		AGREE(bad_long, "%ld|%li|%lu|%lx|%lX", sl, sl, ul, ul, ul);
		AGREE(bad_long, "%25ld|%-25ld|%025ld|%018lx", sl, sl, sl, ul);
		AGREE(bad_ll, "%lld|%lli|%llu|%llx|%llX", sll, sll, ull, ull, ull);
		AGREE(bad_ll, "%24lld|%-24lld|%024lld|%024llu|%-17llx|", sll, sll, sll, ull, ull);
		AGREE(bad_z, "%zd|%zi|%zu|%zx|%zX", sz, sz, z, z, z);
		AGREE(bad_z, "%22zd|%-22zu|%022zd|%07zx", sz, z, sz, z);
		AGREE(bad_p, "%p|%24p|%-24p|%5p", p, p, p, p);
		int prec = (int)(rng() % 12) - 1;
		AGREE(bad_mix, "%s=%-6d%.*s%c%%%08llx", "key", si, prec, "0123456789",
		      (char)('a' + (int)(v % 26)), ull);
	}
	is_int(bad_int, 0, "random int values: %%d %%i %%u %%x %%X with widths and flags");
	is_int(bad_long, 0, "random long values: %%ld %%lu %%lx %%lX");
	is_int(bad_ll, 0, "random long long values: %%lld %%llu %%llx %%llX");
	is_int(bad_z, 0, "random size_t values: %%zd %%zu %%zx %%zX");
	is_int(bad_p, 0, "random pointers: %%p with widths and flags");
	is_int(bad_mix, 0, "random mixed formats");
}

/* Long output: widths and strings that exceed the buffer, at every size. */
static void test_long_output(void)
{
	char big[300];
	for (size_t i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('A' + i % 26);
	big[sizeof(big) - 1] = '\0';
	CMP("%s|%d", big, -5);
	CMP("%.*s|%250s|", 100, big, "x");

	char out[16];
	size_t n = fth_format(out, sizeof(out), "%s", big);
	is_uint(n, strlen(big), "truncated output returns the full length");
	ok(strlen(out) == sizeof(out) - 1 && memcmp(out, big, sizeof(out) - 1) == 0,
	   "  and keeps a NUL-terminated prefix");
}

static void test_errors(void)
{
	fth_error_clear();
	is_str(fth_errmsg(), "", "no message after fth_error_clear");
	is_int(fth_error("bad %s at %d", "thing", 3), -1, "fth_error returns -1");
	is_str(fth_errmsg(), "bad thing at 3", "fth_error records the message");
	is_int(fth_error("second"), -1, "fth_error returns -1 again");
	is_str(fth_errmsg(), "second", "a new message replaces the old one");

	is_int(fth_error_prefix("ctx %d", 7), -1, "fth_error_prefix returns -1");
	is_str(fth_errmsg(), "ctx 7: second", "fth_error_prefix puts context in front");
	fth_error_prefix("%s", "outer");
	is_str(fth_errmsg(), "outer: ctx 7: second", "prefixes nest");

	is_int(fth_error_errno(ENOENT, "open %s", "/x"), -1, "fth_error_errno returns -1");
	is_str(fth_errmsg(), "open /x: No such file or directory",
	       "fth_error_errno appends strerror");
	fth_error_errno(EACCES, "write");
	is_str(fth_errmsg(), "write: Permission denied", "fth_error_errno with EACCES");
	fth_error_errno(98765, "odd");
	is_str(fth_errmsg(), "odd: error 98765", "fth_error_errno with an unknown code");
	fth_error_errno(-3, "neg");
	is_str(fth_errmsg(), "neg: error -3", "fth_error_errno with a negative code");
	fth_error_prefix("while %s", "reading");
	is_str(fth_errmsg(), "while reading: neg: error -3", "prefix after fth_error_errno");

	fth_error_clear();
	is_str(fth_errmsg(), "", "fth_error_clear forgets the message");

	/* Messages longer than the per-thread buffer are truncated but stay terminated. */
	char *huge = malloc(5000);
	memset(huge, 'h', 4999);
	huge[4999] = '\0';
	fth_error("%s", huge);
	size_t cap = strlen(fth_errmsg());
	ok(cap > 100 && cap < 4999, "a huge message is truncated (kept %zu bytes)", cap);
	ok(strspn(fth_errmsg(), "h") == cap, "  to a prefix of itself");
	fth_error_prefix("pre");
	ok(strlen(fth_errmsg()) == cap && strncmp(fth_errmsg(), "pre: hhh", 8) == 0,
	   "prefixing a full message keeps the prefix and the size");
	fth_error_errno(EIO, "%s", huge);
	ok(strlen(fth_errmsg()) == cap && strspn(fth_errmsg(), "h") == cap,
	   "fth_error_errno with a full message truncates without the suffix");
	huge[cap - 3] = '\0';
	fth_error_errno(EIO, "%s", huge);
	ok(strlen(fth_errmsg()) == cap && strncmp(fth_errmsg() + cap - 3, ": I", 3) == 0,
	   "fth_error_errno near the limit truncates the suffix");
	huge[cap - 3] = 'h';
	huge[100] = '\0';
	fth_error("%s", huge);
	huge[100] = 'h';
	huge[cap] = '\0';
	fth_error_prefix("%s", huge);
	ok(strlen(fth_errmsg()) == cap && strspn(fth_errmsg(), "h") == cap,
	   "a prefix that fills the buffer drops the old message");
	free(huge);
	fth_error_clear();
}

static void test_strerror(void)
{
	char buf[64];
	is_str(fth_strerror(ENOENT, buf, sizeof(buf)), "No such file or directory", "ENOENT");
	is_str(fth_strerror(EINVAL, buf, sizeof(buf)), "Invalid argument", "EINVAL");
	is_str(fth_strerror(ENOSPC, buf, sizeof(buf)), "No space left on device", "ENOSPC");
	const char *s = fth_strerror(EPERM, buf, sizeof(buf));
	ok(s != buf, "a known code does not use the caller's buffer");
	s = fth_strerror(4242, buf, sizeof(buf));
	ok(s == buf, "an unknown code is formatted into the caller's buffer");
	is_str(s, "error 4242", "  as 'error N'");
	is_str(fth_strerror(0, buf, sizeof(buf)), "error 0", "code 0");
	is_str(fth_strerror(INT_MIN, buf, sizeof(buf)), "error -2147483648", "INT_MIN");
	char small[6];
	memset(small, 'Z', sizeof(small));
	s = fth_strerror(4242, small, 5);
	ok(s == small && strcmp(small, "erro") == 0 && small[5] == 'Z',
	   "a small buffer is truncated and terminated");

#ifdef __GLIBC__
	int known = 0, bad = 0;
	for (int e = 1; e < 200; e++) {
		s = fth_strerror(e, buf, sizeof(buf));
		if (s == buf)
			continue;
		known++;
		if (strcmp(s, strerror(e)) != 0) {
			diag("errno %d: '%s' vs libc '%s'", e, s, strerror(e));
			bad++;
		}
	}
	ok(known >= 20, "the table knows the common codes (%d)", known);
	is_int(bad, 0, "every table entry matches glibc's strerror");
#endif
}

#define N_THREADS 4
#define THREAD_ROUNDS 20000

struct thread_arg {
	int id;
	pthread_barrier_t *barrier;
	char initial[64];
	char after_main_changed[64];
	const char *msg_ptr;
	int mismatches;
};

static void *error_thread(void *p)
{
	struct thread_arg *t = p;
	snprintf(t->initial, sizeof(t->initial), "%s", fth_errmsg());
	fth_error("thread %d says %s", t->id, "hello");
	t->msg_ptr = fth_errmsg();
	pthread_barrier_wait(t->barrier); /* 1: every thread has its message */
	pthread_barrier_wait(t->barrier); /* 2: main has changed its own */
	snprintf(t->after_main_changed, sizeof(t->after_main_changed), "%s", fth_errmsg());
	char want[64];
	for (int i = 0; i < THREAD_ROUNDS; i++) {
		fth_error("t%d round %d", t->id, i);
		if (i % 3 == 0)
			fth_error_prefix("p%d", i);
		if (i % 3 == 0)
			snprintf(want, sizeof(want), "p%d: t%d round %d", i, t->id, i);
		else
			snprintf(want, sizeof(want), "t%d round %d", t->id, i);
		if (strcmp(fth_errmsg(), want) != 0)
			t->mismatches++;
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_barrier_t barrier;
	pthread_t tids[N_THREADS];
	struct thread_arg args[N_THREADS];

	pthread_barrier_init(&barrier, NULL, N_THREADS + 1);
	fth_error("main message %d", 1);
	for (int i = 0; i < N_THREADS; i++) {
		memset(&args[i], 0, sizeof(args[i]));
		args[i].id = i;
		args[i].barrier = &barrier;
		if (pthread_create(&tids[i], NULL, error_thread, &args[i]) != 0) {
			ok(0, "pthread_create");
			return;
		}
	}
	pthread_barrier_wait(&barrier);
	is_str(fth_errmsg(), "main message 1", "threads' messages leave main's alone");
	fth_error("main changed");
	pthread_barrier_wait(&barrier);
	for (int i = 0; i < N_THREADS; i++)
		pthread_join(tids[i], NULL);
	pthread_barrier_destroy(&barrier);

	for (int i = 0; i < N_THREADS; i++) {
		char want[64];
		snprintf(want, sizeof(want), "thread %d says hello", i);
		is_str(args[i].initial, "", "thread %d starts with no message", i);
		is_str(args[i].after_main_changed, want,
		       "thread %d keeps its message when main records another", i);
		ok(args[i].msg_ptr != fth_errmsg(), "thread %d has its own buffer", i);
		is_int(args[i].mismatches, 0, "thread %d: concurrent messages stay its own", i);
	}
	is_str(fth_errmsg(), "main changed", "main's message survives the threads");
	fth_error_clear();
}

int main(void)
{
	test_basic();
	test_width_flags();
	test_precision_string();
	test_own_behaviour();
	test_random_numbers();
	test_long_output();
	test_errors();
	test_strerror();
	test_threads();
	return done_testing();
}
