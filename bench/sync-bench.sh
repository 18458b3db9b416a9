#!/bin/sh
# SPDX-License-Identifier: MIT
# sync-bench.sh: the overhead of measure's synchronous sources, IO and MEMLEAK, against the bare
# program in the same invocation.
#
#   sh bench/sync-bench.sh [BUILD_DIR]
#
# BUILD_DIR is a configured and built tree (default: ../_build next to this script).  It needs
# BUILD_DIR/measure/measure and its library, and gcc.  Environment: RUNS repetitions (default 5),
# TMPDIR for the scratch directory (removed at exit), CHURN millions of churn steps (default 10),
# DEPTH of the trees (default 16), WRITES (default 1000000), OLD_LIB another libmeasure.so (say,
# a copy of the library before a change): every measured configuration also runs with it,
# interleaved, in rows marked "before"; WORKLOADS, the workloads to run (default "churn trees
# writes").
# Workloads (bench/workloads/, gcc -O2 -g, no frame pointers):
#   allocs churn  a cache of 4096 live blocks, one freed and one allocated (malloc or realloc,
#                 16 to 1024 bytes, three call sites) per step: allocation-heavy, few contexts
#   allocs trees  binary trees: every allocation in a calling context of its own (worst case)
#   smallwrites   1,000,000 writes of 32 bytes to /dev/null, from two call sites
# Each program prints its own CPU time (cpu_s=); the figures are medians over the runs of the
# per-run ratio measured CPU / bare CPU, the runs interleaved so that load on a shared machine
# affects both alike.  Wall-clock ratios are shown too.  Every configuration of run R is pinned
# (taskset) to the same CPU, the CPUs taken in turn from run to run: the virtual CPUs of these
# machines differ, at times by 30% on this memory-bound workload, so that a bare run on one and
# a measured run on the other gave ratios off by as much.  PIN=0 leaves the scheduler free.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/workloads-lib.sh"
CHURN=${CHURN:-10}
DEPTH=${DEPTH:-16}
WRITES=${WRITES:-1000000}
WORKLOADS=${WORKLOADS:-churn trees writes}
for w in $WORKLOADS; do
	case $w in churn | trees | writes) ;; *) echo "sync-bench: unknown workload $w (churn, trees, writes)" >&2; exit 2 ;; esac
done
use_build_tree sync-bench "${1:-$(dirname "$HERE")/_build}" measure/measure
MEASURE=$B/measure/measure
command -v gcc >/dev/null || { echo "sync-bench: gcc not found: apt-get install gcc" >&2; exit 2; }

SCR=$(mktemp -d "${TMPDIR:-/tmp}/sync-bench.XXXXXX") || exit 2
trap 'rm -rf "$SCR"' EXIT
trap 'exit 130' INT TERM
build_workloads sync-bench "$SCR" allocs smallwrites
CSV=$SCR/runs.csv
: >"$CSV"

OLD_LIB=${OLD_LIB:-}
if [ -n "$OLD_LIB" ]; then
	[ -r "$OLD_LIB" ] || { echo "sync-bench: OLD_LIB $OLD_LIB not found" >&2; exit 2; }
	OLD_LIB=$(cd "$(dirname "$OLD_LIB")" && pwd)/$(basename "$OLD_LIB")
fi
# lib CONFIG: the library a configuration preloads (empty: the launcher's own)
lib() {
	case $1 in old-*) echo "$OLD_LIB" ;; *) echo "${FATHOM_PRELOAD:-}" ;; esac
}

. "$HERE/pin.sh"

