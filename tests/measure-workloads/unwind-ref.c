/* SPDX-License-Identifier: MIT */
/*
 * unwind-ref.c: measure's unwinder checked against libunwind, run under measure.  Worker
 * threads run C code of eight builds (-O0 to -O3, with and without frame pointers), C++ with
 * exceptions, libc, libm, the loader, PLT stubs, deep recursions and their own signal
 * handlers (one on an alternate stack), while measure samples them.  The main thread stops a
 * worker at random moments with a signal whose handler publishes its ucontext and waits; then,
 * outside any handler, it walks that same context with measure's unwinder
 * (fathom_measure_unwind, the sampler's rt_unwind with its reuse of the previous walk) and
 * with libunwind (unw_init_local2, unw_step), and requires the same frames: the same pc and
 * the same stack pointer (the caller's CFA) in each, and the same end.  Every difference is
 * printed; those of a known cause are counted as explained (see explain()).
 *
 * usage: unwind-ref CONTEXTS [SEED]; exit 0 when CONTEXTS contexts were compared and no
 * difference is unexplained.
 */
#define _GNU_SOURCE 1
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <elf.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define WORKERS 2
#define MAX_FRAMES 8192
#define EXAMPLES 12
#define SHOWN 7 /* frames shown of each example: up to 4 before the difference */

typedef int check_fn(pid_t tid, const ucontext_t *uc, uint64_t *pc, uint64_t *sp, bool *own,
		     uint32_t max, bool *complete, uint32_t *reused);

#define VARIANTS(X) X(O0_fp) X(O0_nofp) X(O1_fp) X(O1_nofp) X(O2_fp) X(O2_nofp) X(O3_fp) X(O3_nofp)
#define DECLARE(v) void unwind_wl_##v(unsigned *seed, int max_depth);
VARIANTS(DECLARE)
#define ENTRY(v) unwind_wl_##v,
static void (*const variants[])(unsigned *, int) = { VARIANTS(ENTRY) };
#define NVARIANTS (sizeof(variants) / sizeof(variants[0]))
void unwind_wl_cxx(unsigned *seed);

enum { RUNNING, CAPTURED };

struct worker {
	pthread_t thread;
	pid_t tid;
	unsigned seed;
	int state; /* futex word: RUNNING or CAPTURED */
	const ucontext_t *uc;
	void *altstack;
};

static struct worker workers[WORKERS];
static __thread struct worker *self;
static volatile int stopping;

static void futex_wait(int *word, int value)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, value, NULL, NULL, 0);
}

static void futex_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* SIGUSR1: publish the interrupted context and hold still until the main thread is done. */
static void capture(int sig, siginfo_t *si, void *ctx)
{
	(void)sig, (void)si;
	int saved = errno;
	struct worker *w = self;
	w->uc = ctx;
	__atomic_store_n(&w->state, CAPTURED, __ATOMIC_RELEASE);
	futex_wake(&w->state);
	while (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == CAPTURED)
		futex_wait(&w->state, CAPTURED);
	errno = saved;
}

/* SIGUSR2 and SIGWINCH (on the alternate stack): the worker's own handlers, which work. */
static void own_handler(int sig)
{
	int saved = errno;
	variants[(unsigned)sig % NVARIANTS](&self->seed, 20);
	errno = saved;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	self = w;
	w->tid = (pid_t)syscall(SYS_gettid);
	stack_t ss = { .ss_sp = w->altstack, .ss_size = 1 << 18 };
	if (sigaltstack(&ss, NULL) < 0) {
		perror("unwind-ref: sigaltstack");
		exit(2);
	}
	__atomic_store_n(&w->state, RUNNING, __ATOMIC_RELEASE);
	while (!stopping) {
		unsigned r = (unsigned)rand_r(&w->seed) % 14;
		if (r < NVARIANTS)
			variants[r](&w->seed, 60);
		else if (r == 8)
			unwind_wl_cxx(&w->seed);
		else if (r == 9)
			variants[rand_r(&w->seed) % NVARIANTS](&w->seed, 3000); /* deep */
		else if (r == 10 || r == 11)
			raise(SIGUSR2);
		else
			raise(SIGWINCH);
	}
	return NULL;
}

