/* SPDX-License-Identifier: MIT */
/*
 * cfi-cache.c: unwind tables kept in files, so that the processes of one measurement (a build
 * driver's hundreds of compilers, a shell pipeline) build each module's table once and map it
 * afterwards.  A table is position-independent (offsets from the load bias), so its rows and
 * bucket index are written as they are, after a header that names the module by its build-id
 * and a CRC-32C.  A loaded table is checked as strictly as the handler needs (rows sorted and
 * closed, every index entry a row) before it is used.  No malloc and no stdio: this runs in
 * measure's preloaded library, under the loader's lock.
 */
#include "compat.h"
#include "cfi.h"
#include "crc32c.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* rename() only */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "FTHCFI\0\1"

struct cache_header {
	char magic[8];
	uint32_t row_size; /* sizeof(struct cfi_row) of the writer */
	uint32_t key_len;
	uint8_t key[CFI_CACHE_KEY_MAX];
	uint32_t nrows, nfdes, nunknown, nbad;
	uint32_t has_index, nbuckets, shift;
	uint32_t crc; /* of this header with crc = 0, then the rows, then the index */
	uint64_t text_lo, text_hi;
};

static int cache_path(char *buf, size_t size, const char *dir, const uint8_t *key,
		      unsigned key_len, const char *suffix)
{
	char hex[2 * CFI_CACHE_KEY_MAX + 1];
	if (key_len == 0 || key_len > CFI_CACHE_KEY_MAX)
		return fth_error("unwind-table cache: a key of %u bytes", key_len);
	for (unsigned i = 0; i < key_len; i++)
		fth_format(hex + 2 * i, 3, "%02x", key[i]);
	size_t n = fth_format(buf, size, "%s/%s%s", dir, hex, suffix);
	return n < size ? 0 : fth_error("unwind-table cache: %s: path too long", dir);
}

static size_t index_bytes(uint32_t has_index, uint32_t nbuckets)
{
	return has_index ? ((size_t)nbuckets + 1) * sizeof(uint32_t) : 0;
}

/* The checks cfi_build()'s tables pass by construction. */
static int check_table(const char *path, const struct cfi_table *t)
{
	const struct cfi_row *r = t->rows;
	uint32_t n = t->nrows;
	if (n == 0)
		return t->index ? fth_error("%s: an index without rows", path) : 0;
	for (uint32_t i = 0; i < n; i++) {
		if (r[i].kind > CFI_RBX)
			return fth_error("%s: row %u has an unknown kind %u", path, i, r[i].kind);
		if (i && r[i].start < r[i - 1].start)
			return fth_error("%s: rows out of order at %u", path, i);
	}
	if (r[n - 1].kind != CFI_NONE)
		return fth_error("%s: the last row is not closed", path);
	if (!t->index)
		return 0;
	if (t->shift > 31 || n < 2)
		return fth_error("%s: a bad bucket index", path);
	uint64_t span = (uint64_t)r[n - 1].start - r[0].start + 1;
	if ((span >> t->shift) != t->nbuckets)
		return fth_error("%s: %u buckets for a span of %llu bytes", path, t->nbuckets,
				 (unsigned long long)span);
	for (uint32_t b = 0; b <= t->nbuckets; b++)
		if (t->index[b] >= n || (b && t->index[b] < t->index[b - 1]))
			return fth_error("%s: bucket %u points at no row", path, b);
	return 0;
}

