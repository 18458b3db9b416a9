#!/bin/sh
# SPDX-License-Identifier: MIT
# t0460-view-tui-mca.sh: the llvm-mca pane (m) in a real terminal, on the demo: view opens
# along the hot path into examples/matmul.c's inner loop, m shows that loop's predicted
# throughput beside its measured share; Tab gives the pane the keys to scroll it, and back; on a scope outside any loop the
# pane says so; m closes it.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

command -v llvm-mca >/dev/null 2>&1 || ls /usr/bin/llvm-mca-* >/dev/null 2>&1 ||
	skip_all "no llvm-mca (Debian: apt-get install llvm)"
command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the demo"

test_expect_success 'setup: the demo measured, its structure and database' '
	cc -g -O2 -o matmul "$top_srcdir/examples/matmul.c" &&
	measure -e task-clock@f1000 -o m ./matmul 500 >measure.out 2>&1 &&
	struct m >struct.out 2>&1 && prof -o db m >prof.out 2>&1
'
test_expect_success 'm on the hot loop: the prediction beside the measurement' '
	tui_start 120 50 db && tui_wait "loop at matmul\.c:24" && tui_keys m &&
	tui_wait "─ llvm-mca: " &&
	tui_until "grep -Eq \"^   block_rthroughput [0-9.]+ cycles per iteration\" screen" &&
	cat screen &&
	grep -Eq "^ loop at .*matmul\.c:24 in (multiply|main)$" screen &&
	grep -Eq "^ measured: task-clock [0-9.]+ [mun]?s, [0-9.]+% of the program$" screen &&
	grep -Eq "^   [0-9.]+ cycles per iteration simulated" screen &&
	grep -Eq "^   ipc [0-9.]+ " screen && grep -q "^   resource pressure per iteration:" screen
'
test_expect_success 'Tab gives the pane the keys: j scrolls it' '
	tui_keys Tab && tui_keys j && tui_wait_gone "^ loop at .*matmul" &&
	tui_wait "^   module .*matmul, header 0x" && tui_keys Tab
'
test_expect_success 'outside a loop the pane says so; m closes it' '
	tui_keys g && tui_wait "─ llvm-mca: <program root>" &&
	tui_wait "no loop here: select a loop" && tui_keys m && tui_wait_gone "─ llvm-mca" &&
	tui_keys q && tui_exited
'
tui_stop
test_done
