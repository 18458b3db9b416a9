/* SPDX-License-Identifier: MIT */
/*
 * rename-exchange.c: the attacker of tests/e2e/t0117-measure-file-safety.sh: swaps two names
 * of one directory with renameat2(RENAME_EXCHANGE) in a loop, so that a process that checks
 * one name and then uses it by path may find the other.
 *   rename-exchange A B READY STOP
 * Creates READY after the first exchange and stops when STOP exists; prints the number of
 * exchanges.  Exits 1 when the first exchange fails.
 */
#include "compat.h"
#include "error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	fth_progname = "rename-exchange";
	if (argc != 5)
		die(2, "usage: rename-exchange A B READY STOP");
	unsigned long long n = 0;
	for (;;) {
		if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) < 0)
			die(1, "%s and %s: cannot exchange: %s", argv[1], argv[2], strerror(errno));
		if (n++ == 0) {
			int fd = open(argv[3], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
			if (fd < 0)
				die(1, "%s: cannot create: %s", argv[3], strerror(errno));
			close(fd);
		}
		/* Looking for STOP costs a system call: every 64 exchanges is soon enough. */
		if (n % 64 == 0 && access(argv[4], F_OK) == 0)
			break;
	}
	printf("exchanges %llu\n", n);
	return 0;
}
