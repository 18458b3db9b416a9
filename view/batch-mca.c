/* SPDX-License-Identifier: MIT */
/*
 * batch-mca.c: view --batch --mca LOOP: the loop named by its file and line (or its context
 * number), its llvm-mca analysis (mca.h), and beside it what was measured there: its share of
 * the time, its cycles, instructions and IPC, and its top-down breakdown, where measured.
 */
#include "compat.h"
#include "batch-mca.h"
#include "buf.h"
#include "dbfile.h"
#include "error.h"
#include "escape.h"
#include "mca.h"
#include "xalloc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The loop chosen: its contexts (copies of one machine code: the same module and header). */
struct chosen_loop {
	uint32_t ctx;	      /* the hottest */
	uint32_t ncontexts;   /* with the same code */
	uint32_t module;      /* index in the database */
	uint64_t header;
	double value;	      /* of the first metric, summed over the contexts */
	uint32_t candidates;  /* loops at FILE:LINE with other code */
	const char *function; /* the function it is in */
};

/* Whether PATH names FILE: the same, or FILE is its tail after a '/'. */
static bool file_matches(const char *path, const char *file)
{
	size_t n = strlen(path), k = strlen(file);
	if (n < k || strcmp(path + n - k, file) != 0)
		return false;
	return n == k || path[n - k - 1] == '/' || file[0] == '/';
}

/* Parse "FILE:LINE" or "N" (a context). */
static int parse_loop(const char *spec, char **file, uint32_t *line, long *ctx)
{
	char *end;
	*file = NULL;
	*ctx = -1;
	long v = strtol(spec, &end, 10);
	if (end != spec && !*end && v >= 0) {
		*ctx = v;
		return 0;
	}
	const char *colon = strrchr(spec, ':');
	if (!colon || colon == spec || !colon[1])
		return fth_error("--mca: '%s' is neither FILE:LINE nor a loop's number", spec);
	v = strtol(colon + 1, &end, 10);
	if (*end || v <= 0 || v > UINT32_MAX)
		return fth_error("--mca: '%s': the line is not a number", spec);
	*file = xmalloc((size_t)(colon - spec) + 1);
	memcpy(*file, spec, (size_t)(colon - spec));
	(*file)[colon - spec] = '\0';
	*line = (uint32_t)v;
	return 0;
}

/* The loop of SPEC: of the loops there, the code whose contexts have the most of METRIC. */
static int choose_loop(struct model *model, const char *spec, uint32_t metric,
		       struct chosen_loop *out)
{
	char *file;
	uint32_t line = 0;
	long want;
	if (parse_loop(spec, &file, &line, &want) < 0)
		return -1;
	const struct dbfile *db = model_db(model);
	memset(out, 0, sizeof(*out));
	out->ctx = DBFILE_NONE;
	/* Each distinct code (module, header) with its sum; few loops share a line. */
	struct code { uint32_t module, ctx, n; uint64_t header; double value, best; } *codes = NULL;
	size_t ncodes = 0, acodes = 0;
	/* A context number names one (the pane's, on every loop selected): no walk of them all. */
	uint32_t first = want >= 0 ? (uint32_t)FTH_MIN((unsigned long)want, db->ncontexts) : 0;
	uint32_t end = want >= 0 ? FTH_MIN(first + 1, db->ncontexts) : db->ncontexts;
	for (uint32_t c = first; c < end; c++) {
		struct dbfile_context dc;
		if (!model_context(model, c, &dc) || dc.kind != DBFILE_LOOP)
			continue;
		if (file && (dc.line != line || dc.file == DBFILE_NONE ||
			     !file_matches(dbfile_str(db, dc.file), file)))
			continue;
		double v = model_value(model, MODEL_TOPDOWN, c, metric, true);
		if (isnan(v))
			v = 0;
		size_t k = 0;
		while (k < ncodes && !(codes[k].module == dc.module && codes[k].header == dc.addr))
			k++;
		if (k == ncodes) {
			ALLOC_GROW(codes, ncodes + 1, acodes);
			codes[ncodes++] = (struct code){ dc.module, c, 0, dc.addr, 0, -1 };
		}
		codes[k].n++;
		codes[k].value += v;
		if (v > codes[k].best) {
			codes[k].best = v;
			codes[k].ctx = c;
		}
	}
	int rc = 0;
	if (!ncodes) {
		if (want >= 0)
			rc = fth_error("--mca: context %ld is not a loop", want);
		else
			rc = fth_error("--mca: no loop at %s:%u (the loop's own line, as the "
				       "top-down view labels it: \"loop at FILE:LINE\")", file, line);
	} else {
		size_t best = 0;
		for (size_t k = 1; k < ncodes; k++)
			if (codes[k].value > codes[best].value)
				best = k;
		*out = (struct chosen_loop){ codes[best].ctx, codes[best].n, codes[best].module,
					     codes[best].header, codes[best].value,
					     (uint32_t)ncodes - 1, "?" };
	}
	free(codes);
	free(file);
	return rc;
}

