/* SPDX-License-Identifier: MIT */
/*
 * decode.c: the x86-64 instruction classifier behind decode.h, on Zydis.  The fast path
 * decodes in Zydis's minimal mode, without operands; PLT slots and jump tables decode the few
 * instructions they need in full.
 */
#include "compat.h"
#include "decode.h"
#include "error.h"

#include <elf.h>
#include <string.h>

int decoder_init(struct decoder *d, unsigned machine)
{
	memset(d, 0, sizeof(*d));
	d->machine = machine;
	if (machine != EM_X86_64)
		return fth_error("no instruction decoder for machine %u", machine);
	if (!ZYAN_SUCCESS(ZydisDecoderInit(&d->zydis, ZYDIS_MACHINE_MODE_LONG_64,
					   ZYDIS_STACK_WIDTH_64)))
		return fth_error("cannot initialise the Zydis decoder");
	d->zydis_fast = d->zydis;
	if (!ZYAN_SUCCESS(ZydisDecoderEnableMode(&d->zydis_fast, ZYDIS_DECODER_MODE_MINIMAL, ZYAN_TRUE)))
		return fth_error("cannot initialise the Zydis decoder");
	return 0;
}

/* The slot that "call/jmp [rip+X]" loads its target from, or 0 for any other operand. */
static uint64_t rip_slot(uint64_t addr, const ZydisDecodedInstruction *zi)
{
	/* The raw fields only: minimal mode leaves most attributes unset (no ModRM: offset 0). */
	if (zi->raw.modrm.offset == 0 || zi->raw.modrm.mod != 0 ||
	    zi->raw.modrm.rm != 5)
		return 0;
	return addr + zi->length + (uint64_t)zi->raw.disp.value;
}

int decode(const struct decoder *d, uint64_t addr, const uint8_t *p, size_t avail,
	   struct insn *out)
{
	ZydisDecodedInstruction zi;
	if (!ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&d->zydis_fast, NULL, p, avail, &zi)))
		return -1;
	out->len = zi.length;
	out->target = 0;
	out->slot = 0;
	out->kind = INSN_FALLTHROUGH;
	out->nop = false;
	bool relative = zi.raw.imm[0].is_relative;
	uint64_t target = addr + zi.length + (uint64_t)zi.raw.imm[0].value.s;
	/*
	 * A transaction goes on after xbegin or, aborted anywhere inside (xabort, a conflict),
	 * resumes at xbegin's target: the abort is an edge from xbegin, as a branch.  xabort
	 * itself goes on at the next instruction (outside a transaction it does nothing).
	 */
	if (zi.mnemonic == ZYDIS_MNEMONIC_XBEGIN && relative) {
		out->kind = INSN_JCC;
		out->target = target;
		return 0;
	}
	if (zi.mnemonic == ZYDIS_MNEMONIC_XABORT)
		return 0;
	switch (zi.meta.category) {
	case ZYDIS_CATEGORY_COND_BR:
		out->kind = INSN_JCC;
		out->target = target;
		break;
	case ZYDIS_CATEGORY_UNCOND_BR:
	case ZYDIS_CATEGORY_CALL:
		/* A jump or a call: direct to TARGET, or indirect (SLOT: the [rip+X] it loads from). */
		if (zi.meta.category == ZYDIS_CATEGORY_CALL)
			out->kind = relative ? INSN_CALL : INSN_ICALL;
		else
			out->kind = relative ? INSN_JMP : INSN_IJMP;
		out->target = relative ? target : 0;
		if (!relative)
			out->slot = rip_slot(addr, &zi);
		break;
	case ZYDIS_CATEGORY_RET:
		out->kind = INSN_RET;
		break;
	default:
		switch (zi.mnemonic) {
		case ZYDIS_MNEMONIC_HLT:
		case ZYDIS_MNEMONIC_UD0:
		case ZYDIS_MNEMONIC_UD1:
		case ZYDIS_MNEMONIC_UD2:
		case ZYDIS_MNEMONIC_INT3:
			out->kind = INSN_HALT;
			break;
		case ZYDIS_MNEMONIC_NOP:
			out->nop = true;
			break;
		default:
			break;
		}
	}
	return 0;
}

