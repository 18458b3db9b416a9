#!/bin/sh
# SPDX-License-Identifier: MIT
# t0108-measure-processes.sh: forked children, exec'd images and system() are measured into
# their own files; a failed exec changes nothing; every child keeps its exit status; the
# children's samples reach main.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'a fork/exec driver runs unchanged' '
	measure -o fe -e task-clock@f1000 "$W/forkexec" 10 >out 2>err &&
	grep -q "forkexec: 11 of 11 children exited with 7" out && cat err
'
test_expect_success 'every process has a log with a summary, and files' '
	test "$(ls fe/*.log | wc -l)" -ge 12 &&
	for log in fe/*.log; do tail -n 1 "$log" | grep -q "^summary:" || exit 1; done &&
	test "$(ls fe/*.fthm | wc -l)" -ge 12
'
test_expect_success 'the exec was flushed before, the new image measured after' '
	grep -l "ended (exec)" fe/*.log | head -n 1 | grep -q . &&
	grep -q "exec failed; measuring on" fe/*.log
'
# Between a fork and its exec (some 100 us) a child is almost never sampled at 1 kHz: such an
# image leaves no file of zeros, and its log says why.
test_expect_success 'an image that measured nothing before its exec leaves no file, and says so' '
	grep -q "measured nothing before the exec: no file for it" fe/*.log &&
	sed -n "s/^summary: .* files \([0-9]*\) errors .*/\1/p" fe/*.log |
		awk "{ s += \$1 } END { print s }" >logged &&
	ls fe/*.fthm | wc -l >found &&
	test_cmp logged found
'
test_expect_success 'the exec'"'"'d children map the unwind tables an earlier process built' '
	grep -h "unwind tables" fe/*.log >tables &&
	grep -q "([1-9][0-9]* built, 0 shared)" tables &&
	test "$(grep -c "(0 built, [1-9][0-9]* shared)" tables)" -ge 5 &&
	! grep -q "building the table again\|build their own tables" fe/*.log
'
test_expect_success 'with --no-cache, the shared tables are gone after the run' '
	mkdir tmp && TMPDIR=$PWD/tmp measure --no-cache -o sh2 -e task-clock sh -c "/bin/true; /bin/true" 2>err &&
	grep -q "(0 built, [1-9][0-9]* shared)" sh2/*.log &&
	test -z "$(ls -A tmp)"
'
# Short processes spend part of their time in the loader before main and in exit after it:
# those paths end at _start, the process's outermost frame, so "complete" is the measure.
# That includes samples inside ld.so's lazy-binding resolver, whose CFA is based on RBX.
test_expect_success 'the children samples are in child_work; 99% of paths are complete' '
	test-tool profile -r main -r child_work fe/*.fthm >p && cat p | grep -v ^function &&
	awk "/^total/ {t=\$2} /^complete/ {k=\$2} /^reach main/ {m=\$3} /^reach child_work/ {c=\$3}
	     END { exit !(t > 0 && k >= 0.99 * t && m >= 0.9 * t && c >= 0.5 * t) }" p
'
# One log per process: an image that a measured process execs appends to its log, whose name
# keeps the first program's.  (The subshell forks; a plain command would be vforked, and a
# vforked child's image has a log of its own.)
test_expect_success 'an exec'"'"'d image appends to its process'"'"'s log' '
	measure -o one -e task-clock sh -c "(exec /bin/true); exec /bin/true" 2>err &&
	test "$(ls one/*.log | wc -l)" -eq 2 &&
	grep -q "measure: 2 processes" err &&
	for log in one/*.log; do
		grep -q "^process [0-9]*: .*/true, " "$log" &&
		test "$(grep -c "^summary:" "$log")" -eq 2 || exit 1
	done &&
	test "$(grep -l "forked from" one/*.log | wc -l)" -eq 1
'
test_expect_success 'with too large an environment to copy, the image keeps a log of its own' '
	measure -o big -e task-clock env $(seq -f "FILL%g=x" 1 1100) /bin/true 2>err &&
	test "$(ls big/*.log | wc -l)" -eq 2 &&
	grep -q "^process [0-9]*: .*/true, " big/true-*.log &&
	grep -q "ended (exec)" big/env-*.log
