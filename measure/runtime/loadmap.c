/* SPDX-License-Identifier: MIT */
/*
 * loadmap.c: the process's module map (loadmap.h).  Rescans run under a mutex in normal
 * context; the handler only loads the current exec-range array through an atomic pointer.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/auxv.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct exec_array {
	uint32_t n;
	struct lm_exec e[];
};

/* The modules by number, in the process arena (made by loadmap_init): most processes use its
 * first page, and the library's own data is mapped ahead page by page at every start. */
static struct lm_module **modules;
static _Atomic uint32_t nmodules;
static struct exec_array *_Atomic current;
static pthread_mutex_t rescan_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t table_bytes;
/* Tables this process built or mapped, and those a forked child found made by its parent (the
 * counts are its parent's until it makes one: owner is the process that counted them). */
static uint32_t tables_built, tables_mapped, tables_inherited;
static pid_t tables_owner;
static char tables_dir[4096]; /* MCONFIG_ENV_TABLES, or empty */
static bool store_failed;

static void *arena_cb(void *ctx, size_t size, size_t align)
{
	return arena_alloc(ctx, size, align);
}

/* Find an NT_GNU_BUILD_ID note in [P, END) and copy it into M. */
static bool build_id_from_notes(struct lm_module *m, const uint8_t *p, const uint8_t *end)
{
	while (p + sizeof(Elf64_Nhdr) <= end) {
		const Elf64_Nhdr *nh = (const Elf64_Nhdr *)p;
		const uint8_t *name = p + sizeof(*nh);
		const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
		const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
		if (next > end || next <= p)
			return false;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
		    nh->n_descsz <= sizeof(m->build_id)) {
			memcpy(m->build_id, desc, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return true;
		}
		p = next;
	}
	return false;
}

static void read_build_id(struct lm_module *m, const struct dl_phdr_info *info)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const Elf64_Phdr *ph = &info->dlpi_phdr[i];
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		if (ph->p_type == PT_NOTE && build_id_from_notes(m, p, p + ph->p_memsz))
			return;
	}
}

static const char *module_path(const struct dl_phdr_info *info, char *buf, size_t size)
{
	if (info->dlpi_name && info->dlpi_name[0])
		return info->dlpi_name;
	/* The main program has an empty name: its path is the process's (preload.c read it). */
	if (rt.program[0])
		return rt.program;
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return "[main program]";
	buf[n] = '\0';
	return buf;
}

/*
 * The vDSO exists only in memory, so struct could not analyse it: save its image once per
 * measurement directory, as vdso-BUILDID.so, and name the module by that file.
 */
static const char *save_vdso(const struct dl_phdr_info *info, const char *name, char *buf,
			     size_t size)
{
	struct lm_module probe;
	memset(&probe, 0, sizeof(probe));
	read_build_id(&probe, info);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
	if (!eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) || !probe.build_id_len)
		return name;
	size_t bytes = (size_t)eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	if (bytes < sizeof(*eh) || bytes > (1u << 20))
		return name;
	char hex[2 * sizeof(probe.build_id) + 1];
	for (uint32_t i = 0; i < probe.build_id_len; i++)
		fth_format(hex + 2 * i, 3, "%02x", probe.build_id[i]);
	fth_format(buf, size, "%s/vdso-%s.so", rt.cfg.outdir, hex);
	int fd = open(buf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0) {
		ssize_t w = write(fd, eh, bytes);
		close(fd);
		if (w != (ssize_t)bytes) {
			unlink(buf);
			return name;
		}
		return buf;
	}
	if (errno != EEXIST)
		return name;
	/* Saved by another process of the run: a regular file of this user's, or another
	 * user's link or file that struct must not be pointed at. */
	fd = open(buf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	bool ours = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_uid == geteuid();
	if (fd >= 0)
		close(fd);
	return ours ? buf : name;
}

static struct lm_module *find_existing(uint64_t bias, const char *path)
{
	uint32_t n = nmodules;
	for (uint32_t i = 0; i < n; i++) {
		struct lm_module *m = modules[i];
		if (!m->unloaded && m->bias == bias && !strcmp(m->path, path))
			return m;
	}
	return NULL;
}

