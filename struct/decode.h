/* SPDX-License-Identifier: MIT */
/*
 * decode.h: the one interface struct's CFG builder uses to read machine code: the length and
 * control-flow kind of an instruction and its direct target, plus the two operand questions
 * that PLT labelling and jump tables ask.  x86-64 is implemented with Zydis (decode.c); an
 * aarch64 classifier would implement the same functions.
 */
#ifndef FATHOM_DECODE_H
#define FATHOM_DECODE_H

#include <Zydis/Zydis.h>

enum insn_kind {
	INSN_FALLTHROUGH, /* everything that continues at the next instruction */
	INSN_JCC,	  /* conditional direct branch; also xbegin (TARGET: where an abort resumes) */
	INSN_JMP,	  /* unconditional direct jump */
	INSN_IJMP,	  /* indirect jump */
	INSN_CALL,	  /* direct call */
	INSN_ICALL,	  /* indirect call */
	INSN_RET,
	INSN_HALT, /* hlt, ud2, int3: execution does not continue */
};

struct insn {
	uint64_t target; /* direct target of JCC, JMP and CALL (xbegin: its abort target) */
	uint64_t slot;	 /* ICALL, IJMP through [rip+X] (the GOT): the slot's address, else 0 */
	uint8_t len;
	uint8_t kind; /* enum insn_kind */
	bool nop;     /* a no-op (padding) */
};

struct decoder {
	unsigned machine; /* ELF e_machine */
	ZydisDecoder zydis;	  /* in full: operands (PLT slots, jump tables) */
	ZydisDecoder zydis_fast; /* minimal mode: length, mnemonic, category and raw fields */
};

/* -1 with a message when MACHINE has no decoder. */
int decoder_init(struct decoder *d, unsigned machine);
/* Decode the instruction at ADDR from P (AVAIL bytes); -1 (no message) when invalid. */
int decode(const struct decoder *d, uint64_t addr, const uint8_t *p, size_t avail,
	   struct insn *out);
/* When the instruction at ADDR is "jmp [rip+X]", set *SLOT to the address it loads. */
bool decode_memory_jump(const struct decoder *d, uint64_t addr, const uint8_t *p, size_t avail,
			uint64_t *slot);

/* How to read a jump table: signed 32-bit offsets from BASE, or 64-bit absolute entries. */
struct jump_table {
	uint64_t table;	  /* address of entry 0 */
	uint64_t base;	  /* added to 32-bit entries */
	uint32_t entry_size; /* 4 or 8 */
	uint32_t count;	  /* entries from the bounding compare, or 0 when unknown */
};

/*
 * Recognise the jump table of the indirect jump at TRACE[N-1], given the instructions decoded
 * just before it on the same straight-line path (TRACE[0..N-1], their addresses).  CODE(ADDR,
 * &AVAIL) returns the bytes at ADDR.  Returns true and fills *JT when a table shape matched.
 */
typedef const uint8_t *(*code_reader)(const void *ctx, uint64_t addr, size_t *avail);
bool decode_jump_table(const struct decoder *d, const uint64_t *trace, unsigned n,
		       code_reader code, const void *ctx, struct jump_table *jt);

/*
 * Whether the indirect jump at TRACE[N-1] is a tail call through a function pointer (loaded
 * from a slot without an index, copied from a register, or passed in) rather than a switch.
 */
bool decode_indirect_tail_call(const struct decoder *d, const uint64_t *trace, unsigned n,
			       code_reader code, const void *ctx);

/*
 * Whether the indirect jump at TRACE[N-1] switches stacks: on its straight-line path the
 * stack pointer is loaded with mov from another register or memory (not the frame pointer),
 * as longjmp and context switches do.  Such a jump does not return to the caller.
 */
bool decode_stack_switch(const struct decoder *d, const uint64_t *trace, unsigned n,
			 code_reader code, const void *ctx);

#endif
