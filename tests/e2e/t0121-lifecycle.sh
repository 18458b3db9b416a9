#!/bin/sh
# SPDX-License-Identifier: MIT
# t0121-lifecycle.sh: programs keep their own behaviour under measure (signals, masks, longjmp,
# slow calls, odd exits, closed descriptors, C11 threads, thousands of threads), and their
# profiles are written in every case.
. "$top_srcdir/tests/lib/test-lib.sh"

L="$top_builddir/tests/measure-workloads/lifecycle"
run() { # run NAME EXPECTED_STATUS EVENT ARGS...: measure it, compare the exit status
	name=$1 want=$2 ev=$3
	shift 3
	measure -o "$name" -e "$ev" "$L" "$@" >"$name.out" 2>"$name.err"
	got=$?
	[ "$got" -eq "$want" ] || { echo "exit status $got, expected $want"; cat "$name.err"; return 1; }
}
profile_ok() { # every file of the run reads, and at least one has samples
	for f in "$1"/*.fthm; do test-tool read-mfile "$f" >/dev/null || return 1; done
	test-tool profile "$1"/*.fthm | awk '/^total/ {exit !($2 > 0)}'
}
test_expect_success 'own handlers, measure signal number, masks' '
	run sig 0 task-clock@f1000 signals && grep -q "signals: ok" sig.out && profile_ok sig &&
	test-tool profile -r blocked_worker sig/*-1-*.fthm | awk "/^reach blocked/ {exit !(\$3 > 0)}"
'
test_expect_success 'longjmp out of its own signal handler' '
	run lj 0 task-clock@f2000 longjmp && grep -q "longjmp: ok" lj.out && profile_ok lj
'
test_expect_success 'a slow read interrupted by REALTIME samples sees no EINTR' '
	run ei 0 REALTIME@1000 eintr && grep -q "eintr: ok" ei.out && profile_ok ei
'
test_expect_success 'SIGSEGV: same status, profile written' '
	run segv 139 task-clock segv && profile_ok segv && grep -q "ended (signal 11)" segv/*.log
'
test_expect_success 'abort: same status, profile written' '
	run abrt 134 task-clock abort && profile_ok abrt && grep -q "ended (signal 6)" abrt/*.log
'
test_expect_success 'its own SIGTRAP handler gets its traps while perf samples arrive' '
	run tr 0 task-clock@f2000 traps && grep -q "^traps: 50$" tr.out && profile_ok tr
'
test_expect_success 'SIGTRAP at its default action: same status, profile written' '
	run trap 133 task-clock trap && profile_ok trap && grep -q "ended (signal 5)" trap/*.log
'
test_expect_success 'SIGFPE: same status, profile written' '
	run fpe 136 task-clock fpe && profile_ok fpe
'
test_expect_success 'exit from a second thread' '
	run te 4 task-clock thread-exit && profile_ok te && test "$(ls te/*.fthm | wc -l)" -eq 2
'
test_expect_success '_exit from a second thread' '
	run tu 3 task-clock thread-_exit && profile_ok tu && test "$(ls tu/*.fthm | wc -l)" -eq 2
'
test_expect_success 'closing every descriptor at start loses nothing' '
	run cf 0 task-clock@f1000 closefds && profile_ok cf &&
	tail -n 1 cf/*.log | grep -q "^summary: samples taken [1-9]"
'
test_expect_success 'C11 threads are followed' '
	run c11 0 task-clock c11 && grep -q "c11: ok" c11.out && test "$(ls c11/*.fthm | wc -l)" -eq 2 &&
	test-tool profile -r c11_work c11/*-1-*.fthm | awk "/^reach c11_work/ {exit !(\$3 > 0)}"
'
test_expect_success '1000 threads with 2 perf events each, then 400 short-lived ones' '
	(ulimit -Sn 1024; run many 0 "{task-clock,page-faults}@f1000" many 1000) &&
	test "$(ls many/*.fthm | wc -l)" -eq 1401 && ! grep -q "^error" many/*.log
'
test_done
