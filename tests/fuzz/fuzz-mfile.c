/* SPDX-License-Identifier: MIT */
/* fuzz-mfile.c: the fuzz target: feed bytes to the measurement-file reader and dumper. */
#include "compat.h"
#include "buf.h"
#include "error.h"
#include "fuzz-input.h"
#include "mfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/mman.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * UBSan recovers by default, so neither libFuzzer nor fuzz-replay would stop at undefined
 * behaviour: make it fatal (unless UBSAN_OPTIONS says otherwise).  A strong definition, to win
 * over the weak one in clang's static sanitizer runtime (and over replay.c's weak fallback).
 */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

/* What the reader promises about a file it accepted (mfile.h); abort when it does not hold. */
static void check_accepted(const struct mfile *m)
{
	const struct mfile_identity *id = &m->id;
	if (!id->host || !id->program || !id->cwd || !id->end_reason)
		abort();
	for (uint32_t i = 0; i < id->argc; i++)
		if (!id->argv[i])
			abort();
	for (uint32_t i = 0; i < m->nmodules; i++)
		if (!m->modules[i].path || (m->modules[i].build_id_len && !m->modules[i].build_id))
			abort();
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		const struct mfile_metric *x = &m->metrics[i];
		if (!x->name || !x->description || !x->formula || x->parent >= (int32_t)m->nmetrics)
			abort();
	}
	const struct mfile_cct *c = &m->cct;
	if (c->nnodes == 0 || c->parent[0] != MFILE_NO_PARENT || c->kind[0] != MFILE_NODE_ROOT ||
	    c->val_start[0] != 0 || c->val_start[c->nnodes] != c->nvalues)
		abort();
	for (uint32_t i = 0; i < c->nnodes; i++) {
		if ((i && c->parent[i] >= i) || c->kind[i] >= MFILE_NODE_KIND_COUNT ||
		    (c->module[i] != MFILE_NO_MODULE && c->module[i] >= m->nmodules) ||
		    c->val_start[i] > c->val_start[i + 1])
			abort();
		for (uint32_t v = c->val_start[i]; v < c->val_start[i + 1]; v++)
			if (c->val_metric[v] >= m->nmetrics ||
			    (v > c->val_start[i] && c->val_metric[v] <= c->val_metric[v - 1]))
				abort();
	}
	for (uint64_t i = 0; i < m->ntrace; i++)
		if (m->trace[i].node >= c->nnodes ||
		    (i && m->trace[i].time_ns < m->trace[i - 1].time_ns))
			abort();
	for (uint32_t i = 0; i < m->nstats; i++)
		if (!m->stats[i].name)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	struct mfile m;
	if (mfile_read(path, &m) == 0) {
		check_accepted(&m);
		struct buf out = BUF_INIT;
		mfile_dump(&m, &out);
		buf_release(&out);
		mfile_release(&m);
	} else if (!fth_errmsg()[0]) {
		abort(); /* every failure must say why */
	}
	return 0;
}
