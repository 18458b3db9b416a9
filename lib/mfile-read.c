/* SPDX-License-Identifier: MIT */
/*
 * mfile-read.c: the measurement-file reader and whole-file writer for the offline tools.  The
 * reader validates every count, index and string before it trusts it.
 */
#include "compat.h"
#include "mfile.h"
#include "mfile-fields.h"
#include "error.h"
#include "le.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Smallest encodings, used to bound counts read from a file against its size. */
#define MIN_NODE_BYTES 5
#define MIN_VALUE_BYTES 2
#define MIN_RECORD_BYTES 1

static int write_all_chunks(struct mfile_writer *w, const struct mfile *m)
{
	const struct mfile_cct *c = &m->cct;
	if (mfile_write_identity(w, &m->id) < 0 || mfile_write_loadmap(w, m->modules, m->nmodules) < 0 ||
	    mfile_write_metrics(w, m->metrics, m->nmetrics) < 0 ||
	    mfile_write_cct_begin(w, c->nnodes, c->nvalues) < 0)
		return -1;
	for (uint32_t i = 0; i < c->nnodes; i++) {
		uint32_t v0 = c->val_start[i], v1 = c->val_start[i + 1];
		if (mfile_write_node(w, c->parent[i], c->kind[i], c->module[i], c->offset[i], v1 - v0,
				     c->val_metric + v0, c->val + v0) < 0)
			return -1;
	}
	if (mfile_write_cct_end(w) < 0)
		return -1;
	if (m->has_trace) {
		if (mfile_write_trace_begin(w, m->ntrace) < 0)
			return -1;
		for (uint64_t i = 0; i < m->ntrace; i++)
			if (mfile_write_trace_record(w, m->trace[i].time_ns, m->trace[i].node) < 0)
				return -1;
		if (mfile_write_trace_end(w) < 0)
			return -1;
	}
	if (m->nstats && mfile_write_stats(w, m->stats, m->nstats) < 0)
		return -1;
	return mfile_writer_finish(w);
}

