#!/bin/sh
# SPDX-License-Identifier: MIT
# t0457-view-tui-trace.sh: the interactive trace view in a real terminal (tmux): key 4 opens
# it on a traced run of tests/measure-workloads/phases; the rows, the legend and the side pane
# show the phases; zoom and pan in time and in threads, and depth, change the window, the
# rows and the function shown; moving the cursor onto a thread's first phase names phase_a
# with its call path; Enter shows that sample in the top-down tree; a database without
# traces says so.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

phases="$top_builddir/tests/measure-workloads/phases"

# The window of the title line of screen file $1: "FROM TO" in seconds.
window_of() {
	sed -n 's/^ trace  \([0-9.]*\)-\([0-9.]*\) s.*/\1 \2/p' "$1"
}
# Whether window "$2" is narrower than window "$1" by more than a factor $3.
narrower() {
	echo "$1 $2" | awk -v f="$3" '{ exit !(($4 - $3) * f < ($2 - $1)) }'
}
# Whether window "$2" starts later than window "$1".
later() {
	echo "$1 $2" | awk '{ exit !($3 > $1) }'
}

test_expect_success 'setup: a traced run of four threads in phases' '
	measure -t -o m "$phases" 60 >phases.out && prof -o db m >/dev/null 2>&1 &&
	prof --no-traces -o db-nt m >/dev/null 2>&1
'
test_expect_success '4 opens the trace view: rows, legend, the phases' '
	tui_start 150 30 db &&
	tui_wait "Top-down" && tui_keys 4 &&
	tui_wait "^ trace .*depth [0-9]+/[0-9]+" &&
	tui_wait "all threads" &&
	tui_wait "[A-Z] phase_a" && tui_wait "[A-Z] phase_b" &&
	tui_screen >s0 && grep -q "^-[0-9]* phases" s0
'
test_expect_success 'zoom out and in in threads: rows of two threads, then one' '
	tui_keys "}" && tui_wait "^  2 threads " && tui_wait "2 threads a row" &&
	tui_keys "{" && tui_wait_gone "^  2 threads "
'
test_expect_success 'the cursor on a thread in its first phase: phase_a and its call path' '
	tui_keys j j Right Right Right && tui_wait "phase_a: [0-9]+ samples? in the bin" &&
	tui_wait "call path:" && tui_wait "> *[0-9]+ phase_a" && tui_wait " worker"
'
test_expect_success 'depth: [ goes up to the worker, ] comes back' '
	tui_keys "[" && tui_wait "worker: [0-9]+ samples? in the bin" &&
	tui_wait "[A-Z] worker" && tui_keys "]" && tui_wait "phase_a: [0-9]+ samples?"
'
test_expect_success 'zoom in twice, pan, and back to the whole run' '
	tui_screen >s1 && w1=$(window_of s1) && test -n "$w1" &&
	tui_keys + + && tui_until "! grep -q \"^ trace  $w1 \" screen" &&
	w2=$(window_of screen) && echo "$w1 / $w2" && narrower "$w1" "$w2" 3.5 &&
	tui_keys L && tui_until "! grep -q \"^ trace  $w2 \" screen" &&
	w3=$(window_of screen) && echo "$w2 / $w3" && later "$w2" "$w3" &&
	tui_keys 0 && tui_wait "^ trace  0.000-"
'
test_expect_success 'Enter: the sample in the top-down tree' '
	tui_keys Enter && tui_wait "\[1 Top-down\]" &&
	{ tui_until "grep -q phase_a screen" || { cat screen; false; }; } &&
	tui_keys q && tui_exited
'
test_expect_success 'a database without traces: 4 says how to get them' '
	tui_start 120 24 db-nt && tui_wait "Top-down" && tui_keys 4 &&
	tui_wait "no traces in this database: measure the program with measure -t" &&
	tui_keys q && tui_exited
'
test_done
