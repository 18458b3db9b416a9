#!/bin/sh
# SPDX-License-Identifier: MIT
# t0451-view-tui-panes.sh: view's panes in a real terminal (tmux): the source pane (per-line
# values, loop gutter, a missing file and the key that adds a directory, --source-path), the
# threads pane (sorted histogram, imbalance, selecting one thread and back), and the TMA pane
# on a database with top-down metrics (make-tma-mfile: known shares per context) and without.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

tui_make_db

# source_pane_drawn: the whole source pane of test 1 is on the screen in "screen" (one
# snapshot: curses may be half-way through a frame, so every line is checked in one poll).
# The loop's samples fall on its two lines in shares that depend on the machine (on a loaded
# one all of them fell on line 10): one of the two has a value and a bar.
source_pane_drawn() {
	grep -Eq "(for \(long j = 0; j < 1000; j\+\+\)|x \+= \(double\)\(i \^ j\) \* 1e-9;) +[0-9.]+% [█▏▎▍▌▋▊▉]" screen &&
	grep -Eq "┆┆[↻ ] +10│ +for \(long j" screen &&
	grep -Eq "^┆ ?[↻ ] +9│ +for \(long i" screen && grep -Eq "↻ +(9|10)│" screen &&
	grep -Eq "^ +1[0-9]│" screen
}
test_expect_success 'source pane: the hot lines with values, the loop gutter, escaped file name' '
	tui_start 120 40 --keys H db && tui_wait "hot path" && tui_keys s &&
	tui_wait "─ source /.*/work\\\\e\[31mred\.c lines [0-9]+-[0-9]+ ─" &&
	{ tui_until source_pane_drawn || { cat screen; false; }; }
'
test_expect_success 'Tab gives the keys to the source pane: j scrolls it, Esc gives them back' '
	first=$(sed -n "s/^[┆↻ ]* \([0-9][0-9]*\)│.*/\1/p" screen | head -n 1) &&
	tui_keys Tab && tui_wait "─ source" && tui_keys j j &&
	tui_until "test \"\$(sed -n \"s/^[┆↻ ]* \\([0-9][0-9]*\\)│.*/\\1/p\" screen | head -n 1)\" = $((first + 2))" &&
	tui_keys Escape k && tui_wait "hot path|1[0-9]/[0-9]+  120x40" && tui_keys s &&
	tui_wait_gone "─ source"
'
test_expect_success 'a missing source file is named, S adds a directory, --source-path too' '
	mkdir moved && mv work*red.c moved/ &&
	tui_start 120 40 --keys Hs db && tui_wait "source file not found: /.*/work\\\\e\[31mred\.c" &&
	tui_wait "press S to add a directory" && tui_keys S && tui_wait "add a source directory" &&
	tui_text "$TEST_TMP/moved" && tui_keys Enter && tui_wait "source directory added" &&
	tui_wait "for \(long i = 0; i < n; i\+\+\)" && tui_keys q && tui_wait_gone "─ source" &&
	tui_keys q && tui_exited &&
	tui_start 120 40 --source-path "$TEST_TMP/moved" --keys Hs db &&
	tui_wait "for \(long i = 0; i < n; i\+\+\)" && tui_screen | grep -q "─ source .*moved/work" &&
	mv moved/work*red.c .
'
test_expect_success 'threads pane: the 4 threads sorted, with identity and imbalance' '
	tui_start 120 40 --no-hot-path db && tui_wait "120x40" && tui_keys p &&
	tui_wait "─ threads: task-clock\(I\) at <program root>" &&
	tui_until "grep -q \"^ 4 threads  min .* median .* max .*  imbalance max/mean [0-9.]*\" screen" &&
	tui_until "test \$(grep -Ec \"^   #[0-3] +tid [0-9]+ +[^ ].* +[0-9.]+ [mun]?s +[0-9.]+% \" screen) = 4" &&
	cat screen && grep -q "^= all threads (the sum)" screen &&
	grep -Eq "^ process [0-9]+ " screen && ! grep -q "rank" screen &&
	sed -n "s/.* \([0-9.]*\)% .*/\1/p" screen | tail -n 4 >shares && cat shares &&
	sort -rn shares | cmp - shares
