/* SPDX-License-Identifier: MIT */
/* cfi.c: builds recipe tables from .eh_frame_hdr/.eh_frame CFI; the signal-safe lookup and step. */
#include "compat.h"
#include "cfi.h"
#include "error.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- DWARF and .eh_frame constants (facts of the formats) ------------------------------------ */

#define PE_OMIT 0xff
#define PE_FORMAT 0x0f
#define PE_ABSPTR 0x00
#define PE_ULEB128 0x01
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SLEB128 0x09
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_APPL 0x70
#define PE_PCREL 0x10
#define PE_TEXTREL 0x20
#define PE_DATAREL 0x30
#define PE_FUNCREL 0x40
#define PE_ALIGNED 0x50
#define PE_INDIRECT 0x80

#define CFA_advance_loc 0x40
#define CFA_offset 0x80
#define CFA_restore 0xc0
#define CFA_nop 0x00
#define CFA_set_loc 0x01
#define CFA_advance_loc1 0x02
#define CFA_advance_loc2 0x03
#define CFA_advance_loc4 0x04
#define CFA_offset_extended 0x05
#define CFA_restore_extended 0x06
#define CFA_undefined 0x07
#define CFA_same_value 0x08
#define CFA_register 0x09
#define CFA_remember_state 0x0a
#define CFA_restore_state 0x0b
#define CFA_def_cfa 0x0c
#define CFA_def_cfa_register 0x0d
#define CFA_def_cfa_offset 0x0e
#define CFA_def_cfa_expression 0x0f
#define CFA_expression 0x10
#define CFA_offset_extended_sf 0x11
#define CFA_def_cfa_sf 0x12
#define CFA_def_cfa_offset_sf 0x13
#define CFA_val_offset 0x14
#define CFA_val_offset_sf 0x15
#define CFA_val_expression 0x16
#define CFA_MIPS_advance_loc8 0x1d
#define CFA_GNU_window_save 0x2d
#define CFA_GNU_args_size 0x2e
#define CFA_GNU_negative_offset_extended 0x2f

#define OP_deref 0x06
#define OP_and 0x1a
#define OP_plus 0x22
#define OP_shl 0x24
#define OP_ge 0x2a
#define OP_lit0 0x30
#define OP_breg0 0x70

#define REG_RBX_DW 3
#define REG_RBP_DW 6
#define REG_RSP_DW 7
#define REG_RA_DW 16

/* Offsets in the kernel's x86-64 ucontext: uc_flags, uc_link, uc_stack (24), then sigcontext. */
#define UC_GREGS 40
#define UC_RBP (UC_GREGS + 8 * 10)
#define UC_RBX (UC_GREGS + 8 * 11)
#define UC_RSP (UC_GREGS + 8 * 15)
#define UC_RIP (UC_GREGS + 8 * 16)

#define STATE_STACK_DEPTH 16
#define CIE_CACHE_SIZE 16
#define MAX_SEGS 16

/* ---- where the image's bytes are ------------------------------------------------------------ */

struct seg {
	uint64_t lo, hi; /* link-time addresses */
	const uint8_t *data; /* the byte at lo */
};

struct cie {
	uint64_t vaddr; /* 0: empty cache slot */
	const uint8_t *insns, *insns_end;
	uint64_t code_align;
	int64_t data_align;
	unsigned ra_reg;
	uint8_t fde_enc;
	bool has_z, signal, bad;
	uint8_t version;
};

struct src {
	struct seg seg[MAX_SEGS];
	unsigned nseg;
	uint64_t abs_adjust; /* subtracted from absolute pointers (the bias of a loaded image) */
	uint64_t hdr, hdr_size; /* .eh_frame_hdr */
	uint64_t frame, frame_end; /* .eh_frame; frame_end 0 when unknown */
	const char *name;
	unsigned flags;
	struct cie cache[CIE_CACHE_SIZE];
};

/* A bounds-checked reader over one segment's bytes. */
struct cur {
	const uint8_t *p, *end;
	const uint8_t *base; /* the byte at base_vaddr */
	uint64_t base_vaddr;
	bool err;
};

static const struct seg *seg_of(const struct src *s, uint64_t vaddr)
{
	for (unsigned i = 0; i < s->nseg; i++)
		if (vaddr >= s->seg[i].lo && vaddr < s->seg[i].hi)
			return &s->seg[i];
	return NULL;
}

/* A reader at VADDR, up to the end of its segment (or LIMIT, if earlier and non-zero). */
static bool cur_at(const struct src *s, uint64_t vaddr, uint64_t limit, struct cur *c)
{
	const struct seg *g = seg_of(s, vaddr);
	if (!g)
		return false;
	uint64_t end = g->hi;
	if (limit && limit > vaddr && limit < end)
		end = limit;
	c->base = g->data;
	c->base_vaddr = g->lo;
	c->p = g->data + (vaddr - g->lo);
	c->end = g->data + (end - g->lo);
	c->err = false;
	return true;
}

static inline uint64_t cur_vaddr(const struct cur *c)
{
	return c->base_vaddr + (uint64_t)(c->p - c->base);
}

static inline bool need(struct cur *c, size_t n)
{
	if (c->err || (size_t)(c->end - c->p) < n) {
		c->err = true;
		return false;
	}
	return true;
}

static uint8_t rd_u8(struct cur *c)
{
	if (!need(c, 1))
		return 0;
	return *c->p++;
}

static uint16_t rd_u16(struct cur *c)
{
	uint16_t v = 0;
	if (need(c, 2)) {
		memcpy(&v, c->p, 2);
		c->p += 2;
	}
	return v;
}

static uint32_t rd_u32(struct cur *c)
{
	uint32_t v = 0;
	if (need(c, 4)) {
		memcpy(&v, c->p, 4);
		c->p += 4;
	}
	return v;
}

static uint64_t rd_u64(struct cur *c)
{
	uint64_t v = 0;
	if (need(c, 8)) {
		memcpy(&v, c->p, 8);
		c->p += 8;
	}
	return v;
}

static uint64_t rd_uleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (!need(c, 1))
			return 0;
		uint8_t b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct cur *c)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (!need(c, 1))
			return 0;
		b = *c->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

static void skip(struct cur *c, uint64_t n)
{
	if (c->err)
		return;
	if ((uint64_t)(c->end - c->p) < n)
		c->err = true;
	else
		c->p += n;
}

