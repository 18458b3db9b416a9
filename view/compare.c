/* SPDX-License-Identifier: MIT */
/*
 * compare.c: view A B (compare.h): strings, modules (by file name) and functions (by module
 * and name) of the two databases matched, contexts matched level by level below matched
 * parents by what they are in the source, metrics matched by name and unit into groups of
 * four, the values of both runs renumbered into one database, written to a private temporary
 * directory, opened, and the directory removed.  How and why: doc/internals.md, "Comparing
 * two runs".
 */
#include "compat.h"
#include "compare.h"
#include "dbfile.h"
#include "error.h"
#include "formula.h"
#include "hmap.h"
#include "mfile.h"
#include "model-internal.h" /* base_name */
#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Strings made unique: an index per distinct string. */
struct interner {
	char **s;
	uint32_t n;
	size_t cap;
	struct hmap map; /* hash (re-mixed on a collision) -> index */
};

static uint32_t intern(struct interner *in, const char *s)
{
	uint64_t key = hmap_mix(hmap_fnv1a(HMAP_FNV_BASIS, s, strlen(s)));
	for (;; key = hmap_mix(key + 1)) {
		uint64_t v;
		if (!hmap_get(&in->map, key, &v)) {
			ALLOC_GROW(in->s, (size_t)in->n + 1, in->cap);
			in->s[in->n] = xstrdup(s);
			hmap_put(&in->map, key, in->n);
			return in->n++;
		}
		if (!strcmp(in->s[v], s))
			return (uint32_t)v;
	}
}

static void interner_release(struct interner *in, bool keep_strings)
{
	for (uint32_t i = 0; !keep_strings && i < in->n; i++)
		free(in->s[i]);
	if (!keep_strings)
		free(in->s);
	hmap_release(&in->map);
}

/* One of the two databases, and where its items went in the merged one. */
struct side {
	const char *name; /* as the user gave it */
	struct dbfile db;
	uint32_t *str;	  /* string -> merged string, DBFILE_NONE until asked */
	uint32_t *file_key; /* string -> its file name's key (names), DBFILE_NONE until asked */
	uint32_t *module, *function, *metric, *ctx;
	bool *tma;
	uint32_t *match; /* metric -> the other run's metric of the same group, or NONE */
	double *total;	 /* metric -> the run's total (the root's inclusive value) */
};

struct merge {
	struct side side[2];
	struct dbfile out;
	struct interner strings, names;
	size_t amodules, afunctions, ametrics, acontexts;
	bool *same_build; /* merged module -> both runs had it, with one build-id */
	struct hmap module_of, function_of;
	uint32_t *pair[2]; /* merged context -> the context of each side, or NONE */
	struct model_compare *cmp;
	size_t acmp_metrics, anotes;
	uint32_t matched, only[2];
};

static uint32_t side_string(struct merge *m, struct side *s, uint32_t i)
{
	if (i >= s->db.nstrings)
		return DBFILE_NONE;
	if (s->str[i] == DBFILE_NONE)
		s->str[i] = intern(&m->strings, s->db.strings[i]);
	return s->str[i];
}

/* The key of a source file: its name without the directory, so that a rebuild elsewhere
 * still matches. */
static uint32_t side_file_key(struct merge *m, struct side *s, uint32_t i)
{
	if (i >= s->db.nstrings)
		return DBFILE_NONE;
	if (s->file_key[i] == DBFILE_NONE) {
		const char *path = s->db.strings[i], *slash = strrchr(path, '/');
		s->file_key[i] = intern(&m->names, slash && slash[1] ? slash + 1 : path);
	}
	return s->file_key[i];
}

static void add_note(struct merge *m, const char *fmt, ...) FTH_PRINTF(2, 3);
static void add_note(struct merge *m, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	ALLOC_GROW(m->cmp->notes, (size_t)m->cmp->nnotes + 1, m->anotes);
	m->cmp->notes[m->cmp->nnotes++] = xstrdup(text);
}

/* ---- modules and functions ---- */

/* The key a module matches by: its file name; the program's own executable matches the
 * other run's however it was renamed (app-O2 and app-O3); the vDSO whatever its build. */