static void set_ranges(struct lm_module *m, const struct dl_phdr_info *info)
{
	m->nranges = 0;
	for (int i = 0; i < info->dlpi_phnum && m->nranges < LOADMAP_MAX_RANGES; i++) {
		const Elf64_Phdr *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		struct mfile_range *r = &m->ranges[m->nranges++];
		r->start = info->dlpi_addr + ph->p_vaddr;
		r->end = r->start + ph->p_memsz;
		r->file_offset = ph->p_offset;
		r->prot = ((ph->p_flags & PF_R) ? 1 : 0) | ((ph->p_flags & PF_W) ? 2 : 0) |
			  ((ph->p_flags & PF_X) ? 4 : 0);
	}
}

/* An unloaded module with the same path and build-id, whose table can be reused. */
static struct lm_module *find_same_image(const struct lm_module *m)
{
	uint32_t n = nmodules;
	for (uint32_t i = n; i-- > 0;) {
		struct lm_module *o = modules[i];
		if (o->unloaded && o->build_id_len == m->build_id_len &&
		    !memcmp(o->build_id, m->build_id, m->build_id_len) && !strcmp(o->path, m->path))
			return o;
	}
	return NULL;
}

/* Make the counts this process's own: a forked child's first table. */
static void own_counts(void)
{
	if (tables_owner == rt.pid)
		return;
	tables_inherited += tables_built + tables_mapped;
	tables_built = tables_mapped = 0;
	tables_owner = rt.pid;
}

/*
 * M's unwind table: mapped from the run's table directory when an earlier process of the run
 * built it, else built here (and left there for the next process).
 */
static void make_table(struct lm_module *m, const struct dl_phdr_info *info)
{
	own_counts();
	bool shared = tables_dir[0] && m->build_id_len;
	if (shared) {
		int rc = cfi_cache_load(tables_dir, m->build_id, m->build_id_len, &m->cfi);
		if (rc > 0) {
			m->cfi.bias = info->dlpi_addr;
			m->table_shared = true;
			tables_mapped++;
			table_bytes += cfi_table_bytes(&m->cfi);
			return;
		}
		if (rc < 0)
			rt_log("warning: %s; building the table again", fth_errmsg());
	}
	struct cfi_image img = { info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, m->path, 0 };
	struct cfi_allocator al = { arena_cb, &rt.shared };
	if (cfi_build(&img, &m->cfi, &al) < 0) {
		rt_log("warning: %s: no unwind table: %s", m->path, fth_errmsg());
		memset(&m->cfi, 0, sizeof(m->cfi));
		return;
	}
	tables_built++;
	table_bytes += cfi_table_bytes(&m->cfi);
	if (shared && cfi_cache_store(tables_dir, m->build_id, m->build_id_len, &m->cfi) < 0 &&
	    !store_failed) {
		store_failed = true;
		rt_log("warning: %s; other processes of this run build their own tables",
		       fth_errmsg());
	}
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	char buf[4096];
	const char *path = module_path(info, buf, sizeof(buf));
	char vdso[4096];
	if (!strncmp(path, "linux-vdso", 10) || !strncmp(path, "linux-gate", 10))
		path = save_vdso(info, path, vdso, sizeof(vdso));
	struct lm_module *m = find_existing(info->dlpi_addr, path);
	if (m) {
		m->seen = true;
		return 0;
	}
	struct lm_module probe;
	memset(&probe, 0, sizeof(probe));
	probe.path = (char *)path;
	read_build_id(&probe, info);
	struct lm_module *earlier = probe.build_id_len ? find_same_image(&probe) : NULL;
	if (earlier) {
		/* The same library loaded again (dlopen after dlclose): its number, its table
		 * and its offsets stay valid wherever it is mapped now. */
		set_ranges(earlier, info);
		earlier->bias = info->dlpi_addr;
		earlier->cfi.bias = info->dlpi_addr;
		earlier->unload_ns = 0;
		earlier->seen = true;
		earlier->unloaded = false;
		return 0;
	}
	uint32_t n = nmodules;
	if (n >= LOADMAP_MAX_MODULES)
		return 0;
	m = arena_alloc(&rt.shared, sizeof(*m), 16);
	size_t len = strlen(path);
	char *copy = arena_alloc(&rt.shared, len + 1, 1);
	if (!m || !copy)
		return 0;
	memcpy(copy, path, len + 1);
	m->id = n;
	m->path = copy;
	m->bias = info->dlpi_addr;
	m->load_ns = rt_realtime_ns();
	m->seen = true;
	set_ranges(m, info);
	memcpy(m->build_id, probe.build_id, sizeof(m->build_id));
	m->build_id_len = probe.build_id_len;
	make_table(m, info);
	modules[n] = m;
	nmodules = n + 1;
	return 0;
}

