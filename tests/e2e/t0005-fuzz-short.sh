#!/bin/sh
# SPDX-License-Identifier: MIT
# t0005-fuzz-short.sh: twenty seconds of libFuzzer on the measurement-file reader, when clang
# has it.
. "$top_srcdir/tests/lib/test-lib.sh"

fuzzer="$top_builddir/tests/fuzz/fuzz-mfile-libfuzzer"
corpus="$top_srcdir/tests/fuzz/corpus/mfile"

[ -x "$fuzzer" ] || skip_all "no libFuzzer binary (configure found no clang with -fsanitize=fuzzer)"

# libFuzzer writes new inputs to its first corpus directory: give it a copy, so that the source
# tree stays read-only, and keep crash files in $TEST_TMP too.
test_expect_success 'libFuzzer runs 20 seconds without a crash' '
	mkdir work &&
	cp "$corpus"/* work/ &&
	"$fuzzer" -max_total_time=20 -print_final_stats=1 -artifact_prefix="$TEST_TMP/" \
		work >log 2>&1 ||
	{ tail -60 log; false; } &&
	grep "^stat::" log &&
	! grep -E "runtime error|Sanitizer" log &&
	! ls "$TEST_TMP"/crash-* "$TEST_TMP"/leak-* "$TEST_TMP"/oom-* "$TEST_TMP"/timeout-* 2>/dev/null
'

test_expect_success 'libFuzzer reported its executions' '
	runs=$(sed -n "s/^stat::number_of_executed_units: *//p" log) &&
	echo "executions: $runs" &&
	test "$runs" -gt 0
'

test_done
