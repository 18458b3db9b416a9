#!/bin/sh
# SPDX-License-Identifier: MIT
# t0109-measure-io.sh: -e IO credits the exact bytes of read, write, pread, pwrite, readv,
# writev, fread and fwrite to the functions that called them, counts nothing else (not
# measure's own writes, not fwrite's inner write twice), measures the time in the calls, and
# keeps through prof; its options are checked.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'a program doing known I/O runs unchanged under -e IO' '
	measure -o m -e IO "$W/synchronous" io data >out 2>err && cat err &&
	test "$(stat -c %s data)" -eq 11200
'
test_expect_success 'the summary counts the calls recorded, not samples (none were taken)' '
	calls=$(sed -n "s/^summary: .* calls \([0-9]*\)$/\1/p" m/*.log) && test "$calls" -gt 0 &&
	grep -q "^measure: 1 process, 1 thread file, $calls calls recorded over" err &&
	! grep -q "0 samples" err
'
test_expect_success 'bytes written: exact at each call site, and nothing else' '
	test-tool profile -m 1 -r io_write -r io_fwrite -r io_writev -r io_pwrite m/*.fthm >p &&
	cat p && grep -qx "total 11200" p && grep -qx "complete 11200" p &&
	grep -qx "reach io_write 5000" p && grep -qx "reach io_fwrite 3000" p &&
	grep -qx "reach io_writev 2000" p && grep -qx "reach io_pwrite 1200" p
'
test_expect_success 'bytes read: exact at each call site, and nothing else' '
	test-tool profile -m 0 -r io_pread -r io_fread -r io_readv m/*.fthm >p &&
	cat p && grep -qx "total 7000" p && grep -qx "reach io_pread 3000" p &&
	grep -qx "reach io_fread 2500" p && grep -qx "reach io_readv 1500" p
'
test_expect_success 'the leaf is the function called (write, fwrite, ...)' '
	test-tool profile -m 1 m/*.fthm >p && grep -q "^function fwrite 3000$" p &&
	grep -q "^function writev 2000$" p && grep -Eq "^function (__)?write 5000$" p
'
test_expect_success 'the time in the calls is measured where they were made' '
	test-tool profile -m 2 -r io_pread -r io_fread -r io_readv m/*.fthm >r &&
	test-tool profile -m 3 -r io_write -r io_fwrite -r io_writev -r io_pwrite m/*.fthm >w &&
	cat r w && awk "\$1 == \"reach\" && \$3 <= 0 { bad = 1 } END { exit bad }" r w &&
	awk "/^total/ { t = \$2 } /^complete/ { c = \$2 } END { exit !(t > 0 && c == t) }" w
'
test_expect_success 'the metric table says what the IO metrics are' '
	fathom-dump m/*.fthm >d &&
	grep -A2 "\"IO Bytes Read\"" d | grep -q "unit: bytes rate: exact" &&
	grep -A2 "\"IO Bytes Written\"" d | grep -q "unit: bytes" &&
	grep -A2 "\"IO Read Time\"" d | grep -q "unit: ns" &&
	grep -A2 "\"IO Write Time\"" d | grep -q "unit: ns"
'
test_expect_success 'prof keeps the bytes per function' '
	prof -o db m >/dev/null 2>&1 && fathom-dump db >dd &&
	grep -E " io_write \[[0-9]+\] .* m1=5000/" dd && grep -E " io_fread \[[0-9]+\] .* m0=2500/" dd
'
test_expect_success 'IO with a time source: both kinds of metrics' '
	measure -o mc -e IO -e CPUTIME@1000 "$W/synchronous" io data2 >out 2>err &&
	grep -Eq "[1-9][0-9]* calls recorded over" err &&
	test-tool profile -m 1 mc/*.fthm | grep -qx "total 11200"
'
test_expect_error 'IO takes no period' 2 "IO takes no period" measure -e IO@100 true
test_expect_error '--memleak-prob needs -e MEMLEAK' 2 "without -e MEMLEAK" \
	measure -e IO --memleak-prob 0.5 true
for bad in 0 1.5 -1 x; do
	test_expect_error "--memleak-prob $bad is refused" 2 "expected a probability" \
		measure -e MEMLEAK --memleak-prob "$bad" true
done
test_expect_success 'measure -L lists IO and MEMLEAK as usable' '
	measure -L >l && sed -n "/usable on this machine/,/^$/p" l >u &&
	grep -q "^  IO " u && grep -q "^  MEMLEAK " u
'
test_done
