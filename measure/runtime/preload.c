/* SPDX-License-Identifier: MIT */
/*
 * preload.c: measure's preloaded library (libmeasure.so): the constructor that reads the
 * launcher's environment and starts measuring the main thread, the process-wide helpers
 * (clocks, the log), and the paths by which a process ends or changes: exit, _exit, fork,
 * dlopen and dlclose.  A process whose environment lacks the configuration is left alone.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

struct runtime rt __attribute__((aligned(4096)));
static uint32_t self_module = MFILE_NO_MODULE;

__attribute__((visibility("default"))) const char fathom_measure_version[] = PACKAGE_VERSION;

uint64_t rt_realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_thread_cpu_ns(pid_t tid)
{
	/* Another thread's CPU clock, as the kernel numbers it: ~TID << 3, per thread (4), the
	 * scheduler's clock (2).  pthread_getcpuclockid() would need its pthread_t. */
	clockid_t clock = tid ? (clockid_t)((~(unsigned)tid << 3) | 6u) : CLOCK_THREAD_CPUTIME_ID;
	struct timespec ts;
	if (clock_gettime(clock, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint32_t rt_self_module(void)
{
	return self_module;
}

/*
 * Lines held back (rt.held) while a forked child is still single-threaded, before it returns
 * to the program: its first lines then cost one open and write of the log instead of one
 * each.  Any other line, an error first of all, writes them before itself, so the order never
 * changes; rt_log_flush() writes them at the end of that phase.  (The constructor writes its
 * first line at once: the log is created before anything else of the process, which matters
 * on a disk with room for little more.  It keeps the log open, in kept_log_fd, until it has
 * written its last line, and closes it before the program starts or is sampled.)
 */
static int kept_log_fd = -1;

/*
 * Create the process's log, exclusively and never through a link: FILE_PREFIX.log, or
 * FILE_PREFIX.N.log when that name is taken (another user may have put a link or a file
 * there, in a sticky directory).  Records which file it is; a descriptor, or -1 (errors then
 * go to stderr, see rt_log; when every name is taken, no later line tries again).
 */
static int create_log(void)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		if (attempt)
			fth_format(rt.log_path, sizeof(rt.log_path), "%s.%d.log", rt.file_prefix,
				   attempt);
		else
			fth_format(rt.log_path, sizeof(rt.log_path), "%s.log", rt.file_prefix);
		int fd = open(rt.log_path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
						   O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST)
			continue;
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0) {
			rt.log_made = true;
			rt.log_dev = (uint64_t)st.st_dev;
			rt.log_ino = (uint64_t)st.st_ino;
			return fd;
		}
		if (fd >= 0)
			close(fd);
		return -1; /* no directory, no room, no descriptor left: the next line tries again */
	}
	rt.log_failed = true;
	return -1;
}

/*
 * The log, opened to append: the very file this process (or the image before it) created,
 * never through a link and never another file put at its name; when that file is gone, a new
 * one (*FRESH).  Opened for each write, so a program that closes every descriptor loses
 * nothing.
 */
static int open_log(bool *fresh)
{
	*fresh = false;
	if (rt.log_failed)
		return -1;
	if (rt.log_made) {
		int fd = open(rt.log_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT && errno != ELOOP)
			return -1; /* out of descriptors, say: the log is still the one */
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_dev == rt.log_dev && (uint64_t)st.st_ino == rt.log_ino)
			return fd;
		if (fd >= 0)
			close(fd);
		rt.log_made = false; /* removed, or replaced: by a link, another file */
	}
	*fresh = true;
	return create_log();
}

/* Append TEXT (N bytes of whole lines) to the log; false when the log did not take it all. */
static bool log_append(const char *text, size_t n)
{
	if (kept_log_fd >= 0)
		return write(kept_log_fd, text, n) == (ssize_t)n;
	bool fresh;
	int fd = open_log(&fresh);
	if (fd < 0)
		return false;
	if (fresh && strncmp(text, "run ", 4)) {
		/* A log made in the middle of the process: its first line names the run all the
		 * same, so that the launcher reads it. */
		char line[sizeof(rt.run) + 8];
		size_t k = fth_format(line, sizeof(line), "run %s\n", rt.run);
		ssize_t w = write(fd, line, k < sizeof(line) ? k : sizeof(line) - 1);
		(void)w;
	}
	ssize_t w = write(fd, text, n);
	close(fd);
	return w == (ssize_t)n;
}

