/* SPDX-License-Identifier: MIT */
/*
 * unify.c: merges the calling context trees of all threads into one tree of static contexts,
 * and computes each thread's exclusive and inclusive values and the statistics over threads.
 *
 * A measured node (module, offset) becomes a chain of contexts: function > inlined call sites
 * > loops > line (a sample) or call site (a caller frame, the call at offset - 1).  Contexts
 * are keyed by (parent, kind, function, file, line, module, address), so the same context in
 * two threads is one node.  Contexts get their ids in the order they are first seen, threads
 * in the order they are added: the output depends only on the input files and their order.
 */
#include "compat.h"
#include "prof.h"
#include "buf.h"
#include "le.h"
#include "dbtrace.h"
#include "error.h"
#include "formula.h"
#include "hmap.h"
#include "xalloc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SCOPES 64

struct gmetric {
	struct dbfile_metric d;
	struct acc *incl, *excl;   /* per context */
	bool remap;		   /* FORMULA still has the first file's metric indices */
};

/*
 * A cached step: from context PARENT, measured node (KIND, MODULE, OFFSET) leads to CTX.  An
 * open-addressing table of these (one cache line holds two), as every measured node of every
 * thread looks one up.  CTX == DBFILE_NONE marks a free slot.
 */
struct edge {
	uint64_t offset;
	uint32_t parent, module;
	uint32_t ctx;
	uint8_t kind;
};

/*
 * Interned entries chained by hash: MAP gives a hash's newest entry, NEXT[i] the entry with the
 * same hash interned before entry i (DBFILE_NONE: none).  NEXT grows with the entries' array.
 */
struct chains {
	struct hmap map;
	uint32_t *next;
};

/* The newest entry of hash H, or DBFILE_NONE; the older ones follow through NEXT. */
static uint32_t chains_first(const struct chains *c, uint64_t h)
{
	uint64_t first;
	return hmap_get(&c->map, h, &first) ? (uint32_t)first : DBFILE_NONE;
}

static void chains_grow(struct chains *c, uint32_t cap)
{
	c->next = xreallocarray(c->next, cap, sizeof(*c->next));
}

/* Entry ID, just interned, becomes the newest of hash H. */
static void chains_add(struct chains *c, uint64_t h, uint32_t id)
{
	c->next[id] = chains_first(c, h);
	hmap_put(&c->map, h, id);
}

static void chains_release(struct chains *c)
{
	hmap_release(&c->map);
	free(c->next);
}

struct unifier {
	struct structs *ss;
	struct prof_problems *problems;
	/* strings */
	char **strs;
	uint32_t nstrs, astrs;
	struct chains str_chains;
	/* modules */
	struct module_info *mods;
	uint32_t nmods, amods;
	uint32_t *mod_flags;
	/* functions */
	struct dbfile_function *funcs;
	uint32_t nfuncs, afuncs;
	struct chains func_chains;
	/* contexts */
	struct dbfile_context *ctx;
	uint32_t nctx, actx;
	struct chains ctx_chains;
	uint32_t *stamp, *local; /* per context: last thread that touched it, its local index */
	/* edges */
	struct edge *edges;
	size_t nedges, edge_mask;
	/* metrics */
	struct gmetric *metrics;
	uint32_t nmetrics, ametrics;
	/* threads */
	struct dbfile_thread *threads;
	uint32_t nthreads, athreads;
	/* per-thread scratch */
	uint32_t *lctx, *lparent;
	size_t alocal;
	double *lexcl, *lincl;
	size_t aval;
	uint32_t *top;
	size_t atop;
	/*
	 * The step each measured node index took in the previous thread: threads of one program
	 * have much the same tree in much the same order, so this is read in sequence and usually
	 * right, sparing a random access into the edge table.
	 */
	struct edge *pred;
	size_t apred;
	/* per measured node: its kinds of children, and where its kernel children go */
	uint8_t *kids;
	uint32_t *ktop;
	size_t akids;
	bool by_program; /* each thread's tree below its program's ENTRY context */
	bool no_stats;	 /* statistics over threads left to the caller (prof-mpi) */
	/* the last thread's trace, its nodes mapped to contexts */
	struct dbtrace_record *trace;
	uint64_t ntrace, atrace;
	bool traced;
};

enum { KIDS_USER = 1, KIDS_KERNEL = 2 };

static uint64_t hash_bytes(const void *p, size_t n)
{
	return hmap_mix(hmap_fnv1a(HMAP_FNV_BASIS, p, n));
}

static uint64_t hash_str(const char *s)
{
	return hash_bytes(s, strlen(s));
}

static uint32_t intern_str(struct unifier *u, const char *s)
{
	if (!s)
		return DBFILE_NONE;
	uint64_t h = hash_str(s);
	for (uint32_t i = chains_first(&u->str_chains, h); i != DBFILE_NONE;
	     i = u->str_chains.next[i])
		if (strcmp(u->strs[i], s) == 0)
			return i;
	if (u->nstrs == u->astrs) {
		u->astrs = u->astrs ? u->astrs * 2 : 256;
		u->strs = xreallocarray(u->strs, u->astrs, sizeof(*u->strs));
		chains_grow(&u->str_chains, u->astrs);
	}
	uint32_t id = u->nstrs++;
	u->strs[id] = xstrdup(s);
	chains_add(&u->str_chains, h, id);
	return id;
}

static uint64_t hash_func(const struct dbfile_function *f)
{
	uint64_t h = hmap_mix(f->name ^ ((uint64_t)f->module << 32));
	h = hmap_mix(h ^ f->file ^ ((uint64_t)f->line << 32));
	return hmap_mix(h ^ f->addr);
}

static uint32_t intern_func(struct unifier *u, const struct dbfile_function *f)
{
	uint64_t h = hash_func(f);
	for (uint32_t i = chains_first(&u->func_chains, h); i != DBFILE_NONE;
	     i = u->func_chains.next[i])
		if (!memcmp(&u->funcs[i], f, sizeof(*f)))
			return i;
	if (u->nfuncs == u->afuncs) {
		u->afuncs = u->afuncs ? u->afuncs * 2 : 256;
		u->funcs = xreallocarray(u->funcs, u->afuncs, sizeof(*u->funcs));
		chains_grow(&u->func_chains, u->afuncs);
	}
	uint32_t id = u->nfuncs++;
	u->funcs[id] = *f;
	chains_add(&u->func_chains, h, id);
	return id;
}

