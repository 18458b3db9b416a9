/* SPDX-License-Identifier: MIT */
/*
 * t-sfile.c: the structure file: a round trip of every field, address lookups, the dump, and
 * well-formed containers that are invalid structure files (bad indices, unsorted or
 * overlapping ranges, a loop without a parent, a missing chunk, truncation).
 */
#include "compat.h"
#include "sfile.h"
#include "buf.h"
#include "error.h"
#include "xalloc.h"
#include "tap.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * main [0x1000,0x1100): loop at t.c:5 (latch at line 9) [0x1010,0x1040) holding inline k
 * [0x1020,0x1030).
 */
static void sample(struct sfile *sf)
{
	memset(sf, 0, sizeof(*sf));
	sf->path = xstrdup("/bin/t");
	sf->debug_path = xstrdup("/usr/lib/debug/t.debug");
	sf->build_id_len = 4;
	sf->build_id = xmalloc(4);
	memcpy(sf->build_id, "\x01\x02\xab\xff", 4);
	sf->machine = 62;
	sf->flags = SFILE_MODULE_DWARF | SFILE_MODULE_LINES | SFILE_MODULE_LOOPS;
	sf->text_bytes = 4096;
	static const char *const strs[] = { "main", "/src/t.c", "k", "main.cold", "tab\there" };
	sf->nstrings = ARRAY_SIZE(strs);
	sf->strings = tap_strdup_array(strs, sf->nstrings);
	sf->nnodes = 4;
	sf->nodes = xcalloc(4, sizeof(*sf->nodes));
	sf->nodes[0] = (struct sfile_node){ SFILE_FUNCTION, SFILE_NONE, 0, 3, 1, 3, 0, 0, 0x1000,
					    SFILE_NONE, 0, SFILE_NONE, 0, SFILE_NONE, 0, 0 };
	sf->nodes[1] = (struct sfile_node){ SFILE_LOOP, 0, SFILE_NONE, SFILE_NONE, 1, 5, 7,
					    SFILE_NODE_IRREDUCIBLE, 0x1010, SFILE_NONE, 2,
					    SFILE_NONE, 0, 1, 9, 3 };
	sf->nodes[2] = (struct sfile_node){ SFILE_INLINE, 1, 2, SFILE_NONE, 1, 6, 9, 0, 0,
					    SFILE_NONE, 0, 1, 3, SFILE_NONE, 0, 0 };
	sf->nodes[3] = (struct sfile_node){ SFILE_FUNCTION, SFILE_NONE, 4, SFILE_NONE, SFILE_NONE,
					    0, 0, SFILE_NODE_CLONE | SFILE_NODE_NO_DWARF, 0x2000, 0, 0,
					    SFILE_NONE, 0, SFILE_NONE, 0, 0 };
	sf->nranges = 5;
	sf->ranges = xcalloc(5, sizeof(*sf->ranges));
	sf->ranges[0] = (struct sfile_range){ 0x1000, 0x1010, 0 };
	sf->ranges[1] = (struct sfile_range){ 0x1010, 0x1020, 1 };
	sf->ranges[2] = (struct sfile_range){ 0x1020, 0x1030, 2 };
	sf->ranges[3] = (struct sfile_range){ 0x1030, 0x1100, 1 };
	sf->ranges[4] = (struct sfile_range){ 0x2000, 0x2010, 3 };
	sf->nlines = 3;
	sf->lines = xcalloc(3, sizeof(*sf->lines));
	sf->lines[0] = (struct sfile_line){ 0x1000, 0x1010, 1, 3, 0 };
	sf->lines[1] = (struct sfile_line){ 0x1010, 0x1020, 1, 5, 7 };
	sf->lines[2] = (struct sfile_line){ 0x1020, 0x1030, SFILE_NONE, 0, 0 };
	sf->nblocks = 2; /* the loop's two blocks (1.4) */
	sf->blocks = xcalloc(2, sizeof(*sf->blocks));
	sf->blocks[0] = (struct sfile_range){ 0x1010, 0x1028, 1 };
	sf->blocks[1] = (struct sfile_range){ 0x1028, 0x1040, 1 };
}

static char *dump_text(const struct sfile *sf)
{
	struct buf b = BUF_INIT;
	sfile_dump(sf, &b);
	return buf_detach(&b, NULL);
}

static void test_round_trip(int level)
{
	struct sfile sf, back;
	sample(&sf);
	char name[32];
	snprintf(name, sizeof(name), "rt-%d.fthst", level);
	char *path = tap_path(name);
	ok(sfile_write(path, &sf, level) == 0, "level %d: write (%s)", level, fth_errmsg());
	ok(sfile_read(path, &back) == 0, "level %d: read back (%s)", level, fth_errmsg());
	sf.major = back.major;
	sf.minor = back.minor;
	char *want = dump_text(&sf), *got = dump_text(&back);
	is_str(got, want, "level %d: the dump survives the round trip", level);
	ok(back.nnodes == 4 && !memcmp(back.nodes, sf.nodes, 4 * sizeof(*sf.nodes)),
	   "nodes identical");
	ok(back.nranges == 5 && !memcmp(back.ranges, sf.ranges, 5 * sizeof(*sf.ranges)),
	   "ranges identical");
	ok(back.nlines == 3 && !memcmp(back.lines, sf.lines, 3 * sizeof(*sf.lines)),
	   "lines identical");
	ok(back.nblocks == 2 && !memcmp(back.blocks, sf.blocks, 2 * sizeof(*sf.blocks)),
	   "loop blocks identical");
	like(got, "      blocks [0x1010-0x1028) [0x1028-0x1040)\n", "the dump lists the loop's blocks");
	is_str(back.debug_path, "/usr/lib/debug/t.debug", "debug path");
	ok(back.build_id_len == 4 && !memcmp(back.build_id, "\x01\x02\xab\xff", 4), "build-id");
	is_uint(back.major, SFILE_MAJOR, "major version");
	ok(sfile_write(path, &sf, level) < 0, "an existing file is not overwritten");
	free(want);
	free(got);
	sfile_release(&back);
	sfile_release(&sf);
	free(path);
}

