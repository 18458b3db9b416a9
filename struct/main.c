/* SPDX-License-Identifier: MIT */
/* struct: recover functions, inlined code, loops and lines from binaries (not landed yet). */
#include "compat.h"
#include "pending.h"

int main(int argc, char **argv)
{
	return pending_main("struct", "[options] MEASUREMENTS_DIR | BINARY...",
			    "structure recovery (functions, inlining, loops, lines) is the next "
			    "milestone; nothing was analysed", argc, argv);
}
