/* SPDX-License-Identifier: MIT */
/*
 * main.c: the measure launcher.  It checks the options, events, program, its library and the
 * output directory before anything runs, sets the environment (LD_PRELOAD of libmeasure.so,
 * found relative to this executable first, plus the resolved events), runs the program as its
 * child, and when the program ends prints a one-line summary and exits with the program's own
 * status.
 */
#include "compat.h"
#include "escape.h"
#include "buf.h"
#include "mconfig.h"
#include "elfprog.h"
#include "error.h"
#include "events.h"
#include "source.h"
#include "input.h"
#include "ksyms.h"
#include "mfile.h"
#include "tables.h"
#include "userdir.h"
#include "xalloc.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PKGLIBDIR
#define PKGLIBDIR "/usr/local/lib/fathom"
#endif
#ifndef BINDIR
#define BINDIR "/usr/local/bin"
#endif

static void usage(FILE *f)
{
	fprintf(f,
		"usage: measure [options] PROGRAM [ARGS...]\n"
		"Run PROGRAM and sample every thread of every process into measurement files.\n\n"
		"  -e EVENT[@PERIOD|@fRATE]  sample EVENT (repeatable); '{A,B}@RATE' is a group whose\n"
		"                            members are read at the leader's samples\n"
		"  -c PERIOD|fRATE           default rate for events without one (default f300)\n"
		"  -o DIR                    output directory (default PROGRAM-measurements)\n"
		"  -t                        also write a time-ordered trace of samples per thread\n"
		"  -L                        list the events usable here, and the others with why not\n"
		"      --plan                print the perf groups and TMA nodes of the topdown\n"
		"                            events (-e topdown...) and exit; FATHOM_CPU=MODEL\n"
		"                            plans for another CPU\n"
		"      --no-kernel           never include kernel counts or frames\n"
		"      --no-follow           measure only the top process, not its children\n"
		"      --cache DIR           keep unwind tables between runs in DIR (default\n"
		"                            ${XDG_CACHE_HOME:-~/.cache}/fathom/unwind)\n"
		"      --no-cache            build them for this run only\n"
		"      --memleak-prob P      with -e MEMLEAK: track each allocation with\n"
		"                            probability P (0 < P <= 1, default 1)\n"
		"  -v, --verbose             say more on stderr\n"
		"  -h, --help                this help;  --version  the version\n\n"
		"Events: REALTIME and CPUTIME (POSIX timers, @microseconds), perf software events\n"
		"(task-clock, cpu-clock, page-faults, ...), hardware events (CYCLES, INSTRUCTIONS,\n"
		"...), libpfm4 names and raw rHEX; IO and MEMLEAK count calls (no rate).  Without\n"
		"-e: CYCLES@f300 where hardware counters work, else task-clock@f300, else CPUTIME.\n"
		"See measure(1).\n");
}

/* Find PROGRAM on PATH (when it has no slash); returns a new string or NULL with a message. */
static char *find_program(const char *prog)
{
	if (strchr(prog, '/')) {
		if (access(prog, F_OK) < 0)
			return fth_error_errno(errno, "%s", prog), NULL;
		return xstrdup(prog);
	}
	char *found = user_path_find(prog);
	if (!found)
		fth_error("%s: command not found (searched PATH)", prog);
	return found;
}

/* Refuse what LD_PRELOAD cannot measure: non-executables and statically linked programs. */
static int check_program(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return fth_error_errno(errno, "%s", path);
	if (S_ISDIR(st.st_mode))
		return fth_error("%s: is a directory, not a program", path);
	if (access(path, X_OK) < 0)
		return fth_error("%s: not executable (permission denied)", path);
	int fd = input_open(path, NULL);
	if (fd < 0)
		return -1;
	Elf64_Ehdr eh;
	ssize_t n = read(fd, &eh, sizeof(eh));
	int rc = 0;
	if (n >= 2 && !memcmp(&eh, "#!", 2)) {
		rc = 0; /* a script: its interpreter is dynamically linked in practice */
	} else if (n < (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		rc = fth_error("%s: not an ELF executable or script", path);
	} else if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
		rc = fth_error("%s: not an x86-64 program; this measure is built for x86-64", path);
	} else if (!elf_has_interp(fd, &eh)) {
		rc = fth_error("%s: statically linked; measure injects itself with LD_PRELOAD, "
			       "which needs a dynamically linked program (relink without -static)",
			       path);
	}
	close(fd);
	return rc;
}