static uint32_t module_key(struct merge *m, struct side *s, uint32_t i)
{
	const struct dbfile_module *mod = &s->db.modules[i];
	const char *path = dbfile_str(&s->db, mod->path);
	if (s->db.program && !strcmp(path, s->db.program))
		return intern(&m->names, "\001program");
	uint32_t key = side_file_key(m, s, mod->path);
	if (key != DBFILE_NONE && !strncmp(m->names.s[key], "vdso-", 5))
		return intern(&m->names, "\001vdso");
	return key;
}

static void merge_modules(struct merge *m)
{
	const char *program[2] = { m->side[0].db.program, m->side[1].db.program };
	if (program[0] && program[1] && strcmp(base_name(program[0]), base_name(program[1])))
		add_note(m, "program: A's %s compared with B's %s", base_name(program[0]),
			 base_name(program[1]));
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		s->module = xcalloc(s->db.nmodules + 1, sizeof(uint32_t));
		for (uint32_t i = 0; i < s->db.nmodules; i++) {
			const struct dbfile_module *mod = &s->db.modules[i];
			uint32_t key = module_key(m, s, i);
			uint64_t v;
			if (hmap_get(&m->module_of, key, &v)) {
				const struct dbfile_module *d = &m->out.modules[v];
				m->same_build[v] = k == 1 && mod->build_id_len &&
						   d->build_id_len == mod->build_id_len &&
						   !memcmp(d->build_id, mod->build_id, mod->build_id_len);
				m->out.modules[v].flags |= mod->flags;
				s->module[i] = (uint32_t)v;
				continue;
			}
			size_t had = m->amodules;
			ALLOC_GROW(m->out.modules, (size_t)m->out.nmodules + 1, m->amodules);
			if (had != m->amodules)
				m->same_build = xreallocarray(m->same_build, m->amodules, sizeof(bool));
			m->same_build[m->out.nmodules] = false;
			struct dbfile_module *d = &m->out.modules[m->out.nmodules];
			*d = (struct dbfile_module){ .path = side_string(m, s, mod->path),
						     .flags = mod->flags };
			if (mod->build_id_len) {
				d->build_id = xmalloc(mod->build_id_len);
				memcpy(d->build_id, mod->build_id, mod->build_id_len);
				d->build_id_len = mod->build_id_len;
			}
			hmap_put(&m->module_of, key, m->out.nmodules);
			s->module[i] = m->out.nmodules++;
		}
	}
}

static uint32_t side_module(const struct side *s, uint32_t i)
{
	return i < s->db.nmodules ? s->module[i] : DBFILE_NONE;
}

static void merge_functions(struct merge *m)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		s->function = xcalloc(s->db.nfunctions + 1, sizeof(uint32_t));
		for (uint32_t i = 0; i < s->db.nfunctions; i++) {
			const struct dbfile_function *f = &s->db.functions[i];
			uint32_t name = side_string(m, s, f->name), mod = side_module(s, f->module);
			uint64_t key = (uint64_t)mod << 32 | name, v;
			if (hmap_get(&m->function_of, key, &v)) {
				s->function[i] = (uint32_t)v;
				continue;
			}
			ALLOC_GROW(m->out.functions, (size_t)m->out.nfunctions + 1, m->afunctions);
			m->out.functions[m->out.nfunctions] = (struct dbfile_function){
				.name = name,
				.module = mod,
				.file = side_string(m, s, f->file),
				.line = f->line,
				.addr = f->addr,
			};
			hmap_put(&m->function_of, key, m->out.nfunctions);
			s->function[i] = m->out.nfunctions++;
		}
	}
}

static uint32_t side_function(const struct side *s, uint32_t i)
{
	return i < s->db.nfunctions ? s->function[i] : DBFILE_NONE;
}

/* ---- metrics ---- */

static void mark_tma(struct side *s)
{
	s->tma = xcalloc(s->db.nmetrics + 1, sizeof(bool));
	for (uint32_t k = 0; k < s->db.nmetrics; k++) {
		int32_t p = s->db.metrics[k].parent;
		if (p >= 0 && (uint32_t)p < s->db.nmetrics)
			s->tma[k] = s->tma[p] = true;
	}
}

static bool is_time(const struct dbfile_metric *x)
{
	return x->kind == DBFILE_METRIC_RAW && x->unit == MFILE_UNIT_NANOSECONDS;
}

/* Pair each metric of A with B's of the same name, unit and kind; then, when each run has one
 * time metric left (cpu-clock in one, task-clock in the other), those two: time is time. */
