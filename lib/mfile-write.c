/* SPDX-License-Identifier: MIT */
/*
 * mfile-write.c: the streaming measurement-file writer (doc/formats.md).  It uses only the
 * async-signal-safe chunkfile writer, so measure calls it at thread exit with no malloc.
 */
#include "compat.h"
#include "mfile.h"
#include "error.h"
#include "le.h"
#include "mfile-fields.h"

#include <string.h>

size_t mfile_writer_workspace_size(int level)
{
	return cf_writer_workspace_size(level);
}

int mfile_writer_open(struct mfile_writer *w, int fd, const char *path, int level, void *ws,
		      size_t ws_size)
{
	memset(w, 0, sizeof(*w));
	return cf_writer_open(&w->cf, fd, path, MFILE_MAGIC, MFILE_MAJOR, MFILE_MINOR, level, ws,
			      ws_size);
}

static int put_frame_field(struct cf_writer *cf, unsigned field, uint32_t module, uint64_t off)
{
	uint8_t tmp[2 * LE_VARINT_MAX];
	size_t n = le_put_varint(tmp, module == MFILE_NO_MODULE ? 0 : (uint64_t)module + 1);
	n += le_put_varint(tmp + n, off);
	return cf_field_bytes(cf, field, tmp, n);
}

int mfile_write_identity(struct mfile_writer *w, const struct mfile_identity *id)
{
	struct cf_writer *cf = &w->cf;
	if (cf_chunk_begin(cf, MFILE_CHUNK_IDENTITY) < 0 || cf_field_str(cf, ID_HOST, id->host) < 0 ||
	    cf_field_varint(cf, ID_PID, id->pid) < 0 || cf_field_varint(cf, ID_PPID, id->ppid) < 0 ||
	    cf_field_varint(cf, ID_TID, id->tid) < 0 ||
	    cf_field_varint(cf, ID_RANK, le_zigzag(id->rank)) < 0 ||
	    cf_field_varint(cf, ID_THREAD_INDEX, id->thread_index) < 0 ||
	    cf_field_varint(cf, ID_PARENT_THREAD, le_zigzag(id->parent_thread)) < 0 ||
	    cf_field_str(cf, ID_PROGRAM, id->program) < 0 || cf_field_str(cf, ID_CWD, id->cwd) < 0)
		return -1;
	for (uint32_t i = 0; i < id->argc; i++)
		if (cf_field_str(cf, ID_ARG, id->argv[i]) < 0)
			return -1;
	if (cf_field_fixed64(cf, ID_START, id->start_ns) < 0 ||
	    cf_field_fixed64(cf, ID_END, id->end_ns) < 0 ||
	    cf_field_str(cf, ID_END_REASON, id->end_reason) < 0)
		return -1;
	for (uint32_t i = 0; i < id->ncreation; i++)
		if (put_frame_field(cf, ID_CREATION_FRAME, id->creation[i].module,
				    id->creation[i].offset) < 0)
			return -1;
	if ((id->name && id->name[0] && cf_field_str(cf, ID_NAME, id->name) < 0) ||
	    (id->cpu && id->cpu[0] && cf_field_str(cf, ID_CPU, id->cpu) < 0) ||
	    (id->has_entry &&
	     put_frame_field(cf, ID_ENTRY_FRAME, id->entry.module, id->entry.offset) < 0))
		return -1;
	if (cf_record_end(cf) < 0)
		return -1;
	return cf_chunk_end(cf);
}

int mfile_write_loadmap_begin(struct mfile_writer *w, uint32_t n)
{
	w->nmodules = n;
	w->modules_left = n;
	if (cf_chunk_begin(&w->cf, MFILE_CHUNK_LOADMAP) < 0)
		return -1;
	return cf_put_varint(&w->cf, n);
}

