/* SPDX-License-Identifier: MIT */
/*
 * forkexec.c: a driver that forks and execs itself as a child N times (argv[1]), each child
 * spinning in child_work() for about 20 ms of CPU; also once through system() and through a
 * failed execvp before a successful one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

__attribute__((noinline)) void child_work(double seconds)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	double end = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 + seconds, now, x = 1;
	do {
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	} while (now < end);
	sink = x;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
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
