/* SPDX-License-Identifier: MIT */
/*
 * io.c: the IO source.  read, write, pread, pwrite, readv, writev, preadv, pwritev (with their
 * 64 and 2 variants), fread, fwrite, fread_unlocked and fwrite_unlocked are wrapped: the bytes
 * each call transferred (its result) go to "IO Bytes Read" or "IO Bytes Written", and the time
 * it took (CLOCK_MONOTONIC) to "IO Read Time" or "IO Write Time", at the calling context (the
 * real function as the leaf, under the frames of the program that called it: callsite.c).
 * Calls made by measure itself are not counted, and neither is a call made while another
 * wrapped call runs on the same thread (an fwrite whose stream writes through a wrapped write
 * counts once).  The program sees the real function's result and errno unchanged.
 */
#undef _FORTIFY_SOURCE /* these are definitions of the fortified functions */
#include "compat.h"
#include "runtime.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#undef fread_unlocked
#undef fwrite_unlocked

#define EXPORT __attribute__((visibility("default")))

static int metric[MIO_COUNT] = { -1, -1, -1, -1 };
static bool counting_on;
static __thread int in_io __attribute__((tls_model("initial-exec")));

/* The real functions, by name: found at start-up, or on first use before it. */
#define IO_FUNCTIONS(X)                                                                         \
	X(read, ssize_t, (int fd, void *buf, size_t n), (fd, buf, n), false, r)                 \
	X(write, ssize_t, (int fd, const void *buf, size_t n), (fd, buf, n), true, r)           \
	X(pread, ssize_t, (int fd, void *buf, size_t n, off_t o), (fd, buf, n, o), false, r)    \
	X(pwrite, ssize_t, (int fd, const void *buf, size_t n, off_t o), (fd, buf, n, o), true, \
	  r)                                                                                    \
	X(pread64, ssize_t, (int fd, void *buf, size_t n, off64_t o), (fd, buf, n, o), false,   \
	  r)                                                                                    \
	X(pwrite64, ssize_t, (int fd, const void *buf, size_t n, off64_t o), (fd, buf, n, o),   \
	  true, r)                                                                              \
	X(readv, ssize_t, (int fd, const struct iovec *v, int n), (fd, v, n), false, r)         \
	X(writev, ssize_t, (int fd, const struct iovec *v, int n), (fd, v, n), true, r)         \
	X(preadv, ssize_t, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o),      \
	  false, r)                                                                             \
	X(pwritev, ssize_t, (int fd, const struct iovec *v, int n, off_t o), (fd, v, n, o),     \
	  true, r)                                                                              \
	X(preadv64, ssize_t, (int fd, const struct iovec *v, int n, off64_t o), (fd, v, n, o),  \
	  false, r)                                                                             \
	X(pwritev64, ssize_t, (int fd, const struct iovec *v, int n, off64_t o), (fd, v, n, o), \
	  true, r)                                                                              \
	X(preadv2, ssize_t, (int fd, const struct iovec *v, int n, off_t o, int f),             \
	  (fd, v, n, o, f), false, r)                                                           \
	X(pwritev2, ssize_t, (int fd, const struct iovec *v, int n, off_t o, int f),            \
	  (fd, v, n, o, f), true, r)                                                            \
	X(fread, size_t, (void *buf, size_t size, size_t n, FILE *f), (buf, size, n, f), false, \
	  (ssize_t)(r * size))                                                                  \
	X(fwrite, size_t, (const void *buf, size_t size, size_t n, FILE *f), (buf, size, n, f), \
	  true, (ssize_t)(r * size))                                                            \
	X(fread_unlocked, size_t, (void *buf, size_t size, size_t n, FILE *f),                  \
	  (buf, size, n, f), false, (ssize_t)(r * size))                                        \
	X(fwrite_unlocked, size_t, (const void *buf, size_t size, size_t n, FILE *f),           \
	  (buf, size, n, f), true, (ssize_t)(r * size))

#define X(name, ret, params, args, out, bytes) ret(*name) params;
static struct {
	IO_FUNCTIONS(X)
} real;
#undef X

void rt_io_resolve(void)
{
#define X(name, ret, params, args, out, bytes)                                                 \
	if (!__atomic_load_n(&real.name, __ATOMIC_ACQUIRE))                                     \
		__atomic_store_n(&real.name, (ret(*) params)dlsym(RTLD_NEXT, #name),            \
				 __ATOMIC_RELEASE);
	IO_FUNCTIONS(X)
#undef X
}

static void io_process_init(void)
{
	int n = 0;
	for (int i = 0; i < rt.cfg.nevents; i++) {
		const struct mevent *e = &rt.cfg.ev[i];
		if (e->source == MSOURCE_IO && e->config < MIO_COUNT) {
			metric[e->config] = i;
			n++;
		}
	}
	if (n != MIO_COUNT)
		return;
	/* Say so when the program's own write comes first: its calls cannot be seen. */
	void *first = dlsym(RTLD_DEFAULT, "write");
	if (first && !rt_sync_from_measure((uint64_t)(uintptr_t)first + 1)) {
		rt_log("error: IO cannot measure this program's read and write: another definition "
		       "comes before measure's in the symbol search order");
		return;
	}
	counting_on = true;
}

static inline bool counting(uint64_t ra)
{
	return counting_on && rt.active && !in_io && !rt_sync_from_measure(ra);
}

/* After a counted call of CALLEE made at RA (stack pointer SP) that moved BYTES in DT ns. */
static void account(bool out, ssize_t bytes, uint64_t t0, const void *callee, uint64_t ra,
		    uint64_t sp)
{
	int saved = errno;
	uint64_t dt = rt_monotonic_ns() - t0;
	struct mthread *t = rt_self();
	if (t && rt_sync_claim(t)) {
		uint32_t leaf = rt_sync_context(t, callee, ra, sp);
		if (bytes > 0)
			rt_sync_credit(t, leaf, metric[out ? MIO_BYTES_WRITTEN : MIO_BYTES_READ],
				       (uint64_t)bytes);
		rt_sync_credit(t, leaf, metric[out ? MIO_WRITE_TIME : MIO_READ_TIME], dt);
		rt_sync_release(t);
	}
	in_io = 0;
	errno = saved;
}

#define X(name, ret, params, args, out, bytes)                                                 \
	EXPORT ret name params                                                                  \
	{                                                                                       \
		ret(*fn) params = __atomic_load_n(&real.name, __ATOMIC_ACQUIRE);                 \
		if (__builtin_expect(!fn, 0)) {                                                  \
			rt_io_resolve();                                                         \
			fn = real.name;                                                          \
		}                                                                                \
		uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);                  \
		if (!counting(ra))                                                               \
			return fn args;                                                          \
		in_io = 1;                                                                       \
		uint64_t t0 = rt_monotonic_ns();                                                 \
		ret r = fn args;                                                                 \
		account(out, bytes, t0, (const void *)fn, ra,                                    \
			(uint64_t)(uintptr_t)__builtin_dwarf_cfa());                             \
		return r;                                                                        \
	}
IO_FUNCTIONS(X)
#undef X

static void io_describe(const struct mevent *e, struct mfile_metric *x, char *desc, size_t size)
{
	fth_format(desc, size, "%s, by calling context of read, write, pread, pwrite, readv, "
			       "writev, fread, fwrite (and variants)",
		   e->unit == MFILE_UNIT_BYTES ? "bytes the calls transferred" : "time in the calls");
	rt_describe_every_event(x);
}

const struct rt_source rt_io_source = {
	.name = "IO",
	.process_init = io_process_init,
	.describe = io_describe,
};
