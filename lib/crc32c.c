/* SPDX-License-Identifier: MIT */
/* crc32c.c: CRC-32C by the SSE4.2 crc32 instruction or by slicing-by-8 tables. */
#include "compat.h"
#include "crc32c.h"

#include <string.h>
#if defined(__x86_64__)
#include <cpuid.h>
#if defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h> /* glibc 2.33 and later */
#define HAVE_CPU_FEATURE_ACTIVE 1
#endif
#endif
#endif

#define POLY 0x82f63b78u /* CRC-32C, reflected */

static uint32_t table[8][256];

/* The tables, made when first needed: most machines never use them.  Idempotent, so a race
 * between two first callers writes the same values twice. */
static void make_tables(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY & -(c & 1));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/*
 * Whether the crc32 instruction can be used, found when a checksum is first needed.  glibc
 * already ran cpuid when the process started and keeps the answer; otherwise one cpuid (leaf 1,
 * ECX bit 20), not the compiler runtime's full CPU detection: in a virtual machine each cpuid
 * traps to the hypervisor (about 14 us here), and measure's library is loaded into every
 * process of a run.  Not a constructor: another library's constructor may need a checksum
 * before this one would run.  Racing first callers store the same answer.
 */
#if defined(__x86_64__)
enum { HW_UNKNOWN, HW_YES, HW_NO };
static int hw_state;

static bool have_hw(void)
{
	int s = __atomic_load_n(&hw_state, __ATOMIC_RELAXED);
	if (s == HW_UNKNOWN) {
#ifdef HAVE_CPU_FEATURE_ACTIVE
		s = CPU_FEATURE_ACTIVE(SSE4_2) ? HW_YES : HW_NO;
#else
		unsigned a, b, c, d;
		s = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2) ? HW_YES : HW_NO;
#endif
		__atomic_store_n(&hw_state, s, __ATOMIC_RELAXED);
	}
	return s == HW_YES;
}
#endif

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p,
							   size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (n--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}
#endif

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^ table[3][p[4]] ^
		      table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
	crc = ~crc;
#if defined(__x86_64__)
	if (have_hw())
		return ~crc_hw(crc, p, n);
#endif
	if (!table[0][1])
		make_tables();
	return ~crc_sw(crc, p, n);
}

uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n)
{
	if (!table[0][1])
		make_tables();
	return ~crc_sw(~crc, p, n);
}