static void match_metrics(struct merge *m)
{
	struct side *a = &m->side[0], *b = &m->side[1];
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		mark_tma(s);
		s->match = xmalloc((s->db.nmetrics + 1) * sizeof(uint32_t));
		for (uint32_t i = 0; i <= s->db.nmetrics; i++)
			s->match[i] = DBFILE_NONE;
	}
	for (uint32_t i = 0; i < a->db.nmetrics; i++) {
		const struct dbfile_metric *x = &a->db.metrics[i];
		for (uint32_t j = 0; j < b->db.nmetrics && !a->tma[i]; j++) {
			const struct dbfile_metric *y = &b->db.metrics[j];
			if (b->tma[j] || b->match[j] != DBFILE_NONE || strcmp(x->name, y->name) ||
			    x->unit != y->unit || x->kind != y->kind)
				continue;
			a->match[i] = j;
			b->match[j] = i;
			break;
		}
	}
	uint32_t left[2] = { DBFILE_NONE, DBFILE_NONE }, nleft[2] = { 0, 0 };
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < m->side[k].db.nmetrics; i++)
			if (!m->side[k].tma[i] && m->side[k].match[i] == DBFILE_NONE &&
			    is_time(&m->side[k].db.metrics[i])) {
				left[k] = i;
				nleft[k]++;
			}
	if (nleft[0] == 1 && nleft[1] == 1) {
		a->match[left[0]] = left[1];
		b->match[left[1]] = left[0];
		add_note(m, "time: A's %s compared with B's %s, in seconds",
			 a->db.metrics[left[0]].name, b->db.metrics[left[1]].name);
	}
}

static void side_totals(struct merge *m)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		s->total = xcalloc(s->db.nmetrics + 1, sizeof(double));
		struct dbfile_row r;
		if (s->db.ncontexts && dbfile_summary_row(&s->db, 0, &r) == 0)
			for (uint32_t j = 0; j < r.n; j++)
				if (r.metric[j] < s->db.nmetrics)
					s->total[r.metric[j]] = r.val[2 * (size_t)j];
	}
}

static uint32_t new_metric(struct merge *m, const struct model_compare_metric *role)
{
	ALLOC_GROW(m->out.metrics, (size_t)m->out.nmetrics + 1, m->ametrics);
	ALLOC_GROW(m->cmp->metrics, (size_t)m->out.nmetrics + 1, m->acmp_metrics);
	m->cmp->metrics[m->out.nmetrics] = *role;
	struct dbfile_metric *d = &m->out.metrics[m->out.nmetrics];
	*d = (struct dbfile_metric){ .parent = -1, .threshold = NAN, .scale = 1 };
	return m->out.nmetrics++;
}

static char *prefixed(const char *prefix, const char *name)
{
	size_t n = strlen(prefix) + strlen(name) + 1;
	char *s = xmalloc(n);
	snprintf(s, n, "%s%s", prefix, name);
	return s;
}

/* A copy of metric I of side K (formula and parent relocated later). */
static uint32_t copy_metric(struct merge *m, int k, uint32_t i, uint8_t role)
{
	struct side *s = &m->side[k];
	struct model_compare_metric r = { .role = role, .run = (uint8_t)(k + 1),
					  .a = DBFILE_NONE, .b = DBFILE_NONE,
					  .delta = DBFILE_NONE, .ratio = DBFILE_NONE };
	uint32_t at = new_metric(m, &r);
	struct dbfile_metric *d = &m->out.metrics[at];
	const struct dbfile_metric *x = &s->db.metrics[i];
	*d = *x;
	d->name = prefixed(k ? "B:" : "A:", x->name);
	d->description = xstrdup(x->description ? x->description : "");
	d->formula = xstrdup(x->formula ? x->formula : "");
	s->metric[i] = at;
	if (k)
		m->cmp->metrics[at].b = at;
	else
		m->cmp->metrics[at].a = at;
	return at;
}

static uint32_t map_side_metric(void *ctx, uint32_t k)
{
	const struct side *s = ctx;
	return k < s->db.nmetrics ? s->metric[k] : k;
}

