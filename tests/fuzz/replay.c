/* SPDX-License-Identifier: MIT */
/*
 * replay.c: the gcc driver of the fuzz target: replays seed files, then deterministic mutations.
 *
 *   fuzz-replay [-n MUTATIONS] [-s SEED] FILE_OR_DIR...
 *
 * Every file named (and every regular file in a directory named, in sorted order) is fed to
 * LLVMFuzzerTestOneInput() as it is, then MUTATIONS times after one to four mutations drawn
 * from a seeded xorshift generator: bit flips, bytes set to 0/0xff/0x7f/0x80, truncation,
 * duplication or removal of a byte range, varints rewritten to edge values and little-endian
 * words (sizes and offsets in the container) set to edge values.  The same SEED gives the same
 * executions on every machine.  A bug crashes the process (the sanitizers report it), so a
 * run that prints its summary found nothing.
 */
#include "compat.h"
#include "le.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * UBSan recovers by default: undefined behaviour prints a line and the run goes on.  Make it
 * fatal like the ASan reports, unless UBSAN_OPTIONS says otherwise.  Weak, so that a fuzz
 * target may define it too; that works with gcc's shared sanitizer runtime, while clang's
 * static one has its own weak definition that wins over this one (the target's strong one
 * wins over both).
 */
const char *__ubsan_default_options(void);
__attribute__((weak)) const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/* Input files are refused above MAX_INPUT_SIZE; mutations grow one by at most GROWTH bytes. */
#define MAX_INPUT_SIZE (256u << 20)
#define GROWTH 4096

static const char *progname = "fuzz-replay";

static FTH_NORETURN FTH_PRINTF(1, 2) void fail(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *xmalloc_or_die(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		fail("out of memory");
	return p;
}

/* ---- inputs ---- */

struct names {
	char **v;
	size_t n, cap;
};

static void names_add(struct names *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			fail("out of memory");
	}
	l->v[l->n++] = s;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void add_arg(struct names *l, const char *arg)
{
	struct stat st;
	if (stat(arg, &st) < 0)
		fail("%s: %s", arg, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		names_add(l, strdup(arg));
		return;
	}
	DIR *d = opendir(arg);
	if (!d)
		fail("%s: %s", arg, strerror(errno));
	struct names sub = { 0 };
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		size_t len = strlen(arg) + strlen(de->d_name) + 2;
		char *path = xmalloc_or_die(len);
		snprintf(path, len, "%s/%s", arg, de->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
			names_add(&sub, path);
		else
			free(path);
	}
	closedir(d);
	if (sub.n == 0)
		fail("%s: no files in the directory", arg);
	qsort(sub.v, sub.n, sizeof(*sub.v), cmp_names);
	for (size_t i = 0; i < sub.n; i++)
		names_add(l, sub.v[i]);
	free(sub.v);
}

static uint8_t *read_file(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		fail("%s: %s", path, strerror(errno));
	if ((uint64_t)st.st_size > MAX_INPUT_SIZE)
		fail("%s: larger than %u MiB", path, MAX_INPUT_SIZE >> 20);
	size_t n = (size_t)st.st_size;
	uint8_t *d = xmalloc_or_die(n);
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, d + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			fail("%s: read failed", path);
		got += (size_t)k;
	}
	close(fd);
	*size = n;
	return d;
}

/* ---- the generator: xorshift64*, seeded per input with splitmix64 ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	rng_state = z ? z : 1;
}

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform-enough value in [0, n); n > 0. */
static size_t rng_below(size_t n)
{
	return (size_t)(rng_next() % n);
}

/* ---- mutations on a buffer of LEN bytes and CAPACITY bytes of room ---- */

static size_t capacity;

static const uint8_t interesting8[] = { 0x00, 0xff, 0x7f, 0x80 };
static const uint64_t interesting64[] = {
	0, 1, 2, 0x7f, 0x80, 0xff, 0x3fff, 0x4000, 0xffff, 0x10000, 0x7fffffff, 0x80000000,
	0xffffffff, 0x100000000ULL, 0xfffffffffULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
	0xffffffffffffffffULL,
};

static uint64_t interesting_value(void)
{
	if (rng_below(4) == 0)
		return rng_next() >> rng_below(64);
	uint64_t v = interesting64[rng_below(ARRAY_SIZE(interesting64))];
	/* Off by one in either direction finds boundary checks. */
	switch (rng_below(4)) {
	case 0: return v + 1;
	case 1: return v - 1;
	default: return v;
	}
}

/* Replace the bytes [AT, AT + OLD) with NEW_LEN bytes from SRC; returns the new length. */
static size_t replace_range(uint8_t *buf, size_t len, size_t at, size_t old,
			    const uint8_t *src, size_t new_len)
{
	if (len - old + new_len > capacity)
		return len;
	memmove(buf + at + new_len, buf + at + old, len - at - old);
	memcpy(buf + at, src, new_len);
	return len - old + new_len;
}

