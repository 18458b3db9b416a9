# SPDX-License-Identifier: MIT
# tests/local.mk: the test suite (included by Makefile.am; tests/README says how to add to it):
# one list per kind of test (UNIT_TESTS, E2E_TESTS, FUZZ_TARGETS) and of workload
# (MEASURE_WORKLOADS, STRUCT_WORKLOADS), then what a test needs beyond its one source file.
TESTS = $(UNIT_TESTS) $(E2E_TESTS)
TEST_EXTENSIONS = .sh
LOG_DRIVER = env AM_TAP_AWK='$(AWK)' $(SHELL) $(top_srcdir)/build-aux/tap-driver.sh
SH_LOG_DRIVER = $(LOG_DRIVER)
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = top_srcdir='$(abs_top_srcdir)'; top_builddir='$(abs_top_builddir)'; \
	export top_srcdir top_builddir;
# Every C test and helper links the TAP library and libfathom unless it says otherwise.
LDADD = tests/lib/libtap.la lib/libfathom.la
check_LTLIBRARIES += tests/lib/libtap.la
tests_lib_libtap_la_SOURCES = \
	tests/lib/tap.c \
	tests/lib/tap.h
EXTRA_DIST += \
	tests/README \
	tests/stress.sh \
	tests/lib/test-lib.sh

# make check-stress: the end-to-end tests with two busy processes per CPU beside them
# (tests/stress.sh); their verdicts must not depend on the machine's load.
check-stress: all
	$(AM_V_at)$(SHELL) $(top_srcdir)/tests/stress.sh $(MAKE) $(AM_MAKEFLAGS) check TESTS='$(E2E_TESTS)'
PHONY += check-stress

# ---- unit tests: tests/unit/NAME.c, TAP through tests/lib/tap.h -----------------------------
UNIT_TESTS += \
	tests/unit/t-formula tests/unit/t-format tests/unit/t-buf tests/unit/t-hmap \
	tests/unit/t-arena tests/unit/t-crc32c tests/unit/t-le tests/unit/t-chunkfile \
	tests/unit/t-mfile tests/unit/t-input tests/unit/t-escape tests/unit/t-ksyms \
	tests/unit/t-sfile tests/unit/t-dbfile tests/unit/t-cfi tests/unit/t-cct tests/unit/t-tma \
	tests/unit/t-tma-ref tests/unit/t-tma-pfm tests/unit/t-loops tests/unit/t-prof-unify \
	tests/unit/t-view-model tests/unit/t-dbtrace tests/unit/t-mca
check_PROGRAMS += $(UNIT_TESTS)
# lib/
tests_unit_t_arena_LDADD = $(LDADD) -lpthread
tests_unit_t_mfile_SOURCES = tests/unit/t-mfile.c tests/helper/sample.c tests/helper/sample.h
# measure/: the unwinding test runs -O2 without frame pointers, so that it needs the CFI;
# -rdynamic for dladdr.
tests_unit_t_cfi_SOURCES = tests/unit/t-cfi.c tests/helper/cfi-here.h
tests_unit_t_cfi_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/unwind
tests_unit_t_cfi_CFLAGS = $(AM_CFLAGS) -O2 -fomit-frame-pointer
tests_unit_t_cfi_LDFLAGS = -rdynamic
tests_unit_t_cfi_LDADD = measure/libcfi.la $(LDADD) $(ZSTD_LIBS) -ldl
tests_unit_t_cct_SOURCES = tests/unit/t-cct.c measure/runtime/cct.c measure/runtime/cct.h
tests_unit_t_cct_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/runtime
TMA_SOURCES = measure/launcher/tma.c measure/launcher/tma.h
tests_unit_t_tma_SOURCES = tests/unit/t-tma.c $(TMA_SOURCES) measure/launcher/cpuid.c \
	measure/mconfig.c measure/mconfig.h
tests_unit_t_tma_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure -I$(top_srcdir)/measure/launcher
tests_unit_t_tma_LDADD = $(LDADD) -lm
# Every TMA node and counter restriction against the reference definitions (perf's and
# Intel's metrics and event lists, written out in the test), evaluated by measure and by view.
tests_unit_t_tma_ref_SOURCES = tests/unit/t-tma-ref.c $(TMA_SOURCES)
tests_unit_t_tma_ref_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure \
	-I$(top_srcdir)/measure/launcher -I$(top_srcdir)/view