static uint64_t hash_ctx(const struct dbfile_context *c)
{
	uint64_t h = hmap_mix(c->parent ^ ((uint64_t)c->kind << 32));
	h = hmap_mix(h ^ c->function ^ ((uint64_t)c->file << 32));
	h = hmap_mix(h ^ c->line ^ ((uint64_t)c->module << 32));
	return hmap_mix(h ^ c->addr);
}

static bool same_ctx(const struct dbfile_context *a, const struct dbfile_context *b)
{
	return a->parent == b->parent && a->kind == b->kind && a->function == b->function &&
	       a->file == b->file && a->line == b->line && a->module == b->module &&
	       a->addr == b->addr;
}

static void grow_metric_arrays(struct unifier *u, struct gmetric *g, uint32_t from)
{
	if (u->no_stats)
		return;
	g->incl = xreallocarray(g->incl, u->actx, sizeof(*g->incl));
	g->excl = xreallocarray(g->excl, u->actx, sizeof(*g->excl));
	memset(g->incl + from, 0, (u->actx - from) * sizeof(*g->incl));
	memset(g->excl + from, 0, (u->actx - from) * sizeof(*g->excl));
}

static uint32_t intern_ctx(struct unifier *u, const struct dbfile_context *c)
{
	uint64_t h = hash_ctx(c);
	for (uint32_t i = chains_first(&u->ctx_chains, h); i != DBFILE_NONE;
	     i = u->ctx_chains.next[i])
		if (same_ctx(&u->ctx[i], c))
			return i;
	if (u->nctx == u->actx) {
		uint32_t old = u->actx;
		u->actx = u->actx ? u->actx * 2 : 1024;
		u->ctx = xreallocarray(u->ctx, u->actx, sizeof(*u->ctx));
		chains_grow(&u->ctx_chains, u->actx);
		u->stamp = xreallocarray(u->stamp, u->actx, sizeof(*u->stamp));
		u->local = xreallocarray(u->local, u->actx, sizeof(*u->local));
		memset(u->stamp + old, 0xff, (u->actx - old) * sizeof(*u->stamp));
		for (uint32_t m = 0; m < u->nmetrics; m++)
			grow_metric_arrays(u, &u->metrics[m], old);
	}
	uint32_t id = u->nctx++;
	u->ctx[id] = *c;
	chains_add(&u->ctx_chains, h, id);
	return id;
}

struct unifier *unifier_new(struct structs *ss, struct prof_problems *p)
{
	struct unifier *u = xcalloc(1, sizeof(*u));
	u->ss = ss;
	u->problems = p;
	hmap_init(&u->str_chains.map);
	hmap_init(&u->func_chains.map);
	hmap_init(&u->ctx_chains.map);
	struct dbfile_context root = { .parent = DBFILE_NONE, .kind = DBFILE_ROOT,
				       .function = DBFILE_NONE, .file = DBFILE_NONE,
				       .module = DBFILE_NONE };
	intern_ctx(u, &root);
	return u;
}

void unifier_free(struct unifier *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; i < u->nstrs; i++)
		free(u->strs[i]);
	free(u->strs);
	chains_release(&u->str_chains);
	for (uint32_t i = 0; i < u->nmods; i++) {
		structs_release_module(&u->mods[i]);
		free(u->mods[i].path);
		free(u->mods[i].build_id);
	}
	free(u->mods);
	free(u->mod_flags);
	free(u->funcs);
	chains_release(&u->func_chains);
	free(u->ctx);
	free(u->stamp);
	free(u->local);
	chains_release(&u->ctx_chains);
	free(u->edges);
	for (uint32_t m = 0; m < u->nmetrics; m++) {
		dbfile_metric_release(&u->metrics[m].d);
		free(u->metrics[m].incl);
		free(u->metrics[m].excl);
	}
	free(u->metrics);
	for (uint32_t t = 0; t < u->nthreads; t++)
		dbfile_thread_release(&u->threads[t]);
	free(u->threads);
	free(u->lctx);
	free(u->lparent);
	free(u->lexcl);
	free(u->lincl);
	free(u->top);
	free(u->trace);
	free(u->pred);
	free(u->kids);
	free(u->ktop);
	free(u);
}

bool unifier_trace(const struct unifier *u, const struct dbtrace_record **rec, uint64_t *n)
{
	*rec = u->trace;
	*n = u->ntrace;
	return u->traced;
}

uint32_t unifier_nthreads(const struct unifier *u)
{
	return u->nthreads;
}

/* The module PATH with build-id ID (LEN bytes), added when new. */
static uint32_t module_id(struct unifier *u, const char *path, const uint8_t *id, uint32_t len)
{
	for (uint32_t i = 0; i < u->nmods; i++) {
		struct module_info *g = &u->mods[i];
		if (strcmp(g->path, path) == 0 && g->build_id_len == len &&
		    (!len || !memcmp(g->build_id, id, len)))
			return i;
	}
	if (u->nmods == u->amods) {
		u->amods = u->amods ? u->amods * 2 : 16;
		u->mods = xreallocarray(u->mods, u->amods, sizeof(*u->mods));
		u->mod_flags = xreallocarray(u->mod_flags, u->amods, sizeof(*u->mod_flags));
	}
	uint32_t n = u->nmods++;
	struct module_info *g = &u->mods[n];
	memset(g, 0, sizeof(*g));
	g->path = xstrdup(path);
	g->kernel = strcmp(g->path, MFILE_KERNEL_MODULE) == 0;
	if (len) {
		g->build_id = xmalloc(len);
		memcpy(g->build_id, id, len);
		g->build_id_len = len;
	}
	u->mod_flags[n] = 0;
	intern_str(u, g->path);
	return n;
}

static uint32_t map_module(struct unifier *u, const struct mfile_module *mm)
{
	return module_id(u, mm->path, mm->build_id, mm->build_id_len);
}

static uint32_t map_metric(struct unifier *u, const struct mfile *m, uint32_t i,
			   const uint32_t *gm)
{
	const struct mfile_metric *x = &m->metrics[i];
	for (uint32_t k = 0; k < u->nmetrics; k++)
		if (strcmp(u->metrics[k].d.name, x->name) == 0 && u->metrics[k].d.unit == x->unit)
			return k;
	if (u->nmetrics == u->ametrics) {
		u->ametrics = u->ametrics ? u->ametrics * 2 : 8;
		u->metrics = xreallocarray(u->metrics, u->ametrics, sizeof(*u->metrics));
	}
	uint32_t id = u->nmetrics++;
	struct gmetric *g = &u->metrics[id];
	memset(g, 0, sizeof(*g));
	g->d.name = xstrdup(x->name);
	g->d.description = xstrdup(x->description);
	g->d.formula = xstrdup(x->formula);
	g->d.unit = x->unit;
	g->d.rate_kind = x->rate_kind;
	g->d.rate = x->rate;
	g->d.kind = DBFILE_METRIC_RAW;
	g->d.threshold = x->threshold;
	g->d.level = x->level;
	/* Parents come earlier or later in the table: GM holds those mapped so far. */
	g->d.parent = x->parent >= 0 && (uint32_t)x->parent < i ? (int32_t)gm[x->parent] : -1;
	g->d.scale = 1;
	/* A TMA node with a formula has no values of its own: view computes it. */
	if ((x->flags & MFILE_METRIC_TMA) && x->formula[0]) {
		g->d.kind = DBFILE_METRIC_DERIVED;
		g->remap = true;
	}
	if (u->actx)
		grow_metric_arrays(u, g, 0);
	return id;
}