static size_t mutate_once(uint8_t *buf, size_t len)
{
	uint8_t tmp[16];
	if (len == 0) {
		tmp[0] = interesting8[rng_below(ARRAY_SIZE(interesting8))];
		return replace_range(buf, len, 0, 0, tmp, 1);
	}
	size_t at = rng_below(len);
	switch (rng_below(8)) {
	case 0: /* flip one bit */
		buf[at] ^= (uint8_t)(1u << rng_below(8));
		return len;
	case 1: /* set a byte to an interesting value */
		buf[at] = interesting8[rng_below(ARRAY_SIZE(interesting8))];
		return len;
	case 2: /* truncate */
		return rng_below(len);
	case 3: { /* duplicate a range: insert a copy of it right after itself */
		size_t n = 1 + rng_below(FTH_MIN(len - at, (size_t)256));
		if (len + n > capacity)
			return len;
		memmove(buf + at + n, buf + at, len - at);
		return len + n;
	}
	case 4: { /* remove a range */
		size_t n = 1 + rng_below(FTH_MIN(len - at, (size_t)256));
		memmove(buf + at, buf + at + n, len - at - n);
		return len - n;
	}
	case 5: /* random byte */
		buf[at] = (uint8_t)rng_next();
		return len;
	case 6: { /* a varint-looking run of bytes (continuation bits, then an end byte) */
		size_t start = at, end = at;
		while (start > 0 && (buf[start - 1] & 0x80) && at - start < 9)
			start--;
		while (end < len && (buf[end] & 0x80) && end - start < 9)
			end++;
		if (end < len)
			end++;
		size_t n = le_put_varint(tmp, interesting_value());
		if (rng_below(3) == 0 && n < end - start) {
			/* Same length: overlong encoding of a value that keeps the layout. */
			tmp[n - 1] |= 0x80;
			memset(tmp + n, 0x80, end - start - n - 1);
			tmp[end - start - 1] = 0;
			n = end - start;
		}
		return replace_range(buf, len, start, end - start, tmp, n);
	}
	default: { /* a little-endian 4- or 8-byte word: sizes, offsets and counts */
		size_t w = rng_below(2) ? 4 : 8;
		if (len < w)
			return len;
		at = rng_below(len - w + 1);
		/* Prefer 8-byte-aligned words from the end: that is where the TOC and footer are. */
		if (len >= 8 && rng_below(2))
			at = len - 8 - 8 * rng_below(FTH_MIN(len / 8, (size_t)128));
		uint64_t v = interesting_value();
		for (size_t i = 0; i < w; i++)
			buf[at + i] = (uint8_t)(v >> (8 * i));
		return len;
	}
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: %s [-n MUTATIONS] [-s SEED] FILE_OR_DIR...\n", progname);
	exit(2);
}

static unsigned long long parse_number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-')
		fail("bad %s '%s'", what, s);
	return v;
}

int main(int argc, char **argv)
{
	unsigned long long nmut = 1000, seed = 1;
	int opt;
	while ((opt = getopt(argc, argv, "n:s:h")) != -1) {
		switch (opt) {
		case 'n': nmut = parse_number(optarg, "mutation count"); break;
		case 's': seed = parse_number(optarg, "seed"); break;
		default: usage();
		}
	}
	if (optind == argc)
		usage();
	struct names inputs = { 0 };
	for (int i = optind; i < argc; i++)
		add_arg(&inputs, argv[i]);

	uint8_t *buf = NULL;
	unsigned long long execs = 0;
	for (size_t i = 0; i < inputs.n; i++) {
		size_t size;
		uint8_t *orig = read_file(inputs.v[i], &size);
		/* The seed file as it is, in an exact-size copy so ASan sees any overread. */
		uint8_t *exact = xmalloc_or_die(size);
		memcpy(exact, orig, size);
		LLVMFuzzerTestOneInput(exact, size);
		free(exact);
		execs++;
		rng_seed(seed * 0x100000001b3ULL + i);
		if (size + GROWTH > capacity) {
			capacity = size + GROWTH;
			free(buf);
			buf = xmalloc_or_die(capacity);
		}
		for (unsigned long long k = 0; k < nmut; k++) {
			memcpy(buf, orig, size);
			size_t len = size;
			unsigned rounds = 1 + (unsigned)rng_below(4);
			for (unsigned r = 0; r < rounds; r++)
				len = mutate_once(buf, len);
			exact = xmalloc_or_die(len);
			memcpy(exact, buf, len);
			LLVMFuzzerTestOneInput(exact, len);
			free(exact);
			execs++;
		}
		free(orig);
		free(inputs.v[i]);
	}
	free(inputs.v);
	free(buf);
	printf("fuzz-replay: %zu inputs, %llu executions, 0 crashes\n", inputs.n, execs);
	return 0;
}
