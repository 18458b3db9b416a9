#!/bin/sh
# SPDX-License-Identifier: MIT
# t0302-prof-threads.sh: the 8-thread program (plus a nested thread): one thread per file in
# the database, each thread's workK under the same unified thread entry, per-thread values
# that add up, and statistics over threads.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
CHECK="$top_srcdir/tests/e2e/prof-check.awk"
measure -o thr-measurements -e task-clock "$W/threads" 0.2 >/dev/null 2>&1 ||
	skip_all "measure cannot sample on this machine"
nfiles=$(ls thr-measurements/*.fthm | wc -l)

test_expect_success 'one database thread per measurement file' '
	prof -o db thr-measurements >out 2>err &&
	grep -q "^prof: wrote db: $nfiles threads" out &&
	fathom-dump db >dump && grep -q "^threads $nfiles " dump
'
test_expect_success 'every workK is in the tree once' '
	for k in 0 1 2 3 4 5 6 7; do
		test "$(grep -c " function work$k " dump)" -eq 1 || exit 1
	done
'
test_expect_success 'inclusive and exclusive add up, in the summary and in every thread' '
	awk -f "$CHECK" dump | grep "additive .* $nfiles threads"
'
test_expect_success 'root statistics are over the threads that have values' '
	nz=$(grep -c "^thread t[0-9]*: [1-9]" dump) && test "$nz" -ge 8 &&
	awk "/^0 root/ {getline; print; exit}" dump >root && cat root &&
	grep -q "(n=$nz " root
'
test_done
