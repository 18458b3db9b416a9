/* SPDX-License-Identifier: MIT */
/* userdir.h: the per-user cache directory and mkdir -p, for the tools' main()s. */
#ifndef FATHOM_USERDIR_H
#define FATHOM_USERDIR_H

#include <sys/types.h>

/* ${XDG_CACHE_HOME:-$HOME/.cache}/fathom/NAME in a new string; NULL when neither is set. */
char *user_cache_dir(const char *name);
/* Create PATH and its missing parents with MODE.  Returns 0, or -1 with fth_error(). */
int mkdir_p(const char *path, mode_t mode);

#endif
