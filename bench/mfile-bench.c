/* SPDX-License-Identifier: MIT */
/*
 * mfile-bench.c: the measurement-file benchmark: write and read a 1,000,000-node file.
 *
 *   mfile-bench [--nodes N] [--runs R] [--dir DIR]
 *
 * Builds the generated tree of tests/helper/sample.c, writes it with mfile_write() at zstd
 * level 1 (what measure uses) and 3, and reads each file back with mfile_read().  Times are
 * the median of R runs (wall clock and CPU).  Every read runs in a forked child that resets its
 * peak RSS (writing 5 to /proc/self/clear_refs) just before mfile_read() and reports VmHWM minus
 * its RSS before the read: the peak memory of reading, result included.  The uncompressed size
 * is the sum of the raw sizes in the file's table of contents.  Targets: a read within 0.5 s
 * and within 4 times the uncompressed size of memory.
 */
#include "compat.h"
#include "bench-stats.h"
#include "chunkfile.h"
#include "error.h"
#include "mfile.h"
#include "sample.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TARGET_READ_SECONDS 0.5
#define TARGET_READ_MEMORY_FACTOR 4.0
#define MAX_RUNS 101

struct times {
	double wall, cpu; /* seconds */
};

struct level_result {
	int level;
	struct times write, read; /* medians */
	uint64_t file_size, raw_size;
	uint64_t peak; /* median peak memory of a read, bytes */
};

/* A "Name:   1234 kB" line of /proc/self/status, in bytes. */
static uint64_t status_kb(const char *name)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		die(1, "/proc/self/status: %s", strerror(errno));
	char line[256];
	size_t len = strlen(name);
	uint64_t kb = 0;
	bool found = false;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, name, len) && line[len] == ':') {
			kb = strtoull(line + len + 1, NULL, 10);
			found = true;
			break;
		}
	}
	fclose(f);
	if (!found)
		die(1, "/proc/self/status has no %s", name);
	return kb * 1024;
}

static void reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "5", 1) != 1)
		die(1, "cannot reset the peak RSS (/proc/self/clear_refs): %s", strerror(errno));
	close(fd);
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		die(1, "%s: %s", path, strerror(errno));
	return (uint64_t)st.st_size;
}

static uint64_t raw_size(const char *path)
{
	struct cf_reader r;
	if (cf_open(&r, path, MFILE_MAGIC, "fathom measurement file", MFILE_MAJOR) < 0)
		die(1, "%s", fth_errmsg());
	uint64_t sum = 0;
	for (uint32_t i = 0; i < r.nchunks; i++)
		sum += r.toc[i].raw;
	cf_close(&r);
	return sum;
}

static struct times time_write(const char *path, const struct mfile *m, int level)
{
	if (unlink(path) < 0 && errno != ENOENT)
		die(1, "%s: %s", path, strerror(errno));
	double w0 = bench_clock(CLOCK_MONOTONIC), c0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
	if (mfile_write(path, m, level) < 0)
		die(1, "%s", fth_errmsg());
	double c1 = bench_clock(CLOCK_PROCESS_CPUTIME_ID), w1 = bench_clock(CLOCK_MONOTONIC);
	return (struct times){ w1 - w0, c1 - c0 };
}

struct read_report {
	double wall, cpu;
	uint64_t peak, rss_before, hwm;
	uint32_t nnodes;
	uint64_t nvalues;
	char error[256];
};

