#!/bin/sh
# SPDX-License-Identifier: MIT
# t0450-view-tui.sh: view's interactive tree in a real terminal (tmux): the first screen, moving,
# expanding and collapsing, the three views, sorting, the hot path, zoom, flatten, search,
# filters, callers, the navigation history, the columns, help and info, and q restoring the
# terminal.  The database is measured from a small program (tui_make_db).
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

tui_make_db

pos() { tui_wait " $1  [0-9]+x[0-9]+ *\$"; }
total() { tui_screen | sed -n "s/.* [0-9]*\/\([0-9]*\)  [0-9]*x[0-9]*\$/\1/p"; }

test_expect_success 'the first screen: title, header, tree, footer with position and size' '
	tui_start 120 40 db && tui_wait " [0-9]+/[0-9]+  120x40\$" &&
	tui_until "grep -q \"loop at work.*red\.c:1[01]\" screen" && cp screen s && cat s &&
	grep -q "\[1 Top-down\] 2 Bottom-up  3 Flat" s &&
	grep -q "^ view db " s && grep -q "sort: task-clock(I) ▼  all threads" s &&
	grep -Eq "^ Scope +task-clock\(I\)▼ +task-clock\(E\)" s &&
	grep -Eq "^ ▾ <program root> +[0-9.]+ [mun]?s 100\.0% +█████" s &&
	grep -q "F1Help F2Columns" s && grep -Eq " [0-9]+/[0-9]+  120x40$" s
'
test_expect_success '--no-hot-path: the root expanded only, the cursor on it' '
	tui_start 120 40 --no-hot-path db && tui_wait " 1/[0-9]+  120x40\$" &&
	tui_until "grep -Eq \"^ ▾ <program root> \" screen" && ! grep -q "loop at" screen &&
	tui_keys q && tui_exited && tui_start 120 40 db && tui_wait "120x40"
'
test_expect_success 'hot path (H) from the root ends in the hot loop nest, with the threshold' '
	# It ends at the inner loop, or at one of its lines when one holds half of the time (how
	# the samples split between the loop test and its body depends on the machine).
	tui_keys g H && tui_wait "hot path \(>= 50%\) ends at (loop at )?work.*red\.c:1[01]" &&
	tui_screen >s && cat s &&
	grep -Eq "▾ loop at work\\\\e\[31mred\.c:9 " s &&
	grep -Eq "▾ [^ ]+:[0-9]+ » hot_inner " s
'
test_expect_success 'g, G, j, k, arrows, Home, End, PgDn, PgUp, Space, b, C-d, C-u move' '
	n=$(total) && test "$n" -ge 10 && tui_keys g && pos 1/$n && tui_keys j && pos 2/$n &&
	tui_keys Down Down && pos 4/$n && tui_keys k && pos 3/$n && tui_keys Up && pos 2/$n &&
	tui_keys G && pos $n/$n && tui_keys Home && pos 1/$n && tui_keys End && pos $n/$n &&
	tui_keys g NPage && pos $n/$n && tui_keys PPage && pos 1/$n && tui_keys Space &&
	pos $n/$n && tui_keys b && pos 1/$n && tui_keys C-d && pos "([4-9]|1[0-9])/$n" &&
	tui_keys C-u && pos 1/$n
'
test_expect_success 'Enter, l, h, Right, Left, +, -, *, E, C expand and collapse' '
	tui_keys C && pos 1/1 && tui_keys Enter && pos 1/3 && tui_keys j l && pos 2/4 &&
	tui_keys l && pos 3/4 && tui_keys h && pos 2/4 && tui_keys h && pos 2/3 &&
	tui_keys Right && pos 2/4 && tui_keys Left Left && pos 1/3 && tui_keys + && pos 1/5 &&
	tui_keys + && pos 1/7 && tui_keys - && pos 1/5 && tui_keys "*" && all=$(total) &&
	test "$all" -gt 15 && tui_keys C && pos 1/1 && tui_keys E && pos 1/$all
'
test_expect_success 'sort: I inverts, < > step through the columns, F6 n and Alt-n pick one' '
	tui_keys C Enter && pos 1/3 && tui_keys I && tui_wait "sort: task-clock\(I\) ▲" &&
	tui_until "first_before \" _start \" __GI___clone3" &&
	tui_keys I "<" && tui_wait "sort: name A-Z" && tui_keys ">" ">" &&
	tui_wait "sort: task-clock\(E\) ▼" && tui_wait "task-clock\(E\)▼" &&
	tui_keys F6 1 && tui_wait "sort: task-clock\(I\) ▼" && tui_keys M-2 &&
	tui_wait "sort: task-clock\(E\) ▼" && tui_keys M-0 && tui_wait "sort: name A-Z" &&
	tui_keys M-1 && tui_wait "sort: task-clock\(I\) ▼" &&
	tui_until "first_before __GI___clone3 \" _start \""
