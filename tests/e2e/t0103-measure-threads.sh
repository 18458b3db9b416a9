#!/bin/sh
# SPDX-License-Identifier: MIT
# t0103-measure-threads.sh: 8 threads doing different work (one creating a nested thread):
# every thread gets its own file, in which its own function dominates.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'measure 8 threads and a nested one' '
	measure -o m -e task-clock "$W/threads" 0.3 >/dev/null && ls m/*.fthm >files &&
	test "$(wc -l <files)" -eq 10
'
test_expect_success 'each worker file is dominated by its own function' '
	: >dominant
	for f in $(cat files); do
		test-tool profile -r work0 -r work1 -r work2 -r work3 -r work4 -r work5 -r work6 \
			-r work7 -r work8 "$f" >p || exit 1
		awk -v f="$f" "/^total/ {t=\$2} /^reach work[0-9]/ {if (\$3 > best) {best=\$3; fn=\$2}}
			END { if (t > 0 && best >= 0.8 * t) print fn, f }" p >>dominant
	done
	cat dominant
	for k in 0 1 2 3 4 5 6 7 8; do grep -q "^work$k " dominant || exit 1; done
'
test_expect_success 'the nested thread names work7 thread as its parent' '
	nested=$(awk "/^work8 / {print \$2}" dominant) && parent=$(awk "/^work7 / {print \$2}" dominant) &&
	p_index=$(fathom-dump "$parent" | awk "/^  thread:/ {print \$2}") &&
	fathom-dump "$nested" | grep -qx "  parent thread: $p_index" &&
	fathom-dump "$nested" | grep -q "creation path ([1-9]"
'
test_done