int mfile_write(const char *path, const struct mfile *m, int level)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return fth_error_errno(errno, "%s: cannot create", path);
	size_t ws_size = mfile_writer_workspace_size(level);
	void *ws = xmalloc(ws_size);
	struct mfile_writer w;
	int rc = mfile_writer_open(&w, fd, path, level, ws, ws_size);
	if (rc == 0)
		rc = write_all_chunks(&w, m);
	free(ws);
	if (close(fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: close failed", path);
	if (rc < 0)
		unlink(path);
	return rc;
}

static int get_u32_field(struct cf_stream *s, unsigned wire, uint32_t *v, const char *what)
{
	uint64_t x;
	if (cf_get_varint_field(s, wire, &x) < 0)
		return -1;
	if (x > UINT32_MAX)
		return cf_stream_error(s, "%s %llu out of range", what, (unsigned long long)x);
	*v = (uint32_t)x;
	return 0;
}

static int get_i32_field(struct cf_stream *s, unsigned wire, int32_t *v, const char *what)
{
	uint64_t x;
	if (cf_get_varint_field(s, wire, &x) < 0)
		return -1;
	int64_t y = le_unzigzag(x);
	if (y < -1 || y > INT32_MAX)
		return cf_stream_error(s, "%s %lld out of range", what, (long long)y);
	*v = (int32_t)y;
	return 0;
}

/* A field of one of COUNT kinds (a unit, a rate kind): "unknown WHAT N" otherwise. */
static int get_kind_field(struct cf_stream *s, unsigned wire, uint64_t count, const char *what,
			  uint8_t *v)
{
	uint64_t x;
	if (cf_get_varint_field(s, wire, &x) < 0)
		return -1;
	if (x >= count)
		return cf_stream_error(s, "unknown %s %llu", what, (unsigned long long)x);
	*v = (uint8_t)x;
	return 0;
}

/* Parse the bytes of a small embedded field (a frame or a range) as varints. */
static int get_embedded_varints(struct cf_stream *s, unsigned wire, uint64_t *v, unsigned n,
				const char *what)
{
	if (wire != CF_WIRE_BYTES)
		return cf_stream_error(s, "%s field has type %u", what, wire);
	char *data;
	size_t len;
	if (cf_get_bytes(s, 64, &data, &len) < 0)
		return -1;
	const uint8_t *p = (const uint8_t *)data, *end = p + len;
	for (unsigned i = 0; i < n; i++) {
		if (le_get_varint(&p, end, &v[i]) < 0) {
			free(data);
			return cf_stream_error(s, "malformed %s", what);
		}
	}
	bool extra = p != end;
	free(data);
	return extra ? cf_stream_error(s, "malformed %s (extra bytes)", what) : 0;
}

/*
 * Open chunk ID as a stream.  MISSING names a chunk the file must have ("identity chunk
 * (IDEN)": "no identity chunk (IDEN)" when it has none); NULL, an optional one.  Returns 1 when
 * opened, 0 when an optional chunk is absent, -1 with a message.
 */
static int open_chunk(struct cf_reader *r, uint32_t id, const char *missing, struct cf_stream *s)
{
	const struct cf_entry *e = cf_find(r, id, 0);
	if (!e)
		return missing ? fth_error("%s: no %s", r->path, missing) : 0;
	return cf_stream_open(r, e, s) < 0 ? -1 : 1;
}

/* open_chunk, then the table's record count (cf_get_count); the stream is freed on failure. */
static int open_table(struct cf_reader *r, uint32_t id, const char *missing, uint64_t limit,
		      unsigned min, const char *what, struct cf_stream *s, uint64_t *n)
{
	int rc = open_chunk(r, id, missing, s);
	if (rc <= 0)
		return rc;
	if (cf_get_count(s, limit, min, what, n) < 0) {
		cf_stream_free(s);
		return -1;
	}
	return 1;
}

/*
 * Table T read as cf_read_table reads one, but opened as open_chunk does (MISSING) and its
 * records in *RECORDS (T->size bytes each, allocated for the count) unless RECORDS is NULL.
 * Returns 1, 0 when an optional table is absent, or -1 with a message.
 */
static int read_table(struct cf_reader *r, const struct cf_table *t, const char *missing,
		      void **records, struct mfile *m)
{
	struct cf_stream s;
	uint64_t n;
	int opened = open_table(r, t->id, missing, t->limit, t->min, t->what, &s, &n);
	if (opened <= 0)
		return opened;
	return cf_read_records(&s, t, n, records, m) < 0 ? -1 : 1;
}

/* A frame field (the creation or entry frame WHAT): the module + 1 (0: none), the offset. */
static int get_frame_field(struct cf_stream *s, unsigned wire, const char *what,
			   struct mfile_frame *frame)
{
	uint64_t v[2];
	if (get_embedded_varints(s, wire, v, 2, what) < 0)
		return -1;
	if (v[0] > UINT32_MAX)
		return cf_stream_error(s, "%s module out of range", what);
	frame->module = v[0] ? (uint32_t)(v[0] - 1) : MFILE_NO_MODULE;
	frame->offset = v[1];
	return 0;
}

static int identity_field(struct cf_stream *s, void *arg, unsigned field, unsigned wire)
{
	struct mfile_identity *id = arg;
	struct mfile_frame frame;
	switch (field) {
	case ID_HOST: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->host);
	case ID_PID: return get_u32_field(s, wire, &id->pid, "pid");
	case ID_PPID: return get_u32_field(s, wire, &id->ppid, "ppid");
	case ID_TID: return get_u32_field(s, wire, &id->tid, "tid");
	case ID_RANK: return get_i32_field(s, wire, &id->rank, "rank");
	case ID_THREAD_INDEX: return get_u32_field(s, wire, &id->thread_index, "thread index");
	case ID_PARENT_THREAD: return get_i32_field(s, wire, &id->parent_thread, "parent thread");
	case ID_PROGRAM: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->program);
	case ID_CWD: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->cwd);
	case ID_ARG:
		ALLOC_GROW_BY_COUNT(id->argv, id->argc);
		id->argv[id->argc] = NULL;
		if (cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->argv[id->argc]) < 0)
			return -1;
		id->argc++;
		return 0;
	case ID_START: return cf_get_fixed_field(s, wire, &id->start_ns);
	case ID_END: return cf_get_fixed_field(s, wire, &id->end_ns);
	case ID_END_REASON: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->end_reason);
	case ID_CREATION_FRAME:
		if (get_frame_field(s, wire, "creation frame", &frame) < 0)
			return -1;
		ALLOC_GROW_BY_COUNT(id->creation, id->ncreation);
		id->creation[id->ncreation++] = frame;
		return 0;
	case ID_NAME: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->name);
	case ID_CPU: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &id->cpu);
	case ID_ENTRY_FRAME:
		if (get_frame_field(s, wire, "entry frame", &id->entry) < 0)
			return -1;
		id->has_entry = true;
		return 0;
	default: return cf_skip_field(s, wire);
	}
}

