/* SPDX-License-Identifier: MIT */
/*
 * dwimage.c: the DWARF of a file whose debug sections are compressed, rebuilt in memory
 * uncompressed, so that libdw has nothing left to decompress when it opens it (libelf would
 * decompress every section one after the other, before any unit can be read).  Here the
 * DWARF threads share the decompression: one section each, largest first, .debug_info
 * first of all and as a stream whose progress the unit walk follows; sections that struct
 * never reads (location lists, macros, call frames, name indexes) are left out altogether.
 */
#include "compat.h"
#include "struct.h"
#include "buf.h"
#include "error.h"
#include "input.h"
#include "xalloc.h"

#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

/* Sections that libdw may read for what struct asks of it. */
static const char *const wanted_sections[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_line_str", ".debug_str",
	".debug_str_offsets", ".debug_ranges", ".debug_rnglists", ".debug_addr", ".debug_types",
};

#define INFO_CHUNK (1u << 20) /* .debug_info is published in steps of this many bytes */

struct dwimage_task {
	const char *name;
	size_t index; /* of the section */
	const uint8_t *src; /* inside the file's data */
	uint64_t src_size;
	uint8_t *dst; /* inside the image */
	uint64_t size;
	bool compressed;
	bool is_info;
};

struct dw_image {
	char *path;
	int fd;	   /* -1 when the Elf is the caller's */
	Elf *file; /* the file, when owned */
	uint8_t *mem;
	size_t mem_size;
	Elf *elf; /* on MEM */
	struct dwimage_task *tasks;
	uint32_t ntasks;
	atomic_uint next_task;
	const uint8_t *info; /* .debug_info in the image, or NULL */
	uint64_t info_size;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Under LOCK. */
	uint64_t info_ready;   /* bytes of .debug_info decompressed so far */
	uint32_t support_left; /* tasks other than .debug_info not yet done */
	bool stream_safe;      /* units never refer into other units (set with support_left 0) */
	bool failed;
	char err[512];
};

static bool host_little_endian(void)
{
	const uint16_t one = 1;
	return *(const uint8_t *)&one == 1;
}

static bool is_wanted(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(wanted_sections); i++)
		if (!strcmp(name, wanted_sections[i]))
			return true;
	return false;
}

