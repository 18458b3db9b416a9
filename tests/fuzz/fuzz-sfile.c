/* SPDX-License-Identifier: MIT */
/* fuzz-sfile.c: the fuzz target of the structure-file reader: read, check what it promises, dump. */
#include "compat.h"
#include "buf.h"
#include "error.h"
#include "fuzz-input.h"
#include "sfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What sfile_read() promises about a file it accepted (sfile.h); abort when it does not hold. */
static void check_accepted(const struct sfile *sf)
{
	if (!sf->path || (sf->build_id_len && !sf->build_id))
		abort();
	for (uint32_t i = 0; i < sf->nstrings; i++)
		if (!sf->strings[i])
			abort();
	for (uint32_t i = 0; i < sf->nnodes; i++) {
		const struct sfile_node *n = &sf->nodes[i];
		if (n->kind < SFILE_FUNCTION || n->kind > SFILE_LOOP)
			abort();
		if (n->kind == SFILE_FUNCTION ? n->parent != SFILE_NONE : n->parent >= i)
			abort();
		if ((n->name != SFILE_NONE && n->name >= sf->nstrings) ||
		    (n->file != SFILE_NONE && n->file >= sf->nstrings) ||
		    (n->origin != SFILE_NONE && sf->nodes[n->origin].kind != SFILE_FUNCTION))
			abort();
	}
	for (uint64_t i = 0; i < sf->nranges; i++) {
		const struct sfile_range *r = &sf->ranges[i];
		if (r->lo >= r->hi || r->node >= sf->nnodes || (i && r->lo < sf->ranges[i - 1].hi))
			abort();
		if (sfile_lookup(sf, r->lo) != r->node || sfile_lookup(sf, r->hi - 1) != r->node)
			abort();
	}
	for (uint64_t i = 0; i < sf->nlines; i++) {
		const struct sfile_line *l = &sf->lines[i];
		if (l->lo >= l->hi || (l->file != SFILE_NONE && l->file >= sf->nstrings) ||
		    (i && l->lo < sf->lines[i - 1].hi) || sfile_line_at(sf, l->lo) != l)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	struct sfile sf;
	if (sfile_read(path, &sf) == 0) {
		check_accepted(&sf);
		struct buf out = BUF_INIT;
		sfile_dump(&sf, &out);
		buf_release(&out);
		sfile_release(&sf);
	} else if (!fth_errmsg()[0]) {
		abort(); /* every failure must say why */
	}
	return 0;
}
