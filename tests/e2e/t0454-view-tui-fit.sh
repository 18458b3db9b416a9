#!/bin/sh
# SPDX-License-Identifier: MIT
# t0454-view-tui-fit.sh: view's screens fit the terminal (tmux, 80x24 unless said): the help
# wraps in its box and says how to scroll, the title keeps its help hint, cut labels and
# headers end in an ellipsis (~ in ASCII) and keep (I)/(E), several filters at once from an
# empty prompt, the F-keys of the footer work with TERM=vt100, and rows deeper than the
# indentation limit show their depth.  Databases with known contents (make-viewdb).
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

ready() { tui_wait " [0-9]+/[0-9]+  $1\$"; }

test_expect_success 'setup' '
	make-viewdb small small && make-viewdb deep deep &&
	ln -s small a-database-whose-name-is-long-enough-to-fill-the-title
'
test_expect_success 'help at 80x24: descriptions wrap inside the box, it says how to scroll' '
	tui_start 80 24 --no-hot-path small && ready 80x24 && tui_keys "?" && tui_wait "Keys of view" &&
	tui_wait "└─ lines 1-19 of [0-9]+, ↑↓ PgUp PgDn scroll ─+┘" && tui_keys NPage Down &&
	tui_wait "└─ lines 20-38 of [0-9]+, ↑↓ PgUp PgDn scroll" && tui_screen >s && cat s &&
	grep -Eq "│   \\\\  &  F4       filter: hide scopes matching a glob \(then s: the scopes +│" s &&
	grep -Eq "│ {18}only, their children stay; t or Enter: with their +│" s &&
	grep -Eq "│ {18}subtrees\); several filters all apply; -N drops filter +│" s &&
	grep -Eq "│ {18}N, - drops all +│" s &&
	test "$(sed -n "3,21p" s | grep -Ec "^.{2}│.{74}│")" = 19 &&
	tui_keys End && tui_wait "Marks: \* multiplexed \(scaled\), \? too few samples, ! TMA over threshold +│" &&
	tui_screen | grep -Eq "lines ([0-9]+)-([0-9]+) of \2," && tui_keys Up Up PgUp &&
	tui_wait_gone "Marks: " && tui_keys q && tui_wait_gone "Keys of view"
'
test_expect_success 'help at 120 columns: no line cut either' '
	tui_start 120 30 --no-hot-path small && ready 120x30 && tui_keys F1 && tui_wait "Keys of view" &&
	tui_keys NPage && tui_wait "│ {18}children stay; t or Enter: with their subtrees\); several filters all apply; │" &&
	tui_wait "│ {18}-N drops filter N, - drops all +│" &&
	tui_screen | grep -Eq "│   s              source pane of the selected scope \(S: add a source directory\) +│"
'
test_expect_success 'title at 80x24: the help hint stays, other parts shorten first' '
	tui_start 80 24 --no-hot-path small && ready 80x24 && tui_screen >s && head -n 1 s &&
	head -n 1 s | grep -Eq "^ view small  \[1 Top-down\] 2 3  sort: cpu-clock\(I\) ▼  all threads +\? help$" &&
	tui_keys 3 && tui_wait "^ view small  1 2 \[3 Flat\]  sort: cpu-clock\(I\) ▼  all threads +\? help$" &&
	tui_start 80 24 --no-hot-path a-database-whose-name-is-long-enough-to-fill-the-title && ready 80x24 &&
	tui_screen | head -n 1 >s && cat s &&
	grep -Eq "^ a-database-whose-na[^ ]*…\[1 Top-down\] 2 3  cpu-clock\(I\) ▼  all threads +\? help$" s
'
test_expect_success 'labels cut to fit end in an ellipsis (~ in ASCII), deep rows too' '
	tui_start 80 24 --no-hot-path --keys E small && ready 80x24 && tui_screen >s && cat s &&
	grep -Eq "^ +▾ inlined dot at prog\.c:…  " s &&
	tui_start 80 24 --no-hot-path --ascii --keys E small && ready 80x24 &&
	tui_screen | grep -Eq "^ +- inlined dot at prog\.c:~  " &&
	tui_start 80 24 --no-hot-path --keys E deep && ready 80x24 && tui_keys End && tui_wait " 87/87  80x24\$" &&
	tui_screen | grep -Eq "▾ a_function_whose[a-z_]*… +100 ns"