static uint64_t edge_hash(uint32_t parent, uint8_t kind, uint32_t module, uint64_t offset)
{
	return hmap_mix(hmap_mix(parent ^ ((uint64_t)kind << 32) ^ ((uint64_t)module << 40)) ^
			offset);
}

static void edges_grow(struct unifier *u)
{
	size_t old = u->edges ? u->edge_mask + 1 : 0, cap = old ? old * 2 : 4096;
	struct edge *e = xreallocarray(NULL, cap, sizeof(*e));
	for (size_t i = 0; i < cap; i++)
		e[i].ctx = DBFILE_NONE;
	for (size_t i = 0; i < old; i++) {
		const struct edge *x = &u->edges[i];
		if (x->ctx == DBFILE_NONE)
			continue;
		size_t h = edge_hash(x->parent, x->kind, x->module, x->offset) & (cap - 1);
		while (e[h].ctx != DBFILE_NONE)
			h = (h + 1) & (cap - 1);
		e[h] = *x;
	}
	free(u->edges);
	u->edges = e;
	u->edge_mask = cap - 1;
}

/* Module GMOD with its structure, attached on first use. */
static struct module_info *attach_module(struct unifier *u, uint32_t gmod)
{
	struct module_info *mi = &u->mods[gmod];
	if (!mi->tried) {
		structs_attach(u->ss, mi, u->problems);
		u->mod_flags[gmod] |= (mi->sf ? DBFILE_MODULE_STRUCT : 0) |
				      (mi->loops ? DBFILE_MODULE_LOOPS : 0);
	}
	return mi;
}

/* The context where a measured node's children and values go, given its parent's. */
static uint32_t node_context(struct unifier *u, uint32_t parent, uint8_t kind, uint32_t gmod,
			     uint64_t offset)
{
	if (!u->edges || (u->nedges + 1) * 2 > u->edge_mask + 1)
		edges_grow(u);
	size_t slot = edge_hash(parent, kind, gmod, offset) & u->edge_mask;
	for (;; slot = (slot + 1) & u->edge_mask) {
		const struct edge *e = &u->edges[slot];
		if (e->ctx == DBFILE_NONE)
			break;
		if (e->parent == parent && e->offset == offset && e->module == gmod &&
		    e->kind == kind)
			return e->ctx;
	}
	uint32_t ctx = parent;
	struct dbfile_context c = { .function = DBFILE_NONE, .file = DBFILE_NONE,
				    .module = DBFILE_NONE };
	if (kind == MFILE_NODE_PARTIAL || kind == MFILE_NODE_SYNTHETIC) {
		c.parent = parent;
		c.kind = DBFILE_ENTRY;
		c.line = kind == MFILE_NODE_PARTIAL ? DBFILE_ENTRY_PARTIAL : DBFILE_ENTRY_SYNTHETIC;
		c.addr = kind == MFILE_NODE_SYNTHETIC ? offset : 0;
		ctx = intern_ctx(u, &c);
	} else {
		bool is_call = kind == MFILE_NODE_FRAME;
		uint64_t addr = is_call && offset ? offset - 1 : offset;
		struct scope sc[MAX_SCOPES];
		size_t n;
		if (gmod == DBFILE_NONE) {
			n = structs_resolve(u->ss, NULL, addr, is_call, sc, MAX_SCOPES);
		} else {
			struct module_info *mi = attach_module(u, gmod);
			u->mod_flags[gmod] |= DBFILE_MODULE_SAMPLED;
			n = structs_resolve(u->ss, mi, addr, is_call, sc, MAX_SCOPES);
		}
		uint32_t func = DBFILE_NONE;
		for (size_t i = 0; i < n; i++) {
			const struct scope *s = &sc[i];
			memset(&c, 0, sizeof(c));
			c.parent = ctx;
			c.kind = s->kind;
			c.module = gmod;
			c.file = intern_str(u, s->file);
			c.line = s->line;
			c.addr = s->addr;
			if (s->kind == DBFILE_FUNCTION || s->kind == DBFILE_INLINE) {
				struct dbfile_function f = {
					.name = intern_str(u, s->name), .module = gmod,
					.file = intern_str(u, s->decl_file), .line = s->decl_line,
					.addr = s->kind == DBFILE_FUNCTION ? s->addr : 0
				};
				func = intern_func(u, &f);
				if (s->kind == DBFILE_FUNCTION)
					c.addr = 0; /* the entry is in the function table */
			}
			c.function = func;
			ctx = intern_ctx(u, &c);
		}
	}
	/* Interning above does not touch the edge table: SLOT is still free. */
	u->edges[slot] = (struct edge){ offset, parent, gmod, ctx, kind };
	u->nedges++;
	return ctx;
}

/* Give CTX and its untouched ancestors local indices in this thread, parents first. */
static void touch(struct unifier *u, uint32_t ctx, uint32_t seq, uint32_t *nlocal)
{
	uint32_t chain[MAX_SCOPES + 2], n = 0;
	while (ctx != DBFILE_NONE && u->stamp[ctx] != seq) {
		if (n == ARRAY_SIZE(chain)) {
			/* Deeper than one expansion: go up recursively (never in practice). */
			touch(u, ctx, seq, nlocal);
			break;
		}
		chain[n++] = ctx;
		ctx = u->ctx[ctx].parent;
	}
	while (n--) {
		uint32_t c = chain[n];
		if (*nlocal == u->alocal) {
			u->alocal = u->alocal ? u->alocal * 2 : 4096;
			u->lctx = xreallocarray(u->lctx, u->alocal, sizeof(*u->lctx));
			u->lparent = xreallocarray(u->lparent, u->alocal, sizeof(*u->lparent));
		}
		u->stamp[c] = seq;
		u->local[c] = *nlocal;
		u->lctx[*nlocal] = c;
		u->lparent[*nlocal] = c ? u->local[u->ctx[c].parent] : DBFILE_NONE;
		(*nlocal)++;
	}
}

