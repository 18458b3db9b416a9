/* SPDX-License-Identifier: MIT */
/*
 * units.c: values formatted for their unit (model_format_value): times in s, ms, us or ns, bytes in
 * binary multiples, counts with three significant digits; a metric's values as the screen
 * shows them (model_format_metric) and as numbers in one unit per metric, rounded alike
 * (model_format_number), for batch output.
 */
#include "compat.h"
#include "buf.h"
#include "mfile.h"
#include "model.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * V (>= 0, < 1e15) with DECIMALS (0 to 4) decimals into OUT, as printf's "%.*f" writes it:
 * by integer arithmetic, but by printf on a half (or near one, without long double): batch
 * output formats millions of values, and printf's cost counts.
 */
static size_t units_fixed(double v, int decimals, char *out, size_t size)
{
	if (!size)
		return 0;
	if (v == 0 && size > (size_t)decimals + 2) {
		/* Zero, the commonest cell: "0", "0.0", "0.00"... */
		size_t w = 0;
		out[w++] = '0';
		if (decimals)
			out[w++] = '.';
		for (int d = 0; d < decimals; d++)
			out[w++] = '0';
		out[w] = '\0';
		return w;
	}
	static const double scale[] = { 1, 10, 100, 1000, 10000 };
	double x = v * scale[decimals], f = floor(x);
	/* Far from a half, the rounded product decides; near one, the exact one (53 bits of V
	 * times at most 14 of the scale fit a long double): only exact halves go to printf. */
	bool tie = fabs(x - f - 0.5) < 1e-9 * (x + 1);
	uint64_t n = (uint64_t)f + (x - f > 0.5);
#if LDBL_MANT_DIG >= 64
	if (tie && v >= 0 && v < 1e15) {
		long double xl = (long double)v * scale[decimals], fl = floorl(xl);
		tie = xl - fl == 0.5L;
		n = (uint64_t)fl + (xl - fl > 0.5L);
	}
#endif
	if (!(v >= 0 && v < 1e15) || tie) {
		int k = snprintf(out, size, "%.*f", decimals, v);
		return k < 0 ? 0 : (size_t)k < size ? (size_t)k : size - 1;
	}
	/* The digits from the last, then the first SIZE - 1 of them copied. */
	char tmp[32], *p = tmp + sizeof(tmp);
	for (int d = 0; d < decimals; d++, n /= 10)
		*--p = (char)('0' + n % 10);
	if (decimals)
		*--p = '.';
	do
		*--p = (char)('0' + n % 10);
	while (n /= 10);
	size_t w = (size_t)(tmp + sizeof(tmp) - p);
	if (w > size - 1)
		w = size - 1;
	memcpy(out, p, w);
	out[w] = '\0';
	return w;
}

/* A + B into OUT (SIZE > 0), cut to fit: snprintf's "%s%s" without its cost. */
static void units_concat(const char *a, const char *b, char *out, size_t size)
{
	size_t n = 0;
	for (; *a && n + 1 < size; a++)
		out[n++] = *a;
	for (; *b && n + 1 < size; b++)
		out[n++] = *b;
	out[n] = '\0';
}

/* V (> 0) as printf's "%.2e" writes it ("1.23e+09"), by printf only near a half. */
static void units_exponent(double v, char *out, size_t size)
{
	int e = (int)floor(log10(v));
	double scaled = v * pow(10, 2 - e);
	if (!(v > 0) || !isfinite(v) || e < -300 || e > 300 ||
	    fabs(scaled - floor(scaled) - 0.5) < 1e-6) {
		snprintf(out, size, "%.2e", v);
		return;
	}
	int d = (int)round(scaled);
	if (d >= 1000) {
		d /= 10;
		e++;
	} else if (d < 100) {
		d *= 10;
		e--;
	}
	snprintf(out, size, "%c.%c%ce%c%02d", '0' + d / 100, '0' + d / 10 % 10, '0' + d % 10,
		 e < 0 ? '-' : '+', e < 0 ? -e : e);
}

/* Three significant digits for V in [1, 1000): "1.25", "12.5", "830". */
static void three_digits(double v, const char *suffix, char *out, size_t size)
{
	int decimals = v >= 99.95 ? 0 : v >= 9.995 ? 1 : 2;
	size_t n = units_fixed(v, decimals, out, size);
	if (n + 1 < size) {
		out[n++] = ' ';
		units_concat("", suffix, out + n, size - n);
	}
}

