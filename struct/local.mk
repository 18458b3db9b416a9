# SPDX-License-Identifier: MIT
# struct/local.mk: struct(1) (included by Makefile.am); the structure-file format is in lib/
# (lib/sfile*, doc/struct-format.md).  STRUCT_CORE is everything but main.c, which the unit
# test of the loops and the ELF fuzz target link too.
bin_PROGRAMS += struct/struct
STRUCT_CORE = \
	struct/struct.h \
	struct/strtab.c \
	struct/elf.c \
	struct/dwarf.c \
	struct/decode.c \
	struct/decode.h \
	struct/cfg.c \
	struct/cfg.h \
	struct/loops.c \
	struct/analyse.c \
	struct/dwimage.c \
	$(ELFSYMS_SOURCES)
STRUCT_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/struct $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) \
	$(ZLIB_CFLAGS)
STRUCT_LIBS = $(LIBDW_LIBS) $(LIBELF_LIBS) $(ZLIB_LIBS) $(ZYDIS_LIBS) -lpthread
struct_struct_SOURCES = struct/main.c $(STRUCT_CORE)
struct_struct_CPPFLAGS = $(STRUCT_CPPFLAGS)
struct_struct_LDADD = lib/libfathom.la $(STRUCT_LIBS)