/* Rewrite "$N" (metric N of this file) in FORMULA as the database's metric indices. */
struct metric_map {
	const uint32_t *gm;
	uint32_t n;
};

static uint32_t map_ref(void *vctx, uint32_t k)
{
	const struct metric_map *m = vctx;
	return k < m->n ? m->gm[k] : k;
}

static char *remap_formula(const char *formula, const uint32_t *gm, uint32_t n)
{
	struct metric_map m = { gm, n };
	/* each reference grows by at most 10 digits */
	size_t cap = strlen(formula) * 6 + 16;
	char *out = xmalloc(cap);
	if (formula_relocate(formula, map_ref, &m, out, cap) < 0)
		fth_error_clear(); /* cannot happen: CAP holds the longest result */
	return out;
}

void unifier_by_program(struct unifier *u)
{
	u->by_program = true;
}

/* The ENTRY context of M's program: its executable's module (by path), or the first. */
static uint32_t program_context(struct unifier *u, const struct mfile *m, const uint32_t *gmod)
{
	uint32_t exe = DBFILE_NONE;
	for (uint32_t i = 0; i < m->nmodules && exe == DBFILE_NONE; i++)
		if (strcmp(m->modules[i].path, m->id.program) == 0)
			exe = gmod[i];
	if (exe == DBFILE_NONE && m->nmodules)
		exe = gmod[0];
	struct dbfile_context c = { .parent = 0, .kind = DBFILE_ENTRY,
				    .line = DBFILE_ENTRY_PROGRAM, .module = exe,
				    .function = DBFILE_NONE, .file = DBFILE_NONE };
	return intern_ctx(u, &c);
}

/* The name of the function at OFFSET of module GMOD (a thread's start), or "". */
static char *function_at(struct unifier *u, uint32_t gmod, uint64_t offset)
{
	if (gmod == DBFILE_NONE || gmod >= u->nmods)
		return xstrdup("");
	struct module_info *mi = attach_module(u, gmod);
	struct scope sc[MAX_SCOPES];
	size_t n = structs_resolve(u->ss, mi, offset, false, sc, MAX_SCOPES);
	for (size_t i = 0; i < n; i++)
		if (sc[i].kind == DBFILE_FUNCTION && sc[i].name)
			return xstrdup(sc[i].name);
	return xstrdup("");
}

