#!/bin/sh
# SPDX-License-Identifier: MIT
# t0213-struct-less-to-go-on.sh: binaries with less to go on.  DWARF that struct cannot read
# (a unit header overwritten) falls back to the symbol table and the machine code, with a
# warning naming the section, and is not cached; a binary where no function can be found (no
# symbols, no DWARF, no unwind table; with or without Go's .gopclntab) says so; the summary
# counts the warnings it printed.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test programs"
command -v objcopy >/dev/null 2>&1 || skip_all "no objcopy (binutils) to strip the test programs"

functions() { sed -n "s/^ *function \([^ ]*\) .*/\1/p" "$1" | sort; }

test_expect_success 'setup: a binary, and a copy whose first unit header is overwritten' '
	cc -O2 -g -o good "$top_srcdir/tests/struct-workloads/kernel.c" && cp good bad &&
	off=$(readelf -S -W good | awk "\$2 == \".debug_info\" { print \$5 }") && test -n "$off" &&
	printf "\143\000" | dd of=bad bs=1 seek=$((0x$off + 4)) conv=notrunc 2>/dev/null &&
	! cmp -s good bad
'
test_expect_success 'unreadable DWARF: functions and loops from the symbols and the code, a warning' '
	struct --no-cache --dump good >good.txt 2>good.err &&
	struct --no-cache --dump bad >bad.txt 2>bad.err && cat bad.err &&
	grep -q "warning: .*bad: corrupt DWARF: .*(\.debug_info).*symbol table and the machine code" bad.err &&
	functions good.txt >good.fn && functions bad.txt >bad.fn && test_cmp good.fn bad.fn &&
	grep -q "^ *function main " bad.txt && ! grep -q "inline " bad.txt &&
	test "$(grep -c "^ *loop " good.txt)" -gt 0 &&
	test "$(grep -c "^ *loop " bad.txt)" = "$(grep -c "^ *loop " good.txt)"
'
test_expect_success 'the fallback is not cached (a debug file installed later is read)' '
	struct --cache cache -o out bad 2>err && test -z "$(ls cache 2>/dev/null)" &&
	test "$(ls out | wc -l)" = 1 &&
	struct --cache cache -o out good 2>err && test "$(ls cache | wc -l)" = 1
'
test_expect_success 'no function to be found: said plainly, and for Go which binary it is' '
	printf "int main(int c, char **v) { long s = 0; for (int i = 0; i < c * 1000; i++) s += i ^ c; return (int)(s & 1); }\n" >nof.c &&
	cc -O2 -fno-asynchronous-unwind-tables -fno-unwind-tables -s -o nof0 nof.c &&
	objcopy --remove-section .eh_frame --remove-section .eh_frame_hdr nof0 nof &&
	echo table >pcl && objcopy --add-section .gopclntab=pcl nof gobin &&
	struct --no-cache --dump nof >/dev/null 2>nof.err && cat nof.err &&
	grep -q "warning: .*nof: no functions found in its [0-9]* bytes of code" nof.err &&
	! grep -q gopclntab nof.err &&
	struct --no-cache --dump gobin >/dev/null 2>go.err &&
	grep -q "warning: .*gobin: no functions found.*a Go binary.*\.gopclntab" go.err
'
test_expect_success 'the summary counts the warnings it printed' '
	mkdir m && make-loadmap m/a.fthm "$PWD/bad" "$PWD/nof" "$PWD/good" "$PWD/nof.c" &&
	struct --no-cache m 2>err; status=$?; cat err && test $status -eq 0 &&
	n=$(grep -c "warning:" err) && test "$n" -ge 4 &&
	grep -q "^struct: 3 binaries analysed, 1 skipped, $n warnings, into " err
'
test_done
