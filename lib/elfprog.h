/* SPDX-License-Identifier: MIT */
/*
 * elfprog.h: what a program's ELF headers say about how it will run, read from a descriptor
 * without allocating (async-signal-safe: measure's exec wrapper uses it in a forked child).
 */
#ifndef FATHOM_ELFPROG_H
#define FATHOM_ELFPROG_H

#include <elf.h>
#include <stdbool.h>

/* Whether the 64-bit ELF program open as FD, whose header is EH, names a program interpreter
 * (PT_INTERP: the dynamic loader that LD_PRELOAD needs).  At most 64 program headers are read;
 * false when they cannot be. */
bool elf_has_interp(int fd, const Elf64_Ehdr *eh);

#endif
