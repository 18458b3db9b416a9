/* SPDX-License-Identifier: MIT */
/*
 * pending.h: the main() of a fathom program whose capability has not landed yet.  It answers
 * -h and --version, and otherwise says plainly that the program does not work yet and exits
 * with status 2, so that nobody mistakes it for a run that measured or computed nothing.
 */
#ifndef FATHOM_PENDING_H
#define FATHOM_PENDING_H

int pending_main(const char *prog, const char *usage, const char *what, int argc, char **argv);

#endif