/* ---- the comparison -------------------------------------------------------------------------- */

struct range {
	uint64_t lo, hi;
};
static struct range own_ranges[8]; /* measure's library, whose frames samples do not keep */
static int nown;

static int find_own(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uint64_t target = (uint64_t)(uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && target >= lo && target < lo + ph->p_memsz) {
			for (int j = 0; j < info->dlpi_phnum && nown < 8; j++) {
				const ElfW(Phdr) *q = &info->dlpi_phdr[j];
				if (q->p_type == PT_LOAD)
					own_ranges[nown++] = (struct range){ info->dlpi_addr + q->p_vaddr,
						info->dlpi_addr + q->p_vaddr + q->p_memsz };
			}
			return 1;
		}
	}
	return 0;
}

static bool is_own(uint64_t pc)
{
	for (int i = 0; i < nown; i++)
		if (pc >= own_ranges[i].lo && pc < own_ranges[i].hi)
			return true;
	return false;
}

struct walk {
	uint64_t pc[MAX_FRAMES], sp[MAX_FRAMES];
	bool own[MAX_FRAMES];
	uint32_t n;
	int end; /* measure: 1 complete, 0 not; libunwind: unw_step's last result */
	uint64_t start0; /* libunwind: where the procedure of frame 0 starts (0: unknown) */
};

static struct walk ours, theirs;

/* Drop measure's own frames, which samples do not record: the program's frames are compared. */
static void drop_own(struct walk *w)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < w->n; i++) {
		if (w->own[i])
			continue;
		w->pc[k] = w->pc[i];
		w->sp[k] = w->sp[i];
		k++;
	}
	w->n = k;
}

static void libunwind_walk(const ucontext_t *uc, struct walk *w)
{
	unw_cursor_t c;
	w->n = 0;
	w->end = unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME);
	if (w->end < 0)
		return;
	unw_proc_info_t pi;
	w->start0 = unw_get_proc_info(&c, &pi) == 0 ? pi.start_ip : 0;
	do {
		unw_word_t ip, sp;
		unw_get_reg(&c, UNW_REG_IP, &ip);
		unw_get_reg(&c, UNW_REG_SP, &sp);
		w->pc[w->n] = ip;
		w->sp[w->n] = sp;
		w->own[w->n] = is_own(w->n ? ip - 1 : ip);
		w->n++;
		w->end = unw_step(&c);
	} while (w->end > 0 && w->n < MAX_FRAMES);
}

enum outcome { SAME, MEASURE_SHORTER, LIBUNWIND_SHORTER, DIFFERENT, END_DIFFERS, NOUTCOMES };
static const char *const outcome_names[] = { "same", "measure stopped earlier",
					     "libunwind stopped earlier", "a frame differs",
					     "same frames, different end" };

struct example {
	enum outcome what;
	uint32_t at, n_ours, n_theirs;
	uint32_t first; /* the frames shown: FIRST to FIRST + SHOWN - 1 */
	uint64_t pc_ours[SHOWN], sp_ours[SHOWN], pc_theirs[SHOWN], sp_theirs[SHOWN];
	int end_ours, end_theirs;
	uint64_t start0;
	const char *explained;
};

static unsigned long counts[NOUTCOMES], explained_counts[NOUTCOMES];
static unsigned long contexts, frames_compared, reused_frames, walk_errors;
static struct example examples[NOUTCOMES][EXAMPLES];
static unsigned nexamples[NOUTCOMES];