const char *model_format_value(double v, unsigned unit, char *out, size_t size)
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
			units_concat("", "0 s", out, size);
			return out;
		}
		if (a >= 1e12) {
			snprintf(out, size, "%s%.3g s", sign, a / 1e9);
			return out;
		}
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (a >= units[i].scale * 0.9995 || i == 3) {
				three_digits(a / units[i].scale, units[i].name, tmp, sizeof(tmp));
				units_concat(sign, tmp, out, size);
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
		units_fixed(a, k ? 1 : 0, tmp, sizeof(tmp));
		units_concat(sign, tmp, out, size);
		size_t n = strlen(out);
		if (n + 1 < size) {
			out[n++] = ' ';
			units_concat("", names[k], out + n, size - n);
		}
		return out;
	}
	/* Counts: integers as such below a million, else three significant digits. */
	if (a < 1e6 && a == floor(a)) {
		units_fixed(a, 0, tmp, sizeof(tmp));
		units_concat(sign, tmp, out, size);
	} else if (a < 1e6 && a >= 0.01) {
		snprintf(out, size, "%s%.3g", sign, a);
	} else {
		units_exponent(a, tmp, sizeof(tmp));
		units_concat(sign, tmp, out, size);
	}
	return out;
}

bool model_metric_has_percent(const struct model *model, uint32_t metric)
{
	const struct dbfile_metric *m = model_metric(model, metric);
	return m && m->kind == DBFILE_METRIC_RAW && !model_metric_is_tma(model, metric);
}

/* Whether METRIC's values are amounts of its unit, as stored: raw metrics, and the change
 * (B - A) between two runs' raw metrics when not of shares. */
static bool in_unit(const struct model *model, uint32_t metric)
{
	const struct dbfile_metric *m = model_metric(model, metric);
	if (!m || model_metric_is_tma(model, metric))
		return false;
	if (m->kind == DBFILE_METRIC_RAW)
		return true;
	const struct model_compare *cmp = model_comparison(model);
	if (!cmp || cmp->metrics[metric].role != MODEL_ROLE_DELTA || cmp->metrics[metric].normalized)
		return false;
	const struct dbfile_metric *a = model_metric(model, cmp->metrics[metric].a);
	return a && a->kind == DBFILE_METRIC_RAW;
}

/* A comparison's change: "+1.25 s", "-830 ms", "+2.5 pp" (shares), "0"; B / A: "1.25x". */
static const char *format_change(const struct model *model, uint32_t metric, double v,
				 char *out, size_t size)
{
	const struct model_compare_metric *c = &model_comparison(model)->metrics[metric];
	const struct dbfile_metric *m = model_metric(model, metric);
	char tmp[64];
	if (c->role == MODEL_ROLE_RATIO) {
		if (isinf(v))
			snprintf(out, size, "new");
		else
			snprintf(out, size, "%.3gx", v);
		return out;
	}
	if (c->normalized)
		snprintf(tmp, sizeof(tmp), "%.2f pp", fabs(v) * 100);
	else if (in_unit(model, metric))
		model_format_value(fabs(v), m->unit, tmp, sizeof(tmp));
	else
		snprintf(tmp, sizeof(tmp), "%.3g", fabs(v));
	units_concat(v > 0 ? "+" : v < 0 ? "-" : "", tmp, out, size);
	return out;
}

const char *model_format_metric(const struct model *model, uint32_t metric, double v, char *out,
				size_t size)
{
	const struct dbfile_metric *m = model_metric(model, metric);
	enum model_role role = model_metric_role(model, metric);
	if (!size)
		return out;
	if (isnan(v))
		snprintf(out, size, "n/a");
	else if (model_metric_is_tma(model, metric))
		snprintf(out, size, "%.1f%%", v * 100);
	else if (role == MODEL_ROLE_DELTA || role == MODEL_ROLE_RATIO)
		format_change(model, metric, v, out, size);
	else if (m && m->kind == DBFILE_METRIC_DERIVED)
		snprintf(out, size, "%.3g", v);
	else
		model_format_value(v, m ? m->unit : MFILE_UNIT_COUNT, out, size);
	return out;
}

