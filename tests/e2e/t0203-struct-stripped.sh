#!/bin/sh
# SPDX-License-Identifier: MIT
# t0203-struct-stripped.sh: a stripped copy of a test program gives functions (from .dynsym,
# the PLT and the unwind tables) and the same loops, without lines, says that lines are
# missing, and does not crash.
. "$top_srcdir/tests/lib/test-lib.sh"

bin="$top_builddir/tests/struct-workloads"
command -v strip >/dev/null 2>&1 || skip_all 'strip (binutils) is not installed'

for o in 0 2; do
	test_expect_success "-O$o: strip a copy" "
		cp '$bin/loops-O$o' plain-$o && cp '$bin/loops-O$o' stripped-$o && strip stripped-$o &&
		! grep -q debug_info stripped-$o
	"
	test_expect_success "-O$o: struct succeeds and says lines are missing" "
		struct --no-cache --dump stripped-$o >dump-$o 2>err-$o &&
		grep -q 'stripped-$o: no line information' err-$o &&
		grep -q '^  flags loops,stripped\$' dump-$o
	"
	test_expect_success "-O$o: functions from the unwind tables and the PLT" "
		grep -q '^    function func_[0-9a-f]* entry=' dump-$o &&
		grep -q '^    function printf@plt .*flags=plt' dump-$o
	"
	test_expect_success "-O$o: the same loops as with symbols and DWARF, without lines" "
		struct --no-cache --dump plain-$o >plain-dump-$o &&
		grep -c '^ *loop at ' plain-dump-$o >want && grep -c '^ *loop at ?:0 ' dump-$o >got &&
		test_cmp want got && test \$(cat got) -ge 8 &&
		grep -q 'loop at ?:0 .*flags=irreducible' dump-$o &&
		! grep -q '^ *stmt [^?]' dump-$o
	"
done
test_done
