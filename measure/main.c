/* SPDX-License-Identifier: MIT */
/* measure: run a program and sample its threads into measurement files (not landed yet). */
#include "compat.h"
#include "pending.h"

int main(int argc, char **argv)
{
	return pending_main("measure", "[options] PROGRAM [ARGS...]",
			    "the sampling profiler is the next milestone; the program was not run",
			    argc, argv);
}
