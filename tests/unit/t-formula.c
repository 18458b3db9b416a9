/* SPDX-License-Identifier: MIT */
/*
 * t-formula.c: lib/formula.h, the formula language of derived and TMA metrics: its grammar
 * (precedence, unary signs, numbers with exponents, functions, "<"), NaN on division by zero,
 * references out of range, malformed input and its message, and the text-level reference
 * operations (listing, the highest, relocation).
 */
#include "compat.h"
#include "error.h"
#include "formula.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const double inputs[] = { 1, 2, 4, 0, NAN };

static double input(void *ctx, uint32_t k)
{
	(void)ctx;
	return k < ARRAY_SIZE(inputs) ? inputs[k] : NAN;
}

static double eval(const char *text)
{
	return formula_eval_text(text, ARRAY_SIZE(inputs), input, NULL);
}

static void test_values(void)
{
	static const struct {
		const char *text;
		double want;
	} cases[] = {
		{ "1+2*3", 7 },		{ "(1+2)*3", 9 },	  { "8/4/2", 1 },
		{ "8-4-2", 2 },		{ "-2*3", -6 },		  { "--2", 2 },
		{ "+2", 2 },		{ "2*-3", -6 },		  { "-$2/2", -2 },
		{ "1e9", 1e9 },		{ "2.5E-3", 2.5e-3 },	  { "$0 / 1e9", 1e-9 },
		{ "1e+2", 100 },	{ ".5", 0.5 },		  { "1.", 1 },
		{ "0.25*4+.5", 1.5 },	{ " 1 +\t2 ", 3 },	  { "max(0,$0-$2)", 0 },
		{ "min($1,$2)", 2 },	{ "max ( 1 , 2 )", 2 },	  { "if($0<$1,10,20)", 10 },
		{ "if($1<$0,10,20)", 20 }, { "if (0, 1, 2)", 2 }, { "1 - 2 < 0", 1 },
		{ "1 < 1", 0 },		{ "$1*$2-$0", 7 },
		{ "3*2000/(4000000/4400000)/1000000", 0.0066 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		double got = eval(cases[i].text);
		ok(fabs(got - cases[i].want) <= 1e-12 * fmax(1, fabs(cases[i].want)),
		   "%s = %g (got %g)", cases[i].text, cases[i].want, got);
	}
}

static void test_undefined(void)
{
	ok(isnan(eval("1/0")), "a division by zero is NaN");
	ok(isnan(eval("$0/$3")), "a division by a zero input is NaN");
	ok(isnan(eval("max(0,1/0)+1")), "and so is what uses it");
	ok(isnan(eval("min($4,1)")) && isnan(eval("if($4,1,2)")) && isnan(eval("$4<1")),
	   "a NaN input of min, if or < gives NaN");
	ok(eval("0/1") == 0, "zero divided is zero");
}

static void test_malformed(void)
{
	static const struct {
		const char *text, *message;
	} cases[] = {
		{ "1+", "an unexpected end at offset 2" },
		{ "foo(1)", "an unexpected character at offset 0" },
		{ "max(1,2", "min or max without ')' at offset 7" },
		{ "(1", "a missing ')' at offset 2" },
		{ "1 2", "text after the end at offset 2" },
		{ "$", "'$' without a metric number at offset 0" },
		{ "$5", "a reference to a metric that does not exist at offset 0" },
		{ "1e", "an exponent without digits at offset 1" },
		{ "", "an unexpected end at offset 0" },
		{ "if(1,2)", "if without its second ',' at offset 6" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct formula f;
		fth_error_clear();
		int rc = formula_compile(cases[i].text, ARRAY_SIZE(inputs), &f);
		ok(rc < 0, "\"%s\" is malformed", cases[i].text);
		is_str(fth_errmsg(), cases[i].message, "\"%s\": its message", cases[i].text);
		ok(isnan(eval(cases[i].text)), "\"%s\" evaluates to NaN", cases[i].text);
	}
	char deep[2 * FORMULA_MAX_NESTING + 8];
	size_t n = 0;
	for (int i = 0; i <= FORMULA_MAX_NESTING; i++)
		deep[n++] = '(';
	deep[n] = '\0';
	struct formula f;
	ok(formula_compile(deep, 1, &f) < 0 && strstr(fth_errmsg(), "nested too deeply"),
	   "nesting has a limit: %s", fth_errmsg());
}

static void collect(void *ctx, uint32_t k)
{
	char *s = ctx;
	snprintf(s + strlen(s), 64 - strlen(s), "%u ", k);
}

static uint32_t shift(void *ctx, uint32_t k)
{
	return k + *(const uint32_t *)ctx;
}

static uint32_t below_3(void *ctx, uint32_t k)
{
	(void)ctx;
	return k < 3 ? k + 10 : k;
}

static void test_references(void)
{
	struct formula f;
	char seen[64] = "";
	ok(formula_compile("max(0,$3-$1)/$0", 4, &f) == 0, "a formula with three references");
	formula_refs(&f, collect, seen);
	is_str(seen, "3 1 0 ", "its references, in order");
	formula_release(&f);
	is_int(formula_max_ref("$3+$12*$7"), 12, "the highest reference");
	is_int(formula_max_ref("1+2"), -1, "none");
	uint32_t k;
	const char *end, *s = formula_next_ref("1+$24*2", &k, &end);
	ok(s && *s == '$' && k == 24 && !strcmp(end, "*2"), "the next reference and its end");

	char out[64];
	uint32_t base = 100;
	ok(formula_relocate("max(0,$3-$12)/$0", shift, &base, out, sizeof(out)) == 0,
	   "relocation");
	is_str(out, "max(0,$103-$112)/$100", "moves every reference");
	ok(formula_relocate("$1+$2", shift, &base, out, 8) < 0, "into too small a buffer");
	is_str(fth_errmsg(), "formula too long", "says so");
	ok(formula_relocate("$1+$2", shift, &base, out, 10) == 0 && !strcmp(out, "$101+$102"),
	   "into a buffer just large enough");
	ok(formula_relocate("$1+$05", below_3, NULL, out, sizeof(out)) == 0, "a partial map");
	is_str(out, "$11+$05", "a reference that the map leaves is copied as it is");
}

int main(void)
{
	test_values();
	test_undefined();
	test_malformed();
	test_references();
	return done_testing();
}
