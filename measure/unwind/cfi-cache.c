/* SPDX-License-Identifier: MIT */
/*
 * cfi-cache.c: unwind tables kept in files, so that the processes of one measurement build
 * each module's table once and map it afterwards; the check of a mapped table, done once per
 * file and stamped in DIR/verified, and cfi_cache_tidy(), which bounds the directory.  No
 * malloc and no stdio outside cfi_cache_tidy().  The file format and why a stamp can be
 * trusted: doc/internals.md, 2.3, "The table files".
 */
#include "compat.h"
#include "cfi.h"
#include "crc32c.h"
#include "error.h"
#include "input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h> /* renameat() only */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAGIC "FTHCFI\0\1"
#define STAMP_FILE "verified"
#define STAMP_MAX 256 /* stamps read per process; tables past them are checked in full */
#define STAMP_SETTLE_NS 10000000ll	  /* how much older than the check the file must be */
#define STAMP_SETTLE_COARSE_NS 2000000000ll /* on a file system with whole-second times */

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

/* DIR/HEX(KEY)SUFFIX into BUF; with DIR NULL, the name alone. */
static int cache_path(char *buf, size_t size, const char *dir, const uint8_t *key,
		      unsigned key_len, const char *suffix)
{
	char hex[2 * CFI_CACHE_KEY_MAX + 1];
	if (key_len == 0 || key_len > CFI_CACHE_KEY_MAX)
		return fth_error("unwind-table cache: a key of %u bytes", key_len);
	for (unsigned i = 0; i < key_len; i++)
		fth_format(hex + 2 * i, 3, "%02x", key[i]);
	size_t n = dir ? fth_format(buf, size, "%s/%s%s", dir, hex, suffix)
		       : fth_format(buf, size, "%s%s", hex, suffix);
	return n < size ? 0 : fth_error("unwind-table cache: %s: path too long", dir ? dir : hex);
}

/* DIR/verified: one record per table file that a process of the run checked in full. */
struct stamp {
	uint8_t key[CFI_CACHE_KEY_MAX];
	uint32_t key_len;
	uint32_t crc; /* of the record with crc = 0 */
	uint64_t ino, size;
	int64_t mtime_ns, ctime_ns;
};

static struct stamp stamps[STAMP_MAX];
static unsigned nstamps;
static char stamps_dir[512]; /* whose stamps those are; empty: not read yet */

static int64_t ns_of(struct timespec ts)
{
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void stamp_fill(struct stamp *r, const uint8_t *key, unsigned key_len,
		       const struct stat *st)
{
	memset(r, 0, sizeof(*r));
	memcpy(r->key, key, key_len);
	r->key_len = key_len;
	r->ino = (uint64_t)st->st_ino;
	r->size = (uint64_t)st->st_size;
	r->mtime_ns = ns_of(st->st_mtim);
	r->ctime_ns = ns_of(st->st_ctim);
	r->crc = crc32c(0, r, sizeof(*r));
}

/* Read DIR's stamps, once per process and directory; false when DIR cannot have any. */
static bool read_stamps(const char *dir)
{
	size_t len = strlen(dir);
	if (len >= sizeof(stamps_dir))
		return false;
	if (!strcmp(stamps_dir, dir))
		return true;
	memcpy(stamps_dir, dir, len + 1);
	nstamps = 0;
	char path[sizeof(stamps_dir) + sizeof(STAMP_FILE) + 1];
	fth_format(path, sizeof(path), "%s/%s", dir, STAMP_FILE);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return true;
	struct stat st;
	ssize_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, stamps, sizeof(stamps)) : 0;
	close(fd);
	nstamps = n > 0 ? (unsigned)((size_t)n / sizeof(struct stamp)) : 0;
	return true;
}

/* Whether a process of the run checked this very file (no damaged record matches). */
static bool stamped(const uint8_t *key, unsigned key_len, const struct stat *st)
{
	struct stamp want;
	stamp_fill(&want, key, key_len, st);
	for (unsigned i = 0; i < nstamps; i++)
		if (!memcmp(&stamps[i], &want, sizeof(want)))
			return true;
	return false;
}