'
test_expect_success 'values only (%): the cut headers keep (I) and (E)' '
	tui_start 80 24 --no-hot-path small && ready 80x24 && tui_keys % &&
	tui_wait "^ Scope +cpu-clock\(I\)▼ cpu-cl…\(E\)$" &&
	tui_wait "^ ▾ <program root> +1\.00 us  █████       0 s$" &&
	tui_start 80 24 --no-hot-path --ascii small && ready 80x24 &&
	tui_keys % && tui_wait "^ Scope +cpu-clock\(I\)v cpu-cl~\(E\)$"
'
test_expect_success 'filters: the prompt starts empty, several apply at once, -N and - remove' '
	tui_start 80 24 --no-hot-path --keys E small && ready 80x24 && tui_keys "\\" &&
	tui_wait "^filter: hide a glob \(-N drops filter N, - all\): _ " && tui_text fact &&
	tui_keys Enter && tui_wait "hide matches" && tui_keys t &&
	tui_wait "filter 1 .fact.: matches hidden with their subtrees" &&
	tui_wait " \[filter: fact\] 1/[0-9]+  80x24$" && tui_keys E &&
	tui_until "! grep -Eq \"[▾▸·] fact \" screen" && grep -Eq "[▾▸·] sqrt " screen &&
	tui_keys "\\" && tui_wait "^filter: hide a glob \(-N drops filter N, - all\): _  1:fact " &&
	tui_text "*sqrt*" && tui_keys Enter s && tui_wait "filter 2 .\*sqrt\*.: matches hidden" &&
	tui_wait " \[filters: fact \*sqrt\*\] 1/[0-9]+  80x24$" && tui_keys E &&
	tui_until "! grep -Eq \"[▾▸·] (fact|sqrt) \" screen" && cat screen &&
	grep -Eq "· libm\.c:8 " screen && tui_keys "\\" &&
	tui_wait "^filter: hide a glob \(-N drops filter N, - all\): _  1:fact 2:\*sqrt\* " &&
	tui_text -1 && tui_keys Enter && tui_wait "filter 1 removed: fact" &&
	tui_wait " \[filter: \*sqrt\*\] 1/[0-9]+  80x24$" && tui_keys E &&
	tui_until "grep -Eq \"[▾▸·] fact \" screen" && ! grep -Eq "[▾▸·] sqrt " screen &&
	tui_keys "\\" && tui_text -3 && tui_keys Enter && tui_wait "no filter 3 \(there is 1\)" &&
	tui_keys "\\" Enter && tui_wait "no filter added" && tui_wait " \[filter: \*sqrt\*\] " &&
	tui_keys "\\" && tui_text - && tui_keys Enter && tui_wait "filters cleared" &&
	tui_wait_gone "\[filter" && tui_keys E && tui_until "grep -Eq \"[▾▸·] sqrt \" screen"
'
test_expect_success 'TERM=vt100: the F-keys the footer shows work' '
	TUI_ENV="TERM=vt100" tui_start 120 24 --no-hot-path small && ready 120x24 &&
	tui_wait "^ F1Help F2Columns F3Search F4Filter F5Hot\(50%\) F6Sort F7Zoom F8Flatten F10Quit " &&
	tui_keys F5 && tui_wait "hot path \(>= 50%\) ends at prog\.c:13" && tui_keys F7 &&
	tui_wait " \[zoom\] 1/1  120x24$" && tui_keys F8 && tui_wait "work in the flat view" &&
	tui_keys F6 && tui_wait "^sort by column" && tui_keys 0 && tui_wait "sort: name A-Z" &&
	tui_keys F1 && tui_wait "Keys of view" && tui_keys Escape && tui_wait_gone "Keys of view" &&
	tui_keys F10 && tui_exited && test "$(cat view.rc)" = 0
'
test_expect_success 'deep recursion: past the indentation limit, rows show their depth' '
	tui_start 80 24 --no-hot-path --keys E deep && ready 80x24 && tui_screen >s && cat s &&
	grep -Eq "^ {19}▾ rec\.c:7 » recurse " s && grep -Eq "^ {14}\[10\] ▾ recurse " s &&
	grep -Eq "^ {14}\[11\] ▾ rec\.c:7 » recurse " s && tui_keys End && tui_wait " 87/87  80x24\$" &&
	tui_screen >s && grep -Eq "^ {14}\[85\] · rec\.c:21 " s &&
	grep -Eq "^ {14}\[84\] ▾ a_function_whose" s
'
tui_stop
test_done