static int read_identity(struct cf_reader *r, void *arg)
{
	struct mfile *m = arg;
	struct cf_stream s;
	if (open_chunk(r, MFILE_CHUNK_IDENTITY, "identity chunk (IDEN)", &s) < 0)
		return -1;
	struct mfile_identity *id = &m->id;
	if (cf_read_fields(&s, identity_field, id) < 0) {
		cf_stream_free(&s);
		return -1;
	}
	XSTRDUP_EMPTY_IF_NULL(&id->name, &id->host, &id->program, &id->cwd, &id->end_reason,
			      &id->cpu);
	return cf_stream_finish(&s);
}

static int module_field(struct cf_stream *s, void *arg, unsigned field, unsigned wire)
{
	struct mfile_module *mod = arg;
	uint64_t v[4];
	char *bytes = NULL;
	size_t len;
	switch (field) {
	case MOD_PATH: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &mod->path);
	case MOD_BUILD_ID:
		if (cf_get_bytes_field(s, wire, "build-id", 256, &bytes, &len) < 0)
			return -1;
		free(mod->build_id);
		mod->build_id = (uint8_t *)bytes;
		mod->build_id_len = (uint32_t)len;
		return 0;
	case MOD_LOAD: return cf_get_varint_field(s, wire, &mod->load_ns);
	case MOD_UNLOAD: return cf_get_varint_field(s, wire, &mod->unload_ns);
	case MOD_BASE: return cf_get_fixed_field(s, wire, &mod->base);
	case MOD_RANGE: {
		if (get_embedded_varints(s, wire, v, 4, "address range") < 0)
			return -1;
		if (v[0] + v[1] < v[0] || v[3] > 7)
			return cf_stream_error(s, "bad address range");
		ALLOC_GROW_BY_COUNT(mod->ranges, mod->nranges);
		struct mfile_range *rg = &mod->ranges[mod->nranges++];
		rg->start = v[0];
		rg->end = v[0] + v[1];
		rg->file_offset = v[2];
		rg->prot = (uint32_t)v[3];
		return 0;
	}
	default: return cf_skip_field(s, wire);
	}
}

static int read_module(struct cf_stream *s, struct mfile_module *mod)
{
	if (cf_read_fields(s, module_field, mod) < 0)
		return -1;
	if (!mod->path)
		return cf_stream_error(s, "module without a path");
	return 0;
}

/* Module I of N of the load map.  The count is a claim: the room for the modules grows as
 * they are actually read. */
static int read_loadmap_entry(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct mfile *m = arg;
	ALLOC_GROW_BY_COUNT(m->modules, i);
	memset(&m->modules[i], 0, sizeof(m->modules[i]));
	m->nmodules = (uint32_t)i + 1;
	if (read_module(s, &m->modules[i]) < 0)
		return fth_error_prefix("module %llu", (unsigned long long)i);
	return 0;
}

