/* SPDX-License-Identifier: MIT */
/*
 * writer.c: write one thread's measurement file through lib/mfile's streaming writer, with
 * a workspace from mmap: no malloc, no stdio, so it is safe at any exit path.  The file name
 * is OUTDIR/PROGRAM-HOST-PID-INDEX-TID.fthm, created with O_EXCL | O_NOFOLLOW.
 */
#include "compat.h"
#include "formula.h"
#include "loadmap.h"
#include "runtime.h"
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define COMPRESSION_LEVEL 1
#define SMALL_TREE_NODES 1024 /* at most this many nodes and trace records: stored */
#define SMALL_TRACE 1024
#define METRIC_DESCRIPTION 160
#define SMALL_METRICS 4 /* a metric table of at most this many metrics is on the stack */

void rt_describe_every_event(struct mfile_metric *x)
{
	x->rate_kind = MFILE_RATE_NONE;
	x->rate = 0;
	x->flags &= ~(uint32_t)MFILE_METRIC_PROXY;
}

static int write_chunks(struct mfile_writer *w, struct mthread *t)
{
	const struct mconfig *c = &rt.cfg;
	struct mfile_identity id;
	memset(&id, 0, sizeof(id));
	id.host = rt.host;
	id.cpu = rt.cpu;
	id.pid = (uint32_t)rt.pid;
	id.ppid = (uint32_t)getppid();
	id.tid = (uint32_t)t->tid;
	id.rank = rt.rank;
	id.thread_index = t->index;
	id.parent_thread = t->parent_index;
	id.program = rt.program;
	id.cwd = rt.cwd;
	id.argc = rt.argc;
	id.argv = rt.argv;
	id.start_ns = t->start_ns;
	id.end_ns = t->end_ns;
	id.end_reason = t->end_reason;
	struct mfile_frame creation[ARRAY_SIZE(t->creation)];
	for (uint32_t i = 0; i < t->ncreation; i++) {
		creation[i].module = t->creation[i].module;
		creation[i].offset = t->creation[i].offset;
	}
	id.ncreation = t->ncreation;
	id.creation = creation;
	id.name = t->name;
	id.has_entry = t->has_entry;
	id.entry = (struct mfile_frame){ t->entry.module, t->entry.offset };
	if (mfile_write_identity(w, &id) < 0)
		return -1;

	/* Load map: every module ever seen, in id order, one record at a time. */
	uint32_t nmod = loadmap_count();
	if (mfile_write_loadmap_begin(w, nmod) < 0)
		return -1;
	for (uint32_t i = 0; i < nmod; i++) {
		const struct lm_module *m = loadmap_get(i);
		struct mfile_module mod = {
			.path = m->path, .build_id = (uint8_t *)m->build_id,
			.build_id_len = m->build_id_len, .load_ns = m->load_ns,
			.unload_ns = m->unload_ns, .base = m->bias, .nranges = m->nranges,
			.ranges = (struct mfile_range *)m->ranges,
		};
		if (mfile_write_module(w, &mod) < 0)
			return -1;
	}
	if (mfile_write_loadmap_end(w) < 0)
		return -1;

	/*
	 * Counters, then the TMA nodes computed from them; the table lives on the stack when it
	 * is small (the usual few events), else in mmap'ed memory.
	 */
	uint32_t nm = (uint32_t)(c->nevents + c->ntma);
	size_t bytes = (size_t)nm * (sizeof(struct mfile_metric) + METRIC_DESCRIPTION);
	_Alignas(struct mfile_metric) uint8_t small[SMALL_METRICS *
						   (sizeof(struct mfile_metric) + METRIC_DESCRIPTION)];
	bool mapped = bytes > sizeof(small);
	void *mem = mapped ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0)
			   : small;
	if (mem == MAP_FAILED)
		return fth_error_errno(errno, "no memory for the metric table");
	struct mfile_metric *metrics = mem;
	char(*descriptions)[METRIC_DESCRIPTION] = (void *)(metrics + nm);
	for (int i = 0; i < c->nevents; i++) {
		const struct mevent *e = &c->ev[i];
		struct mfile_metric *x = &metrics[i];
		memset(x, 0, sizeof(*x));
		x->name = (char *)e->name;
		x->description = descriptions[i];
		x->unit = e->unit;
		x->rate_kind = !e->sampling ? MFILE_RATE_NONE
			       : e->freq    ? MFILE_RATE_FREQUENCY
					    : MFILE_RATE_PERIOD;
		x->rate = e->sampling ? e->rate : 0;
		x->flags = (e->sampling ? 0 : MFILE_METRIC_PROXY) |
			   (e->precise ? MFILE_METRIC_PRECISE : 0) |
			   (t->running[i] < t->enabled[i] ? MFILE_METRIC_MULTIPLEXED : 0);
		rt_source_of(i)->describe(e, x, descriptions[i], sizeof(descriptions[i]));
		x->time_enabled = t->enabled[i];
		x->time_running = t->running[i];
		x->samples = t->samples[i];
		x->parent = -1;
		x->threshold = NAN;
		x->formula = (char *)"";
	}
	for (int j = 0; j < c->ntma; j++) {
		const struct mtma_node *n = &c->tma[j];
		struct mfile_metric *x = &metrics[c->nevents + j];
		memset(x, 0, sizeof(*x));
		x->name = (char *)n->name;
		x->description = (char *)c->tma_text + n->description;
		x->unit = MFILE_UNIT_COUNT;
		x->rate_kind = MFILE_RATE_NONE;
		x->flags = MFILE_METRIC_TMA;
		/* Multiplexed when a counter it reads directly was. */
		const char *f = c->tma_text + n->formula;
		uint32_t k;
		const char *end;
		for (const char *s = formula_next_ref(f, &k, &end); s;
		     s = formula_next_ref(end, &k, &end))
			if (k < (unsigned)c->nevents && t->running[k] < t->enabled[k])
				x->flags |= MFILE_METRIC_MULTIPLEXED;
		x->parent = n->parent;
		x->level = n->level;
		if (n->of_cycles)
			x->flags |= MFILE_METRIC_OF_CYCLES;
		x->threshold = n->threshold_ppm < 0 ? NAN : n->threshold_ppm / 1e6;
		x->formula = (char *)f;
	}
	int rc = mfile_write_metrics(w, metrics, nm);
	if (mapped)
		munmap(mem, bytes);
	if (rc < 0)
		return -1;

	struct cct *tree = &t->cct;
	if (!t->tree_ready) {
		/* Never sampled, so never made: the tree is its root alone. */
		if (mfile_write_cct_begin(w, 1, 0) < 0 ||
		    mfile_write_node(w, MFILE_NO_PARENT, MFILE_NODE_ROOT, MFILE_NO_MODULE, 0, 0, NULL,
				     NULL) < 0)
			return -1;
	} else if (mfile_write_cct_begin(w, tree->nnodes, tree->nvalues) < 0) {
		return -1;
	}
	for (uint32_t id_ = 0; id_ < tree->nnodes; id_++) {
		const struct cct_node *n = cct_node(tree, id_);
		uint16_t mi[MCONFIG_MAX_EVENTS];
		uint64_t mv[MCONFIG_MAX_EVENTS];
		uint32_t nv = 0;
		for (unsigned k = 0; k < tree->nmetrics; k++)
			if (n->values[k]) {
				mi[nv] = (uint16_t)k;
				mv[nv++] = n->values[k];
			}
		if (mfile_write_node(w, n->parent, n->kind, n->module, n->offset, nv, mi, mv) < 0)
			return -1;
	}
	if (mfile_write_cct_end(w) < 0)
		return -1;
	if (c->flags & MCONFIG_TRACE) {
		if (mfile_write_trace_begin(w, t->ntrace) < 0)
			return -1;
		for (struct rt_trace_chunk *ch = t->trace_head; ch; ch = ch->next)
			for (uint32_t i = 0; i < ch->n; i++)
				if (mfile_write_trace_record(w, ch->rec[i].time_ns, ch->rec[i].node) < 0)
					return -1;
		if (mfile_write_trace_end(w) < 0)
			return -1;
	}
	static const char *const drop_names[] = {
#define X(e, n) n,
		RT_DROPS(X)
#undef X
	};
	struct mfile_stat stats[5 + RT_DROP_COUNT];
	uint32_t ns = 0;
	stats[ns++] = (struct mfile_stat){ (char *)"samples taken", t->taken };
	stats[ns++] = (struct mfile_stat){ (char *)"samples recorded", t->recorded };
	stats[ns++] = (struct mfile_stat){ (char *)"partial unwinds", t->partial };
	stats[ns++] = (struct mfile_stat){ (char *)"cpu time ns", t->cpu_ns };
	stats[ns++] = (struct mfile_stat){ (char *)"measurement memory bytes", arena_mapped(&t->arena) };
	for (int i = 0; i < RT_DROP_COUNT; i++)
		stats[ns++] = (struct mfile_stat){ (char *)drop_names[i], t->drops[i] };
	if (mfile_write_stats(w, stats, ns) < 0)
		return -1;
	return mfile_writer_finish(w);
}

