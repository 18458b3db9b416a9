#!/bin/sh
# SPDX-License-Identifier: MIT
# t0414-view-mca.sh: view --batch --mca LOOP: a loop's static throughput from llvm-mca beside
# its measurement.  Two loops of known shape (mca-loops.c): a chain of four dependent adds
# (about four add latencies an iteration) and four independent adds (bounded by the ALU
# ports).  Each is checked against llvm-mca run by hand on the same bytes as objdump
# disassembles them (AT&T syntax, another disassembler than view's), with the CPU measure
# recorded (as /proc/cpuinfo has it) modelled by its LLVM name; beside a synthetic top-down
# measurement (tma-loops-lib.sh) the loop's level 1 is what was measured there; a loop that
# calls a function is said not to be modelled, and why; without llvm-mca, without the
# structure file, or with an llvm-mca that fails, view says so.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/tma-loops-lib.sh"

command -v llvm-mca >/dev/null 2>&1 || ls /usr/bin/llvm-mca-* >/dev/null 2>&1 ||
	skip_all "no llvm-mca (Debian: apt-get install llvm)"
command -v objdump >/dev/null 2>&1 || skip_all "no objdump to disassemble the loops by hand"
command -v python3 >/dev/null 2>&1 || skip_all "no python3 to read the JSON"
cc -g -O2 -o loops "$top_srcdir/tests/struct-workloads/mca-loops.c" 2>cc.err ||
	{ cat cc.err; skip_all "cannot compile the loops"; }
tool=$(command -v llvm-mca || ls /usr/bin/llvm-mca-* | sort -t- -k3 -n | tail -n 1)
line_of() {
	grep -n "$1" "$top_srcdir/tests/struct-workloads/mca-loops.c" | head -n 1 | cut -d: -f1
}
chain=$(line_of "for.*chain loop")
independent=$(line_of "for.*independent loop")
calls=$(line_of "for.*calling loop")

# field JSON KEY...: a value of view's JSON, by its keys (a list as space-separated items).
field() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[k]
print(" ".join(map(str, v)) if isinstance(v, list) else v)' "$@"
}

# by_hand JSON: llvm-mca on the loop's bytes as objdump prints them, with view's -mcpu.
by_hand() {
	set -- $(field "$1" mca range) "$(field "$1" mca mcpu)"
	objdump -d --no-show-raw-insn --start-address="$1" --stop-address="$2" loops |
		awk -v start="$1" '
		BEGIN { sub(/^0x/, "", start); print ".L" start ":" }
		/^ *[0-9a-f]+:\t/ {
			sub(/^ *[0-9a-f]+:\t/, "")
			if ($1 ~ /^j/ && $2 ~ /^[0-9a-f]+$/) $0 = $1 " .L" $2
			print
		}' >by-hand.s &&
	"$tool" -mcpu="$3" by-hand.s >by-hand.out 2>by-hand.err
}

test_expect_success 'setup: the loops measured, their structure and database' '
	measure -e task-clock -o m ./loops 100000000 >measure.out 2>&1 &&
	struct m >struct.out 2>&1 && prof -o db m >prof.out 2>&1
'
test_expect_success 'the dependent chain: four add latencies an iteration, as llvm-mca says by hand' '
	view --batch --mca "mca-loops.c:$chain" --format json db >chain.json && cat chain.json &&
	test "$(field chain.json mca status)" = ok &&
	test "$(field chain.json loop function)" = chain &&
	set -- $(field chain.json mca blocks) && test $# -ge 1 &&
	test "$1" = "$(field chain.json mca range | cut -d" " -f1)" &&
	by_hand chain.json && cat by-hand.out | head -n 12 &&
	grep -q "^Block RThroughput: *$(field chain.json mca block_rthroughput)" by-hand.out &&
	grep -q "^Total Cycles: *$(field chain.json mca total_cycles)$" by-hand.out &&
	python3 -c "import sys; c = float(sys.argv[1]); sys.exit(not 3.9 <= c <= 4.6)" \
		"$(field chain.json mca cycles_per_iteration)"
'
test_expect_success 'the independent adds: bounded by the ports, as llvm-mca says by hand' '
	view --batch --mca "mca-loops.c:$independent" --format json db >ind.json && cat ind.json &&
	test "$(field ind.json mca status)" = ok &&
	by_hand ind.json &&
	grep -q "^Block RThroughput: *$(field ind.json mca block_rthroughput)" by-hand.out &&
	grep -q "^Total Cycles: *$(field ind.json mca total_cycles)$" by-hand.out &&
	python3 -c "import sys
ind, chain, bound = map(float, sys.argv[1:])
sys.exit(not (ind < 0.6 * chain and bound <= ind <= 1.25 * bound))" \
		"$(field ind.json mca cycles_per_iteration)" \
		"$(field chain.json mca cycles_per_iteration)" \
		"$(field ind.json mca block_rthroughput)"
'
test_expect_success 'the CPU: the measured processor, as llvm-mca names it or the nearest it knows' '
	cpu=$(awk -F": *" "/^vendor_id/ {v = \$2} /^cpu family/ {f = \$2} /^model\t/ {m = \$2}
		/^stepping/ {s = \$2} END {print v, f, m, s}" /proc/cpuinfo) && echo "cpu: $cpu" &&
	test "$(field chain.json mca measured_cpu)" = "$cpu" &&
	from=$(field chain.json mca mcpu_from) && mcpu=$(field chain.json mca mcpu) &&
	echo "-mcpu=$mcpu from $from" && case "$from" in measured|host) ;; *) false ;; esac &&
	{ test "$from" = host || "$tool" -mcpu=help </dev/null 2>&1 | grep -q "^  $mcpu "; } &&
	view --batch --mca "mca-loops.c:$chain" --mcpu skylake --format json db >sky.json &&
	test "$(field sky.json mca mcpu)" = skylake && test "$(field sky.json mca mcpu_from)" = option