static int exec_cmp(const void *a, const void *b)
{
	const struct lm_exec *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

static void publish(void)
{
	uint32_t n = nmodules, count = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!modules[i]->unloaded)
			for (uint32_t r = 0; r < modules[i]->nranges; r++)
				count += (modules[i]->ranges[r].prot & 4) != 0;
	struct exec_array *a = arena_alloc(&rt.shared, sizeof(*a) + count * sizeof(struct lm_exec), 16);
	if (!a)
		return;
	a->n = 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct lm_module *m = modules[i];
		if (m->unloaded)
			continue;
		for (uint32_t r = 0; r < m->nranges; r++)
			if (m->ranges[r].prot & 4)
				a->e[a->n++] = (struct lm_exec){ m->ranges[r].start, m->ranges[r].end, m };
	}
	/* Insertion sort: the array is small and qsort is not needed here. */
	for (uint32_t i = 1; i < a->n; i++)
		for (uint32_t j = i; j > 0 && exec_cmp(&a->e[j - 1], &a->e[j]) > 0; j--) {
			struct lm_exec t = a->e[j];
			a->e[j] = a->e[j - 1];
			a->e[j - 1] = t;
		}
	current = a; /* the old array is left in the arena: a handler may still read it */
}

void loadmap_rescan(void)
{
	pthread_mutex_lock(&rescan_lock);
	uint32_t n = nmodules;
	for (uint32_t i = 0; i < n; i++)
		modules[i]->seen = false;
	dl_iterate_phdr(add_module, NULL);
	n = nmodules;
	for (uint32_t i = 0; i < n; i++) {
		if (!modules[i]->seen && !modules[i]->unloaded) {
			modules[i]->unloaded = true;
			modules[i]->unload_ns = rt_realtime_ns();
		}
	}
	publish();
	pthread_mutex_unlock(&rescan_lock);
}

int loadmap_init(void)
{
	const char *dir = getenv(MCONFIG_ENV_TABLES);
	if (dir && *dir && strlen(dir) < sizeof(tables_dir))
		memcpy(tables_dir, dir, strlen(dir) + 1);
	modules = arena_alloc(&rt.shared, LOADMAP_MAX_MODULES * sizeof(*modules), 64);
	if (!modules)
		return fth_error("cannot build the load map (out of memory)");
	arena_prefault(modules, 4096);
	loadmap_rescan();
	return current ? 0 : fth_error("cannot build the load map (out of memory)");
}

const struct lm_module *loadmap_find(uint64_t addr)
{
	const struct exec_array *a = current;
	if (!a)
		return NULL;
	uint32_t lo = 0, hi = a->n;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (addr < a->e[mid].start)
			hi = mid;
		else if (addr >= a->e[mid].end)
			lo = mid + 1;
		else
			return a->e[mid].module;
	}
	return NULL;
}

/* The kernel's build-id, from its notes in sysfs (readable by everyone). */
static void kernel_build_id(struct lm_module *m)
{
	uint8_t notes[4096];
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, notes, sizeof(notes)) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		build_id_from_notes(m, notes, notes + n);
}

static uint32_t kernel_id = MFILE_NO_MODULE;

uint32_t loadmap_kernel(void)
{
	return kernel_id;
}

void loadmap_add_kernel(void)
{
	if (kernel_id != MFILE_NO_MODULE)
		return;
	pthread_mutex_lock(&rescan_lock);
	uint32_t n = nmodules;
	struct lm_module *m = n < LOADMAP_MAX_MODULES ? arena_alloc(&rt.shared, sizeof(*m), 16) : NULL;
	if (m) {
		m->id = n;
		m->path = (char *)MFILE_KERNEL_MODULE;
		m->load_ns = rt_realtime_ns();
		kernel_build_id(m);
		modules[n] = m;
		nmodules = n + 1;
		kernel_id = n;
	}
	pthread_mutex_unlock(&rescan_lock);
}

uint32_t loadmap_count(void)
{
	return nmodules;
}

const struct lm_module *loadmap_get(uint32_t id)
{
	return id < nmodules ? modules[id] : NULL;
}

const char *loadmap_tables_dir(void)
{
	return tables_dir;
}

size_t loadmap_table_bytes(uint32_t *built, uint32_t *mapped, uint32_t *inherited)
{
	/* Read, not made its own: a forked child that made no table writes nothing here. */
	bool own = tables_owner == rt.pid;
	*built = own ? tables_built : 0;
	*mapped = own ? tables_mapped : 0;
	*inherited = tables_inherited + (own ? 0 : tables_built + tables_mapped);
	return table_bytes;
}
