#!/bin/sh
# SPDX-License-Identifier: MIT
# t0115-measure-table-cache.sh: the unwind tables that a run builds are kept in the per-user
# cache, so that the next run maps them instead of building them; --cache and --no-cache; a
# damaged table is built again; a cache that cannot be used falls back to the run's own.
. "$top_srcdir/tests/lib/test-lib.sh"

tables() { grep -h "unwind tables" "$1"/*.log; }
test_expect_success 'a first run builds its tables into the cache under XDG_CACHE_HOME' '
	measure -o r1 -e task-clock /bin/true 2>err &&
	tables r1 | grep -q "([1-9][0-9]* built, 0 shared)" &&
	ls -d "$XDG_CACHE_HOME"/fathom/unwind/build-* >dirs && test "$(wc -l <dirs)" -eq 1 &&
	test "$(ls "$(cat dirs)" | grep -c "^[0-9a-f]*\.cfi$")" -ge 3 &&
	test "$(stat -c %a "$(cat dirs)")" = 700
'
test_expect_success 'the next run builds none' '
	measure -o r2 -e task-clock /bin/true 2>err &&
	tables r2 | grep -q "(0 built, [1-9][0-9]* shared)"
'
test_expect_success 'the tables a run checked in full are stamped: later runs check their headers only' '
	measure -o r3 -e task-clock /bin/true 2>err &&
	tables r3 | grep -q "(0 built, [1-9][0-9]* shared)" &&
	test -s "$(cat dirs)/verified"
'
test_expect_success 'a damaged table is said, built again, and the run goes on' '
	libc=$(ls -S "$(cat dirs)"/*.cfi | head -n 1) &&
	printf "garbage" | dd of="$libc" bs=1 seek=200 conv=notrunc 2>/dev/null &&
	measure -o r4 -e task-clock@f1000 sh -c "i=0; while [ \$i -lt 20000 ]; do i=\$((i+1)); done" 2>err &&
	grep -q "building the table again" r4/*.log &&
	grep -q "checksum mismatch" r4/*.log &&
	tail -n 1 r4/*.log | grep -q "errors 0" &&
	measure -o r5 -e task-clock /bin/true 2>err &&
	! grep -q "building the table again" r5/*.log
'
test_expect_success '--cache DIR keeps them in DIR' '
	measure --cache "$PWD/mine" -o r6 -e task-clock /bin/true 2>err &&
	tables r6 | grep -q "([1-9][0-9]* built, 0 shared)" &&
	ls mine/build-*/*.cfi >/dev/null &&
	measure --cache "$PWD/mine" -o r7 -e task-clock /bin/true 2>err &&
	tables r7 | grep -q "(0 built, [1-9][0-9]* shared)"
'
test_expect_success '--no-cache: the run builds its own, and leaves nothing behind' '
	mkdir tmp && TMPDIR=$PWD/tmp measure --no-cache --cache "$PWD/never" -o r8 \
		-e task-clock sh -c "/bin/true; /bin/true" 2>err &&
	tables r8 | grep -q "([1-9][0-9]* built, 0 shared)" &&
	tables r8 | grep -q "(0 built, [1-9][0-9]* shared)" &&
	test -z "$(ls -A tmp)" && ! test -e never
'
test_expect_success 'a cache that cannot be used: said, and the run shares tables of its own' '
	echo file >notadir &&
	XDG_CACHE_HOME=$PWD/notadir measure -o r9 -e task-clock sh -c "/bin/true; /bin/true" 2>err &&
	grep -q "warning: cannot keep unwind tables between runs: .*notadir" err &&
	tables r9 | grep -q "(0 built, [1-9][0-9]* shared)" &&
	grep -q "^measure: 3 processes" err
'
test_expect_success 'and with no temporary directory either, every process builds its own' '
	XDG_CACHE_HOME=$PWD/notadir TMPDIR=$PWD/nonexistent measure -o r12 -e task-clock \
		sh -c "/bin/true; /bin/true" 2>err &&
	grep -q "nonexistent: .*: every process builds its own unwind tables" err &&
	test "$(tables r12 | grep -c "([1-9][0-9]* built, 0 shared)")" -eq 3
'
test_expect_success 'a cache directory others can write to is not used' '
	mkdir -p open/fathom/unwind && chmod 777 open/fathom/unwind &&
	mkdir open/fathom/unwind/$(basename "$(cat dirs)") &&
	chmod 777 open/fathom/unwind/$(basename "$(cat dirs)") &&
	XDG_CACHE_HOME=$PWD/open measure -o r10 -e task-clock /bin/true 2>err &&
	grep -q "writable by every user" err
'
test_expect_success 'the directories of other builds unused for 30 days are removed' '
	base=$XDG_CACHE_HOME/fathom/unwind &&
	mkdir "$base/build-00000000000000aa" "$base/build-00000000000000bb" &&
	touch "$base/build-00000000000000aa/0123.cfi" &&
	touch -d "40 days ago" "$base/build-00000000000000aa" &&
	touch -d "20 days ago" "$base/build-00000000000000bb" &&
	measure -o r11 -e task-clock /bin/true 2>err &&
	! test -e "$base/build-00000000000000aa" && test -d "$base/build-00000000000000bb" &&
	test -d "$(cat dirs)"
'
test_done
