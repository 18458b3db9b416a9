# SPDX-License-Identifier: MIT
# tools/local.mk: fathom-dump, every file kind as text (included by Makefile.am).
bin_PROGRAMS += tools/fathom-dump
tools_fathom_dump_SOURCES = tools/fathom-dump.c
tools_fathom_dump_LDADD = lib/libfathom.la
