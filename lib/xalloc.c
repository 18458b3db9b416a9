/* SPDX-License-Identifier: MIT */
/* xalloc.c: malloc wrappers for the offline tools; out of memory ends the program. */
#include "compat.h"
#include "xalloc.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

static void *check(void *p, size_t size)
{
	if (!p && size)
		die(3, "out of memory (asked for %zu bytes)", size);
	return p;
}

void *xmalloc(size_t size)
{
	return check(malloc(size ? size : 1), size);
}

void *xcalloc(size_t n, size_t size)
{
	return check(calloc(n ? n : 1, size ? size : 1), n * size);
}

void *xrealloc(void *p, size_t size)
{
	return check(realloc(p, size ? size : 1), size);
}

void *xreallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes))
		die(3, "out of memory (%zu elements of %zu bytes)", n, size);
	return xrealloc(p, bytes);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *d = xmalloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *xpath_join(const char *dir, const char *name)
{
	size_t n = strlen(dir), k = strlen(name);
	char *p = xmalloc(n + k + 2);
	memcpy(p, dir, n);
	p[n] = '/';
	memcpy(p + n + 1, name, k + 1);
	return p;
}

void xstrdup_empty_if_null(char **const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!*s[i])
			*s[i] = xstrdup("");
}

void free_strings(char **strings, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(strings[i]);
	free(strings);
}
