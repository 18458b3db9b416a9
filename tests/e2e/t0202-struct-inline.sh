#!/bin/sh
# SPDX-License-Identifier: MIT
# t0202-struct-inline.sh: a kernel that the compiler inlines into main at -O2 and -O3 shows its
# loop nest under the inline call site of the kernel (with the call's file:line); at -O0 the
# kernel is a function of its own with the same nest.  A loop sits at the deepest scope that
# holds all of its code: when main's code is scheduled into the kernel's outer loop (gcc -O2
# moves one instruction of line 24 there), that loop is main's, with the call site inside it.
. "$top_srcdir/tests/lib/test-lib.sh"

src="$top_srcdir/tests/struct-workloads/kernel.c"
bin="$top_builddir/tests/struct-workloads"
line_of() { grep -n "LOOP $1 " "$src" | cut -d: -f1; }
ki=$(line_of k-i) kj=$(line_of k-j) kk=$(line_of k-k)
call=$(grep -n 'KERNEL-CALL' "$src" | cut -d: -f1)

# "INLINE LINE PARENT_LINE" per loop, INLINE being the innermost inline call site above it,
# and "inline NAME PARENT_LINE" per inline call site inside a loop.
loops_of() {
	awk -f "$top_srcdir/tests/e2e/loop-scopes.awk" |
		awk '$1 == "loop" { print ($3 == "-" ? $2 : $3), $4, $5 }
		     $1 == "inline" && $4 != "-" { print "inline", $3, $4 }'
}
# The kernel's outer loop: under the call site, or main's with the call site in it.
outer_ok() {
	grep -qx "kernel $ki -" "$1" || { grep -qx "main $ki -" "$1" && grep -qx "inline kernel $ki" "$1"; }
}

for o in 2 3; do
	test_expect_success "-O$o: kernel is inlined into main at its call line" "
		struct --no-cache --dump '$bin/kernel-O$o' >dump-$o &&
		grep -q '^ *inline kernel called at .*kernel.c:$call:' dump-$o &&
		! grep -q '^    function kernel ' dump-$o
	"
	test_expect_success "-O$o: the kernel's loop nest sits under the inline call site" "
		loops_of <dump-$o >loops-$o && outer_ok loops-$o &&
		grep -qx 'kernel $kj $ki' loops-$o &&
		grep -qx 'kernel $kk $kj' loops-$o
	"
	test_expect_success "-O$o: every loop under the call site is one of the kernel's" "
		{ awk '\$1 == \"kernel\" { print \$2 }' loops-$o
		  grep -qx 'inline kernel $ki' loops-$o && echo $ki; } | sort -u >lines-$o &&
		printf '%s\n' $ki $kj $kk | sort >want &&
		test_cmp want lines-$o &&
		! awk '\$1 != \"kernel\" && \$1 != \"inline\" && (\$2 == $kj || \$2 == $kk)' loops-$o |
			grep -q .
	"
done
test_expect_success '-O0: kernel is a function with the same nest' "
	struct --no-cache --dump '$bin/kernel-O0' >dump-0 &&
	grep -q '^    function kernel at .*kernel.c:' dump-0 &&
	loops_of <dump-0 >loops-0 &&
	grep -qx 'kernel $ki -' loops-0 && grep -qx 'kernel $kj $ki' loops-0 &&
	grep -qx 'kernel $kk $kj' loops-0 && test \$(grep -c '^kernel ' loops-0) -eq 3
"
test_done
