#!/bin/sh
# SPDX-License-Identifier: MIT
# run-prof-trace-bench.sh: what carrying the traces costs prof.  bench/prof-bench writes a
# synthetic measurement directory whose threads were measured with -t (NTHREADS threads of
# NODES contexts, TRACE samples each); prof -j1 and -j2 merge it with the traces and with
# --no-traces, alternately, RUNS times; the medians and their ratio (target: at most 1.5).
#
#   bench/run-prof-trace-bench.sh [BUILDDIR [NTHREADS [NODES [TRACE [RUNS]]]]]
#                                                   (defaults: . 200 20000 30000 3)
set -eu
builddir=${1:-.}
nthreads=${2:-200}
nodes=${3:-20000}
trace=${4:-30000}
runs=${5:-3}
gen="$builddir/bench/prof-bench"
prof="$builddir/prof/prof"
for p in "$gen" "$prof"; do
	if [ ! -x "$p" ]; then
		echo "run-prof-trace-bench.sh: $p not found: run 'make bench-prof-trace'" >&2
		exit 2
	fi
done
work=${TMPDIR:-/tmp}/fathom-prof-trace-bench-$nthreads-$nodes-$trace
if [ ! -f "$work/.complete" ]; then
	rm -rf "$work" && mkdir -p "$work"
	echo "generating $nthreads traced thread files of $nodes contexts, $trace samples each ..."
	"$gen" "$work/m" "$nthreads" "$nodes" "$(nproc)" "$trace"
	: >"$work/.complete"
fi
echo "host: $(uname -srm), $(nproc) CPUs, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "input: $(du -sh "$work/m" | cut -f1) in $nthreads files, $((nthreads * trace)) samples of trace"
median() {
	sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for j in 1 2; do
	: >"$work/with" && : >"$work/without"
	i=0
	while [ $i -lt "$runs" ]; do
		for mode in with without; do
			rm -rf "$work/db"
			flag=
			[ $mode = without ] && flag=--no-traces
			s=$(date +%s.%N)
			"$prof" -j$j $flag -o "$work/db" "$work/m" >/dev/null 2>&1 || true
			e=$(date +%s.%N)
			echo "$e - $s" | bc >>"$work/$mode"
			[ $mode = with ] && size=$(stat -c %s "$work/db/traces.fdb")
		done
		i=$((i + 1))
	done
	w=$(median <"$work/with")
	wo=$(median <"$work/without")
	printf -- '-j%s: with traces %.2f s, without %.2f s: ratio %.2f (target <= 1.5); traces.fdb %.1f MB, %.2f bytes a sample\n' \
		"$j" "$w" "$wo" "$(echo "$w / $wo" | bc -l)" "$(echo "$size / 1000000" | bc -l)" \
		"$(echo "$size / ($nthreads * $trace)" | bc -l)"
done
