#!/bin/sh
# SPDX-License-Identifier: MIT
# struct-bench.sh: struct on large real binaries with full DWARF: PETSc's debug library
# (libpetsc-real3.18-dbg, DWARF 5 in the file, dwz) and HotSpot's libjvm.so with its separate
# compressed debug file (openjdk-17-dbg); and a large binary with no DWARF at all, LLVM's shared
# library (libllvm14: 50 MB of code, symbols from .dynsym and the unwind table, loops from the
# machine code alone), and two Rust compiler libraries without DWARF, where panics and deep
# loop nests abound: Debian's librustc_driver (libstd-rust-1.63, 47 MB of code) and, when a
# rustup toolchain is installed, its own (about 97 MB of code in Rust 1.95).  For each: wall and CPU time on 1 and 2 threads,
# throughput (MB of executable code per second), peak memory, the speedup from 1 to 2
# threads, and the time of a second run answered by the cache; then, for the best runs, the
# wall and CPU time of struct's phases, which tell what the speedup would be on an idle
# machine when others share this one (a phase's CPU time over its wall time is how many
# threads it kept busy).  Installs the packages with apt-get when they are missing (as root).
#
#   bench/struct-bench.sh [PATH_TO_STRUCT] [RUNS] [BINARY...]   (make bench-struct runs it)
#
# BINARY names the rows to run (petsc libjvm libLLVM rustc rustup; all by default).
set -u
STRUCT=${1:-struct}
RUNS=${2:-3}
[ $# -ge 2 ] && shift 2 || set --
ROWS=${*:-petsc libjvm libLLVM rustc rustup}
command -v "$STRUCT" >/dev/null 2>&1 || { echo "struct-bench: no struct program '$STRUCT'" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "struct-bench: needs GNU time (apt-get install time)" >&2; exit 2; }

PETSC=/usr/lib/petscdir/petsc3.18/x86_64-linux-gnu-real-debug/lib/libpetsc_real.so.3.18.5
JVM=/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so
LLVM=/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1
rustc_driver() { ls "$@" 2>/dev/null | head -n 1; }
RUSTC=$(rustc_driver /usr/lib/x86_64-linux-gnu/librustc_driver-*.so)

need=""
[ -f "$PETSC" ] || need="$need libpetsc-real3.18-dbg"
if [ ! -f "$JVM" ] || ! dpkg -s openjdk-17-dbg >/dev/null 2>&1; then
	need="$need openjdk-17-dbg"
fi
[ -f "$LLVM" ] || need="$need libllvm14"
[ -n "$RUSTC" ] || need="$need libstd-rust-1.63"
if [ -n "$need" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "struct-bench: missing packages; run as root or: apt-get install$need" >&2
		exit 2
	fi
	echo "struct-bench: installing$need"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >/dev/null ||
		{ echo "struct-bench: apt-get install$need failed" >&2; exit 2; }
	RUSTC=$(rustc_driver /usr/lib/x86_64-linux-gnu/librustc_driver-*.so)
fi
RUSTUP=$(rustc_driver "${RUSTUP_HOME:-$HOME/.rustup}"/toolchains/stable-*/lib/librustc_driver-*.so)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/struct-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run THREADS BINARY [ARGS...]: one analysis; prints "wall cpu mbps rss_mb text_mb"
run() {
	threads=$1 bin=$2
	shift 2
	/usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
		"$STRUCT" -j "$threads" --stats -o "$tmp/out" "$@" "$bin" 2>"$tmp/err" >/dev/null ||
		{ cat "$tmp/err" >&2; return 1; }
	read -r wall user sys rss <"$tmp/time"
	mbps=$(sed -n 's/.* text \([0-9.]*\) MB, \([0-9.]*\) MB\/s.*/\2/p' "$tmp/err")
	text=$(sed -n 's/.* text \([0-9.]*\) MB, .*/\1/p' "$tmp/err")
	sed -n 's/.*phases (wall\/CPU): //p' "$tmp/err" >"$tmp/phases"
	echo "$wall $(echo "$user + $sys" | bc) ${mbps:-0} $((rss / 1024)) ${text:-0}"
}

# best of RUNS (the machine may be shared): the fastest wall time, with its other figures
best() {
	threads=$1 bin=$2
	out=""
	i=0
	while [ $i -lt "$RUNS" ]; do
		r=$(run "$threads" "$bin" --no-cache) || return 1
		if [ -z "$out" ] || [ "$(echo "$(echo $r | cut -d' ' -f1) < $(echo $out | cut -d' ' -f1)" | bc)" -eq 1 ]; then
			out=$r
			cp "$tmp/phases" "$tmp/best-phases-$threads"
		fi
		i=$((i + 1))
	done
	echo "$out"
}

echo "struct-bench: $(uname -m), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), best of $RUNS runs"
printf '%-10s %8s %8s %8s %9s %8s %8s %8s %9s %8s %9s\n' binary text_MB 1t_wall 1t_cpu 1t_MB/s \
	1t_RSS 2t_wall 2t_cpu 2t_MB/s speedup cache_hit
status=0
: >"$tmp/notes"
for name in $ROWS; do
	case $name in
	petsc) bin=$PETSC ;;
	libjvm) bin=$JVM ;;
	libLLVM) bin=$LLVM ;;
	rustc) bin=$RUSTC ;;
	rustup) bin=$RUSTUP ;;
	*) echo "struct-bench: no binary named '$name' (petsc libjvm libLLVM rustc rustup)" >&2; exit 2 ;;
	esac
	if [ -z "$bin" ]; then
		echo "  $name: skipped: no rustup toolchain with librustc_driver" >>"$tmp/notes"
		continue
	fi
	echo "  $name: $bin" >>"$tmp/notes"
	one=$(best 1 "$bin") || { status=1; continue; }
	two=$(best 2 "$bin") || { status=1; continue; }
	rm -rf "$tmp/cache"
	run 1 "$bin" --cache "$tmp/cache" >/dev/null || { status=1; continue; }
	hit=$(run 1 "$bin" --cache "$tmp/cache" | cut -d' ' -f1)
	set -- $one $two
	speedup=$(echo "scale=2; $1 / $6" | bc)
	printf '%-10s %8s %7ss %7ss %9s %6sMB %7ss %7ss %9s %7sx %8ss\n' "$name" "$5" "$1" "$2" \
		"$3" "$4" "$6" "$7" "$8" "$speedup" "$hit"
	for t in 1 2; do
		echo "  $name, $t thread(s), phases (wall/CPU): $(cat "$tmp/best-phases-$t")" >>"$tmp/notes"
	done
done
cat "$tmp/notes"
echo "struct-bench: wall = elapsed seconds; cpu = user + system seconds; RSS = peak resident memory"
exit $status
