# SPDX-License-Identifier: MIT
# loop-marks-lib.sh: the loops a struct workload marks, for the tests that compare struct's loops
# with them (t0201, t0211); sourced after test-lib.sh.
#   loop_marks SRC   writes marks ("LINE NAME PARENT" per /* LOOP NAME PARENT */ comment of
#                    SRC) and expected ("LINE PARENT_LINE" per marked loop, sorted), and sets
#                    irr_lo and irr_hi, the lines of SRC's first and last IRREDUCIBLE mark
loop_marks() {
	grep -n 'LOOP ' "$1" | sed -n 's/^\([0-9]*\):.*LOOP \([a-z-]*\) \([a-z-]*\) \*\/.*/\1 \2 \3/p' >marks
	awk 'NR == FNR { line[$2] = $1; next } { print $1, ($3 == "-" ? "-" : line[$3]) }' marks marks |
		sort >expected
	irr_lo=$(grep -n 'IRREDUCIBLE \*/' "$1" | head -1 | cut -d: -f1)
	irr_hi=$(grep -n 'IRREDUCIBLE \*/' "$1" | tail -1 | cut -d: -f1)
}