/*
 * Create the output directory: DIR, or DIR-2, DIR-3... when DIR exists.  Sets *CHOSEN.
 * Under MPI every rank runs its own launcher at the same moment, so they share DIR as it is
 * (file names hold host and pid, and files are created with O_EXCL | O_NOFOLLOW, so nothing
 * is overwritten and no link followed); renaming would scatter the ranks over several
 * directories.  A directory reused so must pass open_outdir()'s check.
 */
static int make_outdir(const char *want, char **chosen, bool *renamed)
{
	*renamed = false;
	if (mconfig_mpi_rank() >= 0) {
		if (mkdir(want, 0755) < 0 && errno != EEXIST)
			return fth_error_errno(errno, "%s: cannot create the output directory", want);
		*chosen = xstrdup(want);
		return 0;
	}
	for (int i = 1; i < 10000; i++) {
		struct buf b = BUF_INIT;
		if (i == 1)
			buf_addstr(&b, want);
		else
			buf_printf(&b, "%s-%d", want, i);
		if (mkdir((char *)b.data, 0755) == 0) {
			*chosen = buf_detach(&b, NULL);
			*renamed = i > 1;
			return 0;
		}
		int err = errno;
		if (err != EEXIST) {
			fth_error_errno(err, "%s: cannot create the output directory", (char *)b.data);
			buf_release(&b);
			return -1;
		}
		buf_release(&b);
	}
	return fth_error("%s: too many earlier measurements with this name", want);
}

/*
 * Open the output directory DIR once, for the launcher's own use of it: it must belong to
 * this user or root, and no one else may write to it unless it is sticky (userdir.h).  In a
 * directory others could write to, they could replace a file of the run with a link to a file
 * of this user's between its creation and a later use.  Returns a descriptor, or -1 with a
 * message naming the directory, its owner and its mode.
 */
static int open_outdir(const char *dir)
{
	int fd = safedir_open(dir, 0, 0);
	if (fd < 0) {
		char why[1024];
		fth_format(why, sizeof(why), "%s", fth_errmsg());
		return fth_error("%s; measure writes only into an output directory of this user or "
				 "root that not every user can write to, unless it is sticky", why);
	}
	return fd;
}

/* Whether PATH has a component "." or "..". */
static bool has_dot_component(const char *path)
{
	for (const char *p = path; (p = strstr(p, "/.")); p++)
		if (p[2] == '/' || p[2] == '\0' || (p[2] == '.' && (p[3] == '/' || p[3] == '\0')))
			return true;
	return false;
}

/*
 * Where libmeasure.so is installed relative to measure itself: the path from the configured
 * BINDIR to PKGLIBDIR ("../lib/fathom" for the default prefix), so that an installed tree
 * still works once moved elsewhere as a whole.  Adds it to OUT, or returns -1 when the two
 * configured directories do not allow it (not absolute, or with "." or ".." components).
 */
static int bin_to_pkglib(struct buf *out)
{
	const char *from = BINDIR, *to = PKGLIBDIR;
	if (from[0] != '/' || to[0] != '/' || has_dot_component(from) || has_dot_component(to))
		return -1;
	/* Skip the components the two share, then climb out of the rest of BINDIR. */
	for (;;) {
		while (*from == '/')
			from++;
		while (*to == '/')
			to++;
		size_t n = strcspn(from, "/");
		if (!n || n != strcspn(to, "/") || memcmp(from, to, n))
			break;
		from += n;
		to += n;
	}
	while (*from) {
		buf_addstr(out, "../");
		from += strcspn(from, "/");
		while (*from == '/')
			from++;
	}
	buf_addstr(out, *to ? to : ".");
	return 0;
}

/* DIR/REL/libmeasure.so into OUT, each leading "../" of REL taking one component off DIR. */
static void library_in(struct buf *out, const char *dir, const char *rel)
{
	size_t len = strlen(dir);
	for (; !strncmp(rel, "../", 3) && len > 0; rel += 3) {
		while (len > 0 && dir[len - 1] != '/')
			len--;
		if (len > 0)
			len--; /* the slash before the component */
	}
	buf_reset(out);
	buf_printf(out, "%.*s/%s/libmeasure.so", (int)len, dir, rel);
}

