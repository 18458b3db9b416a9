/* SPDX-License-Identifier: MIT */
/*
 * mca-loops.c: loops of known static throughput for view --mca (t0414).  The bodies are
 * inline assembly, so that every compiler emits the same instructions: a chain of four
 * dependent adds (four add latencies an iteration), four independent adds (bounded by the
 * ALU ports), and a loop that calls a function (which llvm-mca cannot model).
 */
#include <stdint.h>
#include <stdlib.h>

__attribute__((noinline)) uint64_t chain(uint64_t n, uint64_t a)
{
	uint64_t x = a;
	for (uint64_t i = 0; i < n; i++) /* the chain loop */
		__asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0"
				 : "+r"(x)
				 : "r"(a));
	return x;
}

__attribute__((noinline)) uint64_t independent(uint64_t n, uint64_t a)
{
	uint64_t x = a, y = a, z = a, w = a;
	for (uint64_t i = 0; i < n; i++) /* the independent loop */
		__asm__ volatile("add %4, %0\n\tadd %4, %1\n\tadd %4, %2\n\tadd %4, %3"
				 : "+r"(x), "+r"(y), "+r"(z), "+r"(w)
				 : "r"(a));
	return x + y + z + w;
}

__attribute__((noinline)) uint64_t step(uint64_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3 + 1;
}

__attribute__((noinline)) uint64_t calling(uint64_t n, uint64_t a)
{
	uint64_t x = a;
	for (uint64_t i = 0; i < n; i++) /* the calling loop */
		x = step(x);
	return x;
}

int main(int argc, char **argv)
{
	uint64_t n = argc > 1 ? strtoull(argv[1], 0, 10) : 100000000;
	return (int)(chain(n, 3) + independent(n, 5) + calling(n / 4, 7)) & 1;
}
