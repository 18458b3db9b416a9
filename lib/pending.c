/* SPDX-License-Identifier: MIT */
/* pending.c: the honest main() of a program that is not implemented yet (see pending.h). */
#include "compat.h"
#include "pending.h"

#include <stdio.h>
#include <string.h>

int pending_main(const char *prog, const char *usage, const char *what, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: %s %s\n\n%s is not implemented in fathom %s yet: %s\n", prog,
			       usage, prog, PACKAGE_VERSION, what);
			return 0;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("%s (fathom) %s\n", prog, PACKAGE_VERSION);
			return 0;
		}
	}
	fprintf(stderr, "%s: not implemented in fathom %s yet: %s\n", prog, PACKAGE_VERSION, what);
	return 2;
}