/*
 * Find libmeasure.so: relative to this executable (/proc/self/exe), first where an installed
 * tree keeps it (BINDIR's path to PKGLIBDIR) and then where libtool keeps it in the build
 * tree (.libs beside the launcher); then in the configured PKGLIBDIR.  Returns a new string,
 * or NULL with a message naming every path tried.
 */
static char *find_library(void)
{
	struct buf path = BUF_INIT, rel = BUF_INIT, tried = BUF_INIT;
	char *found = NULL;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash = NULL;
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
	}
	if (slash) {
		*slash = '\0'; /* the directory of this executable ("" for the root) */
		const char *where[2] = { NULL, ".libs" };
		const char *what[2] = { "beside this measure", "its build tree" };
		if (bin_to_pkglib(&rel) == 0)
			where[0] = (char *)rel.data;
		for (int i = 0; i < 2 && !found; i++) {
			if (!where[i])
				continue;
			library_in(&path, self, where[i]);
			if (access((char *)path.data, R_OK) == 0)
				found = buf_detach(&path, NULL);
			else
				buf_printf(&tried, "%s (%s), ", (char *)path.data, what[i]);
		}
	}
	const char *configured = PKGLIBDIR "/libmeasure.so";
	if (!found && access(configured, R_OK) == 0)
		found = xstrdup(configured);
	else if (!found)
		fth_error("measure's library libmeasure.so is missing: tried %s%s (the configured "
			  "pkglibdir); is fathom installed?", (char *)tried.data, configured);
	buf_release(&path);
	buf_release(&rel);
	buf_release(&tried);
	return found;
}

/*
 * The library to preload: FATHOM_PRELOAD when set, else find_library()'s.  LD_PRELOAD splits
 * its list at spaces and colons, with no escape: a path holding either would not be preloaded
 * and the program would run unmeasured, so it is refused here.  NULL with a message.
 */
static char *preload_library(void)
{
	const char *env = getenv("FATHOM_PRELOAD");
	char *lib;
	if (env && *env) {
		if (access(env, R_OK) < 0)
			return fth_error_errno(errno, "FATHOM_PRELOAD=%s: cannot read measure's "
					       "library", env), NULL;
		lib = xstrdup(env);
	} else if (!(lib = find_library())) {
		return NULL;
	}
	if (lib[strcspn(lib, " :")]) {
		fth_error("%s: measure's library cannot be preloaded from a path with a space or a "
			  "colon (LD_PRELOAD splits its list there): install or move fathom to "
			  "another directory", lib);
		free(lib);
		return NULL;
	}
	return lib;
}

static pid_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

struct summary {
	unsigned long long processes, files, taken, recorded, dropped, partial, errors, cpu_ns;
	unsigned long long calls; /* of the synchronous sources (IO, MEMLEAK) */
	unsigned long long found; /* measurement files of this run's processes in the directory */
	struct buf problems;
	struct buf warnings; /* the distinct warning lines seen */
	struct buf pids; /* "-HOST-PID\n" of each log of this run (HOST-PID ends its name) */
	struct buf names; /* the names of those thread files, each ending in '\0' */
};

/* This launcher's run, as the first line of each of its processes' logs says it. */
static char run_id[128], run_id_line[130];

/*
 * A log of DIRFD to read: a regular file of this user's, opened without following a link or
 * waiting on a FIFO (another user may have put either there, in a sticky directory).
 */
static FILE *open_log(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	FILE *f = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		f = fdopen(fd, "r");
	if (!f)
		close(fd);
	return f;
}

/* The entries of DIRFD from the first on, through a descriptor of its own (closedir() closes
 * it, not DIRFD), or NULL.  Duplicates share DIRFD's offset: each reading rewinds. */
static DIR *read_dir(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	if (d)
		rewinddir(d);
	return d;
}

/* Count the measurement files in DIRFD of the processes whose logs read_logs() found (regular
 * files of this user), whatever their logs say: a log may be cut short. */