size_t model_format_fixed(double v, int decimals, char *out, size_t size)
{
	if (size < 2 || decimals < 0 || decimals > 4) {
		int n = snprintf(out, size, "%.*f", decimals, v);
		return n < 0 || !size ? 0 : (size_t)n < size ? (size_t)n : size - 1;
	}
	if (v < 0 || (v == 0 && signbit(v))) {
		out[0] = '-';
		return 1 + units_fixed(-v, decimals, out + 1, size - 1);
	}
	return units_fixed(v, decimals, out, size);
}

const char *model_number_unit(const struct model *model, uint32_t metric, bool raw)
{
	const struct dbfile_metric *m = model_metric(model, metric);
	if (!in_unit(model, metric))
		return NULL;
	if (m->unit == MFILE_UNIT_NANOSECONDS)
		return raw ? "ns" : "s";
	return m->unit == MFILE_UNIT_BYTES ? "B" : NULL;
}

const char *model_format_fraction(double v, char *out, size_t size)
{
	if (isnan(v) || isinf(v)) {
		if (size)
			out[0] = '\0';
		return out;
	}
	size_t n = model_format_fixed(v, 3, out, size);
	/* "0.450" as "0.45", "1.000" as "1" */
	while (n > 1 && out[n - 1] == '0' && memchr(out, '.', n))
		out[--n] = '\0';
	if (n > 1 && out[n - 1] == '.')
		out[--n] = '\0';
	if (!strcmp(out, "-0"))
		snprintf(out, size, "0");
	return out;
}

/* V with three significant digits, in plain decimals ("1.25", "0.00125", "1230000"). */
static void three_significant(double v, char *out, size_t size)
{
	double a = fabs(v);
	if (a == 0) {
		snprintf(out, size, "0");
		return;
	}
	int e = (int)floor(log10(a));
	if (e < -12 || e > 14) {
		snprintf(out, size, "%.3g", v);
		return;
	}
	double scaled = a * pow(10, 2 - e);
	if (fabs(scaled - floor(scaled) - 0.5) < 1e-6) {
		/* Near a half: as printf rounds it (the exact binary value, ties to even). */
		char t[32];
		snprintf(t, sizeof(t), "%.3g", a);
		a = strtod(t, NULL);
		e = (int)floor(log10(a));
		scaled = a * pow(10, 2 - e);
	}
	double digits = round(scaled);
	if (digits >= 1000) {
		digits /= 10;
		e++;
	}
	/* DIGITS x 10^(e - 2): the integer digits, then the decimals without trailing zeros. */
	int x = (int)digits;
	char d[4] = { (char)('0' + x / 100), (char)('0' + x / 10 % 10), (char)('0' + x % 10), 0 };
	char tmp[48];
	size_t n = 0;
	if (v < 0)
		tmp[n++] = '-';
	if (e >= 2) {
		memcpy(tmp + n, d, 3);
		n += 3;
		for (int i = 2; i < e; i++)
			tmp[n++] = '0';
	} else {
		int last = 2;
		while (last > 0 && d[last] == '0' && last > e)
			last--;
		if (e < 0) {
			tmp[n++] = '0';
			tmp[n++] = '.';
			for (int i = -1; i > e; i--)
				tmp[n++] = '0';
			for (int i = 0; i <= last; i++)
				tmp[n++] = d[i];
		} else {
			for (int i = 0; i <= e; i++)
				tmp[n++] = d[i];
			if (last > e)
				tmp[n++] = '.';
			for (int i = e + 1; i <= last; i++)
				tmp[n++] = d[i];
		}
	}
	tmp[n] = '\0';
	units_concat("", tmp, out, size);
}

const char *model_format_number(const struct model *model, uint32_t metric, double v, char *out,
				size_t size)
{
	const struct dbfile_metric *m = model_metric(model, metric);
	if (!size)
		return out;
	if (isnan(v) || isinf(v)) {
		out[0] = '\0';
		return out;
	}
	if (model_metric_is_tma(model, metric)) {
		model_format_fraction(v, out, size);
		return out;
	}
	bool amount = !m || in_unit(model, metric);
	if (amount && m && m->unit == MFILE_UNIT_NANOSECONDS)
		v /= 1e9;
	else if (amount && fabs(v) < 1e6 && v == floor(v)) {
		model_format_fixed(v == 0 ? 0.0 : v, 0, out,
				   size); /* counts as the screen: exact */
		return out;
	}
	three_significant(v, out, size);
	return out;
}
