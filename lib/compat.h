/* SPDX-License-Identifier: MIT */
/* compat.h: the first include of every fathom source file: config, attributes, small macros. */
#ifndef FATHOM_COMPAT_H
#define FATHOM_COMPAT_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define FTH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define FTH_NORETURN __attribute__((noreturn))
#define FTH_UNUSED __attribute__((unused))
#define FTH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FTH_MAX(a, b) ((a) > (b) ? (a) : (b))

/* A table of names from an X(enum suffix, value, name) list: { LIST(FTH_NAME_ENTRY) }. */
#define FTH_NAME_ENTRY(e, v, n) [v] = n,
/* NAMES[I] of such a table of N, or NONE where I names nothing. */
static inline const char *fth_name_at(const char *const *names, size_t n, size_t i,
				      const char *none)
{
	return i < n && names[i] ? names[i] : none;
}

/* Whether S ends with SUFFIX. */
static inline bool fth_has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

#endif
