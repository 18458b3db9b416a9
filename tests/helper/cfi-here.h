/* SPDX-License-Identifier: MIT */
/* cfi-here.h: CFI_REGS_HERE, the registers the CFI unwinder's test and benchmark start from. */
#ifndef FATHOM_HELPER_CFI_HERE_H
#define FATHOM_HELPER_CFI_HERE_H

#include <stdint.h>

/*
 * Sets the struct cfi_regs R to this point of the function it is written in: RIP the address
 * of the next instruction, RSP and RBP (which that instruction does not change), and exact,
 * since RIP is not a return address.
 */
#define CFI_REGS_HERE(r)                                                                    \
	do {                                                                                \
		uint64_t here_rip, here_rsp, here_rbp;                                      \
		__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"       \
				 : "=r"(here_rip), "=r"(here_rsp), "=r"(here_rbp));         \
		(r).rip = here_rip;                                                         \
		(r).rsp = here_rsp;                                                         \
		(r).rbp = here_rbp;                                                         \
		(r).exact = true;                                                           \
	} while (0)

#endif