/* The raw value of a pointer in format FMT (the low nibble of an encoding). */
static bool rd_value(struct cur *c, uint8_t fmt, uint64_t *v)
{
	switch (fmt & PE_FORMAT) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		*v = rd_u64(c);
		break;
	case PE_ULEB128:
		*v = rd_uleb(c);
		break;
	case PE_SLEB128:
		*v = (uint64_t)rd_sleb(c);
		break;
	case PE_UDATA2:
		*v = rd_u16(c);
		break;
	case PE_SDATA2:
		*v = (uint64_t)(int64_t)(int16_t)rd_u16(c);
		break;
	case PE_UDATA4:
		*v = rd_u32(c);
		break;
	case PE_SDATA4:
		*v = (uint64_t)(int64_t)(int32_t)rd_u32(c);
		break;
	default:
		return false;
	}
	return !c->err;
}

/*
 * Read a pointer in encoding ENC; the result is a link-time address for pointers (absolute
 * values are adjusted by abs_adjust).  DATAREL is the base for DW_EH_PE_datarel (0: refused).
 * With PE_INDIRECT the pointed-to word is read too, unless SKIP_ONLY.  Returns false on error.
 */
static bool rd_enc(const struct src *s, struct cur *c, uint8_t enc, uint64_t datarel,
		   bool skip_only, uint64_t *out)
{
	*out = 0;
	if (enc == PE_OMIT)
		return true;
	uint64_t field = cur_vaddr(c);
	uint64_t v;
	if ((enc & PE_APPL) == PE_ALIGNED) {
		size_t mis = (size_t)(field & 7);
		if (mis)
			skip(c, 8 - mis);
		field = cur_vaddr(c);
		v = rd_u64(c);
		enc = PE_ABSPTR | (enc & PE_INDIRECT);
	} else if (!rd_value(c, enc, &v)) {
		return false;
	}
	if (c->err)
		return false;
	if (skip_only)
		return true;
	switch (enc & PE_APPL) {
	case 0:
		v -= s->abs_adjust;
		break;
	case PE_PCREL:
		v += field;
		break;
	case PE_DATAREL:
		if (!datarel)
			return false;
		v += datarel;
		break;
	default: /* textrel, funcrel: not used by x86-64 .eh_frame */
		return false;
	}
	if (enc & PE_INDIRECT) {
		struct cur ind;
		if (!cur_at(s, v, 0, &ind))
			return false;
		v = rd_u64(&ind) - s->abs_adjust;
		if (ind.err)
			return false;
	}
	*out = v;
	return true;
}

/* Size of a fixed-size encoding, 0 for variable-size or invalid ones. */
static size_t enc_size(uint8_t enc)
{
	switch (enc & PE_FORMAT) {
	case PE_ABSPTR:
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_UDATA2:
	case PE_SDATA2:
		return 2;
	default:
		return 0;
	}
}

/* ---- the CFA state machine ------------------------------------------------------------------- */

enum rule_kind { R_UNSET, R_UNDEF, R_SAME, R_OFFSET, R_VAL_OFFSET, R_REG, R_EXPR, R_VAL_EXPR };

struct rule {
	uint8_t kind;
	int64_t off; /* R_OFFSET, R_VAL_OFFSET: offset from the CFA; R_REG: the register */
	const uint8_t *expr, *expr_end;
};

struct state {
	bool cfa_is_expr;
	unsigned cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr, *cfa_expr_end;
	struct rule rbp, rbx, ra;
	bool bad; /* the CIE's initial instructions could not be interpreted */
};

/* Collects rows; with rows == NULL it only counts (the sizing pass). */
struct emitter {
	struct cfi_row *rows;
	uint32_t n, cap;
	struct cfi_row last;
	bool have_last;
	uint64_t pending_end; /* end of the previous FDE, where a CFI_NONE row is due */
	bool have_pending;
	uint32_t nunknown;
	bool overflow;
};

static bool same_rule(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->kind == b->kind && a->flags == b->flags && a->rbp == b->rbp && a->ra == b->ra &&
	       a->cfa_off == b->cfa_off;
}

static void emit(struct emitter *em, uint64_t start, const struct cfi_row *r)
{
	if (start > UINT32_MAX) {
		em->overflow = true;
		return;
	}
	if (em->have_last) {
		if (start < em->last.start)
			return; /* overlapping FDEs: the earlier one wins */
		if (same_rule(&em->last, r))
			return;
		if (start == em->last.start) {
			/* replaced in place: the count does not change */
			if (em->last.kind == CFI_UNKNOWN)
				em->nunknown--;
			em->last = *r;
			em->last.start = (uint32_t)start;
			if (r->kind == CFI_UNKNOWN)
				em->nunknown++;
			if (em->rows)
				em->rows[em->n - 1] = em->last;
			return;
		}
	}
	if (em->rows) {
		if (em->n >= em->cap) {
			em->overflow = true;
			return;
		}
		em->rows[em->n] = *r;
		em->rows[em->n].start = (uint32_t)start;
	}
	em->last = *r;
	em->last.start = (uint32_t)start;
	em->have_last = true;
	em->n++;
	if (r->kind == CFI_UNKNOWN)
		em->nunknown++;
}

static const struct cfi_row none_row = { .kind = CFI_NONE };
static const struct cfi_row unknown_row = { .kind = CFI_UNKNOWN };

/* Is [P, END) the .plt expression "rsp + N + (((rip & 15) >= K) << 3)"? */
static bool match_plt(const uint8_t *p, const uint8_t *end, int64_t *n, unsigned *k)
{
	struct cur c = { .p = p, .end = end, .base = p };
	if (rd_u8(&c) != OP_breg0 + REG_RSP_DW)
		return false;
	*n = rd_sleb(&c);
	if (rd_u8(&c) != OP_breg0 + REG_RA_DW || rd_sleb(&c) != 0)
		return false;
	if (rd_u8(&c) != OP_lit0 + 15 || rd_u8(&c) != OP_and)
		return false;
	uint8_t lit = rd_u8(&c);
	if (lit < OP_lit0 || lit > OP_lit0 + 15)
		return false;
	*k = lit - OP_lit0;
	if (rd_u8(&c) != OP_ge || rd_u8(&c) != OP_lit0 + 3 || rd_u8(&c) != OP_shl ||
	    rd_u8(&c) != OP_plus)
		return false;
	return !c.err && c.p == end;
}

