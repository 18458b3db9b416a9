# SPDX-License-Identifier: MIT
# prof/local.mk: prof(1) (included by Makefile.am); the database format is in lib/
# (lib/dbfile*, doc/formats.md section 8).  PROF_CORE is everything but main.c, which the
# unit test of the unification links too.
bin_PROGRAMS += prof/prof
PROF_CORE = \
	prof/prof.h \
	prof/run.h \
	prof/run.c \
	prof/unify.c \
	prof/structure.c \
	$(ELFSYMS_SOURCES)
prof_prof_SOURCES = prof/main.c $(PROF_CORE)
prof_prof_CPPFLAGS = $(AM_CPPFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
prof_prof_LDADD = lib/libfathom.la $(LIBDW_LIBS) $(LIBELF_LIBS) -lpthread -lm

# prof-mpi(1): prof's run (PROF_CORE) with its parallel parts under MPI (prof/mpi.c), built
# when configure finds an MPI library.
if HAVE_MPI
bin_PROGRAMS += prof/prof-mpi
prof_prof_mpi_SOURCES = prof/mpi.c $(PROF_CORE)
prof_prof_mpi_CPPFLAGS = $(AM_CPPFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS) $(MPI_CFLAGS)
prof_prof_mpi_LDADD = lib/libfathom.la $(LIBDW_LIBS) $(LIBELF_LIBS) $(MPI_LIBS) -lpthread -lm
endif
