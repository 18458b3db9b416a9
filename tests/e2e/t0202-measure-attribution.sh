#!/bin/sh
# SPDX-License-Identifier: MIT
# t0202-measure-attribution.sh: a program that splits its CPU time 3:1 between two functions
# shows 75% +- 5 points on the first, with each time source.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
for ev in CPUTIME REALTIME cpu-clock task-clock; do
	test_expect_success "3:1 split with $ev" '
		measure -o m-'"$ev"' -e '"$ev"' "$W/split" 1.2 >/dev/null &&
		test-tool profile -r work_three -r work_one m-'"$ev"'/*.fthm >p &&
		cat p | grep -v "^function" &&
		awk "/^total/ {t=\$2} /^reach work_three/ {a=\$3} /^reach work_one/ {b=\$3}
		     END { share = 100 * a / (a + b); cover = 100 * (a + b) / t;
			   printf \"share %.1f%% cover %.1f%%\\n\", share, cover;
			   exit !(share >= 70 && share <= 80 && cover >= 90) }" p
	'
done
test_done
