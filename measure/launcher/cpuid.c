/* SPDX-License-Identifier: MIT */
/*
 * cpuid.c: which CPU this is and how many counters it has, for the topdown planner
 * (tma_identify() in tma.h): vendor, family and model from the cpuid instruction (or
 * /proc/cpuinfo), counters from CPUID leaf 0xA (Intel) or 0x80000022 (AMD), the NMI watchdog
 * from /proc/sys/kernel/nmi_watchdog, and the FATHOM_CPU override for testing and planning.
 */
#include "compat.h"
#include "error.h"
#include "tma.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

long long tma_read_sysctl(const char *name, long long dflt)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	FILE *f = fopen(path, "r");
	long long v = dflt;
	if (f) {
		if (fscanf(f, "%lld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

static bool watchdog_on(void)
{
	return tma_read_sysctl("kernel/nmi_watchdog", 0) != 0;
}

/* "model name" of /proc/cpuinfo, and vendor/family/model when cpuid is not available. */
static void from_cpuinfo(char *vendor, size_t vsize, unsigned *family, unsigned *model,
			 char *name, size_t nsize)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	bool seen_name = false;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, "\n")] = '\0';
		if (!strncmp(line, "vendor_id", 9) && !vendor[0])
			snprintf(vendor, vsize, "%s", v);
		else if (!strncmp(line, "cpu family", 10) && !*family)
			*family = (unsigned)strtoul(v, NULL, 10);
		else if (!strncmp(line, "model\t", 6) && !*model)
			*model = (unsigned)strtoul(v, NULL, 10);
		else if (!strncmp(line, "model name", 10) && !seen_name) {
			snprintf(name, nsize, "%s", v);
			seen_name = true;
		}
	}
	if (f)
		fclose(f);
}

static int force(struct tma_machine *m, const char *spec)
{
	char copy[128];
	snprintf(copy, sizeof(copy), "%s", spec);
	char *save = NULL, *model = strtok_r(copy, ",", &save);
	if (!model)
		return fth_error("%s is empty", TMA_ENV_CPU);
	m->forced = true;
	m->cpu = tma_cpu_find(model);
	snprintf(m->description, sizeof(m->description), "%s (forced by %s)", model, TMA_ENV_CPU);
	if (!m->cpu) {
		char vendor[32];
		unsigned family = 0, num = 0;
		if (sscanf(model, "%31[A-Za-z]-%u-%x", vendor, &family, &num) != 3)
			return fth_error("%s=%s: unknown CPU model; use one of %s, or VENDOR-FAMILY-"
					 "MODEL such as GenuineIntel-6-8F", TMA_ENV_CPU, spec,
					 tma_cpu_names());
		if (!strcmp(vendor, "GenuineIntel"))
			m->cpu = tma_cpu_lookup(TMA_INTEL, family, num);
		else if (!strcmp(vendor, "AuthenticAMD"))
			m->cpu = tma_cpu_lookup(TMA_AMD, family, num);
		snprintf(m->description, sizeof(m->description), "%s family %u model %#x (forced by "
			 "%s)", vendor, family, num, TMA_ENV_CPU);
	}
	if (m->cpu) {
		m->budget.gp = m->cpu->gp;
		m->budget.fixed = m->cpu->fixed;
	}
	m->budget.watchdog = watchdog_on();
	for (char *opt; (opt = strtok_r(NULL, ",", &save));) {
		char *eq = strchr(opt, '=');
		char *end = NULL;
		unsigned long v = eq ? strtoul(eq + 1, &end, 10) : 0;
		if (!eq || !*(eq + 1) || *end || v > 64)
			return fth_error("%s: bad option \"%s\" (expected gp=N, fixed=N, watchdog=0|1 "
					 "or metrics=4|8)", TMA_ENV_CPU, opt);
		*eq = '\0';
		if (!strcmp(opt, "gp"))
			m->budget.gp = (uint8_t)v;
		else if (!strcmp(opt, "fixed"))
			m->budget.fixed = (uint8_t)v;
		else if (!strcmp(opt, "watchdog"))
			m->budget.watchdog = v != 0;
		else if (!strcmp(opt, "metrics") && (v == 4 || v == 8))
			m->budget.metrics = (uint8_t)v;
		else
			return fth_error("%s: bad option \"%s=%s\" (expected gp=N, fixed=N, "
					 "watchdog=0|1 or metrics=4|8)", TMA_ENV_CPU, opt, eq + 1);
	}
	return 0;
}

int tma_identify(struct tma_machine *m)
{
	memset(m, 0, sizeof(*m));
	const char *env = getenv(TMA_ENV_CPU);
	if (env && *env)
		return force(m, env);
	char vendor[16] = "", name[96] = "";
	unsigned family = 0, model = 0, gp = 0, fixed = 0;
	bool have_cpuid = false;
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (__get_cpuid(0, &a, &b, &c, &d)) {
		unsigned max = a;
		memcpy(vendor, &b, 4);
		memcpy(vendor + 4, &d, 4);
		memcpy(vendor + 8, &c, 4);
		vendor[12] = '\0';
		have_cpuid = true;
		if (__get_cpuid(1, &a, &b, &c, &d)) {
			family = (a >> 8) & 0xf;
			model = (a >> 4) & 0xf;
			if (family == 0xf)
				family += (a >> 20) & 0xff;
			if (family == 6 || family >= 0xf)
				model |= ((a >> 16) & 0xf) << 4;
		}
		if (!strcmp(vendor, "GenuineIntel") && max >= 0xa) {
			__cpuid_count(0xa, 0, a, b, c, d);
			gp = (a >> 8) & 0xff;
			fixed = d & 0x1f;
		} else if (!strcmp(vendor, "AuthenticAMD") &&
			   __get_cpuid_max(0x80000000, NULL) >= 0x80000022) {
			__cpuid_count(0x80000022, 0, a, b, c, d);
			gp = b & 0xf;
		}
	}
#endif
	unsigned f2 = 0, m2 = 0;
	char v2[16] = "";
	from_cpuinfo(v2, sizeof(v2), &f2, &m2, name, sizeof(name));
	if (!have_cpuid) {
		snprintf(vendor, sizeof(vendor), "%s", v2);
		family = f2;
		model = m2;
	}
	snprintf(m->description, sizeof(m->description), "%s family %u model %u (%#x)%s%s%s",
		 vendor[0] ? vendor : "unknown vendor", family, model, model, name[0] ? " \"" : "",
		 name, name[0] ? "\"" : "");
	if (!strcmp(vendor, "GenuineIntel"))
		m->cpu = tma_cpu_lookup(TMA_INTEL, family, model);
	else if (!strcmp(vendor, "AuthenticAMD"))
		m->cpu = tma_cpu_lookup(TMA_AMD, family, model);
	m->budget.watchdog = watchdog_on();
	if (gp > 0) {
		m->budget.gp = (uint8_t)gp;
		m->budget.fixed = (uint8_t)fixed;
		m->budget_from_cpuid = true;
	} else if (m->cpu) {
		/* A virtual machine may report no counters: plan with the model's. */
		m->budget.gp = m->cpu->gp;
		m->budget.fixed = m->cpu->fixed;
	}
	return 0;
}
