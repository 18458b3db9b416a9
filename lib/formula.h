/* SPDX-License-Identifier: MIT */
/*
 * formula.h: the formula language of derived and TMA metrics (the "formula" field of
 * doc/formats.md), written once: compiled to a stack program once, evaluated many times, and
 * the text-level operations on references (listing, relocation, the highest one).  Grammar:
 *   expr   = sum [ "<" sum ]                 (a comparison gives 1 or 0)
 *   sum    = prod { ( "+" | "-" ) prod }
 *   prod   = unary { ( "*" | "/" ) unary }
 *   unary  = ( "-" | "+" ) unary | NUMBER | REF | "(" expr ")"
 *          | ( "min" | "max" ) "(" expr "," expr ")" | "if" "(" expr "," expr "," expr ")"
 *   NUMBER = digits [ "." [ digits ] ] [ EXP ] | "." digits [ EXP ]   ('.' whatever the locale)
 *   EXP    = ( "e" | "E" ) [ "+" | "-" ] digits                       ("1e9", "2.5E-3")
 *   REF    = "$" digits                      (metric N of the same table, below NREFS)
 * White space may separate any two tokens.  Nesting is limited to FORMULA_MAX_NESTING.  A
 * division by zero, and a NaN input of min, max, if or "<", gives NaN (and so does what uses it).
 */
#ifndef FATHOM_FORMULA_H
#define FATHOM_FORMULA_H

#include <stddef.h>
#include <stdint.h>

#define FORMULA_MAX_NESTING 200

/* A formula compiled to a stack program. */
struct formula {
	uint32_t n;
	struct formula_op *ops;
	uint32_t stack; /* the deepest stack it needs */
};
/*
 * Compile TEXT; references must be below NREFS.  -1 with the reason and its offset
 * ("a missing ')' at offset 7") when malformed.
 */
int formula_compile(const char *text, uint32_t nrefs, struct formula *out);
/* Evaluate with REF(ctx, k) giving metric k's value; NaN on division by zero or a NaN input. */
double formula_eval(const struct formula *f, double (*ref)(void *ctx, uint32_t k), void *ctx);
/* Call FN for every metric referenced. */
void formula_refs(const struct formula *f, void (*fn)(void *ctx, uint32_t k), void *ctx);
void formula_release(struct formula *f);
/* Compile TEXT (references below NREFS) and evaluate it once; NaN when malformed. */
double formula_eval_text(const char *text, uint32_t nrefs,
			 double (*ref)(void *ctx, uint32_t k), void *ctx);

/*
 * The next reference "$N" of TEXT at or after S: its start (NULL when none), N in *K
 * (saturated at UINT32_MAX) and the end of its digits in *END.  Allocation-free and inline,
 * so that measure's preloaded library (writer.c) uses it without linking this file.
 */
static inline const char *formula_next_ref(const char *s, uint32_t *k, const char **end)
{
	for (; *s; s++) {
		if (s[0] != '$' || s[1] < '0' || s[1] > '9')
			continue;
		uint64_t v = 0;
		const char *p = s + 1;
		for (; *p >= '0' && *p <= '9'; p++)
			if ((v = v * 10 + (uint64_t)(*p - '0')) > UINT32_MAX)
				v = UINT32_MAX;
		*k = (uint32_t)v;
		*end = p;
		return s;
	}
	return NULL;
}
/* The highest reference of TEXT, or -1. */
int64_t formula_max_ref(const char *text);
/*
 * Copy IN to OUT (SIZE bytes) with every "$K" replaced by "$MAP(ctx, K)" (a reference that
 * MAP leaves as it is is copied unchanged).  Returns 0, or -1 ("formula too long") when OUT is
 * too small.
 */
int formula_relocate(const char *in, uint32_t (*map)(void *ctx, uint32_t k), void *ctx,
		     char *out, size_t size);

#endif