static bool decode_full(const struct decoder *d, const uint8_t *p, size_t avail,
			ZydisDecodedInstruction *zi, ZydisDecodedOperand *ops)
{
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&d->zydis, p, avail, zi, ops));
}

bool decode_memory_jump(const struct decoder *d, uint64_t addr, const uint8_t *p, size_t avail,
			uint64_t *slot)
{
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (!decode_full(d, p, avail, &zi, ops) || zi.meta.category != ZYDIS_CATEGORY_UNCOND_BR ||
	    ops[0].type != ZYDIS_OPERAND_TYPE_MEMORY || ops[0].mem.base != ZYDIS_REGISTER_RIP ||
	    ops[0].mem.index != ZYDIS_REGISTER_NONE)
		return false;
	*slot = addr + zi.length + (uint64_t)ops[0].mem.disp.value;
	return true;
}

static ZydisRegister full_reg(ZydisRegister r)
{
	if (r == ZYDIS_REGISTER_NONE)
		return r;
	return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
}

static bool writes_reg(const ZydisDecodedInstruction *zi, const ZydisDecodedOperand *ops,
		       ZydisRegister r)
{
	for (unsigned i = 0; i < zi->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    full_reg(ops[i].reg.value) == r)
			return true;
	return false;
}

struct sliced {
	ZydisDecodedInstruction zi;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t addr;
	bool ok;
};

/*
 * The bound of a table from the "cmp REG, imm; ja/jae DEFAULT" that guards the straight-line
 * path to the jump (S[0..K-1]): the nearest unsigned-above branch, then the nearest compare
 * with an immediate before it.  0 when there is none.
 */
static uint32_t find_bound(const struct sliced *s, unsigned k)
{
	int branch = -1; /* 1: ja (entries 0..imm), 0: jae (entries 0..imm-1) */
	for (unsigned j = k; j-- > 0;) {
		const struct sliced *x = &s[j];
		if (!x->ok)
			return 0;
		ZydisMnemonic m = x->zi.mnemonic;
		if (branch < 0) {
			if (m == ZYDIS_MNEMONIC_JNBE)
				branch = 1;
			else if (m == ZYDIS_MNEMONIC_JNB)
				branch = 0;
			else if (x->zi.meta.category == ZYDIS_CATEGORY_COND_BR)
				return 0;
			continue;
		}
		if (m == ZYDIS_MNEMONIC_CMP && x->ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    x->ops[1].type == ZYDIS_OPERAND_TYPE_IMMEDIATE) {
			uint64_t n = x->ops[1].imm.value.u + (uint64_t)branch;
			return n > 0 && n <= 65536 ? (uint32_t)n : 0;
		}
		if (x->zi.meta.category == ZYDIS_CATEGORY_COND_BR)
			return 0;
	}
	return 0;
}

#define MAX_SLICE 24

/* The last MAX_SLICE instructions of TRACE (N addresses) decoded into S; returns how many. */
static unsigned decode_slice(const struct decoder *d, const uint64_t *trace, unsigned n,
			     code_reader code, const void *ctx, struct sliced *s)
{
	if (n > MAX_SLICE) {
		trace += n - MAX_SLICE;
		n = MAX_SLICE;
	}
	for (unsigned i = 0; i < n; i++) {
		size_t avail;
		const uint8_t *p = code(ctx, trace[i], &avail);
		s[i].addr = trace[i];
		s[i].ok = p && decode_full(d, p, avail, &s[i].zi, s[i].ops);
	}
	return n;
}

