#!/bin/sh
# SPDX-License-Identifier: MIT
# t0201-struct-loops.sh: struct --dump of a program with known loop nests, built at -O0, -O2
# and -O3, gives exactly the loops that the source marks (LOOP comments), with their header
# lines and nesting, the always_inline function's loop under its inline call site inside the
# caller's loop, the cases of a switch (a jump table) inside its loop, and the goto loop
# reported as irreducible.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/loop-marks-lib.sh"

src="$top_srcdir/tests/struct-workloads/loops.c"
bin="$top_builddir/tests/struct-workloads"

loop_marks "$src"

# Loops of the dump as "FUNCTION LINE PARENT_LINE INLINE FLAGS" (INLINE: innermost inline
# call site above the loop, or "-").
loops_of() {
	awk -f "$top_srcdir/tests/e2e/loop-scopes.awk" | awk '$1 == "loop" { print $2, $4, $5, $3, $6 }'
}

for o in 0 2 3; do
	test_expect_success "-O$o: dump works" "
		struct --no-cache --dump '$bin/loops-O$o' >dump-$o &&
		grep -q '^module .*loops-O$o\$' dump-$o && grep -q 'flags dwarf,lines,loops' dump-$o
	"
	test_expect_success "-O$o: exactly the marked loops, header lines and nesting" "
		loops_of <dump-$o >loops-$o &&
		grep -v ' irreducible\$' loops-$o | awk '{ print \$2, \$3 }' | sort -u >got-$o &&
		test_cmp expected got-$o &&
		test \$(grep -vc ' irreducible\$' loops-$o) -eq \$(wc -l <expected)
	"
	test_expect_success "-O$o: the inlined function's loop sits under its call site" "
		line=\$(awk '\$2 == \"inl\" { print \$1 }' marks) &&
		grep -q \"^calls_inlined \$line [0-9]* inlined_sum reducible\$\" loops-$o
	"
	test_expect_success "-O$o: the goto loop is one irreducible loop" "
		grep ' irreducible\$' loops-$o >irr-$o && test \$(wc -l <irr-$o) -eq 1 &&
		read fn line parent inl kind <irr-$o && test \"\$fn\" = irreducible &&
		test \"\$line\" -ge $irr_lo && test \"\$line\" -le $irr_hi &&
		grep -q 'loop at .*loops.c:.* entries=2 flags=irreducible' dump-$o
	"
	test_expect_success "-O$o: the switch's jump table is followed, its cases in the loop" "
		grep '^    function switcher ' dump-$o >sw-$o && ! grep -q unresolved-jump sw-$o &&
		case_line=\$(grep -n 'case 4: sink += i' '$src' | cut -d: -f1) &&
		awk -v want=\"loops.c:\$case_line:\" '
			/^    function / { infn = (\$2 == \"switcher\") }
			infn && /^      loop / { inloop = 1; next }
			infn && /^      [a-z]/ { inloop = 0 }
			infn && inloop && /^        stmt / && index(\$2, want) { found = 1 }
			END { exit !found }' dump-$o
	"
	test_expect_success "-O$o: every address of a loop maps to a line" "
		awk '{ match(\$0, /^ */); ind = RLENGTH }
		     li && ind <= li { li = 0 }
		     /^ *loop / && !li { li = ind }
		     /^ *stmt \\?/ && li { bad = 1 }
		     END { exit bad }' dump-$o
	"
done
test_expect_success 'the output file is written and dumps the same' "
	mkdir out && struct --no-cache -q -o out '$bin/loops-O2' &&
	set -- out/loops-O2-*.fthst && test -f \"\$1\" &&
	struct --dump \"\$1\" >again && test_cmp dump-2 again
"
test_done
