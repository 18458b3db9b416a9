#!/bin/sh
# SPDX-License-Identifier: MIT
# t0210-struct-openmp-inlined.sh: an OpenMP region of a function inlined into main.  GCC
# outlines it as region._omp_fn.0 with its DIE inside the abstract instance of region; struct
# must find it there (not leave it symbol-only), with the two helpers inlined at their call
# lines inside its loop, as llvm-symbolizer (or addr2line) reads the inline chain; with
# -flto too.  clang++ -fopenmp (.omp_outlined.) as well, when clang++ and libomp are installed.
. "$top_srcdir/tests/lib/test-lib.sh"

src="$top_srcdir/tests/struct-workloads/omp.cc"
line_of() { grep -n "$1" "$src" | cut -d: -f1; }
loop=$(line_of 'LOOP omp-i') scale=$(line_of 'SCALE-CALL') clamp=$(line_of 'CLAMP-CALL')

# The lines of the dump from function FN's line to the next function, without line rows.
function_of() { awk -v fn="$1" '
	$1 == "function" || $1 == "file" { on = $1 == "function" && index($2, fn) }
	on && $1 != "stmt"' "$2"; }
# "HELPER LOOP_LINE" for every inline call of a helper (name containing scale or clampv)
# that sits under a loop, LOOP_LINE being the innermost loop's line.
inlined_in_loops() { awk '
	{ match($0, /^ */); ind = RLENGTH }
	$1 != "loop" && $1 != "inline" { next }
	{
		while (n > 0 && sind[n] >= ind) n--
		l = "-"
		for (i = n; i > 0; i--) if (skind[i] == "loop") { l = sline[i]; break }
		n++; sind[n] = ind; skind[n] = $1; split($3, w, ":"); sline[n] = w[2]
		if ($1 == "inline" && l != "-") {
			h = $2 ~ /scale/ ? "scale" : $2 ~ /clampv/ ? "clampv" : ""
			if (h != "") print h, l
		}
	}' "$1"; }

# check_region BIN FN: FN (the outlined region) has DWARF, lines, both helpers at their call
# lines, each under a loop of the region's body.
check_region() {
	struct --no-cache --dump "$1" >dump &&
	function_of "$2" dump >fn &&
	head -n 1 fn | grep -q "^    function [^ ]*$2[^ ]* at .*omp.cc:[0-9]" &&
	! head -n 1 fn | grep -q 'symbol-only' &&
	awk -v fn="$2" '$1 == "function" { on = index($2, fn) } on && $1 == "stmt"' dump |
		grep -q 'omp.cc:' &&
	grep -q "^ *inline [^ ]*scale[^ ]* called at .*omp.cc:$scale:" fn &&
	grep -q "^ *inline [^ ]*clampv[^ ]* called at .*omp.cc:$clamp:" fn &&
	grep '^ *inline [^ ]*\(scale\|clampv\)' fn >helpers &&
	! grep -Ev "called at [^ ]*omp.cc:($scale|$clamp):" helpers | grep -q . &&
	inlined_in_loops fn >in-loops &&
	awk -v lo="$loop" -v hi="$clamp" '$2 < lo || $2 > hi { bad = 1 } END { exit bad }' in-loops &&
	grep -q '^scale ' in-loops && grep -q '^clampv ' in-loops
}

# The reference for inline chains: llvm-symbolizer (LLVM) where installed, else addr2line
# (binutils), which reads GCC's chains but not clang's: binutils 2.40 skips the middle frame
# of clang 14's DWARF 5 chain.  The innermost function, then the location in every frame
# (innermost first), one a line.
symbolizer=
for t in llvm-symbolizer llvm-symbolizer-14 llvm-symbolizer-15; do
	command -v $t >/dev/null 2>&1 && symbolizer=$t && break
done
chain() {
	if [ -n "$symbolizer" ]; then
		$symbolizer --obj="$1" --inlining "$2" | awk 'NF' | sed 's/:[0-9]*$//'
	else
		addr2line -i -f -e "$1" "$2" | sed 's/ (discriminator [0-9]*)//'
	fi | awk 'NR == 1 || NR % 2 == 0'
}

# check_chains BIN: at the first address of every helper's inline scope in the region, the
# reference's inline chain has the call line of that helper in the caller's frame (and, from
# llvm-symbolizer, whose names are right, the helper as the innermost function).
check_chains() {
	grep '^ *inline [^ ]*\(scale\|clampv\)' fn |
		sed 's/^ *inline [^ ]*\(scale\|clampv\)[^ ]* called at [^ ]*:\([0-9]*\):[0-9]* .*\[0x\([0-9a-f]*\)-.*/\1 \2 \3/' >sites &&
	test "$(wc -l <sites)" -ge 2 &&
	while read helper call addr; do
		chain "$1" "0x$addr" >got &&
		f=$(sed -n 1p got) caller=$(sed -n 3p got) &&
		case "$caller" in *omp.cc:$call) ;; *) echo "0x$addr: not at $call:"; cat got; exit 1 ;; esac &&
		{ [ -z "$symbolizer" ] || case "$f" in $helper*) ;; *) echo "0x$addr: in $f"; exit 1 ;; esac; }
	done <sites
}