/* Read PATH in a child process, so that its peak RSS belongs to this read alone. */
static struct read_report time_read(const char *path)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		die(1, "pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		die(1, "fork: %s", strerror(errno));
	if (pid == 0) {
		close(pfd[0]);
		struct read_report rep;
		memset(&rep, 0, sizeof(rep));
		reset_peak_rss();
		rep.rss_before = status_kb("VmRSS");
		double w0 = bench_clock(CLOCK_MONOTONIC), c0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
		struct mfile m;
		int rc = mfile_read(path, &m);
		double c1 = bench_clock(CLOCK_PROCESS_CPUTIME_ID), w1 = bench_clock(CLOCK_MONOTONIC);
		rep.hwm = status_kb("VmHWM");
		rep.peak = rep.hwm > rep.rss_before ? rep.hwm - rep.rss_before : 0;
		rep.wall = w1 - w0;
		rep.cpu = c1 - c0;
		if (rc < 0) {
			snprintf(rep.error, sizeof(rep.error), "%s", fth_errmsg());
		} else {
			rep.nnodes = m.cct.nnodes;
			rep.nvalues = m.cct.nvalues;
			mfile_release(&m);
		}
		_exit(write(pfd[1], &rep, sizeof(rep)) == (ssize_t)sizeof(rep) ? 0 : 1);
	}
	close(pfd[1]);
	struct read_report rep;
	ssize_t got = read(pfd[0], &rep, sizeof(rep));
	close(pfd[0]);
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    got != (ssize_t)sizeof(rep))
		die(1, "the reading child failed (status %#x)", status);
	if (rep.error[0])
		die(1, "%s", rep.error);
	return rep;
}

static void human(char *out, size_t size, double bytes)
{
	if (bytes >= 1024.0 * 1024)
		snprintf(out, size, "%.2f MiB", bytes / (1024.0 * 1024));
	else
		snprintf(out, size, "%.1f KiB", bytes / 1024.0);
}

static void usage(void)
{
	die(2, "usage: mfile-bench [--nodes N] [--runs R] [--dir DIR]");
}

