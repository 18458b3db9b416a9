/* SPDX-License-Identifier: MIT */
/* t-input.c: input_open() opens regular files and refuses FIFOs, devices, sockets, directories. */
#include "compat.h"
#include "error.h"
#include "input.h"
#include "tap.h"
#include "xalloc.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char *path_in_tmp(const char *name)
{
	return xpath_join(tap_tmpdir(), name);
}

/* PATH is refused without a descriptor left open, by a message naming it and WHAT it is. */
static void refused(const char *path, const char *what)
{
	int before = dup(0);
	close(before);
	ok(input_open(path, NULL) < 0, "%s refused", what);
	like(fth_errmsg(), path, "%s: the message names the file", what);
	char want[128];
	snprintf(want, sizeof(want), "is a %s, not a regular file", what);
	like(fth_errmsg(), want, "%s: the message says what it is", what);
	int after = dup(0);
	close(after);
	is_int(after, before, "%s: no descriptor left open", what);
}

int main(void)
{
	/* A regression blocks in open(2): fail by the alarm instead of hanging the suite. */
	alarm(60);

	char *file = path_in_tmp("regular");
	FILE *f = fopen(file, "w");
	fputs("12345", f);
	fclose(f);
	struct stat st;
	int fd = input_open(file, &st);
	ok(fd >= 0, "a regular file opens");
	is_int((long long)st.st_size, 5, "its status is returned");
	int flags = fcntl(fd, F_GETFL);
	ok(flags >= 0 && !(flags & O_NONBLOCK), "the descriptor is blocking");
	ok(fcntl(fd, F_GETFD) & FD_CLOEXEC, "and close-on-exec");
	char buf[8];
	is_int(read(fd, buf, sizeof(buf)), 5, "and reads the file");
	close(fd);
	char *link = path_in_tmp("link");
	ok(symlink(file, link) == 0, "symbolic link made");
	fd = input_open(link, NULL);
	ok(fd >= 0, "a symbolic link to a regular file opens");
	close(fd);

	char *fifo = path_in_tmp("fifo");
	ok(mkfifo(fifo, 0600) == 0, "FIFO made");
	refused(fifo, "FIFO");
	char *fifo_link = path_in_tmp("fifo-link");
	ok(symlink(fifo, fifo_link) == 0, "symbolic link to the FIFO made");
	refused(fifo_link, "FIFO");
	refused(tap_tmpdir(), "directory");
	refused("/dev/null", "character device");

	char *sock = path_in_tmp("socket");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s >= 0 && strlen(sock) < sizeof(sa.sun_path)) {
		strcpy(sa.sun_path, sock);
		ok(bind(s, (struct sockaddr *)&sa, sizeof(sa)) == 0, "socket bound");
		refused(sock, "socket");
	} else {
		skip("no AF_UNIX socket here", "a socket is refused");
	}
	if (s >= 0)
		close(s);

	char *missing = path_in_tmp("missing");
	ok(input_open(missing, NULL) < 0, "a missing file is refused");
	like(fth_errmsg(), missing, "the message names it");
	like(fth_errmsg(), "cannot open: No such file or directory", "and says why");

	is_str(file_type_name(S_IFIFO), "FIFO", "type name of a FIFO");
	is_str(file_type_name(S_IFBLK), "block device", "of a block device");
	is_str(file_type_name(S_IFLNK), "symbolic link", "of a symbolic link");
	free(file);
	free(link);
	free(fifo);
	free(fifo_link);
	free(sock);
	free(missing);
	return done_testing();
}
