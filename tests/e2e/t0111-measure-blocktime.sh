#!/bin/sh
# SPDX-License-Identifier: MIT
# t0111-measure-blocktime.sh: -e BLOCKTIME.  A program sleeps 200 ms in sleep_200ms() and blocks
# 300 ms on a pipe read in read_pipe() (a thread writes the pipe after 300 ms): the blocked
# times land at those contexts, within 10% of what the program measured itself, the helper
# thread's own sleep in its file, nothing in the computing function, and no call is ever
# interrupted.  Also: the time source beside it, children (fork, exec), and the errors.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
LIB="$top_builddir/measure/.libs/libmeasure.so"

# blocked(FILE ROOT): the BLOCKTIME (metric 0) reaching function ROOT in FILE, in ns.
blocked() { test-tool profile -m 0 -r "$2" "$1" | awk -v f="$2" '$1 == "reach" && $2 == f { print $3 }'; }
# near(VALUE NOMINAL ELAPSED): within 10% of NOMINAL below, and at most 10% over ELAPSED (the
# call's own wall time, which a loaded machine makes longer than nominal).
near() { awk -v v="$1" -v n="$2" -v e="$3" 'BEGIN { printf "%.1f ms (nominal %.0f, call took %.1f)\n",
	v / 1e6, n / 1e6, e / 1e6; exit !(v >= 0.9 * n && v <= 1.1 * e) }'; }

if ! measure -L 2>/dev/null | sed -n '/^Events usable/,/^Events known/p' | grep -q '^  BLOCKTIME '; then
	skip_all "BLOCKTIME is not usable here: $(measure -e BLOCKTIME /bin/true 2>&1 | head -1)"
fi

test_expect_success 'BLOCKTIME with CPUTIME: a metric in ns, and no call interrupted' '
	measure -o m -e BLOCKTIME -e CPUTIME "$W/blocking" >out 2>err && cat out err &&
	grep -q "interrupted=0$" out &&
	! grep -q "also measuring" err &&
	ls m/*.fthm >files && test "$(wc -l <files)" -eq 2 &&
	main=$(grep -e "-0-[0-9]*\.fthm$" files) && fathom-dump "$main" >dump &&
	grep -q "^  \[0\] \"BLOCKTIME\"" dump && grep -q "^  \[1\] \"CPUTIME\"" dump &&
	sed -n "/\"BLOCKTIME\"/,/parent/p" dump | grep -q "unit: ns rate: exact 0 flags: -$"
'
test_expect_success 'the 200 ms sleep is blocked time at sleep_200ms' '
	main=$(grep -e "-0-[0-9]*\.fthm$" files) &&
	near "$(blocked "$main" sleep_200ms)" 200000000 "$(sed -n "s/.*sleep_ns=\([0-9]*\).*/\1/p" out)"
'
test_expect_success 'the 300 ms pipe read is blocked time at read_pipe' '
	main=$(grep -e "-0-[0-9]*\.fthm$" files) &&
	near "$(blocked "$main" read_pipe)" 300000000 "$(sed -n "s/.*read_ns=\([0-9]*\).*/\1/p" out)" &&
	test-tool profile -m 0 -r read_pipe "$main" | grep -q "^function __*read "
'
test_expect_success 'computing is not blocking; it is CPU time' '
	main=$(grep -e "-0-[0-9]*\.fthm$" files) &&
	b=$(blocked "$main" burn) && echo "blocked in burn: ${b:-0}" && test "${b:-0}" -lt 10000000 &&
	test-tool profile -m 1 -r burn "$main" >p && cat p &&
	awk "/^total/ {t=\$2} /^reach burn/ {a=\$3} END { exit !(t > 0 && a >= 0.5 * t) }" p
'
test_expect_success 'the writer thread blocks 300 ms in its own sleep' '
	writer=$(grep -e "-1-[0-9]*\.fthm$" files) &&
	# It lives within the read it ends, whose wall time the program measured.
	near "$(blocked "$writer" write_later)" 300000000 "$(sed -n "s/.*read_ns=\([0-9]*\).*/\1/p" out)"
'
test_expect_success 'BLOCKTIME alone adds the default time source and says so' '
	measure -o a -e BLOCKTIME "$W/blocking" >out 2>err && cat err &&
	grep -q "^measure: -e BLOCKTIME alone: also measuring " err &&
	fathom-dump a/*-0-*.fthm | grep -q "^metrics: 2$"
'
test_expect_success 'through fork and exec: a shell running the program twice' '
	measure -o s -e BLOCKTIME -e CPUTIME sh -c "\"$W/blocking\"; \"$W/blocking\"" >out 2>err &&
	test "$(grep -c "interrupted=0$" out)" -eq 2 &&
	longest=$(sed -n "s/.*sleep_ns=\([0-9]*\).*/\1/p" out | sort -n | tail -1) &&
	n=0 && for f in s/blocking-*-0-*.fthm; do
		near "$(blocked "$f" sleep_200ms)" 200000000 "$longest" || exit 1; n=$((n + 1))
	done && test $n -eq 2 &&
	test-tool profile -m 0 s/*sh-*-0-*.fthm | grep -q "^function \(__\)*wait"
'
test_expect_error 'a misspelling suggests it' 2 'closest known: BLOCKTIME' \
	measure -e BLOCKTIM /bin/true
test_expect_error 'BLOCKTIME takes no rate' 2 'BLOCKTIME takes no period or rate' \
	measure -e BLOCKTIME@100 /bin/true
test_expect_error 'BLOCKTIME is not a perf group member' 2 'BLOCKTIME cannot be in a perf group' \
	measure -e '{task-clock,BLOCKTIME}' /bin/true
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
   [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -ge 2 ]; then
	test_expect_error 'not permitted: says perf_event_paranoid and stops before running' 2 \
		'event BLOCKTIME: not permitted: kernel.perf_event_paranoid is' \
		setpriv --reuid=65534 --regid=65534 --clear-groups \
		measure -o /tmp/t0111-never-$$ -e BLOCKTIME sh -c 'echo t0111-program-ran >&2'
	test_expect_success 'and the program did not run' '! grep -q t0111-program-ran "$TEST_TMP/.stderr"'
else
	skip 'needs root, setpriv and kernel.perf_event_paranoid >= 2' 'not permitted: the message'
fi
test_done
