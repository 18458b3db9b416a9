#!/bin/sh
# SPDX-License-Identifier: MIT
# t0412-view-trace.sh: the trace timeline in batch text and JSON.  measure -t runs
# tests/measure-workloads/phases (four threads, each running phase_a, then phase_b, then
# sleeping, for different lengths of CPU time); prof keeps the traces; view --view trace must
# show, for every thread, phase_a in the bins of its first phase, phase_b in those of its
# second and idle while it sleeps, within one bin of each boundary the program printed of
# itself, at the depth of the phases and, one level up, the worker function; the text rows say
# what the JSON says; --time zooms; databases without traces say so.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "no python3 to read the JSON output"
check="python3 $top_srcdir/tests/e2e/trace-check.py"
phases="$top_builddir/tests/measure-workloads/phases"

test_expect_success 'setup: a traced run of four threads in phases' '
	measure -t -o m "$phases" 60 >phases.out &&
	test $(grep -c "^phases " phases.out) = 4 &&
	prof -o db m >prof.out 2>&1 && test -f db/traces.fdb
'
test_expect_success 'JSON at every depth until one shows the phases' '
	for d in 0 1 2 3 4 5 6 7 8 9 10 11 12; do
		view --batch --view trace --format json --width 60 --depth $d db >d$d.json || exit 1
	done &&
	depth=$($check depth-of phase_a d0.json d1.json d2.json d3.json d4.json d5.json d6.json \
		d7.json d8.json d9.json d10.json d11.json d12.json) &&
	echo "$depth" >depth && test "$depth" -gt 0
'
test_expect_success 'at the phases depth: phase_a, then phase_b, then idle, in every thread' '
	depth=$(cat depth) &&
	$check json phases.out d$depth.json phase_a phase_b
'
test_expect_success 'one level up: the worker in both phases' '
	up=$(( $(cat depth) - 1 )) &&
	$check json phases.out d$up.json worker worker
'
test_expect_success 'text: the rows and the legend say what the JSON says' '
	depth=$(cat depth) &&
	view --batch --view trace --width 60 --depth $depth db >t.txt && cat t.txt &&
	$check text phases.out d$depth.json t.txt &&
	grep -q "^summary     |" t.txt && grep -q "^process [0-9]* (phases)$" t.txt
'
test_expect_success '--time: a zoomed window is checked the same way' '
	depth=$(cat depth) &&
	view --batch --view trace --format json --width 60 --depth $depth --time 0.05-0.6 db \
		>zoom.json &&
	$check json phases.out zoom.json phase_a phase_b 2>&1 | tee zoom.out ||
	grep -q "too coarse" zoom.out
'
test_expect_error 'a database without traces says how to get them' 1 'measure -t' \
	sh -c "prof --no-traces -o db-nt m >/dev/null 2>&1 && view --batch --view trace db-nt"
test_expect_error 'a bad --time is refused' 1 'is not A-B' \
	view --batch --view trace --time 2-1 db
test_expect_error 'CSV is not a timeline format' 1 'text or json' \
	view --batch --view trace --format csv db
test_done
