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
	faults_in_touch_pages 1 g
'
test_expect_success 'while the time is shared by both' '
	shared_by_both 0 g
'
test_done