/* Is [P, END) "DW_OP_breg<REG> N" followed by DW_OP_deref when DEREF? */
static bool match_breg(const uint8_t *p, const uint8_t *end, unsigned reg, bool deref, int64_t *n)
{
	struct cur c = { .p = p, .end = end, .base = p };
	if (rd_u8(&c) != OP_breg0 + reg)
		return false;
	*n = rd_sleb(&c);
	if (deref && rd_u8(&c) != OP_deref)
		return false;
	return !c.err && c.p == end;
}

static bool fits_slot(int64_t off, int8_t *slot)
{
	if (off % 8 || off / 8 < -127 || off / 8 > 127 || off == 0)
		return false;
	*slot = (int8_t)(off / 8);
	return true;
}

/* The compact row for state ST (start is set by emit). */
static void state_row(const struct cie *cie, const struct state *st, struct cfi_row *r)
{
	memset(r, 0, sizeof(*r));
	if (cie->signal) {
		r->kind = CFI_SIGNAL;
		return;
	}
	if (st->ra.kind == R_UNDEF)
		r->flags |= CFI_F_RA_UNDEF;
	else if (st->ra.kind != R_OFFSET || !fits_slot(st->ra.off, &r->ra))
		goto unknown;

	if (!st->cfa_is_expr) {
		if (st->cfa_reg == REG_RSP_DW)
			r->kind = CFI_RSP;
		else if (st->cfa_reg == REG_RBP_DW)
			r->kind = CFI_RBP;
		else if (st->cfa_reg == REG_RBX_DW)
			r->kind = CFI_RBX;
		else
			goto unknown;
		if (st->cfa_off < INT32_MIN || st->cfa_off > INT32_MAX)
			goto unknown;
		r->cfa_off = (int32_t)st->cfa_off;
	} else {
		int64_t n;
		unsigned k;
		if (match_plt(st->cfa_expr, st->cfa_expr_end, &n, &k) && n >= 0 && n <= INT32_MAX) {
			r->kind = CFI_PLT;
			r->cfa_off = (int32_t)n;
			r->rbp = (int8_t)k;
			if (st->rbp.kind != R_UNSET && st->rbp.kind != R_SAME)
				goto unknown;
			return;
		}
		if (match_breg(st->cfa_expr, st->cfa_expr_end, REG_RBP_DW, true, &n) &&
		    n >= INT32_MIN && n <= INT32_MAX) {
			r->kind = CFI_RBP_DEREF;
			r->cfa_off = (int32_t)n;
		} else {
			goto unknown;
		}
	}

	switch (st->rbp.kind) {
	case R_UNSET:
	case R_SAME:
		break;
	case R_UNDEF:
		r->flags |= CFI_F_RBP_UNDEF;
		break;
	case R_OFFSET:
		if (!fits_slot(st->rbp.off, &r->rbp))
			goto unknown;
		r->flags |= CFI_F_RBP_SAVED;
		break;
	case R_EXPR: {
		int64_t n;
		if (!match_breg(st->rbp.expr, st->rbp.expr_end, REG_RBP_DW, false, &n) ||
		    n % 8 || n / 8 < -127 || n / 8 > 127)
			goto unknown;
		r->rbp = (int8_t)(n / 8);
		r->flags |= CFI_F_RBP_REGREL;
		break;
	}
	default:
		goto unknown;
	}
	/* RBX matters only to rows whose CFA is based on it: a rule for it that does not fit
	 * is left out rather than making the whole row unknown. */
	if (st->rbx.kind == R_OFFSET && fits_slot(st->rbx.off, &r->rbx))
		r->flags |= CFI_F_RBX_SAVED;
	else
		r->rbx = 0;
	return;
unknown:
	{
		uint8_t keep = r->flags & CFI_F_RA_UNDEF;
		memset(r, 0, sizeof(*r));
		r->kind = CFI_UNKNOWN;
		r->flags = keep;
	}
}

static struct rule *rule_of(struct state *st, const struct cie *cie, uint64_t reg)
{
	if (reg == cie->ra_reg)
		return &st->ra;
	if (reg == REG_RBP_DW)
		return &st->rbp;
	if (reg == REG_RBX_DW)
		return &st->rbx;
	return NULL; /* a register we do not track */
}

/*
 * Run the CFA program [C) for an FDE covering [LOC, END) (or the CIE's initial instructions when
 * EM is NULL).  INIT is the CIE's state for DW_CFA_restore.  Returns false when the program
 * cannot be interpreted, with *LOCP where the rows emitted so far end.
 */
