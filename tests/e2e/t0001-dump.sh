#!/bin/sh
# SPDX-License-Identifier: MIT
# t0001-dump.sh: fathom-dump prints every field of a measurement file, the same for zstd and
# stored chunks, and handles several files and its options.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'write the sample file, compressed and stored' '
	test-tool make-mfile sample.mf && test-tool make-mfile --stored stored.mf
'
test_expect_success 'dump matches the expected text' '
	fathom-dump sample.mf >out && test_cmp "$top_srcdir/tests/e2e/expected/sample.dump" out
'
test_expect_success 'stored chunks dump identically' '
	fathom-dump stored.mf >out && test_cmp "$top_srcdir/tests/e2e/expected/sample.dump" out
'
test_expect_success 'several files get headers' '
	fathom-dump sample.mf stored.mf >out &&
	grep -qx "==> sample.mf <==" out && grep -qx "==> stored.mf <==" out &&
	test "$(grep -c "^fathom measurement file" out)" -eq 2
'
test_expect_success 'a bad file among good ones: others dumped, exit 1' '
	echo garbage >bad.mf
	fathom-dump sample.mf bad.mf stored.mf >out 2>err; test $? -eq 1 &&
	test "$(grep -c "^fathom measurement file" out)" -eq 2 &&
	grep -q "bad.mf: not a fathom file" err
'
test_expect_success 'control characters from the file are escaped' '
	fathom-dump sample.mf >out && ! grep -q "$(printf "\033")" out && grep -qF "\\x1b[31m" out
'
test_expect_success 'a large tree dumps one line per node' '
	test-tool make-mfile --nodes 5000 big.mf && fathom-dump big.mf >out &&
	grep -q "^cct: 5000 nodes" out &&
	test "$(sed -n "/^cct:/,/^counters:/p" out | grep -c "^  [0-9]")" -eq 5000
'
test_expect_success '--help and --version' '
	fathom-dump --help | grep -q "usage: fathom-dump" &&
	fathom-dump --version | grep -q "^fathom-dump (fathom) "
'
test_expect_success 'no file is a usage error (exit 2)' '
	fathom-dump 2>err; test $? -eq 2 && grep -q usage err
'
test_done
