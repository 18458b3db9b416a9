#!/bin/sh
# SPDX-License-Identifier: MIT
# t0120-measure-topdown.sh: the topdown events.  Without a usable PMU, measure -e topdown stops
# before the program runs and says why and what would help; measure --plan (with FATHOM_CPU
# forcing a model) shows the groups and TMA nodes without a PMU; and the sampler's top-down
# path (a group whose leader counts while a member samples, plus TMA nodes in the metric table)
# runs here with software events through the preloaded library.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"

if without_pmu 'topdown without a PMU'; then
	test_expect_refused 'topdown without a PMU: no PMU, and what would help' \
		'event topdown: no PMU: hardware performance counters are not available here' topdown \
		'enable PMU virtualization for the virtual machine' topdown:all
	test_expect_error 'a forced model changes nothing: still no PMU' 2 \
		'top-down cannot be measured on this Intel Sapphire Rapids' \
		env FATHOM_CPU=spr measure -e topdown:backend /bin/true
	test_expect_success '-L lists every topdown event with the reason' '
		measure -L >list &&
		for e in topdown topdown:retiring topdown:frontend topdown:backend topdown:all; do
			unusable_reason $e list | grep -q "no PMU" || exit 1
		done
	'
fi
test_expect_error 'an unsupported CPU is named' 2 \
	'event topdown: unsupported CPU: GenuineIntel family 6 model 0x55' \
	env FATHOM_CPU=GenuineIntel-6-55 measure --plan -e topdown
test_expect_error 'a bad FATHOM_CPU' 2 'FATHOM_CPU=pentium: unknown CPU model' \
	env FATHOM_CPU=pentium measure --plan -e topdown
test_expect_error 'topdown is never a member of a {} group' 2 \
	'topdown cannot be in a perf group' measure -e '{task-clock,topdown}' /bin/true

test_expect_success '--plan on Sapphire Rapids: topdown is one slots group' '
	FATHOM_CPU=spr,watchdog=0 measure --plan -e topdown@f500 >plan && cat plan &&
	grep -q "^topdown plan for Intel Sapphire Rapids: 8 general-purpose and 4 fixed counters; 1 group$" plan &&
	grep -q "^group T1: 10 events, 0 general-purpose counters" plan &&
	grep -q "^  slots  *slots  *type 4 config 0x400$" plan &&
	grep -q "^  metric  *topdown-mem-bound  *type 4 config 0x8700$" plan &&
	grep -q "^  trigger  *cycles  *type 4 config 0x3c sample freq 500$" plan &&
	grep -q "^metric table: 10 counters, then 15 TMA nodes" plan &&
	grep -q "^  \[12\] Retiring = (\$1)/((\$1)+(\$2)+(\$3)+(\$4))$" plan
'
test_expect_success '--plan topdown:all: seven groups, said to be multiplexed' '
	FATHOM_CPU=spr,watchdog=0 measure --plan -e topdown:all >plan &&
	test "$(grep -c "^group " plan)" -eq 7 &&
	grep -q "7 groups, multiplexed" plan &&
	grep -q "the 7 groups cannot count at once" plan &&
	grep -q "^metric table: 110 counters, then 39 TMA nodes" plan &&
	grep -q "OFFCORE_REQUESTS_OUTSTANDING.DATA_RD:c12 *type 4 config 0xc000820" plan
'
test_expect_success '--plan with the NMI watchdog: what is left out and what helps' '
	FATHOM_CPU=spr,watchdog=1 measure --plan -e topdown:backend >plan &&
	grep -q "Port Utilization not measured" plan && grep -q "nmi_watchdog=0" plan &&
	sed -n "/^nodes/,/^notes/p" plan >nodes &&
	! grep -q "Port Utilization" nodes && grep -q "^ *Divider  > 20%$" nodes
'
test_expect_success '--plan combinations: two subtrees, each at its own rate, and a timer' '
	FATHOM_CPU=emr,watchdog=0 measure --plan -e topdown:frontend@f100 \
		-e topdown:backend@1000000 -e CPUTIME >plan &&
	grep "^group " plan | tr "\n" " " | grep -q "group F1.*group F2.*group B1.*group B2.*group B3" &&
	test "$(grep -c "trigger.*sample freq 100$" plan)" -eq 2 &&
	test "$(grep -c "trigger.*sample period 1000000$" plan)" -eq 3 &&
	grep -q "^metric table: 78 counters" plan