static bool run_cfa(const struct src *s, const struct cie *cie, struct cur *c, struct state *st,
		    const struct state *init, uint64_t *locp, uint64_t end, struct emitter *em)
{
	uint64_t loc = *locp;
	struct state stack[STATE_STACK_DEPTH];
	unsigned depth = 0;
	struct cfi_row row;

	while (c->p < c->end && !c->err) {
		*locp = loc;
		uint8_t op = rd_u8(c);
		uint64_t reg, delta = 0, u;
		int64_t sv;
		struct rule *r;

		switch (op & 0xc0) {
		case CFA_advance_loc:
			delta = (uint64_t)(op & 0x3f) * cie->code_align;
			goto advance;
		case CFA_offset:
			reg = op & 0x3f;
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_OFFSET;
				r->off = (int64_t)u * cie->data_align;
			}
			continue;
		case CFA_restore:
			reg = op & 0x3f;
			goto restore;
		default:
			break;
		}

		switch (op) {
		case CFA_nop:
			break;
		case CFA_set_loc: {
			uint64_t to;
			if (!em || !rd_enc(s, c, cie->fde_enc, 0, false, &to) || to < loc)
				return false;
			delta = to - loc;
			goto advance;
		}
		case CFA_advance_loc1:
			delta = rd_u8(c) * cie->code_align;
			goto advance;
		case CFA_advance_loc2:
			delta = rd_u16(c) * cie->code_align;
			goto advance;
		case CFA_advance_loc4:
			delta = rd_u32(c) * cie->code_align;
			goto advance;
		case CFA_MIPS_advance_loc8:
			delta = rd_u64(c) * cie->code_align;
			goto advance;
		case CFA_offset_extended:
			reg = rd_uleb(c);
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_OFFSET;
				r->off = (int64_t)u * cie->data_align;
			}
			break;
		case CFA_offset_extended_sf:
			reg = rd_uleb(c);
			sv = rd_sleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_OFFSET;
				r->off = sv * cie->data_align;
			}
			break;
		case CFA_GNU_negative_offset_extended:
			reg = rd_uleb(c);
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_OFFSET;
				r->off = -(int64_t)u * cie->data_align;
			}
			break;
		case CFA_val_offset:
			reg = rd_uleb(c);
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_VAL_OFFSET;
				r->off = (int64_t)u * cie->data_align;
			}
			break;
		case CFA_val_offset_sf:
			reg = rd_uleb(c);
			sv = rd_sleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_VAL_OFFSET;
				r->off = sv * cie->data_align;
			}
			break;
		case CFA_restore_extended:
			reg = rd_uleb(c);
			goto restore;
		case CFA_undefined:
		case CFA_same_value:
			reg = rd_uleb(c);
			if ((r = rule_of(st, cie, reg)))
				r->kind = op == CFA_undefined ? R_UNDEF : R_SAME;
			break;
		case CFA_register:
			reg = rd_uleb(c);
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = R_REG;
				r->off = (int64_t)u;
			}
			break;
		case CFA_remember_state:
			if (depth >= STATE_STACK_DEPTH)
				return false;
			stack[depth++] = *st;
			break;
		case CFA_restore_state:
			if (depth == 0)
				return false;
			/* the CFA rule is restored too (DWARF 5 6.4.2.4) */
			*st = stack[--depth];
			break;
		case CFA_def_cfa:
			st->cfa_reg = (unsigned)rd_uleb(c);
			st->cfa_off = (int64_t)rd_uleb(c);
			st->cfa_is_expr = false;
			break;
		case CFA_def_cfa_sf:
			st->cfa_reg = (unsigned)rd_uleb(c);
			st->cfa_off = rd_sleb(c) * cie->data_align;
			st->cfa_is_expr = false;
			break;
		case CFA_def_cfa_register:
			st->cfa_reg = (unsigned)rd_uleb(c);
			if (st->cfa_is_expr)
				return false;
			break;
		case CFA_def_cfa_offset:
			st->cfa_off = (int64_t)rd_uleb(c);
			if (st->cfa_is_expr)
				return false;
			break;
		case CFA_def_cfa_offset_sf:
			st->cfa_off = rd_sleb(c) * cie->data_align;
			if (st->cfa_is_expr)
				return false;
			break;
		case CFA_def_cfa_expression:
			u = rd_uleb(c);
			st->cfa_is_expr = true;
			st->cfa_expr = c->p;
			skip(c, u);
			st->cfa_expr_end = c->p;
			break;
		case CFA_expression:
		case CFA_val_expression:
			reg = rd_uleb(c);
			u = rd_uleb(c);
			if ((r = rule_of(st, cie, reg))) {
				r->kind = op == CFA_expression ? R_EXPR : R_VAL_EXPR;
				r->expr = c->p;
			}
			skip(c, u);
			if (r)
				r->expr_end = c->p;
			break;
		case CFA_GNU_args_size:
			rd_uleb(c);
			break;
		case CFA_GNU_window_save: /* SPARC / AArch64 only: not ours */
		default:
			return false;
		}
		continue;

	restore:
		if ((r = rule_of(st, cie, reg))) {
			if (!init)
				return false; /* DW_CFA_restore in a CIE */
			*r = reg == cie->ra_reg ? init->ra : init->rbp;
		}
		continue;

	advance:
		if (!em)
			return false; /* advancing in a CIE's initial instructions */
		if (c->err)
			return false;
		if (delta && loc < end) {
			state_row(cie, st, &row);
			emit(em, loc, &row);
		}
		loc = delta > end - FTH_MIN(loc, end) ? end : loc + delta;
	}
	*locp = loc;
	if (c->err)
		return false;
	if (em && loc < end) {
		state_row(cie, st, &row);
		emit(em, loc, &row);
	}
	return true;
}

/* ---- CIEs and FDEs -------------------------------------------------------------------------- */

/* Read a CIE/FDE header at C: sets *BODY_END; returns the id field (CIE: 0) or ~0 on error. */
static uint64_t read_entry_head(struct cur *c, const uint8_t **body_end, uint64_t *id_vaddr)
{
	uint64_t len = rd_u32(c);
	if (len == 0xffffffffu)
		len = rd_u64(c);
	if (c->err || len < 4 || len > (uint64_t)(c->end - c->p)) {
		c->err = true;
		return ~(uint64_t)0;
	}
	*body_end = c->p + len;
	*id_vaddr = cur_vaddr(c);
	return rd_u32(c);
}

static struct cie *get_cie(struct src *s, uint64_t vaddr, struct state *init)
{
	struct cie *cie = &s->cache[(vaddr >> 3) % CIE_CACHE_SIZE];
	struct cur c;
	const uint8_t *end;
	uint64_t id_vaddr;