int cfi_cache_load(const char *dir, const uint8_t *key, unsigned key_len, struct cfi_table *out)
{
	char path[4096], eb[64];
	if (cache_path(path, sizeof(path), dir, key, key_len, ".cfi") < 0)
		return -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : fth_error("%s: %s", path, fth_strerror(errno, eb, sizeof(eb)));
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct cache_header)) {
		close(fd);
		return fth_error("%s: truncated", path);
	}
	size_t size = (size_t)st.st_size;
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return fth_error("%s: mmap: %s", path, fth_strerror(errno, eb, sizeof(eb)));
	struct cache_header h;
	memcpy(&h, map, sizeof(h));
	const uint8_t *body = (const uint8_t *)map + sizeof(h);
	size_t rows = (size_t)h.nrows * sizeof(struct cfi_row);
	size_t index = index_bytes(h.has_index, h.nbuckets);
	const char *why = NULL;
	if (memcmp(h.magic, CACHE_MAGIC, sizeof(h.magic)) || h.row_size != sizeof(struct cfi_row))
		why = "not an unwind table of this version of measure";
	else if (h.key_len != key_len || memcmp(h.key, key, key_len))
		why = "the table of another module";
	else if (h.has_index > 1 || h.nrows > (size - sizeof(h)) / sizeof(struct cfi_row) ||
		 sizeof(h) + rows + index != size)
		why = "its size does not match its header";
	if (!why) {
		uint32_t want = h.crc;
		h.crc = 0;
		uint32_t crc = crc32c(0, &h, sizeof(h));
		crc = crc32c(crc, body, rows + index);
		if (crc != want)
			why = "checksum mismatch";
	}
	if (why) {
		munmap(map, size);
		return fth_error("%s: %s", path, why);
	}
	struct cfi_table t;
	memset(&t, 0, sizeof(t));
	t.rows = (const struct cfi_row *)body;
	t.nrows = h.nrows;
	t.nfdes = h.nfdes;
	t.nunknown = h.nunknown;
	t.nbad = h.nbad;
	t.text_lo = h.text_lo;
	t.text_hi = h.text_hi;
	if (h.has_index) {
		t.index = (const uint32_t *)(body + rows);
		t.nbuckets = h.nbuckets;
		t.shift = h.shift;
	}
	if (check_table(path, &t) < 0) {
		munmap(map, size);
		return -1;
	}
	*out = t;
	return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

int cfi_cache_store(const char *dir, const uint8_t *key, unsigned key_len,
		    const struct cfi_table *t)
{
	char path[4096], tmp[4096], suffix[48], eb[64];
	fth_format(suffix, sizeof(suffix), ".cfi.%d.tmp", (int)getpid());
	if (cache_path(path, sizeof(path), dir, key, key_len, ".cfi") < 0 ||
	    cache_path(tmp, sizeof(tmp), dir, key, key_len, suffix) < 0)
		return -1;
	struct cache_header h;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CACHE_MAGIC, sizeof(h.magic));
	h.row_size = sizeof(struct cfi_row);
	h.key_len = key_len;
	memcpy(h.key, key, key_len);
	h.nrows = t->nrows;
	h.nfdes = t->nfdes;
	h.nunknown = t->nunknown;
	h.nbad = t->nbad;
	h.has_index = t->index != NULL;
	h.nbuckets = t->index ? t->nbuckets : 0;
	h.shift = t->index ? t->shift : 0;
	h.text_lo = t->text_lo;
	h.text_hi = t->text_hi;
	size_t rows = (size_t)t->nrows * sizeof(struct cfi_row);
	size_t index = index_bytes(h.has_index, h.nbuckets);
	uint32_t crc = crc32c(0, &h, sizeof(h));
	crc = crc32c(crc, t->rows, rows);
	h.crc = t->index ? crc32c(crc, t->index, index) : crc;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return fth_error("%s: %s", tmp, fth_strerror(errno, eb, sizeof(eb)));
	int rc = write_all(fd, &h, sizeof(h));
	if (rc == 0 && rows)
		rc = write_all(fd, t->rows, rows);
	if (rc == 0 && index)
		rc = write_all(fd, t->index, index);
	int saved = errno;
	if (close(fd) < 0 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	/* rename() replaces a table another process wrote meanwhile: both are the same. */
	if (rc == 0 && rename(tmp, path) < 0) {
		rc = -1;
		saved = errno;
	}
	if (rc < 0) {
		unlink(tmp);
		return fth_error("%s: %s", path, fth_strerror(saved, eb, sizeof(eb)));
	}
	return 0;
}