int main(int argc, char **argv)
{
	fth_progname = "mfile-bench";
	unsigned long nnodes = 1000000, runs = 5;
	const char *dir = NULL;
	for (int i = 1; i < argc; i++) {
		char *end;
		if (!strcmp(argv[i], "--nodes") && i + 1 < argc) {
			nnodes = strtoul(argv[++i], &end, 10);
			if (*end || nnodes < 1 || nnodes > UINT32_MAX - 1)
				usage();
		} else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = strtoul(argv[++i], &end, 10);
			if (*end || runs < 1 || runs > MAX_RUNS)
				usage();
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			dir = argv[++i];
		} else {
			usage();
		}
	}
	char tmpl[4096];
	if (!dir) {
		const char *t = getenv("TMPDIR");
		snprintf(tmpl, sizeof(tmpl), "%s/mfile-bench.XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpl))
			die(1, "%s: %s", tmpl, strerror(errno));
	} else {
		snprintf(tmpl, sizeof(tmpl), "%s", dir);
	}

	static const int levels[] = { 1, 3 };
	struct level_result res[ARRAY_SIZE(levels)];
	char paths[ARRAY_SIZE(levels)][4200];
	double wall[MAX_RUNS], cpu[MAX_RUNS], peak[MAX_RUNS];

	printf("mfile-bench: %lu calling-context nodes, median of %lu runs, files in %s\n", nnodes,
	       runs, tmpl);
	struct mfile m;
	double g0 = bench_clock(CLOCK_MONOTONIC);
	sample_mfile_large(&m, (uint32_t)nnodes, 42);
	uint32_t want_nodes = m.cct.nnodes;
	uint64_t want_values = m.cct.nvalues;
	printf("  generated the tree in %.3f s: %u nodes, %llu values\n", bench_clock(CLOCK_MONOTONIC) - g0,
	       want_nodes, (unsigned long long)want_values);
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		res[l].level = levels[l];
		snprintf(paths[l], sizeof(paths[l]), "%s/bench-level%d.fmf", tmpl, levels[l]);
		for (unsigned long r = 0; r < runs; r++) {
			struct times t = time_write(paths[l], &m, levels[l]);
			wall[r] = t.wall;
			cpu[r] = t.cpu;
		}
		res[l].write.wall = bench_median(wall, (int)runs);
		res[l].write.cpu = bench_median(cpu, (int)runs);
		res[l].file_size = file_size(paths[l]);
		res[l].raw_size = raw_size(paths[l]);
	}
	/* Give the generated tree back to the system before the reading children fork. */
	mfile_release(&m);
	malloc_trim(0);
	uint64_t rss_before = 0;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		for (unsigned long r = 0; r < runs; r++) {
			struct read_report rep = time_read(paths[l]);
			if (rep.nnodes != want_nodes || rep.nvalues != want_values)
				die(1, "%s: read %u nodes and %llu values, wrote %u and %llu", paths[l],
				    rep.nnodes, (unsigned long long)rep.nvalues, want_nodes,
				    (unsigned long long)want_values);
			wall[r] = rep.wall;
			cpu[r] = rep.cpu;
			peak[r] = (double)rep.peak;
			rss_before = rep.rss_before;
		}
		res[l].read.wall = bench_median(wall, (int)runs);
		res[l].read.cpu = bench_median(cpu, (int)runs);
		res[l].peak = (uint64_t)bench_median(peak, (int)runs);
	}
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++)
		unlink(paths[l]);
	if (!dir)
		rmdir(tmpl);

	/* The arrays of struct mfile_cct that the result holds, for comparison with the peak. */
	double result_bytes = (double)want_nodes * (4 + 1 + 4 + 8 + 4) + 4 +
			      (double)want_values * (2 + 8);
	char a[32], b[32], c[32];
	printf("  reading children started at %.1f MiB RSS; the tree itself takes %.2f MiB\n\n",
	       (double)rss_before / (1024.0 * 1024), result_bytes / (1024.0 * 1024));
	printf("  %-5s | %-19s | %-19s | %-10s | %-12s | %-5s | %-10s\n", "", "write wall / cpu",
	       "read wall / cpu", "file", "uncompressed", "ratio", "read peak");
	printf("  ------+---------------------+---------------------+------------+--------------+"
	       "-------+-----------\n");
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		const struct level_result *x = &res[l];
		human(a, sizeof(a), (double)x->file_size);
		human(b, sizeof(b), (double)x->raw_size);
		human(c, sizeof(c), (double)x->peak);
		printf("  zstd%d | %7.3f s / %5.3f s | %7.3f s / %5.3f s | %10s | %12s | %5.2f | %10s\n",
		       x->level, x->write.wall, x->write.cpu, x->read.wall, x->read.cpu, a, b,
		       (double)x->raw_size / (double)x->file_size, c);
	}
	printf("\n  exact sizes:");
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++)
		printf(" zstd%d file %llu B, uncompressed %llu B, read peak %llu B%s", res[l].level,
		       (unsigned long long)res[l].file_size, (unsigned long long)res[l].raw_size,
		       (unsigned long long)res[l].peak, l + 1 < ARRAY_SIZE(levels) ? ";" : "\n");
	printf("\n  targets (measured / target; at most 1.00 meets it):\n");
	bool all_met = true;
	for (size_t l = 0; l < ARRAY_SIZE(levels); l++) {
		const struct level_result *x = &res[l];
		double t = x->read.wall / TARGET_READ_SECONDS;
		double mem_target = TARGET_READ_MEMORY_FACTOR * (double)x->raw_size;
		double mm = (double)x->peak / mem_target;
		human(a, sizeof(a), (double)x->peak);
		human(b, sizeof(b), mem_target);
		printf("  zstd%d  read time   %.3f s / %.3f s     = %.2f  %s\n", x->level, x->read.wall,
		       TARGET_READ_SECONDS, t, t <= 1 ? "met" : "MISSED");
		printf("  zstd%d  read memory %s / %s (4 x uncompressed) = %.2f  %s\n", x->level, a, b,
		       mm, mm <= 1 ? "met" : "MISSED");
		all_met = all_met && t <= 1 && mm <= 1;
	}
	printf("\nmfile-bench: %s\n", all_met ? "all targets met" : "some targets missed");
	return 0;
}
