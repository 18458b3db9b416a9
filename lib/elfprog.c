/* SPDX-License-Identifier: MIT */
/* elfprog.c: what a program's ELF headers say about how it will run (elfprog.h). */
#include "compat.h"
#include "elfprog.h"

#include <stdint.h>
#include <unistd.h>

bool elf_has_interp(int fd, const Elf64_Ehdr *eh)
{
	for (int i = 0; i < eh->e_phnum && i < 64; i++) {
		Elf64_Phdr ph;
		off_t at = (off_t)(eh->e_phoff + (uint64_t)i * eh->e_phentsize);
		if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
			return false;
		if (ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}
