# SPDX-License-Identifier: MIT
# lib/local.mk: the formats and utilities, written once (included by Makefile.am).
# liblean: the async-signal-safe subset that measure's preloaded library links (no malloc, no
# stdio; tests/e2e/t0003-lean-symbols.sh checks it).  libfathom: everything, for the offline
# tools.
noinst_LTLIBRARIES += \
	lib/liblean.la \
	lib/libfathom.la
lib_liblean_la_SOURCES = \
	lib/compat.h lib/le.h lib/search.h lib/error.c lib/error.h \
	lib/arena.c lib/arena.h lib/crc32c.c lib/crc32c.h lib/input.c lib/input.h \
	lib/chunkfile.h lib/chunkfile-write.c lib/mfile.h lib/mfile-fields.h lib/mfile-write.c \
	lib/elfprog.c lib/elfprog.h
lib_liblean_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
# No LIBADD: each user links zstd itself (measure's library statically when it can).
lib_libfathom_la_SOURCES = \
	lib/cli.c lib/escape.c lib/escape.h lib/xalloc.c lib/xalloc.h lib/buf.c lib/buf.h \
	lib/hmap.c lib/hmap.h lib/userdir.c lib/userdir.h lib/ksyms.c lib/ksyms.h \
	lib/srcpath.c lib/srcpath.h lib/formula.c lib/formula.h \
	lib/chunkfile-read.c lib/mfile-read.c lib/mfile-dump.c \
	lib/sfile.h lib/sfile-write.c lib/sfile-read.c lib/sfile-dump.c \
	lib/dbfile.h lib/dbfile-fields.h lib/dbfile-index.h lib/dbfile-index.c lib/dbfile-write.c \
	lib/dbfile-read.c lib/dbfile-dump.c lib/piece.c lib/piece.h lib/dbtrace.c lib/dbtrace.h
lib_libfathom_la_CFLAGS = $(AM_CFLAGS) $(ZSTD_CFLAGS)
lib_libfathom_la_LIBADD = lib/liblean.la $(ZSTD_LIBS) -lm
# The ELF symbol reader: it needs libelf, which libfathom does not link, so struct and prof
# compile it into themselves (STRUCT_CORE, PROF_CORE).
ELFSYMS_SOURCES = \
	lib/elfsyms.c \
	lib/elfsyms.h