static int task_order(const void *a, const void *b)
{
	const struct dwimage_task *x = a, *y = b;
	if (x->is_info != y->is_info)
		return x->is_info ? -1 : 1;
	if (x->compressed != y->compressed)
		return x->compressed ? -1 : 1;
	return x->size > y->size ? -1 : x->size < y->size;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

/*
 * The plan of the image: one task per wanted section, or false when ELF is not a file this
 * path handles (then libdw reads it as usual): not 64-bit in the host's byte order, no
 * compressed wanted section, a compression other than zlib, GNU .zdebug sections, or a dwz
 * alternate file.
 */
static bool plan(struct dw_image *di, Elf *elf, size_t *shnum_out, size_t *shstrndx_out)
{
	GElf_Ehdr eh;
	size_t shnum, shstrndx;
	if (!gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != (host_little_endian() ? ELFDATA2LSB : ELFDATA2MSB) ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getshdrnum(elf, &shnum) != 0 ||
	    elf_getshdrstrndx(elf, &shstrndx) != 0 || shstrndx >= shnum)
		return false;
	bool any_compressed = false;
	for (size_t i = 1; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		const char *name;
		if (!scn || !gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			return false;
		if (!strncmp(name, ".zdebug", 7) || !strcmp(name, ".gnu_debugaltlink"))
			return false;
		if (!is_wanted(name) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
			continue;
		Elf_Data *raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf || raw->d_size != sh.sh_size)
			return false;
		struct dwimage_task t = { .name = name,
					  .index = i,
					  .src = raw->d_buf,
					  .src_size = raw->d_size,
					  .size = raw->d_size,
					  .is_info = !strcmp(name, ".debug_info") };
		if (sh.sh_flags & SHF_COMPRESSED) {
			Elf64_Chdr ch;
			if (raw->d_size < sizeof(ch))
				return false;
			memcpy(&ch, raw->d_buf, sizeof(ch));
			/* zlib expands at most about 1032 times. */
			if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size == 0 ||
			    ch.ch_size / 1100 > raw->d_size)
				return false;
			t.src += sizeof(ch);
			t.src_size -= sizeof(ch);
			t.size = ch.ch_size;
			t.compressed = true;
			any_compressed = true;
		}
		for (uint32_t k = 0; k < di->ntasks; k++)
			if (!strcmp(di->tasks[k].name, name))
				return false; /* twice: let libdw decide */
		di->tasks = xreallocarray(di->tasks, di->ntasks + 1, sizeof(*di->tasks));
		di->tasks[di->ntasks++] = t;
	}
	*shnum_out = shnum;
	*shstrndx_out = shstrndx;
	return any_compressed;
}

/* Lay the image out and write its headers; the tasks fill in the sections. */
static bool build(struct dw_image *di, Elf *elf, size_t shnum, size_t shstrndx)
{
	GElf_Ehdr eh;
	Elf_Scn *strscn = elf_getscn(elf, shstrndx);
	Elf_Data *strdata = strscn ? elf_rawdata(strscn, NULL) : NULL;
	if (!gelf_getehdr(elf, &eh) || !strdata || !strdata->d_buf)
		return false;
	uint64_t off = align_up(sizeof(Elf64_Ehdr), 64);
	uint64_t *where = xcalloc(di->ntasks, sizeof(uint64_t));
	for (uint32_t k = 0; k < di->ntasks; k++) {
		where[k] = off;
		off = align_up(off + di->tasks[k].size, 64);
	}
	uint64_t str_off = off;
	off = align_up(off + strdata->d_size, 64);
	uint64_t sh_off = off;
	off += shnum * sizeof(Elf64_Shdr);
	if (off > SIZE_MAX / 2) {
		free(where);
		return false;
	}
	void *mem = mmap(NULL, off, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem == MAP_FAILED) {
		free(where);
		return false;
	}
	/* Huge pages where the system allows them: far fewer page faults for the same bytes. */
	madvise(mem, off, MADV_HUGEPAGE);
	di->mem = mem;
	di->mem_size = off;
	for (uint32_t k = 0; k < di->ntasks; k++)
		di->tasks[k].dst = di->mem + where[k];
	memcpy(di->mem + str_off, strdata->d_buf, strdata->d_size);
	Elf64_Shdr *shdrs = (Elf64_Shdr *)(di->mem + sh_off);
	for (size_t i = 0; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		if (!scn || !gelf_getshdr(scn, &sh)) {
			free(where);
			return false;
		}
		uint32_t k = di->ntasks;
		for (uint32_t j = 0; i && j < di->ntasks; j++)
			if (di->tasks[j].index == i)
				k = j;
		if (i == 0) {
			if (eh.e_phnum == PN_XNUM)
				sh.sh_info = 0; /* the extended program header count: none now */
		} else if (k < di->ntasks) {
			sh.sh_offset = where[k];
			sh.sh_size = di->tasks[k].size;
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
			sh.sh_addralign = 1;
		} else if (i == shstrndx) {
			sh.sh_offset = str_off;
			sh.sh_size = strdata->d_size;
			sh.sh_flags &= ~(GElf_Xword)SHF_COMPRESSED;
		} else {
			sh.sh_type = SHT_NOBITS; /* not needed: no data */
			sh.sh_offset = sh_off;
			sh.sh_size = 0;
		}
		shdrs[i] = sh;
	}
	free(where);
	Elf64_Ehdr *out = (Elf64_Ehdr *)di->mem;
	*out = eh;
	out->e_phoff = 0;
	out->e_phnum = 0;
	out->e_shoff = sh_off;
	out->e_shentsize = sizeof(Elf64_Shdr);
	di->elf = elf_memory((char *)di->mem, di->mem_size);
	if (!di->elf)
		return false;
	/* Let libelf set up every section now, on this thread, before any other reads it. */
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(di->elf, scn));)
		elf_rawdata(scn, NULL);
	for (uint32_t k = 0; k < di->ntasks; k++)
		if (di->tasks[k].is_info) {
			di->info = di->tasks[k].dst;
			di->info_size = di->tasks[k].size;
		}
	qsort(di->tasks, di->ntasks, sizeof(*di->tasks), task_order);
	di->support_left = di->ntasks - (di->info ? 1 : 0);
	return true;
}

void dwimage_close(struct dw_image *di)
{
	if (!di)
		return;
	if (di->elf)
		elf_end(di->elf);
	if (di->mem)
		munmap(di->mem, di->mem_size);
	if (di->file)
		elf_end(di->file);
	if (di->fd >= 0)
		close(di->fd);
	pthread_mutex_destroy(&di->lock);
	pthread_cond_destroy(&di->cond);
	free(di->tasks);
	free(di->path);
	free(di);
}

/* The image of ELF's DWARF, or NULL; it owns ELF and FD when FD >= 0. */
static struct dw_image *image_of(Elf *elf, int fd, const char *path)
{
	struct dw_image *di = xcalloc(1, sizeof(*di));
	di->fd = -1;
	pthread_mutex_init(&di->lock, NULL);
	pthread_cond_init(&di->cond, NULL);
	di->path = xstrdup(path);
	atomic_init(&di->next_task, 0);
	size_t shnum, shstrndx;
	if (!plan(di, elf, &shnum, &shstrndx) || !build(di, elf, shnum, shstrndx)) {
		dwimage_close(di);
		if (fd >= 0) {
			elf_end(elf);
			close(fd);
		}
		return NULL;
	}
	if (fd >= 0) {
		di->file = elf;
		di->fd = fd;
	}
	return di;
}

