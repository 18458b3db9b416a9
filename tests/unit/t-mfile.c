/* SPDX-License-Identifier: MIT */
/*
 * t-mfile.c: the measurement file: round trips of every field, the async-signal-safe writer
 * path, writer misuse, and files that are well-formed containers but invalid measurements.
 */
#include "compat.h"
#include "mfile.h"
#include "mfile-fields.h"
#include "buf.h"
#include "error.h"
#include "le.h"
#include "xalloc.h"
#include "sample.h"
#include "tap.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *dump_text(const struct mfile *m)
{
	struct buf b = BUF_INIT;
	mfile_dump(m, &b);
	return buf_detach(&b, NULL);
}

static void test_round_trip(int level)
{
	struct mfile m, back;
	sample_mfile(&m);
	char name[32];
	snprintf(name, sizeof(name), "sample-%d.mf", level);
	char *path = tap_path(name);
	ok(mfile_write(path, &m, level) == 0, "level %d: write sample (%s)", level, fth_errmsg());
	ok(mfile_read(path, &back) == 0, "level %d: read it back (%s)", level, fth_errmsg());
	char *want = dump_text(&m), *got = dump_text(&back);
	is_str(got, want, "level %d: every field survives the round trip", level);
	is_str(back.id.argv[2], "1024\ttab\x1b[31m", "control characters kept in data");
	like(got, "\\x1b[31m", "and escaped in the dump");
	ok(isnan(back.metrics[0].threshold) && back.metrics[2].threshold == 0.75,
	   "thresholds (NaN and 0.75)");
	is_uint(back.cct.val[5], UINT64_MAX, "largest value kept");
	ok(mfile_write(path, &m, level) < 0, "existing file is not overwritten");
	like(fth_errmsg(), "File exists", "message says it exists");
	mfile_release(&back);
	ok(mfile_read(path, &back) == 0, "file still readable after the refused write");
	free(got);
	got = dump_text(&back);
	is_str(got, want, "and unchanged");
	free(want);
	free(got);
	mfile_release(&back);
	mfile_release(&m);
	free(path);
}

static void test_large(void)
{
	struct mfile m, back;
	const uint32_t n = 200000;
	sample_mfile_large(&m, n, 7);
	char *path = tap_path("large.mf");
	ok(mfile_write(path, &m, 1) == 0, "write %u nodes (%s)", n, fth_errmsg());
	ok(mfile_read(path, &back) == 0, "read %u nodes (%s)", n, fth_errmsg());
	const struct mfile_cct *a = &m.cct, *b = &back.cct;
	ok(a->nnodes == b->nnodes && a->nvalues == b->nvalues, "counts equal");
	ok(!memcmp(a->parent, b->parent, n * sizeof(*a->parent)) &&
		   !memcmp(a->kind, b->kind, n) &&
		   !memcmp(a->module, b->module, n * sizeof(*a->module)) &&
		   !memcmp(a->offset, b->offset, n * sizeof(*a->offset)) &&
		   !memcmp(a->val_start, b->val_start, (n + 1) * sizeof(*a->val_start)),
	   "node arrays identical");
	ok(!memcmp(a->val_metric, b->val_metric, a->nvalues * sizeof(*a->val_metric)) &&
		   !memcmp(a->val, b->val, a->nvalues * sizeof(*a->val)),
	   "value arrays identical");
	mfile_release(&back);
	mfile_release(&m);
	free(path);
}

