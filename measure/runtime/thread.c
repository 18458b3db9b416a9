/* SPDX-License-Identifier: MIT */
/*
 * thread.c: the life of a measured thread: its state is set up when it starts (the main
 * thread from the library's constructor, others through our pthread_create), sampling stops
 * and its file is written when it ends (a thread-specific-data destructor, which runs on
 * return and on pthread_exit), and at process exit every thread still running is written.
 */
#include "compat.h"
#include "loadmap.h"
#include "runtime.h"
#include "source.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <threads.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_stack_end; /* ld.so's: the initial thread's stack at process start */

static __thread struct mthread *self __attribute__((tls_model("initial-exec")));
static pthread_key_t end_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static bool key_made;
static uint32_t start_failures;

/* Per-thread arena: blocks of 1 MiB, at most 1 GiB of measurement data a thread. */
#define THREAD_ARENA_BLOCK (1u << 20)
#define THREAD_ARENA_LIMIT (1ull << 30)
#define RAISED_SAMPLE_WAIT_NS 20000000ull /* see rt_end_all() */

struct mthread *rt_self(void)
{
	return self;
}

void rt_thread_forget_self(void)
{
	self = NULL;
	if (__atomic_load_n(&key_made, __ATOMIC_ACQUIRE))
		pthread_setspecific(end_key, NULL);
}

static void end_on_exit(void *arg)
{
	struct mthread *t = arg;
	if (t)
		rt_thread_end(t, "thread exit");
}

static void make_key(void)
{
	if (pthread_key_create(&end_key, end_on_exit) == 0)
		__atomic_store_n(&key_made, true, __ATOMIC_RELEASE);
}

/*
 * The initial thread's stack as glibc's pthread_getattr_np() describes it, without the
 * /proc/self/maps it reads and parses with stdio (a few hundred microseconds in every measured
 * process).  The top is the page above __libc_stack_end; the stack mapping ends at the page
 * that holds the end of the executable's name, which the kernel copies first, just below the
 * end (AT_EXECFN); the size is the stack limit less what lies between the two.  False when the
 * answer would not be glibc's (no limit: glibc then looks at the mapping below) or the calling
 * thread does not run on the initial stack (a child forked by another thread).
 */
