#!/bin/sh
# SPDX-License-Identifier: MIT
# run-prof-bench.sh: prof on a large synthetic measurement directory (bench/prof-bench writes
# it through lib/): wall time, CPU time (in all, and per stage from prof --stats) and peak
# memory with -j1, -j2 and all cores, the speedup over -j1, and whether the databases are
# identical.
#
#   bench/run-prof-bench.sh [BUILDDIR [NTHREADS [NODES]]]     (defaults: . 1000 100000)
#
# The directory is kept in ${TMPDIR:-/tmp}/fathom-prof-bench-NTHREADS-NODES and reused.
set -eu
builddir=${1:-.}
nthreads=${2:-1000}
nodes=${3:-100000}
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
work=${TMPDIR:-/tmp}/fathom-prof-bench-$nthreads-$nodes
if [ ! -f "$work/.complete" ]; then
	rm -rf "$work" && mkdir -p "$work"
	echo "generating $nthreads thread files of $nodes contexts in $work ..."
	start=$(date +%s)
	"$gen" "$work/m" "$nthreads" "$nodes"
	: >"$work/.complete"
	echo "generated in $(( $(date +%s) - start )) s, $(du -sh "$work/m" | cut -f1)"
fi
echo "host: $(uname -srm), $(nproc) CPUs, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
cores=$(nproc)
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