tests_unit_t_tma_ref_LDADD = $(LDADD) -lm
# The planner's Ice Lake server events against libpfm4's icx table (LIBPFM_FORCE_PMU=icx).
tests_unit_t_tma_pfm_SOURCES = tests/unit/t-tma-pfm.c $(TMA_SOURCES)
tests_unit_t_tma_pfm_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/launcher
tests_unit_t_tma_pfm_LDADD = $(LDADD) $(PFM_LIBS) -lm
# struct/, prof/, view/
tests_unit_t_loops_SOURCES = tests/unit/t-loops.c struct/loops.c struct/cfg.h struct/struct.h
tests_unit_t_loops_CPPFLAGS = $(STRUCT_CPPFLAGS)
tests_unit_t_prof_unify_SOURCES = tests/unit/t-prof-unify.c tests/helper/sample.c \
	tests/helper/sample.h $(PROF_CORE)
tests_unit_t_prof_unify_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/prof $(LIBDW_CFLAGS) \
	$(LIBELF_CFLAGS)
tests_unit_t_prof_unify_LDADD = $(LDADD) $(LIBDW_LIBS) $(LIBELF_LIBS) -lm
VIEWDB = tests/helper/viewdb.c tests/helper/viewdb.h
tests_unit_t_view_model_SOURCES = tests/unit/t-view-model.c $(VIEW_MODEL) $(VIEWDB)
tests_unit_t_view_model_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/view
tests_unit_t_view_model_LDADD = $(LDADD) $(DEMANGLE_LIBS) -lm
tests_unit_t_mca_SOURCES = tests/unit/t-mca.c view/mca.c view/mca.h $(ELFSYMS_SOURCES)
tests_unit_t_mca_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/view
tests_unit_t_mca_LDADD = $(LDADD) $(LIBELF_LIBS) $(ZYDIS_LIBS)

# ---- end-to-end tests: tests/e2e/tNNNN-topic.sh, numbered in pipeline order (tests/README) --
# 045x run view in a real terminal, through tmux (tests/e2e/view-tui-lib.sh).
E2E_TESTS += \
	tests/e2e/t0001-dump.sh tests/e2e/t0002-corrupt-input.sh tests/e2e/t0003-lean-symbols.sh \
	tests/e2e/t0004-fuzz-replay.sh tests/e2e/t0005-fuzz-short.sh tests/e2e/t0006-programs.sh \
	tests/e2e/t0007-fifo-input.sh tests/e2e/t0008-terminal-bytes.sh \
	tests/e2e/t0009-dump-structure.sh \
	tests/e2e/t0101-measure-errors.sh tests/e2e/t0102-measure-attribution.sh \
	tests/e2e/t0103-measure-threads.sh tests/e2e/t0104-measure-callpaths.sh \
	tests/e2e/t0105-measure-dlopen.sh tests/e2e/t0106-measure-output.sh \
	tests/e2e/t0107-measure-proxy.sh tests/e2e/t0108-measure-processes.sh \
	tests/e2e/t0109-measure-io.sh tests/e2e/t0110-measure-memleak.sh \
	tests/e2e/t0111-measure-blocktime.sh tests/e2e/t0112-measure-sync-processes.sh \
	tests/e2e/t0113-measure-startup.sh tests/e2e/t0114-measure-symbols.sh \
	tests/e2e/t0115-measure-table-cache.sh tests/e2e/t0116-measure-relocated.sh \
	tests/e2e/t0117-measure-file-safety.sh tests/e2e/t0118-measure-unwind-ref.sh \
	tests/e2e/t0119-measure-unmeasurable-children.sh tests/e2e/t0120-measure-topdown.sh \
	tests/e2e/t0121-lifecycle.sh tests/e2e/t0122-real-programs.sh \
	tests/e2e/t0123-modules-and-children.sh \
	tests/e2e/t0124-measure-mpi.sh \
	tests/e2e/t0201-struct-loops.sh tests/e2e/t0202-struct-inline.sh \
	tests/e2e/t0203-struct-stripped.sh tests/e2e/t0204-struct-system-libs.sh \
	tests/e2e/t0205-struct-bad-input.sh tests/e2e/t0206-struct-dir-cache.sh \
	tests/e2e/t0207-struct-fuzz.sh tests/e2e/t0208-struct-clones.sh \
	tests/e2e/t0209-struct-compressed.sh tests/e2e/t0210-struct-openmp-inlined.sh \
	tests/e2e/t0211-struct-clang.sh tests/e2e/t0212-struct-noreturn.sh \
	tests/e2e/t0213-struct-less-to-go-on.sh tests/e2e/t0214-struct-loop-scopes.sh \
	tests/e2e/t0215-struct-loop-lines.sh \
	tests/e2e/t0301-prof-split.sh tests/e2e/t0302-prof-threads.sh \
	tests/e2e/t0303-prof-bad-input.sh tests/e2e/t0304-prof-fuzz.sh tests/e2e/t0305-prof-mpi.sh \
	tests/e2e/t0401-view-batch.sh tests/e2e/t0402-view-batch-errors.sh \
	tests/e2e/t0403-view-batch-tma.sh tests/e2e/t0404-tma-loops.sh \
	tests/e2e/t0405-view-batch-blocks.sh tests/e2e/t0406-view-demangle.sh \
	tests/e2e/t0407-view-kernel-sums.sh tests/e2e/t0408-view-cxx-names.sh \
	tests/e2e/t0409-view-processes.sh tests/e2e/t0410-view-batch-units.sh \
	tests/e2e/t0411-view-keys-man.sh tests/e2e/t0412-view-trace.sh \
	tests/e2e/t0413-view-compare.sh tests/e2e/t0414-view-mca.sh \
	tests/e2e/t0450-view-tui.sh \
	tests/e2e/t0451-view-tui-panes.sh tests/e2e/t0452-view-tui-terminal.sh \
	tests/e2e/t0453-view-tui-tma-loops.sh tests/e2e/t0454-view-tui-fit.sh \
	tests/e2e/t0455-view-tui-source-dirs.sh tests/e2e/t0456-view-tui-processes.sh \
	tests/e2e/t0457-view-tui-trace.sh tests/e2e/t0458-view-tui-compare.sh \
	tests/e2e/t0459-view-tui-mpi.sh tests/e2e/t0460-view-tui-mca.sh
