/* SPDX-License-Identifier: MIT */
/*
 * lifecycle.c: the things real programs do that a profiler must survive, one per command:
 *   signals     its own ITIMER_PROF handler, a handler on measure's signal number (raised by
 *               itself), a sigaction query, and a thread that blocks every signal
 *   longjmp     leave its own SIGALRM handler with siglongjmp, many times
 *   eintr       slow read() on a pipe while samples arrive: no spurious EINTR
 *   traps       its own SIGTRAP handler gets the 50 traps it raises while samples arrive
 *   trap        die of SIGTRAP (its default action)
 *   segv|abort|fpe   die of that signal
 *   thread-exit exit(3) from a second thread;  thread-_exit  _exit(2) from a second thread
 *   closefds    close every descriptor at start, dup2 over low ones, then work
 *   c11         a C11 thread
 *   many N      N threads at once, then 400 short-lived ones
 *   spawn       vfork+exec, posix_spawn, and a child run with an empty environment
 * Each prints "lifecycle CMD: ok" when it finishes normally.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <spawn.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <threads.h>
#include <unistd.h>

static volatile double sink;
static volatile sig_atomic_t prof_count, rt_count;
static sigjmp_buf jump;

__attribute__((noinline)) static void spin(long n)
{
	double x = 1;
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}

static void on_prof(int s) { (void)s; prof_count++; }
static void on_rt(int s) { (void)s; rt_count++; }
static void on_alarm(int s) { (void)s; siglongjmp(jump, 1); }

static void *blocked_worker(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	spin(150000000);
	return NULL;
}

static int cmd_signals(void)
{
	signal(SIGPROF, on_prof);
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };
	setitimer(ITIMER_PROF, &it, NULL);
	int rt = SIGRTMIN + 4;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_rt;
	if (sigaction(rt, &sa, NULL) < 0 || sigaction(rt, NULL, &old) < 0 || old.sa_handler != on_rt)
		return printf("sigaction query does not return the handler set\n"), 1;
	raise(rt);
	raise(rt);
	pthread_t t;
	pthread_create(&t, NULL, blocked_worker, NULL);
	pthread_join(t, NULL);
	spin(50000000);
	if (rt_count != 2)
		return printf("own real-time handler ran %d times, not 2\n", (int)rt_count), 1;
	if (prof_count < 20)
		return printf("own ITIMER_PROF handler ran only %d times\n", (int)prof_count), 1;
	return 0;
}

static int cmd_longjmp(void)
{
	signal(SIGALRM, on_alarm);
	int jumps = 0;
	for (int i = 0; i < 20; i++) {
		if (sigsetjmp(jump, 1) == 0) {
			struct itimerval it = { { 0, 0 }, { 0, 10000 } };
			setitimer(ITIMER_REAL, &it, NULL);
			for (;;)
				spin(1000);
		}
		jumps++;
	}
	return jumps == 20 ? 0 : 1;
}

static volatile sig_atomic_t trap_count;

static void on_trap(int sig)
{
	(void)sig;
	trap_count++;
}

static int cmd_traps(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_trap;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, NULL) != 0)
		return 1;
	for (int i = 0; i < 50; i++) {
		spin(2000000);
		raise(SIGTRAP);
	}
	struct sigaction now;
	if (sigaction(SIGTRAP, NULL, &now) != 0 || now.sa_handler != on_trap)
		return 1;
	printf("traps: %d\n", (int)trap_count);
	return trap_count == 50 ? 0 : 1;
}

static int cmd_eintr(void)
{
	int p[2];
	if (pipe(p) < 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		usleep(300000);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		_exit(0);
	}
	char c;
	ssize_t n = read(p[0], &c, 1); /* blocks 300 ms while REALTIME samples arrive */
	if (n != 1)
		return printf("read returned %zd: %s\n", n, strerror(errno)), 1;
	return 0;
}

static void *exit_from_thread(void *arg)
{
	spin(50000000);
	if (arg)
		_exit(3);
	exit(4);
}

static int c11_work(void *arg)
{
	(void)arg;
	spin(80000000);
	return 5;
}

static void *short_lived(void *arg)
{
	(void)arg;
	spin(100000);
	return NULL;
}

static int cmd_many(int n)
{
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, short_lived, NULL) != 0)
			return printf("pthread_create %d failed\n", i), 1;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 400; i++) {
		pthread_t s;
		if (pthread_create(&s, NULL, short_lived, NULL) != 0)
			return 1;
		pthread_join(s, NULL);
	}
	free(t);
	return 0;
}

static int wait_status(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cmd_spawn(char **argv0)
{
	extern char **environ;
	(void)argv0;
	pid_t pid = vfork();
	if (pid == 0) {
		char *const args[] = { "sh", "-c", "exit 11", NULL };
		execv("/bin/sh", args);
		_exit(99);
	}
	if (wait_status(pid) != 11)
		return printf("vfork+exec child did not exit 11\n"), 1;
	char *const args2[] = { "sh", "-c", "exit 12", NULL };
	if (posix_spawn(&pid, "/bin/sh", NULL, NULL, args2, environ) != 0 || wait_status(pid) != 12)
		return printf("posix_spawn child did not exit 12\n"), 1;
	char *const empty[] = { NULL };
	char *const args3[] = { "sh", "-c", "test -z \"$LD_PRELOAD$FATHOM_EVENTS\" && exit 13", NULL };
	pid = fork();
	if (pid == 0) {
		execve("/bin/sh", args3, empty);
		_exit(99);
	}
	if (wait_status(pid) != 13)
		return printf("child with an empty environment did not exit 13\n"), 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : "";
	int rc = 2;
	if (!strcmp(cmd, "signals"))
		rc = cmd_signals();
	else if (!strcmp(cmd, "longjmp"))
		rc = cmd_longjmp();
	else if (!strcmp(cmd, "eintr"))
		rc = cmd_eintr();
	else if (!strcmp(cmd, "segv")) {
		spin(50000000);
		*(volatile int *)0 = 1;
	} else if (!strcmp(cmd, "abort")) {
		spin(50000000);
		abort();
	} else if (!strcmp(cmd, "traps")) {
		rc = cmd_traps();
	} else if (!strcmp(cmd, "trap")) {
		spin(50000000);
		raise(SIGTRAP);
	} else if (!strcmp(cmd, "fpe")) {
		spin(50000000);
		raise(SIGFPE);
	} else if (!strcmp(cmd, "thread-exit") || !strcmp(cmd, "thread-_exit")) {
		pthread_t t;
		pthread_create(&t, NULL, exit_from_thread, cmd[7] == '_' ? (void *)1 : NULL);
		for (;;)
			spin(1000000);
	} else if (!strcmp(cmd, "closefds")) {
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
		spin(100000000);
		rc = 0; /* stdout is closed: nothing to print */
		return rc;
	} else if (!strcmp(cmd, "c11")) {
		thrd_t t;
		int res = 0;
		if (thrd_create(&t, c11_work, NULL) != thrd_success || thrd_join(t, &res) != thrd_success)
			return 1;
		rc = res == 5 ? 0 : 1;
	} else if (!strcmp(cmd, "spawn")) {
		rc = cmd_spawn(argv);
	} else if (!strcmp(cmd, "many")) {
		rc = cmd_many(argc > 2 ? atoi(argv[2]) : 1000);
	}
	if (rc == 0)
		printf("lifecycle %s: ok\n", cmd);
	return rc;
}