# run WORKLOAD CONFIG RUN -> a line "workload,config,run,wall,cpu" in $CSV
run() {
	local wl=$1 cfg=$2 r=$3 cmd out=$SCR/d t0 t1 cpu pin
	pin=$(pin_prefix "$r")
	case $wl in
	churn) cmd="$SCR/allocs churn $CHURN" ;;
	trees) cmd="$SCR/allocs trees $DEPTH" ;;
	writes) cmd="$SCR/smallwrites $WRITES /dev/null" ;;
	esac
	rm -rf "$out"
	t0=$EPOCHREALTIME
	case $cfg in
	bare) $pin $cmd >/dev/null 2>"$SCR/err" ;;
	p1 | old-p1) FATHOM_PRELOAD=$(lib "$cfg") $pin "$MEASURE" -o "$out" -e MEMLEAK $cmd \
		>/dev/null 2>"$SCR/err" ;;
	p01 | old-p01) FATHOM_PRELOAD=$(lib "$cfg") $pin "$MEASURE" -o "$out" -e MEMLEAK \
		--memleak-prob 0.1 $cmd >/dev/null 2>"$SCR/err" ;;
	io | old-io) FATHOM_PRELOAD=$(lib "$cfg") $pin "$MEASURE" -o "$out" -e IO $cmd \
		>/dev/null 2>"$SCR/err" ;;
	esac
	local rc=$?
	t1=$EPOCHREALTIME
	cpu=$(sed -n 's/^cpu_s=//p' "$SCR/err" | tail -n 1)
	[ $rc = 0 ] && [ -n "$cpu" ] || { echo "sync-bench: $wl $cfg run $r failed: $(tail -n 3 "$SCR/err")" >&2; exit 1; }
	if [ "$cfg" != bare ] && grep -q "^measure: .*error" "$SCR/err"; then
		echo "sync-bench: $wl $cfg: $(grep error "$SCR/err" | head -n 1)" >&2
	fi
	echo "$wl,$cfg,$r,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'),$cpu" >>"$CSV"
}

AWK_MED='function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return n ? ((n % 2) ? a[(n + 1) / 2] : (a[n/2] + a[n/2 + 1]) / 2) : 0 }'
# median over the runs of (column COL of CONFIG) / (column COL of bare), run by run
ratio() {
	awk -F, -v w="$1" -v c="$2" -v col="$3" "$AWK_MED"'
		$1 == w && $2 == "bare" { base[$3] = $col } $1 == w && $2 == c { x[$3] = $col }
		END { for (r in x) if (base[r] > 0) a[++n] = x[r] / base[r]; printf "%.3f", med(a, n) }' "$CSV"
}
median() {
	awk -F, -v w="$1" -v c="$2" -v col="$3" "$AWK_MED"'
		$1 == w && $2 == c { a[++n] = $col } END { printf "%.3f", med(a, n) }' "$CSV"
}

echo "sync-bench: $RUNS runs each; $(nproc) CPUs; $(uname -r)${OLD_LIB:+; before: $OLD_LIB}; ${CPUS[*]:+runs pinned to CPUs ${CPUS[*]} in turn}"
OLD_MEMLEAK= OLD_IO=
[ -n "$OLD_LIB" ] && OLD_MEMLEAK="old-p1 old-p01" && OLD_IO=old-io
has() { case " $WORKLOADS " in *" $1 "*) return 0 ;; esac; return 1; }
for r in $(seq 1 "$RUNS"); do
	if has churn; then for cfg in bare p1 p01 $OLD_MEMLEAK; do run churn $cfg "$r"; done; fi
	if has trees; then for cfg in bare p1 p01 $OLD_MEMLEAK; do run trees $cfg "$r"; done; fi
	if has writes; then for cfg in bare io $OLD_IO; do run writes $cfg "$r"; done; fi
done

printf '\n%-28s %-22s %10s %10s %10s\n' "workload" "measured with" "bare cpu s" "cpu ratio" "wall ratio"
line() {
	printf '%-28s %-22s %10s %10s %10s\n' "$1" "$3" "$(median "$2" bare 5)" "$(ratio "$2" "$4" 5)" \
		"$(ratio "$2" "$4" 4)"
}
for old in "" ${OLD_LIB:+old-}; do
	tag=${old:+"before: "}
	if has churn; then
		line "allocs churn $CHURN M steps" churn "$tag-e MEMLEAK (P = 1)" ${old}p1
		line "allocs churn $CHURN M steps" churn "$tag--memleak-prob 0.1" ${old}p01
	fi
	if has trees; then
		line "allocs trees depth $DEPTH" trees "$tag-e MEMLEAK (P = 1)" ${old}p1
		line "allocs trees depth $DEPTH" trees "$tag--memleak-prob 0.1" ${old}p01
	fi
	if has writes; then line "smallwrites $WRITES" writes "$tag-e IO" ${old}io; fi
done
