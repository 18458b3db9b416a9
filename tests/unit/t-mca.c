/* SPDX-License-Identifier: MIT */
/*
 * t-mca.c: view/mca.h without llvm-mca: reading what llvm-mca prints (the summary, the
 * bottleneck analysis, the critical sequence, the resources and their units, pressure with
 * "-" for none) and the processor names measure records mapped to llvm-mca's, best first.
 */
#include "compat.h"
#include "mca.h"
#include "tap.h"

#include <math.h>
#include <string.h>

/* llvm-mca 14's text for a loop of four dependent adds, cut to what is read. */
static const char output[] =
	"Iterations:        100\n"
	"Instructions:      700\n"
	"Total Cycles:      403\n"
	"Total uOps:        700\n"
	"\n"
	"Dispatch Width:    6\n"
	"uOps Per Cycle:    1.74\n"
	"IPC:               1.74\n"
	"Block RThroughput: 1.5\n"
	"\n"
	"\n"
	"Cycles with backend pressure increase [ 25.56% ]\n"
	"Throughput Bottlenecks: \n"
	"  Resource Pressure       [ 0.00% ]\n"
	"  Data Dependencies:      [ 25.56% ]\n"
	"  - Register Dependencies [ 25.56% ]\n"
	"  - Memory Dependencies   [ 0.00% ]\n"
	"\n"
	"Critical sequence based on the simulation:\n"
	"\n"
	"              Instruction                                 Dependency Information\n"
	" +----< 3.    add\trax, rsi\n"
	" |\n"
	" |    < loop carried > \n"
	" |\n"
	" +----> 0.    add\trax, rsi                          ## REGISTER dependency:  rax\n"
	" +----> 1.    add\trax, rsi                          ## REGISTER dependency:  rax\n"
	" |      4.    add\trdx, 1\n"
	"\n"
	"Instruction Info:\n"
	"[1]: #uOps\n"
	"\n"
	"Resources:\n"
	"[0]   - Zn3AGU0\n"
	"[1]   - Zn3ALU0\n"
	"[2.0] - Zn3LSU\n"
	"[2.1] - Zn3LSU\n"
	"\n"
	"\n"
	"Resource pressure per iteration:\n"
	"[0]    [1]    [2.0]  [2.1]  \n"
	" -     1.50   0.66   0.67   \n"
	"\n"
	"Resource pressure by instruction:\n"
	"[0]    [1]    [2.0]  [2.1]  Instructions:\n"
	" -     1.50    -      -     add\trax, rsi\n";

static void test_parse(void)
{
	struct mca_report r;
	memset(&r, 0, sizeof(r));
	ok(mca_parse(output, &r) == 0, "llvm-mca's output is read");
	ok(fabs(r.block_rthroughput - 1.5) < 1e-9, "Block RThroughput");
	ok(fabs(r.ipc - 1.74) < 1e-9, "IPC");
	is_int(r.iterations, 100, "iterations");
	is_int((long long)r.total_cycles, 403, "total cycles");
	is_int(r.dispatch_width, 6, "dispatch width");
	is_str(r.bottleneck, "Data Dependencies 25.56%, Register Dependencies 25.56%",
	       "the bottleneck: the shares that are not zero, in llvm-mca's words");
	is_int(r.ncritical, 2, "the critical sequence: the instructions it arrives at");
	if (r.ncritical == 2)
		is_str(r.critical[0], "add rax, rsi  (REGISTER dependency: rax)",
		       "an instruction of it with its dependency");
	is_int(r.nresources, 4, "four resources");
	if (r.nresources == 4) {
		is_str(r.resources[2].name, "Zn3LSU.0", "a unit of a group is named with its number");
		ok(r.resources[0].pressure == 0 && fabs(r.resources[1].pressure - 1.5) < 1e-9 &&
			   fabs(r.resources[3].pressure - 0.67) < 1e-9,
		   "pressure per iteration, '-' for none");
	}
	mca_report_release(&r);
	memset(&r, 0, sizeof(r));
	ok(mca_parse("error: nothing\n", &r) < 0, "text without a block throughput is refused");
	mca_report_release(&r);
}

static void test_cpu_names(void)
{
	const char *const *n = mca_cpu_names("GenuineIntel 6 143 8");
	ok(n && strcmp(n[0], "sapphirerapids") == 0, "Sapphire Rapids");
	n = mca_cpu_names("GenuineIntel 6 173 1");
	ok(n && strcmp(n[0], "graniterapids") == 0 && strcmp(n[1], "sapphirerapids") == 0,
	   "Granite Rapids, then the nearest older");
	n = mca_cpu_names("AuthenticAMD 25 17 1");
	ok(n && strcmp(n[0], "znver4") == 0 && strcmp(n[1], "znver3") == 0, "Zen 4 (Genoa)");
	n = mca_cpu_names("AuthenticAMD 25 33 0");
	ok(n && strcmp(n[0], "znver3") == 0, "Zen 3 (Vermeer)");
	n = mca_cpu_names("AuthenticAMD 23 49 0");
	ok(n && strcmp(n[0], "znver2") == 0, "Zen 2 (Rome)");
	ok(!mca_cpu_names("GenuineIntel 6 1 0"), "an unknown model: none");
	ok(!mca_cpu_names("HygonGenuine 24 0 1"), "an unknown vendor: none");
	ok(!mca_cpu_names("garbage") && !mca_cpu_names(""), "malformed: none");
}

int main(void)
{
	test_parse();
	test_cpu_names();
	return done_testing();
}
