#!/bin/sh
# SPDX-License-Identifier: MIT
# t0208-struct-clones.sh: compiler clones are linked to their parent function: a .cold part's
# addresses belong to the function it was split from (with DWARF, and from symbols alone), and
# a .constprop clone is named after its origin with the clone's symbol kept.
. "$top_srcdir/tests/lib/test-lib.sh"

bin="$top_builddir/tests/struct-workloads"
command -v nm >/dev/null 2>&1 || skip_all 'nm (binutils) is not installed'

for o in 2 3; do
	p="$bin/clones-O$o"
	test_expect_success "-O$o: the compiler made the clones this test is about" "
		nm '$p' >syms-$o &&
		grep -q ' t work\.cold\$' syms-$o && grep -q ' t scaled\.constprop\.0\$' syms-$o
	"
	cold=$(awk '$3 == "work.cold" { print $1 }' syms-$o 2>/dev/null | sed 's/^0*//')
	test_expect_success "-O$o: with DWARF, work covers its .cold part" "
		struct --no-cache --dump '$p' >dump-$o &&
		grep '^    function work at .*clones.c:[0-9]* ' dump-$o >work-$o &&
		test \$(grep -o '\\[0x' work-$o | wc -l) -eq 2 &&
		grep -q '\\[0x$cold-' work-$o &&
		! grep -q 'function work\\.cold' dump-$o
	"
	test_expect_success "-O$o: with DWARF, scaled.constprop.0 is scaled, flagged as a clone" "
		grep -q '^    function scaled at .*clones.c:[0-9]* entry=0x[0-9a-f]* symbol=scaled\\.constprop\\.0 flags=clone ' dump-$o
	"
	test_expect_success "-O$o: from symbols alone (strip --strip-debug), .cold joins work" "
		strip --strip-debug -o nodebug-$o '$p' &&
		struct --no-cache --dump nodebug-$o >nd-$o 2>nd-err-$o &&
		grep '^    function work entry=' nd-$o >ndwork-$o &&
		test \$(grep -o '\\[0x' ndwork-$o | wc -l) -eq 2 &&
		grep -q '\\[0x$cold-' ndwork-$o &&
		grep -q 'function scaled\\.constprop\\.0 .*flags=.*clone' nd-$o
	"
done
test_done