/* B - A and B / A of the group whose A and B metrics are IA and IB (merged indices). */
static void add_change_metrics(struct merge *m, uint32_t ia, uint32_t ib, uint32_t sa,
			       uint32_t sb, bool normalize)
{
	const struct dbfile_metric *x = &m->side[0].db.metrics[sa];
	double ta = m->side[0].total[sa], tb = m->side[1].total[sb];
	bool shares = normalize && x->kind == DBFILE_METRIC_RAW &&
		      x->unit != MFILE_UNIT_NANOSECONDS && ta != 0 && tb != 0;
	char fa[64], fb[64], formula[160];
	if (shares) {
		snprintf(fa, sizeof(fa), "($%u / %.17g)", ia, ta);
		snprintf(fb, sizeof(fb), "($%u / %.17g)", ib, tb);
	} else {
		snprintf(fa, sizeof(fa), "$%u", ia);
		snprintf(fb, sizeof(fb), "$%u", ib);
	}
	const char *base = m->out.metrics[ia].name + 2;
	struct model_compare_metric r = { .run = 3, .a = ia, .b = ib, .normalized = shares };
	for (int which = 0; which < 2; which++) {
		r.role = which ? MODEL_ROLE_RATIO : MODEL_ROLE_DELTA;
		uint32_t at = new_metric(m, &r);
		struct dbfile_metric *d = &m->out.metrics[at];
		d->name = prefixed(which ? "B/A:" : "B-A:", base);
		d->description = xstrdup(which ? (shares ? "B's share of its total over A's"
							 : "B over A")
					       : (shares ? "B's share of its total minus A's"
							 : "B minus A"));
		d->unit = which || shares ? MFILE_UNIT_COUNT : x->unit;
		d->kind = DBFILE_METRIC_DERIVED;
		snprintf(formula, sizeof(formula), which ? "%s / %s" : "%s - %s", fb, fa);
		d->formula = xstrdup(formula);
	}
	uint32_t group[4] = { ia, ib, m->out.nmetrics - 2, m->out.nmetrics - 1 };
	for (int i = 0; i < 4; i++) {
		struct model_compare_metric *c = &m->cmp->metrics[group[i]];
		c->a = ia;
		c->b = ib;
		c->delta = group[2];
		c->ratio = group[3];
		c->normalized = shares;
	}
}

/*
 * The merged metrics: a group per metric measured in both runs (A, B, B - A, B / A) in A's
 * order, then those of one run only, then each run's top-down (TMA) tree.
 */
static void merge_metrics(struct merge *m, bool normalize)
{
	struct side *a = &m->side[0], *b = &m->side[1];
	match_metrics(m);
	side_totals(m);
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		s->metric = xmalloc((s->db.nmetrics + 1) * sizeof(uint32_t));
	}
	for (uint32_t i = 0; i < a->db.nmetrics; i++) {
		if (a->tma[i])
			continue;
		uint32_t j = a->match[i];
		uint32_t ia = copy_metric(m, 0, i, j == DBFILE_NONE ? MODEL_ROLE_ONLY : MODEL_ROLE_A);
		if (j == DBFILE_NONE) {
			if (a->db.metrics[i].kind == DBFILE_METRIC_RAW)
				add_note(m, "%s: measured in A only", a->db.metrics[i].name);
			continue;
		}
		uint32_t ib = copy_metric(m, 1, j, MODEL_ROLE_B);
		add_change_metrics(m, ia, ib, i, j, normalize);
	}
	for (uint32_t j = 0; j < b->db.nmetrics; j++)
		if (!b->tma[j] && b->match[j] == DBFILE_NONE) {
			copy_metric(m, 1, j, MODEL_ROLE_ONLY);
			if (b->db.metrics[j].kind == DBFILE_METRIC_RAW)
				add_note(m, "%s: measured in B only", b->db.metrics[j].name);
		}
	/* The top-down trees, each as its run measured it; the pane pairs their nodes by name. */
	uint32_t first_tma[2];
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		first_tma[k] = m->out.nmetrics;
		for (uint32_t i = 0; i < s->db.nmetrics; i++)
			if (s->tma[i])
				copy_metric(m, k, i, k ? MODEL_ROLE_TMA_B : MODEL_ROLE_TMA_A);
	}
	for (uint32_t i = first_tma[0]; i < first_tma[1]; i++)
		for (uint32_t j = first_tma[1]; j < m->out.nmetrics; j++)
			if (!strcmp(m->out.metrics[i].name + 2, m->out.metrics[j].name + 2)) {
				m->cmp->metrics[i].b = j;
				m->cmp->metrics[j].a = i;
			}
	/* Formulas and parents in the merged numbering. */
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		for (uint32_t i = 0; i < s->db.nmetrics; i++) {
			struct dbfile_metric *d = &m->out.metrics[s->metric[i]];
			if (d->parent >= 0 && (uint32_t)d->parent < s->db.nmetrics)
				d->parent = (int32_t)s->metric[d->parent];
			if (!d->formula[0])
				continue;
			size_t size = strlen(d->formula) * 2 + 64;
			char *text = xmalloc(size);
			if (formula_relocate(d->formula, map_side_metric, s, text, size) == 0) {
				free(d->formula);
				d->formula = text;
			} else {
				free(text);
			}
		}
	}
}

