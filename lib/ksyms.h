/* SPDX-License-Identifier: MIT */
/*
 * ksyms.h: the kernel symbols file (doc/formats.md, "Kernel symbols file").  measure saves,
 * beside a run's thread files, the /proc/kallsyms entries that cover the kernel addresses its
 * threads sampled, with the kernel's build-id, so that prof names kernel frames post mortem on
 * any machine.  Where the kernel hides its addresses the file says so instead.
 */
#ifndef FATHOM_KSYMS_H
#define FATHOM_KSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KSYMS_MAGIC "FTHMKSYM"
#define KSYMS_MAJOR 1
#define KSYMS_SUFFIX ".ksyms"
#define KSYMS_MAX_BUILD_ID 64

/* A kernel symbol covering [START, END); NAME is "function" or "function [module]". */
struct ksym {
	uint64_t start, end;
	char *name; /* owned */
};

struct ksyms {
	char *host;   /* owned */
	uint8_t build_id[KSYMS_MAX_BUILD_ID];
	uint32_t build_id_len;
	char *hidden; /* owned: why there are no symbols (the kernel hides them), or NULL */
	size_t n;     /* symbols, START ascending, not overlapping */
	struct ksym *syms;
};

/*
 * From /proc/kallsyms text F: the function symbols (types t, T, w, W) that contain the
 * addresses ADDRS (N, any order; changed), each ending where the next symbol starts.  When
 * every address in F reads 0 (kptr_restrict), no symbol and K->hidden says so.
 */
int ksyms_from_kallsyms(FILE *f, uint64_t *addrs, size_t n, struct ksyms *k);
/* Write K as DIRFD/NAME, created exclusively (never through a link). */
int ksyms_write(int dirfd, const char *name, const struct ksyms *k);
/* Read PATH; a corrupt or truncated file is refused with a message naming it and the line. */
int ksyms_read(const char *path, struct ksyms *k);
/* Add OTHER's symbols to K (same kernel): the union, still sorted and not overlapping. */
void ksyms_merge(struct ksyms *k, const struct ksyms *other);
/* The symbol containing ADDR, or NULL. */
const struct ksym *ksyms_find(const struct ksyms *k, uint64_t addr);
void ksyms_release(struct ksyms *k);

#endif