static int read_loadmap(struct cf_reader *r, struct mfile *m)
{
	static const struct cf_table loadmap = { MFILE_CHUNK_LOADMAP, UINT32_MAX - 1,
						 MIN_RECORD_BYTES, "modules", 0,
						 read_loadmap_entry, NULL };
	return read_table(r, &loadmap, "load map chunk (LMAP)", NULL, m);
}

static int metric_field(struct cf_stream *s, void *arg, unsigned field, unsigned wire)
{
	struct mfile_metric *x = arg;
	uint64_t v;
	switch (field) {
	case MET_NAME: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &x->name);
	case MET_DESCRIPTION: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &x->description);
	case MET_UNIT: return get_kind_field(s, wire, MFILE_UNIT_COUNT_, "unit", &x->unit);
	case MET_RATE_KIND:
		return get_kind_field(s, wire, MFILE_RATE_COUNT_, "rate kind", &x->rate_kind);
	case MET_RATE: return cf_get_varint_field(s, wire, &x->rate);
	case MET_FLAGS: return get_u32_field(s, wire, &x->flags, "flags");
	case MET_ENABLED: return cf_get_varint_field(s, wire, &x->time_enabled);
	case MET_RUNNING: return cf_get_varint_field(s, wire, &x->time_running);
	case MET_SAMPLES: return cf_get_varint_field(s, wire, &x->samples);
	case MET_PARENT: return get_i32_field(s, wire, &x->parent, "parent metric");
	case MET_THRESHOLD:
		if (cf_get_fixed_field(s, wire, &v) < 0)
			return -1;
		x->threshold = le_bits_f64(v);
		return 0;
	case MET_FORMULA: return cf_get_str_field(s, wire, MFILE_MAX_STRING, &x->formula);
	case MET_LEVEL:
		if (cf_get_varint_field(s, wire, &v) < 0)
			return -1;
		if (v > 15)
			return cf_stream_error(s, "TMA level %llu out of range", (unsigned long long)v);
		x->level = (uint8_t)v;
		return 0;
	default: return cf_skip_field(s, wire);
	}
}

static int read_metric(struct cf_stream *s, struct mfile_metric *x, uint32_t nmetrics)
{
	x->parent = -1;
	x->threshold = NAN;
	if (cf_read_fields(s, metric_field, x) < 0)
		return -1;
	if (x->parent >= (int32_t)nmetrics)
		return cf_stream_error(s, "parent metric %d out of range", x->parent);
	if (!x->name || !x->name[0])
		return cf_stream_error(s, "metric without a name");
	if (x->time_running > x->time_enabled)
		return cf_stream_error(s, "metric %s ran %llu ns, longer than enabled (%llu ns)",
				       x->name, (unsigned long long)x->time_running,
				       (unsigned long long)x->time_enabled);
	XSTRDUP_EMPTY_IF_NULL(&x->description, &x->formula);
	return 0;
}

/* The TMA hierarchy must be a forest: parents form no cycle.  Linear: each metric is walked
 * up to the first one already known to reach a root. */
static int check_metric_forest(struct cf_stream *s, void *arg)
{
	const struct mfile *m = arg;
	enum { UNSEEN, ON_PATH, ROOTED };
	uint8_t *state = xcalloc(m->nmetrics ? m->nmetrics : 1, 1);
	int rc = 0;
	for (uint32_t i = 0; i < m->nmetrics && rc == 0; i++) {
		int32_t p = (int32_t)i;
		while (p >= 0 && state[p] == UNSEEN) {
			state[p] = ON_PATH;
			p = m->metrics[p].parent;
		}
		if (p >= 0 && state[p] == ON_PATH)
			rc = cf_stream_error(s, "metric parents form a cycle at metric %d", p);
		for (p = (int32_t)i; p >= 0 && state[p] == ON_PATH; p = m->metrics[p].parent)
			state[p] = ROOTED;
	}
	free(state);
	return rc;
}

static int read_metrics_entry(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct mfile *m = arg;
	m->nmetrics = (uint32_t)i + 1;
	if (read_metric(s, &m->metrics[i], (uint32_t)n) < 0)
		return fth_error_prefix("metric %llu", (unsigned long long)i);
	return 0;
}

