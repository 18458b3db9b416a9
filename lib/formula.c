/* SPDX-License-Identifier: MIT */
/*
 * formula.c: the one compiler and evaluator of metric formulas (grammar in formula.h): text
 * compiled once to a stack program, evaluated at any node or context; and the text-level
 * operations on references that measure and prof use.
 */
#include "compat.h"
#include "error.h"
#include "formula.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

enum op_code { OP_CONST, OP_REF, OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_NEG, OP_MIN, OP_MAX,
	       OP_LT, OP_IF };

struct formula_op {
	uint8_t code;
	uint32_t ref;
	double value;
};

struct compiler {
	const char *s, *start;
	uint32_t nmetrics;
	struct formula_op *ops;
	uint32_t n, cap;
	int depth, max_depth, nesting;
	const char *error, *error_at; /* the first error and where */
};

#define MAX_NESTING FORMULA_MAX_NESTING

static void emit(struct compiler *c, uint8_t code, uint32_t ref, double value, int delta)
{
	ALLOC_GROW(c->ops, c->n + 1, c->cap);
	c->ops[c->n++] = (struct formula_op){ code, ref, value };
	c->depth += delta;
	if (c->depth > c->max_depth)
		c->max_depth = c->depth;
}

static void skip_space(struct compiler *c)
{
	while (isspace((unsigned char)*c->s))
		c->s++;
}

static bool accept(struct compiler *c, char ch)
{
	skip_space(c);
	if (*c->s != ch)
		return false;
	c->s++;
	return true;
}

static void fail(struct compiler *c, const char *why)
{
	if (!c->error) {
		c->error = why;
		c->error_at = c->s;
	}
}

static void expect(struct compiler *c, char ch, const char *why)
{
	if (!accept(c, ch))
		fail(c, why);
}

static void parse_expr(struct compiler *c);

/*
 * A function's N arguments, "(expr, expr...)"; MISSING says what is wrong when the '(', each
 * ',' or the ')' is not there, in that order.
 */
static void parse_arguments(struct compiler *c, int n, const char *const *missing)
{
	expect(c, '(', missing[0]);
	for (int i = 0; i < n; i++) {
		if (i > 0)
			expect(c, ',', missing[i]);
		parse_expr(c);
	}
	expect(c, ')', missing[n]);
}

/* A decimal number by hand ('.' whatever the locale): digits [. digits] [e [+-] digits]. */
static void parse_number(struct compiler *c)
{
	double v = 0, scale = 1;
	bool digits = false;
	while (isdigit((unsigned char)*c->s)) {
		v = v * 10 + (*c->s++ - '0');
		digits = true;
	}
	if (*c->s == '.')
		for (c->s++; isdigit((unsigned char)*c->s); c->s++) {
			v += (*c->s - '0') * (scale /= 10);
			digits = true;
		}
	if (!digits) {
		fail(c, "a number without digits");
		return;
	}
	if (*c->s == 'e' || *c->s == 'E') {
		const char *p = c->s + 1;
		int sign = 1, e = 0;
		if (*p == '+' || *p == '-')
			sign = *p++ == '-' ? -1 : 1;
		if (!isdigit((unsigned char)*p)) {
			fail(c, "an exponent without digits");
			return;
		}
		while (isdigit((unsigned char)*p)) {
			if (e < 400)
				e = e * 10 + (*p - '0');
			p++;
		}
		c->s = p;
		v *= pow(10, sign * e);
	}
	emit(c, OP_CONST, 0, v, 1);
}

static void parse_unary(struct compiler *c)
{
	skip_space(c);
	if (c->error)
		return;
	if (++c->nesting > MAX_NESTING) {
		fail(c, "nested too deeply");
		return;
	}
	if (accept(c, '-')) {
		parse_unary(c);
		emit(c, OP_NEG, 0, 0, 0);
	} else if (accept(c, '+')) {
		parse_unary(c);
	} else if (accept(c, '(')) {
		parse_expr(c);
		expect(c, ')', "a missing ')'");
	} else if (*c->s == '$') {
		char *end;
		errno = 0;
		unsigned long k = strtoul(c->s + 1, &end, 10);
		if (end == c->s + 1 || !isdigit((unsigned char)c->s[1]))
			fail(c, "'$' without a metric number");
		else if (errno || k >= c->nmetrics)
			fail(c, "a reference to a metric that does not exist");
		else
			emit(c, OP_REF, (uint32_t)k, 0, 1);
		c->s = end;
	} else if (isdigit((unsigned char)*c->s) || *c->s == '.') {
		parse_number(c);
	} else if (!strncmp(c->s, "min", 3) || !strncmp(c->s, "max", 3)) {
		static const char *const missing[] = { "min or max without '('",
							"min or max without ','",
							"min or max without ')'" };
		uint8_t code = c->s[1] == 'i' ? OP_MIN : OP_MAX;
		c->s += 3;
		parse_arguments(c, 2, missing);
		emit(c, code, 0, 0, -1);
	} else if (!strncmp(c->s, "if", 2)) {
		static const char *const missing[] = { "if without '('", "if without ','",
							"if without its second ','", "if without ')'" };
		c->s += 2;
		parse_arguments(c, 3, missing);
		emit(c, OP_IF, 0, 0, -2);
	} else {
		fail(c, *c->s ? "an unexpected character" : "an unexpected end");
	}
	c->nesting--;
}

