/* SPDX-License-Identifier: MIT */
/*
 * exec.c: the exec family, wrapped.  Before the image is replaced, every thread's sampling
 * stops and its file is written, and any sample signal already queued is discarded (a signal
 * arriving after exec, before the new image installs its handler, would kill it).  If exec
 * fails, measuring resumes in the calling thread and the program sees the failure unchanged.
 * glibc's execl* and execvp* do not go through execve's PLT entry, so each is wrapped.  The
 * new image appends to the process's log (MCONFIG_ENV_LOG in its environment).  A new image
 * that LD_PRELOAD cannot measure (32-bit, statically linked, or set-user-ID) is said in the log
 * by name and reason, and a 32-bit one gets LD_PRELOAD without measure's library, so that its
 * loader prints no error into the program's output.
 */
#include "compat.h"
#include "elfprog.h"
#include "runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;

void rt_exec_resolve(void)
{
	if (__atomic_load_n(&real_fexecve, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&real_execve, (execve_fn)dlsym(RTLD_NEXT, "execve"), __ATOMIC_RELAXED);
	__atomic_store_n(&real_execvpe, (execve_fn)dlsym(RTLD_NEXT, "execvpe"), __ATOMIC_RELAXED);
	__atomic_store_n(&real_fexecve, (fexecve_fn)dlsym(RTLD_NEXT, "fexecve"), __ATOMIC_RELAXED);
}

enum exec_kind { EXEC_VE, EXEC_VPE, EXEC_FD };

/* Environments larger than this keep theirs unchanged: the copy is on the stack (8 KiB at most,
 * for a thread with a small stack that execs). */
#define MAX_ENV_COPY 1024

static size_t env_count(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	return n;
}

/* The program execvp() would run for FILE (searched in PATH without a slash), into BUF. */
static const char *program_path(enum exec_kind kind, const char *file, char *buf, size_t size)
{
	if (kind != EXEC_VPE || strchr(file, '/'))
		return file;
	const char *dirs = getenv("PATH");
	for (const char *d = dirs ? dirs : "/bin:/usr/bin"; *d;) {
		size_t len = strcspn(d, ":"), flen = strlen(file);
		if (len + 1 + flen < size) {
			memcpy(buf, len ? d : ".", len ? len : 1);
			size_t at = len ? len : 1;
			buf[at] = '/';
			memcpy(buf + at + 1, file, flen + 1);
			if (access(buf, X_OK) == 0)
				return buf;
		}
		d += len + (d[len] == ':');
	}
	return NULL;
}

/*
 * Why the program at PATH (or open as FD) will not be measured, or NULL: its loader ignores or
 * cannot load measure's library.  *FOREIGN: a 32-bit program, whose loader would print an
 * error about it.  Async-signal-safe (exec may be called in the child of a fork).
 */
static const char *unmeasurable(const char *path, int fd, bool *foreign)
{
	*foreign = false;
	int own = path ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
	int f = path ? own : fd;
	struct stat st;
	Elf64_Ehdr eh;
	const char *why = NULL;
	if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode) ||
	    pread(f, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG)) {
		/* unreadable, or a script: the kernel runs its interpreter, measured as usual */
	} else if (eh.e_ident[EI_CLASS] == ELFCLASS32) {
		*foreign = true;
		why = "a 32-bit program (measure's library is 64-bit)";
	} else if (eh.e_machine != EM_X86_64) {
		why = "not an x86-64 program";
	} else if (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
		   ((st.st_mode & S_ISGID) && st.st_gid != getegid())) {
		why = "set-user-ID or set-group-ID (its loader ignores LD_PRELOAD)";
	} else if (!elf_has_interp(f, &eh)) {
		why = "statically linked (no loader to preload measure's library)";
	}
	if (own >= 0)
		close(own);
	return why;
}