	if (cie->vaddr != vaddr) {
		memset(cie, 0, sizeof(*cie));
		cie->vaddr = vaddr;
		cie->bad = true;
		if (!cur_at(s, vaddr, s->frame_end, &c))
			return cie;
		if (read_entry_head(&c, &end, &id_vaddr) != 0)
			return cie;
		c.end = end;
		cie->version = rd_u8(&c);
		if (cie->version != 1 && cie->version != 3 && cie->version != 4)
			return cie;
		const char *aug = (const char *)c.p;
		size_t auglen = strnlen(aug, (size_t)(c.end - c.p));
		skip(&c, auglen + 1);
		if (cie->version == 4) {
			if (rd_u8(&c) != 8) /* address size */
				return cie;
			rd_u8(&c); /* segment selector size */
		}
		cie->code_align = rd_uleb(&c);
		cie->data_align = rd_sleb(&c);
		cie->ra_reg = cie->version == 1 ? rd_u8(&c) : (unsigned)rd_uleb(&c);
		cie->fde_enc = PE_ABSPTR;
		if (auglen && aug[0] == 'z') {
			cie->has_z = true;
			uint64_t zlen = rd_uleb(&c);
			if (c.err || zlen > (uint64_t)(c.end - c.p))
				return cie;
			struct cur z = c;
			z.end = c.p + zlen;
			for (size_t i = 1; i < auglen; i++) {
				uint64_t dummy;
				switch (aug[i]) {
				case 'R':
					cie->fde_enc = rd_u8(&z);
					break;
				case 'L':
					rd_u8(&z);
					break;
				case 'P':
					if (!rd_enc(s, &z, rd_u8(&z), 0, true, &dummy))
						return cie;
					break;
				case 'S':
					cie->signal = true;
					break;
				case 'B':
				case 'G':
					break;
				default:
					i = auglen; /* unknown: the rest is skipped by its length */
					break;
				}
			}
			if (z.err)
				return cie;
			skip(&c, zlen);
		} else if (auglen) {
			return cie; /* "eh" and other ancient augmentations */
		}
		if (c.err || cie->code_align == 0)
			return cie;
		if (cie->fde_enc != PE_OMIT && !enc_size(cie->fde_enc) &&
		    (cie->fde_enc & PE_FORMAT) != PE_ULEB128 &&
		    (cie->fde_enc & PE_FORMAT) != PE_SLEB128)
			return cie;
		cie->insns = c.p;
		cie->insns_end = end;
		cie->bad = false;
	}
	if (cie->bad)
		return cie;

	/* The initial state: no CFA yet, RA and RBP unset; then the CIE's instructions. */
	memset(init, 0, sizeof(*init));
	init->cfa_reg = ~0u; /* no CFA rule yet: unknown rows unless the FDE defines one */
	struct cur ic = { .p = cie->insns, .end = cie->insns_end, .base = cie->insns };
	uint64_t loc = 0;
	if (!run_cfa(s, cie, &ic, init, NULL, &loc, 0, NULL))
		init->bad = true;
	return cie;
}

/* Parse and run the FDE at VADDR.  Structural damage is an error; a bad program is not. */
static int do_fde(struct src *s, uint64_t vaddr, struct emitter *em, uint32_t *nfdes)
{
	struct cur c;
	const uint8_t *end;
	uint64_t id_vaddr, pc, range;

	if (!cur_at(s, vaddr, s->frame_end, &c))
		return fth_error("%s: FDE at %#llx outside the image", s->name,
				 (unsigned long long)vaddr);
	uint64_t id = read_entry_head(&c, &end, &id_vaddr);
	if (c.err || id == 0 || id > id_vaddr)
		return fth_error("%s: bad FDE at %#llx", s->name, (unsigned long long)vaddr);
	c.end = end;
	struct state init, st;
	struct cie *cie = get_cie(s, id_vaddr - id, &init);
	if (cie->bad)
		return fth_error("%s: bad CIE at %#llx for the FDE at %#llx", s->name,
				 (unsigned long long)(id_vaddr - id), (unsigned long long)vaddr);
	/* pc_begin is a pointer; pc_range is a plain value in the same format */
	if (!rd_enc(s, &c, cie->fde_enc, 0, false, &pc) || !rd_value(&c, cie->fde_enc, &range))
		return fth_error("%s: bad FDE pc range at %#llx", s->name,
				 (unsigned long long)vaddr);
	if (cie->has_z)
		skip(&c, rd_uleb(&c));
	if (c.err)
		return fth_error("%s: truncated FDE at %#llx", s->name, (unsigned long long)vaddr);
	if (range == 0)
		return 0;
	if (pc > UINT32_MAX || range > UINT32_MAX - pc) {
		em->overflow = true;
		return 0;
	}
	uint64_t pc_end = pc + range;

	if (em->have_pending && pc > em->pending_end)
		emit(em, em->pending_end, &none_row);
	st = init;
	uint64_t loc = pc;
	if (init.bad || !run_cfa(s, cie, &c, &st, &init, &loc, pc_end, em)) {
		/* rows before the instruction we could not interpret stay; the rest is unknown */
		if (loc < pc_end)
			emit(em, loc, &unknown_row);
	}
	if (!em->have_pending || pc_end > em->pending_end)
		em->pending_end = pc_end;
	em->have_pending = true;
	(*nfdes)++;
	return 0;
}

/* ---- the FDE list ---------------------------------------------------------------------------- */

struct fde_ref {
	uint64_t pc, vaddr;
};

