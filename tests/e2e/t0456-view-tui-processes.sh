#!/bin/sh
# SPDX-License-Identifier: MIT
# t0456-view-tui-processes.sh: the threads pane lists the processes of a run with their command
# lines and their threads with the function each started in and the name the program gave it,
# never "rank -1"; Enter on a process shows it alone; the i popup says how the run went.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"
. "$top_srcdir/tests/e2e/processes-lib.sh"

test_expect_success 'setup: a pipeline of two programs, one with a forked child, measured' '
	processes_setup
'
test_expect_success 'the threads pane: processes with command lines, threads by entry and name' '
	tui_start 120 40 db && tui_wait "120x40" && tui_keys p &&
	tui_wait "─ threads: task-clock" &&
	tui_until "grep -Eq \"^ process [0-9]+ +\./producer first \" screen" && cat screen &&
	grep -Eq "^ process [0-9]+ +\./consumer " screen &&
	grep -Eq "^   #[0-9]+ +tid [0-9]+ +reader_thread \"reader\" " screen &&
	grep -Eq "^   #[0-9]+ +tid [0-9]+ +main thread " screen &&
	! grep -q "rank" screen
'
test_expect_success 'Enter on a process shows it alone, and says so in the title' '
	c=$(pid_of consumer) && tui_keys r &&
	row=$(grep -n "^ process $c " screen | cut -d: -f1) &&
	first=$(grep -n "^= all threads" screen | cut -d: -f1) &&
	for i in $(seq $((row - first))); do tui_keys j; done && tui_keys Enter &&
	tui_wait "showing process $c only" && tui_wait "  process $c" && tui_keys q &&
	tui_wait_gone "─ threads" && tui_keys i && tui_wait "command    sh -c" &&
	tui_wait "processes [34]" && tui_wait "events     task-clock" && tui_keys q
'
tui_stop
test_done