static const char *symbol_of(uint64_t pc, bool exact, char *buf, size_t size)
{
	Dl_info info;
	uint64_t at = exact ? pc : pc - 1;
	if (!pc || !dladdr((void *)(uintptr_t)at, &info) || !info.dli_fname) {
		snprintf(buf, size, "%#llx (no module)", (unsigned long long)pc);
		return buf;
	}
	const char *mod = strrchr(info.dli_fname, '/');
	snprintf(buf, size, "%s+%#llx %s", mod ? mod + 1 : info.dli_fname,
		 (unsigned long long)(at - (uint64_t)(uintptr_t)info.dli_fbase),
		 info.dli_sname ? info.dli_sname : "?");
	return buf;
}

static int find_code(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uint64_t *pc = data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && *pc >= lo &&
		    *pc < lo + ph->p_memsz)
			return 1;
	}
	return 0;
}

/* Whether PC (a return address) lies in the code of a loaded module. */
static bool is_code(uint64_t pc)
{
	uint64_t at = pc - 1;
	return pc > 1 && dl_iterate_phdr(find_code, &at);
}

static bool in_function(uint64_t pc, bool exact, const char *name)
{
	Dl_info info;
	return pc && dladdr((void *)(uintptr_t)(exact ? pc : pc - 1), &info) && info.dli_sname &&
	       !strcmp(info.dli_sname, name);
}

/* glibc's __longjmp on x86-64 begins by loading the saved stack pointer, frame pointer and pc
 * from the jmp_buf (mov 0x30(%rdi),%r8; mov 0x8(%rdi),%r9; mov 0x38(%rdi),%rdx). */
static const uint8_t longjmp_code[] = { 0x4c, 0x8b, 0x47, 0x30, 0x4c, 0x8b, 0x4f, 0x08,
					0x48, 0x8b, 0x57, 0x38 };

/*
 * A difference with a known cause, or NULL.  Each cause is a limit of one of the unwinders that
 * is checked from the frames themselves, not assumed.
 */
static const char *explain(const struct example *e)
{
	/*
	 * libgcc's exception dispatch, after uw_install_context has written the landing pad's
	 * registers into the frame of _Unwind_RaiseException or _Unwind_Resume to return there by
	 * __builtin_eh_return: the saved registers describe the handler's frame, so the frames past
	 * it are not the callers.  Both unwinders read the same garbage: where they part, one of
	 * them has an address that is not code (libunwind goes on; measure stops at its checks).
	 */
	if (e->end_ours != 1) {
		bool dispatch = false;
		for (uint32_t k = 0; k < 3 && k < e->n_ours; k++)
			dispatch |= in_function(ours.pc[k], k == 0, "_Unwind_RaiseException") ||
				    in_function(ours.pc[k], k == 0, "_Unwind_Resume") ||
				    in_function(ours.pc[k], k == 0, "_Unwind_Resume_or_Rethrow");
		/* where the walks part (or end), or one frame further, one of them has read an
		 * address that is no code, or libunwind's next frame is no caller (its stack
		 * pointer did not grow) */
		bool garbage = (e->at < theirs.n && !is_code(theirs.pc[e->at])) ||
			       (e->at + 1 < theirs.n && !is_code(theirs.pc[e->at + 1])) ||
			       (e->at > 0 && e->at <= ours.n && !is_code(ours.pc[e->at - 1])) ||
			       (e->at > 0 && e->at < theirs.n &&
				theirs.sp[e->at] <= theirs.sp[e->at - 1]);
		if (dispatch && garbage)
			return "libgcc's exception dispatch has rewritten its saved registers";
	}
	/*
	 * glibc's __longjmp between loading the jmp_buf and its jump: its CFI takes the caller's
	 * frame from %rdi (the jmp_buf), %rdx, %r8 and %r9, registers that measure's rows (CFA
	 * from %rsp, %rbp or %rbx, return address on the stack) cannot express.  measure keeps
	 * the first frame and stops, as at any frame it cannot step.
	 */
	if (e->at == 1 && e->n_ours == 1 && e->end_ours != 1 && e->start0 &&
	    !memcmp((const void *)(uintptr_t)e->start0, longjmp_code, sizeof(longjmp_code)))
		return "glibc's __longjmp restores the caller from registers";
	/*
	 * The end of libgcc's exception dispatch (__builtin_eh_return's epilogue in
	 * _Unwind_RaiseException, _Unwind_Resume...): "mov %rcx,%rsp; pop %rcx; jmp *%rcx", whose
	 * CFI takes the CFA from %rcx, a register measure's rows cannot express.  measure keeps the
	 * first frame and stops there, as at __longjmp.
	 */
	static const uint8_t eh_return_code[] = { 0x48, 0x89, 0xcc, 0x59, 0xff, 0xe1 };
	if (e->at == 1 && e->n_ours == 1 && e->end_ours != 1 && is_code(ours.pc[0] + 1) &&
	    !memcmp((const void *)(uintptr_t)ours.pc[0], eh_return_code, sizeof(eh_return_code)))
		return "libgcc's exception dispatch takes its frame from %rcx at its end";
	return NULL;
}