/*
 * One descriptor is kept in reserve (a high-numbered /dev/null) so that a thread can still
 * write its file when the program has used up every descriptor: the writer that meets EMFILE
 * takes the reserve, frees its number for the file, and puts it back afterwards.
 */
static int reserve_fd = -1;
static int reserve_busy;

void rt_writer_reserve_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
	close(fd);
	reserve_fd = high;
	rt_fd_own(high, true);
}

void rt_writer_fd_moved(int oldfd, int newfd)
{
	if (reserve_fd == oldfd)
		reserve_fd = newfd;
}

static int open_with_reserve(const char *path)
{
	while (__atomic_exchange_n(&reserve_busy, 1, __ATOMIC_ACQUIRE))
		sched_yield();
	int fd = -1;
	if (reserve_fd >= 0) {
		rt_close(reserve_fd);
		reserve_fd = -1;
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		int err = errno;
		int again = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (again >= 0) {
			reserve_fd = again;
			rt_fd_own(again, true);
		}
		errno = err;
	} else {
		errno = EMFILE;
	}
	__atomic_store_n(&reserve_busy, 0, __ATOMIC_RELEASE);
	return fd;
}

/*
 * The workspace of the last stored profile, kept for the next one: most files are stored (a
 * short process, a thread that did little), and unmapping costs a process more than its file's
 * write (a TLB flush the hypervisor sees).  It is never unmapped; exit and exec drop it.
 */