'
test_expect_success 'L sets the hot-path threshold; at 99 % the path stops at the root' '
	tui_keys g L C-u && tui_text 99 && tui_keys Enter && tui_wait "hot-path threshold 99%" &&
	tui_keys H && tui_wait "hot path \(>= 99%\) ends at <program root>" &&
	tui_keys L C-u && tui_text 50 && tui_keys Enter && tui_wait "hot-path threshold 50%" &&
	tui_keys j && tui_wait "F5Hot\(50%\)"
'
test_expect_success 'views: 2 bottom-up (functions with callers), 3 flat (module > file > function)' '
	tui_keys 2 && tui_wait "\[2 Bottom-up\]" && tui_keys g E && tui_wait "« compute at " &&
	tui_screen >s && grep -Eq "^   ▾ hot_inner " s &&
	tui_keys 3 && tui_wait "\[3 Flat\]" && tui_keys E && tui_wait "work\\\\e\[31mred\.c" &&
	tui_screen >s && cat s && grep -Eq "^   ▾ work +[0-9]" s &&
	grep -Eq "^     ▾ /.*/work\\\\e\[31mred\.c " s
'
test_expect_success 'flat view: f flattens one level, F unflattens' '
	tui_keys f && tui_wait "flattened 1 level" && tui_screen >s &&
	! grep -Eq "^   ▾ work +[0-9]" s && tui_keys F && tui_wait "flattened 0 levels" &&
	tui_keys 1 && tui_wait "\[1 Top-down\]" && tui_keys f && tui_wait "work in the flat view"
'
test_expect_success 'zoom: z re-roots at the selection, Z and Backspace zoom out' '
	tui_keys g && tui_text /hot_inner && tui_keys Enter && tui_keys z &&
	tui_wait "\[zoom\] 1/" && tui_screen >s && grep -Eq "^ ▾ ([^ ]+:[0-9]+ » )?hot_inner" s &&
	tui_keys Z && tui_wait_gone "\[zoom\]" && tui_keys z && tui_wait "\[zoom\]" &&
	tui_keys BSpace && tui_wait_gone "\[zoom\]" && tui_keys Z && tui_wait "not zoomed"
'
test_expect_success 'search: / reveals the first match as you type, n and N go on, Esc goes back' '
	tui_keys C g && pos 1/1 && tui_text /cold && tui_wait "^/cold_" &&
	tui_wait "^ +· [^ ]+:[0-9]+ » cold_setup|^ +▸ [^ ]+:[0-9]+ » cold_setup" && tui_keys Escape &&
	pos 1/[0-9]+ && tui_text /cold_se && tui_keys Enter && tui_wait "» cold_setup" &&
	tui_keys n && tui_wait "/cold_se: cold_setup" && tui_keys N &&
	tui_wait "/cold_se: [^ ]+:[0-9]+ » cold_setup" &&
	tui_text /nothing-like-this && tui_wait "\(no match\)" && tui_keys Escape &&
	tui_wait_gone "^/nothing-like-this"
'
test_expect_success 'history: C-o and M-Left go back, M-Right forward (views and jumps)' '
	tui_keys 1 g && pos "1/[0-9]+" && tui_keys 2 && tui_wait "\[2 Bottom-up\]" &&
	tui_keys 3 && tui_wait "\[3 Flat\]" && tui_keys C-o && tui_wait "\[2 Bottom-up\]" &&
	tui_keys M-Left && tui_wait "\[1 Top-down\]" && tui_keys M-Right &&
	tui_wait "\[2 Bottom-up\]" && tui_keys M-Right && tui_wait "\[3 Flat\]" &&
	tui_keys M-Right && tui_wait "at the end of the history"
'
test_expect_success 'c: callers of the selected function in the bottom-up view' '
	tui_keys 1 && tui_wait "\[1 Top-down\]" && tui_text /cold_setup && tui_keys Enter &&
	tui_keys c && tui_wait "callers of cold_setup" && tui_wait "\[2 Bottom-up\]" &&
	tui_until "grep -Eq \"▾ cold_setup \" screen && grep -Eq \"« main at \" screen"
