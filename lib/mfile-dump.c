/* SPDX-License-Identifier: MIT */
/* mfile-dump.c: the text form of a measurement file, every field, for fathom-dump and tests. */
#include "compat.h"
#include "mfile.h"
#include "buf.h"

#include <math.h>
#include <string.h>

const char *mfile_node_kind_name(unsigned kind)
{
	static const char *const names[] = { MFILE_NODE_KINDS(FTH_NAME_ENTRY) };
	return fth_name_at(names, ARRAY_SIZE(names), kind, "unknown");
}

const char *mfile_unit_name(unsigned unit)
{
	static const char *const names[] = { MFILE_UNITS(FTH_NAME_ENTRY) };
	return fth_name_at(names, ARRAY_SIZE(names), unit, "unknown");
}

static const char *rate_name(unsigned rate)
{
	static const char *const names[] = { MFILE_RATES(FTH_NAME_ENTRY) };
	return fth_name_at(names, ARRAY_SIZE(names), rate, "unknown");
}

static void dump_str(struct buf *out, const char *s)
{
	buf_addch(out, '"');
	buf_add_escaped(out, s, strlen(s));
	buf_addch(out, '"');
}

static void dump_flags(struct buf *out, uint32_t flags)
{
	static const char *const names[] = { MFILE_METRIC_FLAGS(FTH_NAME_ENTRY) };
	bool any = false;
	for (unsigned b = 0; b < 32; b++) {
		if (!(flags & (1u << b)))
			continue;
		if (any)
			buf_addch(out, ',');
		if (b < ARRAY_SIZE(names) && names[b])
			buf_addstr(out, names[b]);
		else
			buf_printf(out, "bit%u", b);
		any = true;
	}
	if (!any)
		buf_addch(out, '-');
}

static void dump_where(struct buf *out, uint32_t module, uint64_t offset)
{
	if (module == MFILE_NO_MODULE)
		buf_printf(out, "[-]@%#llx", (unsigned long long)offset);
	else
		buf_printf(out, "[%u]+%#llx", module, (unsigned long long)offset);
}