/* ---- contexts ---- */

/* What a context is in the source, for matching: equal keys are the same scope. */
struct child_key {
	uint8_t kind;
	uint32_t function, file, line, module;
	uint64_t addr;	/* only where nothing else tells the scopes apart (see child_keys) */
	uint64_t order; /* between equal keys: the address, so that pairs keep their order */
	uint32_t ctx;
};

static int cmp_child_key(const void *pa, const void *pb)
{
	const struct child_key *a = pa, *b = pb;
#define CMP_FIELD(f)              \
	if (a->f != b->f)         \
		return a->f < b->f ? -1 : 1;
	CMP_FIELD(kind)
	CMP_FIELD(function)
	CMP_FIELD(file)
	CMP_FIELD(line)
	CMP_FIELD(module)
	CMP_FIELD(addr)
	CMP_FIELD(order)
	CMP_FIELD(ctx)
#undef CMP_FIELD
	return 0;
}

static bool same_scope(const struct child_key *a, const struct child_key *b)
{
	return a->kind == b->kind && a->function == b->function && a->file == b->file &&
	       a->line == b->line && a->module == b->module && a->addr == b->addr;
}

/* The children of context PARENT of side S as keys into *OUT (grown with *CAP); how many. */
static int child_keys(struct merge *m, struct side *s, uint32_t parent, struct child_key **out,
		      size_t *cap, uint32_t *n)
{
	*n = 0;
	if (parent == DBFILE_NONE)
		return 0;
	struct dbfile_context p, x;
	if (dbfile_context(&s->db, parent, &p) < 0)
		return -1;
	ALLOC_GROW(*out, (size_t)p.nchildren + 1, *cap);
	for (uint32_t i = 0; i < p.nchildren; i++) {
		uint32_t c = p.first_child + i;
		if (dbfile_context(&s->db, c, &x) < 0)
			return -1;
		/* Without a line (kernel frames, code without debug information), the address tells
		 * the scopes apart where both runs ran the same build of the module; of a rebuilt
		 * one, equal keys pair in address order. */
		uint32_t module = side_module(s, x.module);
		bool same_build = module != DBFILE_NONE && m->same_build[module];
		bool by_addr = x.kind == DBFILE_ENTRY ||
			       (!x.line && same_build &&
				(x.kind == DBFILE_LINE || x.kind == DBFILE_CALL || x.kind == DBFILE_LOOP));
		(*out)[i] = (struct child_key){
			.kind = x.kind,
			.function = side_function(s, x.function),
			.file = side_file_key(m, s, x.file),
			.line = x.line,
			.module = module,
			.addr = by_addr ? x.addr : 0,
			.order = x.addr,
			.ctx = c,
		};
	}
	*n = p.nchildren;
	qsort(*out, *n, sizeof(**out), cmp_child_key);
	return 0;
}

static void add_context(struct merge *m, uint32_t parent, int k, uint32_t ca, uint32_t cb)
{
	struct side *s = &m->side[k];
	struct dbfile_context x;
	uint32_t c = k ? cb : ca;
	dbfile_context(&s->db, c, &x); /* read by child_keys already: cannot fail */
	size_t had = m->acontexts;
	ALLOC_GROW(m->out.contexts, (size_t)m->out.ncontexts + 1, m->acontexts);
	if (m->acontexts != had)
		for (int side = 0; side < 2; side++)
			m->pair[side] = xreallocarray(m->pair[side], m->acontexts, sizeof(uint32_t));
	uint32_t at = m->out.ncontexts++;
	m->out.contexts[at] = (struct dbfile_context){
		.parent = parent,
		.function = side_function(s, x.function),
		.file = side_string(m, s, x.file),
		.line = x.line,
		.module = side_module(s, x.module),
		.kind = x.kind,
		.addr = x.addr,
		.outer = DBFILE_NONE,
	};
	m->pair[0][at] = ca;
	m->pair[1][at] = cb;
	if (ca != DBFILE_NONE)
		m->side[0].ctx[ca] = at;
	if (cb != DBFILE_NONE)
		m->side[1].ctx[cb] = at;
	if (ca != DBFILE_NONE && cb != DBFILE_NONE)
		m->matched++;
	else
		m->only[ca == DBFILE_NONE]++;
}

