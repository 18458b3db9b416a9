/* SPDX-License-Identifier: MIT */
/*
 * preload.c: measure's preloaded library (libmeasure.so): the constructor that reads the
 * launcher's environment and starts measuring the main thread, and the paths by which a
 * process ends or changes: exit, _exit, fork, dlopen and dlclose.  A process whose environment lacks the configuration is left alone.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"
#include "source.h"

#include <cpuid.h>
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

uint32_t rt_self_module(void)
{
	return self_module;
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
/* The processor as cpuid names it: "VENDOR FAMILY MODEL STEPPING", the displayed family and
 * model in decimal (what view needs to choose llvm-mca's model of it), into OUT. */
static void describe_cpu(char *out, size_t size)
{
	unsigned a, b, c, d;
	out[0] = '\0';
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	char vendor[13];
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = '\0';
	if (!__get_cpuid(1, &a, &b, &c, &d))
		return;
	unsigned family = a >> 8 & 0xf, model = a >> 4 & 0xf, stepping = a & 0xf;
	if (family == 0xf)
		family += a >> 20 & 0xff;
	if (family == 0x6 || family >= 0xf)
		model += (a >> 16 & 0xf) << 4;
	fth_format(out, size, "%s %u %u %u", vendor, family, model, stepping);
}

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
		describe_cpu(rt.cpu, sizeof(rt.cpu));
	}
	if (!getcwd(rt.cwd, sizeof(rt.cwd)))
		rt.cwd[0] = '\0';
	fth_format(rt.file_prefix, sizeof(rt.file_prefix), "%s/%s-%s-%d", rt.cfg.outdir,
		   rt.program_base, rt.host, (int)rt.pid);
	rt_log_set_path(forked);
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
	rt_log_run();
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
	rt_log_keep_open();
	rt_log_run();
	bool measuring = measure_setup(argc, argv);
	rt_log_close_kept();
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