EXTRA_DIST += \
	$(E2E_TESTS) tests/e2e/expected tests/e2e/prof-check.awk tests/e2e/compare-check.py \
	tests/e2e/mpi-check.py tests/e2e/mpi-lib.sh \
	tests/e2e/processes-lib.sh tests/e2e/loop-marks-lib.sh tests/e2e/loop-scopes.awk \
	tests/e2e/view-tui-lib.sh tests/e2e/tma-loops-lib.sh tests/e2e/tma-loops.py \
	tests/e2e/trace-check.py

# ---- helpers: programs the e2e tests run --------------------------------------------------------
# bench/prof-bench (bench/local.mk) makes t0305's many-thread synthetic measurement.
check_PROGRAMS += bench/prof-bench
check_PROGRAMS += \
	tests/helper/test-tool tests/helper/make-loadmap tests/helper/make-tma-mfile \
	tests/helper/make-viewdb tests/helper/cache-cleanup tests/helper/rename-exchange
tests_helper_test_tool_SOURCES = \
	tests/helper/test-tool.c tests/helper/sample.c tests/helper/sample.h \
	tests/helper/symbols.c tests/helper/symbols.h
tests_helper_test_tool_CPPFLAGS = $(AM_CPPFLAGS) $(LIBELF_CFLAGS)
tests_helper_test_tool_LDADD = $(LDADD) $(LIBELF_LIBS)
tests_helper_make_loadmap_LDADD = lib/libfathom.la
tests_helper_make_tma_mfile_SOURCES = tests/helper/make-tma-mfile.c $(TMA_SOURCES)
tests_helper_make_tma_mfile_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/measure/launcher
tests_helper_make_tma_mfile_LDADD = lib/libfathom.la -lm
tests_helper_make_viewdb_SOURCES = tests/helper/make-viewdb.c $(VIEWDB)
tests_helper_make_viewdb_LDADD = lib/libfathom.la -lm
# measure's cache clean-up alone, repeated, for t0117 (links measure/launcher/tables.c).
tests_helper_cache_cleanup_SOURCES = tests/helper/cache-cleanup.c measure/launcher/tables.c \
	measure/launcher/tables.h
tests_helper_cache_cleanup_CPPFLAGS = $(MEASURE_LAUNCHER_CPPFLAGS)
tests_helper_cache_cleanup_LDADD = measure/libcfi.la lib/libfathom.la
tests_helper_rename_exchange_LDADD = lib/libfathom.la