int unifier_add(struct unifier *u, const struct mfile *m, const char *name,
		struct dbfile_values *out)
{
	const struct mfile_cct *cct = &m->cct;
	uint32_t seq = u->nthreads;
	uint32_t *gmod = xcalloc(m->nmodules ? m->nmodules : 1, sizeof(*gmod));
	uint32_t *gm = xcalloc(m->nmetrics ? m->nmetrics : 1, sizeof(*gm));
	double *scale = xcalloc(m->nmetrics ? m->nmetrics : 1, sizeof(*scale));
	for (uint32_t i = 0; i < m->nmodules; i++)
		gmod[i] = map_module(u, &m->modules[i]);
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		const struct mfile_metric *x = &m->metrics[i];
		gm[i] = map_metric(u, m, i, gm);
		struct dbfile_metric *d = &u->metrics[gm[i]].d;
		d->flags |= x->flags;
		d->time_enabled += x->time_enabled;
		d->time_running += x->time_running;
		d->samples += x->samples;
		d->nthreads++;
		scale[i] = 1;
		if (x->time_running && x->time_running < x->time_enabled)
			scale[i] = (double)x->time_enabled / (double)x->time_running;
	}
	/* Late parents (a parent after its child in the table). */
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		struct gmetric *g = &u->metrics[gm[i]];
		int32_t p = m->metrics[i].parent;
		if (g->d.parent < 0 && p >= 0)
			g->d.parent = (int32_t)gm[p];
		if (g->remap) {
			char *f = remap_formula(g->d.formula, gm, m->nmetrics);
			free(g->d.formula);
			g->d.formula = f;
			g->remap = false;
		}
	}
	if (cct->nnodes > u->atop) {
		u->atop = cct->nnodes;
		u->top = xreallocarray(u->top, u->atop, sizeof(*u->top));
	}
	if (cct->nnodes > u->apred) {
		u->pred = xreallocarray(u->pred, cct->nnodes, sizeof(*u->pred));
		for (size_t i = u->apred; i < cct->nnodes; i++)
			u->pred[i].ctx = DBFILE_NONE;
		u->apred = cct->nnodes;
	}
	/*
	 * A user frame that the kernel interrupted (a page fault, a system call) is where the
	 * thread was, not a call: the kernel's frames hang below its line, as a sample's would.
	 * KIDS[i] says which kinds of children node I has.
	 */
	if (cct->nnodes > u->akids) {
		u->akids = cct->nnodes;
		u->kids = xreallocarray(u->kids, u->akids, sizeof(*u->kids));
		u->ktop = xreallocarray(u->ktop, u->akids, sizeof(*u->ktop));
	}
	memset(u->kids, 0, cct->nnodes * sizeof(*u->kids));
	for (uint32_t i = 1; i < cct->nnodes; i++) {
		uint32_t mod = cct->module[i];
		bool kernel = mod != MFILE_NO_MODULE && u->mods[gmod[mod]].kernel;
		u->kids[cct->parent[i]] |= kernel ? KIDS_KERNEL : KIDS_USER;
	}
	/* The stamp of this thread is its sequence number: mark the root first. */
	uint32_t nlocal = 0;
	touch(u, 0, seq, &nlocal);
	u->top[0] = 0;
	if (u->by_program) {
		u->top[0] = program_context(u, m, gmod);
		touch(u, u->top[0], seq, &nlocal);
	}
	u->ktop[0] = u->top[0];
	for (uint32_t i = 1; i < cct->nnodes; i++) {
		uint32_t mod = cct->module[i];
		uint32_t g = mod == MFILE_NO_MODULE ? DBFILE_NONE : gmod[mod];
		bool kernel = g != DBFILE_NONE && u->mods[g].kernel;
		uint32_t pn = cct->parent[i];
		uint32_t parent = kernel ? u->ktop[pn] : u->top[pn];
		uint8_t kind = cct->kind[i];
		uint32_t c = DBFILE_NONE;
		u->ktop[i] = DBFILE_NONE;
		if (kind == MFILE_NODE_FRAME && !kernel && (u->kids[i] & KIDS_KERNEL)) {
			u->ktop[i] = node_context(u, parent, MFILE_NODE_SAMPLE, g, cct->offset[i]);
			touch(u, u->ktop[i], seq, &nlocal);
			if (!(u->kids[i] & KIDS_USER))
				c = u->ktop[i];
		}
		if (c == DBFILE_NONE) {
			struct edge *p = &u->pred[i];
			if (p->ctx != DBFILE_NONE && p->parent == parent &&
			    p->offset == cct->offset[i] && p->module == g && p->kind == kind) {
				c = p->ctx;
			} else {
				c = node_context(u, parent, kind, g, cct->offset[i]);
				*p = (struct edge){ cct->offset[i], parent, g, c, kind };
			}
			touch(u, c, seq, &nlocal);
		}
		u->top[i] = c;
		if (u->ktop[i] == DBFILE_NONE)
			u->ktop[i] = c; /* a kernel frame's kernel children hang below it */
	}
	uint32_t nm = m->nmetrics;
	size_t need = (size_t)nlocal * (nm ? nm : 1);
	if (need > u->aval) {
		u->aval = need;
		u->lexcl = xreallocarray(u->lexcl, need, sizeof(double));
		u->lincl = xreallocarray(u->lincl, need, sizeof(double));
	}
	memset(u->lexcl, 0, need * sizeof(double));
	for (uint32_t i = 0; i < cct->nnodes; i++) {
		size_t base = (size_t)u->local[u->top[i]] * nm;
		for (uint32_t v = cct->val_start[i]; v < cct->val_start[i + 1]; v++) {
			uint16_t k = cct->val_metric[v];
			u->lexcl[base + k] += (double)cct->val[v] * scale[k];
		}
	}
	memcpy(u->lincl, u->lexcl, need * sizeof(double));
	for (uint32_t l = nlocal; l-- > 1;) {
		size_t a = (size_t)l * nm, b = (size_t)u->lparent[l] * nm;
		for (uint32_t k = 0; k < nm; k++)
			u->lincl[b + k] += u->lincl[a + k];
	}
	if (out)
		dbfile_values_reset(out);
	for (uint32_t l = 0; l < nlocal; l++) {
		uint32_t c = u->lctx[l];
		for (uint32_t k = 0; k < nm; k++) {
			double in = u->lincl[(size_t)l * nm + k], ex = u->lexcl[(size_t)l * nm + k];
			if (in == 0 && ex == 0)
				continue;
			struct gmetric *g = &u->metrics[gm[k]];
			if (in != 0 && !u->no_stats)
				acc_add(&g->incl[c], in);
			if (ex != 0 && !u->no_stats)
				acc_add(&g->excl[c], ex);
			if (out)
				dbfile_values_push(out, c, (uint16_t)gm[k], in, ex);
		}
	}
	/* The trace, each sample at the context its node became. */
	u->ntrace = 0;
	u->traced = m->has_trace;
	if (m->has_trace && m->ntrace) {
		if (m->ntrace > u->atrace) {
			u->atrace = m->ntrace;
			u->trace = xreallocarray(u->trace, u->atrace, sizeof(*u->trace));
		}
		for (uint64_t i = 0; i < m->ntrace; i++)
			u->trace[i] = (struct dbtrace_record){ m->trace[i].time_ns,
							       u->top[m->trace[i].node] };
		u->ntrace = m->ntrace;
	}
	char *entry = m->id.has_entry && m->id.entry.module < m->nmodules
			      ? function_at(u, gmod[m->id.entry.module], m->id.entry.offset)
			      : xstrdup("");
	free(gmod);
	free(gm);
	free(scale);
	if (u->nthreads == u->athreads) {
		u->athreads = u->athreads ? u->athreads * 2 : 64;
		u->threads = xreallocarray(u->threads, u->athreads, sizeof(*u->threads));
	}
	struct dbfile_thread *t = &u->threads[u->nthreads++];
	const char *base = strrchr(name, '/');
	t->file = xstrdup(base ? base + 1 : name);
	t->host = xstrdup(m->id.host);
	t->program = xstrdup(m->id.program);
	t->pid = m->id.pid;
	t->tid = m->id.tid;
	t->thread_index = m->id.thread_index;
	t->rank = m->id.rank;
	t->start_ns = m->id.start_ns;
	t->end_ns = m->id.end_ns;
	t->ppid = m->id.ppid;
	t->argc = m->id.argc;
	t->argv = xcalloc(m->id.argc ? m->id.argc : 1, sizeof(*t->argv));
	for (uint32_t a = 0; a < m->id.argc; a++)
		t->argv[a] = xstrdup(m->id.argv[a]);
	/* A name the program gave: not the one every thread inherits from the executable. */
	const char *exe = strrchr(m->id.program, '/');
	exe = exe ? exe + 1 : m->id.program;
	t->name = xstrdup(m->id.name && m->id.name[0] && strncmp(m->id.name, exe, 15) != 0
				  ? m->id.name
				  : "");
	t->entry = entry;
	t->cpu = xstrdup(m->id.cpu ? m->id.cpu : "");
	return 0;
}