/* The measure path: workspace from mmap, file written with no malloc by the writer. */
static void test_lean_writer(void)
{
	char *path = tap_path("lean.mf");
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	size_t size = mfile_writer_workspace_size(1);
	void *ws = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(fd >= 0 && ws != MAP_FAILED, "file and workspace");
	struct mfile_writer w;
	struct mfile_identity id = { .host = "h", .pid = 1, .tid = 1, .rank = -1,
				     .parent_thread = -1, .program = "/bin/true", .cwd = "/",
				     .end_reason = "exit" };
	struct mfile_metric metric = { .name = "CPUTIME", .description = "CPU time",
				       .unit = MFILE_UNIT_NANOSECONDS,
				       .rate_kind = MFILE_RATE_PERIOD, .rate = 5000, .parent = -1,
				       .threshold = NAN, .formula = "" };
	uint16_t mi[1] = { 0 };
	uint64_t mv[1] = { 5000000 };
	int rc = mfile_writer_open(&w, fd, path, 1, ws, size);
	if (rc == 0)
		rc = mfile_write_identity(&w, &id);
	if (rc == 0)
		rc = mfile_write_loadmap(&w, NULL, 0);
	if (rc == 0)
		rc = mfile_write_metrics(&w, &metric, 1);
	if (rc == 0)
		rc = mfile_write_cct_begin(&w, 3, 1);
	if (rc == 0)
		rc = mfile_write_node(&w, MFILE_NO_PARENT, MFILE_NODE_ROOT, MFILE_NO_MODULE, 0, 0,
				      NULL, NULL);
	if (rc == 0)
		rc = mfile_write_node(&w, 0, MFILE_NODE_FRAME, MFILE_NO_MODULE, 0x401000, 0, NULL,
				      NULL);
	ok(rc == 0, "lean writer up to the tree (%s)", fth_errmsg());
	ok(mfile_write_node(&w, 2, MFILE_NODE_SAMPLE, MFILE_NO_MODULE, 1, 1, mi, mv) < 0,
	   "a node cannot be its own parent");
	ok(mfile_write_cct_end(&w) < 0, "ending the tree early is refused");
	like(fth_errmsg(), "announced but not written", "message says what is missing");
	rc = mfile_write_node(&w, 1, MFILE_NODE_SAMPLE, MFILE_NO_MODULE, 0x401234, 1, mi, mv);
	ok(rc == 0, "last node");
	ok(mfile_write_node(&w, 1, MFILE_NODE_SAMPLE, MFILE_NO_MODULE, 0, 0, NULL, NULL) < 0,
	   "more nodes than announced refused");
	ok(mfile_write_cct_end(&w) == 0 && mfile_writer_finish(&w) == 0, "finish (%s)",
	   fth_errmsg());
	close(fd);
	munmap(ws, size);
	struct mfile back;
	ok(mfile_read(path, &back) == 0, "lean file reads (%s)", fth_errmsg());
	is_uint(back.cct.nnodes, 3, "three nodes");
	is_uint(back.cct.val[0], 5000000, "the value");
	is_str(back.metrics[0].name, "CPUTIME", "the metric");
	mfile_release(&back);
	free(path);
}

/*
 * Invalid measurement files in valid containers: write the chunks by hand.  WHICH selects the
 * defect; chunks not affected are written correctly.
 */
enum defect {
	D_NONE, D_NO_IDENTITY, D_NO_CCT, D_PARENT_FORWARD, D_BAD_KIND, D_ROOT_NOT_ROOT,
	D_MODULE_RANGE, D_METRIC_RANGE, D_VALUE_COUNT, D_METRIC_CYCLE, D_RUNNING_GT_ENABLED,
	D_HUGE_COUNT, D_UNKNOWN_FIELDS, D_WRONG_WIRE, D_TRACE_NODE, D_EMPTY_TREE,
	D_STRING_PAST_END, D_TRAILING_BYTES, D_UNNAMED_METRIC,
};

static int write_defective(const char *path, enum defect d)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t size = cf_writer_workspace_size(1);
	void *ws = xmalloc(size);
	struct cf_writer w;
	int rc = cf_writer_open(&w, fd, path, MFILE_MAGIC, MFILE_MAJOR, MFILE_MINOR, 1, ws, size);
	if (d != D_NO_IDENTITY) {
		cf_chunk_begin(&w, MFILE_CHUNK_IDENTITY);
		cf_field_str(&w, ID_HOST, "host");
		if (d == D_UNKNOWN_FIELDS) {
			cf_field_varint(&w, 900, 12345);
			cf_field_str(&w, 901, "a field from a newer minor version");
			cf_field_fixed64(&w, 902, 42);
		}
		if (d == D_WRONG_WIRE)
			cf_field_varint(&w, ID_PROGRAM, 7);
		if (d == D_STRING_PAST_END) {
			cf_put_varint(&w, (uint64_t)ID_PROGRAM << 2 | CF_WIRE_BYTES);
			cf_put_varint(&w, 1000);
		}
		cf_record_end(&w);
		if (d == D_TRAILING_BYTES)
			cf_put_str(&w, "junk");
		cf_chunk_end(&w);
	}
	cf_chunk_begin(&w, MFILE_CHUNK_LOADMAP);
	cf_put_varint(&w, 1);
	cf_field_str(&w, 1, "/lib/x.so");
	cf_record_end(&w);
	cf_chunk_end(&w);
	cf_chunk_begin(&w, MFILE_CHUNK_METRICS);
	cf_put_varint(&w, 2);
	for (int i = 0; i < 2; i++) {
		if (!(d == D_UNNAMED_METRIC && i == 1))
			cf_field_str(&w, 1, i ? "B" : "A");
		if (d == D_METRIC_CYCLE)
			cf_field_varint(&w, 10, le_zigzag(1 - i));
		if (d == D_RUNNING_GT_ENABLED) {
			cf_field_varint(&w, 7, 10);
			cf_field_varint(&w, 8, 11);
		}
		cf_record_end(&w);
	}
	cf_chunk_end(&w);
	if (d != D_NO_CCT) {
		cf_chunk_begin(&w, MFILE_CHUNK_CCT);
		if (d == D_EMPTY_TREE) {
			cf_put_varint(&w, 0);
			cf_put_varint(&w, 0);
		} else {
			cf_put_varint(&w, d == D_HUGE_COUNT ? 4000000000u : 2);
			cf_put_varint(&w, 1);
			/* root */
			cf_put_varint(&w, 0);
			cf_put_u8(&w, d == D_ROOT_NOT_ROOT ? MFILE_NODE_FRAME : MFILE_NODE_ROOT);
			cf_put_varint(&w, 0);
			cf_put_varint(&w, 0);
			cf_put_varint(&w, 0);
			/* one sample */
			cf_put_varint(&w, d == D_PARENT_FORWARD ? 2 : 1);
			cf_put_u8(&w, d == D_BAD_KIND ? 77 : MFILE_NODE_SAMPLE);
			cf_put_varint(&w, d == D_MODULE_RANGE ? 5 : 1);
			cf_put_varint(&w, 0x1234);
			cf_put_varint(&w, d == D_VALUE_COUNT ? 2 : 1);
			cf_put_varint(&w, d == D_METRIC_RANGE ? 2 : 1); /* metric delta: metric 1 */
			cf_put_varint(&w, 99);
		}
		cf_chunk_end(&w);
	}
	if (d == D_TRACE_NODE) {
		cf_chunk_begin(&w, MFILE_CHUNK_TRACE);
		cf_put_varint(&w, 1);
		cf_put_varint(&w, 10);
		cf_put_varint(&w, 2);
		cf_chunk_end(&w);
	}
	if (rc == 0)
		rc = cf_writer_finish(&w);
	free(ws);
	close(fd);
	return rc;
}

