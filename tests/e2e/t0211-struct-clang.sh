#!/bin/sh
# SPDX-License-Identifier: MIT
# t0211-struct-clang.sh: the struct workloads built with clang at -O0 and -O2.  clang 14 and 15
# write DWARF 5 with file index 0 (the unit's primary source file) in DW_AT_decl_file and
# DW_AT_call_file; every function must still have its file and line, as llvm-dwarfdump reads
# them, and every inline call site its call file and declaration.  The loop checks of t0201
# and t0202 that do not depend on GCC's code layout are run on these builds too.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/loop-marks-lib.sh"

command -v clang >/dev/null 2>&1 || skip_all 'clang is not installed (optional in scripts/deps.sh)'
dwarfdump=
for t in llvm-dwarfdump llvm-dwarfdump-14 llvm-dwarfdump-15; do
	command -v $t >/dev/null 2>&1 && dwarfdump=$t && break
done

wl="$top_srcdir/tests/struct-workloads"

# "NAME BASENAME LINE" of every function with code in struct's dump.
functions_of() {
	sed -n 's/^    function \([^ ]*\) at [^ ]*\/\([^/ ]*\):\([0-9]*\) .*/\1 \2 \3/p' "$1" | sort -u
}
# The same from llvm-dwarfdump: subprograms with DW_AT_low_pc (or DW_AT_ranges), with their
# name, file and line, or those of their DW_AT_abstract_origin / DW_AT_specification.
dwarf_functions_of() {
	$dwarfdump --debug-info "$1" | awk '
	function flush() {
		if (tag == "DW_TAG_subprogram") {
			name[off] = nm; file[off] = fl; line[off] = ln; orig[off] = og
			if (code) { n++; with_code[n] = off }
		}
		nm = fl = ln = og = ""; code = 0
	}
	/^0x[0-9a-f]+: +DW_TAG_/ { flush(); off = $1; sub(/:$/, "", off); tag = $2; next }
	/^0x[0-9a-f]+: +NULL/ { flush(); tag = ""; next }
	$1 == "DW_AT_name" { v = $0; sub(/^[^"]*"/, "", v); sub(/".*/, "", v); nm = v }
	$1 == "DW_AT_decl_file" { v = $0; sub(/^[^"]*"/, "", v); sub(/".*/, "", v); fl = v }
	$1 == "DW_AT_decl_line" { v = $2; gsub(/[()]/, "", v); ln = v + 0 }
	$1 == "DW_AT_low_pc" || $1 == "DW_AT_ranges" { code = 1 }
	$1 == "DW_AT_abstract_origin" || $1 == "DW_AT_specification" {
		v = $2; sub(/^\(/, "", v); sub(/\)$/, "", v); og = v }
	END {
		flush()
		for (i = 1; i <= n; i++) {
			o = with_code[i]
			for (hops = 0; hops < 8 && name[o] == "" && orig[o] != ""; hops++)
				o = orig[o]
			f = file[o]; sub(/.*\//, "", f)
			if (name[o] != "" && f != "" && line[o] > 0) print name[o], f, line[o]
		}
	}' | sort -u
}

# "INLINE LINE PARENT_LINE" per loop, as in t0201/t0202 (FUNCTION for INLINE outside any).
loops_of() {
	awk -f "$top_srcdir/tests/e2e/loop-scopes.awk" "$1" |
		awk '$1 == "loop" { print ($3 == "-" ? $2 : $3), $4, $5, $6 }'
}

for w in loops kernel clones; do
	for o in 0 2; do
		b=$w-clang-O$o
		test_expect_success "$b: every function with DWARF has a file and a line" "
			clang -g -O$o -o $b '$wl/$w.c' &&
			struct --no-cache --dump $b >dump-$b &&
			grep '^    function ' dump-$b | grep -v 'flags=[^ ]*symbol-only' >fns-$b &&
			test -s fns-$b &&
			! grep -v '^    function [^ ]* at /[^ ]*:[0-9][0-9]* ' fns-$b &&
			grep -q '^    function main at /[^ ]*/tests/struct-workloads/$w.c:[0-9]' fns-$b
		"
		test_expect_success "$b: every inline call site has its call file and declaration" "
			! grep '^ *inline ' dump-$b | grep -v ' called at /[^ ]*:[0-9]*:[0-9]* declared at /[^ ]*:[0-9][0-9]* '
		"
		if [ -n "$dwarfdump" ]; then
			test_expect_success "$b: the same files and lines as $dwarfdump reads" "
				functions_of dump-$b >got-$b &&
				dwarf_functions_of $b >want-$b &&
				test -s want-$b && test_cmp want-$b got-$b
			"
		else
			skip 'llvm-dwarfdump is not installed' "$b: the files and lines llvm-dwarfdump reads"
		fi
	done
done

# t0201's marks of loops.c.
src="$wl/loops.c"
loop_marks "$src"
inl=$(awk '$2 == "inl" { print $1 }' marks)
for o in 0 2; do
	b=loops-clang-O$o
	# clang -O2 splits loops into a vector body and a remainder: the same lines twice.
	test_expect_success "$b: the marked loops, header lines and nesting (t0201)" "
		loops_of dump-$b >loops-$b &&
		grep ' reducible\$' loops-$b | awk '{ print \$2, \$3 }' | sort -u >got &&
		test_cmp expected got
	"
	test_expect_success "$b: the inlined function's loop sits under its call site (t0201)" "
		grep -q '^inlined_sum $inl [0-9]* reducible\$' loops-$b
	"
	test_expect_success "$b: the goto loop is one irreducible loop (t0201)" "
		grep ' irreducible\$' loops-$b >irr && test \$(wc -l <irr) -eq 1 &&
		read fn line parent kind <irr && test \"\$fn\" = irreducible &&
		test \"\$line\" -ge $irr_lo && test \"\$line\" -le $irr_hi
	"
done

src="$wl/kernel.c"
line_of() { grep -n "LOOP $1 " "$src" | cut -d: -f1; }
ki=$(line_of k-i) kj=$(line_of k-j) kk=$(line_of k-k)
call=$(grep -n 'KERNEL-CALL' "$src" | cut -d: -f1)
test_expect_success 'kernel-clang-O2: kernel is inlined at its call line, its nest under it (t0202)' "
	grep -q '^      inline kernel called at .*kernel.c:$call:' dump-kernel-clang-O2 &&
	! grep -q '^    function kernel ' dump-kernel-clang-O2 &&
	loops_of dump-kernel-clang-O2 >loops-k2 &&
	grep -q '^kernel $ki - ' loops-k2 && grep -q '^kernel $kj $ki ' loops-k2 &&
	grep -q '^kernel $kk $kj ' loops-k2
"
test_expect_success 'kernel-clang-O0: kernel is a function with the same nest (t0202)' "
	grep -q '^    function kernel at .*kernel.c:' dump-kernel-clang-O0 &&
	loops_of dump-kernel-clang-O0 >loops-k0 &&
	grep -q '^kernel $ki - ' loops-k0 && grep -q '^kernel $kj $ki ' loops-k0 &&
	grep -q '^kernel $kk $kj ' loops-k0
"
test_done