/* Record that the file ST describes passed the full check (best effort). */
static void add_stamp(const char *dir, const uint8_t *key, unsigned key_len,
		      const struct stat *st)
{
	struct stamp r;
	stamp_fill(&r, key, key_len, st);
	char path[sizeof(stamps_dir) + sizeof(STAMP_FILE) + 1];
	fth_format(path, sizeof(path), "%s/%s", dir, STAMP_FILE);
	/* One write of a small record to an O_APPEND file: records never interleave.  Never
	 * through a link, and only to a regular file of this user's (made by the first stamp). */
	int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat own;
	if (fstat(fd, &own) < 0 || !S_ISREG(own.st_mode) || own.st_uid != geteuid()) {
		close(fd);
		return;
	}
	ssize_t w = write(fd, &r, sizeof(r));
	close(fd);
	if (w == (ssize_t)sizeof(r) && nstamps < STAMP_MAX)
		stamps[nstamps++] = r;
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
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : fth_error("%s: %s", path, fth_strerror(errno, eb, sizeof(eb)));
	struct timespec tick;
	clock_gettime(CLOCK_REALTIME_COARSE, &tick);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fth_error("%s: not a regular file", path);
	}
	if (st.st_size < (off_t)sizeof(struct cache_header)) {
		close(fd);
		return fth_error("%s: truncated", path);
	}
	size_t size = (size_t)st.st_size;
	/* Read, not through the mapping: its first page is faulted in only if the handler needs
	 * the rows there. */
	struct cache_header h;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		close(fd);
		return fth_error("%s: truncated", path);
	}
	void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return fth_error("%s: mmap: %s", path, fth_strerror(errno, eb, sizeof(eb)));
	bool use_stamps = read_stamps(dir);
	bool checked = use_stamps && stamped(key, key_len, &st);
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
	if (!why && !checked) {
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
	if (checked) {
		*out = t;
		return 2;
	}
	if (check_table(path, &t) < 0) {
		munmap(map, size);
		return -1;
	}
	/* Stamped only when a later change could not keep the change time seen here. */
	int64_t settle = st.st_ctim.tv_nsec ? STAMP_SETTLE_NS : STAMP_SETTLE_COARSE_NS;
	if (use_stamps && ns_of(tick) - ns_of(st.st_ctim) >= settle)
		add_stamp(dir, key, key_len, &st);
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

/* One part of a file that replace_file() writes. */
struct file_part {
	const void *data;
	size_t len;
};

/*
 * Write PARTS into TMP, a new file (never through a link), then rename it to PATH, both
 * relative to DIRFD: a reader sees the old file or the whole new one, never a part.  Returns
 * 0, or -1 with errno set and *FAILED naming the file that failed (TMP is then removed).
 */
static int replace_file(int dirfd, const char *tmp, const char *path,
			const struct file_part *parts, int nparts, const char **failed)
{
	*failed = tmp;
	int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	*failed = path;
	int rc = 0;
	for (int i = 0; i < nparts && rc == 0; i++)
		if (parts[i].len)
			rc = write_all(fd, parts[i].data, parts[i].len);
	int saved = errno;
	if (close(fd) < 0 && rc == 0) {
		rc = -1;
		saved = errno;
	}
	if (rc == 0 && renameat(dirfd, tmp, dirfd, path) < 0) {
		rc = -1;
		saved = errno;
	}
	if (rc < 0) {
		unlinkat(dirfd, tmp, 0);
		errno = saved;
	}
	return rc;
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
	/* rename() replaces a table another process wrote meanwhile: both are the same. */
	const struct file_part parts[] = { { &h, sizeof(h) }, { t->rows, rows }, { t->index, index } };
	const char *failed;
	if (replace_file(AT_FDCWD, tmp, path, parts, 3, &failed) < 0)
		return fth_error("%s: %s", failed, fth_strerror(errno, eb, sizeof(eb)));
	return 0;
}

/* ---- the launcher's side: bounding a directory kept between runs ---- */

#define TIDY_TMP_AGE_S 3600 /* a writer's temporary file older than this is a dead writer's */
#define TIDY_MAX_STAMPS 65536 /* far more than the tables a directory keeps */

struct kept_table {
	char name[2 * CFI_CACHE_KEY_MAX + 8];
	uint64_t bytes;
	int64_t used_ns;
};

static int by_most_recent_use(const void *a, const void *b)
{
	const struct kept_table *x = a, *y = b;
	return x->used_ns < y->used_ns ? 1 : x->used_ns > y->used_ns ? -1 : strcmp(x->name, y->name);
}

static bool is_table_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 5 || n > 2 * CFI_CACHE_KEY_MAX + 4 || strcmp(name + n - 4, ".cfi"))
		return false;
	for (size_t i = 0; i + 4 < n; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* Rewrite DIRFD's verified without the stamps of files that are gone or changed. */
static void tidy_stamps(int dirfd)
{
	char tmp[64];
	int fd = openat(dirfd, STAMP_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	size_t n = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? (size_t)st.st_size / sizeof(struct stamp)
							       : 0;
	if (n > TIDY_MAX_STAMPS)
		n = TIDY_MAX_STAMPS; /* a file this long is damaged: what follows is dropped */
	struct stamp *all = n ? malloc(n * sizeof(*all)) : NULL;
	if (all && pread(fd, all, n * sizeof(*all), 0) != (ssize_t)(n * sizeof(*all)))
		n = 0;
	close(fd);
	size_t kept = 0;
	for (size_t i = 0; all && i < n; i++) {
		struct stamp r = all[i];
		char table[2 * CFI_CACHE_KEY_MAX + 8];
		struct stat ts;
		if (r.key_len == 0 || r.key_len > CFI_CACHE_KEY_MAX ||
		    cache_path(table, sizeof(table), NULL, r.key, r.key_len, ".cfi") < 0 ||
		    fstatat(dirfd, table, &ts, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		struct stamp now;
		stamp_fill(&now, r.key, r.key_len, &ts);
		if (!memcmp(&now, &r, sizeof(r)))
			all[kept++] = r;
	}
	if (all && (kept < n || (size_t)st.st_size != n * sizeof(*all))) {
		fth_format(tmp, sizeof(tmp), "%s.%d.tmp", STAMP_FILE, (int)getpid());
		/* A stamp appended meanwhile by a process still running is lost: that process's
		 * successors check the table once more. */
		const struct file_part part = { all, kept * sizeof(*all) };
		const char *failed;
		(void)replace_file(dirfd, tmp, STAMP_FILE, &part, 1, &failed);
	}
	free(all);
}

int cfi_cache_tidy(int dirfd, const char *dir, unsigned max_tables, uint64_t max_bytes)
{
	char eb[64];
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		int err = errno;
		if (fd >= 0)
			close(fd);
		return fth_error("%s: %s", dir, fth_strerror(err, eb, sizeof(eb)));
	}
	rewinddir(d);
	struct kept_table *tables = NULL;
	size_t n = 0, cap = 0;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		size_t len = strlen(e->d_name);
		if (len > 4 && !strcmp(e->d_name + len - 4, ".tmp")) {
			if (now.tv_sec - st.st_mtim.tv_sec > TIDY_TMP_AGE_S)
				unlinkat(dirfd, e->d_name, 0);
			continue;
		}
		if (!is_table_name(e->d_name))
			continue;
		if (n == cap) {
			size_t grown = cap ? 2 * cap : 64;
			struct kept_table *more = realloc(tables, grown * sizeof(*tables));
			if (!more)
				break;
			tables = more, cap = grown;
		}
		struct kept_table *k = &tables[n++];
		memcpy(k->name, e->d_name, len + 1);
		k->bytes = (uint64_t)st.st_size;
		int64_t atime = ns_of(st.st_atim), mtime = ns_of(st.st_mtim);
		k->used_ns = atime > mtime ? atime : mtime;
	}
	int removed = 0;
	if (tables)
		qsort(tables, n, sizeof(*tables), by_most_recent_use);
	uint64_t bytes = 0;
	for (size_t i = 0; i < n; i++) {
		bytes += tables[i].bytes;
		if ((i >= max_tables || bytes > max_bytes) &&
		    unlinkat(dirfd, tables[i].name, 0) == 0)
			removed++;
	}
	closedir(d);
	free(tables);
	tidy_stamps(dirfd);
	return removed;
}
