#!/bin/sh
# SPDX-License-Identifier: MIT
# run-prof-bench.sh: prof on a large synthetic measurement directory (bench/prof-bench writes
# it through lib/): wall time, CPU time (in all, and per stage from prof --stats) and peak
# memory with -j1, -j2 and all cores, the speedup over -j1, and whether the databases are
# identical.  With TRACE, the threads were measured with -t (TRACE samples each) and what
# carrying the traces costs is measured instead: prof -j1 and -j2 with the traces and with
# --no-traces, alternately, RUNS times (3), the medians and their ratio (target: at most 1.5).
#
#   bench/run-prof-bench.sh [BUILDDIR [NTHREADS [NODES [TRACE]]]]   (defaults: . 1000 100000)
#
# The directory is kept in ${TMPDIR:-/tmp}/fathom-prof-bench-NTHREADS-NODES and reused.
set -eu
builddir=${1:-.}
nthreads=${2:-1000}
nodes=${3:-100000}
trace=${4:-0}
gen="$builddir/bench/prof-bench"
prof="$builddir/prof/prof"
for p in "$gen" "$prof"; do
	if [ ! -x "$p" ]; then
		echo "run-prof-bench.sh: $p not found: run 'make bench-prof' in the build directory" >&2
		exit 2
	fi
done
if ! /usr/bin/time -f %e true 2>/dev/null; then
	echo "run-prof-bench.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2
	exit 2
fi
work=${TMPDIR:-/tmp}/fathom-prof-bench-$nthreads-$nodes-$trace
if [ ! -f "$work/.complete" ]; then
	rm -rf "$work" && mkdir -p "$work"
	echo "generating $nthreads thread files of $nodes contexts ($trace samples of trace) in $work ..."
	start=$(date +%s)
	"$gen" "$work/m" "$nthreads" "$nodes" "$(nproc)" "$trace"
	: >"$work/.complete"
	echo "generated in $(( $(date +%s) - start )) s, $(du -sh "$work/m" | cut -f1)"
fi
echo "host: $(uname -srm), $(nproc) CPUs, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
cores=$(nproc)
if [ "$trace" -gt 0 ]; then
	median() {
		sort -n | awk '{ v[NR] = $1 }
			END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
	}
	for j in 1 2; do
		: >"$work/with" && : >"$work/without"
		i=0
		while [ $i -lt "${RUNS:-3}" ]; do
			for mode in with without; do
				rm -rf "$work/db"
				flag=
				[ $mode = without ] && flag=--no-traces
				s=$(date +%s.%N)
				"$prof" -j$j $flag -o "$work/db" "$work/m" >/dev/null 2>&1 || true
				echo "$(date +%s.%N) - $s" | bc >>"$work/$mode"
				[ $mode = with ] && size=$(stat -c %s "$work/db/traces.fdb")
			done
			i=$((i + 1))
		done
		w=$(median <"$work/with")
		wo=$(median <"$work/without")
		printf -- '-j%s: with traces %.2f s, without %.2f s: ratio %.2f (target <= 1.5); ' \
			"$j" "$w" "$wo" "$(echo "$w / $wo" | bc -l)"
		printf 'traces.fdb %.1f MB, %.2f bytes a sample\n' "$(echo "$size / 1000000" | bc -l)" \
			"$(echo "$size / ($nthreads * $trace)" | bc -l)"
	done
	exit 0
fi
run() {
	label=$1
	shift
	rm -rf "$work/db-$label"
	/usr/bin/time -f "%e %U %S %M" -o "$work/time-$label" "$prof" --stats "$@" -o "$work/db-$label" \
		"$work/m" >"$work/out-$label" 2>"$work/err-$label" || true
	read -r wall user sys rss <"$work/time-$label"
	echo "$wall" >"$work/wall-$label"
	printf '%-8s wall %7.2f s   cpu %7.2f s   peak %6d MB   %s\n' "$label" "$wall" \
		"$(echo "$user + $sys" | bc)" $((rss / 1024)) "$(grep '^prof: wrote' "$work/out-$label" |
		sed 's/^prof: wrote [^:]*: //')"
	sed -n 's/^prof: stats: /         /p' "$work/err-$label"
}
run j1 -j1
run j2 -j2
[ "$cores" -gt 2 ] && run "j$cores" -j"$cores"
t1=$(cat "$work/wall-j1")
t2=$(cat "$work/wall-j2")
echo "speedup -j2 over -j1: $(echo "scale=2; $t1 / $t2" | bc) (wall time; on a loaded machine" \
     "compare the CPU of the busiest thread: the main thread's merge with -j1 against the" \
     "largest of merge, reading and writing with -j2)"
if cmp -s "$work/db-j1/summary.fdb" "$work/db-j2/summary.fdb" &&
   cmp -s "$work/db-j1/threads.fdb" "$work/db-j2/threads.fdb"; then
	echo "databases with -j1 and -j2: identical"
else
	echo "databases with -j1 and -j2: DIFFERENT"
	exit 1
fi
ls -l "$work/db-j1"
