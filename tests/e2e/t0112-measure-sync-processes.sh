#!/bin/sh
# SPDX-License-Identifier: MIT
# t0112-measure-sync-processes.sh: IO and MEMLEAK follow fork and exec like the other sources:
# each process counts its own bytes and leaks (a forked child does not report the blocks it
# inherited, an exec'd image starts afresh, what was live at exec is that image's leak), and
# threads each count their own I/O.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'fork and exec under -e IO -e MEMLEAK: exit status and files' '
	measure -o f -e IO -e MEMLEAK "$W/synchronous" fork >out 2>err && cat err &&
	test "$(ls f/*.log | wc -l)" -eq 2 && test "$(ls f/*.fthm | wc -l)" -eq 3 &&
	grep -q "ended (exec)" f/*.log
'
test_expect_success 'bytes written by the parent, the forked child and the exec image' '
	test-tool profile -m 1 -r parent_write -r child_write -r exec_write f/*.fthm >p && cat p &&
	grep -qx "total 2700" p && grep -qx "reach parent_write 700" p &&
	grep -qx "reach child_write 900" p && grep -qx "reach exec_write 1100" p
'
test_expect_success 'leaks of each process once: the child does not report the parent blocks' '
	test-tool profile -m 6 -r parent_leak -r child_leak -r exec_leak f/*.fthm >p && cat p &&
	grep -qx "reach parent_leak 48" p && grep -qx "reach child_leak 640" p &&
	grep -qx "reach exec_leak 160" p
'
test_expect_success 'threads: each thread counts its own writes' '
	measure -o t -e IO -e MEMLEAK "$W/synchronous" threads 500 >out 2>err &&
	for f in t/*.fthm; do test-tool profile -m 1 -r thread_write "$f" | sed -n "s/^reach //p"; done |
		sort >got && cat got &&
	printf "thread_write 0\nthread_write 500000\nthread_write 500000\nthread_write 500000\nthread_write 500000\n" >want &&
	test_cmp want got
'
test_expect_success 'a fork/exec/system driver runs unchanged with IO, MEMLEAK and a timer' '
	measure -o fe -e IO -e MEMLEAK -e CPUTIME "$W/forkexec" 5 >out 2>err &&
	grep -q "forkexec: 6 of 6 children exited with 7" out && cat err &&
	test "$(ls fe/*.fthm | wc -l)" -ge 7 &&
	for log in fe/*.log; do tail -n 1 "$log" | grep -q "^summary:" || exit 1; done
'
test_expect_success 'a shell pipeline keeps working under IO and MEMLEAK' '
	measure -o sh -e IO -e MEMLEAK sh -c "echo one | tr o O; exit 5" >out; test $? -eq 5 &&
	grep -qx "One" out
'
test_done