static void rt_log_flush(void)
{
	rt.holding = false;
	if (!rt.nheld || !rt.log_path[0])
		return;
	log_append(rt.held, rt.nheld);
	rt.nheld = 0;
}

size_t rt_log_env(char *buf, size_t size)
{
	if (!rt.log_made)
		return 0;
	size_t n = fth_format(buf, size, "%s=%d:%llu:%llu:%s", MCONFIG_ENV_LOG, (int)rt.pid,
			      (unsigned long long)rt.log_dev, (unsigned long long)rt.log_ino,
			      rt.log_path);
	return n < size ? n : 0;
}

/*
 * The log of this process: an image exec'd by a measured one appends to the log its process
 * already has (MCONFIG_ENV_LOG names it, with the process's pid, which a forked or spawned
 * child does not share, and the file's device and inode, so that nothing else put at its name
 * is written), so that a fork and exec makes one log, not two: creating a file costs more than
 * a whole short-lived process's other writes.  Otherwise the log is created at its first line.
 */
static void set_log_path(bool forked)
{
	const char *env = forked ? NULL : getenv(MCONFIG_ENV_LOG);
	rt.log_made = rt.log_failed = false;
	fth_format(rt.log_path, sizeof(rt.log_path), "%s.log", rt.file_prefix);
	char *end;
	if (!env || strtol(env, &end, 10) != (long)rt.pid || *end != ':')
		return;
	unsigned long long dev = strtoull(end + 1, &end, 10);
	if (*end != ':')
		return;
	unsigned long long ino = strtoull(end + 1, &end, 10);
	if (*end != ':' || !end[1] || strlen(end + 1) >= sizeof(rt.log_path))
		return;
	memcpy(rt.log_path, end + 1, strlen(end + 1) + 1);
	rt.log_dev = dev;
	rt.log_ino = ino;
	rt.log_made = true;
}