static void count_files(int dirfd, struct summary *s)
{
	DIR *d = read_dir(dirfd);
	buf_addch(&s->pids, '\0');
	const char *pids = (const char *)s->pids.data;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct stat st;
		if (n < 6 || strcmp(de->d_name + n - 5, ".fthm") ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		/* PROGRAM-HOST-PID: the name without -INDEX-TID.fthm */
		const char *tid = memrchr(de->d_name, '-', n);
		const char *index = tid ? memrchr(de->d_name, '-', (size_t)(tid - de->d_name)) : NULL;
		if (!index)
			continue;
		size_t base = (size_t)(index - de->d_name);
		for (const char *p = pids; *p;) {
			const char *end = strchr(p, '\n');
			size_t k = (size_t)(end - p);
			if (k <= base && !memcmp(de->d_name + base - k, p, k)) {
				s->found++;
				buf_add(&s->names, de->d_name, n + 1);
				break;
			}
			p = end + 1;
		}
	}
	if (d)
		closedir(d);
}

/*
 * Add up the summary lines of every process log in DIRFD that belongs to this run.  A process
 * that exec'd has one log for all its images, each starting with a run line and ending with a
 * summary: the last image must have written its own.
 */
static void read_logs(int dirfd, const char *host, struct summary *s)
{
	DIR *d = read_dir(dirfd);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		if (n < 5 || strcmp(de->d_name + n - 4, ".log"))
			continue;
		FILE *f = open_log(dirfd, de->d_name);
		char line[1024];
		bool summarized = false; /* the current image has written its summary */
		/* Only this launcher's processes (several launchers share a directory under MPI). */
		if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "run ", 4) ||
		    strcmp(line + 4, run_id_line)) {
			if (f)
				fclose(f);
			continue;
		}
		/* Its thread files are PROGRAM-HOST-PID-INDEX-TID.fthm, PROGRAM the image that
		 * wrote them (an exec changes it, not the log's name): note "-HOST-PID". */
		const char *pid_at = memrchr(de->d_name, '-', n - 4);
		if (pid_at) {
			/* the pid's digits: a log made aside from a planted name has ".XXXXXX" */
			size_t digits = strspn(pid_at + 1, "0123456789");
			buf_printf(&s->pids, "-%s-%.*s\n", host, (int)digits, pid_at + 1);
		}
		while (fgets(line, sizeof(line), f)) {
			unsigned long long v[8] = { 0 };
			if (sscanf(line, "summary: samples taken %llu recorded %llu dropped %llu "
					 "partial %llu files %llu errors %llu cpu_ns %llu calls %llu",
				   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) >= 6) {
				s->calls += v[7];
				s->taken += v[0];
				s->recorded += v[1];
				s->dropped += v[2];
				s->partial += v[3];
				s->files += v[4];
				s->errors += v[5];
				s->cpu_ns += v[6];
				summarized = true;
			} else if (!strncmp(line, "run ", 4)) {
				summarized = false;
			} else if (!strncmp(line, "error: ", 7)) {
				buf_printf(&s->problems, "measure: %s: %s", de->d_name, line + 7);
			} else if (!strncmp(line, "warning: ", 9) &&
				   !(s->warnings.len && strstr((char *)s->warnings.data, line))) {
				/* Each warning once, from the first process that says it. */
				buf_addstr(&s->warnings, line);
				buf_printf(&s->problems, "measure: %s: %s", de->d_name, line);
			}
		}
		if (f)
			fclose(f);
		s->processes++;
		if (!summarized)
			buf_printf(&s->problems, "measure: %s: the process wrote no summary (killed "
						 "before it could finish?)\n", de->d_name);
	}
	if (d)
		closedir(d);
}

/*
 * Save the /proc/kallsyms entries that cover the kernel addresses this run's thread files
 * sampled, as DIR/kernel-HOST-PID.ksyms, so that prof can name kernel frames later and
 * elsewhere (the addresses move with every boot).  Where the kernel hides its addresses, the
 * file says so and so does this.
 */
