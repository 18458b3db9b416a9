/* SPDX-License-Identifier: MIT */
/*
 * mconfig.c: encode and decode measure's environment contract (mconfig.h).  An event is
 *   NAME,SOURCE,UNIT,PRECISE,FREQ,SAMPLING,EXCLUDE_KERNEL,GROUP,TYPE,CONFIG,CONFIG1,CONFIG2,RATE
 * optionally followed by ,TMA_ROLE (inputs of the TMA tree only), with numbers in decimal, and
 * events are separated by ';'.  Names never hold ',' or ';'.  When there are TMA nodes, '|'
 * follows the events and then the nodes, separated by ';', each
 *   NAME,PARENT,THRESHOLD_PPM,FORMULA,DESCRIPTION
 * where NAME, FORMULA and DESCRIPTION escape '%' ',' ';' '|' as %25 %2C %3B %7C.
 */
#include "compat.h"
#include "mconfig.h"
#include "error.h"

#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Append S to BUF at *POS with the escapes of the node fields; returns 0 or -1 when full. */
static int put_escaped(char *buf, size_t size, size_t *pos, const char *s)
{
	for (; *s; s++) {
		bool esc = *s == '%' || *s == ',' || *s == ';' || *s == '|';
		size_t n = esc ? 3 : 1;
		if (*pos + n >= size)
			return -1;
		if (esc) {
			static const char hex[] = "0123456789ABCDEF";
			buf[(*pos)++] = '%';
			buf[(*pos)++] = hex[(unsigned char)*s >> 4];
			buf[(*pos)++] = hex[*s & 0xf];
		} else {
			buf[(*pos)++] = *s;
		}
	}
	buf[*pos] = '\0';
	return 0;
}

int mconfig_add_tma(struct mconfig *c, const char *name, int32_t parent, int32_t threshold_ppm,
		    uint8_t level, bool of_cycles, const char *formula, const char *description)
{
	size_t nf = strlen(formula) + 1, nd = strlen(description) + 1;
	if (c->ntma == MCONFIG_MAX_TMA || c->tma_text_len + nf + nd > sizeof(c->tma_text))
		return fth_error("too many TMA nodes for the environment");
	struct mtma_node *t = &c->tma[c->ntma++];
	fth_format(t->name, sizeof(t->name), "%s", name);
	t->parent = parent;
	t->threshold_ppm = threshold_ppm;
	t->level = level;
	t->of_cycles = of_cycles;
	t->formula = c->tma_text_len;
	memcpy(c->tma_text + c->tma_text_len, formula, nf);
	c->tma_text_len += (uint32_t)nf;
	t->description = c->tma_text_len;
	memcpy(c->tma_text + c->tma_text_len, description, nd);
	c->tma_text_len += (uint32_t)nd;
	return 0;
}

int mconfig_encode_events(const struct mconfig *c, char *buf, size_t size)
{
	size_t pos = 0;
	buf[0] = '\0';
	for (int i = 0; i < c->nevents; i++) {
		const struct mevent *e = &c->ev[i];
		size_t n = fth_format(buf + pos, size - pos,
				      "%s%s,%u,%u,%u,%u,%u,%u,%d,%u,%llu,%llu,%llu,%llu",
				      i ? ";" : "", e->name, e->source, e->unit, e->precise,
				      e->freq, e->sampling, e->exclude_kernel, e->group, e->type,
				      (unsigned long long)e->config, (unsigned long long)e->config1,
				      (unsigned long long)e->config2, (unsigned long long)e->rate);
		if (pos + n >= size)
			return fth_error("event list too long for the environment");
		pos += n;
		if (e->tma_role) {
			n = fth_format(buf + pos, size - pos, ",%u", e->tma_role);
			if (pos + n >= size)
				return fth_error("event list too long for the environment");
			pos += n;
		}
	}
	for (int j = 0; j < c->ntma; j++) {
		const struct mtma_node *t = &c->tma[j];
		char num[48];
		if (pos + 1 >= size)
			goto full;
		buf[pos++] = j ? ';' : '|';
		buf[pos] = '\0';
		if (put_escaped(buf, size, &pos, t->name) < 0)
			goto full;
		fth_format(num, sizeof(num), ",%d,%d,%u,", t->parent, t->threshold_ppm,
			   (unsigned)t->level | (t->of_cycles ? 16u : 0u));
		if (pos + strlen(num) >= size)
			goto full;
		memcpy(buf + pos, num, strlen(num) + 1);
		pos += strlen(num);
		if (put_escaped(buf, size, &pos, c->tma_text + t->formula) < 0 || pos + 1 >= size)
			goto full;
		buf[pos++] = ',';
		buf[pos] = '\0';
		if (put_escaped(buf, size, &pos, c->tma_text + t->description) < 0)
			goto full;
	}
	return 0;
full:
	return fth_error("event list too long for the environment");
}