int mfile_write_module(struct mfile_writer *w, const struct mfile_module *m)
{
	struct cf_writer *cf = &w->cf;
	if (!w->modules_left)
		return fth_error("%s: more modules than announced", cf->path);
	if (cf_field_str(cf, MOD_PATH, m->path) < 0 ||
	    (m->build_id_len && cf_field_bytes(cf, MOD_BUILD_ID, m->build_id, m->build_id_len) < 0) ||
	    cf_field_varint(cf, MOD_LOAD, m->load_ns) < 0 ||
	    cf_field_varint(cf, MOD_UNLOAD, m->unload_ns) < 0 ||
	    cf_field_fixed64(cf, MOD_BASE, m->base) < 0)
		return -1;
	for (uint32_t r = 0; r < m->nranges; r++) {
		const struct mfile_range *rg = &m->ranges[r];
		uint8_t tmp[4 * LE_VARINT_MAX];
		size_t k = le_put_varint(tmp, rg->start);
		k += le_put_varint(tmp + k, rg->end - rg->start);
		k += le_put_varint(tmp + k, rg->file_offset);
		k += le_put_varint(tmp + k, rg->prot);
		if (cf_field_bytes(cf, MOD_RANGE, tmp, k) < 0)
			return -1;
	}
	w->modules_left--;
	return cf_record_end(cf);
}

int mfile_write_loadmap_end(struct mfile_writer *w)
{
	if (w->modules_left)
		return fth_error("%s: %u modules announced but not written", w->cf.path,
				 w->modules_left);
	return cf_chunk_end(&w->cf);
}

