/* SPDX-License-Identifier: MIT */
/* srcpath.c: source file names from DWARF made absolute against the compilation directory. */
#include "compat.h"
#include "srcpath.h"
#include "buf.h"
#include "xalloc.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* PATH (absolute) without "." and "name/.." components, or NULL when it has none. */
static char *tidy_path(const char *path)
{
	if (!strstr(path, "/./") && !strstr(path, "/../"))
		return NULL;
	char *out = xmalloc(strlen(path) + 2);
	size_t o = 0;
	for (const char *p = path; *p;) {
		while (*p == '/')
			p++;
		const char *end = strchr(p, '/');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else if (len && !(len == 1 && p[0] == '.')) {
			out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

char *source_path(const char *comp_dir, const char *name)
{
	if (name[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return NULL;
	struct buf b = BUF_INIT;
	buf_addstr(&b, comp_dir);
	if (b.data[b.len - 1] != '/')
		buf_addch(&b, '/');
	buf_addstr(&b, name);
	char *joined = buf_detach(&b, NULL), *tidy = tidy_path(joined);
	struct stat x, y;
	if (tidy && stat(joined, &x) == 0 && stat(tidy, &y) == 0 && x.st_dev == y.st_dev &&
	    x.st_ino == y.st_ino) {
		free(joined);
		return tidy;
	}
	free(tidy);
	return joined;
}