# ---- fuzz targets: tests/fuzz/fuzz-NAME.c, each built twice (tests/fuzz/README) -------------
# A replay and mutation driver with gcc for make check (fuzz-NAME-replay; the measurement
# file's is fuzz-replay), and a libFuzzer binary when clang has it (fuzz-NAME-libfuzzer, for
# make check and make fuzz).  Both compile the readers with checksums off so that mutations
# reach the parsers: tests/fuzz/libfuzzread.la holds them, built once with the replay
# drivers' flags: all of lib/'s sources, as lib/local.mk lists them.
FUZZ_TARGETS += \
	mfile sfile dbfile dbtrace
FUZZ_LIB_SOURCES = $(lib_liblean_la_SOURCES) $(lib_libfathom_la_SOURCES)
FUZZ_LIB_C = $(filter %.c,$(FUZZ_LIB_SOURCES))
FUZZ_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS) $(SANITIZE_CFLAGS)
FUZZ_LDADD = tests/fuzz/libfuzzread.la $(ZSTD_LIBS) -lm
check_LTLIBRARIES += tests/fuzz/libfuzzread.la
tests_fuzz_libfuzzread_la_SOURCES = $(FUZZ_LIB_SOURCES)
tests_fuzz_libfuzzread_la_CPPFLAGS = $(FUZZ_CPPFLAGS)
tests_fuzz_libfuzzread_la_CFLAGS = $(FUZZ_CFLAGS)
# The replay drivers, one rule for all of them (the measurement file's is fuzz-replay): the
# target and replay.c, compiled and linked against libfuzzread.la with the same flags.
FUZZ_REPLAY_BINARIES = tests/fuzz/fuzz-replay \
	$(patsubst %,tests/fuzz/fuzz-%-replay,$(filter-out mfile,$(FUZZ_TARGETS)))
check_SCRIPTS += $(FUZZ_REPLAY_BINARIES)
CLEANFILES += $(FUZZ_REPLAY_BINARIES)
FUZZ_REPLAY_DEPS = $(top_srcdir)/tests/fuzz/replay.c $(top_srcdir)/tests/fuzz/fuzz-input.h \
	tests/fuzz/libfuzzread.la
