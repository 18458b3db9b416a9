#!/bin/sh
# SPDX-License-Identifier: MIT
# t0204-measure-callpaths.sh: on -O2 code without frame pointers, samples inside glibc (qsort
# callbacks, memcpy) still have call paths that reach main, and a 5,000-frame recursion unwinds
# completely.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
reach_main() {
	awk "/^total/ {t=\$2} /^reach main/ {r=\$3}
	     END { printf \"reach main %.2f%%\\n\", 100 * r / t; exit !(t > 0 && r >= 0.99 * t) }" "$1"
}
test_expect_success 'qsort callback: 99% of samples reach main' '
	measure -o q -e task-clock@f1000 "$W/callpaths" qsort 1 >/dev/null &&
	test-tool profile -r main -r compare q/*.fthm >p && reach_main p &&
	awk "/^reach compare/ {exit !(\$3 > 0)}" p
'
test_expect_success 'memcpy: 99% of samples reach main' '
	measure -o c -e task-clock@f1000 "$W/callpaths" memcpy 1 >/dev/null &&
	test-tool profile -r main c/*.fthm >p && reach_main p
'
test_expect_success 'a 5,000-frame recursion unwinds completely' '
	measure -o d -e task-clock@f300 "$W/callpaths" deep 1 5000 >/dev/null &&
	test-tool profile -r main d/*.fthm >p && reach_main p &&
	awk "/^depth/ {exit !(\$2 >= 5000)}" p
'
test_done