/*
 * OPERAND, then any number of "OP1 OPERAND" or "OP2 OPERAND", left to right: operators of one
 * precedence, compiled to CODE1 and CODE2.
 */
static void parse_left_to_right(struct compiler *c, void (*operand)(struct compiler *c),
				char op1, uint8_t code1, char op2, uint8_t code2)
{
	operand(c);
	while (!c->error) {
		uint8_t code;
		if (accept(c, op1))
			code = code1;
		else if (accept(c, op2))
			code = code2;
		else
			return;
		operand(c);
		emit(c, code, 0, 0, -1);
	}
}

static void parse_product(struct compiler *c)
{
	parse_left_to_right(c, parse_unary, '*', OP_MUL, '/', OP_DIV);
}

static void parse_sum(struct compiler *c)
{
	parse_left_to_right(c, parse_product, '+', OP_ADD, '-', OP_SUB);
}

static void parse_expr(struct compiler *c)
{
	parse_sum(c);
	if (!c->error && accept(c, '<')) {
		parse_sum(c);
		emit(c, OP_LT, 0, 0, -1);
	}
}

int formula_compile(const char *text, uint32_t nmetrics, struct formula *out)
{
	struct compiler c = { .s = text, .start = text, .nmetrics = nmetrics };
	memset(out, 0, sizeof(*out));
	parse_expr(&c);
	skip_space(&c);
	if (!c.error && *c.s)
		fail(&c, "text after the end");
	if (c.error) {
		free(c.ops);
		return fth_error("%s at offset %zu", c.error, (size_t)(c.error_at - c.start));
	}
	out->n = c.n;
	out->ops = c.ops;
	out->stack = (uint32_t)c.max_depth;
	return 0;
}

double formula_eval(const struct formula *f, double (*ref)(void *ctx, uint32_t k), void *ctx)
{
	double small[32];
	double *st = f->stack <= 32 ? small : xmalloc(f->stack * sizeof(double));
	uint32_t sp = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		const struct formula_op *op = &f->ops[i];
		double a, b;
		switch (op->code) {
		case OP_CONST:
			st[sp++] = op->value;
			continue;
		case OP_REF:
			st[sp++] = ref(ctx, op->ref);
			continue;
		case OP_NEG:
			st[sp - 1] = -st[sp - 1];
			continue;
		case OP_IF: {
			double cond = st[sp - 3];
			sp -= 2;
			st[sp - 1] = isnan(cond) ? NAN : cond != 0 ? st[sp] : st[sp + 1];
			continue;
		}
		}
		b = st[--sp];
		a = st[sp - 1];
		double r;
		switch (op->code) {
		case OP_ADD: r = a + b; break;
		case OP_SUB: r = a - b; break;
		case OP_MUL: r = a * b; break;
		case OP_DIV: r = b == 0 ? NAN : a / b; break;
		case OP_MIN: r = isnan(a) || isnan(b) ? NAN : fmin(a, b); break;
		case OP_MAX: r = isnan(a) || isnan(b) ? NAN : fmax(a, b); break;
		default: r = isnan(a) || isnan(b) ? NAN : (double)(a < b); break;
		}
		st[sp - 1] = r;
	}
	double v = sp ? st[sp - 1] : NAN;
	if (st != small)
		free(st);
	return v;
}

void formula_refs(const struct formula *f, void (*fn)(void *ctx, uint32_t k), void *ctx)
{
	for (uint32_t i = 0; i < f->n; i++)
		if (f->ops[i].code == OP_REF)
			fn(ctx, f->ops[i].ref);
}

void formula_release(struct formula *f)
{
	free(f->ops);
	memset(f, 0, sizeof(*f));
}

double formula_eval_text(const char *text, uint32_t nrefs,
			 double (*ref)(void *ctx, uint32_t k), void *ctx)
{
	struct formula f;
	if (formula_compile(text, nrefs, &f) < 0)
		return NAN;
	double v = formula_eval(&f, ref, ctx);
	formula_release(&f);
	return v;
}

int64_t formula_max_ref(const char *text)
{
	int64_t max = -1;
	uint32_t k;
	const char *end;
	for (const char *s = formula_next_ref(text, &k, &end); s; s = formula_next_ref(end, &k, &end))
		if (k > max)
			max = k;
	return max;
}

int formula_relocate(const char *in, uint32_t (*map)(void *ctx, uint32_t k), void *ctx,
		     char *out, size_t size)
{
	size_t pos = 0;
	uint32_t k;
	const char *end;
	for (const char *s = in;;) {
		const char *ref = formula_next_ref(s, &k, &end);
		size_t lit = ref ? (size_t)(ref - s) : strlen(s);
		char num[16];
		int n = 0;
		uint32_t to = ref ? map(ctx, k) : k;
		if (ref && to == k)
			lit = (size_t)(end - s);
		else if (ref)
			n = snprintf(num, sizeof(num), "$%u", to);
		if (pos + lit + (size_t)n >= size)
			return fth_error("formula too long");
		memcpy(out + pos, s, lit);
		memcpy(out + pos + lit, num, (size_t)n);
		pos += lit + (size_t)n;
		if (!ref)
			break;
		s = end;
	}
	out[pos] = '\0';
	return 0;
}