/* The first metric among NAMES (any case; a group's suffix "[T1]" left out), or -1. */
static int metric_named(const struct model *model, const char *const *names)
{
	for (size_t i = 0; names[i]; i++)
		for (uint32_t m = 0; m < model_nmetrics(model); m++) {
			const char *name = model_metric(model, m)->name;
			size_t n = strcspn(name, "[");
			if (n == strlen(names[i]) && strncasecmp(name, names[i], n) == 0 &&
			    model_metric(model, m)->kind != DBFILE_METRIC_DERIVED)
				return (int)m;
		}
	return -1;
}

/* What was measured at the loop. */
struct measured {
	uint32_t metric; /* the first metric: its value and share */
	double value, share;
	int cycles_metric, instructions_metric;
	double cycles, instructions;
	const struct model_tma_row *tma;
	uint32_t ntma;
};

static void measure_loop(struct model *model, const struct chosen_loop *l, struct measured *m)
{
	static const char *const cycles[] = { "cycles", "cpu-cycles", "CPU_CLK_UNHALTED.THREAD",
					      "CPU_CLK_UNHALTED.CORE", "CPU_CLK_UNHALTED.THREAD_P",
					      "CYCLES_NOT_IN_HALT", NULL };
	static const char *const instructions[] = { "instructions", "INST_RETIRED.ANY",
						    "INST_RETIRED.ANY_P", "RETIRED_INSTRUCTIONS",
						    "EX_RET_INSTR", NULL };
	memset(m, 0, sizeof(*m));
	m->metric = model_default_metric(model);
	m->value = l->value;
	double total = model_total(model, m->metric);
	m->share = total > 0 ? l->value / total : NAN;
	m->cycles_metric = metric_named(model, cycles);
	m->instructions_metric = metric_named(model, instructions);
	m->cycles = m->cycles_metric < 0 ? NAN
					 : model_value(model, MODEL_TOPDOWN, l->ctx,
						       (uint32_t)m->cycles_metric, true);
	m->instructions = m->instructions_metric < 0
				  ? NAN
				  : model_value(model, MODEL_TOPDOWN, l->ctx,
						(uint32_t)m->instructions_metric, true);
	m->ntma = model_tma(model, MODEL_TOPDOWN, l->ctx, &m->tma);
}

static const char *status_name(enum mca_status s)
{
	switch (s) {
	case MCA_OK: return "ok";
	case MCA_NO_TOOL: return "no llvm-mca";
	case MCA_NO_CODE: return "no code";
	case MCA_UNMODELLABLE: return "cannot be modelled";
	default: return "failed";
	}
}

/* ---- text ---- */

/* The measured bottleneck: the top-down path of the largest nodes below level 0, as
 * "Backend Bound > Memory Bound" (NULL without top-down metrics), into B. */
static bool tma_path(struct model *model, const struct measured *me, struct buf *b)
{
	bool any = false;
	for (uint32_t i = 0; i < me->ntma; i++)
		if (me->tma[i].dominant && me->tma[i].level >= 1 && !isnan(me->tma[i].fraction)) {
			buf_printf(b, "%s%s", any ? " > " : "",
				   model_metric(model, me->tma[i].metric)->name);
			any = true;
		}
	return any;
}

/* "predicted 1.50 cycles per iteration, measured 3.20: Backend Bound > Memory Bound": the
 * prediction against what was measured, as far as it was. */
static void verdict(struct model *model, const struct measured *me, const struct mca_report *r,
		    struct buf *b)
{
	if (r->status != MCA_OK || !r->iterations)
		return;
	double ipc = me->cycles > 0 ? me->instructions / me->cycles : NAN;
	buf_printf(b, "predicted %.2f cycles per iteration", (double)r->total_cycles / r->iterations);
	if (!isnan(ipc) && ipc > 0)
		buf_printf(b, ", measured %.2f", r->ninstructions / ipc);
	struct buf path = BUF_INIT;
	if (tma_path(model, me, &path))
		buf_printf(b, "%s %s", !isnan(ipc) && ipc > 0 ? ":" : "; measured:",
			   (char *)path.data);
	buf_release(&path);
	buf_addch(b, '\n');
}

