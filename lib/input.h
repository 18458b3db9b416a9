/* SPDX-License-Identifier: MIT */
/*
 * input.h: opening a file to read it as input.  Every reader of fathom opens its files here,
 * so that a FIFO, a device, a socket or a directory where a file is expected is refused by
 * name at once, never blocked on (a FIFO without a writer blocks open(2) forever) and never
 * read as if it were a file.  Async-signal-safe (no malloc, no stdio): liblean has it.
 */
#ifndef FATHOM_INPUT_H
#define FATHOM_INPUT_H

#include <sys/stat.h>

/*
 * Open PATH read-only.  Returns a descriptor (close-on-exec, blocking) on a regular file,
 * with *ST filled when ST is not NULL, or -1 with a message naming PATH: "PATH: is a FIFO,
 * not a regular file", "PATH: cannot open: REASON".
 */
int input_open(const char *path, struct stat *st);
/* What MODE's file type is, for messages: "FIFO", "directory", "character device"... */
const char *file_type_name(mode_t mode);

#endif