static int read_metrics(struct cf_reader *r, struct mfile *m)
{
	static const struct cf_table metrics = { MFILE_CHUNK_METRICS, MFILE_MAX_METRICS,
						 MIN_RECORD_BYTES, "metrics", sizeof(*m->metrics),
						 read_metrics_entry, check_metric_forest };
	return read_table(r, &metrics, "metric table chunk (METR)", (void **)&m->metrics, m);
}

#define PREALLOC_MAX ((size_t)1 << 22)

static void grow_nodes(struct mfile_cct *c, size_t *cap, size_t want)
{
	if (want < 1)
		want = 1;
	c->parent = xreallocarray(c->parent, want, sizeof(*c->parent));
	c->kind = xreallocarray(c->kind, want, sizeof(*c->kind));
	c->module = xreallocarray(c->module, want, sizeof(*c->module));
	c->offset = xreallocarray(c->offset, want, sizeof(*c->offset));
	c->val_start = xreallocarray(c->val_start, want + 1, sizeof(*c->val_start));
	*cap = want;
}

static void grow_values(struct mfile_cct *c, size_t *cap, size_t want)
{
	if (want < 1)
		want = 1;
	c->val_metric = xreallocarray(c->val_metric, want, sizeof(*c->val_metric));
	c->val = xreallocarray(c->val, want, sizeof(*c->val));
	*cap = want;
}

static int read_cct(struct cf_reader *r, struct mfile *m)
{
	struct cf_stream s;
	struct mfile_cct *c = &m->cct;
	uint64_t nnodes, nvalues;
	if (open_table(r, MFILE_CHUNK_CCT, "calling context tree chunk (CCT)", UINT32_MAX - 1,
		       MIN_NODE_BYTES, "nodes", &s, &nnodes) < 0)
		return -1;
	if (cf_get_count(&s, UINT32_MAX - 1, MIN_VALUE_BYTES, "values", &nvalues) < 0)
		goto fail;
	if (nnodes == 0) {
		cf_stream_error(&s, "empty tree (no root)");
		goto fail;
	}
	/*
	 * The counts are claims: allocate them exactly up to PREALLOC_MAX (so that real files
	 * need no reallocation) and grow beyond that only as nodes are actually decoded, so that
	 * a small corrupt file cannot make the reader allocate gigabytes.
	 */
	size_t node_cap = 0, value_cap = 0;
	grow_nodes(c, &node_cap, FTH_MIN(nnodes, PREALLOC_MAX));
	grow_values(c, &value_cap, FTH_MIN(nvalues, PREALLOC_MAX));
	uint64_t nv = 0;
	const uint32_t nmodules = m->nmodules, nmetrics = m->nmetrics;
	for (uint32_t i = 0; i < nnodes; i++) {
		if (i >= node_cap)
			grow_nodes(c, &node_cap, (size_t)FTH_MIN(nnodes, (uint64_t)node_cap * 2));
		c->nnodes = i + 1;
		/* A node takes at most 4 varints and a byte, plus 2 varints a value. */
		if (unlikely(s.end - s.p < 6 * LE_VARINT_MAX) && cf_need(&s, 6 * LE_VARINT_MAX) < 0)
			goto fail;
		uint64_t delta, module, offset, nvals;
		const uint8_t *end = s.end;
		if (le_get_varint(&s.p, end, &delta) < 0 || s.p == end)
			goto truncated;
		uint8_t kind = *s.p++;
		if (le_get_varint(&s.p, end, &module) < 0 || le_get_varint(&s.p, end, &offset) < 0 ||
		    le_get_varint(&s.p, end, &nvals) < 0)
			goto truncated;
		if (i == 0 ? delta != 0 : (delta == 0 || delta > i)) {
			cf_stream_error(&s, "node %u: bad parent distance %llu", i,
					(unsigned long long)delta);
			goto fail;
		}
		if (i == 0 ? kind != MFILE_NODE_ROOT : (kind >= MFILE_NODE_KIND_COUNT || kind == MFILE_NODE_ROOT)) {
			cf_stream_error(&s, "node %u: bad kind %u", i, kind);
			goto fail;
		}
		if (module > nmodules) {
			cf_stream_error(&s, "node %u: module %llu not in the load map (%u modules)", i,
					(unsigned long long)module - 1, nmodules);
			goto fail;
		}
		if (nvals > nvalues - nv || nvals > nmetrics) {
			cf_stream_error(&s, "node %u: %llu values, more than remain or than metrics",
					i, (unsigned long long)nvals);
			goto fail;
		}
		c->parent[i] = i == 0 ? MFILE_NO_PARENT : i - (uint32_t)delta;
		c->kind[i] = kind;
		c->module[i] = module ? (uint32_t)(module - 1) : MFILE_NO_MODULE;
		c->offset[i] = offset;
		c->val_start[i] = (uint32_t)nv;
		uint64_t metric = (uint64_t)-1;
		for (uint64_t k = 0; k < nvals; k++) {
			uint64_t md, val;
			if (unlikely(s.end - s.p < 2 * LE_VARINT_MAX) &&
			    cf_need(&s, 2 * LE_VARINT_MAX) < 0)
				goto fail;
			if (le_get_varint(&s.p, s.end, &md) < 0 || le_get_varint(&s.p, s.end, &val) < 0)
				goto truncated;
			metric += md + 1;
			if (nv >= value_cap)
				grow_values(c, &value_cap,
					    (size_t)FTH_MIN(nvalues, (uint64_t)value_cap * 2 + 1));
			if (md >= nmetrics || metric >= nmetrics) {
				cf_stream_error(&s, "node %u: metric %llu out of range", i,
						(unsigned long long)metric);
				goto fail;
			}
			c->val_metric[nv] = (uint16_t)metric;
			c->val[nv++] = val;
		}
	}
	c->val_start[nnodes] = (uint32_t)nv;
	c->nvalues = nv;
	if (nv != nvalues) {
		cf_stream_error(&s, "%llu values announced, %llu found", (unsigned long long)nvalues,
				(unsigned long long)nv);
		goto fail;
	}
	return cf_stream_finish(&s);
truncated:
	cf_stream_error(&s, "node data ends early or is malformed");
fail:
	cf_stream_free(&s);
	return -1;
}

