#!/bin/sh
# SPDX-License-Identifier: MIT
# t0305-prof-mpi.sh: prof-mpi under Open MPI's mpirun writes prof's database byte for byte
# (summary.fdb, threads.fdb, traces.fdb), whatever the number of ranks (1 to 5, more ranks
# than cores, more than files): on synthetic measurements of several programs (one of them
# with top-down metrics, whose formulas and multiplexed values the reduction must keep),
# with --metric-db=summary, with a corrupt file among them, and on the 4-rank MPI program's
# measurements with their structure files.  Bad input fails as prof's does.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/mpi-lib.sh"

command -v prof-mpi >/dev/null 2>&1 ||
	skip_all "prof-mpi is not built (configure found no MPI: apt-get install libopenmpi-dev)"
mpi_setup

PROF_BENCH="$top_builddir/bench/prof-bench"
MAKE_TMA="$top_builddir/tests/helper/make-tma-mfile"

# exits_with STATUS CMD...: CMD exits with STATUS.
exits_with() {
	want=$1
	shift
	"$@"
	test $? -eq "$want"
}

# same_db A B: the two databases are the same files, byte for byte.
same_db() {
	for f in summary.fdb threads.fdb traces.fdb; do
		if test -e "$1/$f" || test -e "$2/$f"; then
			cmp "$1/$f" "$2/$f" || return 1
		fi
	done
	test "$(ls "$1")" = "$(ls "$2")"
}

test_expect_success 'synthetic measurements: 3 programs, 40 threads, traces' '
	"$PROF_BENCH" syn 36 3000 2 300 >/dev/null &&
	for k in 1 2 3; do "$MAKE_TMA" syn/tma-$k.fthm >/dev/null || return 1; done &&
	test-tool make-mfile --nodes 500 syn/zz-other.fthm &&
	prof -j1 -o ref syn >ref.out 2>ref.err && cat ref.out &&
	grep -q "^prof: wrote ref: 40 threads" ref.out && test -e ref/traces.fdb
'
for n in 1 2 3 5; do
	test_expect_success "mpirun -n $n prof-mpi: the same database as prof" "
		mpirun -n $n prof-mpi -o mpi$n syn >mpi$n.out 2>mpi$n.err &&
		cat mpi$n.out && same_db ref mpi$n &&
		sed 's/^prof-mpi:/prof:/; s/mpi$n/ref/' mpi$n.out | cmp - ref.out &&
		! ls | grep -q 'tmp-'
	"
done
test_expect_success 'more ranks than files: 5 ranks, 2 files' '
	mkdir two && cp syn/bench-host-4242-0-5000.fthm syn/bench-host-4242-1-5001.fthm two &&
	prof -o ref-two two >/dev/null 2>&1 &&
	mpirun -n 5 prof-mpi -o mpi-two two >out 2>err && same_db ref-two mpi-two
'
test_expect_success 'the same statistics, printed (fathom-dump)' '
	fathom-dump ref >ref.dump && fathom-dump mpi2 >mpi2.dump && cmp ref.dump mpi2.dump &&
	grep -q " sd=[0-9]" ref.dump
'
test_expect_success '--metric-db=summary: no threads.fdb, the same summary' '
	prof --metric-db=summary -o refs syn >/dev/null 2>&1 &&
	mpirun -n 2 prof-mpi --metric-db=summary -o mpis syn >/dev/null 2>&1 &&
	test ! -e mpis/threads.fdb && same_db refs mpis
'
test_expect_success 'a corrupt file: skipped by both, exit 1, the same database' '
	cp -r syn bad && head -c 3000 syn/bench-host-4242-7-5007.fthm >bad/bench-host-4242-7-5007.fthm &&
	exits_with 1 prof -o refb bad >refb.out 2>refb.err &&
	exits_with 1 mpirun -n 2 prof-mpi -o mpib bad >mpib.out 2>mpib.err &&
	grep -q "skipped 1 input" mpib.err && grep -q "bench-host-4242-7-5007.fthm" mpib.err &&
	same_db refb mpib
'
test_expect_success 'an existing database is not replaced without --force; with it, it is' '
	exits_with 1 mpirun -n 2 prof-mpi -o mpi2 syn >out 2>err &&
	grep -q "a database is there already" err && same_db ref mpi2 &&
	mpirun -n 2 prof-mpi --force -o mpi2 syn >/dev/null 2>&1 && same_db ref mpi2
'
test_expect_success 'a missing directory: said, exit 1, nothing written' '
	exits_with 1 mpirun -n 2 prof-mpi -o none no-such-dir >out 2>err &&
	grep -q "no-such-dir: cannot open" err && test ! -e none
'
test_expect_success 'the 4-rank MPI program: prof-mpi on 2 and 4 ranks gives prof'"'"'s database' '
	mpi_measure && mpi_database &&
	mpirun -n 2 prof-mpi -o db2 m >db2.out 2>&1 && same_db db db2 &&
	mpirun -n 4 prof-mpi -o db4 m >db4.out 2>&1 && same_db db db4 &&
	grep -q "threads (4 MPI ranks)" db4.out
'
test_done