void rt_log(const char *fmt, ...)
{
	if (!rt.log_path[0])
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	size_t n = fth_vformat(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0'; /* the stderr copy below prints it with %s */
	bool error = !strncmp(line, "error: ", 7);
	bool warning = !strncmp(line, "warning: ", 9);
	if (rt.holding && !error && !warning && rt.nheld + n <= sizeof(rt.held)) {
		memcpy(rt.held + rt.nheld, line, n);
		rt.nheld += n;
		return;
	}
	if (rt.nheld) {
		log_append(rt.held, rt.nheld);
		rt.nheld = 0;
	}
	const char *path = rt.log_path;
	if (!log_append(line, n) && error) {
		/* The log itself could not take it (a full disk?): say it on stderr instead. */
		char msg[1100];
		size_t k = fth_format(msg, sizeof(msg), "measure: %s: %s", path, line);
		ssize_t w = write(2, msg, k < sizeof(msg) ? k : sizeof(msg) - 1);
		(void)w;
	}
}

/* The command line, copied from the arguments the loader passes to constructors. */
static void copy_args(int argc, char **argv)
{
	if (argc <= 0 || !argv)
		return;
	size_t bytes = 0;
	for (int i = 0; i < argc; i++)
		bytes += argv[i] ? strlen(argv[i]) + 1 : 1;
	rt.argv = arena_alloc(&rt.shared, ((size_t)argc + 1) * sizeof(char *), 8);
	char *text = arena_alloc(&rt.shared, bytes, 1);
	if (!rt.argv || !text) {
		rt.argv = NULL;
		return;
	}
	for (int i = 0; i < argc; i++) {
		size_t len = argv[i] ? strlen(argv[i]) : 0;
		memcpy(text, argv[i] ? argv[i] : "", len + 1);
		rt.argv[i] = text;
		text += len + 1;
	}
	rt.argv[argc] = NULL;
	rt.argc = (uint32_t)argc;
}

/* Who this process is; FORKED: a child of the process that set it, whose program it runs. */
static void set_identity(bool forked)
{
	rt.pid = getpid();
	/* A forked child runs its parent's program on its parent's host: only its pid and its
	 * directory (the parent may have changed it since) are its own.  Not asking again saves
	 * the child two calls into pages of libc it would fault in afresh. */
	if (!forked) {
		struct utsname u;
		if (uname(&u) == 0)
			fth_format(rt.host, sizeof(rt.host), "%s", u.nodename);
		ssize_t n = readlink("/proc/self/exe", rt.program, sizeof(rt.program) - 1);
		rt.program[n > 0 ? n : 0] = '\0';
		const char *slash = strrchr(rt.program, '/');
		rt.program_base = slash ? slash + 1 : rt.program;
	}
	if (!getcwd(rt.cwd, sizeof(rt.cwd)))
		rt.cwd[0] = '\0';
	fth_format(rt.file_prefix, sizeof(rt.file_prefix), "%s/%s-%s-%d", rt.cfg.outdir,
		   rt.program_base, rt.host, (int)rt.pid);
	set_log_path(forked);
}

/* The first line of a process log: which launcher run it belongs to. */
static void log_run(void)
{
	rt_log("run %s", rt.run);
}

void rt_finish_process(const char *reason)
{
	if (!rt.active || rt.finished)
		return;
	rt.finished = true;
	rt.holding = false; /* a crash while lines are held: they go out with the summary */
	rt_sources_finish(); /* MEMLEAK: live blocks become leaks before the trees are written */
	rt_end_all(reason);
	char unwritten[160] = "";
	if (rt.unwritten)
		fth_format(unwritten, sizeof(unwritten),
			   "process %d: %llu thread%s measured nothing before the exec: no file for "
			   "%s\n", (int)rt.pid, (unsigned long long)rt.unwritten,
			   rt.unwritten == 1 ? "" : "s", rt.unwritten == 1 ? "it" : "them");
	rt_sources_summary();
	/* Tables from the run's directory are checked, but one crafted with a valid checksum is
	 * accepted: say when most call paths stopped in such tables. */
	const struct lm_module *stopped = loadmap_get(rt.partial_shared_module);
	if (rt.partial_shared >= RT_PARTIAL_SHARED_MIN && 2 * rt.partial_shared > rt.recorded)
		rt_log("warning: %llu of %llu call paths stopped partial in unwind tables mapped "
		       "from %s (the last in %s): if a table there is damaged or crafted, remove "
		       "it, or measure with --no-cache",
		       (unsigned long long)rt.partial_shared, (unsigned long long)rt.recorded,
		       loadmap_tables_dir(), stopped ? stopped->path : "?");
	rt.partial_shared = 0;
	uint32_t built, mapped, inherited;
	size_t bytes = loadmap_table_bytes(&built, &mapped, &inherited);
	char from_parent[48] = "";
	if (inherited)
		fth_format(from_parent, sizeof(from_parent), ", %u from its parent", inherited);
	/* The last lines in one write. */
	rt_log("%sprocess %d ended (%s); unwind tables %zu bytes (%u built, %u shared%s)\n"
	       "summary: samples taken %llu recorded %llu dropped %llu partial %llu files %llu "
	       "errors %llu cpu_ns %llu calls %llu", unwritten, (int)rt.pid, reason, bytes, built,
	       mapped, from_parent, (unsigned long long)rt.taken, (unsigned long long)rt.recorded,
	       (unsigned long long)rt.dropped, (unsigned long long)rt.partial,
	       (unsigned long long)rt.files, (unsigned long long)rt.errors,
	       (unsigned long long)rt.cpu_ns, (unsigned long long)rt.calls);
	rt.files = rt.errors = rt.taken = rt.recorded = rt.dropped = rt.partial = rt.unwritten = 0;
	rt.calls = 0;
	rt.cpu_ns = 0;
	rt.active = false;
}

bool rt_before_exec(void)
{
	/* In a vfork or posix_spawn child the memory is the parent's: touch nothing.  Such a
	 * child has no timers, no perf owner and no pending sample signal of its own. */
	if (!rt.active || getpid() != rt.pid)
		return false;
	rt_finish_process("exec");
	/* Discard a sample signal queued before the sources stopped, and leave the default
	 * disposition for the new image, as the program would without measure. */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa)); /* an empty mask, without sigemptyset's page of libc */
	sa.sa_handler = SIG_IGN;
	rt_real_sigaction(rt.signo, &sa, NULL);
	sa.sa_handler = SIG_DFL;
	rt_real_sigaction(rt.signo, &sa, NULL);
	return true;
}