static void text_report(struct model *model, const struct chosen_loop *l,
			const struct model_node_info *info, const struct measured *me,
			const struct mca_report *r, struct buf *b)
{
	const struct dbfile *db = model_db(model);
	char v[48];
	buf_printf(b, "loop at %s:%u in %s\n", info->file ? info->file : "?", info->line,
		   l->function);
	buf_printf(b, "  module %s, header 0x%llx", info->module ? info->module : "?",
		   (unsigned long long)l->header);
	if (l->ncontexts > 1)
		buf_printf(b, ", in %u calling contexts", l->ncontexts);
	buf_addstr(b, "\n");
	if (l->candidates)
		buf_printf(b, "  (%u other loop%s at this line with other code; this one has the "
			      "most %s)\n", l->candidates, l->candidates == 1 ? "" : "s",
			   model_metric(model, me->metric)->name);
	const struct dbfile_metric *dm = model_metric(model, me->metric);
	buf_printf(b, "measured: %s %s, %.1f%% of the program\n", dm->name,
		   model_format_value(me->value, dm->unit, v, sizeof(v)), 100 * me->share);
	if (!isnan(me->cycles) && !isnan(me->instructions) && me->cycles > 0) {
		double ipc = me->instructions / me->cycles;
		buf_printf(b, "  cycles %.4g, instructions %.4g, IPC %.2f", me->cycles,
			   me->instructions, ipc);
		if (r->status == MCA_OK && ipc > 0)
			buf_printf(b, ": %.2f cycles per iteration of its %u instructions",
				   r->ninstructions / ipc, r->ninstructions);
		buf_addstr(b, "\n");
	} else if (!isnan(me->cycles) || !isnan(me->instructions)) {
		bool cycles = !isnan(me->cycles);
		buf_printf(b, "  %s %.4g; %s not measured, so no IPC (measure -e %s too)\n",
			   cycles ? "cycles" : "instructions", cycles ? me->cycles : me->instructions,
			   cycles ? "instructions" : "cycles", cycles ? "instructions" : "cycles");
	} else {
		buf_addstr(b, "  cycles and instructions were not measured (measure -e "
			      "cycles,instructions, or -e topdown, where the CPU has counters)\n");
	}
	for (uint32_t i = 0; i < me->ntma; i++)
		if (me->tma[i].level == 1 && !isnan(me->tma[i].fraction))
			buf_printf(b, "  %s %.1f%%%s\n", model_metric(model, me->tma[i].metric)->name,
				   100 * me->tma[i].fraction, me->tma[i].dominant ? " <" : "");
	if (r->status != MCA_OK) {
		buf_printf(b, "llvm-mca: %s: %s\n", status_name(r->status), r->reason);
		return;
	}
	verdict(model, me, r, b);
	buf_printf(b, "llvm-mca (%s -mcpu=%s: %s):\n", r->tool,
		   r->mcpu && *r->mcpu ? r->mcpu : "?",
		   r->cpu_note && !r->host_cpu ? r->cpu_note
		   : r->host_cpu		 ? "this machine's CPU, the measured one unknown"
						 : "--mcpu");
	if (r->host_cpu && r->cpu_note)
		buf_printf(b, "  (%s)\n", r->cpu_note);
	buf_printf(b, "  block_rthroughput %.2f cycles per iteration: the bound of the ports alone\n",
		   r->block_rthroughput);
	if (r->iterations)
		buf_printf(b, "  %.2f cycles per iteration simulated, dependencies included\n",
			   (double)r->total_cycles / r->iterations);
	buf_printf(b, "  ipc %.2f (dispatch width %u, %u iterations in %llu cycles)\n", r->ipc,
		   r->dispatch_width, r->iterations, (unsigned long long)r->total_cycles);
	buf_printf(b, "  bottleneck: %s\n", r->bottleneck ? r->bottleneck : "not reported");
	buf_addstr(b, "  resource pressure per iteration:");
	for (uint32_t i = 0; i < r->nresources; i++)
		if (r->resources[i].pressure > 0)
			buf_printf(b, " %s %.2f", r->resources[i].name, r->resources[i].pressure);
	buf_addstr(b, "\n");
	if (r->ncritical) {
		buf_addstr(b, "  critical path:\n");
		for (uint32_t i = 0; i < r->ncritical; i++)
			buf_printf(b, "    %s\n", r->critical[i]);
	}
	buf_printf(b, "  %u instructions", r->ninstructions);
	if (r->nblocks)
		buf_printf(b, " in %u block%s", r->nblocks, r->nblocks == 1 ? "" : "s");
	buf_printf(b, ", 0x%llx-0x%llx (%s):\n", (unsigned long long)r->lo,
		   (unsigned long long)r->hi, r->structure);
	for (uint32_t i = 0, k = 0; i < r->ninstructions; i++) {
		bool starts = false;
		while (k < r->nblocks && r->block_starts[k] <= r->addresses[i])
			starts |= r->block_starts[k++] == r->addresses[i];
		buf_printf(b, "    %c 0x%llx  %s\n", starts ? '>' : ' ',
			   (unsigned long long)r->addresses[i], r->assembly[i]);
	}
	(void)db;
}

