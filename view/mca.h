/* SPDX-License-Identifier: MIT */
/*
 * mca.h: a loop's static throughput from llvm-mca.  The loop's machine code is rebuilt from
 * the structure file of its binary (its address ranges, in layout order), read from the
 * binary (its build-id checked), disassembled with Zydis into the Intel syntax llvm-mca reads,
 * and given to llvm-mca (found on PATH as llvm-mca or llvm-mca-N) with a time limit.  A loop
 * llvm-mca cannot model (a call, an indirect jump, an instruction it does not know) is said
 * with the reason, never given a number.
 */
#ifndef FATHOM_VIEW_MCA_H
#define FATHOM_VIEW_MCA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The loop: its binary, the build-id the measurement recorded, and its header's address. */
struct mca_request {
	const char *binary;
	const uint8_t *build_id;
	uint32_t build_id_len;
	uint64_t header;
	const char *mcpu;	    /* NULL: from MEASURED_CPU, else llvm-mca's default (the host's) */
	const char *measured_cpu;   /* the processor measure recorded, or NULL */
	const char *const *structs; /* directories of structure files to look in first */
	size_t nstructs;
	unsigned timeout_seconds;   /* 0: 20 */
};

enum mca_status {
	MCA_OK,
	MCA_NO_TOOL,	    /* llvm-mca is not installed: REASON says how to install it */
	MCA_NO_CODE,	    /* the loop's code cannot be rebuilt (no structure file, binary changed) */
	MCA_UNMODELLABLE,   /* the loop has what llvm-mca cannot model: REASON says what */
	MCA_FAILED,	    /* llvm-mca failed or timed out: REASON has its words */
};

struct mca_resource {
	char *name;
	double pressure; /* cycles per iteration */
};

struct mca_report {
	enum mca_status status;
	char *reason; /* unless MCA_OK */
	char *tool;   /* the llvm-mca run, and its -mcpu (or the host's) */
	char *mcpu;
	bool host_cpu; /* MCPU is the host's, llvm-mca's default */
	char *cpu_note; /* how MCPU was chosen from the measured processor, or NULL */
	char *structure; /* the structure file the code came from */
	uint64_t lo, hi; /* the loop's first and last address + 1 */
	uint32_t ninstructions;
	char **assembly; /* the instructions given to llvm-mca, one a line */
	uint64_t *addresses; /* and each one's address */
	uint64_t *block_starts; /* the loop's blocks (from the structure file, since 1.4) */
	uint32_t nblocks;	/* 0: a structure file without them */
	/* llvm-mca's figures, named as it names them */
	double block_rthroughput, ipc, uops_per_cycle;
	uint32_t dispatch_width, iterations;
	uint64_t total_cycles;
	struct mca_resource *resources;
	uint32_t nresources;
	char *bottleneck;   /* its throughput bottleneck, in its words, or NULL */
	char **critical;    /* the instructions of its critical sequence */
	uint32_t ncritical;
};

/* Analyse the loop of RQ into OUT (released with mca_report_release); OUT->status says how it
 * went.  Returns 0, or -1 only when memory or the system fails. */
int mca_analyse(const struct mca_request *rq, struct mca_report *out);
void mca_report_release(struct mca_report *r);

/* Parse llvm-mca's text output TEXT into R's figures; -1 when it has none of them. */
int mca_parse(const char *text, struct mca_report *r);

/* The LLVM names of the processor CPU ("VENDOR FAMILY MODEL STEPPING", as measure records it),
 * best first: the model itself, then the nearest older ones an older llvm-mca may know; NULL
 * when the processor is not one llvm-mca models.  A static list. */
const char *const *mca_cpu_names(const char *cpu);

#endif