static int cmp_fde_ref(const void *a, const void *b)
{
	const struct fde_ref *x = a, *y = b;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

/* Walk .eh_frame linearly: count FDEs (REFS NULL) or fill REFS. */
static int scan_frames(struct src *s, struct fde_ref *refs, size_t *n)
{
	struct cur c;
	size_t count = 0;
	if (!cur_at(s, s->frame, s->frame_end, &c))
		return fth_error("%s: .eh_frame at %#llx outside the image", s->name,
				 (unsigned long long)s->frame);
	while (c.p + 4 <= c.end) {
		uint64_t at = cur_vaddr(&c);
		uint32_t len32;
		memcpy(&len32, c.p, 4);
		if (len32 == 0)
			break; /* the terminator */
		const uint8_t *end;
		uint64_t id_vaddr;
		uint64_t id = read_entry_head(&c, &end, &id_vaddr);
		if (c.err)
			return fth_error("%s: bad .eh_frame entry at %#llx", s->name,
					 (unsigned long long)at);
		if (id != 0) {
			if (refs) {
				struct state init;
				struct cie *cie = get_cie(s, id_vaddr - id, &init);
				struct cur pc = c;
				pc.end = end;
				if (cie->bad ||
				    !rd_enc(s, &pc, cie->fde_enc, 0, false, &refs[count].pc))
					return fth_error("%s: bad FDE at %#llx", s->name,
							 (unsigned long long)at);
				refs[count].vaddr = at;
			}
			count++;
		}
		c.p = end;
	}
	*n = count;
	return 0;
}

struct fde_list {
	/* the .eh_frame_hdr table, or REFS */
	struct cur table;
	uint8_t table_enc;
	size_t entry_size;
	struct fde_ref *refs;
	size_t n;
};

static int fde_at(struct src *s, const struct fde_list *l, size_t i, uint64_t *vaddr)
{
	if (l->refs) {
		*vaddr = l->refs[i].vaddr;
		return 0;
	}
	struct cur c = l->table;
	uint64_t pc;
	c.p += i * l->entry_size;
	if (l->table_enc == (PE_DATAREL | PE_SDATA4)) {
		/* the common case, without the generic decoder */
		if (!need(&c, 8))
			return fth_error("%s: truncated .eh_frame_hdr table", s->name);
		int32_t v;
		memcpy(&v, c.p + 4, 4);
		*vaddr = s->hdr + (uint64_t)(int64_t)v;
		return 0;
	}
	if (!rd_enc(s, &c, l->table_enc, s->hdr, false, &pc) ||
	    !rd_enc(s, &c, l->table_enc, s->hdr, false, vaddr))
		return fth_error("%s: bad .eh_frame_hdr table entry %zu", s->name, i);
	return 0;
}

static int make_fde_list(struct src *s, struct fde_list *l, const struct cfi_allocator *al)
{
	memset(l, 0, sizeof(*l));
	struct cur c;
	if (!cur_at(s, s->hdr, s->hdr_size ? s->hdr + s->hdr_size : 0, &c))
		return fth_error("%s: .eh_frame_hdr at %#llx outside the image", s->name,
				 (unsigned long long)s->hdr);
	uint8_t version = rd_u8(&c), ptr_enc = rd_u8(&c), count_enc = rd_u8(&c);
	uint8_t table_enc = rd_u8(&c);
	if (c.err || version != 1)
		return fth_error("%s: unsupported .eh_frame_hdr version %u", s->name, version);
	if (!rd_enc(s, &c, ptr_enc, s->hdr, false, &s->frame) || ptr_enc == PE_OMIT)
		return fth_error("%s: bad eh_frame_ptr", s->name);
	uint64_t count = 0;
	bool have_table = count_enc != PE_OMIT && table_enc != PE_OMIT && enc_size(table_enc) &&
			  !(table_enc & PE_INDIRECT);
	if (have_table && !rd_value(&c, count_enc, &count)) /* a count, not a pointer */
		return fth_error("%s: bad .eh_frame_hdr fde_count", s->name);
	if (have_table && !(s->flags & CFI_BUILD_NO_HDR_TABLE)) {
		l->table = c;
		l->table_enc = table_enc;
		l->entry_size = 2 * enc_size(table_enc);
		if (count > (uint64_t)(c.end - c.p) / l->entry_size)
			return fth_error("%s: .eh_frame_hdr: %llu entries do not fit", s->name,
					 (unsigned long long)count);
		l->n = (size_t)count;
		return 0;
	}
	/* No usable table: collect and sort the FDEs ourselves. */
	size_t n;
	if (scan_frames(s, NULL, &n) < 0)
		return -1;
	if (n == 0)
		return 0;
	l->refs = al->alloc(al->ctx, n * sizeof(*l->refs), 8);
	if (!l->refs)
		return fth_error("%s: out of memory for %zu FDEs", s->name, n);
	if (scan_frames(s, l->refs, &n) < 0)
		return -1;
	qsort(l->refs, n, sizeof(*l->refs), cmp_fde_ref);
	l->n = n;
	return 0;
}

/*
 * Run every FDE in pc order.  A damaged FDE (or CIE) is skipped and counted: its pcs get no
 * rows, and the rest of the module stays usable.
 */
static int walk(struct src *s, const struct fde_list *l, struct emitter *em, uint32_t *nfdes,
		uint32_t *nbad)
{
	*nfdes = 0;
	*nbad = 0;
	for (size_t i = 0; i < l->n; i++) {
		uint64_t vaddr;
		if (fde_at(s, l, i, &vaddr) < 0)
			return -1;
		if (do_fde(s, vaddr, em, nfdes) < 0) {
			(*nbad)++;
			fth_error_clear();
		}
	}
	if (em->have_pending)
		emit(em, em->pending_end, &none_row);
	return 0;
}

/*
 * The bucket index: at most one bucket per two rows (the index costs at most 2 bytes per
 * 12-byte row), buckets of at least 16 bytes.
 */
static int build_index(struct cfi_table *t, const struct cfi_allocator *al)
{
	const struct cfi_row *rows = t->rows;
	uint32_t n = t->nrows;
	if (n < 8)
		return 0;
	uint64_t first = rows[0].start, span = (uint64_t)rows[n - 1].start - first + 1;
	unsigned shift = 4;
	while ((span >> shift) > n / 2)
		shift++;
	uint64_t nb = span >> shift;
	uint32_t *index = al->alloc(al->ctx, (size_t)(nb + 1) * sizeof(*index), 4);
	if (!index)
		return fth_error("out of memory for an unwind index of %llu buckets",
				 (unsigned long long)nb);
	uint32_t r = 0;
	for (uint64_t b = 0; b <= nb; b++) {
		uint64_t pos = first + (b << shift);
		while (r + 1 < n && rows[r + 1].start <= pos)
			r++;
		index[b] = r;
	}
	t->index = index;
	t->nbuckets = (uint32_t)nb;
	t->shift = shift;
	return 0;
}

static int build(struct src *s, struct cfi_table *out, const struct cfi_allocator *al)
{
	struct fde_list l;
	struct emitter em;
	uint32_t nfdes, nbad;

	if (make_fde_list(s, &l, al) < 0)
		return -1;
	memset(&em, 0, sizeof(em));
	if (walk(s, &l, &em, &nfdes, &nbad) < 0)
		return -1;
	out->nbad = nbad;
	if (em.overflow)
		return fth_error("%s: code beyond 4 GiB from the load bias", s->name);
	if (em.n == 0)
		return 0;
	uint32_t n = em.n;
	struct cfi_row *rows = al->alloc(al->ctx, (size_t)n * sizeof(*rows), 8);
	if (!rows)
		return fth_error("%s: out of memory for %u unwind rows", s->name, n);
	memset(&em, 0, sizeof(em));
	em.rows = rows;
	em.cap = n;
	if (walk(s, &l, &em, &nfdes, &nbad) < 0)
		return -1;
	if (em.n != n || em.overflow)
		return fth_error("%s: unwind rows changed between passes", s->name);
	out->rows = rows;
	out->nrows = n;
	out->nfdes = nfdes;
	out->nunknown = em.nunknown;
	return build_index(out, al);
}

static void init_table(struct cfi_table *out, uint64_t bias)
{
	memset(out, 0, sizeof(*out));
	out->bias = bias;
}

int cfi_build(const struct cfi_image *img, struct cfi_table *out, const struct cfi_allocator *al)
{
	struct src src, *s = &src;
	init_table(out, img->bias);
	memset(s, 0, sizeof(*s));
	s->name = img->name && img->name[0] ? img->name : "(main program)";
	s->flags = img->flags;
	s->abs_adjust = img->bias;
	bool have_hdr = false;
	out->text_lo = UINT64_MAX;
	for (unsigned i = 0; i < img->phnum; i++) {
		const Elf64_Phdr *ph = &img->phdr[i];
		if (ph->p_type == PT_LOAD) {
			if (ph->p_flags & PF_X) {
				out->text_lo = FTH_MIN(out->text_lo, ph->p_vaddr);
				out->text_hi = FTH_MAX(out->text_hi, ph->p_vaddr + ph->p_memsz);
			}
			if ((ph->p_flags & PF_R) && s->nseg < MAX_SEGS) {
				struct seg *g = &s->seg[s->nseg++];
				g->lo = ph->p_vaddr;
				g->hi = ph->p_vaddr + ph->p_memsz;
				g->data = (const uint8_t *)(uintptr_t)(img->bias + ph->p_vaddr);
			}
		} else if (ph->p_type == PT_GNU_EH_FRAME) {
			s->hdr = ph->p_vaddr;
			s->hdr_size = ph->p_memsz;
			have_hdr = true;
		}
	}
	if (out->text_lo == UINT64_MAX)
		out->text_lo = 0;
	if (!have_hdr)
		return 0;
	return build(s, out, al);
}

int cfi_build_file(const char *path, uint64_t bias, unsigned flags, struct cfi_table *out,
		   const struct cfi_allocator *al)
{
	init_table(out, bias);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fth_error_errno(errno, "%s", path);
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return fth_error_errno(e, "%s", path);
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *map = size ? mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	int err = errno;
	close(fd);
	if (map == MAP_FAILED)
		return fth_error_errno(size ? err : EINVAL, "%s: mmap", path);

	int ret = -1;
	struct src src, *s = &src;
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
	memset(s, 0, sizeof(*s));
	s->name = path;
	s->flags = flags;
	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_X86_64) {
		fth_error("%s: not an x86-64 ELF file", path);
		goto out;
	}
	if (eh->e_phoff > size || (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) > size - eh->e_phoff ||
	    eh->e_shoff > size || (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size - eh->e_shoff) {
		fth_error("%s: bad ELF headers", path);
		goto out;
	}
	const Elf64_Phdr *ph = (const Elf64_Phdr *)(map + eh->e_phoff);
	bool have_hdr = false;
	out->text_lo = UINT64_MAX;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type == PT_LOAD) {
			if (ph[i].p_offset > size || ph[i].p_filesz > size - ph[i].p_offset) {
				fth_error("%s: segment %u outside the file", path, i);
				goto out;
			}
			if (ph[i].p_flags & PF_X) {
				out->text_lo = FTH_MIN(out->text_lo, ph[i].p_vaddr);
				out->text_hi = FTH_MAX(out->text_hi, ph[i].p_vaddr + ph[i].p_memsz);
			}
			if (s->nseg < MAX_SEGS) {
				struct seg *g = &s->seg[s->nseg++];
				g->lo = ph[i].p_vaddr;
				g->hi = ph[i].p_vaddr + ph[i].p_filesz;
				g->data = map + ph[i].p_offset;
			}
		} else if (ph[i].p_type == PT_GNU_EH_FRAME) {
			s->hdr = ph[i].p_vaddr;
			s->hdr_size = ph[i].p_memsz;
			have_hdr = true;
		}
	}
	if (out->text_lo == UINT64_MAX)
		out->text_lo = 0;
	/* The section headers, when present, give .eh_frame_hdr and the end of .eh_frame. */
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(map + eh->e_shoff);
	if (eh->e_shnum && eh->e_shstrndx < eh->e_shnum) {
		const Elf64_Shdr *strs = &sh[eh->e_shstrndx];
		for (unsigned i = 0; strs->sh_offset < size && i < eh->e_shnum; i++) {
			if (sh[i].sh_name >= strs->sh_size || sh[i].sh_type == SHT_NOBITS)
				continue;
			const char *nm = (const char *)map + strs->sh_offset + sh[i].sh_name;
			size_t room = size - strs->sh_offset - sh[i].sh_name;
			if (strnlen(nm, room) == room)
				continue;
			if (!strcmp(nm, ".eh_frame_hdr")) {
				s->hdr = sh[i].sh_addr;
				s->hdr_size = sh[i].sh_size;
				have_hdr = true;
			} else if (!strcmp(nm, ".eh_frame")) {
				s->frame_end = sh[i].sh_addr + sh[i].sh_size;
			}
		}
	}
	ret = have_hdr ? build(s, out, al) : 0;
