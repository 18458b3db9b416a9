#!/bin/sh
# SPDX-License-Identifier: MIT
# measure-bench.sh: overhead, fixed cost, data size, call-path quality and memory of measure vs perf record.
#
#   sh bench/measure-bench.sh [BUILD_DIR]
#
# BUILD_DIR is a configured and built tree (default: the repository's own _build/, which
# run-tests.sh and scripts/build.sh create).  It needs BUILD_DIR/measure/measure, tools/fathom-dump
# and tests/helper/test-tool (built by make check), plus gcc and awk; perf (Debian: linux-perf) is optional, its columns
# are skipped when it is absent or cannot record.  Nothing is installed.
# Environment: RUNS repetitions (default 5), MEM_SECONDS length of the memory run (default 60),
#              ONLY="callheavy deep ..." a subset of the workloads (matmul callheavy threads2
#              threads8 forkexec deep), TMPDIR where the scratch directory goes (removed at exit).
# The workloads are bench/workloads/*.c, built with gcc -O2 -g (no frame pointers).  Every
# program prints its own CPU time (cpu_s=, getrusage self + children); the CPU ratios compare
# those, so they measure the slowdown inside the program, not the tools' own processes.  The
# single-threaded workloads (all but threads2 and threads8) run pinned, every configuration of
# a round on the same CPU, CPUs in turn (bench/pin.sh; PIN=0 leaves the scheduler free).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/workloads-lib.sh"
MEM_SECONDS=${MEM_SECONDS:-60}
use_build_tree measure-bench "${1:-$(dirname "$HERE")/_build}" measure/measure tools/fathom-dump \
	tests/helper/test-tool
MEASURE=$B/measure/measure
DUMP=$B/tools/fathom-dump
TT=$B/tests/helper/test-tool
command -v gcc >/dev/null || { echo "measure-bench: gcc not found: apt-get install gcc" >&2; exit 2; }
command -v awk >/dev/null || { echo "measure-bench: awk not found: apt-get install mawk" >&2; exit 2; }

. "$HERE/pin.sh"
SCR=$(mktemp -d "${TMPDIR:-/tmp}/measure-bench.XXXXXX") || exit 2
trap 'rm -rf "$SCR"' EXIT
trap 'exit 130' INT TERM
BIN=$SCR/bin
mkdir -p "$BIN"
CSV=$SCR/runs.csv

PERF=${PERF:-perf}
HAVE_PERF=0
if command -v "$PERF" >/dev/null 2>&1 &&
   "$PERF" record -q --no-bpf-event -e cpu-clock -F 300 -g -o "$SCR/probe.data" -- /bin/true >/dev/null 2>&1; then
	HAVE_PERF=1
	PERFNOTE="perf: $("$PERF" --version 2>/dev/null)"
else
	PERFNOTE="perf: not usable here (absent, or perf record failed: Debian package linux-perf, kernel.perf_event_paranoid): perf columns are skipped"
fi
rm -f "$SCR/probe.data"

say() { printf '%s\n' "$*"; }
hr() { say ""; say "== $*"; }

# --- build -------------------------------------------------------------------------------------
W=$HERE/workloads
build_workloads measure-bench "$BIN" matmul callheavy deep forkexec fe_child threads
gcc -O2 -shared -fPIC -o "$BIN/libsigfloor.so" "$W/sigfloor.c" || { echo "measure-bench: cannot build sigfloor" >&2; exit 2; }

# name|command, run in the scratch bin directory
WORKLOADS=(
	"matmul|./matmul ijk 1024 1"
	"callheavy|./callheavy"
	"threads2|./threads 2"
	"threads8|./threads 8"
	"forkexec|./forkexec 50"
	"deep|./deep 5000"
)
select_workloads measure-bench
CONFIGS="bare m300 m5000 m300t floor300 floor5000"
[ $HAVE_PERF = 1 ] && CONFIGS="$CONFIGS fp300 dw300 fp5000 dw5000"

perf_opts() {
	case $1 in
	fp300) echo "--no-bpf-event -e cpu-clock -F 300 -g" ;;
	dw300) echo "--no-bpf-event -e cpu-clock -F 300 --call-graph dwarf" ;;
	fp5000) echo "--no-bpf-event -e cpu-clock -F 5000 -g" ;;
	dw5000) echo "--no-bpf-event -e cpu-clock -F 5000 --call-graph dwarf" ;;
	esac
}

