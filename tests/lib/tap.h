/* SPDX-License-Identifier: MIT */
/*
 * tap.h: a small Test Anything Protocol library for the C unit tests.  Each check prints
 * "ok N - NAME" or "not ok N - NAME" with a diagnostic; done_testing() prints the plan and
 * returns the exit status.
 */
#ifndef FATHOM_TAP_H
#define FATHOM_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool ok_(bool pass, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
bool is_int_(long long got, long long want, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
bool is_uint_(unsigned long long got, unsigned long long want, const char *file, int line,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
bool is_str_(const char *got, const char *want, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* Pass when HAYSTACK contains NEEDLE. */
bool like_(const char *haystack, const char *needle, const char *file, int line,
	   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void skip(const char *reason, const char *name);
/* Print "1..0 # SKIP REASON" and exit 0: the whole test file cannot run here. */
void skip_all(const char *reason) __attribute__((noreturn));
/* Print the plan; returns 0 when every check passed, else 1. */
int done_testing(void);
/* The next number of a deterministic xorshift64 sequence; *STATE is the test's seed, never 0. */
uint64_t tap_rng(uint64_t *state);
/* A number of random bit length (0 to 64 bits), so that short and long numbers both occur. */
uint64_t tap_rng_value(uint64_t *state);
/* A fresh temporary directory for this test (removed by done_testing unless KEEP_TMP is set). */
const char *tap_tmpdir(void);
/* The path of a new file NAME in tap_tmpdir() (malloc'ed; whatever was there is removed). */
char *tap_path(const char *name);
/* A copy of the N strings at STRINGS: the array and each string malloc'ed, as files free them. */
char **tap_strdup_array(const char *const *strings, uint32_t n);
/* A new directory NAME in tap_tmpdir() (its path, malloc'ed); exits 99 when it cannot. */
char *tap_mkdir(const char *name);
/* The whole of file PATH (malloc'ed, its size in *N), or NULL when it cannot be opened. */
void *tap_read_file(const char *path, size_t *n);
/* Replaces file PATH with the N bytes at DATA; exits 99 (a hard error) when it cannot. */
void tap_write_file(const char *path, const void *data, size_t n);
/* tap_write_file() of a copy of DATA whose byte AT is xored with MASK. */
void tap_write_flipped(const char *path, const void *data, size_t n, size_t at, unsigned mask);

#define ok(pass, ...) ok_(!!(pass), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) is_int_((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_uint(got, want, ...) is_uint_((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define is_str(got, want, ...) is_str_((got), (want), __FILE__, __LINE__, __VA_ARGS__)
#define like(got, needle, ...) like_((got), (needle), __FILE__, __LINE__, __VA_ARGS__)

#endif