out:
	munmap((void *)map, size);
	return ret;
}

/* ---- in the signal handler ------------------------------------------------------------------- */

static inline const struct cfi_row *lookup(const struct cfi_table *t, uint64_t pc_offset)
{
	const struct cfi_row *r = t->rows;
	uint32_t n = t->nrows;
	if (n == 0 || pc_offset > UINT32_MAX || pc_offset < r[0].start)
		return NULL;
	uint32_t pc = (uint32_t)pc_offset;
	if (likely(t->index != NULL)) {
		uint32_t b = (pc - r[0].start) >> t->shift;
		if (b >= t->nbuckets)
			b = t->nbuckets; /* at or past the last bucket: the last rows */
		uint32_t lo = t->index[b];
		uint32_t hi = b < t->nbuckets ? t->index[b + 1] : n - 1;
		r += lo;
		n = hi - lo + 1;
	}
	/* invariant: r[0].start <= pc, and the answer is in r[0, n) */
	while (n > 1) {
		uint32_t half = n / 2;
		r = r[half].start <= pc ? r + half : r;
		n -= half;
	}
	return r->kind == CFI_NONE ? NULL : r;
}

const struct cfi_row *cfi_lookup(const struct cfi_table *t, uint64_t pc_offset)
{
	return lookup(t, pc_offset);
}