/* ---- JSON ---- */

static void json_string(struct buf *b, const char *s)
{
	if (!s)
		buf_addstr(b, "null");
	else
		esc_json(b, s, strlen(s));
}

static void json_number(struct buf *b, double v)
{
	if (isnan(v) || isinf(v))
		buf_addstr(b, "null");
	else
		buf_printf(b, "%.6g", v);
}

static void json_report(struct model *model, const struct chosen_loop *l,
			const struct model_node_info *info, const struct measured *me,
			const struct mca_report *r, const char *database, const char *measured_cpu,
			struct buf *b)
{
	buf_addstr(b, "{\"database\": ");
	json_string(b, database);
	buf_addstr(b, ", \"loop\": {\"file\": ");
	json_string(b, info->file);
	buf_printf(b, ", \"line\": %u, \"function\": ", info->line);
	json_string(b, l->function);
	buf_addstr(b, ", \"module\": ");
	json_string(b, info->module);
	buf_printf(b, ", \"header\": \"0x%llx\", \"context\": %u, \"contexts\": %u},\n",
		   (unsigned long long)l->header, l->ctx, l->ncontexts);
	buf_addstr(b, "\"measured\": {\"metric\": ");
	json_string(b, model_metric(model, me->metric)->name);
	buf_addstr(b, ", \"value\": ");
	json_number(b, me->value);
	buf_addstr(b, ", \"share\": ");
	json_number(b, me->share);
	buf_addstr(b, ", \"cycles\": ");
	json_number(b, me->cycles);
	buf_addstr(b, ", \"instructions\": ");
	json_number(b, me->instructions);
	buf_addstr(b, ", \"ipc\": ");
	json_number(b, me->cycles > 0 ? me->instructions / me->cycles : NAN);
	buf_addstr(b, ", \"topdown\": {");
	bool first = true;
	for (uint32_t i = 0; i < me->ntma; i++) {
		if (isnan(me->tma[i].fraction))
			continue;
		buf_addstr(b, first ? "" : ", ");
		first = false;
		json_string(b, model_metric(model, me->tma[i].metric)->name);
		buf_addstr(b, ": ");
		json_number(b, me->tma[i].fraction);
	}
	buf_addstr(b, "}, \"bottleneck\": ");
	struct buf path = BUF_INIT;
	if (tma_path(model, me, &path))
		json_string(b, (char *)path.data);
	else
		buf_addstr(b, "null");
	buf_release(&path);
	buf_addstr(b, ", \"cycles_per_iteration\": ");
	double ipc = me->cycles > 0 ? me->instructions / me->cycles : NAN;
	json_number(b, r->status == MCA_OK && ipc > 0 ? r->ninstructions / ipc : NAN);
	buf_addstr(b, "},\n\"mca\": {\"status\": ");
	json_string(b, status_name(r->status));
	buf_addstr(b, ", \"reason\": ");
	json_string(b, r->status == MCA_OK ? NULL : r->reason);
	buf_addstr(b, ", \"tool\": ");
	json_string(b, r->tool);
	buf_addstr(b, ", \"mcpu\": ");
	json_string(b, r->mcpu && *r->mcpu ? r->mcpu : NULL);
	buf_addstr(b, ", \"mcpu_from\": ");
	json_string(b, r->host_cpu ? "host" : r->cpu_note ? "measured" : r->mcpu && *r->mcpu
									 ? "option" : NULL);
	buf_addstr(b, ", \"measured_cpu\": ");
	json_string(b, measured_cpu);
	if (r->status == MCA_OK) {
		buf_addstr(b, ", \"block_rthroughput\": ");
		json_number(b, r->block_rthroughput);
		buf_addstr(b, ", \"ipc\": ");
		json_number(b, r->ipc);
		buf_printf(b, ", \"dispatch_width\": %u, \"iterations\": %u, \"total_cycles\": %llu",
			   r->dispatch_width, r->iterations, (unsigned long long)r->total_cycles);
		buf_addstr(b, ", \"cycles_per_iteration\": ");
		json_number(b, r->iterations ? (double)r->total_cycles / r->iterations : NAN);
		buf_addstr(b, ", \"bottleneck\": ");
		json_string(b, r->bottleneck);
		buf_addstr(b, ", \"resource_pressure\": {");
		for (uint32_t i = 0; i < r->nresources; i++) {
			buf_addstr(b, i ? ", " : "");
			json_string(b, r->resources[i].name);
			buf_addstr(b, ": ");
			json_number(b, r->resources[i].pressure);
		}
		buf_addstr(b, "}, \"critical_path\": [");
		for (uint32_t i = 0; i < r->ncritical; i++) {
			buf_addstr(b, i ? ", " : "");
			json_string(b, r->critical[i]);
		}
		buf_printf(b, "], \"range\": [\"0x%llx\", \"0x%llx\"], \"blocks\": [",
			   (unsigned long long)r->lo, (unsigned long long)r->hi);
		for (uint32_t i = 0; i < r->nblocks; i++)
			buf_printf(b, "%s\"0x%llx\"", i ? ", " : "",
				   (unsigned long long)r->block_starts[i]);
		buf_addstr(b, "], \"instructions\": [");
		for (uint32_t i = 0; i < r->ninstructions; i++) {
			buf_addstr(b, i ? ", " : "");
			json_string(b, r->assembly[i]);
		}
		buf_addstr(b, "]");
	}
	buf_addstr(b, "}}\n");
}