static bool has_debug_info(Elf *elf)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		const char *name;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

/* The image of the debug file at PATH when it is IMG's (the same build-id). */
static struct dw_image *try_debug_file(const struct image *img, const char *path)
{
	int fd = input_open(path, NULL);
	if (fd < 0) {
		fth_error_clear(); /* a candidate that is not there, or not a file */
		return NULL;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *id;
	ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &id) : -1;
	if (n <= 0 || (size_t)n != img->build_id_len || memcmp(id, img->build_id, (size_t)n)) {
		if (elf)
			elf_end(elf);
		close(fd);
		return NULL;
	}
	return image_of(elf, fd, path);
}

/*
 * Where libdwfl would look (its default path): /usr/lib/debug/.build-id, then the
 * .gnu_debuglink name beside the binary, in .debug/ beside it and under /usr/lib/debug.
 * Files without a build-id, or found nowhere here, are left to libdwfl.
 */
static struct dw_image *find_debug_file(const struct image *img)
{
	if (img->build_id_len < 2)
		return NULL;
	struct buf path = BUF_INIT;
	buf_printf(&path, "/usr/lib/debug/.build-id/%02x/", img->build_id[0]);
	for (uint32_t i = 1; i < img->build_id_len; i++)
		buf_printf(&path, "%02x", img->build_id[i]);
	buf_addstr(&path, ".debug");
	struct dw_image *di = try_debug_file(img, (const char *)path.data);
	GElf_Word crc;
	const char *link = di ? NULL : dwelf_elf_gnu_debuglink(img->elf, &crc);
	char *real = link && !strchr(link, '/') ? realpath(img->path, NULL) : NULL;
	char *slash = real ? strrchr(real, '/') : NULL;
	if (slash) {
		*slash = 0;
		for (int i = 0; i < 3 && !di; i++) {
			buf_reset(&path);
			if (i == 2)
				buf_addstr(&path, "/usr/lib/debug");
			buf_addstr(&path, real);
			buf_addstr(&path, i == 1 ? "/.debug/" : "/");
			buf_addstr(&path, link);
			if (strcmp((const char *)path.data, img->path))
				di = try_debug_file(img, (const char *)path.data);
		}
	}
	free(real);
	buf_release(&path);
	return di;
}

struct dw_image *dwimage_find(const struct image *img)
{
	if (has_debug_info(img->elf))
		return image_of(img->elf, -1, img->path);
	return find_debug_file(img);
}

Elf *dwimage_elf(const struct dw_image *di)
{
	return di->elf;
}

const char *dwimage_path(const struct dw_image *di)
{
	return di->path;
}

static void set_failed(struct dw_image *di, const struct dwimage_task *t, const char *what)
{
	pthread_mutex_lock(&di->lock);
	if (!di->failed)
		snprintf(di->err, sizeof(di->err), "%s: corrupt compressed section %s: %s",
			 di->path, t->name, what);
	di->failed = true;
	pthread_cond_broadcast(&di->cond);
	pthread_mutex_unlock(&di->lock);
}

/* Inflate T; for .debug_info, publish the progress every INFO_CHUNK bytes. */
static bool inflate_task(struct dw_image *di, const struct dwimage_task *t)
{
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		set_failed(di, t, "zlib cannot start");
		return false;
	}
	const uint8_t *in = t->src, *in_end = t->src + t->src_size;
	uint64_t done = 0;
	int zr = Z_OK;
	while (zr != Z_STREAM_END) {
		if (z.avail_in == 0 && in < in_end) {
			uint64_t n = FTH_MIN((uint64_t)(in_end - in), (uint64_t)UINT_MAX);
			z.next_in = (Bytef *)in;
			z.avail_in = (uInt)n;
			in += n;
		}
		uint64_t step = t->is_info ? INFO_CHUNK : UINT_MAX;
		uint64_t room = FTH_MIN(t->size - done, step);
		z.next_out = t->dst + done;
		z.avail_out = (uInt)room;
		uInt before_in = z.avail_in;
		zr = inflate(&z, Z_NO_FLUSH);
		uint64_t made = room - z.avail_out;
		done += made;
		if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && made)) {
			inflateEnd(&z);
			set_failed(di, t, z.msg ? z.msg : "zlib error");
			return false;
		}
		if (zr != Z_STREAM_END && !made && before_in == z.avail_in &&
		    (in == in_end || done == t->size)) {
			inflateEnd(&z);
			set_failed(di, t, done == t->size ? "more data than its header says"
							  : "truncated");
			return false;
		}
		if (t->is_info && made) {
			pthread_mutex_lock(&di->lock);
			di->info_ready = done;
			pthread_cond_broadcast(&di->cond);
			pthread_mutex_unlock(&di->lock);
		}
	}
	inflateEnd(&z);
	if (done != t->size) {
		set_failed(di, t, "less data than its header says");
		return false;
	}
	return true;
}