void rt_after_failed_exec(void)
{
	/* The program goes on: so does its measurement, in a new file for the calling thread.
	 * The stopped threads' events, left for the exec to drop, are dropped now. */
	for (struct mthread *t = rt.threads; t; t = t->next)
		rt_sources_release(t);
	rt.finished = false;
	if (rt_sampler_install() < 0) {
		rt_log("error: after a failed exec: %s; no longer measuring", fth_errmsg());
		return;
	}
	rt.active = true;
	rt_log("process %d: exec failed; measuring on (other threads are no longer sampled)",
	       (int)rt.pid);
	rt_thread_begin(NULL, NULL, 0);
}

/* exit() and return from main: destructors of the main program run after atexit handlers. */
static void at_exit(void)
{
	rt_finish_process("exit");
}

static void after_fork_in_child(void)
{
	if (!rt.active)
		return;
	if (rt.cfg.flags & MCONFIG_NO_FOLLOW) {
		/* --no-follow: the child runs unmeasured; the parent's state is not its own. */
		rt_thread_forget_self();
		for (struct mthread *t = rt.threads; t; t = t->next)
			rt_sources_forget(t);
		rt.active = false;
		rt.finished = true;
		return;
	}
	/* The child starts afresh: the parent's trees and counters are the parent's.  Its own
	 * records go to pages of its own: the parent's are read, never written. */
	rt_thread_forget_self();
	arena_start_over(&rt.shared);
	struct mthread *rt_first_thread_of_parent = rt.threads;
	rt.threads = NULL;
	rt.next_index = 0;
	rt.files = rt.errors = rt.taken = rt.recorded = rt.dropped = rt.partial = rt.unwritten = 0;
	rt.partial_shared = 0;
	rt.finished = false;
	rt.holding = true; /* this child is single-threaded until the program goes on */
	set_identity(true);
	/* Inherited perf descriptors belong to the parent's threads; their records are left
	 * untouched (a write would copy their pages) and unreachable. */
	for (struct mthread *t = rt_first_thread_of_parent; t; t = t->next)
		rt_sources_forget(t);
	log_run();
	rt_log("process %d forked from %d", (int)rt.pid, (int)getppid());
	rt_log_flush(); /* before sampling starts: a sample's error line comes after these */
	rt_thread_begin(NULL, NULL, 0);
}

/* The linker's bounds of this library's zero-initialized data. */
extern char __bss_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

/*
 * A measured process writes to a few dozen pages of this library's data, scattered over
 * 470 KB.  Faulting each one in costs about 10 us in a virtual machine (an exception that
 * the hypervisor sees); mapping all of them in one madvise costs about 0.5 us a page.  Left
 * out: the MEMLEAK bootstrap heap, which most processes never touch, and the tail of the
 * configuration past its first events (some 45 KB of event and TMA tables that a process with
 * a few events never writes).
 */
static void populate_own_data(void)
{
	uintptr_t lo = (uintptr_t)__bss_start, hi = (uintptr_t)_end;
	uintptr_t skip[2][2];
	rt_memleak_boot_range(&skip[0][0], &skip[0][1]);
	skip[1][0] = ((uintptr_t)&rt.cfg.ev[4] + 4095) & ~(uintptr_t)4095;
	skip[1][1] = (uintptr_t)(&rt + 1) & ~(uintptr_t)4095;
	if (skip[0][0] > skip[1][0]) {
		uintptr_t t0 = skip[0][0], t1 = skip[0][1];
		skip[0][0] = skip[1][0], skip[0][1] = skip[1][1];
		skip[1][0] = t0, skip[1][1] = t1;
	}
	for (int i = 0; i < 2; i++) {
		if (skip[i][0] < lo || skip[i][1] > hi || skip[i][1] <= skip[i][0])
			continue;
		arena_prefault((const void *)lo, skip[i][0] - lo);
		lo = skip[i][1];
	}
	arena_prefault((const void *)lo, hi - lo);
}

static bool measure_setup(int argc, char **argv);

