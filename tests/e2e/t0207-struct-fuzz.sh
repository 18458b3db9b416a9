#!/bin/sh
# SPDX-License-Identifier: MIT
# t0207-struct-fuzz.sh: the fuzz targets of struct replay their seeds and a fixed set of
# mutations without a crash: the structure-file reader (seeds in tests/fuzz/corpus/sfile plus
# a file written now) and the ELF/DWARF entry point (a test program as the seed).
. "$top_srcdir/tests/lib/test-lib.sh"

bin="$top_builddir/tests/struct-workloads"
test_expect_success 'structure-file reader: seeds and 3000 mutations' "
	mkdir seeds && cp '$top_srcdir'/tests/fuzz/corpus/sfile/* seeds/ &&
	struct --no-cache -q -o seeds '$bin/loops-O0' &&
	'$top_builddir/tests/fuzz/fuzz-sfile-replay' -n 3000 -s 7 seeds
"
test_expect_success 'ELF/DWARF entry point: a test program and 300 mutations' "
	mkdir elf && cp '$bin/loops-O2' elf/ &&
	'$top_builddir/tests/fuzz/fuzz-struct-elf-replay' -n 300 -s 11 elf
"
test_done