static int read_trace(struct cf_reader *r, struct mfile *m)
{
	struct cf_stream s;
	uint64_t n;
	int opened = open_table(r, MFILE_CHUNK_TRACE, NULL, UINT64_MAX, 2, "trace records", &s, &n);
	if (opened <= 0)
		return opened;
	m->has_trace = true;
	size_t cap = (size_t)FTH_MIN(n, PREALLOC_MAX);
	m->trace = xreallocarray(NULL, cap ? cap : 1, sizeof(*m->trace));
	uint64_t t = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (i >= cap) {
			cap = (size_t)FTH_MIN(n, (uint64_t)cap * 2);
			m->trace = xreallocarray(m->trace, cap, sizeof(*m->trace));
		}
		uint64_t dt, node;
		if (cf_get_varint(&s, &dt) < 0 || cf_get_varint(&s, &node) < 0)
			goto fail;
		if (node >= m->cct.nnodes || t + dt < t) {
			cf_stream_error(&s, "trace record %llu: node %llu out of range or time "
					"overflows", (unsigned long long)i, (unsigned long long)node);
			goto fail;
		}
		t += dt;
		m->trace[i].time_ns = t;
		m->trace[i].node = (uint32_t)node;
		m->ntrace = i + 1;
	}
	return cf_stream_finish(&s);
fail:
	cf_stream_free(&s);
	return -1;
}

static int stat_field(struct cf_stream *s, void *stat, unsigned field, unsigned wire)
{
	struct mfile_stat *st = stat;
	if (field == STAT_NAME)
		return cf_get_str_field(s, wire, MFILE_MAX_STRING, &st->name);
	if (field == STAT_VALUE)
		return cf_get_varint_field(s, wire, &st->value);
	return cf_skip_field(s, wire);
}