static void *stored_workspace;

int rt_write_thread(struct mthread *t)
{
	char path[4096 + 64];
	int fd = -1;
	for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
		if (attempt)
			fth_format(path, sizeof(path), "%s-%u-%d.%d.fthm", rt.file_prefix, t->index,
				   t->tid, attempt);
		else
			fth_format(path, sizeof(path), "%s-%u-%d.fthm", rt.file_prefix, t->index,
				   t->tid);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EMFILE)
			fd = open_with_reserve(path);
		if (fd < 0 && errno != EEXIST)
			return fth_error_errno(errno, "%s: cannot create", path);
	}
	if (fd < 0)
		return fth_error("%s: no free file name", path);
	/*
	 * A small profile (a short process, the moment between a fork and its exec) is stored:
	 * compressing it saves a few kilobytes, and the compressor's tables would cost more to
	 * set up (hundreds of page faults) than the whole process did.
	 */
	int level = t->cct.nnodes <= SMALL_TREE_NODES && t->ntrace <= SMALL_TRACE ? 0
										 : COMPRESSION_LEVEL;
	size_t size = mfile_writer_workspace_size(level);
	void *ws = level ? NULL : __atomic_exchange_n(&stored_workspace, NULL, __ATOMIC_ACQUIRE);
	if (!ws) {
		ws = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (ws == MAP_FAILED) {
			close(fd);
			unlink(path);
			return fth_error_errno(errno, "%s: no memory for the writer", path);
		}
		arena_prefault(ws, level ? size : 8192); /* a stored profile fills a page or two */
	}
	struct mfile_writer w;
	int rc = mfile_writer_open(&w, fd, path, level, ws, size);
	if (rc == 0)
		rc = write_chunks(&w, t);
	void *none = NULL;
	if (level || !__atomic_compare_exchange_n(&stored_workspace, &none, ws, false,
						  __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		munmap(ws, size);
	if (close(fd) < 0 && rc == 0)
		rc = fth_error_errno(errno, "%s: close failed", path);
	if (rc < 0)
		unlink(path); /* a partial file would only be refused later */
	return rc;
}