# openmp_ok COMPILER: whether COMPILER builds and links an OpenMP program at all.
openmp_ok() {
	printf '#include <omp.h>\nint main() { return omp_get_max_threads() < 0; }\n' >probe.cc &&
	"$1" -fopenmp -o probe probe.cc >probe.err 2>&1
}

# openmp_usable COMPILER TITLE [HINT]: whether COMPILER is installed and builds OpenMP
# programs; if not, test TITLE is skipped saying why (HINT after the build's failure).
openmp_usable() {
	if ! command -v "$1" >/dev/null 2>&1; then
		skip "$1 is not installed" "$2"
		return 1
	fi
	if ! openmp_ok "$1"; then
		skip "$1 -fopenmp does not build here${3:-}: $(head -n 1 probe.err)" "$2"
		return 1
	fi
}

if openmp_usable g++ 'g++ -O3 -fopenmp: the region of an inlined function'; then
	test_expect_success 'g++ -O3 -fopenmp: region is inlined into main, its region outlined' "
		g++ -O3 -fopenmp -g -o omp-gcc '$src' &&
		nm omp-gcc | grep -q ' t .*region.*\._omp_fn\.0\$' &&
		struct --no-cache --dump omp-gcc >dump &&
		grep -q '^      inline region called at .*omp.cc:$(line_of REGION-CALL):' dump
	"
	test_expect_success 'g++ -O3 -fopenmp: ._omp_fn.0 has lines, both helpers in its loop' "
		check_region omp-gcc ._omp_fn.0
	"
	if [ -n "$symbolizer" ] || command -v addr2line >/dev/null 2>&1; then
		test_expect_success "g++ -O3 -fopenmp: the call lines are those ${symbolizer:-addr2line} reads" "
			check_region omp-gcc ._omp_fn.0 && check_chains omp-gcc
		"
	else
		skip 'neither llvm-symbolizer nor addr2line is installed' \
			'g++ -O3 -fopenmp: the reference agrees'
	fi
	# With -flto, the region's concrete DIE sits in a DIE of the link-time unit whose
	# DW_AT_abstract_origin is region's abstract instance in the compile-time unit.
	if g++ -O2 -flto -o probe-lto probe.cc -fopenmp >/dev/null 2>&1; then
		test_expect_success 'g++ -O3 -fopenmp -flto: ._omp_fn.0 has lines, both helpers in its loop' "
			g++ -O3 -fopenmp -flto -g -o omp-lto '$src' &&
			check_region omp-lto ._omp_fn.0
		"
	else
		skip 'g++ -flto does not link here' 'g++ -O3 -fopenmp -flto: the region'
	fi
fi

if openmp_usable clang++ 'clang++ -O3 -fopenmp: the outlined region' ' (no libomp-dev?)'; then
	test_expect_success 'clang++ -O3 -fopenmp: .omp_outlined. has lines, both helpers in its loop' "
		clang++ -O3 -fopenmp -g -o omp-clang '$src' &&
		check_region omp-clang .omp_outlined.
	"
	if [ -n "$symbolizer" ]; then
		test_expect_success "clang++ -O3 -fopenmp: the call lines are those $symbolizer reads" "
			check_region omp-clang .omp_outlined. && check_chains omp-clang
		"
	else
		skip 'no llvm-symbolizer (addr2line misreads clang DWARF 5 inline chains)' \
			'clang++ -O3 -fopenmp: the reference agrees'
	fi
fi
test_done
