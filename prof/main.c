/* SPDX-License-Identifier: MIT */
/* prof: merge measurements and structure into a metric database (not landed yet). */
#include "compat.h"
#include "pending.h"

int main(int argc, char **argv)
{
	return pending_main("prof", "[options] MEASUREMENTS_DIR...",
			    "the database builder is a later milestone; no database was written",
			    argc, argv);
}