'
test_expect_success 'an image killed after its exec is reported, though an earlier one summarized' '
	measure -o kill -e task-clock sh -c "exec sh -c \"kill -9 \\\$\\\$\"" 2>err
	test "$(ls kill/*.log | wc -l)" -eq 1 &&
	grep -q "^summary:" kill/*.log &&
	grep -q "wrote no summary" err
'
# A forked child writes only pages of its own and does not inherit its parent's trees (their
# memory is left out of the fork): children that run on without an exec, forked by the main
# thread and by another one, are measured whole, and so is the parent after the forks.
test_expect_success 'children forked without an exec, by two threads: files of their own' '
	measure -o wk -e task-clock@f1000 "$W/forkexec" workers >out 2>err &&
	grep -q "workers: 2 of 2 children exited with 5" out &&
	test "$(ls wk/*.log | wc -l)" -eq 3 &&
	children=$(sed -n "s/^process \([0-9]*\) forked from .*/\1/p" wk/*.log) &&
	test "$(echo $children | wc -w)" -eq 2 &&
	for pid in $children; do
		grep -q "(0 built, 0 shared, [1-9][0-9]* from its parent)" wk/*-$pid.log &&
		test-tool profile -r forked_work -r parent_work wk/*-$pid-*.fthm >c.$pid &&
		awk "/^total/ {t=\$2} /^complete/ {k=\$2} /^reach forked_work/ {f=\$3}
		     /^reach parent_work/ {p=\$3}
		     END { exit !(t > 0 && k >= 0.99 * t && f >= 0.9 * t && p == 0) }" c.$pid ||
			{ cat c.$pid; exit 1; }
	done
'
test_expect_success 'and the parent is measured on after its forks' '
	parent=$(sed -n "s/^process \([0-9]*\): .*forkexec, .*/\1/p" wk/*.log) &&
	test-tool profile -r forked_work -r parent_work wk/*-$parent-*.fthm >p &&
	awk "/^complete/ {k=\$2} /^total/ {t=\$2} /^reach forked_work/ {f=\$3}
	     /^reach parent_work/ {p=\$3}
	     END { exit !(k >= 0.99 * t && f == 0 && p >= 0.2e9) }" p || { cat p; exit 1; }
'
# Before an exec every thread's sampling stops; when the exec fails the calling thread is
# measured on, and the stopped threads' perf descriptors are closed then, not left open.
test_expect_success 'failed execs leave no descriptor behind, and measuring goes on' '
	measure -o fx -e task-clock@f1000 "$W/forkexec" failexec 20 >out 2>err ||
		{ cat out err; exit 1; }
	grep -q "failexec: .* after 20" out &&
	test "$(cat fx/*.log | grep -c "exec failed; measuring on")" -eq 20 &&
	test-tool profile -r parent_work fx/*.fthm >f &&
	awk "/^reach parent_work/ {p=\$3} END { exit !(p >= 0.05e9) }" f || { cat out f; exit 1; }
'
# A thread's sources are disabled before its samples are refused, so a sample raised just
# before a process ends (its exec or its exit) is recorded: at 10,000 samples/s the old order
# dropped one to five a run here.
test_expect_success 'samples raised as processes end are recorded, not dropped' '
	measure -o fin -e task-clock@f10000 "$W/forkexec" 30 >out 2>err || { cat out err; exit 1; }
	fathom-dump fin/*.fthm >d &&
	test "$(grep -c "dropped: thread finishing: 0$" d)" -eq "$(ls fin/*.fthm | wc -l)" ||
		{ grep "dropped: thread finishing" d | sort | uniq -c; exit 1; }
'
# When another thread ends the process, a thread preempted just as its sample was raised
# takes it when it runs again, before its profile is written: with both threads on one CPU,
# the main thread used to drop one in about 12 of 100 runs of exit() from a second thread.
if command -v taskset >/dev/null; then
	test_expect_success 'and so are those of a thread preempted while another one exits' '
		i=0
		while [ $i -lt 24 ]; do
			i=$((i + 1))
			taskset -c 0 measure -o te$i -e task-clock@f10000 "$W/lifecycle" thread-exit \
				>/dev/null 2>&1
			fathom-dump te$i/*.fthm | grep "dropped: thread finishing" >>drops
		done
		test "$(wc -l <drops)" -eq 48 && ! grep -v ": 0$" drops
	'
else
	skip 'no taskset(1)' 'and so are those of a thread preempted while another one exits'
fi
test_expect_success 'a shell pipeline and sh -c keep working' '
	measure -o sh -e task-clock sh -c "echo one | tr o O; exit 5" >out; test $? -eq 5 &&
	grep -qx "One" out
'
test_done
