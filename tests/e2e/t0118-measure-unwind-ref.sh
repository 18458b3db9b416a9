#!/bin/sh
# SPDX-License-Identifier: MIT
# t0118-measure-unwind-ref.sh: measure's unwinder and libunwind walk the same 12,000 contexts
# (signals at random points of C built -O0 to -O3 with and without frame pointers, C++,
# libc, libm, the loader, PLT stubs, deep recursions and signal handlers, one on an alternate
# stack) and find the same frames; unwind-ref explains every difference it accepts.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'measure unwinds as libunwind does, on 12,000 contexts' '
	measure -o m "$top_builddir/tests/measure-workloads/unwind-ref" 12000 >out 2>err
	rc=$?
	cat out err
	test $rc -eq 0 && grep -q "^unwind-ref: 12000 contexts" out &&
	grep -q "^unwind-ref: 0 unexplained" out
'
test_done
