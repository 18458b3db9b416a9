/* SPDX-License-Identifier: MIT */
/*
 * log.c: the process's log, FILE_PREFIX.log in the output directory: created exclusively and
 * never through a link, reopened for each line (a program that closes every descriptor loses
 * nothing), shared with the images the process execs, and held back in a forked child until
 * it returns to the program.  Async-signal-safe: no malloc, no stdio, no locks.
 */
#include "compat.h"
#include "runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Lines held back (rt.held) while a forked child is still single-threaded, before it returns
 * to the program: its first lines then cost one open and write of the log instead of one
 * each.  Any other line, an error first of all, writes them before itself, so the order never
 * changes; rt_log_flush() writes them at the end of that phase.  (The constructor writes its
 * first line at once: the log is created before anything else of the process, which matters
 * on a disk with room for little more.  It keeps the log open, in kept_log_fd, until it has
 * written its last line, and closes it before the program starts or is sampled.)
 */
static int kept_log_fd = -1;

/*
 * Create the process's log, exclusively and never through a link: FILE_PREFIX.log, or
 * FILE_PREFIX.N.log when that name is taken (another user may have put a link or a file
 * there, in a sticky directory).  Records which file it is; a descriptor, or -1 (errors then
 * go to stderr, see rt_log; when every name is taken, no later line tries again).
 */
static int create_log(void)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		if (attempt)
			fth_format(rt.log_path, sizeof(rt.log_path), "%s.%d.log", rt.file_prefix,
				   attempt);
		else
			fth_format(rt.log_path, sizeof(rt.log_path), "%s.log", rt.file_prefix);
		int fd = open(rt.log_path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW |
						   O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST)
			continue;
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0) {
			rt.log_made = true;
			rt.log_dev = (uint64_t)st.st_dev;
			rt.log_ino = (uint64_t)st.st_ino;
			return fd;
		}
		if (fd >= 0)
			close(fd);
		return -1; /* no directory, no room, no descriptor left: the next line tries again */
	}
	rt.log_failed = true;
	return -1;
}

/*
 * The log, opened to append: the very file this process (or the image before it) created,
 * never through a link and never another file put at its name; when that file is gone, a new
 * one (*FRESH).  Opened for each write, so a program that closes every descriptor loses
 * nothing.
 */
static int open_log(bool *fresh)
{
	*fresh = false;
	if (rt.log_failed)
		return -1;
	if (rt.log_made) {
		int fd = open(rt.log_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 && errno != ENOENT && errno != ELOOP)
			return -1; /* out of descriptors, say: the log is still the one */
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_dev == rt.log_dev && (uint64_t)st.st_ino == rt.log_ino)
			return fd;
		if (fd >= 0)
			close(fd);
		rt.log_made = false; /* removed, or replaced: by a link, another file */
	}
	*fresh = true;
	return create_log();
}

void rt_log_keep_open(void)
{
	bool fresh;
	kept_log_fd = open_log(&fresh);
}

void rt_log_close_kept(void)
{
	int fd = kept_log_fd;
	kept_log_fd = -1;
	if (fd >= 0)
		close(fd);
}

/* Append TEXT (N bytes of whole lines) to the log; false when the log did not take it all. */
static bool log_append(const char *text, size_t n)
{
	if (kept_log_fd >= 0)
		return write(kept_log_fd, text, n) == (ssize_t)n;
	bool fresh;
	int fd = open_log(&fresh);
	if (fd < 0)
		return false;
	if (fresh && strncmp(text, "run ", 4)) {
		/* A log made in the middle of the process: its first line names the run all the
		 * same, so that the launcher reads it. */
		char line[sizeof(rt.run) + 8];
		size_t k = fth_format(line, sizeof(line), "run %s\n", rt.run);
		ssize_t w = write(fd, line, k < sizeof(line) ? k : sizeof(line) - 1);
		(void)w;
	}
	ssize_t w = write(fd, text, n);
	close(fd);
	return w == (ssize_t)n;
}

void rt_log_flush(void)
{
	rt.holding = false;
	if (!rt.nheld || !rt.log_path[0])
		return;
	log_append(rt.held, rt.nheld);
	rt.nheld = 0;
}

size_t rt_log_env(char *buf, size_t size)
{
	if (!rt.log_made)
		return 0;
	size_t n = fth_format(buf, size, "%s=%d:%llu:%llu:%s", MCONFIG_ENV_LOG, (int)rt.pid,
			      (unsigned long long)rt.log_dev, (unsigned long long)rt.log_ino,
			      rt.log_path);
	return n < size ? n : 0;
}

/*
 * The log of this process: an image exec'd by a measured one appends to the log its process
 * already has (MCONFIG_ENV_LOG names it, with the process's pid, which a forked or spawned
 * child does not share, and the file's device and inode, so that nothing else put at its name
 * is written), so that a fork and exec makes one log, not two: creating a file costs more than
 * a whole short-lived process's other writes.  Otherwise the log is created at its first line.
 */
void rt_log_set_path(bool forked)
{
	const char *env = forked ? NULL : getenv(MCONFIG_ENV_LOG);
	rt.log_made = rt.log_failed = false;
	fth_format(rt.log_path, sizeof(rt.log_path), "%s.log", rt.file_prefix);
	char *end;
	if (!env || strtol(env, &end, 10) != (long)rt.pid || *end != ':')
		return;
	unsigned long long dev = strtoull(end + 1, &end, 10);
	if (*end != ':')
		return;
	unsigned long long ino = strtoull(end + 1, &end, 10);
	if (*end != ':' || !end[1] || strlen(end + 1) >= sizeof(rt.log_path))
		return;
	memcpy(rt.log_path, end + 1, strlen(end + 1) + 1);
	rt.log_dev = dev;
	rt.log_ino = ino;
	rt.log_made = true;
}

void rt_log(const char *fmt, ...)
{
	if (!rt.log_path[0])
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	size_t n = fth_vformat(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = '\0'; /* the stderr copy below prints it with %s */
	bool error = !strncmp(line, "error: ", 7);
	bool warning = !strncmp(line, "warning: ", 9);
	if (rt.holding && !error && !warning && rt.nheld + n <= sizeof(rt.held)) {
		memcpy(rt.held + rt.nheld, line, n);
		rt.nheld += n;
		return;
	}
	if (rt.nheld) {
		log_append(rt.held, rt.nheld);
		rt.nheld = 0;
	}
	const char *path = rt.log_path;
	if (!log_append(line, n) && error) {
		/* The log itself could not take it (a full disk?): say it on stderr instead. */
		char msg[1100];
		size_t k = fth_format(msg, sizeof(msg), "measure: %s: %s", path, line);
		ssize_t w = write(2, msg, k < sizeof(msg) ? k : sizeof(msg) - 1);
		(void)w;
	}
}

/* The first line of a process log: which launcher run it belongs to. */
void rt_log_run(void)
{
	rt_log("run %s", rt.run);
}
