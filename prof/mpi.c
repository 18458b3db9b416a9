/* SPDX-License-Identifier: MIT */
/*
 * prof-mpi: prof under MPI (mpirun -n R prof-mpi MEASUREMENTS), writing the database prof
 * writes.  mpi.c owns what is parallel across ranks: the split of the files by size into
 * contiguous shares (so threads keep prof's numbers), the structure files read once per node,
 * the binary reduction of the ranks' trees in rank order, the statistics over threads made by
 * the owners of blocks of contexts from every thread's values in thread order (so they are
 * prof's to the bit), and rank 0's writing of the database from the ranks' parts.
 */
#include "compat.h"
#include "buf.h"
#include "dbfile-index.h"
#include "error.h"
#include "escape.h"
#include "input.h"
#include "run.h"
#include "sfile.h"
#include "xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

enum { TAG_TREE = 1, TAG_STATS, TAG_TRACE };

struct world {
	int rank, size;
	MPI_Comm node; /* the ranks of this node */
	int node_rank;
};

/* MPI moves at most INT_MAX bytes a call: N bytes at P in pieces. */
#define MPI_STEP ((size_t)1 << 30)

static void bcast_bytes(void *p, size_t n, int root, MPI_Comm comm)
{
	for (size_t at = 0; at < n; at += MPI_STEP)
		MPI_Bcast((uint8_t *)p + at, (int)FTH_MIN(MPI_STEP, n - at), MPI_BYTE, root, comm);
}

static void send_bytes(const void *p, size_t n, int to, int tag)
{
	uint64_t len = n;
	MPI_Send(&len, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD);
	for (size_t at = 0; at < n; at += MPI_STEP)
		MPI_Send((const uint8_t *)p + at, (int)FTH_MIN(MPI_STEP, n - at), MPI_BYTE, to, tag,
			 MPI_COMM_WORLD);
}

