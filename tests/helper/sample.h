/* SPDX-License-Identifier: MIT */
/* sample.h: a deterministic measurement file with every field set, for tests and seeds. */
#ifndef FATHOM_TEST_SAMPLE_H
#define FATHOM_TEST_SAMPLE_H

#include "mfile.h"

/* Fill M (owned by the caller; free with mfile_release) with a small file of every feature. */
void sample_mfile(struct mfile *m);
/* Fill M with a generated tree of NNODES nodes (seeded, so the same every run). */
void sample_mfile_large(struct mfile *m, uint32_t nnodes, uint64_t seed);
/* Allocate C's tree arrays, zeroed, for NNODES nodes and NVALUES values. */
void sample_alloc_cct(struct mfile_cct *c, uint32_t nnodes, uint64_t nvalues);

#endif
