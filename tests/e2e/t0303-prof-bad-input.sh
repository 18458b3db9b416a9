#!/bin/sh
# SPDX-License-Identifier: MIT
# t0303-prof-bad-input.sh: corrupt, truncated and altered-header measurement files, an empty
# directory and a structure file of another build: each is named in a clear message, prof
# goes on with the good files, ends with status 1 and a summary, and never crashes.
. "$top_srcdir/tests/lib/test-lib.sh"

setup() {
	mkdir -p m &&
	test-tool make-mfile m/a-1.fthm &&
	test-tool make-mfile --nodes 500 m/b-2.fthm &&
	head -c 300 m/b-2.fthm >m/c-truncated.fthm &&
	cp m/a-1.fthm m/d-version.fthm &&
	printf "\011" | dd of=m/d-version.fthm bs=1 seek=8 conv=notrunc 2>/dev/null &&
	cp m/a-1.fthm m/e-flipped.fthm &&
	printf "\377\377\377\377" | dd of=m/e-flipped.fthm bs=1 seek=40 conv=notrunc 2>/dev/null &&
	: >m/f-empty.fthm &&
	mkdir -p empty
}

test_expect_success 'prof --help and --version' '
	prof --help | grep -q "^usage: prof " && prof --version | grep -q "^prof (fathom) "
'
test_expect_success 'setup' 'setup'
test_expect_error 'an empty directory is named; nothing is written' 1 \
	"empty: no measurement files" prof -o none empty
test_expect_success '... and no database or temporary directory is left' '
	! test -e none && ! ls -d none.tmp-* 2>/dev/null
'
test_expect_error 'a truncated file is named' 1 "m/c-truncated.fthm" prof -o db m
test_expect_success 'each bad file is named, the good ones are used, status 1' '
	prof -o db2 m >out 2>err; test $? -eq 1 &&
	grep -q "skipped 4 inputs" err &&
	grep -q "^prof: 2 of them look unfinished: the run may still be going on" err &&
	grep -q "m/c-truncated.fthm" err && grep -q "m/d-version.fthm" err &&
	grep -q "m/e-flipped.fthm" err && grep -q "m/f-empty.fthm" err &&
	grep -q "^prof: wrote db2: 2 threads" out && fathom-dump db2 >dump &&
	grep -q "^threads 2 " dump && ! grep -q Sanitizer err
'
test_expect_success 'the empty directory is reported next to good input' '
	prof -o db3 m empty >out 2>err; test $? -eq 1 &&
	grep -q "empty: no measurement files" err && test -f db3/summary.fdb
'
# A well-formed file of format version 2.0: the header's major version and checksum rewritten.
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'a measurement file of another format version is named' '
		mkdir v && cp m/a-1.fthm v/a.fthm && cp m/a-1.fthm v/b.fthm &&
		set_major_version v/b.fthm 2 &&
		prof -o vdb v >out 2>err; test $? -eq 1 &&
		grep -Eq "v/b.fthm: .*version 2\.[0-9]+ is not supported" err &&
		grep -q "^prof: wrote vdb: 1 threads" out
	'
fi
# The signal must reach prof while its temporary database exists: the test waits for that
# directory to appear and signals at once.  A machine fast enough to finish first gets twice
# the input, until prof is caught writing (or the input is absurdly large: then it fails).
test_expect_success 'an interrupted run leaves no partial database and no temporary directory' '
	mkdir big && n=0 && files=10 && caught= &&
	while [ -z "$caught" ] && [ $files -le 2560 ]; do
		while [ $n -lt $files ]; do
			n=$((n + 1)); test-tool make-mfile --nodes 20000 big/t-$n.fthm || exit 1
		done
		rm -rf bigdb
		prof -j1 -o bigdb big >out 2>err &
		pid=$!
		while kill -0 $pid 2>/dev/null && ! ls -d bigdb.tmp-* >/dev/null 2>&1; do :; done
		if ls -d bigdb.tmp-* >/dev/null 2>&1 && kill -TERM $pid 2>/dev/null; then caught=1; fi
		wait $pid
		rc=$?
		if [ -n "$caught" ]; then
			# Caught at the very end, it may still have published: the signal came too late.
			test $rc -eq 0 && test -f bigdb/summary.fdb && caught=
		fi
		files=$((files * 2))
	done
	echo "$n input files; prof exited with $rc" && cat err &&
	test -n "$caught" && test $rc -eq 143 &&
	grep -q "interrupted by signal 15; no database was written" err &&
	! ls -d bigdb.tmp-* 2>/dev/null && ! test -e bigdb
'
test_expect_error 'a missing directory is named' 1 "nonexistent-dir: cannot open" \
	prof -o db4 nonexistent-dir
test_expect_error 'usage errors exit 2' 2 "not a number of threads" prof -j x m
test_expect_error 'an unknown --metric-db style' 2 "--metric-db" prof --metric-db=x m

W="$top_builddir/tests/measure-workloads"
if struct --help >/dev/null 2>&1 && cp "$W/split" ./app 2>/dev/null &&
	measure -o sm -e task-clock ./app 0.3 >/dev/null 2>&1 && struct sm >/dev/null 2>&1; then
	test_expect_success 'a structure file of another build of the binary is refused by name' '
		cp "$W/threads" ./app && mkdir -p other && struct -o other ./app >/dev/null 2>&1 &&
		rm -rf sm/structs &&
		prof -S other -o sdb sm >out 2>err; test $? -eq 1 &&
		grep -q "other/.*structure file does not match .*/app" err &&
		test -f sdb/summary.fdb
	'
fi
test_done
