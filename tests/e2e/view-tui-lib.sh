# SPDX-License-Identifier: MIT
# view-tui-lib.sh: the tmux harness of view's terminal tests (sourced after test-lib.sh).
#
#   tui_start W H [VIEW ARGS...]   run view in a private tmux server (own -L socket, no
#                                  tmux.conf, fixed size); the pane keeps a shell afterwards
#   tui_keys KEY...                tmux send-keys (key names: Enter Escape Down NPage F1 C-o M-Left)
#   tui_text STRING                send STRING literally
#   tui_wait REGEX                 poll the screen until REGEX (grep -E) matches, else fail
#   tui_screen                     the visible screen as text, trailing spaces removed
#   tui_bytes FILE KEY... -- REGEX bytes the program writes for KEY..., waiting for REGEX
#   tui_stop                       kill the server
# VIEW (default: view from the build tree) is the program run.
command -v tmux >/dev/null 2>&1 || skip_all "tmux is not installed"
tui_term=tmux-256color
infocmp "$tui_term" >/dev/null 2>&1 || tui_term=screen
infocmp "$tui_term" >/dev/null 2>&1 || skip_all "no terminfo entry for tmux-256color or screen"
locale -a 2>/dev/null | grep -qi '^c\.utf-\?8$' || skip_all "the C.UTF-8 locale is missing"
# The screen is UTF-8: so are the patterns (grep -E on multibyte glyphs).
LC_ALL=C.UTF-8
export LC_ALL
VIEW=${VIEW:-view}
# Every tui_start makes a new server (a dying one may still hold the old socket); test bodies
# run in subshells, so the current socket's name lives in a file.
echo "fathom-view-test-$$-0" >"$TEST_TMP/.tui-sock"
: >"$TEST_TMP/.tui-socks"
tui_kill_all() {
	for s in $(cat "$TEST_TMP/.tui-socks" 2>/dev/null); do
		tmux -L "$s" kill-server 2>/dev/null
		# tmux leaves the socket of a killed server behind.
		rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$s"
	done
}
trap 'tui_kill_all; test "${KEEP_TMP:-}" || rm -rf "$TEST_TMP"' EXIT

tui_tmux() {
	tmux -L "$(cat "$TEST_TMP/.tui-sock")" "$@"
}

tui_q() {
	printf "'"
	printf '%s' "$1" | sed "s/'/'\\\\''/g"
	printf "'"
}

# tui_start W H ARGS...: the pane runs a shell that prints a prompt, runs view, records its
# exit status in $TEST_TMP/view.rc and prints a second prompt.  The shell survives Ctrl-C (a
# trap), which reaches view as it would from an interactive shell.
tui_start() {
	w=$1 h=$2
	shift 2
	args=""
	for a in "$@"; do
		args="$args $(tui_q "$a")"
	done
	rm -f "$TEST_TMP/view.rc"
	tui_tmux kill-server 2>/dev/null
	n=$(wc -l <"$TEST_TMP/.tui-socks")
	echo "fathom-view-test-$$-$((n + 1))" >"$TEST_TMP/.tui-sock"
	cat "$TEST_TMP/.tui-sock" >>"$TEST_TMP/.tui-socks"
	tui_tmux -f /dev/null new-session -d -s t -x "$w" -y "$h" \
		"trap true INT; cd $(tui_q "$TEST_TMP") && printf 'before-view\$ \\n' && \
		 env TERM=$tui_term LANG=C.UTF-8 LC_ALL=C.UTF-8 ESCDELAY=25 ${TUI_ENV:-} \
		 $(tui_q "$VIEW") $args 2>view.err; echo \$? >view.rc.tmp; mv view.rc.tmp view.rc; \
		 printf 'after-view\$ \\n'; exec sleep 600" || return 1
	tui_tmux set-option -t t remain-on-exit on >/dev/null 2>&1
	return 0
}

tui_keys() {
	tui_tmux send-keys -t t "$@"
}

tui_text() {
	tui_tmux send-keys -t t -l -- "$1"
}

tui_screen() {
	tui_tmux capture-pane -p -t t | sed 's/ *$//'
}

