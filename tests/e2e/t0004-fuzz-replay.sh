#!/bin/sh
# SPDX-License-Identifier: MIT
# t0004-fuzz-replay.sh: the seed corpus and 2000 deterministic mutations of each seed, under
# the sanitizers.
. "$top_srcdir/tests/lib/test-lib.sh"

replay="$top_builddir/tests/fuzz/fuzz-replay"
corpus="$top_srcdir/tests/fuzz/corpus/mfile"

test_expect_success 'the seed corpus is there' '
	ls "$corpus" >seeds &&
	test "$(wc -l <seeds)" -ge 4
'

test_expect_success 'fuzz-replay survives 2000 mutations of every seed' '
	nseeds=$(ls "$corpus" | wc -l) &&
	"$replay" -n 2000 "$corpus" >out 2>err ||
	{ tail -n 60 err; false; } &&
	cat out &&
	echo "fuzz-replay: $nseeds inputs, $((nseeds * 2001)) executions, 0 crashes" >expect &&
	test_cmp expect out &&
	! grep -E "Sanitizer|runtime error" err
'

test_expect_success 'fuzz-replay takes files and another seed' '
	"$replay" -n 10 -s 7 "$corpus/sample-stored" "$corpus/sample-zstd" >out &&
	echo "fuzz-replay: 2 inputs, 22 executions, 0 crashes" >expect &&
	test_cmp expect out
'

test_expect_success 'fuzz-replay refuses a missing input' '
	! "$replay" -n 1 "$TEST_TMP/no-such-file" 2>err &&
	grep -q no-such-file err
'

test_done
