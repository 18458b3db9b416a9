# SPDX-License-Identifier: MIT
# prof/local.mk: prof(1) (included by Makefile.am); the database format is in lib/
# (lib/dbfile*, doc/formats.md section 8).  PROF_CORE is everything but main.c, which the
# unit test of the unification and prof-mpi link too.
bin_PROGRAMS += prof/prof
PROF_CORE = \
	prof/prof.h \
	prof/run.h \
	prof/run.c \
	prof/unify.c \
	prof/structure.c \
	$(ELFSYMS_SOURCES)
PROF_CPPFLAGS = $(AM_CPPFLAGS) $(LIBDW_CFLAGS) $(LIBELF_CFLAGS)
PROF_LDADD = lib/libfathom.la $(LIBDW_LIBS) $(LIBELF_LIBS) -lpthread -lm
prof_prof_SOURCES = prof/main.c $(PROF_CORE)
prof_prof_CPPFLAGS = $(PROF_CPPFLAGS)
prof_prof_LDADD = $(PROF_LDADD)

# prof-mpi(1): prof's run (PROF_CORE) with its parallel parts under MPI (prof/mpi.c), built
# when configure finds an MPI library.
if HAVE_MPI
bin_PROGRAMS += prof/prof-mpi
prof_prof_mpi_SOURCES = prof/mpi.c $(PROF_CORE)
prof_prof_mpi_CPPFLAGS = $(PROF_CPPFLAGS) $(MPI_CFLAGS)
prof_prof_mpi_LDADD = $(PROF_LDADD) $(MPI_LIBS)
endif
