/* SPDX-License-Identifier: MIT */
/*
 * units.c: values formatted for their unit (vm_format_value): times in s, ms, us or ns, bytes in
 * binary multiples, counts with three significant digits.
 */
#include "compat.h"
#include "buf.h"
#include "mfile.h"
#include "model.h"

#include <math.h>
#include <stdio.h>

/* Three significant digits for V in [1, 1000): "1.25", "12.5", "830". */
static void three_digits(double v, const char *suffix, char *out, size_t size)
{
	int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
	snprintf(out, size, "%.*f %s", decimals, v, suffix);
}

const char *vm_format_value(double v, unsigned unit, char *out, size_t size)
{
	if (!size)
		return out;
	if (isnan(v)) {
		snprintf(out, size, "n/a");
		return out;
	}
	if (isinf(v)) {
		snprintf(out, size, v < 0 ? "-inf" : "inf");
		return out;
	}
	double a = fabs(v);
	const char *sign = v < 0 ? "-" : "";
	char tmp[64];
	if (unit == MFILE_UNIT_NANOSECONDS) {
		static const struct {
			double scale;
			const char *name;
		} units[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" } };
		if (a == 0) {
			snprintf(out, size, "0 s");
			return out;
		}
		if (a >= 1e12) {
			snprintf(out, size, "%s%.3g s", sign, a / 1e9);
			return out;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (a >= units[i].scale * 0.9995 || i == 3) {
				three_digits(a / units[i].scale, units[i].name, tmp, sizeof(tmp));
				snprintf(out, size, "%s%s", sign, tmp);
				return out;
			}
	}
	if (unit == MFILE_UNIT_BYTES) {
		static const char *const names[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
		size_t k = 0;
		while (a >= 1024 && k + 1 < sizeof(names) / sizeof(names[0])) {
			a /= 1024;
			k++;
		}
		if (k == 0)
			snprintf(out, size, "%s%.0f B", sign, a);
		else
			snprintf(out, size, "%s%.1f %s", sign, a, names[k]);
		return out;
	}
	/* Counts: integers as such below a million, else three significant digits. */
	if (a < 1e6 && a == floor(a))
		snprintf(out, size, "%s%.0f", sign, a);
	else if (a < 1e6 && a >= 0.01)
		snprintf(out, size, "%s%.3g", sign, a);
	else
		snprintf(out, size, "%s%.2e", sign, a);
	return out;
}
