#!/bin/sh
# SPDX-License-Identifier: MIT
# t0215-struct-loop-lines.sh: struct labels loops with the line of their loop statement, not
# of their latch: for and while loops whose bodies run several lines below, a do-while (its
# while line is its latch), a nest, an OpenMP work-shared loop (whose outlined function has no
# code at the for's line) and a loop whose condition is an inlined comparator, at -O0 and
# -O2; the latch line stays in the structure file as a second field (since format 1.3), older files
# still read, and prof and view show the label ("loop at FILE:LINE").  Expected lines come from
# the marker comments of tests/struct-workloads/loop-lines.c and isort.c.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test programs"
src="$top_srcdir/tests/struct-workloads/loop-lines.c"
isort="$top_srcdir/tests/struct-workloads/isort.c"
line_of() { grep -n "LINE $1 \*/" "$src" | cut -d: -f1; }
l_for=$(line_of for) l_while=$(line_of while) l_do=$(line_of do)
l_outer=$(line_of outer) l_inner=$(line_of inner) l_omp=$(line_of omp)
omp=-fopenmp
echo 'int main(void) { return 0; }' >probe.c
cc -fopenmp -o probe probe.c 2>/dev/null || omp=

# "FUNCTION LABEL LATCH" for every loop of the dump labelled in FILE (the latch's line when
# it is in the same file, else its file:line).
loops_of() {
	awk -v want="$1" '
	$1 == "function" { fn = $2; next }
	$1 == "loop" && split($3, w, ":") >= 2 && w[1] ~ ("/" want "$") {
		lat = "-"
		if ($4 ~ /^latch=/) { lat = substr($4, 7); sub(/:[0-9]*$/, "", lat) }
		print fn, w[2], lat
	}'
}

for o in 0 2; do
	test_expect_success "-O$o: the programs build" "
		cc -O$o -g $omp -o ll-O$o '$src' 2>cc.err &&
		cc -O$o -g -fPIC -shared -o isort-O$o.so '$isort' 2>>cc.err || { cat cc.err; exit 1; }
	"
	test_expect_success "-O$o: for, while, do-while and nested loops carry their statement's line" "
		struct --no-cache --dump ll-O$o >dump-$o && loops_of loop-lines.c <dump-$o >loops-$o &&
		cat loops-$o &&
		awk '\$1 != \"omp_axpy._omp_fn.0\" { print \$1, \$2 }' loops-$o | sort -u >got-$o &&
		printf '%s\n' 'scale_for $l_for' 'scale_while $l_while' 'sum_do $l_do' \
			'init_nested $l_outer' 'init_nested $l_inner' | sort >want-$o &&
		test_cmp want-$o got-$o
	"
	test_expect_success "-O$o: every loop keeps its latch line" "
		! awk '\$3 == \"-\"' loops-$o | grep -q . &&
		grep -q '^sum_do $l_do $l_do\$' loops-$o
	"
	if test -n "$omp"; then
		test_expect_success "-O$o: the OpenMP loop is labelled with its for, its latch kept" "
			grep '^omp_axpy._omp_fn.0 ' loops-$o >omp-$o && test -s omp-$o &&
			! awk '\$2 != $l_omp' omp-$o | grep -q . &&
			read fn label latch <omp-$o && test \"\$latch\" -gt $l_omp
		"
	else
		skip "the compiler has no -fopenmp" "-O$o: the OpenMP loop is labelled with its for"
	fi
	test_expect_success "-O$o: the comparator loop is labelled with its while, not its latch" "
		less=\$(grep -n 'LOOP-LESS' '$isort' | cut -d: -f1) &&
		sort_l=\$(grep -n 'LOOP-SORT' '$isort' | cut -d: -f1) &&
		guarded=\$(grep -n 'LOOP-GUARDED' '$isort' | cut -d: -f1) &&
		struct --no-cache --dump isort-O$o.so | loops_of isort.c >isort-$o && cat isort-$o &&
		awk '{ print \$1, \$2 }' isort-$o | sort -u >got-isort-$o &&
		printf '%s\n' \"unguarded_insert \$less\" \"insertion_sort \$sort_l\" \
			\"insertion_sort \$guarded\" | sort >want-isort-$o &&
		test_cmp want-isort-$o got-isort-$o
	"
done
test_expect_success '-O2: the comparator loop'"'"'s latch is in the comparator, not its label' '
	less=$(grep -n LOOP-LESS "$isort" | cut -d: -f1) &&
	grep "^unguarded_insert $less " isort-2 >cmp && read fn label latch <cmp &&
	test "$latch" -lt "$label"
'
test_expect_success 'the structure file is of this version (1.4) and keeps the latch' '
	mkdir out && struct --no-cache -q -o out ll-O2 && set -- out/ll-O2-*.fthst &&
	struct --dump "$1" >again && head -n 1 again | grep -qx "fathom structure file 1.4" &&
	sed 1d again >again.body && sed 1d dump-2 >dump.body && test_cmp dump.body again.body
'
test_expect_success 'a 1.0 structure file still reads, its loops without a latch' '
	struct --dump "$top_srcdir/tests/fuzz/corpus/sfile/loops-O0" >old &&
	head -n 1 old | grep -qx "fathom structure file 1.0" && grep -q "^ *loop at " old &&
	! grep -q "latch=" old
'
if test -n "$omp"; then
	test_expect_success 'prof and view show the OpenMP loop at its for line' '
		id=$(sed -n "s/^  build-id //p" dump-2) &&
		hdr=$(sed -n "s/.*loop at .*loop-lines.c:$l_omp .*header=\(0x[0-9a-f]*\).*/\1/p" dump-2) &&
		test -n "$id" && test -n "$hdr" &&
		printf "module %s %s\nsample %s compute 20 1000 - -\n" "$TEST_TMP/ll-O2" "$id" "$hdr" >place &&
		mkdir m && make-tma-mfile -s place m/t.fthm >/dev/null &&
		struct --no-cache -q m && prof -o db m >prof.out 2>&1 &&
		view --batch db >view.out && cat view.out &&
		grep -q "loop at loop-lines.c:$l_omp " view.out
	'
else
	skip "the compiler has no -fopenmp" "prof and view show the OpenMP loop at its for line"
fi
test_done