/* "LD_PRELOAD=" with every entry of VALUE but measure's library, into BUF; false if too long. */
static bool preload_without_us(const char *value, char *buf, size_t size)
{
	size_t n = fth_format(buf, size, "LD_PRELOAD=");
	for (const char *p = value; *p;) {
		size_t len = strcspn(p, ": ");
		bool ours = len >= 13 && !memcmp(p + len - 13, "libmeasure.so", 13);
		if (len && !ours) {
			if (n + len + 2 > size)
				return false;
			if (n > sizeof("LD_PRELOAD=") - 1)
				buf[n++] = ':';
			memcpy(buf + n, p, len);
			n += len;
			buf[n] = '\0';
		}
		p += len + (p[len] != '\0');
	}
	return true;
}

/*
 * Every exec of a measured process (not of a vfork or posix_spawn child, which shares its
 * parent's memory) stops and writes its measurement first; the new image gets an environment
 * that names this process's log, so that it appends to it.
 */
static int exec_measured(enum exec_kind kind, const char *path, int fd, char *const argv[],
			 char *const envp[])
{
	rt_exec_resolve();
	bool stopped = rt_before_exec();
	size_t n = stopped ? env_count(envp) : 0;
	bool add_log = stopped && n < MAX_ENV_COPY && !(rt.cfg.flags & MCONFIG_NO_FOLLOW);
	char var[700], program[1024], preload[2048];
	bool foreign = false;
	const char *target = kind == EXEC_FD ? NULL : program_path(kind, path, program,
								      sizeof(program));
	/* A vfork or posix_spawn child shares its parent's memory (and its log's state, with the
	 * parent's other threads running): it only gets the environment, which is on its stack. */
	const char *why = (stopped || rt.active) && (target || kind == EXEC_FD)
				  ? unmeasurable(target, fd, &foreign) : NULL;
	if (why && stopped)
		rt_log("warning: %s: %s: not measured", target ? target : "(fexecve)", why);
	if (foreign && !stopped && rt.active) {
		n = env_count(envp);
		add_log = n < MAX_ENV_COPY;
	}
	char *with_log[add_log ? n + 2 : 1];
	char *const *env = envp;
	if (add_log && (!stopped || rt_log_env(var, sizeof(var)))) {
		size_t k = 0, prefix = sizeof(MCONFIG_ENV_LOG); /* NAME= */
		for (size_t i = 0; i < n; i++) {
			if (!strncmp(envp[i], MCONFIG_ENV_LOG "=", prefix))
				continue;
			if (foreign && !strncmp(envp[i], "LD_PRELOAD=", 11) &&
			    preload_without_us(envp[i] + 11, preload, sizeof(preload))) {
				if (preload[11])
					with_log[k++] = preload;
				continue;
			}
			with_log[k++] = envp[i];
		}
		if (stopped)
			with_log[k++] = var;
		with_log[k] = NULL;
		env = with_log;
	}
	int rc = kind == EXEC_VE    ? real_execve(path, argv, env)
		 : kind == EXEC_VPE ? real_execvpe(path, argv, env)
				    : real_fexecve(fd, argv, env);
	int err = errno;
	if (stopped)
		rt_after_failed_exec();
	errno = err;
	return rc;
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_measured(EXEC_VE, path, -1, argv, envp);
}

EXPORT int execv(const char *path, char *const argv[])
{
	extern char **environ;
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_measured(EXEC_VPE, file, -1, argv, envp);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	extern char **environ;
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_measured(EXEC_FD, NULL, fd, argv, envp);
}

/* Count the variadic arguments up to the terminating NULL (at most ARG_MAX-ish). */
#define COLLECT_ARGS(first, ap, argv, extra)                                  \
	size_t n_ = 1;                                                        \
	va_start(ap, first);                                                  \
	while (va_arg(ap, char *))                                            \
		n_++;                                                         \
	va_end(ap);                                                           \
	char *argv[n_ + 1];                                                   \
	va_start(ap, first);                                                  \
	argv[0] = (char *)(first);                                            \
	for (size_t i_ = 1; i_ <= n_; i_++)                                   \
		argv[i_] = va_arg(ap, char *);                                \
	extra;                                                                \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv, (void)0);
	return execv(path, argv);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	COLLECT_ARGS(arg, ap, argv, (void)0);
	return execvp(file, argv);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char **envp;
	COLLECT_ARGS(arg, ap, argv, envp = va_arg(ap, char **));
	return execve(path, argv, envp);
}
