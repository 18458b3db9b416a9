#!/bin/sh
# SPDX-License-Identifier: MIT
# prof-vs-perf.sh: prof's time and peak memory against `perf report --stdio` on recordings of
# the same programs at the same rates (issue: prof is at least 2x faster than perf report on a
# dwarf recording, no slower than on a frame-pointer one, and uses no more memory).
#
#   sh bench/prof-vs-perf.sh [BUILD_DIR]
#
# For every workload and rate: measure (cpu-clock@fRATE) and perf record (cpu-clock -F RATE, -g
# and --call-graph dwarf) run the program once each; then, RUNS times each, the post-processing
# steps are timed: prof reading the structure files that struct wrote beforehand ("prof"),
# struct without its cache plus prof ("struct+prof", the cold first run), and
# `perf report --stdio` on each recording.  Medians of wall time and of peak RSS are printed,
# with the ratios perf/prof.  Environment: RUNS (default 5), RATES (default "1000 5000"),
# ONLY (a subset of: matmul callheavy threads2), TMPDIR.  Needs perf (Debian: linux-perf) and
# GNU time (Debian: time).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/workloads-lib.sh"
RATES=${RATES:-"1000 5000"}
B=${1:-$HERE/../_build}
B=$(cd "$B" 2>/dev/null && pwd) || { echo "prof-vs-perf: build directory ${1:-$HERE/../_build} not found" >&2; exit 2; }
MEASURE=$B/measure/measure
STRUCT=$B/struct/struct
PROF=$B/prof/prof
for x in "$MEASURE" "$STRUCT" "$PROF"; do
	[ -x "$x" ] || { echo "prof-vs-perf: $x not found: build first (make -C $B)" >&2; exit 2; }
done
PERF=${PERF:-perf}
command -v "$PERF" >/dev/null 2>&1 || { echo "prof-vs-perf: perf not found: apt-get install linux-perf" >&2; exit 2; }
/usr/bin/time -f %e true >/dev/null 2>&1 || { echo "prof-vs-perf: needs GNU time: apt-get install time" >&2; exit 2; }

SCR=$(mktemp -d "${TMPDIR:-/tmp}/prof-vs-perf.XXXXXX") || exit 2
trap 'rm -rf "$SCR"' EXIT
trap 'exit 130' INT TERM
BIN=$SCR/bin
mkdir -p "$BIN"
build_workloads prof-vs-perf "$BIN" matmul callheavy threads

WORKLOADS=(
	"matmul|./matmul ijk 1024 1"
	"callheavy|./callheavy"
	"threads2|./threads 2"
)
select_workloads prof-vs-perf

# timed NAME COMMAND...: runs COMMAND with its output discarded, appends "NAME wall rss_kb"
timed() {
	local name=$1; shift
	if ! /usr/bin/time -f "%e %M" -o "$SCR/time" "$@" >/dev/null 2>"$SCR/err"; then
		echo "prof-vs-perf: failed: $*" >&2
		tail -5 "$SCR/err" >&2
		exit 1
	fi
	echo "$name $(cat "$SCR/time")" >>"$SCR/times"
}
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
col() { awk -v n="$1" -v c="$2" '$1 == n { print $c }' "$SCR/times" | median; }

echo "prof-vs-perf: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), RUNS=$RUNS"
echo "$("$PERF" --version)"
printf '\n%-10s %5s %8s | %8s %8s %8s %8s | %7s %7s %7s | %9s %9s %9s\n' workload rate samples \
	prof s+p fp-rep dw-rep fp/prof dw/prof dw/s+p prof-MB fp-MB dw-MB
fail=0
for w in "${WORKLOADS[@]}"; do
	name=${w%%|*}; cmd=${w#*|}
	for rate in $RATES; do
		d=$SCR/$name-$rate
		rm -rf "$d" && mkdir -p "$d"
		cd "$BIN" || exit 2
		"$MEASURE" -e cpu-clock@f"$rate" -o "$d/m" $cmd >/dev/null 2>"$SCR/err" ||
			{ echo "prof-vs-perf: measure failed on $name" >&2; cat "$SCR/err" >&2; exit 1; }
		"$PERF" record -q --no-bpf-event -e cpu-clock -F "$rate" -g -o "$d/fp.data" -- $cmd >/dev/null 2>&1 ||
			{ echo "prof-vs-perf: perf record -g failed on $name" >&2; exit 1; }
		"$PERF" record -q --no-bpf-event -e cpu-clock -F "$rate" --call-graph dwarf -o "$d/dw.data" -- $cmd >/dev/null 2>&1 ||
			{ echo "prof-vs-perf: perf record --call-graph dwarf failed on $name" >&2; exit 1; }
		"$STRUCT" -o "$d/m/structs" --no-cache "$d/m" >/dev/null 2>&1 ||
			{ echo "prof-vs-perf: struct failed on $name" >&2; exit 1; }
		: >"$SCR/times"
		for r in $(seq "$RUNS"); do
			rm -rf "$d/db" "$d/cold"
			timed prof "$PROF" -o "$d/db" "$d/m"
			cp -r "$d/m" "$d/cold" && rm -rf "$d/cold/structs"
			timed struct "$STRUCT" --no-cache "$d/cold"
			timed prof-cold "$PROF" -o "$d/cold-db" "$d/cold"
			rm -rf "$d/cold" "$d/cold-db"
			timed fp "$PERF" report --stdio -i "$d/fp.data"
			timed dw "$PERF" report --stdio -i "$d/dw.data"
		done
		samples=$("$PERF" report --stdio -i "$d/fp.data" 2>/dev/null | awk '/^# Samples:/ { print $3; exit }')
		p=$(col prof 2); fp=$(col fp 2); dw=$(col dw 2)
		sp=$(paste -d' ' <(awk '$1 == "struct" { print $2 }' "$SCR/times") <(awk '$1 == "prof-cold" { print $2 }' "$SCR/times") | awk '{ print $1 + $2 }' | median)
		pm=$(col prof 3); fm=$(col fp 3); dm=$(col dw 3)
		printf '%-10s %5s %8s | %8.3f %8.3f %8.3f %8.3f | %7.2f %7.2f %7.2f | %9.1f %9.1f %9.1f\n' \
			"$name" "$rate" "$samples" "$p" "$sp" "$fp" "$dw" \
			"$(awk -v a="$fp" -v b="$p" 'BEGIN { print a / b }')" \
			"$(awk -v a="$dw" -v b="$p" 'BEGIN { print a / b }')" \
			"$(awk -v a="$dw" -v b="$sp" 'BEGIN { print a / b }')" \
			"$(awk -v k="$pm" 'BEGIN { print k / 1024 }')" "$(awk -v k="$fm" 'BEGIN { print k / 1024 }')" \
			"$(awk -v k="$dm" 'BEGIN { print k / 1024 }')"
		awk -v p="$p" -v fp="$fp" -v dw="$dw" -v pm="$pm" -v fm="$fm" -v dm="$dm" 'BEGIN {
			bad = (dw / p < 2) || (fp / p < 1) || (pm > fm && pm > dm); exit !bad }' && fail=1
	done
done
echo
echo "columns: median wall seconds of prof (structure files present), struct --no-cache + prof"
echo "(s+p), perf report --stdio on the -g (fp) and dwarf (dw) recordings; ratios perf/prof;"
echo "median peak RSS in MB.  Targets: dw/prof >= 2, fp/prof >= 1, prof-MB <= perf's."
[ $fail = 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL (some target missed: see the rows above)"