/*
 * Parse a decimal field ending at ',' (or, when LAST, at ';' '|' or NUL); advances *P past a
 * ',' or ';' and sets *END to the character that ended it.
 */
static int field_u64(const char **p, uint64_t *v, bool last, char *end)
{
	const char *s = *p;
	uint64_t x = 0;
	bool neg = false;
	if (*s == '-') {
		neg = true;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -1;
	while (*s >= '0' && *s <= '9') {
		uint64_t d = (uint64_t)(*s++ - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	if (*s != ',' && (!last || (*s != ';' && *s != '|' && *s != '\0')))
		return -1;
	*end = *s;
	*p = *s == ',' || *s == ';' ? s + 1 : s;
	*v = neg ? (uint64_t)-(int64_t)x : x;
	return 0;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Unescape the text at *P up to ',' ';' or NUL into OUT (SIZE bytes); advances *P to it. */
static int field_text(const char **p, char *out, size_t size)
{
	const char *s = *p;
	size_t n = 0;
	while (*s && *s != ',' && *s != ';') {
		char ch = *s++;
		if (ch == '%') {
			int hi = hexval(s[0]), lo = hi < 0 ? -1 : hexval(s[1]);
			if (lo < 0)
				return -1;
			ch = (char)(hi << 4 | lo);
			s += 2;
		}
		if (n + 1 >= size)
			return -1;
		out[n++] = ch;
	}
	out[n] = '\0';
	*p = s;
	return 0;
}

/* The TMA nodes after the '|' of the events. */
static int decode_tma(struct mconfig *c, const char *p)
{
	while (*p) {
		if (c->ntma == MCONFIG_MAX_TMA)
			return fth_error("more than %d TMA nodes", MCONFIG_MAX_TMA);
		struct mtma_node *t = &c->tma[c->ntma];
		memset(t, 0, sizeof(*t));
		uint64_t parent, thr, info;
		char end;
		if (field_text(&p, t->name, sizeof(t->name)) < 0 || *p++ != ',' ||
		    field_u64(&p, &parent, false, &end) < 0 || field_u64(&p, &thr, false, &end) < 0 ||
		    field_u64(&p, &info, false, &end) < 0 || info > 31)
			return fth_error("malformed TMA node in %s", MCONFIG_ENV_EVENTS);
		t->parent = (int32_t)(int64_t)parent;
		t->threshold_ppm = (int32_t)(int64_t)thr;
		t->level = (uint8_t)(info & 15);
		t->of_cycles = info & 16;
		size_t room = sizeof(c->tma_text) - c->tma_text_len;
		t->formula = c->tma_text_len;
		if (field_text(&p, c->tma_text + c->tma_text_len, room) < 0 || *p++ != ',')
			return fth_error("malformed TMA node %s in %s", t->name, MCONFIG_ENV_EVENTS);
		c->tma_text_len += (uint32_t)strlen(c->tma_text + t->formula) + 1;
		room = sizeof(c->tma_text) - c->tma_text_len;
		t->description = c->tma_text_len;
		if (field_text(&p, c->tma_text + c->tma_text_len, room) < 0 || (*p && *p != ';'))
			return fth_error("malformed TMA node %s in %s", t->name, MCONFIG_ENV_EVENTS);
		c->tma_text_len += (uint32_t)strlen(c->tma_text + t->description) + 1;
		if (*p)
			p++;
		c->ntma++;
	}
	return 0;
}

int mconfig_decode(struct mconfig *c, const char *events, const char *outdir, const char *flags)
{
	/*
	 * Only what is decoded is written: the whole structure is some 55 KiB, and clearing it
	 * would fault in every page of it in each measured process (its .bss is zero already).
	 */
	c->nevents = 0;
	c->flags = 0;
	c->ntma = 0;
	c->tma_text_len = 0;
	memset(&c->tma_req, 0, sizeof(c->tma_req));
	if (!events || !*events)
		return fth_error("%s is not set", MCONFIG_ENV_EVENTS);
	if (!outdir || !*outdir)
		return fth_error("%s is not set", MCONFIG_ENV_OUTDIR);
	size_t olen = strlen(outdir);
	if (olen >= sizeof(c->outdir))
		return fth_error("%s is too long", MCONFIG_ENV_OUTDIR);
	memcpy(c->outdir, outdir, olen + 1);
	const char *p = events;
	while (*p) {
		if (c->nevents == MCONFIG_MAX_EVENTS)
			return fth_error("more than %d events", MCONFIG_MAX_EVENTS);
		struct mevent *e = &c->ev[c->nevents];
		memset(e, 0, sizeof(*e));
		const char *comma = strchr(p, ',');
		if (!comma || (size_t)(comma - p) >= sizeof(e->name) || comma == p)
			return fth_error("malformed %s near \"%.20s\"", MCONFIG_ENV_EVENTS, p);
		memcpy(e->name, p, (size_t)(comma - p));
		e->name[comma - p] = '\0';
		p = comma + 1;
		uint64_t v[13] = { 0 };
		char end = 0;
		for (int i = 0; i < 12; i++)
			if (field_u64(&p, &v[i], i == 11, &end) < 0)
				return fth_error("malformed %s in event %s", MCONFIG_ENV_EVENTS, e->name);
		if (end == ',' && (field_u64(&p, &v[12], true, &end) < 0 || end == ',' || v[12] > 4))
			return fth_error("malformed %s in event %s", MCONFIG_ENV_EVENTS, e->name);
		if (v[0] >= MSOURCE_COUNT_ || v[2] > 3 || v[3] > 1 || v[4] > 1 || v[5] > 1)
			return fth_error("malformed %s in event %s", MCONFIG_ENV_EVENTS, e->name);
		e->source = (uint8_t)v[0];
		e->unit = (uint8_t)v[1];
		e->precise = (uint8_t)v[2];
		e->freq = v[3];
		e->sampling = v[4];
		e->exclude_kernel = v[5];
		e->group = (int16_t)(int64_t)v[6];
		e->type = (uint32_t)v[7];
		e->config = v[8];
		e->config1 = v[9];
		e->config2 = v[10];
		e->rate = v[11];
		e->tma_role = (uint8_t)v[12];
		c->nevents++;
		if (end == '|') {
			if (decode_tma(c, p + 1) < 0)
				return -1;
			break;
		}
	}
	for (int j = 0; j < c->ntma; j++)
		if (c->tma[j].parent < -1 || c->tma[j].parent >= c->nevents + c->ntma)
			return fth_error("malformed %s: TMA node %s has parent %d", MCONFIG_ENV_EVENTS,
					 c->tma[j].name, c->tma[j].parent);
	if (flags) {
		uint64_t f;
		const char *q = flags;
		char end;
		if (*q && field_u64(&q, &f, true, &end) == 0)
			c->flags = (uint32_t)f;
	}
	return 0;
}

/* The first of VARS set to a number, or -1. */
static int env_number(const char *const *vars, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v >= '0' && *v <= '9')
			return atoi(v);
	}
	return -1;
}

int mconfig_mpi_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
					    "SLURM_PROCID", "MV2_COMM_WORLD_RANK" };
	return env_number(vars, ARRAY_SIZE(vars));
}

