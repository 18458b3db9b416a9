#!/bin/sh
# SPDX-License-Identifier: MIT
# t0107-measure-proxy.sh: proxy sampling through a perf group: a task-clock leader samples,
# and the page faults and context switches counted by its members since the previous sample
# are credited to the sampled context.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'a group led by task-clock with two counting members' '
	measure -o g -e "{task-clock,page-faults,context-switches}@f2000" "$W/faults" 30 >/dev/null &&
	fathom-dump g/*.fthm >dump &&
	grep -q "^  \[1\] \"page-faults\"" dump && grep -q "^  \[2\] \"context-switches\"" dump &&
	sed -n "/\"page-faults\"/,/parent/p" dump | grep -q "flags: .*proxy"
'
test_expect_success 'the page faults land where pages are touched' '
	test-tool profile -m 1 -r touch_pages -r compute g/*.fthm >p && cat p &&
	awk "/^total/ {t=\$2} /^reach touch_pages/ {a=\$3} /^reach compute/ {b=\$3}
	     END { printf \"faults in touch_pages: %.1f%%\\n\", 100 * a / t;
		   exit !(t >= 30 * 4096 * 0.5 && a >= 0.85 * t && b <= 0.1 * t) }" p
'
test_expect_success 'while the time is shared by both' '
	test-tool profile -m 0 -r touch_pages -r compute g/*.fthm >p &&
	awk "/^reach touch_pages/ {a=\$3} /^reach compute/ {b=\$3} END { exit !(a > 0 && b > 0) }" p
'
test_done
