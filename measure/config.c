/* SPDX-License-Identifier: MIT */
/*
 * config.c: encode and decode measure's environment contract (config.h).  An event is
 *   NAME,SOURCE,UNIT,PRECISE,FREQ,SAMPLING,EXCLUDE_KERNEL,GROUP,TYPE,CONFIG,CONFIG1,CONFIG2,RATE
 * with numbers in decimal, and events are separated by ';'.  Names never hold ',' or ';'.
 */
#include "compat.h"
#include "config.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

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
	}
	return 0;
}

/* Parse an unsigned decimal field ending at ',' ';' or NUL; advances *P past the separator. */
static int field_u64(const char **p, uint64_t *v, bool last)
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
	if (last ? (*s != ';' && *s != '\0') : *s != ',')
		return -1;
	*p = *s ? s + 1 : s;
	*v = neg ? (uint64_t)-(int64_t)x : x;
	return 0;
}

int mconfig_decode(struct mconfig *c, const char *events, const char *outdir, const char *flags)
{
	memset(c, 0, sizeof(*c));
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
		const char *comma = strchr(p, ',');
		if (!comma || (size_t)(comma - p) >= sizeof(e->name) || comma == p)
			return fth_error("malformed %s near \"%.20s\"", MCONFIG_ENV_EVENTS, p);
		memcpy(e->name, p, (size_t)(comma - p));
		e->name[comma - p] = '\0';
		p = comma + 1;
		uint64_t v[12];
		for (int i = 0; i < 12; i++)
			if (field_u64(&p, &v[i], i == 11) < 0)
				return fth_error("malformed %s in event %s", MCONFIG_ENV_EVENTS, e->name);
		if (v[0] > MSOURCE_PERF || v[2] > 3 || v[3] > 1 || v[4] > 1 || v[5] > 1)
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
		c->nevents++;
	}
	if (flags) {
		uint64_t f;
		const char *q = flags;
		if (*q && field_u64(&q, &f, true) == 0)
			c->flags = (uint32_t)f;
	}
	return 0;
}

int mconfig_mpi_rank(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
					    "SLURM_PROCID", "MV2_COMM_WORLD_RANK" };
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);
		if (v && *v >= '0' && *v <= '9')
			return atoi(v);
	}
	return -1;
}