int mconfig_mpi_size(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
					    "MV2_COMM_WORLD_SIZE" };
	return env_number(vars, ARRAY_SIZE(vars));
}

void mconfig_perf_attr(const struct mevent *e, struct perf_event_attr *a, bool leader)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = e->type;
	a->config = e->config;
	a->config1 = e->config1;
	a->config2 = e->config2;
	a->exclude_kernel = e->exclude_kernel;
	a->exclude_hv = 1;
	a->precise_ip = e->precise;
	a->disabled = leader;
	/* Groups are read whole, as the TMA metric events require: nr, enabled, running, ... */
	a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
			 (e->group >= 0 ? PERF_FORMAT_GROUP : 0);
	if (e->sampling) {
		if (e->freq) {
			a->freq = 1;
			a->sample_freq = e->rate;
		} else {
			a->sample_period = e->rate;
		}
	}
}

void mconfig_blocktime_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_TIME;
	a->sample_id_all = 1; /* the switch records carry their time */
	a->context_switch = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC; /* one clock for switch-out and switch-in on any CPU */
	a->exclude_hv = 1;	      /* but not the kernel: a switch happens in kernel mode */
	a->sigtrap = 1;
	a->remove_on_exec = 1;	      /* sigtrap requires it; an exec'd image starts afresh */
	a->sig_data = MCONFIG_BLOCKTIME_SIGDATA;
	a->disabled = 1;
}

void mconfig_probe_attr(struct perf_event_attr *a, uint32_t type, uint64_t config)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = type;
	a->config = config;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
}

bool mconfig_probe_sigtrap(void)
{
	struct perf_event_attr a;
	mconfig_probe_attr(&a, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK);
	a.sample_period = 1000000000;
	a.sigtrap = 1;
	a.remove_on_exec = 1;
	long fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return false;
	close((int)fd);
	return true;
}