'
test_expect_success '--plan on Ice Lake server: level 2 from general-purpose events, and says so' '
	FATHOM_CPU=icx,watchdog=0 measure --plan -e topdown:frontend >plan &&
	grep -q "^topdown plan for Intel Ice Lake server: .*; 4 groups, multiplexed$" plan &&
	grep -q "^group F1: 14 events, 8 general-purpose counters" plan &&
	grep -q "IDQ_UOPS_NOT_DELIVERED.CYCLES_0_UOPS_DELIV.CORE *type 4 config 0x500019c" plan &&
	grep -q "level 2 comes from general-purpose events" plan &&
	grep -q "^metric table: 47 counters, then 21 TMA nodes" plan &&
	grep -q "Fetch Latency = (5\*\$[0-9]*-\$[0-9]*)/\$[0-9]*$" plan &&
	grep -q "ICache Misses = " plan && grep -q "Heavy Operations = " plan
'
test_expect_success '--plan names the definitions it follows: TMA 5.2 and L3 Miss Bound on SPR' '
	FATHOM_CPU=spr,watchdog=0 measure --plan -e topdown:backend >plan &&
	grep -q "^definitions: Intel TMA 5.2$" plan &&
	sed -n "/^nodes/,/^notes/p" plan >nodes &&
	grep -q "^ *L3 Miss Bound  > 10%$" nodes && ! grep -q "DRAM Bound" nodes &&
	grep -q "^ *Memory Bandwidth  > 20%$" nodes &&
	FATHOM_CPU=icx,watchdog=0 measure --plan -e topdown >plan &&
	grep -q "^definitions: Intel TMA 5.02" plan && grep -q "^ *Fetch Bandwidth  > 20%$" plan &&
	FATHOM_CPU=zen5 measure --plan -e topdown >plan &&
	grep -q "^definitions: AMD pipeline utilization" plan
'
# UOPS_DECODED.DEC0 is of counters 0-3 on Ice Lake: with IDQ.MS_UOPS, IDQ.MITE_UOPS and the
# frontend events, no group may hold more than four such events (no schedule could place it).
test_expect_success '--plan on Ice Lake server: at most 4 events of counters 0-3 in a group' '
	for sub in topdown topdown:retiring topdown:frontend topdown:backend topdown:all; do
		for w in 0 1; do
			FATHOM_CPU=icx,watchdog=$w measure --plan -e $sub >plan || exit 1
			awk "/^group / { if (g != \"\" && n > 4) bad = 1; g = \$2; n = 0 }
			     / counters 0-3\$/ { n++ }
			     END { if (n > 4) bad = 1; exit bad }" plan || { cat plan; exit 1; }
		done
	done &&
	FATHOM_CPU=icx,watchdog=1 measure --plan -e topdown:frontend >plan &&
	grep "UOPS_DECODED.DEC0 .* counters 0-3$" plan &&
	grep -q "^group F1: .* (4 of counters 0-3)$" plan
'
test_expect_success '--plan on Zen 4: the pipeline-utilization groups, SMT Contention' '
	FATHOM_CPU=zen4,watchdog=0 measure --plan -e topdown >plan &&
	grep -q "^group P1: 6 events" plan &&
	grep -q "de_no_dispatch_per_slot.no_ops_from_frontend:c6 *type 4 config 0x1060001a0" plan &&
	grep -q "resyncs_or_nc_redirects *type 4 config 0x96" plan &&
	grep -q "SMT Contention" plan && grep -q "Memory Bound (approximate)" plan
'
test_expect_success '--plan on Zen 5: width 8' '
	FATHOM_CPU=zen5,watchdog=0 measure --plan -e topdown >plan &&
	grep -q "no_ops_from_frontend:c8 *type 4 config 0x1080001a0" plan &&
	grep -q "bp_redirects.resync *type 4 config 0x19f" plan &&
	grep -q "Total Slots = 8\*\$0" plan
'