static void compare(void)
{
	drop_own(&ours);
	drop_own(&theirs);
	uint32_t n = ours.n < theirs.n ? ours.n : theirs.n, i = 0;
	while (i < n && ours.pc[i] == theirs.pc[i] && (!ours.sp[i] || ours.sp[i] == theirs.sp[i]))
		i++;
	frames_compared += i;
	enum outcome what;
	if (i < n)
		what = DIFFERENT;
	else if (ours.n < theirs.n)
		what = MEASURE_SHORTER;
	else if (theirs.n < ours.n)
		what = LIBUNWIND_SHORTER;
	else if ((ours.end == 1) != (theirs.end == 0))
		what = END_DIFFERS;
	else
		what = SAME;
	counts[what]++;
	if (what == SAME)
		return;
	struct example e = { .what = what, .at = i, .n_ours = ours.n, .n_theirs = theirs.n,
			     .end_ours = ours.end, .end_theirs = theirs.end,
			     .start0 = theirs.start0 };
	e.first = i > 4 ? i - 4 : 0;
	for (uint32_t k = 0; k < SHOWN; k++) {
		uint32_t at = e.first + k;
		if (at < ours.n)
			e.pc_ours[k] = ours.pc[at], e.sp_ours[k] = ours.sp[at];
		if (at < theirs.n)
			e.pc_theirs[k] = theirs.pc[at], e.sp_theirs[k] = theirs.sp[at];
	}
	e.explained = explain(&e);
	if (e.explained)
		explained_counts[what]++;
	/* Every unexplained difference is shown (up to EXAMPLES), and the first explained ones. */
	if (nexamples[what] < EXAMPLES && (!e.explained || nexamples[what] < 2))
		examples[what][nexamples[what]++] = e;
}

static void report_example(const struct example *e)
{
	char a[256], b[256];
	printf("#   at frame %u of %u (measure, %s) and %u (libunwind, unw_step %d)%s%s\n", e->at,
	       e->n_ours, e->end_ours == 1 ? "complete" : "partial", e->n_theirs, e->end_theirs,
	       e->explained ? ": explained: " : ": UNEXPLAINED", e->explained ? e->explained : "");
	for (uint32_t k = 0; k < SHOWN; k++) {
		if (!e->pc_ours[k] && !e->pc_theirs[k])
			continue;
		uint32_t at = e->first + k;
		printf("#     %u measure   %s sp %#llx\n", at,
		       e->pc_ours[k] ? symbol_of(e->pc_ours[k], at == 0, a, sizeof(a)) : "-",
		       (unsigned long long)e->sp_ours[k]);
		if (e->pc_theirs[k] != e->pc_ours[k] || e->sp_theirs[k] != e->sp_ours[k])
			printf("#     %u libunwind %s sp %#llx\n", at,
			       e->pc_theirs[k] ? symbol_of(e->pc_theirs[k], at == 0, b, sizeof(b))
					       : "-",
			       (unsigned long long)e->sp_theirs[k]);
	}
}

