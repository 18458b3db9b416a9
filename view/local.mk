# SPDX-License-Identifier: MIT
# view/local.mk: view(1) (included by Makefile.am): the model of a database that batch output
# and the TUI share (view/model.h), --batch (view/batch.c) and the ncurses interface
# (view/tui.h).  VIEW_MODEL is what the unit test and bench/view-bench link too.
bin_PROGRAMS += view/view
VIEW_MODEL = \
	view/model.h view/model-internal.h view/model.c view/model-topdown.c \
	view/model-trace.c view/model-trace.h view/model-tree.c view/model-nav.c \
	view/model-source.c view/model-tma.c view/units.c view/compare.h view/compare.c
view_view_SOURCES = \
	view/main.c view/tui.c view/tui.h view/tui-internal.h view/tui-keys.c view/tui-keys.def \
	view/tui-draw.c view/tui-panes.c view/tui-trace.c $(VIEW_MODEL) \
	view/batch.c view/batch.h view/batch-trace.c view/batch-trace.h \
	view/batch-mca.c view/batch-mca.h view/mca.c view/mca.h $(ELFSYMS_SOURCES)
view_view_LDADD = lib/libfathom.la $(NCURSESW_LIBS) $(DEMANGLE_LIBS) $(LIBELF_LIBS) \
	$(ZYDIS_LIBS) -lm
