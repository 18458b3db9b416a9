#!/bin/sh
# SPDX-License-Identifier: MIT
# run-prof-mpi-bench.sh: prof-mpi under mpirun against prof -j1 on the synthetic measurement of
# run-prof-bench.sh (1,000 thread files of 100,000 contexts by default), alternately, RUNS
# times (3): median wall time, and peak memory (prof: the process; prof-mpi: the largest rank,
# from its --stats), with 1, 2, 3 and 4 ranks (on a machine of fewer cores, the ranks past
# them oversubscribe it); the ratios to prof -j1 (targets on 2 cores, 2 ranks: at least 1.6x
# faster, at most 60% of the memory), and whether every database is prof's, byte for byte.
#
#   bench/run-prof-mpi-bench.sh [BUILDDIR [NTHREADS [NODES]]]   (defaults: . 1000 100000)
set -eu
builddir=${1:-.}
nthreads=${2:-1000}
nodes=${3:-100000}
gen="$builddir/bench/prof-bench"
prof="$builddir/prof/prof"
mpi="$builddir/prof/prof-mpi"
for p in "$gen" "$prof" "$mpi"; do
	if [ ! -x "$p" ]; then
		echo "run-prof-mpi-bench.sh: $p not found: run 'make bench-prof-mpi' in the build" \
			"directory (prof-mpi is built when configure finds MPI)" >&2
		exit 2
	fi
done
command -v mpirun >/dev/null 2>&1 ||
	{ echo "run-prof-mpi-bench.sh: no mpirun (Debian: apt-get install openmpi-bin)" >&2; exit 2; }
/usr/bin/time -f %e true 2>/dev/null ||
	{ echo "run-prof-mpi-bench.sh: needs GNU time (/usr/bin/time, Debian package 'time')" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
work=${TMPDIR:-/tmp}/fathom-prof-bench-$nthreads-$nodes-0
if [ ! -f "$work/.complete" ]; then
	rm -rf "$work" && mkdir -p "$work"
	echo "generating $nthreads thread files of $nodes contexts in $work ..."
	"$gen" "$work/m" "$nthreads" "$nodes" "$(nproc)" 0
	: >"$work/.complete"
fi
echo "host: $(uname -srm), $(nproc) CPUs, load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
median() {
	sort -n | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
same=yes
labels="prof-j1 mpi1 mpi2 mpi3 mpi4"
for l in $labels; do : >"$work/wall-$l" && : >"$work/rss-$l"; done
i=0
while [ $i -lt "${RUNS:-3}" ]; do
	for l in $labels; do
		rm -rf "$work/db-$l"
		case $l in
		prof-j1)
			/usr/bin/time -f "%e %M" -o "$work/time" "$prof" -j1 -o "$work/db-$l" "$work/m" \
				>/dev/null 2>&1 || true
			read -r wall rss <"$work/time"
			echo $((rss / 1024)) >>"$work/rss-$l" ;;
		mpi*)
			/usr/bin/time -f "%e %M" -o "$work/time" mpirun -n "${l#mpi}" "$mpi" --stats \
				-o "$work/db-$l" "$work/m" >/dev/null 2>"$work/err-$l" || true
			read -r wall rss <"$work/time"
			sed -n 's/.*peak memory per rank [0-9]* to \([0-9]*\) MB.*/\1/p' "$work/err-$l" \
				>>"$work/rss-$l" ;;
		esac
		echo "$wall" >>"$work/wall-$l"
		if [ $l != prof-j1 ]; then
			for f in summary.fdb threads.fdb; do
				cmp -s "$work/db-prof-j1/$f" "$work/db-$l/$f" || same=no
			done
		fi
	done
	i=$((i + 1))
done
base=$(median <"$work/wall-prof-j1")
base_rss=$(median <"$work/rss-prof-j1")
for l in $labels; do
	w=$(median <"$work/wall-$l")
	r=$(median <"$work/rss-$l")
	printf '%-8s median wall %6.2f s (%.2fx prof -j1)   peak memory %4d MB%s (%.0f%% of prof'"'"'s)\n' \
		"$l" "$w" "$(echo "$base / $w" | bc -l)" "$r" "$( [ $l = prof-j1 ] || echo ' a rank')" \
		"$(echo "100 * $r / $base_rss" | bc -l)"
done
echo "every prof-mpi database byte for byte prof's: $same"
[ $same = yes ]