static void test_lookup_and_dump(void)
{
	struct sfile sf;
	sample(&sf);
	is_uint(sfile_lookup(&sf, 0x1000), 0, "entry: function");
	is_uint(sfile_lookup(&sf, 0x1025), 2, "inline inside the loop");
	is_uint(sfile_lookup(&sf, 0x10ff), 1, "loop");
	is_uint(sfile_lookup(&sf, 0x1100), SFILE_NONE, "end is exclusive");
	is_uint(sfile_lookup(&sf, 0xfff), SFILE_NONE, "before the first range");
	is_uint(sfile_lookup(&sf, 0x1fff), SFILE_NONE, "in a gap");
	ok(sfile_line_at(&sf, 0x1015) && sfile_line_at(&sf, 0x1015)->line == 5, "line of 0x1015");
	ok(!sfile_line_at(&sf, 0x1030), "no line past the table");
	char *text = dump_text(&sf);
	like(text, "  file /src/t.c\n    function main at /src/t.c:3 entry=0x1000 symbol=main.cold "
		   "[0x1000-0x1100)\n", "function line");
	like(text, "      loop at /src/t.c:5:7 latch=9:3 header=0x1010 entries=2 flags=irreducible "
		   "[0x1010-0x1100)\n", "loop line");
	like(text, "        inline k called at /src/t.c:6:9 declared at /src/t.c:3 [0x1020-0x1030)\n", "inline line");
	like(text, "          stmt ?:0 [0x1020-0x1030)\n", "statement without a line");
	like(text, "      stmt /src/t.c:3 [0x1000-0x1010)\n", "statement with a line");
	like(text, "function tab\\there entry=0x2000 origin=main flags=symbol-only,clone "
		   "[0x2000-0x2010)", "clone, escaped");
	free(text);
	sfile_release(&sf);
}

/* Write SF with one field broken by BREAK, and expect the reader to refuse it with WANT. */
static void expect_refused(const char *what, void (*breaker)(struct sfile *), const char *want)
{
	struct sfile sf, back;
	sample(&sf);
	breaker(&sf);
	char *path = tap_path("bad.fthst");
	int wrote = sfile_write(path, &sf, 1);
	if (wrote < 0) {
		like(fth_errmsg(), want, "%s: refused by the writer", what);
	} else {
		ok(sfile_read(path, &back) < 0, "%s: refused by the reader", what);
		like(fth_errmsg(), want, "%s: says why", what);
		like(fth_errmsg(), path, "%s: names the file", what);
	}
	sfile_release(&sf);
	free(path);
}

static void bad_parent(struct sfile *sf) { sf->nodes[2].parent = 3; }
static void bad_name(struct sfile *sf) { sf->nodes[0].name = 99; }
static void loop_root(struct sfile *sf) { sf->nodes[1].parent = SFILE_NONE; }
static void bad_kind(struct sfile *sf) { sf->nodes[1].kind = 7; }
static void bad_origin(struct sfile *sf) { sf->nodes[3].origin = 1; }
static void unsorted(struct sfile *sf) { sf->ranges[1].lo = 0x1008; }
static void bad_node(struct sfile *sf) { sf->ranges[4].node = 4; }
static void bad_line_file(struct sfile *sf) { sf->lines[0].file = 5; }
static void block_of_inline(struct sfile *sf) { sf->blocks[1].node = 2; }
static void blocks_overlap(struct sfile *sf) { sf->blocks[1].lo = 0x1020; }

static void test_refused(void)
{
	expect_refused("parent after the child", bad_parent, "parent is missing or not before it");
	expect_refused("name index", bad_name, "name 99 out of range");
	expect_refused("loop without a parent", loop_root, "parent is missing");
	expect_refused("unknown kind", bad_kind, "unknown kind 7");
	expect_refused("origin that is a loop", bad_origin, "is not another function");
	expect_refused("overlapping ranges", unsorted, "not sorted");
	expect_refused("range of a missing node", bad_node, "bad node");
	expect_refused("line file index", bad_line_file, "file 5 out of range");
	expect_refused("a block of an inline node", block_of_inline, "node 2 is not a loop");
	expect_refused("overlapping blocks", blocks_overlap, "not sorted");
}

static void test_truncated_and_wrong_kind(void)
{
	struct sfile sf, back;
	sample(&sf);
	char *path = tap_path("trunc.fthst");
	ok(sfile_write(path, &sf, 0) == 0, "write");
	int fd = open(path, O_RDWR);
	off_t size = lseek(fd, 0, SEEK_END);
	ok(ftruncate(fd, size - 40) == 0, "truncate");
	close(fd);
	ok(sfile_read(path, &back) < 0, "truncated file refused");
	like(fth_errmsg(), path, "message names it");
	char *other = tap_path("text.fthst");
	FILE *f = fopen(other, "w");
	fputs("not a structure file at all, just text\n", f);
	fclose(f);
	ok(sfile_read(other, &back) < 0, "text refused");
	like(fth_errmsg(), other, "message names it");
	sfile_release(&sf);
	free(path);
	free(other);
}

int main(void)
{
	test_round_trip(0);
	test_round_trip(3);
	test_lookup_and_dump();
	test_refused();
	test_truncated_and_wrong_kind();
	return done_testing();
}
