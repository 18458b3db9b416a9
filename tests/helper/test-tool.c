/* SPDX-License-Identifier: MIT */
/*
 * test-tool: reach lib/ from shell tests.
 *   test-tool make-mfile [--stored] [--nodes N] OUT   write the sample measurement file
 *   test-tool read-mfile FILE                         read it; print "ok" or the error (exit 1)
 *   test-tool profile [-m METRIC] [-r FN]... FILE...   where the samples landed, by function:
 *       "total V", "complete V" (paths that reached the thread's outermost frame),
 *       "reach FN V" (complete paths through FN), "function FN V" (exclusive), and
 *       "depth MAX" (frames of the longest path)
 *   test-tool paths [-m METRIC] FILE...               every path with a value: "V fn fn*N ..."
 *       outermost first, a run of N frames of one function written fn*N, "PARTIAL" first
 *       when the path did not reach the outermost frame
 *   profile also prints "samples N" (the metric's samples) and "cpu NS" (the threads' CPU
 *       time, from their "cpu time ns" statistic), summed over the files
 *   test-tool no-perf CMD [ARG]...                    run CMD with perf_event_open(2)
 *       failing with EACCES (a seccomp filter), as where perf events are not permitted
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "sample.h"
#include "symbols.h"
#include "xalloc.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int make_mfile(int argc, char **argv)
{
	int level = 3;
	long nodes = 0;
	int i = 1;
	for (; i < argc - 1; i++) {
		if (!strcmp(argv[i], "--stored"))
			level = 0;
		else if (!strcmp(argv[i], "--nodes") && i + 1 < argc - 1)
			nodes = strtol(argv[++i], NULL, 10);
		else
			die(2, "make-mfile: unknown option %s", argv[i]);
	}
	if (i != argc - 1)
		die(2, "usage: test-tool make-mfile [--stored] [--nodes N] OUT");
	struct mfile m;
	if (nodes > 0)
		sample_mfile_large(&m, (uint32_t)nodes, 42);
	else
		sample_mfile(&m);
	int rc = mfile_write(argv[i], &m, level);
	mfile_release(&m);
	if (rc < 0)
		die(1, "%s", fth_errmsg());
	return 0;
}

static int read_mfile(int argc, char **argv)
{
	if (argc != 2)
		die(2, "usage: test-tool read-mfile FILE");
	struct mfile m;
	if (mfile_read(argv[1], &m) < 0) {
		printf("%s\n", fth_errmsg());
		return 1;
	}
	mfile_release(&m);
	printf("ok\n");
	return 0;
}

struct fn_total {
	char *name;
	uint64_t value;
};

static void add_fn(struct fn_total **v, size_t *n, size_t *cap, const char *name, uint64_t x)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*v)[i].name, name)) {
			(*v)[i].value += x;
			return;
		}
	ALLOC_GROW(*v, *n + 1, *cap);
	(*v)[*n].name = xstrdup(name);
	(*v)[(*n)++].value = x;
}

/* Node N's value of METRIC (exclusive), 0 when it has none. */
static uint64_t node_value(const struct mfile_cct *c, uint32_t n, unsigned metric)
{
	for (uint32_t k = c->val_start[n]; k < c->val_start[n + 1]; k++)
		if (c->val_metric[k] == metric)
			return c->val[k];
	return 0;
}

/* Measurement file PATH read into M, or the tool dies: its symbols. */
static struct symbols *read_with_symbols(const char *path, struct mfile *m)
{
	if (mfile_read(path, m) < 0)
		die(1, "%s", fth_errmsg());
	return symbols_load(m);
}

