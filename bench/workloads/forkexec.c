/* SPDX-License-Identifier: MIT */
/* bench/workloads/forkexec.c - build-system-like driver: fork+exec a child
 * program COUNT times, one after another, waiting for each.
 * usage: forkexec [count=50] [child_work=100]
 * The child binary fe_child (fe_child_fp for forkexec_fp) is looked up
 * next to this executable.                                              */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <libgen.h>
#include "common.h"

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 50;
    const char *work = argc > 2 ? argv[2] : "100";
    char self[4096], child[4200];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len < 0)
        return 1;
    self[len] = 0;
    /* forkexec_fp runs fe_child_fp: same suffix as this executable */
    const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
    const char *suffix = strncmp(base, "forkexec", 8) == 0 ? base + 8 : "";
    char suf[64];
    snprintf(suf, sizeof(suf), "%s", suffix);
    snprintf(child, sizeof(child), "%s/fe_child%s", dirname(self), suf);
    double t0 = now_s();
    int failed = 0;
    for (int i = 0; i < count; i++) {
        char idx[16];
        snprintf(idx, sizeof(idx), "%d", i);
        pid_t pid = fork();
        if (pid == 0) {
            execl(child, child, work, idx, (char *)NULL);
            _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    printf("forkexec count=%d failed=%d\n", count, failed);
    report_elapsed(t0);
    return failed != 0;
}
