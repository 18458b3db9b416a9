#!/bin/sh
# SPDX-License-Identifier: MIT
# t0102-measure-attribution.sh: a program that splits its CPU time 3:1 between two functions
# shows that split with each source, within 3 points: 75% with the CPU-time sources, and with
# REALTIME the split of wall-clock time that the program measured of itself (a busy machine
# stretches the two unevenly).  Sample counts follow the CPU time the threads' files record.
# CPUTIME where perf events are refused falls back to a POSIX timer and says what it costs: a
# busy machine can leave it with few samples (the kernel checks it at its tick), which it says.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"

# check_split DIR WANT TOLERANCE [perf]: the share of work_three in DIR's profile (metric 0) is WANT
# (percent, from the run) within TOLERANCE points, and the two functions hold 90% of it.  perf's
# clocks (task-clock, cpu-clock) also count what the hypervisor and interrupts take from a
# running thread, which lands where it happens to: with "perf", the points it makes of the
# total, measured against the CPU time the thread's file records, widen the tolerance.
check_split() {
	test-tool profile -r work_three -r work_one "$1"/*.fthm >p &&
	grep -v "^function" p &&
	awk -v want="$2" -v tol="$3" -v perf="${4:-}" "/^total/ {t=\$2} /^cpu/ {c=\$2} /^reach work_three/ {a=\$3}
		/^reach work_one/ {b=\$3}
		END { share = 100 * a / (a + b); cover = 100 * (a + b) / t;
		      if (perf != \"\" && c > 0 && t > c) tol += 100 * (t - c) / t;
		      printf \"share %.1f%% (want %.1f +- %.1f) cover %.1f%%\\n\", share, want, tol, cover;
		      exit !(share >= want - tol && share <= want + tol && cover >= 90) }" p
}

# follows PERIOD_NS [FIELD]: the samples of p (test-tool profile) are the time FIELD (cpu: the
# CPU time the threads recorded, the default; total: the time the profile holds) over
# PERIOD_NS, within 20%.
follows() {
	awk -v period="$1" -v field="${2:-cpu}" "/^samples/ {s=\$2} \$1 == field {c=\$2}
		END { want = c / period; printf \"samples %d for %.3f s of %s time: want %.0f\\n\", s, c / 1e9, field, want;
		      exit !(c > 0 && s >= 0.8 * want && s <= 1.2 * want) }" p
}

test_expect_success "3:1 split with CPUTIME@1000" '
	measure -o m-cputime -e CPUTIME@1000 "$W/split" 1.2 >/dev/null &&
	check_split m-cputime 75 3 && follows 1000000
'
for ev in cpu-clock@f1000 task-clock@f1000; do
	test_expect_success "3:1 split with $ev" '
		measure -o m-'"$ev"' -e '"$ev"' "$W/split" 1.2 >/dev/null &&
		check_split m-'"$ev"' 75 3 perf && follows 1000000 total
	'
done
test_expect_success '3:1 split with REALTIME@1000: the wall-clock split the program saw' '
	measure -o m-real -e REALTIME@1000 "$W/split" 1.2 >out &&
	want=$(awk "/^split: wall/ { printf \"%.2f\", 100 * \$3 / (\$3 + \$4) }" out) &&
	wall=$(awk "/^split: wall/ { print \$3 + \$4 }" out) &&
	check_split m-real "$want" 3 &&
	awk -v wall="$wall" "/^total/ { printf \"credited %.3f s of %.3f s\\n\", \$2 / 1e9, wall / 1e9;
		exit !(\$2 >= 0.9 * wall) }" p
'
test_expect_success 'CPUTIME at the default rate: the task clock, one sample per 3333 us of CPU time' '
	measure -o m-default -e CPUTIME "$W/split" 1.2 >/dev/null 2>err &&
	cat err && grep -q "over [0-9.]* s of CPU time" err &&
	fathom-dump m-default/*.fthm >dump &&
	grep -q "the kernel.s task clock, a sample every 3333 us" dump &&
	check_split m-default 75 5 && follows 3333000
'
test_expect_success 'CPUTIME without perf events: a POSIX timer, said; too few samples are said too' '
	test-tool no-perf measure -o m-posix -e CPUTIME "$W/split" 1.2 >/dev/null 2>err &&
	cat err &&
	grep -q "CPUTIME: perf events cannot be opened here" err &&
	fathom-dump m-posix/*.fthm >dump && grep -q "per-thread POSIX timer every 3333 us" dump &&
	test-tool profile -r work_three -r work_one m-posix/*.fthm >p &&
	awk "/^samples/ {s=\$2} /^cpu/ {c=\$2} END { exit !(c > 0 && s > 0) }" p &&
	fewer() { awk -v f="$1" "/^samples/ {s=\$2} /^cpu/ {c=\$2} END { exit !(s < f * c / 3333000) }" p; }
	if fewer 0.5; then
		grep -q "warning: CPUTIME took [0-9]* samples where" err
	else
		! grep -q "warning: CPUTIME" err &&
		# Sampled at (nearly) every tick: the shares hold, within the tick.
		{ fewer 0.75 || check_split m-posix 75 8; }
	fi
'
test_done
