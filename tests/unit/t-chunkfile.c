/* SPDX-License-Identifier: MIT */
/* t-chunkfile.c: the chunk container: round trips, streaming, write failures, corrupt input. */
#include "compat.h"
#include "chunkfile.h"
#include "crc32c.h"
#include "error.h"
#include "le.h"
#include "xalloc.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC "FTHMTEST"
#define BIG (3u << 20) /* larger than every internal window, so streaming is exercised */

static uint8_t pattern_byte(size_t i)
{
	return (uint8_t)((i * 2654435761u) >> 13);
}

/* W finished unless RC says a step failed, its workspace WS freed and FD closed: RC, or the
 * finish's. */
static int finish_writing(struct cf_writer *w, int rc, void *ws, int fd)
{
	if (rc == 0)
		rc = cf_writer_finish(w);
	free(ws);
	close(fd);
	return rc;
}

/* Write a file with three chunks: A (small text), B (BIG bytes, fed in odd pieces), C empty. */
static int write_test_file(const char *path, int level, uint16_t major)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	size_t ws_size = cf_writer_workspace_size(level);
	void *ws = xmalloc(ws_size);
	struct cf_writer w;
	int rc = cf_writer_open(&w, fd, path, MAGIC, major, 7, level, ws, ws_size);
	if (rc == 0)
		rc = cf_chunk_begin(&w, CF_ID('A', 'A', 'A', 'A'));
	if (rc == 0)
		rc = cf_put_str(&w, "hello, chunk");
	if (rc == 0)
		rc = cf_put_varint(&w, 300);
	if (rc == 0)
		rc = cf_put_u64(&w, 0x0102030405060708ULL);
	if (rc == 0)
		rc = cf_chunk_end(&w);
	if (rc == 0)
		rc = cf_chunk_begin(&w, CF_ID('B', 'B', 'B', 'B'));
	uint8_t *big = xmalloc(BIG);
	for (size_t i = 0; i < BIG; i++)
		big[i] = pattern_byte(i);
	for (size_t off = 0, step = 1; rc == 0 && off < BIG; step = step * 3 + 1) {
		size_t n = FTH_MIN(step % 100000 + 1, BIG - off);
		rc = cf_put(&w, big + off, n);
		off += n;
	}
	free(big);
	if (rc == 0)
		rc = cf_chunk_end(&w);
	if (rc == 0)
		rc = cf_chunk_begin(&w, CF_ID('C', 'C', 'C', 'C'));
	if (rc == 0)
		rc = cf_chunk_end(&w);
	return finish_writing(&w, rc, ws, fd);
}

static void test_round_trip(int level)
{
	char name[32];
	snprintf(name, sizeof(name), "rt-%d", level);
	char *path = tap_path(name);
	ok(write_test_file(path, level, 1) == 0, "level %d: write (%s)", level, fth_errmsg());
	struct cf_reader r;
	if (!ok(cf_open(&r, path, MAGIC, "test file", 1) == 0, "level %d: open (%s)", level,
		fth_errmsg())) {
		free(path);
		return;
	}
	is_uint(r.major, 1, "major version");
	is_uint(r.minor, 7, "minor version");
	is_uint(r.nchunks, 3, "three chunks");
	const struct cf_entry *a = cf_find(&r, CF_ID('A', 'A', 'A', 'A'), 0);
	const struct cf_entry *b = cf_find(&r, CF_ID('B', 'B', 'B', 'B'), 0);
	const struct cf_entry *c = cf_find(&r, CF_ID('C', 'C', 'C', 'C'), 0);
	ok(a && b && c, "every chunk found");
	ok(!cf_find(&r, CF_ID('A', 'A', 'A', 'A'), 1), "no second A chunk");
	ok(!cf_find(&r, CF_ID('Z', 'Z', 'Z', 'Z'), 0), "unknown chunk not found");
	if (!a || !b || !c) {
		cf_close(&r);
		free(path);
		return;
	}
	is_uint(b->raw, BIG, "B raw size");
	if (level > 0)
		ok(b->stored < b->raw, "B compressed (%llu < %llu)", (unsigned long long)b->stored,
		   (unsigned long long)b->raw);
	else
		is_uint(b->stored, b->raw, "B stored as is");

	struct cf_stream s;
	ok(cf_stream_open(&r, a, &s) == 0, "open stream on A");
	char *str = NULL;
	size_t len = 0;
	uint64_t v = 0, f = 0;
	ok(cf_get_bytes(&s, 100, &str, &len) == 0 && str && !strcmp(str, "hello, chunk") &&
		   len == 12, "string back");
	free(str);
	ok(cf_get_varint(&s, &v) == 0 && v == 300, "varint back");
	ok(cf_get_u64(&s, &f) == 0 && f == 0x0102030405060708ULL, "u64 back");
	ok(cf_stream_finish(&s) == 0, "A consumed exactly, checksum good (%s)", fth_errmsg());

	ok(cf_stream_open(&r, b, &s) == 0, "open stream on B");
	size_t pos = 0, mismatches = 0, need = 1;
	for (;;) {
		long have = cf_need(&s, need);
		if (have <= 0)
			break;
		size_t take = FTH_MIN((size_t)have, need);
		for (size_t i = 0; i < take; i++)
			mismatches += s.p[i] != pattern_byte(pos + i);
		s.p += take;
		pos += take;
		need = need * 7 % 300000 + 1; /* odd window demands, some larger than the window */
	}
	is_uint(pos, BIG, "B streamed in full");
	is_uint(mismatches, 0, "B bytes identical");
	ok(cf_stream_finish(&s) == 0, "B checksum good (%s)", fth_errmsg());

	uint8_t *data = NULL;
	ok(cf_read_chunk(&r, c, &data, &len) == 0 && len == 0, "empty chunk reads as empty");
	free(data);
	ok(cf_stream_open(&r, a, &s) == 0, "reopen A");
	ok(cf_get_bytes(&s, 5, &str, &len) < 0, "string over the limit refused");
	like(fth_errmsg(), "longer than the limit", "message says why");
	cf_stream_free(&s);
	ok(cf_stream_open(&r, a, &s) == 0, "reopen A again");
	ok(cf_stream_finish(&s) < 0, "unconsumed bytes are an error");
	like(fth_errmsg(), "unexpected bytes", "message says unexpected bytes");
	cf_close(&r);
	free(path);
}