void mfile_dump(const struct mfile *m, struct buf *out)
{
	const struct mfile_identity *id = &m->id;
	buf_printf(out, "fathom measurement file, format %u.%u\n", m->major, m->minor);
	buf_addstr(out, "identity:\n  host: ");
	dump_str(out, id->host);
	buf_printf(out, "\n  pid: %u\n  ppid: %u\n  tid: %u\n  rank: %d\n  thread: %u\n"
			"  parent thread: %d\n  program: ",
		   id->pid, id->ppid, id->tid, id->rank, id->thread_index, id->parent_thread);
	dump_str(out, id->program);
	buf_addstr(out, "\n  cwd: ");
	dump_str(out, id->cwd);
	buf_printf(out, "\n  argv (%u):", id->argc);
	for (uint32_t i = 0; i < id->argc; i++) {
		buf_addch(out, ' ');
		dump_str(out, id->argv[i]);
	}
	buf_printf(out, "\n  start: %llu\n  end: %llu\n  end reason: ",
		   (unsigned long long)id->start_ns, (unsigned long long)id->end_ns);
	dump_str(out, id->end_reason);
	buf_printf(out, "\n  creation path (%u):", id->ncreation);
	for (uint32_t i = 0; i < id->ncreation; i++) {
		buf_addch(out, ' ');
		dump_where(out, id->creation[i].module, id->creation[i].offset);
	}
	buf_addstr(out, "\n  name: ");
	dump_str(out, id->name ? id->name : "");
	if (id->has_entry) {
		buf_addstr(out, "\n  entry: ");
		dump_where(out, id->entry.module, id->entry.offset);
	}
	if (id->cpu && id->cpu[0]) {
		buf_addstr(out, "\n  cpu: ");
		dump_str(out, id->cpu);
	}
	buf_printf(out, "\nmodules: %u\n", m->nmodules);
	for (uint32_t i = 0; i < m->nmodules; i++) {
		const struct mfile_module *mod = &m->modules[i];
		buf_printf(out, "  [%u] ", i);
		dump_str(out, mod->path);
		buf_addstr(out, "\n      build-id: ");
		for (uint32_t k = 0; k < mod->build_id_len; k++)
			buf_printf(out, "%02x", mod->build_id[k]);
		if (!mod->build_id_len)
			buf_addch(out, '-');
		buf_printf(out, "\n      base: %#llx loaded: %llu unloaded: %llu\n",
			   (unsigned long long)mod->base, (unsigned long long)mod->load_ns,
			   (unsigned long long)mod->unload_ns);
		for (uint32_t k = 0; k < mod->nranges; k++) {
			const struct mfile_range *rg = &mod->ranges[k];
			buf_printf(out, "      range %#llx-%#llx offset %#llx %c%c%c\n",
				   (unsigned long long)rg->start, (unsigned long long)rg->end,
				   (unsigned long long)rg->file_offset, rg->prot & 1 ? 'r' : '-',
				   rg->prot & 2 ? 'w' : '-', rg->prot & 4 ? 'x' : '-');
		}
	}
	buf_printf(out, "metrics: %u\n", m->nmetrics);
	for (uint32_t i = 0; i < m->nmetrics; i++) {
		const struct mfile_metric *x = &m->metrics[i];
		buf_printf(out, "  [%u] ", i);
		dump_str(out, x->name);
		buf_addstr(out, "\n      description: ");
		dump_str(out, x->description);
		buf_printf(out, "\n      unit: %s rate: %s %llu flags: ", mfile_unit_name(x->unit),
			   rate_name(x->rate_kind), (unsigned long long)x->rate);
		dump_flags(out, x->flags);
		buf_printf(out, "\n      enabled: %llu running: %llu samples: %llu\n",
			   (unsigned long long)x->time_enabled, (unsigned long long)x->time_running,
			   (unsigned long long)x->samples);
		buf_printf(out, "      parent: %d threshold: ", x->parent);
		if (isnan(x->threshold))
			buf_addch(out, '-');
		else
			buf_printf(out, "%.17g", x->threshold);
		buf_addstr(out, " formula: ");
		dump_str(out, x->formula);
		if (x->flags & MFILE_METRIC_TMA)
			buf_printf(out, " level: %u", x->level);
		buf_addch(out, '\n');
	}
	const struct mfile_cct *c = &m->cct;
	buf_printf(out, "cct: %u nodes, %llu values\n", c->nnodes, (unsigned long long)c->nvalues);
	for (uint32_t i = 0; i < c->nnodes; i++) {
		buf_printf(out, "  %u", i);
		if (i)
			buf_printf(out, " <%u", c->parent[i]);
		buf_printf(out, " %s ", mfile_node_kind_name(c->kind[i]));
		dump_where(out, c->module[i], c->offset[i]);
		for (uint32_t v = c->val_start[i]; v < c->val_start[i + 1]; v++)
			buf_printf(out, " m%u=%llu", c->val_metric[v], (unsigned long long)c->val[v]);
		buf_addch(out, '\n');
	}
	if (m->has_trace) {
		buf_printf(out, "trace: %llu records\n", (unsigned long long)m->ntrace);
		for (uint64_t i = 0; i < m->ntrace; i++)
			buf_printf(out, "  %llu node %u\n", (unsigned long long)m->trace[i].time_ns,
				   m->trace[i].node);
	}
	if (m->nstats) {
		buf_printf(out, "counters: %u\n", m->nstats);
		for (uint32_t i = 0; i < m->nstats; i++) {
			buf_addstr(out, "  ");
			buf_add_escaped(out, m->stats[i].name, strlen(m->stats[i].name));
			buf_printf(out, ": %llu\n", (unsigned long long)m->stats[i].value);
		}
	}
}