'
test_expect_success 'text: the figures beside the share of time measured there' '
	view --batch --mca "mca-loops.c:$chain" db >chain.txt && cat chain.txt &&
	grep -Eq "^loop at .*mca-loops.c:$chain in chain$" chain.txt &&
	grep -Eq "^measured: task-clock [0-9.]+ [mun]?s, [0-9.]+% of the program$" chain.txt &&
	grep -q "cycles and instructions were not measured" chain.txt &&
	grep -Eq "^  block_rthroughput [0-9.]+ cycles per iteration" chain.txt &&
	grep -Eq "^  [0-9.]+ cycles per iteration simulated" chain.txt &&
	grep -q "^  critical path:" chain.txt && grep -Eq "^    add .*dependency" chain.txt &&
	grep -Eq "^  [0-9]+ instructions in [0-9]+ blocks?, 0x" chain.txt &&
	grep -Eq "^    > 0x[0-9a-f]+  add " chain.txt
'
test_expect_success 'a loop that calls a function: not modelled, and why' '
	view --batch --mca "mca-loops.c:$calls" db >calls.txt && cat calls.txt &&
	grep -q "^llvm-mca: cannot be modelled: it calls a function (the call at 0x" calls.txt &&
	! grep -q block_rthroughput calls.txt &&
	view --batch --mca "mca-loops.c:$calls" --format json db >calls.json &&
	test "$(field calls.json mca status)" = "cannot be modelled"
'
test_expect_success 'without llvm-mca, or without the structure file, view says so' '
	mkdir bin && ln -s "$(command -v view)" bin/view &&
	PATH="$PWD/bin" view --batch --mca "mca-loops.c:$chain" db >none.txt &&
	grep -q "^llvm-mca: no llvm-mca: llvm-mca is not installed (Debian: apt-get install llvm)" none.txt &&
	XDG_CACHE_HOME="$PWD/empty-cache" view --batch --mca "mca-loops.c:$chain" db >nostruct.txt &&
	grep -q "^llvm-mca: no code: no structure file of .*loops with its build-id" nostruct.txt &&
	XDG_CACHE_HOME="$PWD/empty-cache" view --batch --mca "mca-loops.c:$chain" \
		--structs m/structs db >structs.txt && grep -q "block_rthroughput" structs.txt
'
test_expect_success 'beside a top-down measurement: the loop'"'"'s level 1 and cycles as measured' '
	tma_loops_place && tma_loops_db topdown &&
	line=$(tma_loops_line stream) && test -n "$line" &&
	view --batch --mca "tma-loops.c:$line" --structs tma-m/structs --format json tma-db \
		>tma.json && cat tma.json && test "$(field tma.json mca status)" = ok &&
	python3 -c "import json, sys
d = json.load(open(sys.argv[1]))
header, top = d[\"loop\"][\"header\"], d[\"measured\"][\"topdown\"]
want = {}
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) >= 4 and f[0] == \"ctx\" and int(f[1], 16) == int(header, 16):
        want[\" \".join(f[2:-1])] = float(f[-1])
level1 = [\"Retiring\", \"Bad Speculation\", \"Frontend Bound\", \"Backend Bound\"]
print(want, top)
assert all(abs(top[n] - want[n]) < 0.0015 for n in level1), \"level 1\"
assert d[\"measured\"][\"cycles\"] > 0 and d[\"measured\"][\"ipc\"] is None" tma.json tma-loops.want &&
	view --batch --mca "tma-loops.c:$line" --structs tma-m/structs tma-db >tma.txt &&
	grep -Eq "^  Backend Bound [0-9.]+% <$" tma.txt &&
	grep -Eq "^predicted [0-9.]+ cycles per iteration; measured: Backend Bound > Memory Bound$" tma.txt &&
	test "$(field tma.json measured bottleneck)" = "Backend Bound > Memory Bound" &&
	grep -q "^  cycles [0-9.e+]*; instructions not measured, so no IPC" tma.txt
'
test_expect_success 'an llvm-mca that prints nothing it can read, or fails: said, no figures' '
	mkdir fake && printf "#!/bin/sh\necho nothing useful\n" >fake/llvm-mca &&
	chmod +x fake/llvm-mca && ln -s "$(command -v view)" fake/view &&
	PATH="$PWD/fake" view --batch --mca "mca-loops.c:$chain" db >fake1.txt &&
	grep -q "^llvm-mca: failed: .*llvm-mca printed no block throughput" fake1.txt &&
	printf "#!/bin/sh\necho \"error: no target\" >&2\nexit 1\n" >fake/llvm-mca &&
	PATH="$PWD/fake" view --batch --mca "mca-loops.c:$chain" db >fake2.txt &&
	grep -q "^llvm-mca: failed: .*llvm-mca failed: no target" fake2.txt &&
	! grep -q block_rthroughput fake1.txt fake2.txt
'
test_expect_success 'a line without a loop, and --mcpu without --mca, are errors' '
	! view --batch --mca mca-loops.c:1 db >o1 2>e1 && grep -q "no loop at mca-loops.c:1" e1 &&
	! view --batch --mcpu skylake db >o2 2>e2 && grep -q "goes with --mca" e2
'
test_done