int mca_describe(struct model *model, const struct batch_mca_options *o, struct buf *out)
{
	struct chosen_loop l;
	struct measured me;
	if (choose_loop(model, o->loop, model_default_metric(model), &l) < 0)
		return -1;
	struct model_node_info info;
	struct dbfile_context dc;
	model_node_info(model, MODEL_TOPDOWN, l.ctx, &info);
	l.function = model_context(model, l.ctx, &dc) && dc.function != DBFILE_NONE
			     ? model_function_name(model, dc.function)
			     : "?";
	measure_loop(model, &l, &me);
	const struct dbfile *db = model_db(model);
	struct mca_request rq = { .binary = info.module ? info.module : "",
				  .header = l.header, .mcpu = o->mcpu, .structs = o->structs,
				  .nstructs = o->nstructs };
	/* The processor of the first thread that says (a run on one kind of machine). */
	for (uint32_t t = 0; t < db->nthreads && !rq.measured_cpu; t++)
		if (db->threads[t].cpu && db->threads[t].cpu[0])
			rq.measured_cpu = db->threads[t].cpu;
	if (l.module < db->nmodules) {
		rq.binary = dbfile_str(db, db->modules[l.module].path);
		rq.build_id = db->modules[l.module].build_id;
		rq.build_id_len = db->modules[l.module].build_id_len;
	}
	struct mca_report r;
	if (mca_analyse(&rq, &r) < 0)
		return -1;
	if (o->json)
		json_report(model, &l, &info, &me, &r, o->database, rq.measured_cpu, out);
	else
		text_report(model, &l, &info, &me, &r, out);
	mca_report_release(&r);
	return 0;
}

int mca_loop_at(struct model *model, enum model_view view, model_node node, char *spec,
		size_t size)
{
	struct model_node_info info;
	model_node_info(model, view, node, &info);
	if (view == MODEL_TOPDOWN) {
		/* The node's innermost enclosing loop (itself, when it is one). */
		struct dbfile_context dc;
		for (uint32_t c = node; c != DBFILE_NONE && model_context(model, c, &dc);
		     c = dc.parent) {
			if (dc.kind == DBFILE_LOOP) {
				snprintf(spec, size, "%u", c);
				return 0;
			}
			if (dc.kind == DBFILE_FUNCTION)
				break;
		}
		return fth_error("no loop here: select a loop, or a line or call site in one");
	}
	if (info.kind == MODEL_KIND_LOOP && info.file && info.line) {
		snprintf(spec, size, "%s:%u", info.file, info.line);
		return 0;
	}
	return fth_error("no loop here: select a loop (in the flat view), or a line or call site "
			 "of one in the top-down view");
}

int batch_mca(struct model *model, const struct batch_mca_options *o, FILE *out)
{
	struct buf b = BUF_INIT;
	if (mca_describe(model, o, &b) < 0) {
		buf_release(&b);
		return -1;
	}
	int rc = 0;
	/* Text holds names from the binaries: escaped for the terminal (JSON escapes its own). */
	if (o->json)
		fwrite(b.data, 1, b.len, out);
	else
		esc_write(out, b.data, b.len);
	if (ferror(out) || fflush(out) != 0)
		rc = fth_error_errno(errno, "standard output");
	buf_release(&b);
	return rc;
}