/* Bytes sent by send_bytes from FROM, into B. */
static void recv_bytes(struct buf *b, int from, int tag)
{
	uint64_t len;
	MPI_Recv(&len, 1, MPI_UINT64_T, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	buf_reset(b);
	uint8_t *p = buf_reserve(b, len ? len : 1);
	for (size_t at = 0; at < len; at += MPI_STEP)
		MPI_Recv(p + at, (int)FTH_MIN(MPI_STEP, len - at), MPI_BYTE, from, tag,
			 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	b->len = len;
}

/* The whole file PATH into *DATA (*SIZE bytes); 0, or -1 with a message. */
static int read_whole(const char *path, uint8_t **data, size_t *size)
{
	struct stat st;
	int fd = input_open(path, &st);
	if (fd < 0)
		return -1;
	size_t n = (size_t)st.st_size, done = 0;
	*data = xmalloc(n ? n : 1);
	while (done < n) {
		ssize_t k = read(fd, *data + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : EIO;
			close(fd);
			FREE_AND_NULL(*data);
			return fth_error_errno(err, "%s: cannot read", path);
		}
		done += (size_t)k;
	}
	close(fd);
	*size = n;
	return 0;
}

/*
 * A structure file for every rank of the node from one read: the node's first rank reads it
 * and gives its bytes to the others, who parse them as their own.  Every rank of a node loads
 * the same files in the same order (the same directories listed), so the calls pair up.
 */
static int node_read_struct(void *arg, const char *path, struct sfile *sf)
{
	struct world *w = arg;
	int64_t size = -1;
	uint8_t *data = NULL;
	size_t n = 0;
	char err[1024] = "";
	if (w->node_rank == 0) {
		if (read_whole(path, &data, &n) == 0)
			size = (int64_t)n;
		else
			snprintf(err, sizeof(err), "%s", fth_errmsg());
	}
	MPI_Bcast(&size, 1, MPI_INT64_T, 0, w->node);
	if (size < 0) {
		MPI_Bcast(err, sizeof(err), MPI_CHAR, 0, w->node);
		return fth_error("%s", err);
	}
	n = (size_t)size;
	if (w->node_rank != 0)
		data = xmalloc(n ? n : 1);
	bcast_bytes(data, n, 0, w->node);
	int rc = sfile_read_memory(path, data, n, sf);
	free(data);
	return rc;
}

/*
 * Rank 0: the files split by size: the first file of every rank's share in BOUND[0..R] (R + 1
 * bounds) and the bytes of each share in BOUND[R + 1 + r].
 */
static void split_by_size(char **files, size_t n, int ranks, uint64_t *bound)
{
	uint64_t *cum = xcalloc(n + 1, sizeof(*cum));
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		cum[i + 1] = cum[i] + (stat(files[i], &st) == 0 ? (uint64_t)st.st_size : 0) + 1;
	}
	size_t at = 0;
	for (int r = 0; r <= ranks; r++) {
		/* the first file whose start is at or past r / R of the bytes */
		unsigned __int128 want = (unsigned __int128)cum[n] * (unsigned)r / (unsigned)ranks;
		while (at < n && cum[at] < want)
			at++;
		bound[r] = r == ranks ? n : at;
	}
	for (int r = 0; r < ranks; r++)
		bound[ranks + 1 + r] = cum[bound[r + 1]] - cum[bound[r]] - (bound[r + 1] - bound[r]);
	free(cum);
}

static void usage_mpi(FILE *f)
{
	fprintf(f,
		"usage: mpirun -n RANKS prof-mpi [options] MEASUREMENTS_DIR...\n"
		"Merge measurements and structure into a metric database as prof does, over the\n"
		"ranks of an MPI job (the database is prof's, byte for byte).  The directories and\n"
		"the output must be on a file system every rank sees.\n"
		"  -o, --output DIR       write the database to DIR (default: PROGRAM-database)\n"
		"  -j, --jobs N           read measurement files with N threads per rank (default:\n"
		"                         the node's cores shared among its ranks)\n"
		"  -S, --structs PATH     also use the structure file PATH, or those in directory PATH\n"
		"      --no-struct        ignore structure files: functions and lines from the binaries\n"
		"      --metric-db=STYLE  what is kept per thread: 'threads' (default) or 'summary'\n"
		"      --compression=N    zstd level of the database, 0 (stored) to 19\n"
		"      --no-traces        leave out the traces of threads measured with measure -t\n"
		"      --stats            print each stage's time, the ranks' imbalance in it, and\n"
		"                         their peak memory\n"
		"      --force            replace an existing database at the output directory\n"
		"  -h, --help             this help;  --version  the version\n"
		"Each rank spools its values in $TMPDIR (default /tmp), which should be on the node.\n"
		"Exit status: 0 when every input was used, 1 when some was skipped (listed at the\n"
		"end) or no database could be written, 2 for a usage error.\n");
}

/* One run of prof-mpi: prof's merge, and what the ranks share. */
struct run {
	struct world w;
	struct merge m;
	char *rank_dir;	      /* this rank's part, inside the temporary directory (shared) */
	char *spool_dir;      /* its spools, read by itself alone: in the node's TMPDIR, */
	bool own_spool_dir;   /* a directory made for them; else RANK_DIR */
	uint32_t nthreads;    /* the threads this rank merged */
	uint32_t thread_base; /* the database's number of its first */
	struct unifier *global; /* ranks but 0: the whole tree, to number their own by */
	struct unifier_map map; /* ranks but 0: their contexts and metrics in the database */
	struct prof_problems scratch; /* what building GLOBAL says (said by rank 0 already) */
	struct dbfile db;	      /* the database (its tree; rank 0 also its statistics) */
	struct dbfile_index d;
	bool have_index;
	uint32_t nvalued; /* the metrics with values: the first of the database's */
	double t_merge, t_reduce, t_parts, t_stats; /* seconds, for --stats */
	double busy[3]; /* of them, this rank's own work: merging, converting, statistics */
};

static double now(void)
{
	return MPI_Wtime();
}

/* Whether any rank says FAILED: every rank learns it. */
static bool any_failed(bool failed)
{
	int in = failed, out = 0;
	MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return out != 0;
}

static char *rank_path(const char *tmp, int rank, const char *name)
{
	size_t n = strlen(tmp) + strlen(name) + 32;
	char *p = xmalloc(n);
	snprintf(p, n, "%s/rank-%d%s%s", tmp, rank, name[0] ? "/" : "", name);
	return p;
}

/* Rank 0: every rank's directory emptied and removed (the temporary directory can then go). */
static void remove_rank_dirs(const char *tmp, int ranks)
{
	static const char *const names[] = { "part", DBFILE_SPOOL, DBTRACE_SPOOL };
	for (int r = 0; r < ranks; r++) {
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			char *p = rank_path(tmp, r, names[i]);
			unlink(p);
			free(p);
		}
		char *d = rank_path(tmp, r, "");
		rmdir(d);
		free(d);
	}
}

/*
 * Rank 0 makes the temporary directory of the database, every rank its own directory in it;
 * 0, or -1 on every rank when any failed (said by the one that did).
 */