# The run-time side with software events, as measure would encode a top-down plan: the group
# leader (page-faults) only counts, a member (task-clock) samples, the third member is read at
# each sample; then two TMA nodes over those counters.
# Kernel mode is counted when allowed, as measure does: a user-only task-clock cannot fire
# while the page faults are handled, and their counts would go to a later sample.
LIB="$top_builddir/measure/.libs/libmeasure.so"
EK=1
if [ "$(id -u)" -eq 0 ] || [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ]; then EK=0; fi
EV="page-faults,2,0,0,0,0,$EK,0,1,2,0,0,0,1;task-clock,2,1,0,1,1,$EK,0,1,1,0,0,2000,3"
EV="$EV;context-switches,2,0,0,0,0,$EK,0,1,3,0,0,0,4"
# TMA nodes: name, parent, threshold (ppm), level + 16 for a fraction of cycles, formula, text
EV="$EV|Faults per ms,-1,-1,0,\$0/\$1*1000000,page faults per CPU millisecond"
EV="$EV;Capped,3,250000,17,min(\$0%2C1000),at most 1000 (a comma%2C escaped)"
test_expect_success 'a group led by a counting event and sampled by a member' '
	mkdir o &&
	LD_PRELOAD="$LIB" FATHOM_EVENTS="$EV" FATHOM_OUTDIR="$PWD/o" FATHOM_FLAGS=0 \
		FATHOM_RUN=t0120 "$W/faults" 30 >/dev/null &&
	fathom-dump o/*.fthm >dump && cat o/*.log &&
	grep -q "^  \[0\] \"page-faults\"" dump && grep -q "^  \[1\] \"task-clock\"" dump &&
	sed -n "/\"page-faults\"/,/parent/p" dump | grep -q "flags: .*proxy" &&
	sed -n "/\"task-clock\"/,/parent/p" dump | grep -q "rate: frequency 2000"
'
# The trigger keeps sampling at its rate although it is not the group leader (it used to be
# re-armed with PERF_EVENT_IOC_REFRESH, which left such a member off after its first samples).
test_expect_success 'the sampling member samples at its rate' '
	test-tool profile -m 1 o/*.fthm >p &&
	awk "/^samples/ {s=\$2} /^cpu/ {c=\$2}
	     END { want = 2000 * c / 1e9; printf \"task-clock samples %d, want %.0f or more\\n\", s, 0.8 * want;
		   exit !(c > 0 && s >= 0.8 * want) }" p
'
if [ "$EK" -eq 1 ]; then
	skip 'kernel mode cannot be counted here (not root, perf_event_paranoid > 1)' \
		'the members deltas land where pages are touched'
else
test_expect_success 'the members deltas land where pages are touched' '
	faults_in_touch_pages 0 o
'
fi
test_expect_success 'while the trigger time is shared by both' '
	shared_by_both 1 o
'
test_expect_success 'the TMA nodes follow the counters, with parent, threshold and formula' '
	sed -n "/^  \[3\] \"Faults per ms\"/,/formula/p" dump >n3 && cat n3 &&
	grep -q "description: \"page faults per CPU millisecond\"" n3 &&
	grep -q "flags: tma" n3 && grep -q "parent: -1 threshold: - formula: \"\$0/\$1\*1000000\"" n3 &&
	sed -n "/^  \[4\] \"Capped\"/,/formula/p" dump >n4 && cat n4 &&
	grep -q "description: \"at most 1000 (a comma, escaped)\"" n4 &&
	grep -q "parent: 3 threshold: 0.25 formula: \"min(\$0,1000)\" level: 1" n4 &&
	grep -q "flags: tma,of-cycles" n4 && grep -q "formula: .* level: 0" n3 &&
	grep -q "^metrics: 5$" dump
'
test_expect_success 'a synthetic top-down measurement file for prof and view' '
	make-tma-mfile -c spr -e topdown:all tma.fthm && test-tool read-mfile tma.fthm &&
	fathom-dump tma.fthm >tdump &&
	grep -q "^  \[110\] \"Total Slots\"" tdump &&
	sed -n "/\"Memory Latency\"/,/formula/p" tdump | grep -q "flags: multiplexed,tma" &&
	make-tma-mfile -c zen4 zen.fthm && fathom-dump zen.fthm | grep -q "\"SMT Contention\""
'
test_expect_success 'its metric table alone gives each context its top-down breakdown' '
	make-tma-mfile -p -e topdown:backend be.fthm >nodes && cat nodes &&
	awk "\$2 == \"0x1300\" && /Backend Bound/ { be = \$NF }
	     \$2 == \"0x1400\" && /Bad Speculation/ { bs = \$NF }
	     /Total Slots/ { n++ } /ICache/ { ic++ }
	     END { exit !(be > 0.7 && bs > 0.3 && n == 3 && ic == 0) }" nodes
'
test_done
