#!/bin/sh
# SPDX-License-Identifier: MIT
# t0452-view-tui-terminal.sh: view and its terminal (tmux): resizes down to 40x10 and back, the
# terminal restored after Ctrl-C, SIGTERM and a crash (SIGSEGV), a corrupt database (at open,
# and one that stops reading mid-session), names with escape sequences shown escaped, no colour
# (--no-color, NO_COLOR, TERM=vt100), ASCII (--ascii, a C locale), --keys, the mouse, and the
# bytes written per keypress (bounded).
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

tui_make_db

# The pid of view in the pane (the shell's child).
view_pid() {
	ps -o pid= --ppid "$(tui_format "#{pane_pid}")" | tr -d " " | head -n 1
}
restored() {
	tui_exited && tui_wait "^after-view\\$" && test "$(cat view.rc)" = "$1" &&
	test "$(tui_format "#{alternate_on}")" = 0 && test "$(tui_format "#{cursor_flag}")" = 1 &&
	test "$(tui_format "#{mouse_any_flag}")" = 0
}

test_expect_success 'resize: 80x24, a tiny 40x10, too small, and back to 120x40' '
	tui_start 120 40 --keys H db && tui_wait "hot path .* 1[0-9]/[0-9]+  120x40" &&
	tui_tmux resize-window -t t -x 80 -y 24 && tui_wait " [0-9]+/[0-9]+  80x24\$" &&
	tui_screen >s && cat s && test "$(wc -l <s)" -eq 24 && grep -q "^ view db  \[1 Top-down\]" s &&
	grep -Eq "^ Scope +task-clock\(I\)▼" s && tui_keys j && tui_wait "^ \?:help q:quit" &&
	tui_tmux resize-window -t t -x 40 -y 10 && tui_wait " [0-9]+/[0-9]+  40x10 *\$" &&
	tui_screen | grep -Eq "^ Scope +task-clock\(I\)▼" &&
	tui_tmux resize-window -t t -x 25 -y 5 && tui_wait "terminal too small \(25x5\)" &&
	tui_tmux resize-window -t t -x 120 -y 40 && tui_wait " 1[0-9]/[0-9]+  120x40\$" &&
	tui_screen | grep -q "F1Help F2Columns"
'
test_expect_success 'names with escape sequences are shown escaped, never sent raw' '
	tui_keys 3 E && tui_wait "/work\\\\e\[31mred\.c" &&
	tui_tmux capture-pane -p -e -t t >ansi && ! grep -q "$(printf "\033")\[31m" ansi &&
	! grep -q "$(printf "\033")\[0;31m" ansi
'
test_expect_success 'bytes written: one row down is small, a page down bounded (pipe-pane)' '
	tui_start 120 20 --no-hot-path --keys E db &&
	tui_until "grep -Eq \" 1/[0-9]+  120x20\\$\" screen" &&
	n=$(sed -n "s/.* 1\/\([0-9]*\)  120x20\$/\1/p" screen) && test "$n" -gt 20 &&
	j=$(tui_bytes bytes-j j -- " 2/$n  120x20\$") &&
	k=$(tui_bytes bytes-k k -- " 1/$n  120x20\$") &&
	p=$(tui_bytes bytes-pgdn NPage -- " 1[0-9]/$n  120x20\$") &&
	tui_screen | sed -n 3p | grep -qv "<program root>" &&
	echo "# view bytes per keypress at 120x20: j $j, k $k, PgDn $p" >&3 &&
	test "$j" -gt 0 && test "$j" -lt 1024 && test "$k" -lt 1024 &&
	test "$p" -gt "$j" && test "$p" -lt 8192