static void save_kernel_symbols(int dirfd, const char *dir, const char *host,
				const struct summary *s)
{
	uint64_t *addrs = NULL;
	size_t naddrs = 0, aaddrs = 0;
	struct ksyms k;
	memset(&k, 0, sizeof(k));
	for (const char *name = (const char *)s->names.data;
	     name < (const char *)s->names.data + s->names.len; name += strlen(name) + 1) {
		struct buf path = BUF_INIT;
		buf_printf(&path, "%s/%s", dir, name);
		struct mfile m;
		int rc = mfile_read((const char *)path.data, &m);
		buf_release(&path);
		if (rc < 0)
			continue; /* prof will say what is wrong with it */
		for (uint32_t i = 0; i < m.cct.nnodes; i++) {
			uint32_t mod = m.cct.module[i];
			if (mod >= m.nmodules || strcmp(m.modules[mod].path, MFILE_KERNEL_MODULE))
				continue;
			const struct mfile_module *km = &m.modules[mod];
			if (!k.build_id_len && km->build_id_len <= KSYMS_MAX_BUILD_ID) {
				memcpy(k.build_id, km->build_id, km->build_id_len);
				k.build_id_len = km->build_id_len;
			}
			ALLOC_GROW(addrs, naddrs + 1, aaddrs);
			/* a return address (a frame) is in the function of the call before it */
			addrs[naddrs++] = m.cct.offset[i] - (m.cct.kind[i] == MFILE_NODE_FRAME);
		}
		mfile_release(&m);
	}
	if (!naddrs)
		return;
	FILE *f = fopen("/proc/kallsyms", "re");
	char why[512] = "";
	if (!f)
		fth_format(why, sizeof(why), "/proc/kallsyms: %s", strerror(errno));
	else if (ksyms_from_kallsyms(f, addrs, naddrs, &k) < 0)
		fth_format(why, sizeof(why), "%s", fth_errmsg());
	if (f)
		fclose(f);
	if (why[0])
		k.hidden = xstrdup(why);
	free(addrs);
	k.host = xstrdup(host);
	char name[128];
	fth_format(name, sizeof(name), "kernel-%s-%d%s", host, (int)getpid(), KSYMS_SUFFIX);
	if (ksyms_write(dirfd, name, &k) < 0)
		warn("%s/%s", dir, fth_errmsg());
	else if (k.hidden)
		esc_printf(stderr, "measure: kernel frames were sampled, but their functions cannot "
				"be named: %s; they will be shown by address\n", k.hidden);
	ksyms_release(&k);
}