void unifier_finish(struct unifier *u, struct dbfile *db, const char *program)
{
	memset(db, 0, sizeof(*db));
	db->major = DBFILE_MAJOR;
	db->minor = DBFILE_MINOR;
	db->program = xstrdup(program ? program : "");
	db->nstrings = u->nstrs;
	db->strings = xcalloc(u->nstrs ? u->nstrs : 1, sizeof(char *));
	for (uint32_t i = 0; i < u->nstrs; i++)
		db->strings[i] = xstrdup(u->strs[i]);
	db->nmodules = u->nmods;
	db->modules = xcalloc(u->nmods ? u->nmods : 1, sizeof(*db->modules));
	for (uint32_t i = 0; i < u->nmods; i++) {
		struct dbfile_module *d = &db->modules[i];
		const struct module_info *g = &u->mods[i];
		d->path = intern_str(u, g->path);
		if (g->build_id_len) {
			d->build_id = xmalloc(g->build_id_len);
			memcpy(d->build_id, g->build_id, g->build_id_len);
			d->build_id_len = g->build_id_len;
		}
		d->flags = u->mod_flags[i];
		if (g->tried && !g->loops && g->path[0] != '[')
			db->flags |= DBFILE_FLAG_NO_LOOPS;
	}
	db->nfunctions = u->nfuncs;
	db->functions = xcalloc(u->nfuncs ? u->nfuncs : 1, sizeof(*db->functions));
	memcpy(db->functions, u->funcs, (size_t)u->nfuncs * sizeof(*db->functions));
	/* Raw metrics, then one derived "NAME (s)" per metric in nanoseconds (time in seconds). */
	uint32_t ntime = 0;
	for (uint32_t i = 0; i < u->nmetrics; i++)
		ntime += u->metrics[i].d.unit == MFILE_UNIT_NANOSECONDS;
	if (u->nmetrics + ntime > MFILE_MAX_METRICS)
		ntime = 0;
	db->nmetrics = u->nmetrics + ntime;
	db->metrics = xcalloc(db->nmetrics ? db->nmetrics : 1, sizeof(*db->metrics));
	uint32_t derived = u->nmetrics;
	for (uint32_t i = 0; i < u->nmetrics; i++) {
		struct dbfile_metric *d = &db->metrics[i];
		*d = u->metrics[i].d;
		d->name = xstrdup(d->name);
		d->description = xstrdup(d->description);
		d->formula = xstrdup(d->formula);
		d->scale = d->time_running && d->time_running < d->time_enabled
				   ? (double)d->time_enabled / (double)d->time_running
				   : 1;
		if (!ntime || d->unit != MFILE_UNIT_NANOSECONDS)
			continue;
		struct dbfile_metric *t = &db->metrics[derived++];
		size_t n = strlen(d->name) + 8;
		t->name = xmalloc(n);
		snprintf(t->name, n, "%s (s)", d->name);
		t->description = xstrdup("time in seconds");
		t->unit = MFILE_UNIT_COUNT;
		t->kind = DBFILE_METRIC_DERIVED;
		t->parent = -1;
		t->threshold = NAN;
		char f[32];
		snprintf(f, sizeof(f), "$%u / 1e9", i);
		t->formula = xstrdup(f);
		t->scale = 1;
	}
	db->nthreads = u->nthreads;
	db->thread_group = dbfile_thread_group(u->nthreads);
	db->threads = xcalloc(u->nthreads ? u->nthreads : 1, sizeof(*db->threads));
	for (uint32_t t = 0; t < u->nthreads; t++) {
		db->threads[t] = u->threads[t];
		db->threads[t].file = xstrdup(u->threads[t].file);
		db->threads[t].host = xstrdup(u->threads[t].host);
		db->threads[t].program = xstrdup(u->threads[t].program);
		db->threads[t].name = xstrdup(u->threads[t].name);
		db->threads[t].entry = xstrdup(u->threads[t].entry);
		db->threads[t].cpu = xstrdup(u->threads[t].cpu);
		db->threads[t].argv = xcalloc(u->threads[t].argc + 1, sizeof(char *));
		for (uint32_t a = 0; a < u->threads[t].argc; a++)
			db->threads[t].argv[a] = xstrdup(u->threads[t].argv[a]);
	}
	db->ncontexts = u->nctx;
	db->contexts = xcalloc(u->nctx, sizeof(*db->contexts));
	memcpy(db->contexts, u->ctx, (size_t)u->nctx * sizeof(*db->contexts));
	/* Strings added above (module paths) must be in the table too. */
	if (db->nstrings != u->nstrs) {
		db->strings = xreallocarray(db->strings, u->nstrs, sizeof(char *));
		for (uint32_t i = db->nstrings; i < u->nstrs; i++)
			db->strings[i] = xstrdup(u->strs[i]);
		db->nstrings = u->nstrs;
	}
	uint64_t cnt = 0;
	for (uint32_t c = 0; c < u->nctx && !u->no_stats; c++)
		for (uint32_t k = 0; k < u->nmetrics; k++)
			cnt += u->metrics[k].incl[c].count || u->metrics[k].excl[c].count;
	db->nsum = cnt;
	db->sum_start = xcalloc((size_t)u->nctx + 1, sizeof(*db->sum_start));
	db->sum_metric = xcalloc(cnt ? cnt : 1, sizeof(*db->sum_metric));
	db->sum_incl = xcalloc(cnt ? cnt : 1, sizeof(*db->sum_incl));
	db->sum_excl = xcalloc(cnt ? cnt : 1, sizeof(*db->sum_excl));
	uint64_t j = 0;
	for (uint32_t c = 0; c < u->nctx && !u->no_stats; c++) {
		db->sum_start[c] = (uint32_t)j;
		for (uint32_t k = 0; k < u->nmetrics; k++) {
			const struct acc *ai = &u->metrics[k].incl[c], *ae = &u->metrics[k].excl[c];
			if (!ai->count && !ae->count)
				continue;
			db->sum_metric[j] = (uint16_t)k;
			acc_finish(ai, &db->sum_incl[j]);
			acc_finish(ae, &db->sum_excl[j]);
			j++;
		}
	}
	db->sum_start[u->nctx] = (uint32_t)j;
}

/* ---- the tree merged so far as bytes, and merging such bytes (prof-mpi's reduction) ---- */

void unifier_no_stats(struct unifier *u)
{
	u->no_stats = true;
}

uint32_t unifier_nmetrics(const struct unifier *u)
{
	return u->nmetrics;
}

const struct dbfile_thread *unifier_thread(const struct unifier *u, uint32_t t)
{
	return t < u->nthreads ? &u->threads[t] : NULL;
}

#define PACK_VERSION 1

static void put_ref(struct buf *b, uint32_t v)
{
	buf_put_varint(b, v == DBFILE_NONE ? 0 : (uint64_t)v + 1);
}

static void put_strs(struct buf *b, char *const *s, size_t n)
{
	buf_put_varint(b, n);
	for (size_t i = 0; i < n; i++)
		buf_put_str(b, s[i]);
}

