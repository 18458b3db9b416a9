/* SPDX-License-Identifier: MIT */
/*
 * preload.c: measure's preloaded library (libmeasure.so, installed under pkglibdir).
 * It links lib/liblean, the async-signal-safe writer of measurement files.  Sampling, the
 * launcher's environment contract and the per-thread trees arrive with the measure milestone;
 * until then the library only identifies itself.
 */
#include "compat.h"

__attribute__((visibility("default"))) const char fathom_measure_version[] = PACKAGE_VERSION;
