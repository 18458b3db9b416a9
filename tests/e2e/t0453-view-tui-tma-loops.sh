#!/bin/sh
# SPDX-License-Identifier: MIT
# t0453-view-tui-tma-loops.sh: view's TMA pane in a real terminal (tmux) on the per-loop
# top-down database of t0404 (tma-loops-lib.sh): search a loop, open the pane, read its
# percentages; go to another loop, to the loop inlined into main, and the pane follows, each
# time with the values that make-tma-mfile -p computed for that loop (to the pane's 0.1 %).
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"
. "$top_srcdir/tests/e2e/tma-loops-lib.sh"

tma_loops_need
{ tma_loops_place && tma_loops_db topdown; } >setup.out 2>&1 ||
	{ cat setup.out; skip_all "cannot build the per-loop TMA database"; }
stream=$(tma_loops_line stream)
inner=$(tma_loops_line branchy-inner)
norm=$(tma_loops_line norm)

# tui_goto LINE: search the loop whose header is at LINE, keep the match; the open TMA pane
# names it.
tui_goto() {
	tui_keys / && tui_text "loop at tma-loops.c:$1" && tui_keys Enter &&
		tui_wait "─ TMA: loop at tma-loops.c:$1 ─"
}

test_expect_success 'the stream loop: its pane shows the loop, memory bound' '
	tui_start 130 40 tma-db && tui_wait "130x40" && tui_keys t && tui_wait "─ TMA" &&
	tui_goto $stream &&
	tui_until "python3 \"\$tma_loops_py\" pane tma-loops.want loop-stream screen" &&
	cat screen && grep -Eq "│»      Memory Bound .* !" screen
'
test_expect_success 'another loop: the pane follows, the inner branchy loop mispredicts' '
	tui_goto $inner &&
	tui_until "python3 \"\$tma_loops_py\" pane tma-loops.want loop-branchy-inner screen" &&
	cat screen && grep -Eq "│»      Misprediction .* !" screen
'
test_expect_success 'the loop inlined into main, under its inline call site' '
	tui_goto $norm &&
	tui_until "python3 \"\$tma_loops_py\" pane tma-loops.want loop-norm screen" &&
	cat screen && grep -q "norm2" screen
'
test_expect_success 'k to the row above the stream loop (its function): the function values' '
	tui_goto $stream && tui_keys k &&
	tui_wait "─ TMA: stream ─" &&
	tui_until "python3 \"\$tma_loops_py\" pane tma-loops.want fn-stream screen"
'
tui_stop
test_done
