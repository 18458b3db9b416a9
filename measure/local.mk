# SPDX-License-Identifier: MIT
# measure/local.mk: measure's three binaries (included by Makefile.am): the launcher
# (measure/launcher/), the preloaded runtime (measure/runtime/) and the unwind-table library
# both link (measure/unwind/); the files at measure/ itself (the environment contract,
# mconfig.*) are built into the first two.
MEASURE_LAUNCHER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure \
	-I$(top_srcdir)/measure/launcher -I$(top_srcdir)/measure/unwind
MEASURE_RUNTIME_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure \
	-I$(top_srcdir)/measure/runtime -I$(top_srcdir)/measure/unwind

# ---- measure/launcher: measure(1) ----------------------------------------------------------
# With the top-down events: CPU model table, planner, formulas and decoder
# (measure/launcher/tma.h) and CPU identification (measure/launcher/cpuid.c).
bin_PROGRAMS += measure/measure
measure_measure_SOURCES = \
	measure/launcher/main.c measure/launcher/events.c measure/launcher/events.h \
	measure/launcher/source.h measure/launcher/sources.c measure/launcher/timer.c \
	measure/launcher/perf.c measure/launcher/io.c measure/launcher/memleak.c \
	measure/launcher/blocktime.c measure/mconfig.c measure/mconfig.h \
	measure/launcher/tables.c measure/launcher/tables.h \
	measure/launcher/tma.c measure/launcher/tma.h measure/launcher/cpuid.c
measure_measure_CPPFLAGS = $(MEASURE_LAUNCHER_CPPFLAGS) -DPKGLIBDIR='"$(pkglibdir)"' \
	-DBINDIR='"$(bindir)"'
measure_measure_LDADD = measure/libcfi.la lib/libfathom.la $(PFM_LIBS) -lrt -lm

# ---- measure/runtime: the preloaded library, installed under $(pkglibdir) ------------------
# With the synchronous sources (issue 9): wrappers of the I/O calls and of the malloc family,
# and the calling contexts of wrapped calls (measure/runtime/callsite.c).
pkglib_LTLIBRARIES += measure/libmeasure.la
measure_libmeasure_la_SOURCES = \
	measure/runtime/preload.c measure/runtime/runtime.h measure/runtime/log.c \
	measure/runtime/clock.c measure/mconfig.c measure/mconfig.h \
	measure/runtime/cct.c measure/runtime/cct.h measure/runtime/loadmap.c \
	measure/runtime/loadmap.h measure/runtime/unwind.c measure/runtime/sampler.c \
	measure/runtime/source.h measure/runtime/sources.c measure/runtime/timer.c \
	measure/runtime/perf.c measure/runtime/perf-ring.c measure/runtime/perf-ring.h \
	measure/runtime/blocktime.c measure/runtime/thread.c measure/runtime/writer.c \
	measure/runtime/exec.c measure/runtime/signals.c measure/runtime/fds.c \
	measure/runtime/unwind-check.c measure/runtime/callsite.c measure/runtime/io.c \
	measure/runtime/memleak.c
measure_libmeasure_la_CPPFLAGS = $(MEASURE_RUNTIME_CPPFLAGS)
measure_libmeasure_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
measure_libmeasure_la_LDFLAGS = -module -avoid-version -shared -Wl,-z,defs -Wl,-z,now \
	-Wl,--exclude-libs,ALL
measure_libmeasure_la_LIBADD = measure/libcfi.la lib/liblean.la $(MEASURE_ZSTD_LIBS) -ldl \
	-lpthread -lrt

# ---- measure/unwind: unwind recipe tables from .eh_frame CFI and the signal-safe step ------
noinst_LTLIBRARIES += measure/libcfi.la
measure_libcfi_la_SOURCES = \
	measure/unwind/cfi.c \
	measure/unwind/cfi.h \
	measure/unwind/cfi-cache.c
measure_libcfi_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/unwind
measure_libcfi_la_CFLAGS = $(AM_CFLAGS)