static void test_write_failure(void)
{
	int fd = open("/dev/full", O_WRONLY);
	if (fd < 0) {
		skip("no /dev/full", "write to a full device fails cleanly");
		return;
	}
	size_t ws_size = cf_writer_workspace_size(1);
	void *ws = xmalloc(ws_size);
	struct cf_writer w;
	int rc = cf_writer_open(&w, fd, "/dev/full", MAGIC, 1, 0, 1, ws, ws_size);
	ok(rc < 0, "header write to a full device fails");
	like(fth_errmsg(), "No space left on device", "message names ENOSPC");
	like(fth_errmsg(), "/dev/full", "message names the file");
	ok(cf_chunk_begin(&w, 1) < 0 && cf_put_varint(&w, 1) < 0 && cf_writer_finish(&w) < 0,
	   "every later call fails too");
	free(ws);
	close(fd);
	char small[64];
	ok(cf_writer_open(&w, 1, "x", MAGIC, 1, 0, 1, small, sizeof(small)) < 0,
	   "too small a workspace is refused");
}

/* Stored chunks are staged: a small file goes out in one write, a full disk is found at the
 * end, and a file larger than the stage in a few writes. */
static void test_stored_writes(void)
{
	size_t ws_size = cf_writer_workspace_size(0);
	void *ws = xmalloc(ws_size);
	struct cf_writer w;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) < 0) {
		skip("no SOCK_SEQPACKET socket pair", "a small stored file goes out in one write");
	} else {
		/* Each write(2) on this socket is one message. */
		int bufsize = 1 << 20;
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
		setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
		int rc = cf_writer_open(&w, sv[0], "socket", MAGIC, 1, 0, 0, ws, ws_size);
		for (uint32_t c = 0; rc == 0 && c < 5; c++) {
			rc = cf_chunk_begin(&w, c + 1);
			for (int k = 0; rc == 0 && k < 100; k++)
				rc = cf_put_varint(&w, c * 1000 + (uint64_t)k);
			if (rc == 0)
				rc = cf_chunk_end(&w);
		}
		if (rc == 0)
			rc = cf_writer_finish(&w);
		ok(rc == 0, "five stored chunks written to a socket (%s)", rc ? fth_errmsg() : "");
		shutdown(sv[0], SHUT_WR);
		size_t messages = 0, bytes = 0;
		static uint8_t msg[1 << 17];
		ssize_t n;
		while ((n = recv(sv[1], msg, sizeof(msg), 0)) > 0) {
			messages++;
			bytes += (size_t)n;
		}
		is_uint(messages, 1, "header, chunks, table and footer in one write (%zu bytes)", bytes);
		close(sv[0]);
		close(sv[1]);
	}
	int fd = open("/dev/full", O_WRONLY);
	if (fd < 0) {
		skip("no /dev/full", "a stored file on a full device fails cleanly");
	} else {
		int rc = cf_writer_open(&w, fd, "/dev/full", MAGIC, 1, 0, 0, ws, ws_size);
		if (rc == 0)
			rc = cf_chunk_begin(&w, 1);
		if (rc == 0)
			rc = cf_put_str(&w, "staged");
		if (rc == 0)
			rc = cf_chunk_end(&w);
		ok(rc == 0, "stored chunks are staged, not yet written");
		ok(cf_writer_finish(&w) < 0, "finishing on a full device fails");
		like(fth_errmsg(), "No space left on device", "message names ENOSPC");
		like(fth_errmsg(), "/dev/full", "message names the file");
		close(fd);
	}
	free(ws);
}