static void measure_start(int argc, char **argv)
{
	const char *events = getenv(MCONFIG_ENV_EVENTS);
	const char *outdir = getenv(MCONFIG_ENV_OUTDIR);
	if (!events || !outdir)
		return; /* not launched by measure (e.g. the environment was cleared) */
	populate_own_data();
	if (mconfig_decode(&rt.cfg, events, outdir, getenv(MCONFIG_ENV_FLAGS)) < 0) {
		static const char msg[] = "measure: bad configuration in the environment; "
					  "this process is not measured\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		return;
	}
	rt_sources_setup();
	arena_init(&rt.shared, 1u << 20, 0);
	/* Looked up now, once, rather than in each forked child that execs. */
	rt_exec_resolve();
	rt_fds_resolve();
	rt.signo = SIGRTMIN + 4;
	rt.rank = mconfig_mpi_rank();
	const char *run = getenv(MCONFIG_ENV_RUN);
	fth_format(rt.run, sizeof(rt.run), "%s", run && *run ? run : "unknown");
	set_identity(false);
	bool fresh;
	kept_log_fd = open_log(&fresh);
	log_run();
	bool measuring = measure_setup(argc, argv);
	int fd = kept_log_fd;
	kept_log_fd = -1;
	if (fd >= 0)
		close(fd);
	if (measuring)
		rt_thread_begin(NULL, NULL, 0);
}

/* The rest of the constructor's work, with the log kept open; whether the process is measured. */
static bool measure_setup(int argc, char **argv)
{
	copy_args(argc, argv);
	/* The first pages of the process-wide arena: the command line, the load map, the
	 * thread records. */
	arena_prefault(rt.argv, 4 * 4096);
	if (loadmap_init() < 0) {
		rt_log("error: %s; this process is not measured", fth_errmsg());
		return false;
	}
	if (rt.cfg.flags & MCONFIG_KERNEL)
		loadmap_add_kernel();
	const struct lm_module *me = loadmap_find((uint64_t)(uintptr_t)&measure_start);
	if (me)
		self_module = me->id;
	rt_sync_init();
	rt_io_resolve(); /* the IO wrappers' real functions, measured or not */
	rt_sources_init();
	if (rt_sampler_install() < 0) {
		rt_log("error: %s; this process is not measured", fth_errmsg());
		return false;
	}
	if (rt.cfg.flags & MCONFIG_NO_FOLLOW) {
		/* Programs this one executes inherit no measurement. */
		unsetenv(MCONFIG_ENV_EVENTS);
		unsetenv(MCONFIG_ENV_OUTDIR);
		unsetenv(MCONFIG_ENV_FLAGS);
		unsetenv(MCONFIG_ENV_RUN);
		unsetenv(MCONFIG_ENV_TABLES);
	}
	rt_writer_reserve_fd();
	if (rt_signals_install() < 0)
		rt_log("warning: %s; fatal signals will not write the profile", fth_errmsg());
	rt.active = true;
	pthread_atfork(NULL, NULL, after_fork_in_child);
	atexit(at_exit);
	rt_log("process %d: %s, %d event%s, %u modules", (int)rt.pid, rt.program, rt.cfg.nevents,
	       rt.cfg.nevents == 1 ? "" : "s", loadmap_count());
	return true;
}

/* glibc passes constructors the program's arguments. */
__attribute__((constructor)) static void measure_init(int argc, char **argv, char **envp)
{
	(void)envp;
	int saved_errno = errno;
	measure_start(argc, argv);
	errno = saved_errno;
}

__attribute__((destructor)) static void measure_fini(void)
{
	rt_finish_process("exit");
}

/* ---- _exit, dlopen, dlclose ---- */

typedef void (*exit_fn)(int) __attribute__((noreturn));

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	static exit_fn real;
	if (!real)
		real = (exit_fn)dlsym(RTLD_NEXT, "_exit");
	rt_finish_process("_exit");
	real(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	_exit(status);
}

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real(file, mode);
	if (h && rt.active)
		loadmap_rescan();
	return h;
}

__attribute__((visibility("default"))) int dlclose(void *handle)
{
	static int (*real)(void *);
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	int rc = real(handle);
	if (rt.active)
		loadmap_rescan();
	return rc;
}