static void test_defects(void)
{
	static const struct {
		enum defect d;
		const char *message; /* expected in the error; NULL: the file must read */
	} cases[] = {
		{ D_NONE, NULL },
		{ D_UNKNOWN_FIELDS, NULL },
		{ D_NO_IDENTITY, "no identity chunk" },
		{ D_NO_CCT, "no calling context tree chunk" },
		{ D_PARENT_FORWARD, "node 1: bad parent distance 2" },
		{ D_BAD_KIND, "node 1: bad kind 77" },
		{ D_ROOT_NOT_ROOT, "node 0: bad kind 2" },
		{ D_MODULE_RANGE, "node 1: module 4 not in the load map" },
		{ D_METRIC_RANGE, "node 1: metric 2 out of range" },
		{ D_VALUE_COUNT, "node 1: 2 values" },
		{ D_METRIC_CYCLE, "metric parents form a cycle" },
		{ D_RUNNING_GT_ENABLED, "ran 11 ns, longer than enabled" },
		{ D_HUGE_COUNT, "4000000000 nodes cannot fit" },
		{ D_WRONG_WIRE, "string field has type 0" },
		{ D_TRACE_NODE, "node 2 out of range" },
		{ D_EMPTY_TREE, "empty tree" },
		{ D_STRING_PAST_END, "runs past the end" },
		{ D_TRAILING_BYTES, "unexpected bytes after the data" },
		{ D_UNNAMED_METRIC, "metric without a name" },
	};
	char *path = tap_path("defect.mf");
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		if (!ok(write_defective(path, cases[i].d) == 0, "defect %zu written", i))
			continue;
		struct mfile m;
		int rc = mfile_read(path, &m);
		if (!cases[i].message) {
			ok(rc == 0, "defect %zu: reads (%s)", i, fth_errmsg());
			if (rc == 0) {
				is_uint(m.cct.val[0], 99, "defect %zu: value read", i);
				is_str(m.id.host, "host", "defect %zu: known field read", i);
				mfile_release(&m);
			}
		} else {
			ok(rc < 0, "defect %zu refused", i);
			like(fth_errmsg(), cases[i].message, "defect %zu: message", i);
			like(fth_errmsg(), path, "defect %zu: names the file", i);
		}
	}
	free(path);
}

int main(void)
{
	test_round_trip(0);
	test_round_trip(3);
	test_large();
	test_lean_writer();
	test_defects();
	is_str(mfile_node_kind_name(MFILE_NODE_PARTIAL), "partial", "kind names");
	is_str(mfile_node_kind_name(200), "unknown", "unknown kind name");
	is_str(mfile_unit_name(MFILE_UNIT_BYTES), "bytes", "unit names");
	return done_testing();
}
