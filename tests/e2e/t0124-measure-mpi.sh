#!/bin/sh
# SPDX-License-Identifier: MIT
# t0124-measure-mpi.sh: an MPI program of 4 ranks under Open MPI's mpirun, each rank running
# measure: every rank's files in one directory, each carrying its rank; each launcher's summary
# names its rank; prof counts the ranks; view's --rank shows each rank's sums, which split
# 1:2:3:4 as the ranks' work does (mpi-ranks.c: CPU time, so on any machine), to within the
# sampling error of the samples taken, and a rank's sums are its threads' sums.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/mpi-lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "no python3 to check the shares"
mpi_setup

test_expect_success 'mpirun -n 4 measure: one directory, every rank summed up by its launcher' '
	mpi_measure && cat err &&
	for r in 0 1 2 3; do grep -q "^measure: rank $r of 4: 1 process, [0-9]* thread files" err ||
		return 1; done &&
	test "$(grep -c "^measure: rank" err)" = 4 &&
	test "$(ls m | grep -c "^mpi-ranks-.*\.log$")" = 4 && ! ls | grep -q "^m-2"
'
test_expect_success 'prof counts the ranks; every thread file carries its rank' '
	mpi_database && cat prof.out &&
	grep -q "threads (4 MPI ranks)" prof.out &&
	fathom-dump db/summary.fdb >dump && grep -E "^  t[0-9]+ " dump >threads &&
	! grep -v " rank=[0-3] " threads &&
	for r in 0 1 2 3; do test "$(grep -c " rank=$r " threads)" -ge 2 || return 1; done
'
test_expect_success '--rank R: the ranks split 1:2:3:4, each a sum of its threads' '
	for r in 0 1 2 3; do
		view --batch --raw --format json --view flat --rank $r db >rank$r.json || return 1
		for t in $(sed -n "s/^  t\([0-9]*\) .* rank=$r .*/\1/p" threads); do
			view --batch --raw --format json --view flat --thread $t db \
				>rank$r-thread$t.json || return 1
		done
	done &&
	python3 "$top_srcdir/tests/e2e/mpi-check.py" rank%d.json "rank%d-thread*.json" 1e6
'
test_expect_success '--rank: a rank that did not run, and one of --thread and --rank' '
	! view --batch --rank 7 db >o7 2>e7 && grep -q "no MPI rank 7" e7 &&
	! view --batch --rank 1 --thread 0 db >o8 2>e8 &&
	grep -q "one of them" e8
'
test_done