/* Breadth-first from the two roots: below each merged context, the children of its two
 * contexts paired by key (the i-th of equal keys with the i-th), the rest kept alone. */
static int merge_contexts(struct merge *m)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		s->ctx = xmalloc(((size_t)s->db.ncontexts + 1) * sizeof(uint32_t));
		if (!s->db.ncontexts)
			return fth_error("%s: the database has no contexts", s->name);
	}
	/* Both roots are context 0. */
	m->out.ncontexts = 0;
	struct dbfile_context root;
	if (dbfile_context(&m->side[0].db, 0, &root) < 0 ||
	    dbfile_context(&m->side[1].db, 0, &root) < 0)
		return -1;
	add_context(m, DBFILE_NONE, 0, 0, 0);
	m->matched = 1;
	struct child_key *ka = NULL, *kb = NULL;
	size_t capa = 0, capb = 0;
	int rc = 0;
	for (uint32_t at = 0; at < m->out.ncontexts && rc == 0; at++) {
		uint32_t na, nb;
		if (child_keys(m, &m->side[0], m->pair[0][at], &ka, &capa, &na) < 0 ||
		    child_keys(m, &m->side[1], m->pair[1][at], &kb, &capb, &nb) < 0) {
			rc = -1;
			break;
		}
		uint32_t i = 0, j = 0;
		while (i < na || j < nb) {
			int c = i == na ? 1 : j == nb ? -1 : 0;
			if (!c && !same_scope(&ka[i], &kb[j]))
				c = cmp_child_key(&ka[i], &kb[j]);
			if (c < 0)
				add_context(m, at, 0, ka[i++].ctx, DBFILE_NONE);
			else if (c > 0)
				add_context(m, at, 1, DBFILE_NONE, kb[j++].ctx);
			else {
				add_context(m, at, 0, ka[i].ctx, kb[j].ctx);
				i++, j++;
			}
		}
	}
	free(ka);
	free(kb);
	return rc;
}

/* ---- values ---- */

struct entry {
	uint16_t metric;
	struct dbfile_stat incl, excl;
};

static int cmp_entry(const void *pa, const void *pb)
{
	const struct entry *a = pa, *b = pb;
	return (a->metric > b->metric) - (a->metric < b->metric);
}

static int merge_summaries(struct merge *m)
{
	struct dbfile *o = &m->out;
	o->sum_start = xcalloc((size_t)o->ncontexts + 1, sizeof(uint32_t));
	size_t cap = 0, n = 0, arow = 0;
	struct entry *row = NULL;
	for (uint32_t c = 0; c < o->ncontexts; c++) {
		o->sum_start[c] = (uint32_t)n;
		size_t nrow = 0;
		for (int k = 0; k < 2; k++) {
			struct side *s = &m->side[k];
			uint32_t sc = m->pair[k][c];
			struct dbfile_row r;
			if (sc == DBFILE_NONE)
				continue;
			if (dbfile_summary_row(&s->db, sc, &r) < 0)
				return -1;
			uint32_t nr = r.n;
			uint16_t metrics[nr ? nr : 1];
			memcpy(metrics, r.metric, nr * sizeof(uint16_t));
			for (uint32_t j = 0; j < nr; j++) {
				if (metrics[j] >= s->db.nmetrics)
					continue;
				ALLOC_GROW(row, nrow + 1, arow);
				struct entry *e = &row[nrow++];
				e->metric = (uint16_t)s->metric[metrics[j]];
				if (dbfile_stats(&s->db, sc, metrics[j], &e->incl, &e->excl) < 0)
					return -1;
			}
		}
		qsort(row, nrow, sizeof(*row), cmp_entry);
		if (n + nrow > cap) {
			cap = (n + nrow) * 2;
			o->sum_metric = xreallocarray(o->sum_metric, cap, sizeof(uint16_t));
			o->sum_incl = xreallocarray(o->sum_incl, cap, sizeof(struct dbfile_stat));
			o->sum_excl = xreallocarray(o->sum_excl, cap, sizeof(struct dbfile_stat));
		}
		for (size_t j = 0; j < nrow; j++, n++) {
			o->sum_metric[n] = row[j].metric;
			o->sum_incl[n] = row[j].incl;
			o->sum_excl[n] = row[j].excl;
		}
	}
	o->sum_start[o->ncontexts] = (uint32_t)n;
	o->nsum = n;
	if (!o->sum_metric) {
		o->sum_metric = xcalloc(1, sizeof(uint16_t));
		o->sum_incl = xcalloc(1, sizeof(struct dbfile_stat));
		o->sum_excl = xcalloc(1, sizeof(struct dbfile_stat));
	}
	free(row);
	return 0;
}

