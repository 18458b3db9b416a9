#!/bin/sh
# SPDX-License-Identifier: MIT
# t0106-measure-output.sh: what measure writes: a trace with -t, per-process logs with a
# summary, kernel frames when allowed, and a full disk reported while other files stay valid.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success '-t writes one trace record per recorded sample' '
	measure -o t -t -e task-clock@f1000 "$W/split" 0.3 >/dev/null &&
	recorded=$(sed -n "s/^summary: samples taken [0-9]* recorded \([0-9]*\).*/\1/p" t/*.log) &&
	fathom-dump t/*.fthm >dump && grep -q "^trace: $recorded records" dump
'
test_expect_success 'the log names the process and ends with its summary' '
	grep -q "^process [0-9]*: .*split, 1 event" t/*.log &&
	tail -n 1 t/*.log | grep -q "^summary: samples taken [1-9][0-9]* recorded"
'
test_expect_success 'the trace is not written without -t' '
	measure -o n -e task-clock@f1000 "$W/split" 0.2 >/dev/null &&
	! fathom-dump n/*.fthm | grep -q "^trace:"
'
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 1 ] || [ "$(id -u)" -eq 0 ]; then
	test_expect_success 'kernel frames are recorded when allowed' '
		measure -o k -e task-clock@f1000 "$W/callpaths" memcpy 0.5 >/dev/null &&
		fathom-dump k/*.fthm >dump && grep -q "\"\[kernel.kallsyms\]\"" dump
	'
	test_expect_success '--no-kernel leaves them out' '
		measure --no-kernel -o nk -e task-clock@f1000 "$W/callpaths" memcpy 0.3 >/dev/null &&
		! fathom-dump nk/*.fthm | grep -q "kernel.kallsyms"
	'
else
	skip 'perf_event_paranoid > 1 and not root' 'kernel frames are recorded when allowed'
fi
mkdir full
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=8k tmpfs full 2>/dev/null; then
	test_expect_success 'a full disk: reported, and the files written are valid' '
		measure -o full/m -e task-clock@f1000 "$W/threads" 0.2 >/dev/null 2>err
		cat err
		grep -q "No space left on device" err &&
		grep -q "with errors (see the logs)" err &&
		for f in full/m/*.fthm; do
			[ -e "$f" ] || continue
			test-tool read-mfile "$f" || exit 1
		done
	'
	umount full
else
	skip 'needs root to mount a small tmpfs' 'a full disk is reported'
fi
test_expect_success 'an output directory removed during the run: each error said once, cleanly' '
	measure -o gone -e task-clock@f1000 sh -c "rm -rf gone; exec \"$W/threads\" 0.1" >/dev/null 2>err
	cat err
	grep -q "gone/.*cannot create: No such file or directory" err &&
	! grep -v "^measure" err
'
# A thread's tree is made at its first sample: one that took none maps nothing for it, and
# its file holds the root alone.
test_expect_success 'a thread that took no sample: a file with the root alone, no memory' '
	measure -o z -e task-clock@f1 /bin/true 2>err &&
	fathom-dump z/*.fthm >dump &&
	grep -q "^cct: 1 nodes, 0 values" dump && grep -q "^  0 root" dump &&
	grep -q "measurement memory bytes: 0$" dump
'
# A process's log cut short after its files were written (as by a full disk): the launcher
# counts the files themselves, and says that the logs account for fewer.
test_expect_success 'a log cut short: the thread files are counted, and the gap is said' '
	measure -o cut -e task-clock@f1000 sh -c "\"$W/split\" 0.2 >/dev/null &&
		for f in cut/split-*.log; do head -n 1 \"\$f\" >first && cat first >\"\$f\"; done" \
		>/dev/null 2>err
	cat err && n=$(ls cut/*.fthm | wc -l) && ls cut/split-*.fthm &&
	grep -q "^measure: $n thread files in .*cut, where the logs. summaries count $((n - 1)) " err &&
	grep -q "^measure: $n processes, $n thread files" err &&
	grep -q "split-.*log: the process wrote no summary" err
'
test_done
