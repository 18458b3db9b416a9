/* SPDX-License-Identifier: MIT */
/* view: the terminal browser of metric databases (not landed yet). */
#include "compat.h"
#include "pending.h"

int main(int argc, char **argv)
{
	return pending_main("view", "[options] DATABASE",
			    "the terminal viewer is a later milestone; nothing was shown", argc,
			    argv);
}
