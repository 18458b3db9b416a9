#!/bin/sh
# SPDX-License-Identifier: MIT
# t0409-view-processes.sh: the processes of a run stay apart.  A shell pipeline of two programs,
# one of which forks a child without exec: the root's children are the programs, each with only
# its own functions; --process PID shows that process alone (its values add up, with the other
# processes', to the whole); the threads carry their command lines, start functions and names.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/processes-lib.sh"

test_expect_success 'setup: a pipeline of two programs, one with a forked child, measured' '
	processes_setup
'
test_expect_success 'the root holds one entry per program; each has its own functions' '
	view --batch --raw --format json db >all.json && python3 sums.py programs all.json >programs &&
	cat programs && grep -q "program consumer" programs && grep -q "program producer" programs
'
test_expect_success 'the threads carry their command lines, start functions and names' '
	grep -q "args=./producer first" dump && grep -q "args=./consumer" dump &&
	grep -q "name=reader entry=reader_thread args=./consumer" dump
'
test_expect_success '--process shows one process: its values add up with the others' '
	total=$(python3 sums.py total all.json) &&
	p1=$(pid_of producer 1) && p2=$(pid_of producer 2) && c=$(pid_of consumer) &&
	test -n "$p1" && test -n "$p2" && test -n "$c" && echo "pids $p1 $p2 $c" &&
	view --batch --raw --format json --process $c db >c.json &&
	cv=$(python3 sums.py process c.json $c "program consumer") &&
	test "$cv" = "$(python3 sums.py program all.json "program consumer")" &&
	view --batch --raw --format json --process $p1 db >p1.json &&
	view --batch --raw --format json --process $p2 db >p2.json &&
	v1=$(python3 sums.py process p1.json $p1 "program producer") &&
	v2=$(python3 sums.py process p2.json $p2 "program producer") &&
	test "$(python3 sums.py program all.json "program producer")" = $((v1 + v2)) &&
	sh_total=$(python3 sums.py program all.json "program dash")$(python3 sums.py program all.json "program sh") &&
	echo "producer $v1 + $v2, consumer $cv, sh ${sh_total:-0}, total $total" &&
	test "$total" = $((v1 + v2 + cv + ${sh_total:-0}))
'
test_expect_success 'the forked child: its own function, not its parent'"'"'s' '
	view --batch --raw --view flat --process $(pid_of producer 1) db >f1 &&
	view --batch --raw --view flat --process $(pid_of producer 2) db >f2 &&
	cat f1 f2 | grep -E "producer_work|forked_child_work" &&
	if grep -Eq "forked_child_work +[1-9]" f1; then child=f1 parent=f2; else child=f2 parent=f1; fi &&
	grep -Eq "forked_child_work +[1-9]" $child && grep -Eq "producer_work +[1-9]" $parent &&
	! grep -Eq "producer_work +[1-9]" $child
'
test_expect_success '--process leaves out the scopes the process never ran, in every view' '
	c=$(pid_of consumer) &&
	for v in top-down bottom-up flat; do
		view --batch --view $v --process $c db >c-$v.txt &&
		grep -q consumer c-$v.txt && ! grep -Eq "producer|forked_child_work" c-$v.txt ||
		{ cat c-$v.txt; return 1; }
	done &&
	grep -q "program consumer" c-top-down.txt &&
	view --batch --thread 0 db >t0.txt && view --batch db >all.txt &&
	test $(wc -l <t0.txt) -lt $(wc -l <all.txt)
'
test_expect_success 'bad --process values are refused' '
	! view --batch --process 1 db 2>err && grep -q "no process 1" err &&
	! view --batch --process x db 2>err && grep -q "is not a number" err &&
	! view --batch --process 1 --thread 0 db 2>err && grep -q "one of them" err
'
test_done