static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;
		if (shift < 64)
			x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/*
 * Whether every reference of .debug_info stays inside its unit, so that a unit can be read
 * as soon as its own bytes are decompressed: no abbreviation uses a form that refers across
 * units (DW_FORM_ref_addr, type signatures) or that names its form in the DIE itself.
 */
static bool abbrevs_stay_in_unit(const uint8_t *p, uint64_t size)
{
	const uint8_t *end = p + size;
	while (p < end) {
		uint64_t code, tag, name, form;
		if (!read_uleb(&p, end, &code))
			return false;
		if (code == 0)
			continue; /* end of one unit's table */
		if (!read_uleb(&p, end, &tag) || p >= end)
			return false;
		p++; /* DW_CHILDREN_yes or _no */
		for (;;) {
			if (!read_uleb(&p, end, &name) || !read_uleb(&p, end, &form))
				return false;
			if (name == 0 && form == 0)
				break;
			if (form == DW_FORM_ref_addr || form == DW_FORM_ref_sig8 ||
			    form == DW_FORM_indirect)
				return false;
			if (form == DW_FORM_implicit_const) {
				uint64_t ignored;
				/* An SLEB128 has the shape of a ULEB128. */
				if (!read_uleb(&p, end, &ignored))
					return false;
			}
		}
	}
	return true;
}

bool dwimage_work(struct dw_image *di)
{
	unsigned k = atomic_fetch_add(&di->next_task, 1);
	if (k >= di->ntasks)
		return false;
	const struct dwimage_task *t = &di->tasks[k];
	bool ok = true;
	if (t->compressed)
		ok = inflate_task(di, t);
	else
		memcpy(t->dst, t->src, t->size);
	if (t->is_info) {
		if (!t->compressed) {
			pthread_mutex_lock(&di->lock);
			di->info_ready = t->size;
			pthread_cond_broadcast(&di->cond);
			pthread_mutex_unlock(&di->lock);
		}
		return true;
	}
	pthread_mutex_lock(&di->lock);
	if (ok && --di->support_left == 0) {
		di->stream_safe = false;
		for (uint32_t j = 0; j < di->ntasks; j++)
			if (!strcmp(di->tasks[j].name, ".debug_abbrev"))
				di->stream_safe = abbrevs_stay_in_unit(di->tasks[j].dst,
								       di->tasks[j].size);
		pthread_cond_broadcast(&di->cond);
	}
	pthread_mutex_unlock(&di->lock);
	return true;
}

int dwimage_wait_support(struct dw_image *di)
{
	pthread_mutex_lock(&di->lock);
	while (di->support_left && !di->failed)
		pthread_cond_wait(&di->cond, &di->lock);
	int rc = di->failed ? fth_error("%s", di->err) : 0;
	pthread_mutex_unlock(&di->lock);
	return rc;
}

/* Wait for the first NEED bytes of .debug_info (all of it unless units stand alone). */
static int wait_info(struct dw_image *di, uint64_t need)
{
	pthread_mutex_lock(&di->lock);
	if (!di->stream_safe || need > di->info_size)
		need = di->info_size;
	while (di->info_ready < need && !di->failed)
		pthread_cond_wait(&di->cond, &di->lock);
	int rc = di->failed ? fth_error("%s", di->err) : 0;
	pthread_mutex_unlock(&di->lock);
	return rc;
}

int dwimage_wait_unit(struct dw_image *di, uint64_t *offset)
{
	uint64_t off = *offset;
	if (!di->info || off >= di->info_size)
		return 0;
	/* The unit's length: 4 bytes, or 0xffffffff and 8 bytes (64-bit DWARF). */
	if (wait_info(di, FTH_MIN(off + 12, di->info_size)) < 0)
		return -1;
	uint64_t end = di->info_size, left = di->info_size - off;
	if (left >= 4) {
		uint32_t len32;
		memcpy(&len32, di->info + off, 4);
		if (len32 < 0xfffffff0u && len32 <= left - 4) {
			end = off + 4 + len32;
		} else if (len32 == 0xffffffffu && left >= 12) {
			uint64_t len64;
			memcpy(&len64, di->info + off + 4, 8);
			if (len64 <= left - 12)
				end = off + 12 + len64;
		}
	}
	*offset = end;
	return wait_info(di, end);
}