void unifier_pack(const struct unifier *u, struct buf *b)
{
	buf_put_varint(b, PACK_VERSION);
	buf_put_varint(b, u->by_program);
	put_strs(b, u->strs, u->nstrs);
	buf_put_varint(b, u->nmods);
	for (uint32_t i = 0; i < u->nmods; i++) {
		const struct module_info *g = &u->mods[i];
		buf_put_str(b, g->path);
		buf_put_varint(b, g->build_id_len);
		buf_add(b, g->build_id, g->build_id_len);
		buf_put_varint(b, u->mod_flags[i]);
		buf_put_varint(b, (uint64_t)g->tried | (uint64_t)g->loops << 1);
	}
	buf_put_varint(b, u->nfuncs);
	for (uint32_t i = 0; i < u->nfuncs; i++) {
		const struct dbfile_function *f = &u->funcs[i];
		put_ref(b, f->name);
		put_ref(b, f->module);
		put_ref(b, f->file);
		buf_put_varint(b, f->line);
		buf_put_varint(b, f->addr);
	}
	buf_put_varint(b, u->nctx);
	for (uint32_t i = 1; i < u->nctx; i++) {
		const struct dbfile_context *c = &u->ctx[i];
		buf_put_varint(b, c->parent);
		buf_put_varint(b, c->kind);
		put_ref(b, c->function);
		put_ref(b, c->file);
		buf_put_varint(b, c->line);
		put_ref(b, c->module);
		buf_put_varint(b, c->addr);
	}
	buf_put_varint(b, u->nmetrics);
	for (uint32_t i = 0; i < u->nmetrics; i++) {
		const struct dbfile_metric *d = &u->metrics[i].d;
		buf_put_str(b, d->name);
		buf_put_str(b, d->description);
		buf_put_str(b, d->formula);
		buf_put_varint(b, d->unit);
		buf_put_varint(b, d->rate_kind);
		buf_put_varint(b, d->rate);
		buf_put_varint(b, d->kind);
		buf_put_u64(b, le_f64_bits(d->threshold));
		buf_put_varint(b, d->level);
		buf_put_varint(b, (uint64_t)((int64_t)d->parent + 1));
		buf_put_varint(b, d->flags);
		buf_put_varint(b, d->time_enabled);
		buf_put_varint(b, d->time_running);
		buf_put_varint(b, d->samples);
		buf_put_varint(b, d->nthreads);
	}
	buf_put_varint(b, u->nthreads);
	for (uint32_t i = 0; i < u->nthreads; i++) {
		const struct dbfile_thread *t = &u->threads[i];
		buf_put_str(b, t->file);
		buf_put_str(b, t->host);
		buf_put_str(b, t->program);
		buf_put_varint(b, t->pid);
		buf_put_varint(b, t->tid);
		buf_put_varint(b, t->thread_index);
		buf_put_varint(b, (uint64_t)((int64_t)t->rank + 1));
		buf_put_varint(b, t->start_ns);
		buf_put_varint(b, t->end_ns);
		buf_put_varint(b, t->ppid);
		put_strs(b, t->argv, t->argc);
		buf_put_str(b, t->name);
		buf_put_str(b, t->entry);
		buf_put_str(b, t->cpu);
	}
	put_strs(b, u->problems->msgs, u->problems->n);
	put_strs(b, u->problems->notes, u->problems->nnotes);
}

/* Reading packed bytes: a failure sticks, and every read after it gives 0 or "". */
struct unpack {
	const uint8_t *p, *end;
	bool bad;
};

static uint64_t get_u(struct unpack *r)
{
	uint64_t v = 0;
	if (!r->bad && le_get_varint(&r->p, r->end, &v) < 0)
		r->bad = true;
	return r->bad ? 0 : v;
}

/* A count of items of at least one byte each. */
static uint64_t get_count(struct unpack *r)
{
	uint64_t n = get_u(r);
	if (n > (uint64_t)(r->end - r->p) || n > UINT32_MAX)
		r->bad = true;
	return r->bad ? 0 : n;
}

static uint32_t get_ref(struct unpack *r, uint32_t n)
{
	uint64_t v = get_u(r);
	if (v > n)
		r->bad = true;
	return r->bad || v == 0 ? DBFILE_NONE : (uint32_t)(v - 1);
}

static double get_f64(struct unpack *r)
{
	uint64_t u = 0;
	if (r->end - r->p < 8)
		r->bad = true;
	else
		u = le_get64(r->p), r->p += 8;
	return le_bits_f64(u);
}

static const uint8_t *get_bytes(struct unpack *r, uint64_t n)
{
	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *at = r->p;
	r->p += n;
	return at;
}

/* A string, owned by the caller. */
static char *get_str(struct unpack *r)
{
	uint64_t n = get_u(r);
	const uint8_t *at = get_bytes(r, n);
	char *s = xmalloc(at ? n + 1 : 1);
	if (at)
		memcpy(s, at, n);
	s[at ? n : 0] = '\0';
	return s;
}

/* Strings that are not in *LIST yet (N of them) added to it, in order. */
static void merge_strs(struct unpack *r, char ***list, size_t *n, size_t *alloc)
{
	uint64_t k = get_count(r);
	for (uint64_t i = 0; i < k && !r->bad; i++) {
		char *s = get_str(r);
		size_t j = 0;
		while (j < *n && strcmp((*list)[j], s) != 0)
			j++;
		if (j < *n) {
			free(s);
			continue;
		}
		ALLOC_GROW(*list, *n + 1, *alloc);
		(*list)[(*n)++] = s;
	}
}

/* The metrics of R into U; MAP->metric their numbers in U. */
static void merge_metrics(struct unifier *u, struct unpack *r, struct unifier_map *map)
{
	uint64_t n = get_count(r);
	map->metric = xcalloc(n ? n : 1, sizeof(*map->metric));
	map->nmetrics = (uint32_t)n;
	int32_t *parent = xcalloc(n ? n : 1, sizeof(*parent));
	bool *added = xcalloc(n ? n : 1, sizeof(*added));
	char **formula = xcalloc(n ? n : 1, sizeof(*formula));
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		struct dbfile_metric d = { 0 };
		d.name = get_str(r);
		d.description = get_str(r);
		d.formula = get_str(r);
		d.unit = (uint8_t)get_u(r);
		d.rate_kind = (uint8_t)get_u(r);
		d.rate = get_u(r);
		d.kind = (uint8_t)get_u(r);
		d.threshold = get_f64(r);
		d.level = (uint8_t)get_u(r);
		parent[i] = (int32_t)((int64_t)get_u(r) - 1);
		d.flags = (uint32_t)get_u(r);
		d.time_enabled = get_u(r);
		d.time_running = get_u(r);
		d.samples = get_u(r);
		d.nthreads = (uint32_t)get_u(r);
		if (parent[i] < -1 || parent[i] >= (int64_t)n)
			r->bad = true;
		uint32_t k = 0;
		while (k < u->nmetrics &&
		       !(strcmp(u->metrics[k].d.name, d.name) == 0 && u->metrics[k].d.unit == d.unit))
			k++;
		map->metric[i] = k;
		if (k == u->nmetrics) {
			if (u->nmetrics == u->ametrics) {
				u->ametrics = u->ametrics ? u->ametrics * 2 : 8;
				u->metrics = xreallocarray(u->metrics, u->ametrics, sizeof(*u->metrics));
			}
			struct gmetric *g = &u->metrics[u->nmetrics++];
			memset(g, 0, sizeof(*g));
			g->d = d;
			g->d.parent = -1;
			g->d.scale = 1;
			formula[i] = d.formula;
			g->d.formula = NULL;
			added[i] = true;
			if (u->actx)
				grow_metric_arrays(u, g, 0);
			continue;
		}
		struct dbfile_metric *e = &u->metrics[k].d;
		e->flags |= d.flags;
		e->time_enabled += d.time_enabled;
		e->time_running += d.time_running;
		e->samples += d.samples;
		e->nthreads += d.nthreads;
		dbfile_metric_release(&d);
	}
	for (uint64_t i = 0; i < n; i++) {
		struct dbfile_metric *e = &u->metrics[map->metric[i]].d;
		if (r->bad) {
			free(formula[i]);
			continue;
		}
		if (e->parent < 0 && parent[i] >= 0)
			e->parent = (int32_t)map->metric[parent[i]];
		if (added[i]) {
			/* "$N" are the sender's numbers */
			e->formula = remap_formula(formula[i], map->metric, map->nmetrics);
			free(formula[i]);
		}
	}
	for (uint32_t k = 0; k < u->nmetrics; k++)
		if (!u->metrics[k].d.formula)
			u->metrics[k].d.formula = xstrdup("");
	free(parent);
	free(added);
	free(formula);
}

