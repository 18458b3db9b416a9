/* SPDX-License-Identifier: MIT */
/*
 * synchronous.c: known I/O and allocations from known functions, for the IO and MEMLEAK tests.
 *   synchronous io FILE        io_write writes 5000 bytes (write), io_fwrite 3000 (fwrite),
 *                              io_writev 2000 (writev), io_pwrite 1200 (pwrite64); then
 *                              io_pread reads 3000 (pread), io_fread 2500 (fread), io_readv
 *                              1500 (readv) of FILE
 *   synchronous leak N         leak_a leaks N blocks of 100 bytes (malloc), leak_b N of 300
 *                              (malloc 64, realloc to 300), freed_c allocates N of 1000
 *                              (calloc) and frees them all, aligned_d leaks N of 64
 *                              (posix_memalign, aligned_alloc, memalign alternately)
 *   synchronous threads N      4 threads: thread_write writes 1000 bytes N times to /dev/null,
 *                              thread_alloc allocates N blocks of 48 bytes that main frees
 *   synchronous fork           parent_write writes 700 bytes and parent_leak leaks 3 x 16; the
 *                              child of a fork: child_write 900 bytes, child_leak 10 x 64, then
 *                              it execs itself: exec_write 1100 bytes, exec_leak 5 x 32
 */
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEEP() __asm__ volatile("" ::: "memory")

static char buf[8192];
static void *volatile sink;

__attribute__((noinline)) void io_write(int fd)
{
	for (int i = 0; i < 5; i++) {
		if (write(fd, buf, 1000) != 1000)
			exit(3);
		KEEP();
	}
}

__attribute__((noinline)) void io_fwrite(FILE *f)
{
	for (int i = 0; i < 3; i++) {
		if (fwrite(buf, 100, 10, f) != 10)
			exit(3);
		KEEP();
	}
	fflush(f);
}

__attribute__((noinline)) void io_writev(int fd)
{
	struct iovec v[2] = { { buf, 300 }, { buf + 300, 200 } };
	for (int i = 0; i < 4; i++) {
		if (writev(fd, v, 2) != 500)
			exit(3);
		KEEP();
	}
}

__attribute__((noinline)) void io_pwrite(int fd)
{
	for (int i = 0; i < 2; i++) {
		if (pwrite(fd, buf, 600, 10000 + 600 * i) != 600)
			exit(3);
		KEEP();
	}
}

__attribute__((noinline)) void io_pread(int fd)
{
	for (int i = 0; i < 3; i++) {
		if (pread(fd, buf, 1000, 1000 * i) != 1000)
			exit(3);
		KEEP();
	}
}

__attribute__((noinline)) void io_fread(FILE *f)
{
	if (fread(buf, 1, 2500, f) != 2500)
		exit(3);
	KEEP();
}

__attribute__((noinline)) void io_readv(int fd)
{
	struct iovec v[2] = { { buf, 700 }, { buf + 700, 800 } };
	if (readv(fd, v, 2) != 1500)
		exit(3);
	KEEP();
}

static int run_io(const char *path)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	FILE *f = fd < 0 ? NULL : fdopen(dup(fd), "r+");
	if (!f)
		return 2;
	io_write(fd);
	io_fwrite(f);
	io_writev(fd);
	io_pwrite(fd);
	io_pread(fd);
	rewind(f);
	io_fread(f);
	lseek(fd, 0, SEEK_SET);
	io_readv(fd);
	fclose(f);
	close(fd);
	return 0;
}

__attribute__((noinline)) void leak_a(void **keep, int n)
{
	for (int i = 0; i < n; i++) {
		keep[i] = malloc(100);
		KEEP();
	}
}

__attribute__((noinline)) void leak_b(void **keep, int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(64);
		KEEP();
		p = realloc(p, 300);
		KEEP();
		keep[i] = p;
	}
}

__attribute__((noinline)) void freed_c(void **keep, int n)
{
	for (int i = 0; i < n; i++) {
		keep[i] = calloc(10, 100);
		KEEP();
	}
	for (int i = 0; i < n; i++)
		free(keep[i]);
}