FUZZ_REPLAY_LINK = $(AM_V_CCLD)$(LIBTOOL) $(AM_V_lt) --tag=CC $(AM_LIBTOOLFLAGS) $(LIBTOOLFLAGS) \
	--mode=link $(CC) $(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(FUZZ_CPPFLAGS) $(CPPFLAGS) \
	$(FUZZ_CFLAGS) $(CFLAGS) $(SANITIZE_CFLAGS) $(LDFLAGS) -o $@ $< \
	$(top_srcdir)/tests/fuzz/replay.c $(FUZZ_LDADD)
tests/fuzz/fuzz-replay: $(top_srcdir)/tests/fuzz/fuzz-mfile.c $(FUZZ_REPLAY_DEPS)
	$(FUZZ_REPLAY_LINK)
tests/fuzz/fuzz-%-replay: $(top_srcdir)/tests/fuzz/fuzz-%.c $(FUZZ_REPLAY_DEPS)
	$(FUZZ_REPLAY_LINK)
check_PROGRAMS += tests/fuzz/fuzz-struct-elf-replay
# struct's ELF and DWARF entry point: replay driver only.
tests_fuzz_fuzz_struct_elf_replay_SOURCES = tests/fuzz/fuzz-struct-elf.c tests/fuzz/replay.c \
	$(STRUCT_CORE)
tests_fuzz_fuzz_struct_elf_replay_CPPFLAGS = $(STRUCT_CPPFLAGS) \
	-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
tests_fuzz_fuzz_struct_elf_replay_CFLAGS = $(FUZZ_CFLAGS)
tests_fuzz_fuzz_struct_elf_replay_LDFLAGS = $(SANITIZE_CFLAGS)
tests_fuzz_fuzz_struct_elf_replay_LDADD = $(FUZZ_LDADD) $(STRUCT_LIBS)
# The libFuzzer binaries, one rule for all of them.
LIBFUZZER_BINARIES = $(FUZZ_TARGETS:%=tests/fuzz/fuzz-%-libfuzzer)
if HAVE_LIBFUZZER
check_DATA += $(LIBFUZZER_BINARIES)
endif
tests/fuzz/fuzz-%-libfuzzer: $(top_srcdir)/tests/fuzz/fuzz-%.c $(FUZZ_LIB_C:%=$(top_srcdir)/%)
	$(AM_V_CCLD)$(MKDIR_P) tests/fuzz && $(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined \
	  -DHAVE_CONFIG_H -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I$(top_srcdir)/lib \
	  -I$(top_builddir) $(ZSTD_CFLAGS) $< $(FUZZ_LIB_C:%=$(top_srcdir)/%) \
	  $(ZSTD_LIBS) -lm -o $@
# make fuzz: every libFuzzer binary, for long runs; make fuzz-struct: the structure file's.
fuzz: $(LIBFUZZER_BINARIES)
	@for t in $(FUZZ_TARGETS); do \
	  echo "run: tests/fuzz/fuzz-$$t-libfuzzer -max_total_time=600 CORPUS_DIR $(top_srcdir)/tests/fuzz/corpus/$$t"; \
	done
fuzz-struct: tests/fuzz/fuzz-sfile-libfuzzer
	@echo "run: tests/fuzz/fuzz-sfile-libfuzzer -max_total_time=600 CORPUS_DIR $(top_srcdir)/tests/fuzz/corpus/sfile"
PHONY += fuzz fuzz-struct
CLEANFILES += $(LIBFUZZER_BINARIES)
EXTRA_DIST += \
	tests/fuzz/README \
	tests/fuzz/fuzz-input.h \
	$(FUZZ_TARGETS:%=tests/fuzz/fuzz-%.c) \
	tests/fuzz/corpus

# ---- measure's workloads: tests/measure-workloads/NAME.c -------------------------------------
# Built -O2 without frame pointers: call paths must come from the unwind tables.  The tests
# check their function names.  burn.h: the spin loop most of them burn CPU time with.
MEASURE_WORKLOADS += \
	split threads callpaths dlstress faults forkexec lifecycle plugins synchronous blocking \
	phases
MEASURE_WORKLOAD_CFLAGS = -O2 -g -fomit-frame-pointer -pthread
MEASURE_WORKLOAD_BINARIES = $(MEASURE_WORKLOADS:%=tests/measure-workloads/%)
check_SCRIPTS += $(MEASURE_WORKLOAD_BINARIES)
$(MEASURE_WORKLOAD_BINARIES): tests/measure-workloads/%: $(top_srcdir)/tests/measure-workloads/%.c \
	$(top_srcdir)/tests/measure-workloads/burn.h
	$(AM_V_CCLD)$(MKDIR_P) tests/measure-workloads && $(CC) $(CPPFLAGS) \
	  $(MEASURE_WORKLOAD_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -ldl -lpthread
CLEANFILES += $(MEASURE_WORKLOAD_BINARIES)
EXTRA_DIST += $(MEASURE_WORKLOADS:%=tests/measure-workloads/%.c)
# split rebuilt 1:1 with its code moved: the second run of view's comparison (t0413).
check_SCRIPTS += tests/measure-workloads/split-even
tests/measure-workloads/split-even: $(top_srcdir)/tests/measure-workloads/split.c \
	$(top_srcdir)/tests/measure-workloads/burn.h
	$(AM_V_CCLD)$(MKDIR_P) tests/measure-workloads && $(CC) $(CPPFLAGS) \
	  $(MEASURE_WORKLOAD_CFLAGS) $(CFLAGS) $(LDFLAGS) -DSPLIT_THREE=0.5 -DSPLIT_PAD -o $@ $<
CLEANFILES += tests/measure-workloads/split-even
# Two plugins built from one source, dlopen'ed one after the other by plugins.
check_DATA += \
	tests/measure-workloads/libplugina.so \
	tests/measure-workloads/libpluginb.so
tests/measure-workloads/libplugin%.so: $(top_srcdir)/tests/measure-workloads/plugin.c \
	$(top_srcdir)/tests/measure-workloads/burn.h
	$(AM_V_CC)$(MKDIR_P) tests/measure-workloads && $(CC) -O2 -g -fomit-frame-pointer -fPIC \
	  -shared -DPLUGIN_WORK=work_$* -o $@ $(top_srcdir)/tests/measure-workloads/plugin.c
CLEANFILES += \
	tests/measure-workloads/libplugina.so \
	tests/measure-workloads/libpluginb.so
EXTRA_DIST += \
	tests/measure-workloads/plugin.c \
	tests/measure-workloads/burn.h
# measure's unwinder against libunwind on the same contexts (unwind-ref.c), over C built eight
# ways (-O0 to -O3, with and without frame pointers) and C++.  libgcc_s comes before
# libunwind, so that the workload's C++ exceptions use the system's unwinder as usual.
UNWIND_WL_OBJECTS = \
	tests/measure-workloads/unwind-wl-O0_fp.o tests/measure-workloads/unwind-wl-O0_nofp.o \
	tests/measure-workloads/unwind-wl-O1_fp.o tests/measure-workloads/unwind-wl-O1_nofp.o \
	tests/measure-workloads/unwind-wl-O2_fp.o tests/measure-workloads/unwind-wl-O2_nofp.o \
	tests/measure-workloads/unwind-wl-O3_fp.o tests/measure-workloads/unwind-wl-O3_nofp.o
check_PROGRAMS += tests/measure-workloads/unwind-ref
tests_measure_workloads_unwind_ref_SOURCES = tests/measure-workloads/unwind-ref.c \
	tests/measure-workloads/unwind-wl-cxx.cc
tests_measure_workloads_unwind_ref_CFLAGS = $(AM_CFLAGS) -O2 -g -pthread $(LIBUNWIND_CFLAGS)
tests_measure_workloads_unwind_ref_CXXFLAGS = -O2 -g -fomit-frame-pointer
tests_measure_workloads_unwind_ref_LDFLAGS = -Wl,--no-as-needed -lgcc_s -Wl,--as-needed
tests_measure_workloads_unwind_ref_LDADD = $(UNWIND_WL_OBJECTS) $(LIBUNWIND_LIBS) -ldl -lm -lpthread
EXTRA_tests_measure_workloads_unwind_ref_DEPENDENCIES = $(UNWIND_WL_OBJECTS)
tests/measure-workloads/unwind-wl-%.o: $(top_srcdir)/tests/measure-workloads/unwind-wl.c
	$(AM_V_CC)$(MKDIR_P) tests/measure-workloads && $(CC) -g -$(word 1,$(subst _, ,$*)) \
	  $(if $(filter fp,$(word 2,$(subst _, ,$*))),-fno-omit-frame-pointer,-fomit-frame-pointer) \
	  -fPIE -DWL_NAME=unwind_wl_$* -c -o $@ $(top_srcdir)/tests/measure-workloads/unwind-wl.c
CLEANFILES += $(UNWIND_WL_OBJECTS)
EXTRA_DIST += tests/measure-workloads/unwind-wl.c
# Built by t0124 with mpicc, when Open MPI is there.
EXTRA_DIST += tests/measure-workloads/mpi-ranks.c

# ---- struct's workloads: tests/struct-workloads/NAME.c built as NAME-O<level> -----------------
# Programs with known loops, built with -g at the levels listed.
STRUCT_WORKLOADS += \
	loops-O0 loops-O2 loops-O3 kernel-O0 kernel-O2 kernel-O3 clones-O2 clones-O3
STRUCT_WORKLOAD_BINARIES = $(STRUCT_WORKLOADS:%=tests/struct-workloads/%)
struct_workload_source = $(firstword $(subst -O, ,$(1))).c
STRUCT_WORKLOAD_C_FILES = \
	$(sort $(foreach w,$(STRUCT_WORKLOADS),$(call struct_workload_source,$(w))))
check_SCRIPTS += $(STRUCT_WORKLOAD_BINARIES)
$(STRUCT_WORKLOAD_BINARIES): $(STRUCT_WORKLOAD_C_FILES:%=$(top_srcdir)/tests/struct-workloads/%)
	$(AM_V_CC)$(MKDIR_P) tests/struct-workloads && $(CC) -g -O$(lastword $(subst -O, ,$(@F))) \
	  -o $@ $(top_srcdir)/tests/struct-workloads/$(call struct_workload_source,$(@F))
CLEANFILES += $(STRUCT_WORKLOAD_BINARIES)
# The sources the tests build themselves (with gcc, g++ and clang, at the levels they need).
EXTRA_DIST += \
	tests/struct-workloads/loops.c tests/struct-workloads/kernel.c \
	tests/struct-workloads/clones.c tests/struct-workloads/omp.cc \
	tests/struct-workloads/noreturn.c tests/struct-workloads/noreturn-lib.c \
	tests/struct-workloads/isort.c tests/struct-workloads/loop-lines.c \
	tests/struct-workloads/tma-loops.c tests/struct-workloads/mca-loops.c