int mfile_write_loadmap(struct mfile_writer *w, const struct mfile_module *m, uint32_t n)
{
	if (mfile_write_loadmap_begin(w, n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (mfile_write_module(w, &m[i]) < 0)
			return -1;
	return mfile_write_loadmap_end(w);
}

int mfile_write_metrics(struct mfile_writer *w, const struct mfile_metric *m, uint32_t n)
{
	struct cf_writer *cf = &w->cf;
	if (n > MFILE_MAX_METRICS)
		return fth_error("%s: %u metrics, more than %u", cf->path, n, MFILE_MAX_METRICS);
	if (cf_chunk_begin(cf, MFILE_CHUNK_METRICS) < 0 || cf_put_varint(cf, n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		const struct mfile_metric *x = &m[i];
		if (cf_field_str(cf, MET_NAME, x->name) < 0 ||
		    cf_field_str(cf, MET_DESCRIPTION, x->description) < 0 ||
		    cf_field_varint(cf, MET_UNIT, x->unit) < 0 ||
		    cf_field_varint(cf, MET_RATE_KIND, x->rate_kind) < 0 ||
		    cf_field_varint(cf, MET_RATE, x->rate) < 0 ||
		    cf_field_varint(cf, MET_FLAGS, x->flags) < 0 ||
		    cf_field_varint(cf, MET_ENABLED, x->time_enabled) < 0 ||
		    cf_field_varint(cf, MET_RUNNING, x->time_running) < 0 ||
		    cf_field_varint(cf, MET_SAMPLES, x->samples) < 0 ||
		    cf_field_varint(cf, MET_PARENT, le_zigzag(x->parent)) < 0 ||
		    cf_field_fixed64(cf, MET_THRESHOLD, le_f64_bits(x->threshold)) < 0 ||
		    cf_field_str(cf, MET_FORMULA, x->formula) < 0 ||
		    ((x->flags & MFILE_METRIC_TMA) && cf_field_varint(cf, MET_LEVEL, x->level) < 0) ||
		    cf_record_end(cf) < 0)
			return -1;
	}
	w->nmetrics = n;
	return cf_chunk_end(cf);
}

int mfile_write_cct_begin(struct mfile_writer *w, uint32_t nnodes, uint64_t nvalues)
{
	struct cf_writer *cf = &w->cf;
	if (nnodes == 0)
		return fth_error("%s: a calling context tree has at least its root", cf->path);
	if (nnodes > UINT32_MAX - 1 || nvalues > UINT32_MAX - 1)
		return fth_error("%s: %u nodes and %llu values: too many", cf->path, nnodes,
				 (unsigned long long)nvalues);
	w->nodes_left = nnodes;
	w->nodes_written = 0;
	w->values_left = nvalues;
	if (cf_chunk_begin(cf, MFILE_CHUNK_CCT) < 0 || cf_put_varint(cf, nnodes) < 0)
		return -1;
	return cf_put_varint(cf, nvalues);
}

int mfile_write_node(struct mfile_writer *w, uint32_t parent, uint8_t kind, uint32_t module,
		     uint64_t offset, uint32_t nvals, const uint16_t *metric, const uint64_t *val)
{
	struct cf_writer *cf = &w->cf;
	uint32_t self = w->nodes_written;
	if (!w->nodes_left || nvals > w->values_left)
		return fth_error("%s: more nodes or values than announced", cf->path);
	if (self == 0 ? parent != MFILE_NO_PARENT : parent >= self)
		return fth_error("%s: node %u has parent %u", cf->path, self, parent);
	if (self == 0 ? kind != MFILE_NODE_ROOT
		      : (kind == MFILE_NODE_ROOT || kind >= MFILE_NODE_KIND_COUNT))
		return fth_error("%s: node %u has kind %u", cf->path, self, kind);
	if (module != MFILE_NO_MODULE && module >= w->nmodules)
		return fth_error("%s: node %u names module %u of %u", cf->path, self, module,
				 w->nmodules);
	if (nvals && metric[nvals - 1] >= w->nmetrics)
		return fth_error("%s: node %u names metric %u of %u", cf->path, self,
				 metric[nvals - 1], w->nmetrics);
	if (cf_put_varint(cf, self == 0 ? 0 : self - parent) < 0 || cf_put_u8(cf, kind) < 0 ||
	    cf_put_varint(cf, module == MFILE_NO_MODULE ? 0 : (uint64_t)module + 1) < 0 ||
	    cf_put_varint(cf, offset) < 0 || cf_put_varint(cf, nvals) < 0)
		return -1;
	int prev = -1;
	for (uint32_t i = 0; i < nvals; i++) {
		if ((int)metric[i] <= prev)
			return fth_error("%s: node %u: metrics not in increasing order", cf->path, self);
		if (cf_put_varint(cf, (uint64_t)((int)metric[i] - prev - 1)) < 0 ||
		    cf_put_varint(cf, val[i]) < 0)
			return -1;
		prev = metric[i];
	}
	w->nodes_left--;
	w->nodes_written++;
	w->values_left -= nvals;
	return 0;
}

int mfile_write_cct_end(struct mfile_writer *w)
{
	if (w->nodes_left || w->values_left)
		return fth_error("%s: %u nodes and %llu values announced but not written",
				 w->cf.path, w->nodes_left, (unsigned long long)w->values_left);
	return cf_chunk_end(&w->cf);
}

int mfile_write_trace_begin(struct mfile_writer *w, uint64_t nrecords)
{
	w->trace_left = nrecords;
	w->trace_last = 0;
	if (cf_chunk_begin(&w->cf, MFILE_CHUNK_TRACE) < 0)
		return -1;
	return cf_put_varint(&w->cf, nrecords);
}

int mfile_write_trace_record(struct mfile_writer *w, uint64_t time_ns, uint32_t node)
{
	if (!w->trace_left)
		return fth_error("%s: more trace records than announced", w->cf.path);
	if (time_ns < w->trace_last)
		time_ns = w->trace_last; /* clocks may step back by a hair between threads */
	if (cf_put_varint(&w->cf, time_ns - w->trace_last) < 0 || cf_put_varint(&w->cf, node) < 0)
		return -1;
	w->trace_last = time_ns;
	w->trace_left--;
	return 0;
}

int mfile_write_trace_end(struct mfile_writer *w)
{
	if (w->trace_left)
		return fth_error("%s: %llu trace records announced but not written", w->cf.path,
				 (unsigned long long)w->trace_left);
	return cf_chunk_end(&w->cf);
}

int mfile_write_stats(struct mfile_writer *w, const struct mfile_stat *s, uint32_t n)
{
	struct cf_writer *cf = &w->cf;
	if (cf_chunk_begin(cf, MFILE_CHUNK_STATS) < 0 || cf_put_varint(cf, n) < 0)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (cf_field_str(cf, STAT_NAME, s[i].name) < 0 ||
		    cf_field_varint(cf, STAT_VALUE, s[i].value) < 0 || cf_record_end(cf) < 0)
			return -1;
	return cf_chunk_end(cf);
}

int mfile_writer_finish(struct mfile_writer *w)
{
	return cf_writer_finish(&w->cf);
}

