#!/bin/sh
# SPDX-License-Identifier: MIT
# t0113-measure-startup.sh: what a measured process sets up at start is what the program would
# have had: signals it inherited ignored stay ignored (measure takes only those left at their
# default), and its command line is recorded as given; its log ends with the summary.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'inherited ignored signals stay ignored' '
	sh -c "trap \"\" HUP PIPE; exec grep ^SigIgn /proc/self/status" >bare &&
	measure -o ig -e task-clock sh -c "trap \"\" HUP PIPE; exec grep ^SigIgn /proc/self/status" \
		>measured 2>err &&
	cat bare measured && test_cmp bare measured &&
	measure -o hup -e task-clock sh -c "trap \"\" HUP; exec sh -c \"kill -HUP \\\$\\\$; echo alive\"" \
		>out 2>err && grep -qx alive out
'
test_expect_success 'a signal left at its default is still fatal, after the profile' '
	measure -o term -e task-clock sh -c "kill -TERM \$\$; echo survived" >out 2>err; st=$?
	test $st -eq 143 && ! grep -q survived out && tail -n 1 term/*.log | grep -q "^summary:"
'
test_expect_success 'the command line is recorded as given' '
	measure -o args -e task-clock /bin/true one "" "two words" >/dev/null 2>err &&
	fathom-dump args/*.fthm >dump &&
	grep -q "argv (4): \"/bin/true\" \"one\" \"\" \"two words\"" dump
'
test_expect_success 'the last lines of a log: end, then summary' '
	tail -n 2 args/*.log >last && head -n 1 last | grep -q "^process [0-9]* ended (exit)" &&
	tail -n 1 last | grep -q "^summary: samples taken"
'
test_done