/* Open and read every chunk; returns 0 only if all of it validates. */
static int read_everything(const char *path)
{
	struct cf_reader r;
	if (cf_open(&r, path, MAGIC, "test file", 1) < 0)
		return -1;
	int rc = 0;
	for (uint32_t i = 0; i < r.nchunks && rc == 0; i++) {
		uint8_t *d;
		size_t n;
		rc = cf_read_chunk(&r, &r.toc[i], &d, &n);
		if (rc == 0)
			free(d);
	}
	cf_close(&r);
	return rc;
}

static void test_bad_input(void)
{
	struct cf_reader r;
	char *missing = tap_path("missing");
	ok(cf_open(&r, missing, MAGIC, "test file", 1) < 0, "missing file refused");
	like(fth_errmsg(), "No such file or directory", "message says it is missing");
	like(fth_errmsg(), missing, "message names the file");
	free(missing);
	ok(cf_open(&r, tap_tmpdir(), MAGIC, "test file", 1) < 0, "directory refused");
	like(fth_errmsg(), "is a directory", "message says directory");

	char *path = tap_path("small");
	char *bad = tap_path("bad");
	/* A small file, so that every truncation and every byte flip can be tried. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t ws_size = cf_writer_workspace_size(3);
	void *ws = xmalloc(ws_size);
	struct cf_writer w;
	int rc = cf_writer_open(&w, fd, path, MAGIC, 1, 0, 3, ws, ws_size);
	for (int k = 0; rc == 0 && k < 2; k++) {
		rc = cf_chunk_begin(&w, CF_ID('D', 'A', 'T', (char)('0' + k)));
		for (int i = 0; rc == 0 && i < 50; i++)
			rc = cf_put_varint(&w, (uint64_t)i * i * 1000 + k);
		if (rc == 0)
			rc = cf_chunk_end(&w);
	}
	rc = finish_writing(&w, rc, ws, fd);
	ok(rc == 0 && read_everything(path) == 0, "small file written and read");
	size_t n;
	uint8_t *orig = tap_read_file(path, &n);
	if (!orig)
		exit(99);

	tap_write_file(bad, (const uint8_t *)"", 0);
	ok(cf_open(&r, bad, MAGIC, "test file", 1) < 0, "empty file refused");
	like(fth_errmsg(), "not a test file", "empty file: says what it is not");
	tap_write_file(bad, (const uint8_t *)"\177ELF\2\1\1\0\0\0\0\0\0\0\0\0", 16);
	ok(cf_open(&r, bad, MAGIC, "test file", 1) < 0, "ELF file refused");
	like(fth_errmsg(), "wrong magic", "ELF: wrong magic");
	uint8_t *other = xmalloc(n);
	memcpy(other, orig, n);
	memcpy(other, "FTHMDBSE", 8);
	tap_write_file(bad, other, n);
	ok(cf_open(&r, bad, MAGIC, "test file", 1) < 0, "other fathom file refused");
	like(fth_errmsg(), "it is a fathom 'FTHMDBSE' file", "says which kind it is");
	/* A newer major version with a valid header checksum. */
	memcpy(other, orig, n);
	le_put16(other + 8, 2);
	le_put32(other + 28, crc32c(0, other, 28));
	tap_write_file(bad, other, n);
	ok(cf_open(&r, bad, MAGIC, "test file", 1) < 0, "major version 2 refused");
	like(fth_errmsg(), "format version 2.0 is not supported", "says which version");
	free(other);

	size_t truncations_refused = 0;
	for (size_t len = 0; len < n; len++) {
		tap_write_file(bad, orig, len);
		if (read_everything(bad) < 0 && strstr(fth_errmsg(), bad))
			truncations_refused++;
	}
	is_uint(truncations_refused, n, "every truncation (0..%zu bytes) refused, naming the file",
		n - 1);

	size_t flips_refused = 0;
	for (size_t i = 0; i < n; i++) {
		for (unsigned bit = 0; bit < 8; bit += 3) {
			tap_write_flipped(bad, orig, n, i, 1u << bit);
			if (read_everything(bad) < 0 && strstr(fth_errmsg(), bad))
				flips_refused++;
			else
				diag("flip of bit %u at byte %zu of %zu not detected", bit, i, n);
		}
	}
	is_uint(flips_refused, n * 3, "every bit flip detected (%zu flips)", n * 3);
	free(orig);
	free(path);
	free(bad);
}

int main(void)
{
	test_round_trip(0);
	test_round_trip(1);
	test_round_trip(3);
	test_write_failure();
	test_stored_writes();
	test_bad_input();
	char nm[5];
	is_str(cf_id_name(CF_ID('C', 'C', 'T', ' '), nm), "CCT ", "chunk id name");
	is_str(cf_id_name(CF_ID('\n', 'A', 0, 0x7f), nm), "?A??", "unprintable id bytes");
	return done_testing();
}
