/* SPDX-License-Identifier: MIT */
/*
 * perf-ring.c: opening perf events for the perf-based sources, and their rings (perf-ring.h).
 */
#include "compat.h"
#include "perf-ring.h"
#include "runtime.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static size_t ring_bytes;

void rt_ring_init(void)
{
	ring_bytes = (size_t)(1 + RT_RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
}

size_t rt_ring_bytes(void)
{
	return ring_bytes;
}

/*
 * Keep our descriptors away from the low numbers that programs dup2() over or expect to be
 * free: move each to the first free number at or above HIGH_FD.
 */
#define HIGH_FD 512

static int high_fd(int fd)
{
	if (fd >= HIGH_FD)
		return fd;
	int moved = fcntl(fd, F_DUPFD_CLOEXEC, HIGH_FD);
	if (moved < 0)
		return fd; /* the limit is below HIGH_FD: keep it where it is */
	close(fd);
	return moved;
}

/* Out of descriptors: raise the soft limit towards the hard one, once, and say so. */
static int raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max) {
		static int said;
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
			rt_log("error: out of file descriptors for perf events (limit %llu is the "
			       "hard limit; raise it with ulimit -Hn): threads started from now "
			       "on may not be sampled", (unsigned long long)rl.rlim_cur);
		return -1;
	}
	rlim_t old = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max > old * 8 ? old * 8 : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	rt_log("raised the open-file limit from %llu to %llu for perf event descriptors",
	       (unsigned long long)old, (unsigned long long)rl.rlim_cur);
	return 0;
}

int rt_perf_open(struct perf_event_attr *a, int group_fd)
{
	long fd = syscall(SYS_perf_event_open, a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0 && errno == EMFILE && raise_fd_limit() == 0)
		fd = syscall(SYS_perf_event_open, a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	int kept = high_fd((int)fd);
	rt_fd_own(kept, true);
	return kept;
}

void *rt_ring_map(int fd, bool populate)
{
	void *ring = mmap(NULL, ring_bytes, PROT_READ | PROT_WRITE,
			  MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
	return ring == MAP_FAILED ? NULL : ring;
}

void rt_ring_copy(const uint8_t *data, uint64_t size, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (size - 1);
	size_t first = off + len <= size ? len : (size_t)(size - off);
	memcpy(dst, data + off, first);
	if (first < len)
		memcpy((uint8_t *)dst + first, data, len - first);
}

uint64_t rt_perf_sig_data(const siginfo_t *info)
{
	uint64_t v = 0;
	if (info->si_code == TRAP_PERF)
		memcpy(&v, (const char *)info + offsetof(siginfo_t, si_addr) + sizeof(void *),
		       sizeof(v));
	return v;
}
