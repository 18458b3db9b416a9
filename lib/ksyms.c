/* SPDX-License-Identifier: MIT */
/*
 * ksyms.c: the kernel symbols file (ksyms.h): picked out of /proc/kallsyms, written, read and
 * checked, merged and searched.
 */
#include "compat.h"
#include "ksyms.h"
#include "buf.h"
#include "error.h"
#include "input.h"
#include "search.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NAME 1024
#define MAX_LINE (MAX_NAME + 64)

/* A kallsyms line's function symbol, sorted by address; a global one wins over a local one. */
struct raw_sym {
	uint64_t addr;
	char *name;
	bool global;
};

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return (int)y->global - (int)x->global;
}

static bool name_ok(const char *s, size_t n)
{
	if (n == 0 || n > MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int ksyms_from_kallsyms(FILE *f, uint64_t *addrs, size_t n, struct ksyms *k)
{
	struct raw_sym *raw = NULL;
	size_t nraw = 0, araw = 0, lines = 0;
	bool nonzero = false;
	char line[MAX_LINE];
	while (fgets(line, sizeof(line), f)) {
		char *end, type, *name;
		uint64_t a = strtoull(line, &end, 16);
		if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
			continue;
		lines++;
		nonzero |= a != 0;
		type = end[1];
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		name = end + 3;
		size_t len = strcspn(name, "\n");
		/* "name\t[module]" for a module's symbol: "name [module]" */
		for (size_t i = 0; i < len; i++)
			if (name[i] == '\t')
				name[i] = ' ';
		if (!name_ok(name, len))
			continue;
		ALLOC_GROW(raw, nraw + 1, araw);
		raw[nraw].addr = a;
		raw[nraw].name = xstrndup(name, len);
		raw[nraw].global = type == 'T' || type == 'W';
		nraw++;
	}
	if (ferror(f)) {
		for (size_t i = 0; i < nraw; i++)
			free(raw[i].name);
		free(raw);
		return fth_error("/proc/kallsyms: read error");
	}
	k->n = 0;
	k->syms = NULL;
	free(k->hidden);
	k->hidden = NULL;
	if (!nonzero) {
		k->hidden = xstrdup(lines ? "the kernel shows its symbols' addresses as 0 "
					    "(kernel.kptr_restrict, or not root)"
					  : "/proc/kallsyms is empty");
	} else if (nraw && n) {
		qsort(raw, nraw, sizeof(*raw), cmp_raw);
		qsort(addrs, n, sizeof(*addrs), fth_cmp_u64);
		size_t cap = 0, r = 0;
		for (size_t i = 0; i < n; i++) {
			/* the last symbol starting at or before ADDRS[i], the first of its address */
			while (r + 1 < nraw && raw[r + 1].addr <= addrs[i])
				r++;
			if (raw[r].addr > addrs[i])
				continue;
			size_t first = r;
			while (first && raw[first - 1].addr == raw[r].addr)
				first--;
			size_t next = r + 1;
			if (next >= nraw)
				continue; /* past the last symbol: its end is not known */
			if (k->n && k->syms[k->n - 1].start == raw[first].addr)
				continue;
			ALLOC_GROW(k->syms, k->n + 1, cap);
			k->syms[k->n].start = raw[first].addr;
			k->syms[k->n].end = raw[next].addr;
			k->syms[k->n].name = xstrdup(raw[first].name);
			k->n++;
		}
	}
	for (size_t i = 0; i < nraw; i++)
		free(raw[i].name);
	free(raw);
	return 0;
}

int ksyms_write(int dirfd, const char *name, const struct ksyms *k)
{
	struct buf b = BUF_INIT;
	buf_printf(&b, "%s %d\nhost %s\nbuild-id ", KSYMS_MAGIC, KSYMS_MAJOR,
		   k->host ? k->host : "");
	for (uint32_t i = 0; i < k->build_id_len; i++)
		buf_printf(&b, "%02x", k->build_id[i]);
	buf_addch(&b, '\n');
	if (k->hidden)
		buf_printf(&b, "hidden %s\n", k->hidden);
	for (size_t i = 0; i < k->n; i++)
		buf_printf(&b, "%016" PRIx64 " %016" PRIx64 " %s\n", k->syms[i].start,
			   k->syms[i].end, k->syms[i].name);
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		buf_release(&b);
		return fth_error_errno(errno, "%s: cannot create", name);
	}
	size_t off = 0;
	while (off < b.len) {
		ssize_t w = write(fd, b.data + off, b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int err = w < 0 ? errno : ENOSPC;
			close(fd);
			unlinkat(dirfd, name, 0);
			buf_release(&b);
			return fth_error_errno(err, "%s: cannot write", name);
		}
		off += (size_t)w;
	}
	buf_release(&b);
	if (close(fd) < 0) {
		unlinkat(dirfd, name, 0);
		return fth_error_errno(errno, "%s: cannot write", name);
	}
	return 0;
}

static int hex_byte(const char *p)
{
	int v = 0;
	for (int i = 0; i < 2; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else
			return -1;
	}
	return v;
}

/* A hexadecimal u64 of 1 to 16 digits at *P, then a space; advances *P past the space. */
static bool get_hex(char **p, uint64_t *v)
{
	char *s = *p;
	size_t n = strspn(s, "0123456789abcdef");
	if (n == 0 || n > 16 || s[n] != ' ')
		return false;
	*v = strtoull(s, NULL, 16);
	*p = s + n + 1;
	return true;
}

int ksyms_read(const char *path, struct ksyms *k)
{
	memset(k, 0, sizeof(*k));
	int fd = input_open(path, NULL);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return fth_error_errno(errno, "%s: cannot read", path);
	}
	char line[MAX_LINE + 2];
	size_t cap = 0;
	unsigned lineno = 0;
	bool host = false, build_id = false;
	const char *why = NULL;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		size_t len = strlen(line);
		if (len == 0 || line[len - 1] != '\n') {
			why = len > MAX_LINE ? "line too long" : "cut short (no newline)";
			break;
		}
		line[--len] = '\0';
		char *p = line;
		if (lineno == 1) {
			size_t m = strlen(KSYMS_MAGIC);
			if (strncmp(line, KSYMS_MAGIC, m) || line[m] != ' ') {
				why = "not a kernel symbols file (no " KSYMS_MAGIC " line)";
				break;
			}
			if (strtoul(line + m + 1, NULL, 10) != KSYMS_MAJOR ||
			    strspn(line + m + 1, "0123456789") != len - m - 1) {
				fclose(f);
				ksyms_release(k);
				return fth_error("%s: kernel symbols format version %s, not %d", path,
						 line + m + 1, KSYMS_MAJOR);
			}
			continue;
		}
		if (!strncmp(p, "host ", 5) && !host && !k->n) {
			host = true;
			if (!name_ok(p + 5, len - 5) && len > 5) {
				why = "bad host name";
				break;
			}
			k->host = xstrdup(p + 5);
		} else if (!strncmp(p, "build-id ", 9) && !build_id && !k->n) {
			build_id = true;
			size_t h = len - 9;
			if (h % 2 || h / 2 > KSYMS_MAX_BUILD_ID) {
				why = "bad build-id";
				break;
			}
			for (size_t i = 0; i < h / 2; i++) {
				int v = hex_byte(p + 9 + 2 * i);
				if (v < 0)
					break;
				k->build_id[i] = (uint8_t)v;
				k->build_id_len = (uint32_t)i + 1;
			}
			if (k->build_id_len != h / 2) {
				why = "bad build-id";
				break;
			}
		} else if (!strncmp(p, "hidden ", 7) && !k->hidden && !k->n) {
			if (!name_ok(p + 7, len - 7)) {
				why = "bad reason";
				break;
			}
			k->hidden = xstrdup(p + 7);
		} else {
			struct ksym s;
			if (!get_hex(&p, &s.start) || !get_hex(&p, &s.end)) {
				why = "expected START END NAME";
				break;
			}
			if (s.end <= s.start || (k->n && s.start < k->syms[k->n - 1].end)) {
				why = "symbols out of order or overlapping";
				break;
			}
			if (!name_ok(p, strlen(p))) {
				why = "bad symbol name";
				break;
			}
			s.name = xstrdup(p);
			ALLOC_GROW(k->syms, k->n + 1, cap);
			k->syms[k->n++] = s;
		}
	}
	if (!why && ferror(f))
		why = "read error";
	if (!why && lineno == 0)
		why = "empty file";
	if (!why && (!host || !build_id))
		why = "the host or the build-id is missing";
	fclose(f);
	if (why) {
		ksyms_release(k);
		return fth_error("%s: line %u: %s", path, lineno, why);
	}
	return 0;
}

