/* SPDX-License-Identifier: MIT */
/*
 * forkexec.c: a driver that forks and execs itself as a child N times (argv[1]), each child
 * spinning in child_work() for about 20 ms of CPU; also once through system() and through a
 * failed execvp before a successful one.  "forkexec workers": children forked from the main
 * thread and from another thread run forked_work() without an exec, while the parent goes on
 * in parent_work().  "forkexec failexec N": N execs that fail, while another thread works; the
 * descriptors open after the first and after the last, which must not differ.
 */
#include "burn.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) void child_work(double seconds)
{
	sink = burn_cpu(CLOCK_PROCESS_CPUTIME_ID, seconds, 10000);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void forked_work(double seconds)
{
	child_work(seconds);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays in the path */
}

__attribute__((noinline)) void parent_work(double seconds)
{
	child_work(seconds);
	__asm__ volatile("" ::: "memory"); /* no tail call: this frame stays in the path */
}

/* Fork a child that works 150 ms and exits 5; its pid. */
static pid_t fork_worker(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		forked_work(0.15);
		exit(5);
	}
	return pid;
}

static void *fork_from_thread(void *arg)
{
	*(pid_t *)arg = fork_worker();
	parent_work(0.05);
	return NULL;
}

static int workers(void)
{
	parent_work(0.1);
	pid_t from_thread = -1;
	pthread_t th;
	if (pthread_create(&th, NULL, fork_from_thread, &from_thread) != 0)
		return 1;
	pid_t from_main = fork_worker();
	parent_work(0.1);
	pthread_join(th, NULL);
	int fives = 0;
	pid_t pids[] = { from_main, from_thread };
	for (int i = 0; i < 2; i++) {
		int status;
		if (pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i] && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 5)
			fives++;
	}
	parent_work(0.1);
	printf("workers: %d of 2 children exited with 5\n", fives);
	return fives == 2 ? 0 : 1;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void *work_a_while(void *arg)
{
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE); /* measure started this thread before */
	child_work(0.1);
	return NULL;
}

/* N failed execs while another thread works: measure stops every thread before each exec and
 * goes on after it fails, without leaving a descriptor behind. */
static int failed_execs(int n)
{
	pthread_t th;
	int running = 0;
	if (pthread_create(&th, NULL, work_a_while, &running) != 0)
		return 1;
	while (!__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		sched_yield();
	char *const bad[] = { "no-such-program-here", NULL };
	execvp(bad[0], bad);
	int first = open_fds();
	for (int i = 1; i < n; i++)
		execvp(bad[0], bad);
	int last = open_fds();
	pthread_join(th, NULL);
	parent_work(0.1);
	printf("failexec: %d descriptors after the first failed exec, %d after %d\n", first, last,
	       n);
	return first == last && first > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "failexec"))
		return failed_execs(atoi(argv[2]));
	if (argc > 1 && !strcmp(argv[1], "workers"))
		return workers();
	if (argc > 1 && !strcmp(argv[1], "child")) {
		child_work(0.02);
		return 7;
	}
	int n = argc > 1 ? atoi(argv[1]) : 10;
	int sevens = 0;
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			char *const bad[] = { "no-such-program-here", NULL };
			execvp(bad[0], bad); /* fails: the program goes on unchanged */
			char *const args[] = { argv[0], "child", NULL };
			execv("/proc/self/exe", args);
			_exit(99);
		}
		int status;
		waitpid(pid, &status, 0);
		sevens += WIFEXITED(status) && WEXITSTATUS(status) == 7;
	}
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "'%s' child", argv[0]);
	int st = system(cmd);
	sevens += WIFEXITED(st) && WEXITSTATUS(st) == 7;
	printf("forkexec: %d of %d children exited with 7\n", sevens, n + 1);
	return sevens == n + 1 ? 0 : 1;
}
