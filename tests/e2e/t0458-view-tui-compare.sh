#!/bin/sh
# SPDX-License-Identifier: MIT
# t0458-view-tui-compare.sh: view A B in a real terminal (tmux) on make-viewdb's two top-down
# databases (tma, and tma-after: the stream line kern.c:6 less backend bound, kern.c:8 10 %
# more cpu-clock): the title, the columns of both runs and the change, the order by the change,
# the TMA pane with both breakdowns and the change of each node, the threads pane with each
# run's threads, and scopes of one run marked.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

test_expect_success 'setup' 'make-viewdb tma T1 && make-viewdb tma-after T2 && make-viewdb small S'
test_expect_success 'the title names both; the columns and the order are the change' '
	tui_start 160 30 T1 T2 && tui_wait "160x30" && tui_screen >screen && cat screen &&
	grep -q "view T1 vs T2 " screen && grep -q "sort: B-A:cpu-clock(I) ▼" screen &&
	grep -q "A:cpu-clock(I) .* B:cpu-clock(I) .* B-A:cpu-clock(I)▼" screen &&
	grep -Eq "kern.c:8 +1.00 us +33.3% .* 1.10 us +35.5% .* \+100 ns +\+10%" screen
'
test_expect_success 'the first row under the loop is the one that changed' '
	grep -A1 "loop at kern.c:5" screen | tail -1 | grep -q "kern.c:8"
'
test_expect_success 'the TMA pane: A -> B and the change of each node' '
	tui_keys / && tui_text "kern.c:6" && tui_keys Enter && tui_keys t &&
	tui_wait "─ TMA A -> B: kern.c:6 ─" &&
	tui_until "grep -Eq \"Backend Bound .* 75.0% ->  50.0%  -25.0\" screen" &&
	cat screen && grep -Eq "Retiring .* 15.0% ->  40.0%  \+25.0" screen &&
	grep -Eq "Frontend Bound .*  8.0% ->   8.0%   \+0.0" screen
'
test_expect_success 'the threads pane: each run'"'"'s thread with its own value' '
	tui_keys t p && tui_wait "─ threads: cpu-clock\(I\) at kern.c:6" &&
	tui_until "grep -Eq \"#0 +A tid\" screen && grep -Eq \"#1 +B tid\" screen" &&
	cat screen && grep -Eq "A process 1000 " screen && grep -Eq "B process 1000 " screen
'
test_expect_success 'scopes of one run are marked' '
	tui_start 160 30 S T1 && tui_wait "160x30" && tui_keys / && tui_text "loop at prog.c" &&
	tui_keys Enter && tui_until "grep -q \"\\[A only\\] loop at prog.c:12 \" screen" &&
	cat screen
'
test_expect_success 'q quits' '
	tui_keys q && tui_exited 0
'
test_done
