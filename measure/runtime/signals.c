/* SPDX-License-Identifier: MIT */
/*
 * signals.c: keep the program's signals the program's own.
 *  - The measurement signal stays ours: sigaction() and signal() on it are recorded and
 *    answered as the program set them, and a signal the program sends itself with that number
 *    is passed to the handler the program installed.
 *  - Masks: blocking the measurement signal is quietly left out (so threads that block
 *    everything are still sampled); everything else the program asks for is honoured.
 *  - SIGTRAP, when perf events signal through it, is kept the same way: its perf traps are
 *    ours, others the program's.
 *  - Fatal signals (SIGSEGV, SIGABRT, SIGTERM, ...) that the program leaves at their default
 *    action are caught so that the profile is written first; then the default action happens,
 *    exit status and core dump included.  A program that installs its own handler gets it.
 */
#include "compat.h"
#include "runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

static sigaction_fn real_sigaction;
static sigmask_fn real_sigprocmask, real_pthread_sigmask;

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS,
				     SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGXCPU, SIGXFSZ };

/* What the program believes is installed, for the signals we took over. */
static struct sigaction program_action[_NSIG];
static bool ours[_NSIG];

static void resolve(void)
{
	if (!real_sigaction) {
		real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		real_sigprocmask = (sigmask_fn)dlsym(RTLD_NEXT, "sigprocmask");
		real_pthread_sigmask = (sigmask_fn)dlsym(RTLD_NEXT, "pthread_sigmask");
	}
}

int rt_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	resolve();
	return real_sigaction(sig, act, old);
}

/* The program sent itself the measurement signal: deliver it as it asked. */
bool rt_forward_program_signal(int sig, siginfo_t *info, void *uc)
{
	if (info->si_code != SI_USER && info->si_code != SI_QUEUE && info->si_code != SI_TKILL)
		return false; /* from a timer or a perf event: a sample */
	const struct sigaction *a = &program_action[sig];
	if (a->sa_flags & SA_SIGINFO) {
		if (a->sa_sigaction)
			a->sa_sigaction(sig, info, uc);
	} else if (a->sa_handler != SIG_IGN && a->sa_handler != SIG_DFL) {
		a->sa_handler(sig);
	}
	/* SIG_DFL of a real-time signal would end the process; a sample signal never should,
	 * so a stray one is dropped. */
	return true;
}

static void fatal_handler(int sig, siginfo_t *info, void *uc)
{
	(void)uc;
	char reason[32];
	fth_format(reason, sizeof(reason), "signal %d", sig);
	rt_finish_process(reason);
	/* Now the default action, as if measure had never been there. */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real_sigaction(sig, &dfl, NULL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	real_pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* A fault from the processor happens again when the instruction re-executes; a signal
	 * that was sent (raise, kill) must be sent again. */
	bool fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) &&
		     info->si_code > 0;
	if (!fault)
		raise(sig);
}

/*
 * When the user's queue of real-time signals is full, the kernel turns a perf event's signal
 * into a SIGIO with SI_KERNEL, whose default action would kill the program: take the sample
 * anyway when the thread has one sampling event (else re-arm and count a drop).  Any other
 * SIGIO is the program's.
 */
static void sigio_handler(int sig, siginfo_t *info, void *uc)
{
	int saved_errno = errno;
	if (info->si_code == SI_KERNEL && rt_sampler_overflow(uc)) {
		errno = saved_errno;
		return;
	}
	const struct sigaction *a = &program_action[sig];
	if ((a->sa_flags & SA_SIGINFO) && a->sa_sigaction) {
		a->sa_sigaction(sig, info, uc);
	} else if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler != SIG_IGN) {
		if (a->sa_handler != SIG_DFL) {
			a->sa_handler(sig);
		} else {
			/* The program's default: die of SIGIO, after writing the profile. */
			errno = saved_errno;
			fatal_handler(sig, info, uc);
			return;
		}
	}
	errno = saved_errno;
}

/*
 * Perf events with the sigtrap attribute (the sampling events where the kernel has it, and
 * BLOCKTIME's) send SIGTRAP with si_code TRAP_PERF, so SIGTRAP then stays ours like the
 * measurement signal: other traps go to the program's handler, or to its default action after
 * the profile is written.
 */
static bool trap_kept;