# tui_poll CMD WHAT: run shell code CMD until it succeeds (never sleep a fixed time before
# asserting).  The only bound is a safety cap against a hang, in wall-clock seconds
# (TUI_WAIT_SECONDS, default 300), far above what the slowest, busiest machine needs; past it,
# "timeout waiting for WHAT" and the screen.
tui_poll() {
	tui_poll_end=$(($(date +%s) + ${TUI_WAIT_SECONDS:-300}))
	until eval "$1"; do
		if [ "$(date +%s)" -gt "$tui_poll_end" ]; then
			echo "timeout waiting for $2"
			echo "--- screen:"
			tui_screen
			return 1
		fi
		sleep 0.05
	done
	return 0
}

tui_wait() {
	tui_pattern=$1
	tui_poll 'tui_screen | grep -Eq -- "$tui_pattern"' ": $1"
}

# tui_wait_gone REGEX: poll until REGEX no longer matches.
tui_wait_gone() {
	tui_pattern=$1
	tui_poll '! tui_screen | grep -Eq -- "$tui_pattern"' "the end of: $1"
}

# tui_until CMD: poll until shell code CMD succeeds on the screen in the file "screen", and
# the screen read once more is the same (curses may be half-way through drawing a frame when
# the screen is read, and the test's later greps read this file).
tui_until() {
	tui_check=$1
	tui_poll 'tui_screen >screen && eval "$tui_check" && tui_screen >screen.again &&
		cmp -s screen screen.again' ": $1"
}

# first_before A B: on the screen, the first line matching A is above the first matching B.
first_before() {
	awk -v a="$1" -v b="$2" '$0 ~ a && !x {x = NR} $0 ~ b && !y {y = NR}
		END {exit !(x && y && x < y)}' screen
}

tui_format() {
	tui_tmux display-message -p -t t "$1"
}

# tui_exited: wait until view has exited; its status is then in view.rc.
tui_exited() {
	tui_poll '[ -f "$TEST_TMP/view.rc" ]' "view to exit"
}

# tui_bytes OUT KEY... -- REGEX: the bytes written to the terminal for KEY..., after the screen
# shows REGEX, into OUT; prints the count.
tui_bytes() {
	out=$1
	shift
	keys=""
	while [ "$1" != "--" ]; do
		keys="$keys $1"
		shift
	done
	regex=$2
	rm -f "$out"
	: >"$out"
	tui_tmux pipe-pane -t t -o "cat >>$(tui_q "$out")" || return 1
	# shellcheck disable=SC2086
	tui_keys $keys || return 1
	tui_wait "$regex" || return 1
	tui_tmux pipe-pane -t t
	# The pipe's reader may still be writing: wait until the size holds still.
	last=-1 i=0
	while :; do
		n=$(wc -c <"$out")
		[ "$n" = "$last" ] && break
		last=$n
		i=$((i + 1))
		[ "$i" -gt 100 ] && break
		sleep 0.1
	done
	echo "$n"
}

tui_stop() {
	tui_tmux kill-server 2>/dev/null
	return 0
}

# tui_make_db: build $TEST_TMP/db by the pipeline (measure, struct, prof) from a small program
# whose source file name holds an escape sequence: 4 threads, hot_inner() doing ~97 % of the
# work in a loop nest, cold_setup() a little.  Skips everything when it cannot be built here.
tui_make_db() {
	command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test program"
	src=$(printf 'work\033[31mred.c')
	cat >"$src" <<'PROGRAM'
#include <pthread.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) void hot_inner(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		for (long j = 0; j < 1000; j++)
			x += (double)(i ^ j) * 1e-9;
	sink += x;
}

__attribute__((noinline)) void cold_setup(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	sink += x;
}

__attribute__((noinline)) void compute(long n)
{
	hot_inner(n);
}

static void *worker(void *arg)
{
	compute((long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	pthread_t t[3];
	for (long k = 0; k < 3; k++)
		pthread_create(&t[k], NULL, worker, (void *)(n * (k + 1) / 2));
	cold_setup(n * 100);
	compute(n);
	for (int k = 0; k < 3; k++)
		pthread_join(t[k], NULL);
	return 0;
}
PROGRAM
	cc -g -O1 -o work "$src" -lpthread 2>cc.err || skip_all "cannot compile the test program"
	measure -o m -e task-clock ./work 80000 >measure.out 2>&1 ||
		skip_all "measure cannot sample on this machine"
	struct m >struct.out 2>&1 || { cat struct.out; return 1; }
	prof -o db m >prof.out 2>&1 || { cat prof.out; return 1; }
	return 0
}