/* The threads of R after U's. */
static void merge_threads(struct unifier *u, struct unpack *r)
{
	uint64_t n = get_count(r);
	for (uint64_t i = 0; i < n && !r->bad; i++) {
		if (u->nthreads == u->athreads) {
			u->athreads = u->athreads ? u->athreads * 2 : 64;
			u->threads = xreallocarray(u->threads, u->athreads, sizeof(*u->threads));
		}
		struct dbfile_thread *t = &u->threads[u->nthreads++];
		memset(t, 0, sizeof(*t));
		t->file = get_str(r);
		t->host = get_str(r);
		t->program = get_str(r);
		t->pid = (uint32_t)get_u(r);
		t->tid = (uint32_t)get_u(r);
		t->thread_index = (uint32_t)get_u(r);
		t->rank = (int32_t)((int64_t)get_u(r) - 1);
		t->start_ns = get_u(r);
		t->end_ns = get_u(r);
		t->ppid = (uint32_t)get_u(r);
		uint64_t argc = get_count(r);
		t->argc = (uint32_t)argc;
		t->argv = xcalloc(argc ? argc : 1, sizeof(*t->argv));
		for (uint64_t a = 0; a < argc; a++)
			t->argv[a] = get_str(r);
		t->name = get_str(r);
		t->entry = get_str(r);
		t->cpu = get_str(r);
	}
}

/* The number MAP gives V, or DBFILE_NONE for none. */
static uint32_t mapped(const uint32_t *map, uint32_t v)
{
	return v == DBFILE_NONE ? DBFILE_NONE : map[v];
}

int unifier_merge(struct unifier *u, const uint8_t *data, size_t len, struct unifier_map *map)
{
	struct unpack r = { data, data + len, false };
	memset(map, 0, sizeof(*map));
	if (get_u(&r) != PACK_VERSION)
		return fth_error("a merged tree of another version of prof-mpi");
	if (get_u(&r))
		u->by_program = true;
	uint64_t nstrs = get_count(&r);
	uint32_t *str = xcalloc(nstrs ? nstrs : 1, sizeof(*str));
	for (uint64_t i = 0; i < nstrs && !r.bad; i++) {
		char *s = get_str(&r);
		str[i] = intern_str(u, s);
		free(s);
	}
	uint64_t nmods = get_count(&r);
	uint32_t *mod = xcalloc(nmods ? nmods : 1, sizeof(*mod));
	for (uint64_t i = 0; i < nmods && !r.bad; i++) {
		char *path = get_str(&r);
		uint64_t idlen = get_u(&r);
		const uint8_t *id = get_bytes(&r, idlen);
		uint32_t flags = (uint32_t)get_u(&r), tried = (uint32_t)get_u(&r);
		if (r.bad) {
			free(path);
			break;
		}
		mod[i] = module_id(u, path, id, (uint32_t)idlen);
		free(path);
		u->mod_flags[mod[i]] |= flags;
		u->mods[mod[i]].tried |= (tried & 1) != 0;
		u->mods[mod[i]].loops |= (tried & 2) != 0;
	}
	uint64_t nfuncs = get_count(&r);
	uint32_t *func = xcalloc(nfuncs ? nfuncs : 1, sizeof(*func));
	for (uint64_t i = 0; i < nfuncs && !r.bad; i++) {
		struct dbfile_function f;
		memset(&f, 0, sizeof(f));
		f.name = mapped(str, get_ref(&r, (uint32_t)nstrs));
		f.module = mapped(mod, get_ref(&r, (uint32_t)nmods));
		f.file = mapped(str, get_ref(&r, (uint32_t)nstrs));
		f.line = (uint32_t)get_u(&r);
		f.addr = get_u(&r);
		if (!r.bad)
			func[i] = intern_func(u, &f);
	}
	uint64_t nctx = get_count(&r);
	map->ctx = xcalloc(nctx ? nctx : 1, sizeof(*map->ctx));
	map->nctx = (uint32_t)nctx;
	for (uint64_t i = 1; i < nctx && !r.bad; i++) {
		struct dbfile_context c;
		memset(&c, 0, sizeof(c));
		uint64_t parent = get_u(&r);
		c.kind = (uint8_t)get_u(&r);
		uint32_t fn = get_ref(&r, (uint32_t)nfuncs);
		c.function = fn == DBFILE_NONE ? DBFILE_NONE : func[fn];
		c.file = mapped(str, get_ref(&r, (uint32_t)nstrs));
		c.line = (uint32_t)get_u(&r);
		c.module = mapped(mod, get_ref(&r, (uint32_t)nmods));
		c.addr = get_u(&r);
		if (parent >= i)
			r.bad = true; /* a parent comes before its children */
		if (r.bad)
			break;
		c.parent = map->ctx[parent];
		map->ctx[i] = intern_ctx(u, &c);
	}
	free(str);
	free(mod);
	free(func);
	if (!r.bad)
		merge_metrics(u, &r, map);
	if (!r.bad)
		merge_threads(u, &r);
	if (!r.bad)
		merge_strs(&r, &u->problems->msgs, &u->problems->n, &u->problems->alloc);
	if (!r.bad)
		merge_strs(&r, &u->problems->notes, &u->problems->nnotes, &u->problems->anotes);
	if (r.bad || r.p != r.end) {
		unifier_map_release(map);
		return fth_error("a merged tree is malformed or truncated");
	}
	return 0;
}

void unifier_map_release(struct unifier_map *map)
{
	FREE_AND_NULL(map->ctx);
	FREE_AND_NULL(map->metric);
	map->nctx = map->nmetrics = 0;
}