'
test_expect_success 'filter: \ hides a glob with its subtree (t) or the scope only (s); - clears' '
	tui_keys 1 g E && tui_keys "\\" && tui_text worker && tui_keys Enter &&
	tui_wait "hide matches" && tui_keys t && tui_wait "matches hidden with their subtrees" &&
	tui_wait "\[filter: worker\]" && tui_keys E && tui_until "grep -q start_thread screen" &&
	cat screen && ! grep -Eq "[▾▸·] worker( |\$)" screen &&
	tui_keys / && tui_text compute && tui_keys Enter &&
	tui_until "grep -q \"» compute\" screen" && cat screen &&
	! grep -Eq "[▾▸·] worker( |\$)" screen && test "$(grep -c "» compute" screen)" = 1 &&
	tui_keys g &&
	tui_keys "\\" && tui_text -1 && tui_keys Enter && tui_wait "filter 1 removed: worker" &&
	tui_keys "\\" && tui_text worker && tui_keys Enter s &&
	tui_wait "their children stay" && tui_keys E &&
	tui_until "grep -A1 \"» worker\" screen | grep -q \"» compute\"" &&
	! grep -Eq "[▾▸·] worker( |\$)" screen &&
	tui_keys "\\" && tui_text - && tui_keys Enter && tui_wait "filters cleared" &&
	tui_wait_gone "\[filter"
'
test_expect_success '% cycles value, percent and both; o chooses the columns' '
	tui_keys % && tui_wait "^ ▾ <program root> +[0-9.]+ [mun]?s +█" && tui_screen >s &&
	! grep -q "100.0%" s && tui_keys % && tui_wait "^ ▾ <program root> +100\.0% +█" &&
	tui_keys % && tui_wait "<program root> +[0-9.]+ [mun]?s 100\.0%" &&
	tui_keys o && tui_wait "Columns  \(Enter or Space toggles" && tui_keys j Enter &&
	tui_wait "\[ \] exclusive columns" && tui_keys q && tui_wait_gone "Columns  \(" &&
	tui_screen >s && ! grep -q "task-clock(E)" s &&
	tui_keys F2 && tui_wait "\[x\]  1\. task-clock " && tui_keys j j j &&
	tui_wait "Metrics shown" && tui_keys Enter && tui_wait "at least one metric stays shown" &&
	tui_keys j Enter && tui_wait "\[x\]  2\. task-clock \(s\)" && tui_keys Escape &&
	tui_wait "task-clock \(s\)\(I\)" && tui_keys o j Enter q && tui_wait "task-clock\(E\)"
'
test_expect_success '? and F1 show the help, i the database; q, Esc close them' '
	tui_keys "?" && tui_wait "Keys of view" && tui_screen >s &&
	grep -q "hot path from the selection" s && grep -q "C-o  M-Left" s && tui_keys j j q &&
	tui_wait_gone "Keys of view" && tui_keys F1 && tui_wait "Keys of view" && tui_keys Escape &&
	tui_wait_gone "Keys of view" && tui_keys i && tui_wait "Database  \(q or Esc closes\)" &&
	tui_wait "contexts   [0-9]+   functions [0-9]+   modules [0-9]+   threads 4" &&
	tui_wait "task-clock  raw" && tui_keys q && tui_wait_gone "Database  \(q"
'
test_expect_success 'C-l redraws the same screen' '
	tui_screen >before && tui_keys C-l &&
	tui_poll "tui_screen >after && cmp -s before after" "the same screen" &&
	test_cmp before after
'
test_expect_success 'q quits, the terminal is restored: alternate screen left, prompt back' '
	test "$(tui_format "#{alternate_on}")" = 1 && tui_keys q && tui_exited &&
	tui_wait "^after-view\\$" && test "$(cat view.rc)" = 0 &&
	test "$(tui_format "#{alternate_on}")" = 0 && test "$(tui_format "#{cursor_flag}")" = 1 &&
	test "$(tui_format "#{mouse_any_flag}")" = 0 && tui_screen | grep -q "^before-view\\$" &&
	! test -s view.err
'
test_expect_success 'F10 quits at once, also from a pane' '
	tui_start 100 30 --keys "s" db && tui_wait "─ source" && tui_keys F10 && tui_exited &&
	test "$(cat view.rc)" = 0 && test "$(tui_format "#{alternate_on}")" = 0
'
tui_stop
test_done
