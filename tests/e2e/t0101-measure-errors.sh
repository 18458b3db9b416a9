#!/bin/sh
# SPDX-License-Identifier: MIT
# t0101-measure-errors.sh: measure refuses what it cannot do before the program runs, with a
# specific message and exit status 2; -L lists what works; the program's status comes back.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"

if without_pmu 'CYCLES without a PMU'; then
	test_expect_refused 'CYCLES without a PMU says so' \
		'hardware counters are not available: this machine has no hardware PMU' CYCLES \
		'virtual machine'
fi
test_expect_error 'an unknown event lists close names' 2 \
	'unknown event "cpu-clok"; closest known: cpu-clock' measure -e cpu-clok /bin/true
test_expect_success 'and names each once, whatever its case' '
	measure -e task-clok /bin/true 2>err; test $? -eq 2 && cat err &&
	grep -q "closest known: task-clock, " err && ! grep -qi "task-clock.*task-clock" err
'
test_expect_error 'a synchronous source with a rate says it takes none' 2 \
	'MEMLEAK takes no period or rate' measure -e MEMLEAK@1000 /bin/true
test_expect_error 'a missing program' 2 'no-such-program: command not found' \
	measure no-such-program
echo 'int main(void){return 0;}' >static.c
touch notexec.sh
test_expect_error 'a program that is not executable' 2 'not executable' measure ./notexec.sh
if cc -static -o static static.c 2>/dev/null; then
	test_expect_error 'a statically linked program' 2 'statically linked' measure ./static
else
	skip 'cc -static does not work here' 'a statically linked program'
fi
test_expect_error 'an output directory that cannot be created' 2 \
	'cannot create the output directory' measure -o /proc/nope/x /bin/true
test_expect_error 'two POSIX timers (CPUTIME without perf events)' 2 \
	'at most one of REALTIME and CPUTIME' test-tool no-perf measure -e CPUTIME -e REALTIME /bin/true
test_expect_success 'CPUTIME (the task clock) and REALTIME together' '
	measure -o both -e CPUTIME -e REALTIME /bin/true &&
	fathom-dump both/*.fthm >dump &&
	grep -q "\"CPUTIME\"" dump && grep -q "\"REALTIME\"" dump
'
test_expect_error 'a bad rate' 2 'bad rate' measure -e task-clock@fx /bin/true
test_expect_success '-L lists usable events and unusable ones with the reason' '
	measure -L >list &&
	sed -n "/^Events usable/,/^Events known/p" list | grep -q "^  task-clock " &&
	sed -n "/^Events usable/,/^Events known/p" list | grep -q "^  CPUTIME " &&
	sed -n "/^Events usable/,/^Events known/p" list |
		grep -q "^  perf::TASK-CLOCK  *same as task-clock$" &&
	if ! (has_pmu); then
		unusable_reason CYCLES list | grep -q "no hardware PMU"
	fi
'
# libpfm4 reads every tracepoint when debugfs is mounted: it is started only for names that
# are not built in (its debug output shows when it starts).
test_expect_success 'libpfm4 starts only for the names it resolves' '
	LIBPFM_VERBOSE=1 LIBPFM_DEBUG=1 measure -o pf1 -e task-clock /bin/true 2>err1 &&
	! grep -q "^pfmlib" err1 &&
	LIBPFM_VERBOSE=1 LIBPFM_DEBUG=1 measure -o pf2 -e perf::page-faults /bin/true 2>err2 &&
	grep -q "^pfmlib" err2 && test -n "$(ls pf2/*.fthm)"
'
test_expect_success 'the default event is announced' '
	measure -o d1 /bin/true 2>err && grep -q "no -e given: measuring" err
'
test_expect_success 'an existing output directory is never overwritten' '
	mkdir -p taken && measure -o taken -e CPUTIME /bin/true 2>err &&
	grep -q "taken already exists; writing to .*taken-2" err && test -d taken-2 &&
	test -z "$(ls taken)"
'
test_expect_success 'the program exit status is measure exit status' '
	measure -o d2 -e CPUTIME sh -c "exit 3"; test $? -eq 3
'
test_expect_success 'a program killed by a signal: same signal status' '
	measure -o d3 -e CPUTIME sh -c "kill -TERM \$\$"; test $? -eq 143
'
test_expect_success 'a one-line summary at the end' '
	measure -o d4 -e task-clock "$W/split" 0.2 >out 2>err &&
	grep -q "^measure: 1 process, 1 thread file, [0-9]* samples" err &&
	grep -q "split: done" out
'
test_done