static int make_output(struct run *run, char **argv)
{
	struct merge *m = &run->m;
	char *tmp = NULL;
	uint64_t len = 0;
	if (run->w.rank == 0) {
		char *program = NULL;
		for (size_t i = 0; i < m->nfiles_all && !program; i++) {
			struct mfile_identity id;
			if (mfile_read_identity(m->files[i], &id) == 0) {
				program = xstrdup(id.program);
				mfile_identity_release(&id);
			}
		}
		fth_error_clear();
		m->out.final = m->o->output ? xstrdup(m->o->output)
					    : prof_default_output(argv[optind], program ? program : "");
		free(program);
		if (m->nfiles_all && prof_output_create(&m->out, m->o->force) == 0) {
			tmp = m->out.tmp;
			len = strlen(tmp) + 1;
		}
	}
	MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (!len)
		return -1;
	if (run->w.rank != 0)
		tmp = xmalloc(len);
	MPI_Bcast(tmp, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
	run->rank_dir = rank_path(tmp, run->w.rank, "");
	if (run->w.rank != 0)
		free(tmp);
	bool failed = mkdir(run->rank_dir, 0700) < 0;
	if (failed)
		esc_printf(stderr, "prof-mpi: %s: cannot create: %s\n", run->rank_dir,
			   strerror(errno));
	return any_failed(failed) ? -1 : 0;
}

/*
 * Where this rank spools its values: a private directory of the node's $TMPDIR when that has
 * room for about four times SHARE, the bytes of its measurement files (the spool takes about
 * three: filling $TMPDIR would also stall the MPI runtime, whose session lives there), else
 * its directory in the output, said.  Then the spools are opened there; 0 or -1 said.
 */
static int open_spools(struct run *run, uint64_t share)
{
	const char *tmpdir = getenv("TMPDIR");
	const char *base = tmpdir && tmpdir[0] ? tmpdir : "/tmp";
	struct statvfs sv;
	bool room = statvfs(base, &sv) == 0 &&
		    (uint64_t)sv.f_bavail * sv.f_frsize / 4 >= share;
	char *dir = xpath_join(base, "prof-mpi-XXXXXX");
	if (room && mkdtemp(dir)) {
		run->spool_dir = dir;
		run->own_spool_dir = true;
	} else {
		esc_printf(stderr, "%s: rank %d: %s %s: spooling in %s instead\n", fth_progname,
			   run->w.rank, base,
			   room ? strerror(errno) : "has not room for this rank's values",
			   run->rank_dir);
		free(dir);
		run->spool_dir = xstrdup(run->rank_dir);
	}
	return merge_open_spool(&run->m, run->spool_dir);
}

/*
 * The trees into rank 0's, in rank order: at step S, a rank that is an odd multiple of S sends
 * its tree (its share and those it took) to the rank S below it and is done; that rank merges
 * it after its own.
 */
static int reduce_trees(struct run *run)
{
	struct buf b;
	buf_init(&b);
	int rc = 0;
	for (int step = 1; step < run->w.size; step <<= 1) {
		if (run->w.rank & step) {
			buf_reset(&b);
			unifier_pack(run->m.u, &b);
			send_bytes(b.data, b.len, run->w.rank - step, TAG_TREE);
			break;
		}
		if (run->w.rank + step < run->w.size) {
			recv_bytes(&b, run->w.rank + step, TAG_TREE);
			struct unifier_map map;
			if (rc == 0 && unifier_merge(run->m.u, b.data, b.len, &map) < 0) {
				esc_printf(stderr, "prof-mpi: rank %d: %s\n", run->w.rank, fth_errmsg());
				rc = -1;
			}
			unifier_map_release(&map);
		}
	}
	buf_release(&b);
	return rc;
}

/*
 * The whole tree to every rank, which numbers its own contexts and metrics by it, and the
 * database's tree and numbering (D) on every rank.
 */
static int share_tree(struct run *run)
{
	struct merge *m = &run->m;
	struct buf b;
	buf_init(&b);
	uint64_t len = 0;
	if (run->w.rank == 0) {
		unifier_pack(m->u, &b);
		len = b.len;
	}
	MPI_Bcast(&len, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (run->w.rank != 0) {
		buf_reset(&b);
		buf_reserve(&b, len ? len : 1);
		b.len = len;
	}
	bcast_bytes(b.data, len, 0, MPI_COMM_WORLD);
	int rc = 0;
	if (run->w.rank == 0) {
		const struct dbfile_thread *t = unifier_thread(m->u, 0);
		free(m->program);
		m->program = xstrdup(t ? t->program : "");
		merge_finish_db(m, &run->db);
		run->nvalued = unifier_nmetrics(m->u);
		/* the database has all of it now */
		unifier_free(m->u);
		m->u = NULL;
	} else {
		run->global = unifier_new(m->ss, &run->scratch);
		unifier_no_stats(run->global);
		struct unifier_map same;
		rc = unifier_merge(run->global, b.data, b.len, &same);
		unifier_map_release(&same);
		if (rc == 0) {
			struct unifier *keep = m->u;
			m->u = run->global;
			merge_finish_db(m, &run->db);
			m->u = keep;
			run->nvalued = unifier_nmetrics(run->global);
			buf_reset(&b);
			unifier_pack(m->u, &b);
			rc = unifier_merge(run->global, b.data, b.len, &run->map);
		}
		/* Numbered: neither tree is needed any more, only the database's. */
		unifier_free(run->global);
		run->global = NULL;
		unifier_free(m->u);
		m->u = NULL;
	}
	buf_release(&b);
	if (rc == 0 && dbfile_index_build(&run->db, &run->d) < 0)
		rc = -1;
	else if (rc == 0)
		run->have_index = true;
	if (rc < 0)
		esc_printf(stderr, "prof-mpi: rank %d: %s\n", run->w.rank, fth_errmsg());
	return rc;
}

/* This rank's values in the database's numbering, converted as threads.fdb has them. */
static int write_part(struct run *run)
{
	char *part = xpath_join(run->rank_dir, "part");
	uint32_t *ident_ctx = NULL, *ident_metric = NULL;
	struct dbfile_part_maps maps;
	if (run->w.rank == 0) {
		/* rank 0's numbers are the database's: its tree is the first */
		uint32_t n = run->db.ncontexts, k = run->db.nmetrics;
		ident_ctx = xcalloc(n ? n : 1, sizeof(*ident_ctx));
		ident_metric = xcalloc(k ? k : 1, sizeof(*ident_metric));
		for (uint32_t i = 0; i < n; i++)
			ident_ctx[i] = i;
		for (uint32_t i = 0; i < k; i++)
			ident_metric[i] = i;
		maps = (struct dbfile_part_maps){ ident_ctx, ident_metric, n, k };
	} else {
		maps = (struct dbfile_part_maps){ run->map.ctx, run->map.metric, run->map.nctx,
						  run->map.nmetrics };
	}
	int rc = dbfile_part_write(run->spool_dir, &run->db, &run->d, &maps, run->nthreads,
				   run->m.o->thread_level, part);
	if (rc < 0)
		esc_printf(stderr, "prof-mpi: rank %d: %s\n", run->w.rank, fth_errmsg());
	char *spool = xpath_join(run->spool_dir, DBFILE_SPOOL);
	unlink(spool);
	free(spool);
	free(part);
	free(ident_ctx);
	free(ident_metric);
	return rc;
}

/* The statistics of the blocks a rank owns, accumulated as prof does. */
struct owner {
	uint32_t first, end, nm; /* contexts FIRST..END (the database's numbers) */
	struct acc *incl, *excl; /* per (context - FIRST, metric) */
	bool bad;		 /* a value of a metric without values */
};

static void owner_value(void *arg, uint32_t ctx, uint16_t metric, double incl, double excl)
{
	struct owner *o = arg;
	if (metric >= o->nm || ctx < o->first || ctx >= o->end) {
		o->bad = true;
		return;
	}
	size_t at = (size_t)(ctx - o->first) * o->nm + metric;
	if (incl != 0)
		acc_add(&o->incl[at], incl);
	if (excl != 0)
		acc_add(&o->excl[at], excl);
}

/* What rank R of RANKS owns: blocks B0..B1 of contexts, which are contexts FIRST..END. */
struct owned {
	uint32_t b0, b1, first, end;
};

static struct owned owned_by(const struct dbfile_index *d, int r, int ranks)
{
	struct owned o;
	o.b0 = (uint32_t)((uint64_t)d->nblocks * (unsigned)r / (unsigned)ranks);
	o.b1 = (uint32_t)((uint64_t)d->nblocks * (unsigned)(r + 1) / (unsigned)ranks);
	o.first = o.b0 * d->block;
	o.end = o.b1 > o.b0 ? dbfile_block_end((o.b1 - 1) * d->block, d->block, d->n) : o.first;
	return o;
}

/*
 * Owners' statistics, in the database's numbering: per context its entries' count, then the
 * entries (metric, inclusive and exclusive statistics).
 */
struct stats {
	uint32_t *count; /* per context of the range */
	uint16_t *metric;
	struct dbfile_stat *incl, *excl;
	uint64_t n;
};

static void stats_release(struct stats *s)
{
	free(s->count);
	free(s->metric);
	free(s->incl);
	free(s->excl);
	memset(s, 0, sizeof(*s));
}

/* This rank's blocks' statistics from every rank's part, threads in order, into S. */
static int owner_stats(struct run *run, struct stats *s)
{
	const struct dbfile_index *d = &run->d;
	struct owned own = owned_by(d, run->w.rank, run->w.size);
	uint32_t b0 = own.b0, b1 = own.b1;
	struct owner o = { .first = own.first, .end = own.end, .nm = run->nvalued };
	size_t cells = (size_t)(o.end - o.first) * o.nm;
	o.incl = xcalloc(cells ? cells : 1, sizeof(*o.incl));
	o.excl = xcalloc(cells ? cells : 1, sizeof(*o.excl));
	char **parts = xcalloc((size_t)run->w.size, sizeof(*parts));
	/* every rank's directory is beside this one's */
	char *base = xstrdup(run->rank_dir);
	char *slash = strrchr(base, '/');
	if (slash)
		*slash = '\0';
	for (int r = 0; r < run->w.size; r++)
		parts[r] = rank_path(base, r, "part");
	free(base);
	int rc = b1 > b0 ? dbfile_parts_values(parts, (uint32_t)run->w.size, d, b0, b1,
					      owner_value, &o)
			 : 0;
	if (rc == 0 && o.bad)
		rc = fth_error("a part has values of a metric that has none, or out of its blocks");
	if (rc < 0)
		esc_printf(stderr, "prof-mpi: rank %d: %s\n", run->w.rank, fth_errmsg());
	uint32_t nc = o.end - o.first;
	memset(s, 0, sizeof(*s));
	s->count = xcalloc(nc ? nc : 1, sizeof(*s->count));
	for (size_t i = 0; i < cells; i++)
		s->n += o.incl[i].count || o.excl[i].count;
	s->metric = xcalloc(s->n ? s->n : 1, sizeof(*s->metric));
	s->incl = xcalloc(s->n ? s->n : 1, sizeof(*s->incl));
	s->excl = xcalloc(s->n ? s->n : 1, sizeof(*s->excl));
	uint64_t j = 0;
	for (uint32_t c = 0; c < nc && rc == 0; c++)
		for (uint32_t k = 0; k < o.nm; k++) {
			const struct acc *ai = &o.incl[(size_t)c * o.nm + k],
					 *ae = &o.excl[(size_t)c * o.nm + k];
			if (!ai->count && !ae->count)
				continue;
			s->count[c]++;
			s->metric[j] = (uint16_t)k;
			acc_finish(ai, &s->incl[j]);
			acc_finish(ae, &s->excl[j]);
			j++;
		}
	free(o.incl);
	free(o.excl);
	for (int r = 0; r < run->w.size; r++)
		free(parts[r]);
	free(parts);
	return rc;
}

/* Rank 0: every owner's statistics into the database's summary (in the tree's numbering):
 * first how many entries each context has, then each owner's entries in their places. */
static void gather_stats(struct run *run, struct stats *mine)
{
	const struct dbfile_index *d = &run->d;
	if (run->w.rank != 0) {
		struct owned own = owned_by(d, run->w.rank, run->w.size);
		send_bytes(mine->count, (size_t)(own.end - own.first) * sizeof(*mine->count), 0,
			   TAG_STATS);
		MPI_Barrier(MPI_COMM_WORLD);
		send_bytes(mine->metric, mine->n * sizeof(*mine->metric), 0, TAG_STATS);
		send_bytes(mine->incl, mine->n * sizeof(*mine->incl), 0, TAG_STATS);
		send_bytes(mine->excl, mine->n * sizeof(*mine->excl), 0, TAG_STATS);
		return;
	}
	struct dbfile *db = &run->db;
	uint32_t n = db->ncontexts;
	uint32_t *count = xcalloc(n ? n : 1, sizeof(*count)); /* the database's numbering */
	struct buf b;
	buf_init(&b);
	for (int r = 0; r < run->w.size; r++) {
		struct owned own = owned_by(d, r, run->w.size);
		uint32_t first = own.first, end = own.end;
		const uint32_t *got = mine->count;
		if (r != 0) {
			recv_bytes(&b, r, TAG_STATS);
			got = (const uint32_t *)(const void *)b.data;
		}
		memcpy(count + first, got, (size_t)(end - first) * sizeof(*count));
	}
	MPI_Barrier(MPI_COMM_WORLD);
	free(db->sum_start);
	free(db->sum_metric);
	free(db->sum_incl);
	free(db->sum_excl);
	uint64_t total = 0;
	db->sum_start = xcalloc((size_t)n + 1, sizeof(*db->sum_start));
	for (uint32_t c = 0; c < n; c++) { /* the tree's numbering */
		db->sum_start[c] = (uint32_t)total;
		total += count[d->newid[c]];
	}
	db->sum_start[n] = (uint32_t)total;
	db->nsum = total;
	db->sum_metric = xcalloc(total ? total : 1, sizeof(*db->sum_metric));
	db->sum_incl = xcalloc(total ? total : 1, sizeof(*db->sum_incl));
	db->sum_excl = xcalloc(total ? total : 1, sizeof(*db->sum_excl));
	for (int r = 0; r < run->w.size; r++) {
		struct owned own = owned_by(d, r, run->w.size);
		uint32_t first = own.first, end = own.end;
		struct stats got = { 0 };
		const struct stats *s = mine;
		if (r != 0) {
			recv_bytes(&b, r, TAG_STATS);
			got.n = b.len / sizeof(*got.metric);
			got.metric = (uint16_t *)(void *)buf_detach(&b, NULL);
			recv_bytes(&b, r, TAG_STATS);
			got.incl = (struct dbfile_stat *)(void *)buf_detach(&b, NULL);
			recv_bytes(&b, r, TAG_STATS);
			got.excl = (struct dbfile_stat *)(void *)buf_detach(&b, NULL);
			s = &got;
		}
		uint64_t e = 0;
		for (uint32_t c = first; c < end; c++) {
			uint32_t at = db->sum_start[d->order[c]];
			for (uint32_t k = 0; k < count[c] && e < s->n; k++, e++) {
				db->sum_metric[at + k] = s->metric[e];
				db->sum_incl[at + k] = s->incl[e];
				db->sum_excl[at + k] = s->excl[e];
			}
		}
		stats_release(&got);
		if (r == 0)
			stats_release(mine);
	}
	buf_release(&b);
	free(count);
}

struct trace_copy {
	struct run *run;
	struct dbtrace_spool *to; /* rank 0 */
	bool open, failed;
};

/* Thread THREAD (this rank's number) of the spool, in the database's numbers. */
static int trace_thread(void *arg, uint32_t thread, const struct dbtrace_record *rec, uint64_t n)
{
	struct trace_copy *tc = arg;
	struct run *run = tc->run;
	struct dbtrace_record *mapped = xcalloc(n ? n : 1, sizeof(*mapped));
	for (uint64_t i = 0; i < n; i++) {
		uint32_t c = rec[i].context;
		mapped[i] = (struct dbtrace_record){ rec[i].time,
						     run->w.rank == 0 ? c : run->map.ctx[c] };
	}
	uint32_t global = run->thread_base + thread;
	int rc = 0;
	if (run->w.rank == 0) {
		rc = dbtrace_spool_add(tc->to, global, mapped, n);
	} else {
		uint64_t head[2] = { global, n };
		MPI_Send(head, 2, MPI_UINT64_T, 0, TAG_TRACE, MPI_COMM_WORLD);
		send_bytes(mapped, n * sizeof(*mapped), 0, TAG_TRACE);
	}
	free(mapped);
	return rc;
}

/* Every rank's traces into rank 0's spool in the temporary directory, rank after rank. */
static int gather_traces(struct run *run)
{
	struct merge *m = &run->m;
	int any = 0, mine = 0;
	char *spool = xpath_join(run->spool_dir, DBTRACE_SPOOL);
	mine = access(spool, F_OK) == 0;
	free(spool);
	MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (!any)
		return 0;
	struct dbtrace_spool to;
	struct trace_copy tc = { run, &to, false, false };
	uint32_t nlocal = run->w.rank == 0 ? run->db.ncontexts : run->map.nctx;
	int rc = 0;
	if (run->w.rank == 0) {
		rc = dbtrace_spool_open(&to, m->out.tmp);
		tc.open = rc == 0;
		if (rc == 0)
			rc = dbtrace_spool_each(run->spool_dir, nlocal, run->nthreads, trace_thread,
						&tc);
		struct buf b;
		buf_init(&b);
		for (int r = 1; r < run->w.size; r++)
			for (;;) {
				uint64_t head[2];
				MPI_Recv(head, 2, MPI_UINT64_T, r, TAG_TRACE, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				if (head[0] == UINT64_MAX)
					break;
				recv_bytes(&b, r, TAG_TRACE);
				if (rc == 0)
					rc = dbtrace_spool_add(&to, (uint32_t)head[0],
							       (const void *)b.data, head[1]);
			}
		buf_release(&b);
		if (tc.open && (rc < 0 ? (dbtrace_spool_abort(&to), -1)
				       : dbtrace_spool_finish(&to)) < 0)
			rc = -1;
	} else {
		rc = dbtrace_spool_each(run->spool_dir, nlocal, run->nthreads, trace_thread, &tc);
		uint64_t end[2] = { UINT64_MAX, 0 };
		MPI_Send(end, 2, MPI_UINT64_T, 0, TAG_TRACE, MPI_COMM_WORLD);
	}
	if (rc < 0)
		esc_printf(stderr, "prof-mpi: rank %d: %s\n", run->w.rank, fth_errmsg());
	return rc;
}

/* Rank 0's writing: the database from the parts, every rank's directory then removed. */
static int write_from_parts(struct merge *m, struct dbfile *db)
{
	struct run *run = (struct run *)(void *)((char *)m - offsetof(struct run, m));
	char **parts = xcalloc((size_t)run->w.size, sizeof(*parts));
	for (int r = 0; r < run->w.size; r++)
		parts[r] = rank_path(m->out.tmp, r, "part");
	int rc = dbfile_write_from_parts(m->out.tmp, db, m->o->level,
					 m->o->thread_values ? parts : NULL,
					 (uint32_t)run->w.size);
	if (rc < 0)
		esc_printf(stderr, "%s: %s\n", fth_progname, fth_errmsg());
	for (int r = 0; r < run->w.size; r++)
		free(parts[r]);
	free(parts);
	remove_rank_dirs(m->out.tmp, run->w.size);
	return rc;
}

/* --stats: the ranks' peak memory and shares, and the time of each stage on rank 0. */
static void print_mpi_stats(struct run *run, double t0)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long rss = ru.ru_maxrss / 1024, lo = 0, hi = 0;
	double busy_lo[3], busy_hi[3];
	MPI_Reduce(&rss, &lo, 1, MPI_LONG, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(&rss, &hi, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(run->busy, busy_lo, 3, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
	MPI_Reduce(run->busy, busy_hi, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (run->w.rank == 0)
		fprintf(stderr,
			"prof-mpi: stats: wall %.2f s on %d rank%s (merge %.2f s, reduction %.2f s, "
			"parts %.2f s, statistics %.2f s, writing %.2f s); the ranks' own work: "
			"merging %.2f-%.2f s, converting %.2f-%.2f s, statistics %.2f-%.2f s; peak "
			"memory per rank %ld to %ld MB\n",
			now() - t0, run->w.size, run->w.size == 1 ? "" : "s", run->t_merge,
			run->t_reduce, run->t_parts, run->t_stats,
			now() - t0 - run->t_merge - run->t_reduce - run->t_parts - run->t_stats,
			busy_lo[0], busy_hi[0], busy_lo[1], busy_hi[1], busy_lo[2], busy_hi[2], lo, hi);
}

static void run_release(struct run *run)
{
	if (run->have_index)
		dbfile_index_release(&run->d);
	dbfile_close(&run->db);
	unifier_map_release(&run->map);
	unifier_free(run->global);
	problems_release(&run->scratch);
	free(run->rank_dir);
	if (run->spool_dir && run->own_spool_dir) {
		static const char *const names[] = { DBFILE_SPOOL, DBTRACE_SPOOL };
		for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
			char *p = xpath_join(run->spool_dir, names[i]);
			unlink(p);
			free(p);
		}
		rmdir(run->spool_dir);
	}
	free(run->spool_dir);
	merge_release(&run->m);
}

int main(int argc, char **argv)
{
	fth_progname = "prof-mpi";
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	struct run run;
	memset(&run, 0, sizeof(run));
	MPI_Comm_rank(MPI_COMM_WORLD, &run.w.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &run.w.size);
	MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &run.w.node);
	MPI_Comm_rank(run.w.node, &run.w.node_rank);
	int node_size;
	MPI_Comm_size(run.w.node, &node_size);
	double t0 = now();
	struct timespec ts0;
	clock_gettime(CLOCK_MONOTONIC, &ts0);

	struct options o = { 0 };
	int rc = prof_parse_options(argc, argv, &o, usage_mpi);
	if (rc >= 0) {
		MPI_Finalize();
		return rc;
	}
	if (!o.jobs_given)
		o.jobs = FTH_MAX(1, o.jobs / node_size);
	struct merge *m = &run.m;
	m->o = &o;
	m->out.tmp_fd = -1;
	m->always_spool = true;
	m->own_stats = true;
	/* The spool is read back once, at once: compressing it costs more than its bytes. */
	m->spool_level = 0;
	size_t afiles = 0;
	for (int i = optind; i < argc; i++)
		if (prof_collect(argv[i], &m->files, &m->nfiles, &afiles) < 0)
			problem_add(&m->probs, fth_errmsg());
	m->nfiles_all = m->nfiles;
	m->ss = structs_new(true);
	structs_set_reader(m->ss, node_read_struct, &run.w);
	prof_load_structures(m->ss, argc, argv, &o, &m->probs);
	prof_catch_signals();
	m->u = unifier_new(m->ss, &m->probs);
	unifier_no_stats(m->u);
	int several = run.w.rank == 0 && prof_several_programs(m->files, m->nfiles);
	MPI_Bcast(&several, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (several)
		unifier_by_program(m->u);
	pthread_mutex_init(&m->wr.lock, NULL);
	pthread_cond_init(&m->wr.cond, NULL);

	int status = 1;
	if (make_output(&run, argv) < 0) {
		if (run.w.rank == 0) {
			if (!m->nfiles_all)
				esc_printf(stderr, "%s: no measurement file could be read; no "
						   "database was written\n", fth_progname);
			m->status = 1;
			prof_report(m, &run.db, &ts0);
		}
		goto failed_early;
	}
	/* This rank's share: files FROM .. TO of the sorted list. */
	uint64_t *bound = xcalloc(2 * (size_t)run.w.size + 1, sizeof(*bound));
	if (run.w.rank == 0)
		split_by_size(m->files, m->nfiles, run.w.size, bound);
	MPI_Bcast(bound, 2 * run.w.size + 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	size_t from = bound[run.w.rank], to = bound[run.w.rank + 1];
	uint64_t share = bound[run.w.size + 1 + run.w.rank];
	free(bound);
	char **all = m->files;
	size_t nall = m->nfiles;
	m->files = xcalloc(to - from + 1, sizeof(*m->files));
	for (size_t i = 0; i < nall; i++) {
		if (i >= from && i < to)
			m->files[i - from] = all[i];
		else
			free(all[i]);
	}
	free(all);
	m->nfiles = to - from;
	if (any_failed(open_spools(&run, share) < 0))
		goto fail;

	double t = now();
	merge_inputs(m, argv[optind]);
	if (merge_close_spools(m) < 0)
		m->status = 1;
	run.busy[0] = now() - t;
	run.nthreads = unifier_nthreads(m->u);
	MPI_Exscan(&run.nthreads, &run.thread_base, 1, MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
	if (run.w.rank == 0)
		run.thread_base = 0;
	run.t_merge = now() - t;
	/* A signal that stopped one rank stops them all, and rank 0 says which. */
	int sig = (int)prof_interrupted, any_sig = 0;
	MPI_Allreduce(&sig, &any_sig, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (any_sig && !prof_interrupted)
		prof_interrupted = any_sig;
	if (any_failed(m->status != 0 || prof_interrupted))
		goto fail;
	t = now();
	if (any_failed(reduce_trees(&run) < 0))
		goto fail;
	uint32_t total = run.w.rank == 0 ? unifier_nthreads(m->u) : 0;
	MPI_Bcast(&total, 1, MPI_UINT32_T, 0, MPI_COMM_WORLD);
	if (total == 0) {
		if (run.w.rank == 0)
			esc_printf(stderr, "%s: no measurement file could be read; no database was "
					   "written\n", fth_progname);
		goto fail;
	}
	if (any_failed(share_tree(&run) < 0))
		goto fail;
	run.t_reduce = now() - t;
	t = now();
	bool failed = write_part(&run) < 0;
	run.busy[1] = now() - t;
	if (any_failed(failed))
		goto fail;
	run.t_parts = now() - t;
	t = now();
	struct stats mine;
	failed = owner_stats(&run, &mine) < 0;
	run.busy[2] = now() - t;
	if (any_failed(failed)) {
		stats_release(&mine);
		goto fail;
	}
	gather_stats(&run, &mine);
	stats_release(&mine);
	run.t_stats = now() - t;
	if (any_failed(gather_traces(&run) < 0))
		goto fail;
	if (run.w.rank == 0) {
		merge_write(m, &run.db, write_from_parts);
		status = prof_report(m, &run.db, &ts0);
	} else {
		status = 0;
	}
	MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
	goto done;
fail:
	if (run.w.rank == 0 && m->out.tmp) {
		remove_rank_dirs(m->out.tmp, run.w.size);
		if (m->out.tmp_fd >= 0) {
			prof_remove_db_dir(m->out.tmp_fd, m->out.tmp, &m->out.tmp_st);
			close(m->out.tmp_fd);
			m->out.tmp_fd = -1;
		}
		m->status = 1;
		if (prof_interrupted)
			prof_say_interrupted();
		prof_report(m, &run.db, &ts0);
	}
	status = 1;
	goto done;
failed_early:
	status = 1;
done:
	if (o.stats)
		print_mpi_stats(&run, t0);
	run_release(&run);
	free(o.struct_paths);
	MPI_Comm_free(&run.w.node);
	MPI_Finalize();
	return prof_interrupted ? 128 + (int)prof_interrupted : status;
}
