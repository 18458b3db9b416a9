#!/bin/sh
# SPDX-License-Identifier: MIT
# t0009-dump-structure.sh: fathom-dump prints a structure file written by struct, the same text
# as struct --dump of that file: the module, the functions of the source with their lines, the
# loops; and refuses a cut-short one by name.
. "$top_srcdir/tests/lib/test-lib.sh"

bin="$top_builddir/tests/struct-workloads/loops-O2"
src="$top_srcdir/tests/struct-workloads/loops.c"

test_expect_success 'struct writes a structure file' '
	mkdir out && struct --no-cache -q -o out "$bin" &&
	set -- out/loops-O2-*.fthst && test -f "$1" && cp "$1" loops.fthst
'
test_expect_success 'fathom-dump prints what struct --dump prints' '
	fathom-dump loops.fthst >dump && struct --dump loops.fthst >expected &&
	test -s dump && test_cmp expected dump
'
test_expect_success 'the dump names the module, main in loops.c and its loops' '
	grep -q "loops-O2" dump &&
	line=$(grep -n "^int main" "$src" | head -1 | cut -d: -f1) &&
	grep -E "^ *function main .*loops\.c:$line" dump &&
	grep -qE "^ *loop " dump
'
test_expect_success 'a structure file among others: each after its header' '
	fathom-dump loops.fthst loops.fthst >two &&
	test $(grep -c "^==> loops.fthst <==" two) -eq 2
'
test_expect_success 'a cut-short structure file is refused by name, exit 1' '
	head -c 100 loops.fthst >short.fthst &&
	fathom-dump short.fthst >short.out 2>short.err; test $? -eq 1 &&
	grep -q "^fathom-dump: short.fthst: " short.err && test ! -s short.out
'
test_done