' 3>&1
test_expect_success 'the mouse (SGR 1006): a click selects, a double-click collapses, the wheel scrolls' '
	TUI_ENV="TERM=xterm-256color" tui_start 120 40 --no-hot-path --keys E db &&
	tui_until "grep -Eq \" 1/[0-9]+  120x40\\$\" screen" &&
	n=$(sed -n "s/.* 1\/\([0-9]*\)  120x40\$/\1/p" screen) &&
	tui_text "$(printf "\033[<0;10;5M\033[<0;10;5m")" && tui_wait " 3/$n  120x40\$" &&
	tui_text "$(printf "\033[<65;10;5M")" && tui_wait " 6/$n  120x40\$" &&
	tui_text "$(printf "\033[<0;10;4M\033[<0;10;4m\033[<0;10;4M\033[<0;10;4m")" &&
	tui_wait " 2/[0-9]+  120x40\$" && ! tui_screen | grep -q " 2/$n  120x40"
'
test_expect_success 'Ctrl-C quits and restores the terminal' '
	tui_start 100 30 db && tui_wait "100x30" && tui_keys C-c && restored 130
'
test_expect_success 'SIGTERM quits and restores the terminal' '
	tui_start 100 30 db && tui_wait "100x30" && pid=$(view_pid) && test -n "$pid" &&
	kill -TERM "$pid" && restored 143
'
test_expect_success 'a crash (SIGSEGV) restores the terminal and still dies of the signal' '
	tui_start 100 30 db && tui_wait "100x30" && pid=$(view_pid) && test -n "$pid" &&
	kill -SEGV "$pid" && restored 139
'
test_expect_success 'a corrupt database: a clear error, the terminal untouched' '
	cp -r db bad && size=$(wc -c <bad/summary.fdb) &&
	head -c $((size / 2)) db/summary.fdb >bad/summary.fdb &&
	tui_start 100 30 bad && tui_exited && cat view.err && test "$(cat view.rc)" -ne 0 &&
	grep -q "summary.fdb" view.err && tui_wait "^after-view\\$" &&
	test "$(tui_format "#{alternate_on}")" = 0
'
test_expect_success 'the database stops reading mid-session: its message, the terminal restored' '
	make-viewdb large --contexts 100000 --threads 2 big &&
	tui_start 100 30 --no-hot-path big && tui_wait " 1/[0-9]+  100x30\$" &&
	size=$(wc -c <big/summary.fdb) &&
	head -c "$size" /dev/zero | dd of=big/summary.fdb conv=notrunc 2>/dev/null &&
	tui_keys E && restored 1 && cat view.err &&
	grep -q "^view: .*big/summary.fdb: " view.err
'
test_expect_success 'bad --keys: an error before the terminal is touched' '
	tui_start 100 30 --keys "j<Nope>" db && tui_exited && test "$(cat view.rc)" -ne 0 &&
	tui_wait "^after-view\\$" && test "$(tui_format "#{alternate_on}")" = 0
'
sgr_colour='\[(3[0-7]|4[0-7]|38;5|48;5)'
test_expect_success '--no-color: no colours, the selection in reverse video' '
	tui_start 100 30 --no-hot-path --no-color db && tui_wait "100x30" &&
	tui_tmux capture-pane -p -e -t t >ansi && ! grep -Eq "$sgr_colour" ansi &&
	grep -q "7m" ansi && tui_screen | grep -q "▾ <program root>"
'
test_expect_success 'NO_COLOR and TERM=vt100: no colours either' '
	TUI_ENV="NO_COLOR=1" tui_start 100 30 --no-hot-path db && tui_wait "100x30" &&
	tui_tmux capture-pane -p -e -t t >ansi && ! grep -Eq "$sgr_colour" ansi &&
	TUI_ENV="TERM=vt100" tui_start 100 30 --no-hot-path db && tui_wait "100x30" &&
	tui_tmux capture-pane -p -e -t t >ansi && ! grep -Eq "$sgr_colour" ansi &&
	tui_keys H && tui_wait "hot path"
'
test_expect_success 'colour by default: marks and bars are coloured' '
	tui_start 100 30 db && tui_wait "100x30" &&
	tui_tmux capture-pane -p -e -t t >ansi && grep -Eq "$sgr_colour" ansi
'
test_expect_success '--ascii: ASCII tree, bars and frames in a UTF-8 terminal' '
	tui_start 100 30 --ascii --keys "H3E" db && tui_wait "100x30" &&
	tui_until "grep -q \"^ - <program root> .* #####\" screen" && cat screen &&
	grep -Eq "^   - (work|libc\.so\.6) " screen && ! grep -q "[▾▸·█─│»«▼]" screen &&
	grep -q "sort: task-clock(I) v" screen
'
test_expect_success 'a C locale: ASCII everywhere' '
	TUI_ENV="LANG=C LC_ALL=C" tui_start 100 30 --keys "H" db && tui_wait "100x30" &&
	tui_until "grep -q \"hot path\" screen" && cat screen &&
	! grep -q "[▾▸·█─│»«▼]" screen && grep -q ":[0-9]* >> hot_inner" screen
'
test_expect_success '--keys replays keys before the first screen: flat view, search, source' '
	tui_start 120 40 --keys "3E/cold_setup<Enter>s" db &&
	tui_wait "\[3 Flat\]" && tui_wait "─ source .*red\.c" &&
	tui_wait "for \(long k = 0; k < 3; k\+\+\)" && tui_screen | grep -q "» cold_setup"
'
if command -v make-viewdb >/dev/null 2>&1 && make-viewdb small small-db >/dev/null 2>&1; then
	test_expect_success 'the known database (make-viewdb): exact values, a hostile name escaped' '
		tui_start 120 40 --no-hot-path --keys E --metric cpu-clock small-db && tui_until "grep -q \" 1/[0-9]*  120x40\" screen" &&
		cat screen && grep -Eq "» evil\\\\e\[2J\\\\nname\\\\xff\\\\xfe " screen &&
		grep -Eq "^ +· prog\.c:13 +600 ns +59\.7% .* 600 ns +59\.7%" screen &&
		grep -Eq "^ +▾ loop at prog\.c:12 +930 ns +92\.5% " screen &&
		tui_tmux capture-pane -p -e -t t >ansi && ! grep -q "$(printf "\033")\[2J" ansi
	'
else
	skip "make-viewdb is not built" "the known database (make-viewdb)"
fi
tui_stop
test_done