static int read_stats_entry(struct cf_stream *s, void *arg, uint64_t i, uint64_t n)
{
	struct mfile *m = arg;
	struct mfile_stat *st = &m->stats[i];
	m->nstats = (uint32_t)i + 1;
	if (cf_read_fields(s, stat_field, st) < 0)
		return -1;
	if (!st->name)
		return cf_stream_error(s, "counter %llu without a name", (unsigned long long)i);
	return 0;
}

static int read_stats(struct cf_reader *r, struct mfile *m)
{
	static const struct cf_table stats = { MFILE_CHUNK_STATS, 1u << 20, 1, "counters",
					       sizeof(*m->stats), read_stats_entry, NULL };
	return read_table(r, &stats, NULL, (void **)&m->stats, m);
}

/* Every chunk of an open measurement file, and the frames' modules against the load map. */
static int read_chunks(struct cf_reader *r, void *arg)
{
	struct mfile *m = arg;
	if (read_identity(r, m) < 0 || read_loadmap(r, m) < 0 || read_metrics(r, m) < 0 ||
	    read_cct(r, m) < 0 || read_trace(r, m) < 0 || read_stats(r, m) < 0)
		return -1;
	if (m->id.has_entry && m->id.entry.module != MFILE_NO_MODULE &&
	    m->id.entry.module >= m->nmodules)
		return fth_error("%s: chunk IDEN: the entry frame names module %u, not in the load "
				 "map (%u modules)", r->path, m->id.entry.module, m->nmodules);
	for (uint32_t i = 0; i < m->id.ncreation; i++)
		if (m->id.creation[i].module != MFILE_NO_MODULE &&
		    m->id.creation[i].module >= m->nmodules)
			return fth_error("%s: chunk IDEN: creation frame %u names module %u, not in "
					 "the load map (%u modules)", r->path, i,
					 m->id.creation[i].module, m->nmodules);
	return 0;
}

int mfile_read(const char *path, struct mfile *m)
{
	memset(m, 0, sizeof(*m));
	m->id.rank = m->id.parent_thread = -1;
	if (cf_read_file(path, MFILE_MAGIC, "fathom measurement file", MFILE_MAJOR, &m->major,
			 &m->minor, read_chunks, m) == 0)
		return 0;
	mfile_release(m);
	return -1;
}

int mfile_read_identity(const char *path, struct mfile_identity *id)
{
	struct mfile m;
	memset(&m, 0, sizeof(m));
	m.id.rank = m.id.parent_thread = -1;
	if (cf_read_file(path, MFILE_MAGIC, "fathom measurement file", MFILE_MAJOR, NULL, NULL,
			 read_identity, &m) < 0) {
		mfile_identity_release(&m.id);
		return -1;
	}
	*id = m.id;
	return 0;
}

void mfile_identity_release(struct mfile_identity *id)
{
	free(id->host);
	free(id->program);
	free(id->cwd);
	free(id->end_reason);
	free(id->name);
	free(id->cpu);
	free_strings(id->argv, id->argc);
	free(id->creation);
	memset(id, 0, sizeof(*id));
	id->rank = id->parent_thread = -1;
}

void mfile_release(struct mfile *m)
{
	mfile_identity_release(&m->id);
	for (uint32_t i = 0; i < m->nmodules; i++) {
		free(m->modules[i].path);
		free(m->modules[i].build_id);
		free(m->modules[i].ranges);
	}
	free(m->modules);
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		free(m->metrics[i].name);
		free(m->metrics[i].description);
		free(m->metrics[i].formula);
	}
	free(m->metrics);
	struct mfile_cct *c = &m->cct;
	free(c->parent);
	free(c->kind);
	free(c->module);
	free(c->offset);
	free(c->val_start);
	free(c->val_metric);
	free(c->val);
	free(m->trace);
	for (uint32_t i = 0; i < m->nstats; i++)
		free(m->stats[i].name);
	free(m->stats);
	memset(m, 0, sizeof(*m));
}