static inline bool readable(const struct cfi_stack *s, uint64_t addr)
{
	if (!s)
		return true;
	return (addr >= s->lo && addr < s->hi && s->hi - addr >= 8) ||
	       (addr >= s->alt_lo && addr < s->alt_hi && s->alt_hi - addr >= 8);
}

static inline bool load(const struct cfi_stack *s, uint64_t addr, uint64_t *v)
{
	if (!readable(s, addr))
		return false;
	*v = *(const volatile uint64_t *)(uintptr_t)addr;
	return true;
}

/* mov $15,%rax; syscall: the x86-64 rt_sigreturn trampoline. */
static const uint8_t sigreturn_code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

static bool is_sigreturn(const struct cfi_table *t, uint64_t rip)
{
	uint64_t off = rip - t->bias;
	if (rip < t->bias || off < t->text_lo || off >= t->text_hi ||
	    t->text_hi - off < sizeof(sigreturn_code))
		return false;
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)rip;
	for (unsigned i = 0; i < sizeof(sigreturn_code); i++)
		if (p[i] != sigreturn_code[i])
			return false;
	return true;
}

/* The trampoline's frame: RSP points at the kernel's ucontext. */
static int step_signal(struct cfi_regs *regs, const struct cfi_stack *stack)
{
	uint64_t uc = regs->rsp, rip, rsp, rbp, rbx;
	if (!load(stack, uc + UC_RIP, &rip) || !load(stack, uc + UC_RSP, &rsp) ||
	    !load(stack, uc + UC_RBP, &rbp) || !load(stack, uc + UC_RBX, &rbx))
		return CFI_STEP_BAD;
	regs->rbx = rbx;
	if (rip < 4096)
		return CFI_STEP_BAD;
	regs->rip = rip;
	regs->rsp = rsp;
	regs->rbp = rbp;
	regs->exact = true;
	return CFI_STEP_SIGNAL;
}

/* Apply row R (NULL: none) of table T to REGS.  T is used only for the trampoline check. */
static inline int apply_row(const struct cfi_table *t, const struct cfi_row *r,
			    struct cfi_regs *regs, const struct cfi_stack *stack)
{
	uint64_t cfa, ra, rbp = regs->rbp, rbx = regs->rbx;

	if (unlikely(!r)) {
		if (t && is_sigreturn(t, regs->rip))
			return step_signal(regs, stack);
		return CFI_STEP_NO_ROW;
	}
	switch (r->kind) {
	case CFI_RSP:
		cfa = regs->rsp + (int64_t)r->cfa_off;
		break;
	case CFI_RBP:
		cfa = regs->rbp + (int64_t)r->cfa_off;
		break;
	case CFI_RBX:
		cfa = regs->rbx + (int64_t)r->cfa_off;
		break;
	case CFI_RBP_DEREF:
		if (!load(stack, regs->rbp + (int64_t)r->cfa_off, &cfa))
			return CFI_STEP_BAD;
		break;
	case CFI_PLT:
		cfa = regs->rsp + (int64_t)r->cfa_off +
		      ((regs->rip & 15) >= (uint64_t)r->rbp ? 8 : 0);
		break;
	case CFI_SIGNAL:
		return step_signal(regs, stack);
	default:
		if (t && is_sigreturn(t, regs->rip))
			return step_signal(regs, stack);
		return r->flags & CFI_F_RA_UNDEF ? CFI_STEP_END : CFI_STEP_UNKNOWN;
	}
	if (unlikely(r->flags & (CFI_F_RA_UNDEF | CFI_F_RBP_UNDEF | CFI_F_RBP_REGREL))) {
		if (r->flags & CFI_F_RA_UNDEF)
			return CFI_STEP_END;
		if (r->flags & CFI_F_RBP_UNDEF)
			rbp = 0;
		else if (!load(stack, regs->rbp + 8 * (int64_t)r->rbp, &rbp))
			return CFI_STEP_BAD;
	} else if (r->flags & CFI_F_RBP_SAVED) {
		if (!load(stack, cfa + 8 * (int64_t)r->rbp, &rbp))
			return CFI_STEP_BAD;
	}
	if ((r->flags & CFI_F_RBX_SAVED) && !load(stack, cfa + 8 * (int64_t)r->rbx, &rbx))
		return CFI_STEP_BAD;
	if (unlikely(cfa <= regs->rsp) || !load(stack, cfa + 8 * (int64_t)r->ra, &ra) ||
	    unlikely(ra < 4096))
		return CFI_STEP_BAD;
	regs->rip = ra;
	regs->rsp = cfa;
	regs->rbp = rbp;
	regs->rbx = rbx;
	regs->exact = false;
	return CFI_STEP_OK;
}

int cfi_step(const struct cfi_table *t, struct cfi_regs *regs, const struct cfi_stack *stack)
{
	uint64_t off = regs->rip - t->bias - (regs->exact ? 0 : 1);
	return apply_row(t, lookup(t, off), regs, stack);
}

void cfi_cache_clear(struct cfi_cache *c)
{
	for (unsigned i = 0; i < CFI_CACHE_SLOTS; i++) {
		c->slot[i].key = 0;
		atomic_signal_fence(memory_order_seq_cst);
	}
}

static inline unsigned cache_hash(uint64_t key)
{
	return (unsigned)((key ^ (key >> 11) ^ (key >> 23)) & (CFI_CACHE_SLOTS - 1));
}

int cfi_step_cached(struct cfi_cache *c, cfi_find_fn find, void *ctx, struct cfi_regs *regs,
		    const struct cfi_stack *stack)
{
	uint64_t key = regs->rip << 1 | regs->exact;
	struct cfi_cache_slot *s = &c->slot[cache_hash(key)];
	if (likely(s->key == key))
		return apply_row(NULL, &s->row, regs, stack);

	const struct cfi_table *t = find(ctx, regs->rip);
	if (!t)
		return CFI_STEP_NO_ROW;
	const struct cfi_row *r = lookup(t, regs->rip - t->bias - (regs->exact ? 0 : 1));
	if (r && r->kind >= CFI_RSP && r->kind <= CFI_PLT) {
		/* a signal interrupting this write cannot see a key with a half-written row */
		s->key = 0;
		atomic_signal_fence(memory_order_seq_cst);
		s->row = *r;
		atomic_signal_fence(memory_order_seq_cst);
		s->key = key;
	}
	return apply_row(t, r, regs, stack);
}
