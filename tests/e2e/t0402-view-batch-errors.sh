#!/bin/sh
# SPDX-License-Identifier: MIT
# t0402-view-batch-errors.sh: bad options, and missing, corrupt, truncated and foreign-version
# databases: a clear message naming the file, status 1, never a crash; then a pass over
# truncations of both files.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'setup' 'make-viewdb small db'
test_expect_error 'no database' 1 "no database given" view --batch
test_expect_error 'a missing database is named' 1 "nothere" view --batch nothere
mkdir mdir && test-tool make-mfile mdir/a-1.fthm
test_expect_error 'a measurement directory: run prof first' 1 \
	"mdir: a measurement directory, not a database: run 'prof mdir' first" view --batch mdir
test_expect_error 'bad --view' 1 "--view: 'sideways'" view --batch --view sideways db
test_expect_error 'bad --format' 1 "--format: 'xml'" view --batch --format xml db
test_expect_error 'bad --depth' 1 "--depth: 'x'" view --batch --depth x db
test_expect_error 'unknown option' 1 "unknown option --frobnicate" view --frobnicate db
test_expect_error 'unknown metric, with the list' 1 '"cpu-clock", "cycles"' view --batch --metric nope db
test_expect_error 'no such thread' 1 "no thread 9" view --batch --thread 9 db
test_expect_success 'a truncated summary is named' '
	mkdir t && cp db/threads.fdb t/ && head -c 200 db/summary.fdb >t/summary.fdb &&
	view --batch t >out 2>err; test $? -eq 1 && grep -q "t/summary.fdb" err &&
	! grep -q -i sanitizer err
'
test_expect_success 'a corrupt summary is named' '
	mkdir c && cp db/* c/ && size=$(wc -c <c/summary.fdb) &&
	printf "\377\377\377\377" | dd of=c/summary.fdb bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null &&
	view --batch c >out 2>err; test $? -eq 1 && grep -q "c/summary.fdb" err
'
test_expect_success 'the threads file given as the database is refused by name' '
	view --batch db/threads.fdb >out 2>err; test $? -eq 1 && grep -q "per-thread file" err
'
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'a database of another format version is named' '
		mkdir v && cp db/* v/ && set_major_version v/summary.fdb 4 &&
		view --batch v >out 2>err; test $? -eq 1 && grep -q "v/summary.fdb: .*version 4" err
	'
	test_expect_success 'a database of format version 2 is refused: run prof again' '
		mkdir v2 && cp db/* v2/ && set_major_version v2/summary.fdb 2 &&
		view --batch v2 >out 2>err; test $? -eq 1 &&
		grep -q "v2/summary.fdb: database format version 2.[0-9]* was written by an older prof" err &&
		grep -q "run prof again" err
	'
fi
test_expect_success 'truncated threads file: a clear error for --thread, none without' '
	mkdir tt && cp db/summary.fdb tt/ && head -c 100 db/threads.fdb >tt/threads.fdb &&
	view --batch tt >/dev/null &&
	view --batch --thread 1 tt >out 2>err; test $? -eq 1 && grep -q "tt/threads.fdb" err
'
test_expect_success 'every truncation: status 0 or 1 with a message, never a crash' '
	for f in summary.fdb threads.fdb; do
		size=$(wc -c <db/$f) && n=0 &&
		while test $n -lt $size; do
			rm -rf x && mkdir x && cp db/* x/ && head -c $n db/$f >x/$f &&
			view --batch --thread 1 --format json x >/dev/null 2>err; rc=$?
			test $rc -eq 0 || { test $rc -eq 1 && test -s err; } ||
				{ echo "truncated $f at $n: status $rc"; exit 1; }
			n=$((n + size / 40 + 1))
		done
	done
'
test_done
