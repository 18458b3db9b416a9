# SPDX-License-Identifier: MIT
# bench/local.mk: the benchmarks, built and run only on request (included by Makefile.am;
# doc/internals.md lists the make bench-* targets).
EXTRA_PROGRAMS += \
	bench/mfile-bench \
	bench/cfi-bench \
	bench/view-bench \
	bench/trace-bench
CLEANFILES += \
	bench/mfile-bench$(EXEEXT) \
	bench/cfi-bench$(EXEEXT) \
	bench/view-bench$(EXEEXT) \
	bench/trace-bench$(EXEEXT)
EXTRA_DIST += \
	bench/pin.sh \
	bench/run-mfile-bench.sh \
	bench/measure-bench.sh \
	bench/sync-bench.sh \
	bench/struct-bench.sh \
	bench/run-prof-bench.sh \
	bench/run-prof-mpi-bench.sh \
	bench/prof-vs-perf.sh \
	bench/workloads-lib.sh \
	bench/workloads/common.h \
	bench/workloads/callheavy.c \
	bench/workloads/deep.c \
	bench/workloads/fe_child.c \
	bench/workloads/forkexec.c \
	bench/workloads/matmul.c \
	bench/workloads/threads.c \
	bench/workloads/sigfloor.c \
	bench/workloads/allocs.c \
	bench/workloads/smallwrites.c
PHONY += \
	bench \
	bench-sync \
	bench-struct \
	bench-prof \
	bench-prof-perf \
	bench-view \
	bench-trace \
	bench-prof-trace \
	bench-prof-mpi

# The clocks and the median of the C benchmarks.
BENCH_STATS = \
	bench/bench-stats.c \
	bench/bench-stats.h

# make bench: writing and reading a 1,000,000-node measurement file.
bench_mfile_bench_SOURCES = bench/mfile-bench.c $(BENCH_STATS) tests/helper/sample.c
bench_mfile_bench_LDADD = lib/libfathom.la
bench: bench/mfile-bench$(EXEEXT)
	$(SHELL) $(top_srcdir)/bench/run-mfile-bench.sh

# The unwind tables' build and step (measure/unwind/), against libdw's.
bench_cfi_bench_SOURCES = bench/cfi-bench.c $(BENCH_STATS) tests/helper/cfi-here.h
bench_cfi_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/unwind $(LIBDW_CFLAGS) \
	$(ZSTD_CFLAGS)
bench_cfi_bench_CFLAGS = $(AM_CFLAGS) -O2 -fomit-frame-pointer
bench_cfi_bench_LDADD = measure/libcfi.la lib/libfathom.la $(LIBDW_LIBS) $(ZSTD_LIBS) -lm -ldl

# make bench-sync: the overhead of IO and MEMLEAK.
bench-sync: measure/measure$(EXEEXT) measure/libmeasure.la
	$(SHELL) $(top_srcdir)/bench/sync-bench.sh $(abs_top_builddir)

# make bench-struct: large real binaries (installs PETSc's and HotSpot's debug packages and
# LLVM's library, which has no DWARF).
bench-struct: struct/struct$(EXEEXT)
	$(SHELL) $(top_srcdir)/bench/struct-bench.sh $(abs_top_builddir)/struct/struct$(EXEEXT)

# make bench-prof: 1,000 synthetic thread files of 100,000 contexts; prof's time and memory.
bench_prof_bench_SOURCES = bench/prof-bench.c tests/helper/sample.c
bench_prof_bench_LDADD = lib/libfathom.la -lpthread -lm
bench-prof: bench/prof-bench$(EXEEXT) prof/prof$(EXEEXT)
	$(SHELL) $(top_srcdir)/bench/run-prof-bench.sh $(abs_top_builddir)

# make bench-prof-perf: prof against `perf report --stdio` on recordings of the same programs.
bench-prof-perf: measure/measure$(EXEEXT) struct/struct$(EXEEXT) prof/prof$(EXEEXT) measure/libmeasure.la
	$(SHELL) $(top_srcdir)/bench/prof-vs-perf.sh $(abs_top_builddir)

# make bench-view: a 1,000,000-context database opened and browsed, against fathom-dump, and
# printed whole by view --batch (each view).
bench_view_bench_SOURCES = bench/view-bench.c $(BENCH_STATS) $(VIEW_MODEL) $(VIEWDB)
bench_view_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/view
bench_view_bench_LDADD = lib/libfathom.la $(DEMANGLE_LIBS) -lm
bench-view: bench/view-bench$(EXEEXT) tools/fathom-dump$(EXEEXT) view/view$(EXEEXT)
	bench/view-bench$(EXEEXT) --peer $(abs_top_builddir)/tools/fathom-dump$(EXEEXT) \
		--view $(abs_top_builddir)/view/view$(EXEEXT)

# make bench-trace: 64 threads x 1,000,000 samples of trace opened and redrawn by the trace
# view's model (open < 1 s, each redraw < 50 ms), and its memory against the trace's size.
bench_trace_bench_SOURCES = bench/trace-bench.c $(BENCH_STATS) $(VIEW_MODEL) $(VIEWDB)
bench_trace_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/view
bench_trace_bench_LDADD = lib/libfathom.la $(DEMANGLE_LIBS) -lm
bench-trace: bench/trace-bench$(EXEEXT)
	bench/trace-bench$(EXEEXT)
# make bench-prof-trace: prof with and without the traces of a traced synthetic measurement.
bench-prof-trace: bench/prof-bench$(EXEEXT) prof/prof$(EXEEXT)
	$(SHELL) $(top_srcdir)/bench/run-prof-bench.sh $(abs_top_builddir) 200 20000 30000

# make bench-prof-mpi: prof-mpi with 1-4 ranks against prof -j1 on make bench-prof's measurement.
bench-prof-mpi: bench/prof-bench$(EXEEXT) prof/prof$(EXEEXT)
	$(SHELL) $(top_srcdir)/bench/run-prof-mpi-bench.sh $(abs_top_builddir)