static int profile(int argc, char **argv)
{
	unsigned metric = 0;
	const char *reach[16];
	int nreach = 0, i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc)
			metric = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "-r") && i + 1 < argc && nreach < 16)
			reach[nreach++] = argv[++i];
		else
			die(2, "profile: bad option %s", argv[i]);
	}
	uint64_t total = 0, complete = 0, reached[16] = { 0 }, samples = 0, cpu = 0;
	uint32_t max_depth = 0;
	struct fn_total *fns = NULL;
	size_t nfns = 0, cap = 0;
	for (; i < argc; i++) {
		struct mfile m;
		struct symbols *syms = read_with_symbols(argv[i], &m);
		const struct mfile_cct *c = &m.cct;
		if (metric < m.nmetrics)
			samples += m.metrics[metric].samples;
		for (uint32_t k = 0; k < m.nstats; k++)
			if (!strcmp(m.stats[k].name, "cpu time ns"))
				cpu += m.stats[k].value;
		for (uint32_t n = 0; n < c->nnodes; n++) {
			uint64_t v = node_value(c, n, metric);
			if (!v)
				continue;
			total += v;
			add_fn(&fns, &nfns, &cap, symbols_node(syms, &m, n), v);
			bool is_complete = true, through[16] = { false };
			uint32_t depth = 0;
			for (uint32_t p = n; p != MFILE_NO_PARENT && p != 0; p = c->parent[p]) {
				if (c->kind[p] == MFILE_NODE_PARTIAL)
					is_complete = false;
				depth++;
				const char *fn = symbols_node(syms, &m, p);
				for (int r = 0; r < nreach; r++)
					through[r] |= !strcmp(fn, reach[r]);
			}
			if (depth > max_depth)
				max_depth = depth;
			if (is_complete)
				complete += v;
			for (int r = 0; r < nreach; r++)
				if (is_complete && through[r])
					reached[r] += v;
		}
		symbols_free(syms);
		mfile_release(&m);
	}
	printf("total %llu\ncomplete %llu\ndepth %u\nsamples %llu\ncpu %llu\n",
	       (unsigned long long)total, (unsigned long long)complete, max_depth,
	       (unsigned long long)samples, (unsigned long long)cpu);
	for (int r = 0; r < nreach; r++)
		printf("reach %s %llu\n", reach[r], (unsigned long long)reached[r]);
	for (size_t k = 0; k < nfns; k++) {
		printf("function %s %llu\n", fns[k].name, (unsigned long long)fns[k].value);
		free(fns[k].name);
	}
	free(fns);
	return 0;
}

static int paths(int argc, char **argv)
{
	unsigned metric = 0;
	int i = 1;
	if (i + 1 < argc && !strcmp(argv[i], "-m")) {
		metric = (unsigned)atoi(argv[i + 1]);
		i += 2;
	}
	for (; i < argc; i++) {
		struct mfile m;
		struct symbols *syms = read_with_symbols(argv[i], &m);
		const struct mfile_cct *c = &m.cct;
		uint32_t *chain = xmalloc((c->nnodes + 1) * sizeof(*chain));
		for (uint32_t n = 0; n < c->nnodes; n++) {
			uint64_t v = node_value(c, n, metric);
			if (!v)
				continue;
			uint32_t len = 0;
			for (uint32_t p = n; p != MFILE_NO_PARENT && p != 0 && len <= c->nnodes;
			     p = c->parent[p])
				chain[len++] = p;
			printf("%llu", (unsigned long long)v);
			const char *run = NULL;
			uint32_t count = 0;
			for (uint32_t k = len; k-- > 0;) {
				const char *fn = c->kind[chain[k]] == MFILE_NODE_PARTIAL
							 ? "PARTIAL"
							 : symbols_node(syms, &m, chain[k]);
				if (run && !strcmp(run, fn)) {
					count++;
					continue;
				}
				if (run)
					printf(count > 1 ? " %s*%u" : " %s", run, count);
				run = fn;
				count = 1;
			}
			if (run)
				printf(count > 1 ? " %s*%u" : " %s", run, count);
			printf("\n");
		}
		free(chain);
		symbols_free(syms);
		mfile_release(&m);
	}
	return 0;
}

/* Run ARGV[1..] with perf_event_open(2) refused (EACCES) by a seccomp filter. */
static int no_perf(int argc, char **argv)
{
	if (argc < 2)
		die(2, "usage: test-tool no-perf CMD [ARG]...");
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(filter) / sizeof(filter[0])), filter };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		die(2, "no-perf: cannot install the seccomp filter: %s", strerror(errno));
	execvp(argv[1], argv + 1);
	die(127, "no-perf: %s: %s", argv[1], strerror(errno));
}

int main(int argc, char **argv)
{
	fth_progname = "test-tool";
	if (argc < 2)
		die(2, "usage: test-tool make-mfile|read-mfile ...");
	if (!strcmp(argv[1], "make-mfile"))
		return make_mfile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "read-mfile"))
		return read_mfile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "profile"))
		return profile(argc - 1, argv + 1);
	if (!strcmp(argv[1], "paths"))
		return paths(argc - 1, argv + 1);
	if (!strcmp(argv[1], "no-perf"))
		return no_perf(argc - 1, argv + 1);
	die(2, "unknown command %s", argv[1]);
}
