/* SPDX-License-Identifier: MIT */
/*
 * fds.c: measure's descriptors survive programs that close every descriptor at start (a loop
 * over close(), closefrom(), close_range()) or dup2() over them.  Our perf-event and reserve
 * descriptors are marked in a bitmap; closing one of them is a silent success (the program
 * cannot tell: it never opened it), and dup2() onto one moves ours out of the way first.
 */
#include "compat.h"
#include "runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_TRACKED 65536

static uint64_t owned[MAX_TRACKED / 64];

void rt_fd_own(int fd, bool own)
{
	if (fd < 0 || fd >= MAX_TRACKED)
		return;
	if (own)
		__atomic_fetch_or(&owned[fd / 64], 1ull << (fd % 64), __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&owned[fd / 64], ~(1ull << (fd % 64)), __ATOMIC_RELAXED);
}

static bool is_ours(int fd)
{
	return fd >= 0 && fd < MAX_TRACKED &&
	       (__atomic_load_n(&owned[fd / 64], __ATOMIC_RELAXED) >> (fd % 64) & 1);
}

static int (*real_close)(int);

void rt_fds_resolve(void)
{
	if (!__atomic_load_n(&real_close, __ATOMIC_RELAXED))
		__atomic_store_n(&real_close, (int (*)(int))dlsym(RTLD_NEXT, "close"),
				 __ATOMIC_RELAXED);
}

/* Our own closes: clear the mark, then close for real. */
int rt_close(int fd)
{
	rt_fds_resolve();
	rt_fd_own(fd, false);
	return real_close(fd);
}

EXPORT int close(int fd)
{
	rt_fds_resolve();
	if (is_ours(fd))
		return 0;
	return real_close(fd);
}

/* Close [first, last] except ours, by ranges between them. */
static int close_ranges(unsigned first, unsigned last, int flags,
			int (*real)(unsigned, unsigned, int))
{
	unsigned lo = first;
	for (unsigned fd = first; fd <= last && fd < MAX_TRACKED; fd++) {
		if (!is_ours((int)fd))
			continue;
		if (fd > lo && real(lo, fd - 1, flags) < 0)
			return -1;
		lo = fd + 1;
		if (fd == UINT32_MAX)
			return 0;
	}
	return lo <= last ? real(lo, last, flags) : 0;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	static int (*real)(unsigned, unsigned, int);
	if (!real)
		real = (int (*)(unsigned, unsigned, int))dlsym(RTLD_NEXT, "close_range");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return close_ranges(first, last, flags, real);
}

EXPORT void closefrom(int lowfd)
{
	close_range(lowfd < 0 ? 0 : (unsigned)lowfd, ~0u, 0);
}

/* Move our descriptor away from NEWFD, which the program is about to take. */
static void evacuate(int newfd)
{
	if (!is_ours(newfd))
		return;
	int moved = fcntl(newfd, F_DUPFD_CLOEXEC, newfd + 1);
	if (moved < 0)
		return;
	rt_fd_moved(newfd, moved);
	rt_fd_own(moved, true);
	rt_fd_own(newfd, false);
}

EXPORT int dup2(int oldfd, int newfd)
{
	static int (*real)(int, int);
	if (!real)
		real = (int (*)(int, int))dlsym(RTLD_NEXT, "dup2");
	if (oldfd != newfd)
		evacuate(newfd);
	return real(oldfd, newfd);
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	static int (*real)(int, int, int);
	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "dup3");
	evacuate(newfd);
	return real(oldfd, newfd, flags);
}