bool decode_jump_table(const struct decoder *d, const uint64_t *trace, unsigned n,
		       code_reader code, const void *ctx, struct jump_table *jt)
{
	struct sliced s[MAX_SLICE];
	n = decode_slice(d, trace, n, code, ctx, s);
	if (n == 0)
		return false;
	const struct sliced *jmp = &s[n - 1];
	if (!jmp->ok || jmp->zi.meta.category != ZYDIS_CATEGORY_UNCOND_BR)
		return false;
	memset(jt, 0, sizeof(*jt));
	const ZydisDecodedOperand *op = &jmp->ops[0];
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY) {
		/* Non-PIC: jmp [TABLE + index*8]. */
		if (op->mem.base != ZYDIS_REGISTER_NONE || op->mem.index == ZYDIS_REGISTER_NONE ||
		    op->mem.scale != 8)
			return false;
		jt->table = (uint64_t)op->mem.disp.value;
		jt->entry_size = 8;
		jt->count = find_bound(s, n - 1);
		return true;
	}
	if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	/*
	 * PIC: "add R, B; jmp R" where B was last set by "lea B, [rip+T]": T is the table of
	 * 32-bit offsets from T (GCC and Clang at every level; the load between, movsxd or
	 * mov + cltq, takes any form).
	 */
	ZydisRegister target = full_reg(op->reg.value), base = ZYDIS_REGISTER_NONE;
	for (unsigned j = n - 1; j-- > 0;) {
		const struct sliced *x = &s[j];
		if (!x->ok)
			return false;
		ZydisMnemonic m = x->zi.mnemonic;
		if (base == ZYDIS_REGISTER_NONE) {
			if (!writes_reg(&x->zi, x->ops, target))
				continue;
			if (m != ZYDIS_MNEMONIC_ADD || x->ops[1].type != ZYDIS_OPERAND_TYPE_REGISTER)
				return false;
			base = full_reg(x->ops[1].reg.value);
			continue;
		}
		if (!writes_reg(&x->zi, x->ops, base))
			continue;
		if (m != ZYDIS_MNEMONIC_LEA || x->ops[1].type != ZYDIS_OPERAND_TYPE_MEMORY ||
		    x->ops[1].mem.base != ZYDIS_REGISTER_RIP ||
		    x->ops[1].mem.index != ZYDIS_REGISTER_NONE)
			return false;
		jt->table = x->addr + x->zi.length + (uint64_t)x->ops[1].mem.disp.value;
		jt->base = jt->table;
		jt->entry_size = 4;
		jt->count = find_bound(s, n - 1);
		return true;
	}
	return false;
}

bool decode_indirect_tail_call(const struct decoder *d, const uint64_t *trace, unsigned n,
			       code_reader code, const void *ctx)
{
	struct sliced s[MAX_SLICE];
	n = decode_slice(d, trace, n, code, ctx, s);
	if (n == 0)
		return false;
	const struct sliced *jmp = &s[n - 1];
	if (!jmp->ok)
		return false;
	const ZydisDecodedOperand *op = &jmp->ops[0];
	if (op->type == ZYDIS_OPERAND_TYPE_MEMORY)
		return op->mem.index == ZYDIS_REGISTER_NONE; /* through a pointer or the GOT */
	if (op->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return false;
	ZydisRegister target = full_reg(op->reg.value);
	for (unsigned j = n - 1; j-- > 0;) {
		const struct sliced *x = &s[j];
		if (!x->ok)
			return false;
		if (!writes_reg(&x->zi, x->ops, target))
			continue;
		/* A function pointer: loaded from a slot (vtable, struct field) or copied. */
		if (x->zi.mnemonic != ZYDIS_MNEMONIC_MOV)
			return false;
		if (x->ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER)
			return true;
		return x->ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY &&
		       x->ops[1].mem.index == ZYDIS_REGISTER_NONE;
	}
	return true; /* the register came from the caller: an argument */
}

bool decode_stack_switch(const struct decoder *d, const uint64_t *trace, unsigned n,
			 code_reader code, const void *ctx)
{
	if (n > MAX_SLICE) {
		trace += n - MAX_SLICE;
		n = MAX_SLICE;
	}
	for (unsigned i = 0; i + 1 < n; i++) {
		ZydisDecodedInstruction zi;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
		size_t avail;
		const uint8_t *p = code(ctx, trace[i], &avail);
		if (!p || !decode_full(d, p, avail, &zi, ops) || zi.mnemonic != ZYDIS_MNEMONIC_MOV ||
		    ops[0].type != ZYDIS_OPERAND_TYPE_REGISTER || ops[0].reg.value != ZYDIS_REGISTER_RSP)
			continue;
		if (ops[1].type == ZYDIS_OPERAND_TYPE_MEMORY ||
		    (ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && ops[1].reg.value != ZYDIS_REGISTER_RBP))
			return true;
	}
	return false;
}