static bool initial_stack_bounds(struct mthread *t)
{
	const uintptr_t page = (uintptr_t)getpagesize();
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	struct rlimit rl;
	if (!execfn || !__libc_stack_end || getrlimit(RLIMIT_STACK, &rl) < 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return false;
	uintptr_t map_end = ((uintptr_t)execfn + strlen(execfn) + 1 + page - 1) & -page;
	uintptr_t top = ((uintptr_t)__libc_stack_end & -page) + page;
	if (top > map_end || rl.rlim_cur <= map_end - top)
		return false;
	uintptr_t size = (uintptr_t)(rl.rlim_cur - (map_end - top)) & -page;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	if (size > top || here >= top || here < top - size)
		return false;
	t->stack_lo = top - size;
	t->stack_hi = top;
	return true;
}

static void stack_bounds(struct mthread *t)
{
	if (initial_stack_bounds(t))
		return;
	pthread_attr_t attr;
	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return;
	void *addr;
	size_t size;
	if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
		t->stack_lo = (uint64_t)addr;
		t->stack_hi = (uint64_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

bool rt_thread_tree(struct mthread *t)
{
	if (t->tree_ready)
		return true;
	t->frames = arena_alloc(&t->arena, RT_MAX_FRAMES * sizeof(*t->frames), 16);
	t->path = arena_alloc(&t->arena, RT_MAX_FRAMES * sizeof(*t->path), 16);
	t->path_nodes = arena_alloc(&t->arena, RT_MAX_FRAMES * sizeof(*t->path_nodes), 16);
	if (!t->frames || !t->path || !t->path_nodes ||
	    cct_init(&t->cct, &t->arena, (unsigned)rt.cfg.nevents) < 0)
		return false;
	rt_unwind_prepare(t);
	/* The first page of each array a sample writes: enough for paths of 170 frames. */
	arena_prefault(t->frames, 4096);
	arena_prefault(t->path, 4096);
	arena_prefault(t->path_nodes, 4096);
	t->tree_ready = true;
	return true;
}

struct mthread *rt_thread_begin(struct mthread *parent, const struct rt_frame *creation,
				uint32_t ncreation)
{
	if (!rt.active)
		return NULL;
	pthread_once(&key_once, make_key);
	size_t bytes = sizeof(struct mthread) + rt_sources_thread_bytes();
	struct mthread *t = arena_alloc(&rt.shared, bytes, 64);
	if (!t) {
		rt_log("error: out of memory for a thread record");
		return NULL;
	}
	arena_prefault(t, bytes);
	arena_init(&t->arena, THREAD_ARENA_BLOCK, THREAD_ARENA_LIMIT);
	/* Only this thread's samples use its arena: a forked child has no use for it. */
	arena_not_inherited(&t->arena);
	t->tid = (pid_t)syscall(SYS_gettid);
	t->index = rt.next_index++;
	t->parent_index = parent ? (int32_t)parent->index : -1;
	t->start_ns = rt_realtime_ns();
	t->start_mono = rt_monotonic_ns();
	t->ncreation = ncreation > ARRAY_SIZE(t->creation) ? ARRAY_SIZE(t->creation) : ncreation;
	memcpy(t->creation, creation, t->ncreation * sizeof(*creation));
	rt_sources_thread_init(t);
	stack_bounds(t);
	t->starting = 1;
	/* Register before sampling starts so that exit paths always find it. */
	struct mthread *head = rt.threads;
	do
		t->next = head;
	while (!__atomic_compare_exchange_n(&rt.threads, &head, t, false, __ATOMIC_ACQ_REL,
					    __ATOMIC_ACQUIRE));
	self = t;
	pthread_setspecific(end_key, t);
	int started = rt_sources_start(t);
	/* A process ending (or failing an exec) in another thread meanwhile stops these sources
	 * once they are all open, not while they are being opened. */
	__atomic_store_n(&t->starting, 0, __ATOMIC_RELEASE);
	if (started < 0) {
		/* Said for the first threads only: a thousand identical lines help nobody. */
		uint32_t failures = __atomic_fetch_add(&start_failures, 1, __ATOMIC_RELAXED);
		if (failures < 5)
			rt_log("error: thread %u (tid %d): cannot start sampling: %s", t->index,
			       t->tid, fth_errmsg());
		else if (failures == 5)
			rt_log("error: more threads cannot start sampling (counted in the summary's "
			       "errors)");
		rt.errors++;
	}
	return t;
}

/* The name the program gave the thread (prctl, pthread_setname_np), or the program's. */
static void read_thread_name(struct mthread *t)
{
	char path[64];
	fth_format(path, sizeof(path), "/proc/self/task/%d/comm", (int)t->tid);
	int saved = errno;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	t->name[0] = '\0';
	if (fd >= 0) {
		ssize_t n = read(fd, t->name, sizeof(t->name) - 1);
		close(fd);
		if (n < 0)
			n = 0;
		while (n > 0 && t->name[n - 1] == '\n')
			n--;
		t->name[n] = '\0';
	}
	errno = saved;
}

void rt_thread_end(struct mthread *t, const char *reason)
{
	/* Claim the thread: only one caller stops and writes it. */
	bool expected = false;
	if (!__atomic_compare_exchange_n(&t->written, &expected, true, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	/* A thread registered but still opening its sources: let it finish (it cannot if it is
	 * this thread, interrupted by a fatal signal). */
	for (int spin = 0; t != self && __atomic_load_n(&t->starting, __ATOMIC_ACQUIRE) &&
			   spin < 1000000; spin++)
		__builtin_ia32_pause();
	rt_sources_stop(t);
	/* A sample running on the thread right now finishes before the tree is written. */
	for (int spin = 0; t->busy && spin < 1000000; spin++)
		__builtin_ia32_pause();
	t->end_ns = rt_realtime_ns();
	read_thread_name(t);
	t->cpu_ns = rt_thread_cpu_ns(t == self ? 0 : t->tid);
	fth_format(t->end_reason, sizeof(t->end_reason), "%s", reason);
	if (strcmp(reason, "exec") == 0 && t->cct.nnodes <= 1 && t->taken == 0 && t->ntrace == 0) {
		/*
		 * Nothing was measured before the image left (the moment between a fork and its
		 * exec, usually): its file would add a thread of zeros to the database, and cost the
		 * process a file created.  The log says so; the new image is measured on.
		 */
		rt.unwritten++;
	} else if (rt_write_thread(t) < 0) {
		rt_log("error: %s", fth_errmsg());
		rt.errors++;
	} else {
		rt.files++;
		rt.cpu_ns += t->cpu_ns;
		rt_sources_written(t);
	}
	rt.taken += t->taken;
	rt.recorded += t->recorded;
	rt.partial += t->partial;
	rt.calls += t->calls;
	if (t->partial_shared) {
		rt.partial_shared += t->partial_shared;
		rt.partial_shared_module = t->partial_shared_module;
	}
	uint64_t dropped = 0;
	for (int i = 0; i < RT_DROP_COUNT; i++)
		dropped += t->drops[i];
	rt.dropped += dropped;
}

void rt_end_all(const char *reason)
{
	struct mthread *me = self;
	/*
	 * Stop every thread's sampling first, then write them, the caller's own last.  The others
	 * run on meanwhile: their sources are disabled rather than their samples refused, so that
	 * a sample already raised is recorded, not dropped, while earlier files are written.
	 */
	for (struct mthread *t = rt.threads; t; t = t->next)
		if (t != me && !__atomic_load_n(&t->starting, __ATOMIC_ACQUIRE))
			rt_sources_quiet(t);
	/* A thread preempted just as the kernel raised its sample takes it when it runs again:
	 * wait for that (20 ms at most in all; usually a tenth of a millisecond) rather than drop
	 * the sample, or lose it unseen when the exit kills the thread first. */
	uint64_t deadline = rt_monotonic_ns() + RAISED_SAMPLE_WAIT_NS;
	for (struct mthread *t = rt.threads; t; t = t->next)
		while (t != me && t->quiet && rt_sources_raised(t) && rt_monotonic_ns() < deadline) {
			struct timespec pause = { 0, 100000 };
			nanosleep(&pause, NULL);
		}
	for (struct mthread *t = rt.threads; t; t = t->next)
		if (t != me)
			rt_thread_end(t, reason);
	if (me)
		rt_thread_end(me, reason);
}

/* ---- pthread_create ---- */

struct start_record {
	void *(*fn)(void *);
	void *arg;
	struct mthread *parent;
	uint32_t ncreation;
	struct rt_frame creation[32];
	bool has_entry;
	struct rt_frame entry;
};

static void *thread_start(void *p)
{
	struct start_record r = *(struct start_record *)p;
	struct mthread *t = rt_thread_begin(r.parent, r.creation, r.ncreation);
	if (t && r.has_entry) {
		t->entry = r.entry;
		t->has_entry = true;
	}
	return r.fn(r.arg);
}

struct c11_start {
	thrd_start_t fn;
	void *arg;
};

static void *c11_trampoline(void *p);

/* Where the thread starts: FN, or the C11 function a trampoline of ours calls. */
static void entry_frame(struct start_record *r, void *(*fn)(void *), void *arg)
{
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	if (fn == c11_trampoline)
		addr = (uint64_t)(uintptr_t)((struct c11_start *)arg)->fn;
	const struct lm_module *m = loadmap_find(addr);
	r->has_entry = m != NULL;
	if (m)
		r->entry = (struct rt_frame){ m->id, addr - m->bias };
}

typedef int (*pthread_create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

__attribute__((visibility("default"))) int pthread_create(pthread_t *thread,
							  const pthread_attr_t *attr,
							  void *(*fn)(void *), void *arg)
{
	static pthread_create_fn real;
	if (!real)
		real = (pthread_create_fn)dlsym(RTLD_NEXT, "pthread_create");
	if (!rt.active || !real)
		return real ? real(thread, attr, fn, arg) : EAGAIN;
	/* The record lives in the shared arena (never freed: a few hundred bytes a thread). */
	struct start_record *r = arena_alloc(&rt.shared, sizeof(*r), 16);
	if (!r)
		return real(thread, attr, fn, arg);
	r->fn = fn;
	r->arg = arg;
	r->parent = self;
	struct rt_frame frames[40];
	uint32_t n = rt_unwind_here(frames, ARRAY_SIZE(frames));
	/* Drop our own frames: the path starts at the caller of pthread_create. */
	uint32_t skip = 0;
	while (skip < n && frames[skip].module == rt_self_module())
		skip++;
	r->ncreation = 0;
	for (uint32_t i = skip; i < n && r->ncreation < ARRAY_SIZE(r->creation); i++)
		r->creation[r->ncreation++] = frames[i];
	entry_frame(r, fn, arg);
	return real(thread, attr, thread_start, r);
}

/* ---- C11 threads: glibc's thrd_create does not go through pthread_create's PLT entry ---- */

static void *c11_trampoline(void *p)
{
	struct c11_start s = *(struct c11_start *)p;
	return (void *)(intptr_t)s.fn(s.arg);
}

__attribute__((visibility("default"))) int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
	struct c11_start *s = arena_alloc(&rt.shared, sizeof(*s), 16);
	if (!s)
		return thrd_nomem;
	s->fn = fn;
	s->arg = arg;
	int rc = pthread_create((pthread_t *)thr, NULL, c11_trampoline, s);
	return rc == 0 ? thrd_success : rc == ENOMEM || rc == EAGAIN ? thrd_nomem : thrd_error;
}
