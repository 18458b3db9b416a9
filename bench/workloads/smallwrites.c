/* SPDX-License-Identifier: MIT */
/* bench/workloads/smallwrites.c - many small writes.
 * usage: smallwrites [count=1000000] [path=/dev/null]
 * Writes COUNT records of 32 bytes to PATH with write(2), from two call sites in turn. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "common.h"

static char rec[32] = "0123456789abcdef0123456789abcde\n";

__attribute__((noinline)) long put_even(int fd) { return write(fd, rec, sizeof(rec)); }
__attribute__((noinline)) long put_odd(int fd) { return write(fd, rec, sizeof(rec)); }

int main(int argc, char **argv)
{
    long count = argc > 1 ? atol(argv[1]) : 1000000;
    const char *path = argc > 2 ? argv[2] : "/dev/null";
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return 2;
    double t0 = now_s();
    long bytes = 0;
    for (long i = 0; i < count; i++)
        bytes += (i & 1) ? put_odd(fd) : put_even(fd);
    close(fd);
    printf("smallwrites: %ld writes, %ld bytes\n", count, bytes);
    report_elapsed(t0);
    return bytes == count * (long)sizeof(rec) ? 0 : 1;
}
