/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h: CRC-32C (Castagnoli), the checksum of every chunk in fathom's files.  Uses the
 * SSE4.2 instruction when the processor has it, else a slicing-by-8 table; async-signal-safe
 * once the library's constructor has run.
 */
#ifndef FATHOM_CRC32C_H
#define FATHOM_CRC32C_H

/* Continue CRC over N bytes at P.  Start with crc32c(0, ...); the result is final. */
uint32_t crc32c(uint32_t crc, const void *p, size_t n);
/* The same by the table method only (for tests that compare the two). */
uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n);

#endif
