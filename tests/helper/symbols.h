/* SPDX-License-Identifier: MIT */
/*
 * symbols.h: function names for addresses of a measurement file, from the ELF symbol tables
 * of its modules (libelf), for tests that check where samples landed before struct and prof
 * exist.  Offsets are the file's module-relative addresses (link-time addresses).
 */
#ifndef FATHOM_TEST_SYMBOLS_H
#define FATHOM_TEST_SYMBOLS_H

#include "mfile.h"

struct symbols;
struct symbols *symbols_load(const struct mfile *m);
/* The function holding node NODE's address ("?" when unknown). */
const char *symbols_node(struct symbols *s, const struct mfile *m, uint32_t node);
void symbols_free(struct symbols *s);

#endif