int main(int argc, char **argv)
{
	fth_progname = "measure";
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },	   { "version", no_argument, NULL, 'V' },
		{ "no-kernel", no_argument, NULL, 'K' }, { "verbose", no_argument, NULL, 'v' },
		{ "no-follow", no_argument, NULL, 'F' },
		{ "cache", required_argument, NULL, 'C' }, { "no-cache", no_argument, NULL, 'N' },
		{ "plan", no_argument, NULL, 'P' },
		{ "memleak-prob", required_argument, NULL, 'M' },
		{ NULL, 0, NULL, 0 },
	};
	const char *specs[MCONFIG_MAX_EVENTS];
	int nspecs = 0;
	const char *outdir = NULL, *rate = NULL, *memleak_prob = NULL, *cache = NULL;
	bool list = false, trace = false, kernel = true, verbose = false, follow = true;
	bool no_cache = false;
	bool plan = false;
	int c;
	while ((c = getopt_long(argc, argv, "+e:c:o:tLvh", opts, NULL)) != -1) {
		switch (c) {
		case 'e':
			if (nspecs == MCONFIG_MAX_EVENTS)
				die(2, "too many -e options (at most %d)", MCONFIG_MAX_EVENTS);
			specs[nspecs++] = optarg;
			break;
		case 'c': rate = optarg; break;
		case 'o': outdir = optarg; break;
		case 't': trace = true; break;
		case 'L': list = true; break;
		case 'K': kernel = false; break;
		case 'F': follow = false; break;
		case 'C': cache = optarg; break;
		case 'N': no_cache = true; break;
		case 'P': plan = true; break;
		case 'M': memleak_prob = optarg; break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return 0;
		case 'V': printf("measure (fathom) %s\n", PACKAGE_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (list) {
		struct buf out = BUF_INIT;
		events_list(&out);
		fwrite(out.data, 1, out.len, stdout);
		buf_release(&out);
		return 0;
	}
	if (plan) {
		/* --plan: resolve the events as for a run, print the topdown plan, run nothing. */
		struct mconfig *pc = xcalloc(1, sizeof(*pc));
		struct event_defaults pd = { 300, true, kernel };
		if (rate && events_parse_rate(rate, &pd.rate, &pd.freq) < 0)
			die(2, "-c: %s", fth_errmsg());
		struct buf out = BUF_INIT;
		for (int i = 0; i < nspecs; i++)
			if (events_add(pc, specs[i], &pd) < 0)
				die(2, "%s", fth_errmsg());
		if (events_plan(pc, &out) < 0)
			die(2, "%s", fth_errmsg());
		fwrite(out.data, 1, out.len, stdout);
		buf_release(&out);
		free(pc);
		return 0;
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	char *program = find_program(argv[optind]);
	if (!program || check_program(program) < 0)
		die(2, "%s", fth_errmsg());

	struct mconfig *cfg = xcalloc(1, sizeof(*cfg));
	struct event_defaults d = { 300, true, kernel };
	if (rate && events_parse_rate(rate, &d.rate, &d.freq) < 0)
		die(2, "-c: %s", fth_errmsg());
	for (int i = 0; i < nspecs; i++)
		if (events_add(cfg, specs[i], &d) < 0)
			die(2, "%s", fth_errmsg());
	if (memleak_prob && memleak_set_prob(cfg, memleak_prob) < 0)
		die(2, "%s", fth_errmsg());
	/* -e BLOCKTIME alone: the default source samples the time threads run (said below). */
	bool blocktime;
	bool samples = events_sample_threads(cfg, &blocktime);
	if (blocktime && !samples && events_check(cfg) < 0)
		die(2, "%s", fth_errmsg()); /* why BLOCKTIME cannot work, before any default */
	if (nspecs == 0 || (blocktime && !samples)) {
		struct buf note = BUF_INIT;
		if (events_default(cfg, &d, &note) < 0)
			die(2, "%s", fth_errmsg());
		/* Every rank of an MPI run chooses the same: rank 0 says it for all. */
		if (mconfig_mpi_rank() <= 0)
			esc_printf(stderr, "measure: %s\n", (char *)note.data);
		buf_release(&note);
	} else if (events_check(cfg) < 0) {
		die(2, "%s", fth_errmsg());
	}
	fputs(events_notes(), stderr);

	char *lib = preload_library();
	if (!lib)
		die(2, "%s", fth_errmsg());
	if (verbose)
		esc_printf(stderr, "measure: preloading %s\n", lib);

	/* Output directory: never overwrite an earlier measurement. */
	struct buf want = BUF_INIT;
	if (outdir) {
		buf_addstr(&want, outdir);
	} else {
		const char *base = strrchr(program, '/');
		buf_printf(&want, "%s-measurements", base ? base + 1 : program);
	}
	char *dir = NULL;
	bool renamed;
	int outfd;
	if (make_outdir((char *)want.data, &dir, &renamed) < 0 || (outfd = open_outdir(dir)) < 0)
		die(2, "%s", fth_errmsg());
	if (renamed)
		esc_printf(stderr, "measure: %s already exists; writing to %s\n", (char *)want.data, dir);
	char absdir[PATH_MAX];
	struct stat checked, named;
	if (!realpath(dir, absdir))
		die(2, "%s: %s", dir, strerror(errno));
	if (fstat(outfd, &checked) < 0 || stat(absdir, &named) < 0 ||
	    checked.st_dev != named.st_dev || checked.st_ino != named.st_ino)
		die(2, "%s: the output directory changed while it was checked", absdir);
	if (access(absdir, W_OK) < 0)
		die(2, "%s: output directory is not writable", absdir);

	const char *old = getenv("LD_PRELOAD");
	struct buf preload = BUF_INIT;
	buf_addstr(&preload, lib);
	if (old && *old)
		buf_printf(&preload, ":%s", old);
	static char events[65536]; /* topdown:all has over a hundred counters */
	if (mconfig_encode_events(cfg, events, sizeof(events)) < 0)
		die(2, "%s", fth_errmsg());
	char flags[32];
	fth_format(flags, sizeof(flags), "%u",
		   (trace ? MCONFIG_TRACE : 0) | (kernel ? MCONFIG_KERNEL : 0) |
			   (verbose ? MCONFIG_VERBOSE : 0) | (follow ? 0 : MCONFIG_NO_FOLLOW) |
			   MCONFIG_SIGTRAP_PROBED | (mconfig_probe_sigtrap() ? MCONFIG_SIGTRAP : 0));
	setenv("LD_PRELOAD", (char *)preload.data, 1);
	setenv(MCONFIG_ENV_EVENTS, events, 1);
	setenv(MCONFIG_ENV_OUTDIR, absdir, 1);
	setenv(MCONFIG_ENV_FLAGS, flags, 1);
	char host[64] = "";
	gethostname(host, sizeof(host) - 1);
	fth_format(run_id, sizeof(run_id), "%s-%d-%lld", host, (int)getpid(), (long long)time(NULL));
	fth_format(run_id_line, sizeof(run_id_line), "%s\n", run_id);
	setenv(MCONFIG_ENV_RUN, run_id, 1);
	/* Unwind tables that the run's processes share (tables.c). */
	struct run_tables tables;
	if (run_tables_open(&tables, cache, no_cache, lib) < 0)
		warn("%s", fth_errmsg());
	if (verbose && tables.dir)
		esc_printf(stderr, "measure: unwind tables in %s%s\n", tables.dir,
			tables.temporary ? " (for this run)" : " (kept between runs)");
	if (tables.dir)
		setenv(MCONFIG_ENV_TABLES, tables.dir, 1);
	else
		unsetenv(MCONFIG_ENV_TABLES);
	if (verbose)
		esc_printf(stderr, "measure: %s=%s\n", MCONFIG_ENV_EVENTS, events);

	fflush(NULL);
	child_pid = fork();
	if (child_pid < 0)
		die(2, "fork: %s", strerror(errno));
	if (child_pid == 0) {
		execv(program, argv + optind);
		esc_printf(stderr, "measure: %s: %s\n", program, strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* The terminal sends SIGINT/SIGQUIT to the whole process group; forward the rest. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGTERM, forward_signal);
	signal(SIGHUP, forward_signal);
	signal(SIGUSR1, forward_signal);
	signal(SIGUSR2, forward_signal);
	int status;
	while (waitpid(child_pid, &status, 0) < 0)
		if (errno != EINTR)
			die(2, "waitpid: %s", strerror(errno));
	int removed = run_tables_close(&tables);
	if (removed < 0)
		warn("%s", fth_errmsg());
	else if (removed > 0 && verbose)
		esc_printf(stderr, "measure: %d unwind table%s removed from the cache (least recently "
				"used first)\n", removed, removed == 1 ? "" : "s");

	struct summary s;
	memset(&s, 0, sizeof(s));
	buf_init(&s.problems);
	buf_init(&s.warnings);
	buf_init(&s.pids);
	buf_init(&s.names);
	read_logs(outfd, host, &s);
	count_files(outfd, &s);
	if (kernel)
		save_kernel_symbols(outfd, absdir, host, &s);
	buf_release(&s.names);
	esc_write(stderr, s.problems.data, s.problems.len);
	buf_release(&s.warnings);
	buf_release(&s.pids);
	if (s.found != s.files)
		esc_printf(stderr, "measure: %llu thread file%s in %s, where the logs' summaries "
				"count %llu (a log cut short: a full disk, or a process killed?)\n",
			s.found, s.found == 1 ? "" : "s", absdir, s.files);
	s.files = s.found;
	if (s.files == 0)
		esc_printf(stderr, "measure: no measurement file was written to %s\n", absdir);
	else {
		/* Samples, calls of the synchronous sources, or both: what was taken is said. */
		struct buf what = BUF_INIT;
		if (s.taken || !s.calls)
			buf_printf(&what, "%llu samples (%llu recorded, %llu dropped, %llu partial call "
					  "paths)", s.taken, s.recorded, s.dropped, s.partial);
		if (s.calls)
			buf_printf(&what, "%s%llu calls recorded", what.len ? " and " : "", s.calls);
		/* Under MPI, each rank's launcher sums up its rank: "rank 2 of 4: ". */
		struct buf who = BUF_INIT;
		if (mconfig_mpi_rank() >= 0) {
			buf_printf(&who, "rank %d", mconfig_mpi_rank());
			if (mconfig_mpi_size() > 0)
				buf_printf(&who, " of %d", mconfig_mpi_size());
			buf_addstr(&who, ": ");
		}
		esc_printf(stderr, "measure: %s%llu process%s, %llu thread file%s, %s over %.3f s of "
				"CPU time%s in %s\n",
			who.len ? (char *)who.data : "", s.processes, s.processes == 1 ? "" : "es", s.files, s.files == 1 ? "" : "s",
			(char *)what.data, (double)s.cpu_ns / 1e9,
			s.errors ? ", with errors (see the logs)" : "", absdir);
		buf_release(&what);
		buf_release(&who);
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core); /* the program already dumped its core */
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	return WEXITSTATUS(status);
}
