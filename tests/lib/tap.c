/* SPDX-License-Identifier: MIT */
/* tap.c: the TAP output, temporary-directory and whole-file helpers of tap.h. */
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int tests_run, tests_failed;
static char tmpdir[256];

static void report(bool pass, const char *file, int line, const char *fmt, va_list ap)
{
	tests_run++;
	if (!pass)
		tests_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tests_run);
	vprintf(fmt, ap);
	putchar('\n');
	if (!pass)
		printf("#   Failed test at %s line %d.\n", file, line);
	fflush(stdout);
}

bool ok_(bool pass, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(pass, file, line, fmt, ap);
	va_end(ap);
	return pass;
}

bool is_int_(long long got, long long want, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(got == want, file, line, fmt, ap);
	va_end(ap);
	if (got != want)
		printf("#          got: %lld\n#     expected: %lld\n", got, want);
	return got == want;
}

bool is_uint_(unsigned long long got, unsigned long long want, const char *file, int line,
	      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report(got == want, file, line, fmt, ap);
	va_end(ap);
	if (got != want)
		printf("#          got: %llu (%#llx)\n#     expected: %llu (%#llx)\n", got, got, want,
		       want);
	return got == want;
}

bool is_str_(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
{
	bool pass = got && want ? strcmp(got, want) == 0 : got == want;
	va_list ap;
	va_start(ap, fmt);
	report(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#          got: '%s'\n#     expected: '%s'\n", got ? got : "(null)",
		       want ? want : "(null)");
	return pass;
}

bool like_(const char *haystack, const char *needle, const char *file, int line,
	   const char *fmt, ...)
{
	bool pass = haystack && strstr(haystack, needle);
	va_list ap;
	va_start(ap, fmt);
	report(pass, file, line, fmt, ap);
	va_end(ap);
	if (!pass)
		printf("#          got: '%s'\n#     expected to contain: '%s'\n",
		       haystack ? haystack : "(null)", needle);
	return pass;
}

void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

void skip(const char *reason, const char *name)
{
	tests_run++;
	printf("ok %d - %s # SKIP %s\n", tests_run, name, reason);
}

void skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	exit(0);
}

uint64_t tap_rng(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

uint64_t tap_rng_value(uint64_t *state)
{
	unsigned bits = (unsigned)(tap_rng(state) % 65);
	uint64_t v = tap_rng(state);
	return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

const char *tap_tmpdir(void)
{
	if (!tmpdir[0]) {
		const char *base = getenv("TMPDIR");
		snprintf(tmpdir, sizeof(tmpdir), "%s/fathom-test-XXXXXX", base && *base ? base : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			exit(99);
		}
	}
	return tmpdir;
}

char *tap_path(const char *name)
{
	size_t size = strlen(tap_tmpdir()) + strlen(name) + 2;
	char *p = malloc(size);
	if (!p)
		exit(99);
	snprintf(p, size, "%s/%s", tap_tmpdir(), name);
	unlink(p);
	return p;
}

char **tap_strdup_array(const char *const *strings, uint32_t n)
{
	char **copy = calloc(n ? n : 1, sizeof(*copy));
	if (!copy)
		exit(99);
	for (uint32_t i = 0; i < n; i++)
		if (!(copy[i] = strdup(strings[i])))
			exit(99);
	return copy;
}

char *tap_mkdir(const char *name)
{
	char *p = tap_path(name);
	if (mkdir(p, 0755) < 0) {
		perror(p);
		exit(99);
	}
	return p;
}

void *tap_read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t size = 0, cap = 4096;
	char *data = malloc(cap);
	size_t got;
	while (data && (got = fread(data + size, 1, cap - size, f)) > 0) {
		size += got;
		if (size == cap)
			data = realloc(data, cap *= 2);
	}
	fclose(f);
	if (!data)
		exit(99);
	*n = size;
	return data;
}

void tap_write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(99);
	}
}

void tap_write_flipped(const char *path, const void *data, size_t n, size_t at, unsigned mask)
{
	unsigned char *copy = malloc(n ? n : 1);
	if (!copy)
		exit(99);
	memcpy(copy, data, n);
	copy[at] ^= (unsigned char)mask;
	tap_write_file(path, copy, n);
	free(copy);
}

int done_testing(void)
{
	printf("1..%d\n", tests_run);
	if (tests_failed)
		printf("# %d of %d checks failed\n", tests_failed, tests_run);
	if (tmpdir[0] && !getenv("KEEP_TMP")) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return tests_failed ? 1 : 0;
}