__attribute__((noinline)) void aligned_d(void **keep, int n)
{
	for (int i = 0; i < n; i++) {
		if (i % 3 == 0 && posix_memalign(&keep[i], 64, 64) != 0)
			exit(3);
		if (i % 3 == 1)
			keep[i] = aligned_alloc(64, 64);
		if (i % 3 == 2)
			keep[i] = memalign(64, 64);
		KEEP();
	}
}

static int run_leak(int n)
{
	void **a = calloc((size_t)n, sizeof(void *)), **b = calloc((size_t)n, sizeof(void *));
	void **c = calloc((size_t)n, sizeof(void *)), **d = calloc((size_t)n, sizeof(void *));
	if (!a || !b || !c || !d)
		return 2;
	leak_a(a, n);
	leak_b(b, n);
	freed_c(c, n);
	aligned_d(d, n);
	sink = a;
	sink = b;
	sink = d;
	free(c);
	return 0;
}

struct job {
	int n;
	void **blocks;
};

__attribute__((noinline)) void thread_write(int fd, int n)
{
	for (int i = 0; i < n; i++) {
		if (write(fd, buf, 1000) != 1000)
			exit(3);
		KEEP();
	}
}

__attribute__((noinline)) void thread_alloc(struct job *j)
{
	for (int i = 0; i < j->n; i++) {
		j->blocks[i] = malloc(48);
		KEEP();
	}
}

static void *worker(void *arg)
{
	struct job *j = arg;
	int fd = open("/dev/null", O_WRONLY);
	thread_write(fd, j->n);
	close(fd);
	thread_alloc(j);
	return NULL;
}

static int run_threads(int n)
{
	pthread_t tid[4];
	struct job jobs[4];
	for (int i = 0; i < 4; i++) {
		jobs[i].n = n;
		jobs[i].blocks = calloc((size_t)n, sizeof(void *));
		if (!jobs[i].blocks || pthread_create(&tid[i], NULL, worker, &jobs[i]) != 0)
			return 2;
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(tid[i], NULL);
		for (int k = 0; k < n; k++)
			free(jobs[i].blocks[k]);
		free(jobs[i].blocks);
	}
	return 0;
}

/*
 * The parent's, the child's and the exec'ed program's own calls, each function named for who
 * makes it (the tests look for them): NAME_write writes BYTES of buf to fd, NAME_leak
 * allocates COUNT blocks of SIZE bytes and never frees them.
 */
#define WRITE_AND_LEAK(name, bytes, count, size)                         \
	__attribute__((noinline)) void name##_write(int fd)              \
	{                                                                \
		if (write(fd, buf, bytes) != bytes)                      \
			exit(3);                                         \
		KEEP();                                                  \
	}                                                                \
	__attribute__((noinline)) void name##_leak(void)                 \
	{                                                                \
		for (int i = 0; i < count; i++) {                        \
			sink = malloc(size);                             \
			KEEP();                                          \
		}                                                        \
	}
WRITE_AND_LEAK(parent, 700, 3, 16)
WRITE_AND_LEAK(child, 900, 10, 64)
WRITE_AND_LEAK(exec, 1100, 5, 32)

static int run_fork(const char *self)
{
	int fd = open("/dev/null", O_WRONLY);
	parent_write(fd);
	parent_leak();
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		child_write(fd);
		child_leak();
		char *const args[] = { (char *)self, "exec", NULL };
		execv("/proc/self/exe", args);
		_exit(98);
	}
	int status;
	waitpid(pid, &status, 0);
	close(fd);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "io") && argc > 2)
		return run_io(argv[2]);
	if (!strcmp(mode, "leak") && argc > 2)
		return run_leak(atoi(argv[2]));
	if (!strcmp(mode, "threads") && argc > 2)
		return run_threads(atoi(argv[2]));
	if (!strcmp(mode, "fork"))
		return run_fork(argv[0]);
	if (!strcmp(mode, "exec")) {
		int fd = open("/dev/null", O_WRONLY);
		exec_write(fd);
		exec_leak();
		return 0;
	}
	fprintf(stderr, "usage: synchronous io FILE | leak N | threads N | fork\n");
	return 2;
}