static void pause_randomly(unsigned *seed)
{
	struct timespec ts = { 0, (long)(rand_r(seed) % 400) * 1000 };
	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	unsigned long want = argc > 1 ? strtoul(argv[1], NULL, 10) : 12000;
	unsigned first_seed = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 12345;
	unsigned seed = first_seed;
	check_fn *check = (check_fn *)dlsym(RTLD_DEFAULT, "fathom_measure_unwind");
	if (!check) {
		fprintf(stderr, "unwind-ref: not run under measure (no fathom_measure_unwind)\n");
		return 2;
	}
	dl_iterate_phdr(find_own, (void *)(uintptr_t)check);
	struct sigaction sa = { .sa_sigaction = capture, .sa_flags = SA_SIGINFO | SA_RESTART };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	struct sigaction own = { .sa_handler = own_handler, .sa_flags = SA_RESTART };
	sigemptyset(&own.sa_mask);
	sigaction(SIGUSR2, &own, NULL);
	own.sa_flags |= SA_ONSTACK;
	sigaction(SIGWINCH, &own, NULL);
	for (int i = 0; i < WORKERS; i++) {
		workers[i].seed = seed + (unsigned)i * 7919;
		workers[i].state = -1;
		workers[i].altstack = malloc(1 << 18);
		if (pthread_create(&workers[i].thread, NULL, work, &workers[i])) {
			fprintf(stderr, "unwind-ref: cannot create a thread\n");
			return 2;
		}
	}
	for (int i = 0; i < WORKERS; i++)
		while (__atomic_load_n(&workers[i].state, __ATOMIC_ACQUIRE) != RUNNING)
			sched_yield();
	pid_t pid = getpid();
	while (contexts < want) {
		struct worker *w = &workers[rand_r(&seed) % WORKERS];
		pause_randomly(&seed);
		if (syscall(SYS_tgkill, pid, w->tid, SIGUSR1) < 0) {
			perror("unwind-ref: tgkill");
			return 2;
		}
		while (__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) != CAPTURED)
			futex_wait(&w->state, RUNNING);
		/* The worker holds still in capture(): both walks read the same stack. */
		bool complete;
		uint32_t reused;
		int n = check(w->tid, w->uc, ours.pc, ours.sp, ours.own, MAX_FRAMES, &complete,
			      &reused);
		libunwind_walk(w->uc, &theirs);
		__atomic_store_n(&w->state, RUNNING, __ATOMIC_RELEASE);
		futex_wake(&w->state);
		if (n < 0) {
			walk_errors++;
			fprintf(stderr, "unwind-ref: fathom_measure_unwind failed (%d)\n", n);
			continue;
		}
		ours.n = (uint32_t)n;
		ours.end = complete;
		reused_frames += reused;
		contexts++;
		compare();
	}
	stopping = 1;
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i].thread, NULL);

	unsigned long unexplained = walk_errors;
	for (int o = 1; o < NOUTCOMES; o++)
		unexplained += counts[o] - explained_counts[o];
	printf("unwind-ref: %lu contexts, %lu frames alike (%lu of them reused from the previous "
	       "walk), seed %u\n", contexts, frames_compared, reused_frames, first_seed);
	for (int o = 0; o < NOUTCOMES; o++) {
		printf("unwind-ref: %s: %lu", outcome_names[o], counts[o]);
		if (o)
			printf(" (%lu explained)", explained_counts[o]);
		printf("\n");
		for (unsigned k = 0; k < nexamples[o]; k++)
			report_example(&examples[o][k]);
	}
	printf("unwind-ref: %lu unexplained\n", unexplained);
	return unexplained || contexts < want ? 1 : 0;
}
