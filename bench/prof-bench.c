/* SPDX-License-Identifier: MIT */
/*
 * prof-bench.c: generates a large synthetic measurement directory through lib/ for prof's
 * benchmark: NTHREADS thread files that share one calling context tree of NODES nodes (as the
 * threads of one program do) with values that differ per thread, and with TRACE, a trace of
 * that many samples per thread (300 Hz, in phases over the tree's nodes).
 * bench/run-prof-bench.sh times prof on it.
 */
#include "compat.h"
#include "error.h"
#include "mfile.h"
#include "sample.h"
#include "xalloc.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct job {
	const char *dir;
	uint32_t nthreads, nodes;
	uint64_t trace; /* samples per thread's trace, or 0 */
	uint32_t next;
	pthread_mutex_t lock;
	int failed;
};

static int write_thread(const struct job *j, uint32_t t)
{
	struct mfile m;
	sample_mfile_large(&m, j->nodes, 42);
	m.id.tid = 5000 + t;
	m.id.thread_index = t;
	m.id.rank = -1;
	m.has_trace = j->trace > 0;
	m.ntrace = j->trace;
	m.trace = j->trace ? xcalloc(j->trace, sizeof(*m.trace)) : NULL;
	for (uint64_t i = 0, time = 0; i < j->trace; i++) {
		time += 3333333 + (i * 7919 + t) % 100000;
		uint64_t phase = (i / 3000 + t) % 97;
		m.trace[i].time_ns = time;
		m.trace[i].node = (uint32_t)(1 + (phase * 1031 + i % 17) % (m.cct.nnodes - 1));
	}
	/* Per-thread values: the same tree, weights that depend on the thread. */
	for (uint64_t v = 0; v < m.cct.nvalues; v++)
		m.cct.val[v] = m.cct.val[v] / 3333333 * (1000 + (t * 7919 + v * 104729) % 1000);
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench-host-4242-%u-%u.fthm", j->dir, t, 5000 + t);
	int rc = mfile_write(path, &m, 1);
	mfile_release(&m);
	return rc;
}

static void *worker(void *arg)
{
	struct job *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->lock);
		uint32_t t = j->next++;
		pthread_mutex_unlock(&j->lock);
		if (t >= j->nthreads)
			return NULL;
		if (write_thread(j, t) < 0) {
			fprintf(stderr, "prof-bench: %s\n", fth_errmsg());
			pthread_mutex_lock(&j->lock);
			j->failed = 1;
			pthread_mutex_unlock(&j->lock);
			return NULL;
		}
	}
}

int main(int argc, char **argv)
{
	fth_progname = "prof-bench";
	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: prof-bench DIR NTHREADS NODES [JOBS [TRACE]]\n"
				"Write NTHREADS measurement files of NODES nodes each into DIR (with a\n"
				"trace of TRACE samples each).\n");
		return 2;
	}
	struct job j = { .dir = argv[1], .nthreads = (uint32_t)strtoul(argv[2], NULL, 10),
			 .nodes = (uint32_t)strtoul(argv[3], NULL, 10) };
	int jobs = argc >= 5 ? atoi(argv[4]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
	j.trace = argc == 6 ? strtoull(argv[5], NULL, 10) : 0;
	if (j.nthreads == 0 || j.nodes < 2 || jobs < 1)
		die(2, "bad arguments");
	if (mkdir(j.dir, 0755) < 0 && errno != EEXIST)
		die(1, "%s: cannot create: %s", j.dir, strerror(errno));
	pthread_mutex_init(&j.lock, NULL);
	pthread_t *th = xcalloc((size_t)jobs, sizeof(*th));
	for (int i = 0; i < jobs; i++)
		if (pthread_create(&th[i], NULL, worker, &j) != 0)
			die(1, "cannot start a thread");
	for (int i = 0; i < jobs; i++)
		pthread_join(th[i], NULL);
	free(th);
	return j.failed;
}
