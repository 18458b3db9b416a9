/* SPDX-License-Identifier: MIT */
/*
 * exec.c: the exec family, wrapped.  Before the image is replaced, every thread's sampling
 * stops and its file is written, and any sample signal already queued is discarded (a signal
 * arriving after exec, before the new image installs its handler, would kill it).  If exec
 * fails, measuring resumes in the calling thread and the program sees the failure unchanged.
 * glibc's execl* and execvp* do not go through execve's PLT entry, so each is wrapped.
 */
#include "compat.h"
#include "runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
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

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	rt_exec_resolve();
	bool stopped = rt_before_exec();
	int rc = real_execve(path, argv, envp);
	int err = errno;
	if (stopped)
		rt_after_failed_exec();
	errno = err;
	return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
	extern char **environ;
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	rt_exec_resolve();
	bool stopped = rt_before_exec();
	int rc = real_execvpe(file, argv, envp);
	int err = errno;
	if (stopped)
		rt_after_failed_exec();
	errno = err;
	return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
	extern char **environ;
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	rt_exec_resolve();
	bool stopped = rt_before_exec();
	int rc = real_fexecve(fd, argv, envp);
	int err = errno;
	if (stopped)
		rt_after_failed_exec();
	errno = err;
	return rc;
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
