/* SPDX-License-Identifier: MIT */
/* userdir.c: the per-user cache directory and mkdir -p (userdir.h). */
#include "compat.h"
#include "userdir.h"
#include "buf.h"
#include "error.h"
#include "xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *user_cache_dir(const char *name)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct buf b = BUF_INIT;
	if (xdg && *xdg)
		buf_printf(&b, "%s/fathom/%s", xdg, name);
	else if (home && *home)
		buf_printf(&b, "%s/.cache/fathom/%s", home, name);
	else
		return NULL;
	return buf_detach(&b, NULL);
}

int mkdir_p(const char *path, mode_t mode)
{
	char *p = xstrdup(path);
	int rc = 0;
	for (char *s = p + 1;; s++) {
		if (*s && *s != '/')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) < 0 && errno != EEXIST) {
			rc = fth_error_errno(errno, "%s: cannot create", p);
			break;
		}
		if (!c)
			break;
		*s = c;
	}
	free(p);
	return rc;
}
