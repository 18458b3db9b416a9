#!/bin/sh
# SPDX-License-Identifier: MIT
# t0104-measure-callpaths.sh: on -O2 code without frame pointers, samples inside glibc (qsort
# callbacks, memcpy) still have call paths that reach main, and a 5,000-frame recursion unwinds
# completely; deep paths whose middle and length keep changing are recorded exactly (a sample
# reuses the unchanged outer part of the previous one's walk, never a stale one).
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
test_expect_success 'deep paths that change in the middle: every sample has its exact path' '
	measure -o s -e task-clock@f2000 "$W/callpaths" shifting 1 >/dev/null &&
	test-tool paths s/*.fthm >paths &&
	awk "
		BEGIN { a[0] = 100; b[0] = 2900; a[1] = 2900; b[1] = 100
			a[2] = 1500; b[2] = 1500; a[3] = 1500; b[3] = 1000 }
		{ total += \$1; k = -1; ra = 0; rb = 0
		  for (i = 2; i <= NF; i++) {
			f = \$i; c = 1
			if (f ~ /[*]/) { c = f; sub(/.*[*]/, \"\", c); sub(/[*].*/, \"\", f) }
			if (f == \"rec_a\") ra += c
			if (f == \"rec_b\") rb += c
			if (f ~ /^leaf[0-3]\$/) k = substr(f, 5) + 0
		  }
		  if (k < 0) next
		  inleaf += \$1
		  if (ra != a[k] || rb != b[k] || \$0 !~ / main shifting rec_a/) { bad++; print \"wrong:\", \$0 }
		}
		END { printf \"%d paths wrong, %.1f%% of the time in the leaves\\n\", bad, 100 * inleaf / total
		      exit !(total > 0 && bad == 0 && inleaf > 0.5 * total) }" paths
'
test_done
