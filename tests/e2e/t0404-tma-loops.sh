#!/bin/sh
# SPDX-License-Identifier: MIT
# t0404-tma-loops.sh: the top-down shares per loop through struct, prof and view.  A synthetic
# top-down measurement (make-tma-mfile -s) puts samples with known counter deltas at addresses
# of the loops of a real -O2 binary (tests/struct-workloads/tma-loops.c: a loop, a loop nest,
# a loop inlined into main's loop, code outside the loops); struct recovers the loops, prof
# builds the database, and every loop, the inline call site and every function must show the
# TMA values of the counters summed over the samples in it (its inner loops and callees
# included), as tma-loops.py and make-tma-mfile -p compute them without prof or view.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/tma-loops-lib.sh"

tma_loops_need

test_expect_success 'setup: struct finds the loops; samples in each loop and outside them' '
	tma_loops_place && cat tma-loops.place &&
	for l in stream branchy-outer branchy-inner norm main; do
		grep -q "^sample 0x[0-9a-f]* .*[ ,]loop-$l\(,\|$\)" tma-loops.place || exit 1
	done &&
	norm=$(tma_loops_line norm) &&
	grep -q "^# label loop-norm loop - $norm main inline:norm2$" tma-loops.place &&
	stream_own="compute [0-9]* [0-9]* 0x[0-9a-f]* all,fn-stream,fn-main,loop-main" &&
	grep -q "^sample 0x[0-9a-f]* $stream_own$" tma-loops.place &&
	branchy_inner=all,fn-branchy,loop-branchy-outer,loop-branchy-inner,fn-main,loop-main &&
	grep -q "^sample .* $branchy_inner$" tma-loops.place
'
test_expect_success 'the measurement names the binary, struct and prof use its loops' '
	tma_loops_db topdown && cat tma-loops.want | head -n 3 &&
	grep -q "^group loop-branchy-outer Backend Bound " tma-loops.want &&
	fathom-dump tma-m/tma.fthm >m.dump && grep -q "$TEST_TMP/tma-loops" m.dump &&
	! grep -qi "loops are missing\|no loops\|not used\|shown by address" prof.out &&
	fathom-dump tma-db >db.dump && ! grep -q "^flags .*no-loops" db.dump &&
	grep -q "^  \[0\] $TEST_TMP/tma-loops build-id [0-9a-f]* sampled struct loops$" db.dump
'
test_expect_success 'view CSV: every loop, the inline call site, every function' '
	view --batch --raw --topdown --format csv tma-db >got.csv &&
	python3 "$tma_loops_py" tree tma-loops.want tma-loops.place csv got.csv
'
test_expect_success 'view JSON: the same values' '
	view --batch --raw --topdown --format json tma-db >got.json &&
	python3 "$tma_loops_py" tree tma-loops.want tma-loops.place json got.json
'
test_expect_success 'the database: inclusive counters of each loop context are the sums' '
	python3 "$tma_loops_py" db tma-loops.want tma-loops.place db.dump
'
test_expect_success 'a stream loop is memory bound, the inner branchy loop mispredicts' '
	python3 -c "
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
col = {h: i for i, h in enumerate(rows[0])}
def at(line):
    r = [r for r in rows[1:] if r[4] == \"loop\" and r[7] == line]
    assert len(r) == 1, (line, len(r))
    return r[0]
s, b = at(sys.argv[2]), at(sys.argv[3])
assert float(s[col[\"topdown Memory Bound\"]]) > 0.5, s
assert float(b[col[\"topdown Misprediction\"]]) > 0.25, b
" got.csv $(tma_loops_line stream) $(tma_loops_line branchy-inner)
'
test_expect_success 'multiplexed groups (topdown:all): the same check per loop' '
	tma_loops_db topdown:all -all && grep -q "groups" tma-loops.want-all &&
	view --batch --raw --topdown --format csv tma-db-all >got-all.csv &&
	python3 "$tma_loops_py" tree tma-loops.want-all tma-loops.place csv got-all.csv &&
	fathom-dump tma-db-all >db-all.dump &&
	python3 "$tma_loops_py" db tma-loops.want-all tma-loops.place db-all.dump
'
test_expect_success 'Ice Lake server and AMD Zen 4 formulas: the same check per loop' '
	for cpu in icx zen4; do
		rm -rf tma-m-$cpu tma-db-$cpu && mkdir tma-m-$cpu &&
		make-tma-mfile -c $cpu -s tma-loops.place -p tma-m-$cpu/tma.fthm >want-$cpu &&
		struct --no-cache tma-m-$cpu >/dev/null &&
		prof -o tma-db-$cpu tma-m-$cpu >/dev/null &&
		view --batch --raw --topdown --format csv tma-db-$cpu >got-$cpu.csv &&
		python3 "$tma_loops_py" tree want-$cpu tma-loops.place csv got-$cpu.csv || exit 1
	done
'
printf 'module /bin/true -\nsample 0x10 nosuch 1 100 - -\n' >"$TEST_TMP/bad1"
printf 'module /bin/true zz\nsample 0x10 stream 1 100 - -\n' >"$TEST_TMP/bad2"
printf 'sample 0x10 stream 1 100 - -\n' >"$TEST_TMP/bad3"
test_expect_error 'a placement with an unknown behaviour is refused' 2 \
	"bad1:2: unknown behaviour 'nosuch'" \
	make-tma-mfile -s "$TEST_TMP/bad1" "$TEST_TMP/x.fthm"
test_expect_error 'a bad build-id is refused' 2 "bad2:1: bad build-id 'zz'" \
	make-tma-mfile -s "$TEST_TMP/bad2" "$TEST_TMP/x.fthm"
test_expect_error 'a placement file without a module is refused' 2 "bad3: no module line" \
	make-tma-mfile -s "$TEST_TMP/bad3" "$TEST_TMP/x.fthm"
test_done
