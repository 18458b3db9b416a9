# SPDX-License-Identifier: MIT
# workloads-lib.sh: what the benchmark scripts do alike with bench/workloads/ (sourced by bash,
# after HERE is set to bench/):
#   build_workloads SCRIPT DIR NAME...  build NAME.c -O2 -g into DIR (threads.c with -pthread
#                                       -lm), or exit 2 saying SCRIPT cannot
#   select_workloads SCRIPT             keep the WORKLOADS entries ("name|command") that ONLY
#                                       names, when ONLY is set; exit 2 if none is left
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