# bytes of the TRCE chunks (stored, i.e. compressed, size) of measurement files, from each
# file's table of contents (doc/formats.md section 2)
trace_bytes() {
	local f size toc n total=0 t
	for f in "$@"; do
		size=$(stat -c %s "$f")
		toc=$(od -An -v -tu8 -j $((size - 32)) -N 8 "$f" | tr -d ' ')
		n=$(od -An -v -tu4 -j $((size - 24)) -N 4 "$f" | tr -d ' ')
		t=$(od -An -v -tu1 -j "$toc" -N $((40 * n)) "$f" | awk '
			{ for (i = 1; i <= NF; i++) b[k++] = $i }
			END { for (o = 0; o + 40 <= k; o += 40) {
				if (b[o] == 84 && b[o+1] == 82 && b[o+2] == 67 && b[o+3] == 69) {   # "TRCE"
					st = 0; for (j = 7; j >= 0; j--) st = st * 256 + b[o+16+j]; s += st } }
			      printf "%d\n", s }')
		total=$((total + t))
	done
	echo "$total"
}

# perf_chains FILE.data -> "samples reach_fraction max_depth" (reach: main or worker on the chain)
perf_chains() {
	"$PERF" script -F tid,ip,sym --max-stack 20000 -i "$1" 2>/dev/null | awk '
		function flush() { if (n == 0) return; ns++; if (hit) nh++; if (n > md) md = n; n = 0; hit = 0 }
		/^[ \t]*$/ { flush(); next }
		/^[ \t]*[0-9]+[ \t]*$/ { flush(); next }
		{ n++; sym = $2; sub(/\+0x[0-9a-f]+$/, "", sym); if (sym == "main" || sym == "worker") hit = 1 }
		END { flush(); printf "%d %.4f %d\n", ns, ns ? nh / ns : 0, md }'
}

# measure_quality DIR -> "total reach_fraction complete_fraction max_depth"
measure_quality() {
	"$TT" profile -r main -r worker "$1"/*.fthm 2>/dev/null | awk '
		$1 == "total" { t = $2 } $1 == "complete" { c = $2 } $1 == "depth" { d = $2 }
		$1 == "reach" { r += $3 }
		END { printf "%d %.4f %.4f %d\n", t, t ? r / t : 0, t ? c / t : 0, d }'
}

# run_one WORKLOAD CONFIG RUN ARGS... -> appends a line to $CSV:
# wl,cfg,run,wall,cpu,maxrss_kb,data_bytes,samples,trace_bytes,trace_records,dropped,partial,lost
run_one() {
	local wl=$1 cfg=$2 run=$3; shift 3
	local out=$SCR/out.$wl.$cfg dd=$SCR/d.$wl.$cfg err=$SCR/err t0 t1 cpu rss bytes=0 samples=0
	local tb=0 tr=0 dropped=0 partial=0 lost=0 pin=
	case $wl in threads*) ;; *) pin=$(pin_prefix "$run") ;; esac
	rm -rf "$dd" "$out.data"
	cd "$BIN" || exit 2
	t0=$EPOCHREALTIME
	case $cfg in
	bare) $pin "$@" >"$out.stdout" 2>"$err" ;;
	m300) $pin "$MEASURE" -o "$dd" -e task-clock@f300 "$@" >"$out.stdout" 2>"$err" ;;
	m5000) $pin "$MEASURE" -o "$dd" -e task-clock@f5000 "$@" >"$out.stdout" 2>"$err" ;;
	m300t) $pin "$MEASURE" -o "$dd" -e task-clock@f300 -t "$@" >"$out.stdout" 2>"$err" ;;
	floor*) FLOOR_RATE=${cfg#floor} LD_PRELOAD=$BIN/libsigfloor.so $pin "$@" >"$out.stdout" 2>"$err" ;;
	*) $pin "$PERF" record $(perf_opts "$cfg") -o "$out.data" -- "$@" >"$out.stdout" 2>"$err" ;;
	esac
	local rc=$?
	t1=$EPOCHREALTIME
	[ $rc = 0 ] || echo "$wl $cfg run $run: exit status $rc; $(grep -h 'failed=' "$out.stdout" | head -n 1)" \
		"$(grep -h 'wrote no summary' "$err" | wc -l) processes without a summary" >>"$SCR/warnings"
	cpu=$(sed -n 's/^cpu_s=//p' "$err" | tail -n 1)
	rss=$(sed -n 's/^maxrss_kb=//p' "$err" | tail -n 1)
	case $cfg in
	m*)
		bytes=$(cat "$dd"/*.fthm 2>/dev/null | wc -c)
		set -- $(cat "$dd"/*.log 2>/dev/null | awk '/^summary:/ { r += $6; d += $8; p += $10; e += $14 }
			END { print r + 0, d + 0, p + 0, e + 0 }')
		samples=$1 dropped=$2 partial=$3
		[ "$4" != 0 ] && echo "$wl $cfg run $run: measure logged $4 errors" >>"$SCR/warnings"
		if [ "$cfg" = m300t ] && [ "$bytes" -gt 0 ]; then
			tb=$(trace_bytes "$dd"/*.fthm)
			tr=$("$DUMP" "$dd"/*.fthm | awk '/^trace: [0-9]+ records/ { s += $2 } END { print s + 0 }')
		fi
		;;
	bare|floor*) ;;
	*)
		bytes=$(stat -c %s "$out.data" 2>/dev/null || echo 0)
		samples=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$err" | tail -n 1)
		lost=$(grep -ci 'lost' "$err")
		;;
	esac
	[ -n "$cpu" ] || { echo "$wl $cfg run $run: no cpu_s= from the program: $(tail -n 2 "$err" | tr '\n' ' ')" >>"$SCR/warnings"; cpu=NA; }
	grep -qi 'lost' "$err" && echo "$wl $cfg run $run: $(grep -i 'lost' "$err" | head -n 1)" >>"$SCR/warnings"
	echo "$wl,$cfg,$run,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'),$cpu,${rss:-NA},$bytes,${samples:-0},$tb,$tr,$dropped,$partial,$lost" >>"$CSV"
	# keep the files of the last round at 300 and 5000 samples/s for the call-path section
	if [ "$run" = "$RUNS" ]; then
		case $cfg in
		m300|m5000) rm -rf "$SCR/keep.$wl.$cfg"; [ -d "$dd" ] && mv "$dd" "$SCR/keep.$wl.$cfg" ;;
		fp300|dw300|fp5000|dw5000) [ -f "$out.data" ] && mv "$out.data" "$SCR/keep.$wl.$cfg.data" ;;
		esac
	fi
	rm -rf "$dd" "$out.data" "$out.data.old" "$out.stdout"
}

# median of the CSV column COL for workload WL and config CFG (NA when none)
AWK_MED='function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
	return n ? ((n % 2) ? a[(n + 1) / 2] : (a[n/2] + a[n/2 + 1]) / 2) : "NA" }'
med() {
	awk -F, -v w="$1" -v c="$2" -v col="$3" "$AWK_MED"'
		$1 == w && $2 == c && $col != "NA" { a[++n] = $col + 0 } END { print med(a, n) }' "$CSV"
}
# median of the ratio column A / column B per run
medratio() {
	awk -F, -v w="$1" -v c="$2" -v x="$3" -v y="$4" "$AWK_MED"'
		$1 == w && $2 == c && $x != "NA" && $y + 0 > 0 { a[++n] = $x / $y } END { print med(a, n) }' "$CSV"
}
# (max - min) / median of column COL
spread() {
	awk -F, -v w="$1" -v c="$2" -v col="$3" "$AWK_MED"'
		$1 == w && $2 == c && $col != "NA" { v = $col + 0; a[++n] = v; if (n == 1 || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
		END { m = med(a, n); if (n && m > 0) printf "%.0f%%\n", 100 * (hi - lo) / m; else print "NA" }' "$CSV"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "NA" || b == "NA" || b + 0 == 0) print "NA"; else printf "%.3f\n", a / b }'; }
fmt() { awk -v v="$1" -v f="$2" 'BEGIN { if (v == "NA" || v == "") print "NA"; else printf f "\n", v }'; }

START=$EPOCHREALTIME
say "measure-bench: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(uname -srm), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "build tree: $B"
say "$PERFNOTE"
say "RUNS=$RUNS (median of $RUNS, round-robin over workloads and configurations); scratch $SCR"
[ "$(cat /proc/sys/kernel/perf_event_max_sample_rate 2>/dev/null || echo 0)" -lt 5000 ] &&
	say "note: kernel.perf_event_max_sample_rate < 5000: the 5000 samples/s rows are throttled"

# --- 1. overhead, data and samples: every workload x configuration, round-robin --------------
for r in $(seq 1 "$RUNS"); do
	printf 'round %d/%d ... ' "$r" "$RUNS" >&2
	for w in "${WORKLOADS[@]}"; do
		for c in $CONFIGS; do
			# shellcheck disable=SC2086
			run_one "${w%%|*}" "$c" "$r" ${w#*|}
		done
	done
	printf '%.0f s so far\n' "$(awk -v a="$START" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')" >&2
done

PCOLS=""
[ $HAVE_PERF = 1 ] && PCOLS="fp300 dw300 fp5000 dw5000"
hr "1. CPU time inside the program (cpu_s, median of $RUNS) and ratio to bare"
say "   m300/m5000 = measure -e task-clock@f300/@f5000; fp/dw = perf record -e cpu-clock -F N -g / --call-graph dwarf"
say "   us/smp = (median CPU - bare median CPU) / median samples: the cost of one sample inside the program"
say "   (fp5000 us/smp: the same for perf -g at 5000 samples/s, measured in the same rounds)"
say "   floor = the program preloading an empty SIGTRAP handler sampled at 300 or 5000/s by the same perf sigtrap as"
say "   measure's (bench/workloads/sigfloor.c): what signal-based sampling costs on this machine before any profiler work"
printf '%-10s %7s %6s | %7s %6s %6s %6s | %7s %6s %6s %6s | %6s' workload bare spread m300 ratio us/smp floor m5000 ratio us/smp floor "m300t"
for c in $PCOLS; do printf ' %6s' "$c"; done
[ $HAVE_PERF = 1 ] && printf ' %7s' "fp5000us"
printf '\n'
FAIL300="" FAIL5000="" WORST300=0 WORST5000=0 WORST300W="" WORST5000W=""
for w in "${WORKLOADS[@]}"; do
	wl=${w%%|*}
	b=$(med "$wl" bare 5)
	m3=$(med "$wl" m300 5); m5=$(med "$wl" m5000 5); mt=$(med "$wl" m300t 5)
	s3=$(med "$wl" m300 8); s5=$(med "$wl" m5000 8)
	r3=$(ratio "$m3" "$b"); r5=$(ratio "$m5" "$b")
	u3=$(awk -v m="$m3" -v b="$b" -v s="$s3" 'BEGIN { if (s + 0 > 0 && m != "NA") printf "%.1f", 1e6 * (m - b) / s; else print "NA" }')
	u5=$(awk -v m="$m5" -v b="$b" -v s="$s5" 'BEGIN { if (s + 0 > 0 && m != "NA") printf "%.1f", 1e6 * (m - b) / s; else print "NA" }')
	f3=$(ratio "$(med "$wl" floor300 5)" "$b") fl=$(ratio "$(med "$wl" floor5000 5)" "$b")
	printf '%-10s %7s %6s | %7s %6s %6s %6s | %7s %6s %6s %6s | %6s' "$wl" "$(fmt "$b" %.3f)" "$(spread "$wl" bare 5)" \
		"$(fmt "$m3" %.3f)" "$r3" "$u3" "$f3" "$(fmt "$m5" %.3f)" "$r5" "$u5" "$fl" "$(ratio "$mt" "$b")"
	for c in $PCOLS; do printf ' %6s' "$(ratio "$(med "$wl" "$c" 5)" "$b")"; done
	[ $HAVE_PERF = 1 ] && printf ' %7s' "$(awk -v m="$(med "$wl" fp5000 5)" -v b="$b" -v s="$(med "$wl" fp5000 8)" \
		'BEGIN { if (s + 0 > 0 && m != "NA") printf "%.1f", 1e6 * (m - b) / s; else print "NA" }')"
	printf '\n'
	sp=$(spread "$wl" bare 5)
	r3="$r3,noise$sp floor $f3" r5="$r5,noise$sp floor $fl"
	if [ "${r3%%,*}" = NA ] || awk -v r="${r3%%,*}" 'BEGIN { exit !(r > 1.02) }'; then FAIL300="$FAIL300 $wl(${r3/,/ })"; fi
	if [ "${r5%%,*}" = NA ] || awk -v r="${r5%%,*}" 'BEGIN { exit !(r > 1.10) }'; then FAIL5000="$FAIL5000 $wl(${r5/,/ })"; fi
	r3=${r3%%,*} r5=${r5%%,*}
	awk -v r="$r3" -v m="$WORST300" 'BEGIN { exit !(r != "NA" && r > m) }' && { WORST300=$r3; WORST300W=$wl; }
	awk -v r="$r5" -v m="$WORST5000" 'BEGIN { exit !(r != "NA" && r > m) }' && { WORST5000=$r5; WORST5000W=$wl; }
done
say "   spread = (max - min) / median of the bare runs: differences below it are noise"
# A fork/exec driver pays per process, not per sample: its cost per child says more than us/smp.
for w in "${WORKLOADS[@]}"; do
	[ "${w%%|*}" = forkexec ] || continue
	children=${w##* }
	awk -v b="$(med forkexec bare 5)" -v m="$(med forkexec m300 5)" -v f="$(med forkexec floor300 5)" \
	    -v n="$children" 'BEGIN { if (b != "NA" && m != "NA" && f != "NA" && n > 0)
		printf "   forkexec: CPU per child (%d fork+execs) over bare at 300/s: measure %.2f ms, floor %.2f ms\n",
		       n, 1e3 * (m - b) / n, 1e3 * (f - b) / n }'
done

hr "1b. Whole command: wall time (median of $RUNS) and ratio to bare; samples recorded, dropped/lost"
printf '%-10s %7s | %7s %6s | %7s %6s' workload bare m300 ratio m5000 ratio
for c in $PCOLS; do printf ' | %6s %6s' "$c" ratio; done
printf ' | %s\n' "samples m300/m5000, measure dropped+partial, perf runs with 'lost'"
for w in "${WORKLOADS[@]}"; do
	wl=${w%%|*}
	b=$(med "$wl" bare 4)
	printf '%-10s %7s' "$wl" "$(fmt "$b" %.3f)"
	for c in m300 m5000 $PCOLS; do
		x=$(med "$wl" "$c" 4)
		printf ' | %7s %6s' "$(fmt "$x" %.3f)" "$(ratio "$x" "$b")"
	done
	info=$(awk -F, -v w="$wl" '$1 == w && ($2 == "m300" || $2 == "m5000") { d += $11; p += $12 }
		$1 == w && $2 ~ /^(fp|dw)/ && $13 > 0 { l++ } END { printf "dropped %d partial %d, perf lost in %d runs", d, p, l }' "$CSV")
	printf ' | %s/%s, %s\n' "$(fmt "$(med "$wl" m300 8)" %.0f)" "$(fmt "$(med "$wl" m5000 8)" %.0f)" "$info"
done

# --- 2. fixed cost ---------------------------------------------------------------------------
hr "2. Fixed cost on /bin/true: wall and CPU (of the whole command, children included), median of 10"
FX=$SCR/fixed.csv
: >"$FX"
# CPU time of this shell's finished children, from the times builtin (run in this shell: a
# command substitution would be a new process with no children)
cpu_children() { awk 'NR == 2 { split($1, u, "m"); split($2, s, "m"); sub(/s/, "", u[2]); sub(/s/, "", s[2]); printf "%.4f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }
FCONF="bare measure"
[ $HAVE_PERF = 1 ] && FCONF="$FCONF perf"
for i in $(seq 1 10); do
	for c in $FCONF; do
		rm -rf "$SCR/fx.d" "$SCR/fx.data"
		times >"$SCR/times0"; t0=$EPOCHREALTIME
		case $c in
		bare) /bin/true ;;
		measure) "$MEASURE" -o "$SCR/fx.d" -e task-clock /bin/true >/dev/null 2>&1 ;;
		perf) "$PERF" record --no-bpf-event -e cpu-clock -F 300 -g -o "$SCR/fx.data" /bin/true >/dev/null 2>&1 ;;
		esac
		t1=$EPOCHREALTIME; times >"$SCR/times1"
		c0=$(cpu_children "$SCR/times0"); c1=$(cpu_children "$SCR/times1")
		echo "true,$c,$i,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'),$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.4f", b - a }')" >>"$FX"
	done
done
rm -rf "$SCR/fx.d" "$SCR/fx.data"
fxmed() { awk -F, -v c="$1" -v col="$2" "$AWK_MED"' $2 == c { a[++n] = $col + 0 } END { print med(a, n) }' "$FX"; }
printf '%-22s %9s %9s %9s\n' command wall_s cpu_s "wall-bare"
FB=$(fxmed bare 4)
for c in $FCONF; do
	case $c in
	bare) label="bare /bin/true" ;;
	measure) label="measure -e task-clock" ;;
	perf) label="perf record -g (nobpf)" ;;
	esac
	printf '%-22s %9s %9s %9s\n' "$label" "$(fmt "$(fxmed "$c" 4)" %.4f)" "$(fmt "$(fxmed "$c" 5)" %.4f)" \
		"$(awk -v a="$(fxmed "$c" 4)" -v b="$FB" 'BEGIN { printf "%.4f", a - b }')"
done
FIXED=$(fxmed measure 4)

# --- 3. data size ----------------------------------------------------------------------------
hr "3. Data written per sample (bytes of measurement files or perf.data / samples, median of $RUNS)"
say "   m300/m5000 = measure without -t, m300t = with -t (all file bytes / samples: a profile's size follows"
say "   its distinct paths, not its samples); trace = TRCE chunk bytes / trace records, what -t adds per sample"
printf '%-10s %8s %8s %8s %8s' workload "m300" "m300t" "trace" "m5000"
for c in $PCOLS; do printf ' %8s' "$c"; done
printf '\n'
WORSTTR=0 WORSTTRW=""
for w in "${WORKLOADS[@]}"; do
	wl=${w%%|*}
	a=$(medratio "$wl" m300 7 8); t=$(medratio "$wl" m300t 7 8); tb=$(medratio "$wl" m300t 9 10)
	printf '%-10s %8s %8s %8s %8s' "$wl" "$(fmt "$a" %.1f)" "$(fmt "$t" %.1f)" "$(fmt "$tb" %.2f)" "$(fmt "$(medratio "$wl" m5000 7 8)" %.1f)"
	for c in $PCOLS; do printf ' %8s' "$(fmt "$(medratio "$wl" "$c" 7 8)" %.0f)"; done
	printf '\n'
	awk -v r="$tb" -v m="$WORSTTR" 'BEGIN { exit !(r != "NA" && r > m) }' && { WORSTTR=$tb; WORSTTRW=$wl; }
done
say "   total bytes (median): $(for w in "${WORKLOADS[@]}"; do wl=${w%%|*}; printf '%s m300 %s m300t %s' "$wl" "$(fmt "$(med "$wl" m300 7)" %.0f)" "$(fmt "$(med "$wl" m300t 7)" %.0f)"; [ $HAVE_PERF = 1 ] && printf ' dw5000 %s' "$(fmt "$(med "$wl" dw5000 7)" %.0f)"; printf '; '; done)"

# --- 4. call-path quality --------------------------------------------------------------------
hr "4. Call paths (last round's files): share of samples whose path reaches main (worker in threads), max depth"
say "   measure: test-tool profile -r main -r worker over every thread file of every process; perf: perf script"
printf '%-10s | %8s %8s %6s | %8s %6s' workload "m300" complete depth "m5000" depth
[ $HAVE_PERF = 1 ] && printf ' | %8s %6s | %8s %6s' "perf fp" depth "dwarf" depth
printf '\n'
QFAIL="" DEEPM=0 DEEPREACH=0
for w in "${WORKLOADS[@]}"; do
	wl=${w%%|*}
	set -- $(measure_quality "$SCR/keep.$wl.m300")
	q3=$2 c3=$3 d3=$4
	set -- $(measure_quality "$SCR/keep.$wl.m5000")
	q5=$2 d5=$4
	printf '%-10s | %7.2f%% %7.2f%% %6s | %7.2f%% %6s' "$wl" "$(awk -v x="$q3" 'BEGIN { print 100 * x }')" \
		"$(awk -v x="$c3" 'BEGIN { print 100 * x }')" "$d3" "$(awk -v x="$q5" 'BEGIN { print 100 * x }')" "$d5"
	if [ $HAVE_PERF = 1 ]; then
		set -- $(perf_chains "$SCR/keep.$wl.fp300.data"); pf=$2 pfd=$3
		set -- $(perf_chains "$SCR/keep.$wl.dw300.data"); pd=$2 pdd=$3
		printf ' | %7.2f%% %6s | %7.2f%% %6s' "$(awk -v x="$pf" 'BEGIN { print 100 * x }')" "$pfd" "$(awk -v x="$pd" 'BEGIN { print 100 * x }')" "$pdd"
	fi
	printf '\n'
	awk -v x="$q3" 'BEGIN { exit !(x < 0.99) }' && QFAIL="$QFAIL $wl($(awk -v x="$q3" 'BEGIN { printf "%.1f%%", 100 * x }'))"
	[ "$wl" = deep ] && { DEEPM=$d3; DEEPREACH=$q3; }
done
say "   deep 5000 needs 5001 frames (5000 descend + main) below bottom_work to reach main; perf's"
say "   fp chains stop at kernel.perf_event_max_stack=$(cat /proc/sys/kernel/perf_event_max_stack 2>/dev/null || echo '?'), dwarf at its 8 KB stack copy"
rm -rf "$SCR"/keep.*

# --- 5. memory -------------------------------------------------------------------------------
# threads 8 with its work scaled so that the bare run lasts about MEM_SECONDS of wall time here
tb=$(med threads8 bare 4)
if [ "$tb" = NA ]; then
	# threads8 was not among the workloads run: time one default run here
	t0=$EPOCHREALTIME; (cd "$BIN" && ./threads 8 >/dev/null 2>&1); t1=$EPOCHREALTIME
	tb=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
fi
UNITS=$(awk -v t="$tb" -v s="$MEM_SECONDS" 'BEGIN { u = (t > 0) ? int(400 * s / t) : 20000; if (u < 400) u = 400; print u }')
hr "5. Memory: peak RSS of 'threads 8 $UNITS' (about ${MEM_SECONDS} s; 9 threads), bare vs measure -e task-clock@f300"
cd "$BIN" || exit 2
rm -rf "$SCR/mem.d"
GT=""
[ -x /usr/bin/time ] && GT="/usr/bin/time -f %M -o"
# with GNU time, also the peak over the whole command (measure's launcher and its writing at exit)
if [ -n "$GT" ]; then
	$GT "$SCR/gt.bare" ./threads 8 "$UNITS" >/dev/null 2>"$SCR/mem.bare"
	$GT "$SCR/gt.m" "$MEASURE" -o "$SCR/mem.d" -e task-clock@f300 ./threads 8 "$UNITS" >/dev/null 2>"$SCR/mem.m"
else
	./threads 8 "$UNITS" >/dev/null 2>"$SCR/mem.bare"
	"$MEASURE" -o "$SCR/mem.d" -e task-clock@f300 ./threads 8 "$UNITS" >/dev/null 2>"$SCR/mem.m"
fi
RB=$(sed -n 's/^maxrss_kb=//p' "$SCR/mem.bare" | tail -n 1)
RM=$(sed -n 's/^maxrss_kb=//p' "$SCR/mem.m" | tail -n 1)
EB=$(sed -n 's/^elapsed_s=//p' "$SCR/mem.bare" | tail -n 1)
EM=$(sed -n 's/^elapsed_s=//p' "$SCR/mem.m" | tail -n 1)
MM=$("$DUMP" "$SCR"/mem.d/*.fthm | awk '/measurement memory bytes:/ { s += $NF; n++; if ($NF > mx) mx = $NF } END { printf "%d %d %d\n", s, mx, n }')
MS=$(awk '/^summary:/ { s += $6 } END { print s + 0 }' "$SCR"/mem.d/*.log)
set -- $MM
ADDED=$(awk -v a="${RM:-0}" -v b="${RB:-0}" 'BEGIN { printf "%.1f", (a - b) / 1024 }')
printf '%-34s %12s %12s\n' "" bare measure
printf '%-34s %12s %12s\n' "elapsed s (program's own)" "$(fmt "${EB:-NA}" %.1f)" "$(fmt "${EM:-NA}" %.1f)"
printf '%-34s %12s %12s\n' "peak RSS KB (getrusage, at exit)" "${RB:-NA}" "${RM:-NA}"
printf '%-34s %12s %12s\n' "added by measure, MB" "" "$ADDED"
if [ -n "$GT" ]; then
	GB=$(tail -n 1 "$SCR/gt.bare"); GM=$(tail -n 1 "$SCR/gt.m")
	GADDED=$(awk -v a="$GM" -v b="$GB" 'BEGIN { printf "%.1f", (a - b) / 1024 }')
	printf '%-34s %12s %12s\n' "peak RSS KB (GNU time, whole run)" "$GB" "$GM"
	printf '%-34s %12s %12s\n' "added, whole run incl. exit, MB" "" "$GADDED"
	# the target takes the larger of the two
	ADDED=$(awk -v a="$ADDED" -v g="$GADDED" 'BEGIN { print (g + 0 > a + 0) ? g : a }')
else
	say "   (no /usr/bin/time: peak RSS after the program's exit-time writing is not measured; apt-get install time)"
fi
printf '%-34s %12s %12s\n' "samples recorded" "" "$MS"
printf '%-34s %12s %12s\n' "measurement memory, all $3 threads" "" "$1 B"
printf '%-34s %12s %12s\n' "measurement memory, largest thread" "" "$2 B"
rm -rf "$SCR/mem.d"

# --- verdicts --------------------------------------------------------------------------------
if [ -s "$SCR/warnings" ]; then
	hr "Warnings ($(wc -l <"$SCR/warnings") runs): failed programs, perf's lost events, missing output"
	cat "$SCR/warnings"
fi
hr "Targets"
verdict() { if [ -z "$2" ]; then say "PASS  $1"; else say "FAIL  $1:$2"; fi; }
say "(each failing workload: its ratio, and the bare runs' spread, below which a difference is noise)"
verdict "CPU overhead at 300 samples/s <= +2% on every workload (worst $WORST300W $WORST300)" "$FAIL300"
verdict "CPU overhead at 5000 samples/s <= +10% on every workload (worst $WORST5000W $WORST5000)" "$FAIL5000"
verdict "fixed cost of measure on /bin/true < 0.14 s wall (median $(fmt "$FIXED" %.3f) s)" \
	"$(awk -v f="$FIXED" 'BEGIN { if (f == "NA" || f >= 0.14) printf " %s s", f }')"
verdict "a trace costs <= 16 bytes per sample (worst $WORSTTRW $(fmt "$WORSTTR" %.2f) B)" \
	"$(awk -v t="$WORSTTR" -v w="$WORSTTRW" 'BEGIN { if (w == "" || t > 16) printf " %s %s B", w, t }')"
verdict "memory added <= 32 MB over a ${MEM_SECONDS} s, 9-thread run at 300 samples/s ($ADDED MB)" \
	"$(awk -v a="$ADDED" -v rb="${RB:-}" -v rm="${RM:-}" 'BEGIN { if (rb == "" || rm == "" || a > 32) printf " %s MB", a }')"
verdict "call paths: >= 99% of samples reach main/worker at 300 samples/s" "$QFAIL"
case " ${WORKLOADS[*]%%|*} " in
*" deep "*)
	verdict "deep 5000: full 5001-frame paths ($DEEPM frames max, $(awk -v x="$DEEPREACH" 'BEGIN { printf "%.1f", 100 * x }')% reach main)" \
		"$(awk -v d="$DEEPM" 'BEGIN { if (d < 5001) printf " %d frames", d }')" ;;
*) say "SKIP  deep 5000: the deep workload was not run (ONLY=$ONLY)" ;;
esac
say "measure-bench: done in $(awk -v a="$START" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", b - a }') s"
