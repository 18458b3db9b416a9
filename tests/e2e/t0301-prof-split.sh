#!/bin/sh
# SPDX-License-Identifier: MIT
# t0301-prof-split.sh: measure -> struct -> prof -> fathom-dump on the 3:1 split program: the
# structure is spliced in (functions, call sites, loops), inclusive and exclusive values add up
# at every context, work_three : work_one is about 3 : 1, and prof's output is the same byte
# for byte run after run and with -j1 and -j2; the database replaces an old one atomically.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
CHECK="$top_srcdir/tests/e2e/prof-check.awk"
measure -o split-measurements -e task-clock "$W/split" 1 >/dev/null 2>&1 ||
	skip_all "measure cannot sample on this machine"
have_struct=
struct split-measurements >/dev/null 2>&1 && have_struct=1

test_expect_success 'prof writes the database' '
	prof -o db split-measurements >out 2>err &&
	grep -q "^prof: wrote db: 1 threads" out &&
	test -f db/summary.fdb && test -f db/threads.fdb &&
	! ls -d db.tmp-* 2>/dev/null
'
test_expect_success 'the default name comes from the measurement directory' '
	prof split-measurements >/dev/null 2>&1 && test -f split-database/summary.fdb
'
test_expect_success 'fathom-dump reads it; values add up at every context' '
	fathom-dump db >dump && awk -f "$CHECK" dump
'
test_expect_success 'main > call site > work_three / work_one, about 3 : 1' '
	awk "/^contexts/ {c=1} /^functions/ {c=0}
	     c && / function work_three / {w=3; next} c && / function work_one / {w=1; next}
	     c && w && / m0 incl / {v[w]=\$3; w=0}
	     END { r = v[3] / v[1]; printf \"work_three %s work_one %s ratio %.2f\\n\", v[3], v[1], r;
		   exit !(r > 2.2 && r < 4.2) }" dump &&
	grep -q "call .*split.c:4[0-9]" dump
'
if [ -n "$have_struct" ]; then
	test_expect_success 'with structure files: loops and inlined code are in the tree' '
		grep -q "^ *[0-9]* loop .*split.c:" dump &&
		grep -q "^ *[0-9]* inline clock_s" dump &&
		grep "/split build-id" dump | grep -q " struct loops"
	'
fi
test_expect_success 'without structure: functions and lines from the binary, loops missing' '
	prof --no-struct -o nostruct split-measurements >/dev/null 2>err &&
	grep -q "loops are missing" err &&
	fathom-dump nostruct >d2 && grep -q "^flags no-loops" d2 &&
	! grep -q " loop " d2 && grep -q "function work_three" d2 && awk -f "$CHECK" d2
'
test_expect_success 'two runs give identical databases, byte for byte' '
	prof -o again split-measurements >/dev/null 2>&1 &&
	cmp db/summary.fdb again/summary.fdb && cmp db/threads.fdb again/threads.fdb
'
test_expect_success '-j1 and -j2 give identical databases' '
	prof -j1 -o j1 split-measurements >/dev/null 2>&1 &&
	prof -j2 -o j2 split-measurements >/dev/null 2>&1 &&
	cmp j1/summary.fdb j2/summary.fdb && cmp j1/threads.fdb j2/threads.fdb
'
test_expect_success 'an old database is kept and named without --force' '
	cp db/summary.fdb before.fdb &&
	! prof -o db split-measurements >/dev/null 2>err && cat err &&
	grep -q "db: a database is there already; prof replaces one only with --force" err &&
	cmp before.fdb db/summary.fdb && ! ls -d db.old-* db.tmp-* 2>/dev/null
'
test_expect_success '... replaced with --force, anything else is not' '
	prof --force -o db split-measurements >/dev/null 2>&1 && test -f db/summary.fdb &&
	! ls -d db.old-* db.tmp-* 2>/dev/null &&
	mkdir notadb && : >notadb/keep &&
	! prof --force -o notadb split-measurements >/dev/null 2>err &&
	grep -q "notadb exists and is not a fathom database" err && test -f notadb/keep &&
	! ls -d notadb.tmp-* 2>/dev/null
'
test_expect_success '--metric-db=summary keeps no per-thread values' '
	prof --metric-db=summary -o summ split-measurements >/dev/null 2>&1 &&
	test -f summ/summary.fdb && ! test -f summ/threads.fdb &&
	fathom-dump summ | grep -q "^flags.*no-thread-values"
'
test_done
