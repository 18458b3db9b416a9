# SPDX-License-Identifier: MIT
# doc/local.mk: the manual pages and the documents (included by Makefile.am).
dist_man_MANS += \
	doc/measure.1 \
	doc/struct.1 \
	doc/prof.1 \
	doc/prof-mpi.1 \
	doc/view.1 \
	doc/fathom-dump.1
EXTRA_DIST += \
	doc/formats.md \
	doc/struct-format.md \
	doc/internals.md \
	doc/performance.md \
	doc/style.md