void ksyms_merge(struct ksyms *k, const struct ksyms *o)
{
	size_t n = k->n + o->n, i = 0, j = 0, out = 0;
	struct ksym *m = xreallocarray(NULL, n ? n : 1, sizeof(*m));
	while (i < k->n || j < o->n) {
		bool mine = j >= o->n || (i < k->n && k->syms[i].start <= o->syms[j].start);
		const struct ksym *s = mine ? &k->syms[i++] : &o->syms[j++];
		if (out && s->start < m[out - 1].end) {
			/* the same symbol from another process (or an overlap): the first stays */
			if (mine)
				free(s->name);
			continue;
		}
		m[out] = *s;
		if (!mine)
			m[out].name = xstrdup(s->name);
		out++;
	}
	free(k->syms);
	k->syms = m;
	k->n = out;
}

const struct ksym *ksyms_find(const struct ksyms *k, uint64_t addr)
{
	size_t after = FTH_UPPER_BOUND(k->syms, k->n, start, addr);
	if (!after || addr >= k->syms[after - 1].end)
		return NULL;
	return &k->syms[after - 1];
}

void ksyms_release(struct ksyms *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->syms[i].name);
	free(k->syms);
	free(k->host);
	free(k->hidden);
	memset(k, 0, sizeof(*k));
}
