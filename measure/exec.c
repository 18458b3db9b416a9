/* SPDX-License-Identifier: MIT */
/*
 * exec.c: the exec family, wrapped.  Before the image is replaced, every thread's sampling
 * stops and its file is written, and any sample signal already queued is discarded (a signal
 * arriving after exec, before the new image installs its handler, would kill it).  If exec
 * fails, measuring resumes in the calling thread and the program sees the failure unchanged.
 * glibc's execl* and execvp* do not go through execve's PLT entry, so each is wrapped.  The
 * new image appends to the process's log (MCONFIG_ENV_LOG in its environment).
 */
#include "compat.h"
#include "runtime.h"

#include <dlfcn.h>
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
	char *with_log[add_log ? n + 2 : 1];
	char var[700];
	char *const *env = envp;
	if (add_log && rt_log_env(var, sizeof(var))) {
		size_t k = 0, prefix = sizeof(MCONFIG_ENV_LOG); /* NAME= */
		for (size_t i = 0; i < n; i++)
			if (strncmp(envp[i], MCONFIG_ENV_LOG "=", prefix))
				with_log[k++] = envp[i];
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