static void trap_handler(int sig, siginfo_t *info, void *uc)
{
	if (rt_sampler_trap(info, uc))
		return;
	const struct sigaction *a = &program_action[sig];
	if ((a->sa_flags & SA_SIGINFO) && a->sa_sigaction)
		a->sa_sigaction(sig, info, uc);
	else if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL)
		fatal_handler(sig, info, uc);
	else if (!(a->sa_flags & SA_SIGINFO) && a->sa_handler != SIG_IGN)
		a->sa_handler(sig);
}

static void keep_trap(void)
{
	struct sigaction old, sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART; /* never turn a restarted call into EINTR */
	sigfillset(&sa.sa_mask);
	if (real_sigaction(SIGTRAP, &sa, &old) < 0)
		return;
	if (!ours[SIGTRAP])
		program_action[SIGTRAP] = old; /* else it holds the default fatal_handler saw */
	ours[SIGTRAP] = true;
	trap_kept = true;
}

/* Whether OLD is the default action, which a handler of ours may replace. */
static bool is_default(const struct sigaction *old)
{
	return old->sa_handler == SIG_DFL && !(old->sa_flags & SA_SIGINFO);
}

/*
 * Install ACT for SIG if the program left SIG at its default action, which is then kept for
 * the program.  With signals BLOCKED, one call installs ours and returns the old action, and
 * an action that was not the default is put back: meanwhile a signal that comes is held, then
 * ignored or delivered to ours, as it would have been.
 */
static void take_if_default(int sig, const struct sigaction *act, bool blocked)
{
	struct sigaction old;
	if (!blocked) {
		if (real_sigaction(sig, NULL, &old) < 0 || !is_default(&old) ||
		    real_sigaction(sig, act, NULL) < 0)
			return; /* already handled or ignored (e.g. by the shell): leave it */
	} else if (real_sigaction(sig, act, &old) < 0) {
		return;
	} else if (!is_default(&old)) {
		real_sigaction(sig, &old, NULL);
		return;
	}
	program_action[sig] = old;
	ours[sig] = true;
}

int rt_signals_install(void)
{
	resolve();
	if (!real_sigaction || !real_sigprocmask || !real_pthread_sigmask)
		return fth_error("cannot find sigaction or the mask functions");
	/* Signals blocked: see take_if_default(). */
	sigset_t all, mask;
	sigfillset(&all);
	bool blocked = real_pthread_sigmask(SIG_BLOCK, &all, &mask) == 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fatal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	sigfillset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(fatal_signals); i++)
		take_if_default(fatal_signals[i], &sa, blocked);
	if (rt_sampler_traps())
		keep_trap();
	ours[rt.signo] = true;
	memset(&program_action[rt.signo], 0, sizeof(program_action[rt.signo]));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigio_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	take_if_default(SIGIO, &sa, blocked);
	if (blocked)
		real_pthread_sigmask(SIG_SETMASK, &mask, NULL);
	return 0;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	resolve();
	if (sig <= 0 || sig >= _NSIG || !ours[sig] || !rt.active)
		return real_sigaction(sig, act, old);
	struct sigaction prev = program_action[sig];
	if (act) {
		bool kept = sig == rt.signo || (sig == SIGTRAP && trap_kept);
		if (!kept && (act->sa_flags & SA_SIGINFO ? act->sa_sigaction != NULL
								 : act->sa_handler != SIG_DFL)) {
			/* The program handles (or ignores) it itself from now on. */
			if (real_sigaction(sig, act, NULL) < 0)
				return -1;
			ours[sig] = false;
		}
		program_action[sig] = *act;
	}
	if (old)
		*old = prev;
	return 0;
}

sighandler_t bsd_signal(int sig, sighandler_t handler);
sighandler_t sysv_signal(int sig, sighandler_t handler);

/* signal() and its variants do not go through sigaction's PLT entry in glibc. */
static sighandler_t set_handler(int sig, sighandler_t handler, int flags)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESTART);
}

EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
	return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER);
}

static const sigset_t *without_ours(int how, const sigset_t *set, sigset_t *copy)
{
	if (!set || !rt.active || how == SIG_UNBLOCK ||
	    !(sigismember(set, rt.signo) || (trap_kept && sigismember(set, SIGTRAP))))
		return set;
	*copy = *set;
	sigdelset(copy, rt.signo);
	if (trap_kept)
		sigdelset(copy, SIGTRAP); /* a blocked trap would arrive out of its context */
	return copy;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	sigset_t copy;
	return real_sigprocmask(how, without_ours(how, set, &copy), old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	resolve();
	sigset_t copy;
	return real_pthread_sigmask(how, without_ours(how, set, &copy), old);
}
