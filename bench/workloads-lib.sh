# SPDX-License-Identifier: MIT
# workloads-lib.sh: what the benchmark scripts do alike with bench/workloads/ (sourced by bash,
# after HERE is set to bench/):
#   build_workloads SCRIPT DIR NAME...  build NAME.c -O2 -g into DIR (threads.c with -pthread
#                                       -lm), or exit 2 saying SCRIPT cannot
#   select_workloads SCRIPT             keep the WORKLOADS entries ("name|command") that ONLY
#                                       names, when ONLY is set; exit 2 if none is left
#   use_build_tree SCRIPT DIR PROG...   set B to DIR, a configured and built tree (absolute),
#                                       or exit 2 saying SCRIPT has none, or not PROG in it
# and RUNS, the repetitions (default 5).
RUNS=${RUNS:-5}

build_workloads() {
	local script=$1 dir=$2 p
	shift 2
	for p in "$@"; do
		case $p in
		threads) gcc -O2 -g -pthread -o "$dir/$p" "$HERE/workloads/$p.c" -lm ;;
		*) gcc -O2 -g -o "$dir/$p" "$HERE/workloads/$p.c" ;;
		esac || { echo "$script: cannot build $p" >&2; exit 2; }
	done
}

select_workloads() {
	[ -n "${ONLY:-}" ] || return 0
	local w sel=()
	for w in "${WORKLOADS[@]}"; do case " $ONLY " in *" ${w%%|*} "*) sel+=("$w") ;; esac; done
	WORKLOADS=("${sel[@]}")
	[ ${#WORKLOADS[@]} -gt 0 ] || { echo "$1: ONLY=$ONLY names no workload" >&2; exit 2; }
}

use_build_tree() {
	local script=$1 dir=$2 p
	shift 2
	[ -f "$dir/Makefile" ] || {
		echo "$script: no configured build tree at $dir: build one with sh scripts/build.sh (or ./run-tests.sh), which make _build/, or name one: sh bench/$script.sh BUILD_DIR" >&2
		exit 2
	}
	B=$(cd "$dir" && pwd)
	for p in "$@"; do
		[ -x "$B/$p" ] || { echo "$script: $B/$p not found in the build tree: build it first (make -C $B, and make -C $B check for the test helpers)" >&2; exit 2; }
	done
}