'
test_expect_success 'r: Enter on a thread shows only its values, on "all threads" the sum' '
	total=$(sed -n "s/^ ▾ <program root> *\([0-9.]* [mun]*s\) .*/\1/p" screen) &&
	test -n "$total" && tui_keys r && tui_wait "─ threads" && tui_keys j j Enter &&
	tui_wait "showing thread [0-3] only" && tui_wait "  thread [0-3] \(tid [0-9]+\)" &&
	tui_until "grep -q \"^ ▾ <program root>\" screen" &&
	one=$(sed -n "s/^ ▾ <program root> *\([0-9.]* [mun]*s\) .*/\1/p" screen) &&
	test -n "$one" && test "$one" != "$total" &&
	tui_keys g Enter && tui_wait "showing the sum over all threads" && tui_wait "  all threads" &&
	tui_until "grep -q \"^ ▾ <program root> *$total \" screen" && tui_keys q &&
	tui_wait_gone "─ threads"
'
test_expect_success 'TMA pane without TMA metrics says how to measure them' '
	tui_keys t && tui_wait "No TMA \(top-down\) metrics in this database" &&
	tui_wait "measure -e topdown" && tui_keys q && tui_wait_gone "No TMA"
'
tui_stop
mkdir tma-m && make-tma-mfile -c spr -e topdown:all tma-m/tma.fthm >/dev/null &&
	prof -o tma-db tma-m >/dev/null 2>&1 || skip_all "cannot build the TMA database"
test_expect_success 'TMA pane on the right (wide): the tree of a stream context, backend bound' '
	tui_start 130 40 --keys "E<End>kkt" tma-db &&
	tui_wait "│─ TMA: matmul\+0x1300 ─" && tui_until "grep -q \"Memory Bound\" screen" &&
	cat screen && grep -Eq "│»Total Slots +█+ 100\.0%" screen &&
	grep -Eq "│»    Backend Bound +█+[▏▎▍▌▋▊▉]? + 75\.0% !" screen &&
	grep -Eq "│»      Memory Bound +█+[▏▎▍▌▋▊▉]? + 60\.0% !" screen
'
test_expect_success 'the pane follows the selection: a branchy context, bad speculation' '
	tui_keys j && tui_wait "TMA: matmul\+0x1400" &&
	tui_until "grep -Eq \"│»    Bad Speculation .* 35\.[0-9]%\" screen" &&
	grep -Eq "│»      Misprediction .* 30\.0% !" screen
'
test_expect_success 'T cycles the levels as Intel numbers them: 1 is the four categories' '
	tui_tmux resize-window -t t -x 200 -y 40 && tui_wait "200x40" &&
	tui_keys T && tui_wait "TMA \(level 1\)" && tui_until "grep -q \" Backend Bound \" screen" &&
	cat screen && grep -q "Total Slots" screen && grep -q " Retiring " screen &&
	grep -q " Bad Speculation " screen && grep -q " Frontend Bound " screen &&
	! grep -q "Memory Bound" screen && ! grep -q "Core Bound" screen &&
	tui_keys T && tui_wait "TMA \(levels 1-2\)" && tui_wait "Memory Bound" &&
	tui_until "! grep -q \"L1 Bound\" screen" && tui_keys T &&
	tui_wait "TMA \(levels 1-3\)" && tui_wait "L1 Bound .*%.* of cycles" &&
	tui_until "! grep -q \"Memory Bound .* of cycles\" screen" && tui_keys T T &&
	tui_wait "TMA: matmul\+0x1400" && tui_tmux resize-window -t t -x 130 -y 40 &&
	tui_wait "130x40"
'
test_expect_success 'at 80x24 the TMA pane is below the tree' '
	tui_tmux resize-window -t t -x 80 -y 24 && tui_wait "80x24" &&
	tui_wait "^─ TMA: matmul\+0x1400 ─" && tui_until "grep -Eq \"^»Total Slots\" screen"
'
tui_stop
test_done