static char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

static void merge_threads(struct merge *m)
{
	struct dbfile *o = &m->out;
	o->nthreads = m->side[0].db.nthreads + m->side[1].db.nthreads;
	o->threads = xcalloc(o->nthreads + 1, sizeof(*o->threads));
	uint32_t t = 0;
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < m->side[k].db.nthreads; i++, t++) {
			const struct dbfile_thread *x = &m->side[k].db.threads[i];
			struct dbfile_thread *d = &o->threads[t];
			*d = *x;
			d->file = dup_or_empty(x->file);
			d->host = dup_or_empty(x->host);
			d->program = dup_or_empty(x->program);
			d->name = dup_or_empty(x->name);
			d->entry = dup_or_empty(x->entry);
			d->cpu = dup_or_empty(x->cpu);
			d->argv = xcalloc((size_t)x->argc + 1, sizeof(char *));
			for (uint32_t j = 0; j < x->argc; j++)
				d->argv[j] = dup_or_empty(x->argv[j]);
		}
	o->thread_group = dbfile_thread_group(o->nthreads);
}

/* Every thread's values, renumbered, spooled into DIR. */
static int write_thread_values(struct merge *m, const char *dir)
{
	struct dbfile_thread_writer w;
	if (dbfile_threads_open(&w, dir, m->out.nthreads, m->out.thread_group, 0) < 0)
		return -1;
	struct dbfile_values in = { 0 }, out = { 0 };
	int rc = 0;
	for (int k = 0; k < 2 && rc == 0; k++) {
		struct side *s = &m->side[k];
		for (uint32_t t = 0; t < s->db.nthreads && rc == 0; t++) {
			if (dbfile_read_thread(&s->db, t, &in) < 0) {
				rc = -1;
				break;
			}
			dbfile_values_reset(&out);
			for (uint64_t j = 0; j < in.nvalues; j++)
				if (in.ctx[j] < s->db.ncontexts && in.metric[j] < s->db.nmetrics)
					dbfile_values_push(&out, s->ctx[in.ctx[j]],
							   (uint16_t)s->metric[in.metric[j]],
							   in.incl[j], in.excl[j]);
			rc = dbfile_threads_add(&w, &out);
		}
	}
	dbfile_values_release(&in);
	dbfile_values_release(&out);
	if (rc == 0)
		rc = dbfile_threads_finish(&w);
	if (rc < 0)
		dbfile_threads_abort(&w);
	return rc;
}

/* ---- the merged database ---- */

static void merge_notes(struct merge *m)
{
	struct dbfile *o = &m->out;
	uint32_t n = m->side[0].db.nnotes + m->side[1].db.nnotes;
	o->notes = xcalloc((size_t)n + 1, sizeof(char *));
	for (int k = 0; k < 2; k++)
		for (uint32_t i = 0; i < m->side[k].db.nnotes; i++)
			o->notes[o->nnotes++] = prefixed(k ? "B: " : "A: ", m->side[k].db.notes[i]);
}

static void remove_merged(const char *dir)
{
	static const char *const names[] = { DBFILE_SUMMARY, DBFILE_THREADS, DBFILE_SPOOL };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *p = xpath_join(dir, names[i]);
		unlink(p);
		free(p);
	}
	rmdir(dir);
}

