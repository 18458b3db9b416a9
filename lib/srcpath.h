/* SPDX-License-Identifier: MIT */
/* srcpath.h: where a source file named in DWARF is: relative names joined to the compilation
 * directory. */
#ifndef FATHOM_SRCPATH_H
#define FATHOM_SRCPATH_H

/*
 * NAME (as the compiler was given it, "../src/a.c") resolved against COMP_DIR (the unit's
 * DW_AT_comp_dir), as a new string; "dir/.." and "." components are dropped when the shorter
 * name is the same file (not when dir is a symbolic link).  NULL when NAME is absolute or
 * there is no COMP_DIR: NAME stands as it is.
 */
char *source_path(const char *comp_dir, const char *name);

#endif