static void merge_release(struct merge *m)
{
	for (int k = 0; k < 2; k++) {
		struct side *s = &m->side[k];
		dbfile_close(&s->db);
		free(s->str);
		free(s->file_key);
		free(s->module);
		free(s->function);
		free(s->metric);
		free(s->ctx);
		free(s->tma);
		free(s->match);
		free(s->total);
		free(m->pair[k]);
	}
	m->out.strings = m->strings.s;
	m->out.nstrings = m->strings.n;
	interner_release(&m->strings, true);
	interner_release(&m->names, false);
	hmap_release(&m->module_of);
	free(m->same_build);
	hmap_release(&m->function_of);
	dbfile_close(&m->out);
}

void model_compare_release(struct model_compare *cmp)
{
	if (!cmp)
		return;
	free(cmp->name_a);
	free(cmp->name_b);
	free(cmp->metrics);
	free_strings(cmp->notes, cmp->nnotes);
	free(cmp);
}

static int open_side(struct side *s, const char *name)
{
	s->name = name;
	if (dbfile_open_whole(name, &s->db) < 0)
		return -1;
	s->str = xmalloc(((size_t)s->db.nstrings + 1) * sizeof(uint32_t));
	s->file_key = xmalloc(((size_t)s->db.nstrings + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i <= s->db.nstrings; i++)
		s->str[i] = s->file_key[i] = DBFILE_NONE;
	return 0;
}

/* The merged database of M written into a new private directory under $TMPDIR: its path. */
static char *write_merged(struct merge *m)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = xpath_join(tmp && *tmp ? tmp : "/tmp", "fathom-compare-XXXXXX");
	if (!mkdtemp(dir)) {
		fth_error_errno(errno, "%s: cannot make the comparison's temporary directory", dir);
		free(dir);
		return NULL;
	}
	bool threads = !(m->out.flags & DBFILE_FLAG_NO_THREADS);
	m->out.strings = m->strings.s;
	m->out.nstrings = m->strings.n;
	int rc = threads ? write_thread_values(m, dir) : 0;
	if (rc == 0)
		rc = dbfile_write_summary(dir, &m->out, 0);
	m->out.strings = NULL;
	m->out.nstrings = 0;
	if (rc < 0) {
		fth_error_prefix("comparing %s with %s", m->side[0].name, m->side[1].name);
		remove_merged(dir);
		free(dir);
		return NULL;
	}
	return dir;
}

struct model *compare_open(const char *a, const char *b, const struct compare_options *opt)
{
	struct merge m = { 0 };
	hmap_init(&m.strings.map);
	hmap_init(&m.names.map);
	hmap_init(&m.module_of);
	hmap_init(&m.function_of);
	m.cmp = xcalloc(1, sizeof(*m.cmp));
	m.cmp->name_a = xstrdup(a);
	m.cmp->name_b = xstrdup(b);
	struct model *model = NULL;
	char *dir = NULL;
	if (open_side(&m.side[0], a) < 0 || open_side(&m.side[1], b) < 0)
		goto out;
	merge_modules(&m);
	merge_functions(&m);
	merge_metrics(&m, opt->normalize);
	if (merge_contexts(&m) < 0 || merge_summaries(&m) < 0)
		goto out;
	merge_threads(&m);
	merge_notes(&m);
	m.out.program = xstrdup(m.side[0].db.program ? m.side[0].db.program : "");
	m.out.flags = (m.side[0].db.flags | m.side[1].db.flags) &
		      (DBFILE_FLAG_NO_LOOPS | DBFILE_FLAG_NO_THREADS);
	if (opt->no_threads) /* most of the cost of the merge: skipped where nothing reads them */
		m.out.flags |= DBFILE_FLAG_NO_THREADS;
	m.cmp->nthreads_a = m.side[0].db.nthreads;
	m.cmp->contexts_matched = m.matched;
	m.cmp->contexts_only_a = m.only[0];
	m.cmp->contexts_only_b = m.only[1];
	if (!(dir = write_merged(&m)))
		goto out;
	model = opt->whole ? model_open_whole(dir) : model_open(dir);
	if (model && !(m.out.flags & DBFILE_FLAG_NO_THREADS) && model_open_threads(model) < 0) {
		model_close(model);
		model = NULL;
	}
	remove_merged(dir);
	if (model) {
		model_set_comparison(model, m.cmp);
		m.cmp = NULL;
	}
out:
	free(dir);
	merge_release(&m);
	model_compare_release(m.cmp);
	return model;
}
