#!/bin/sh
# SPDX-License-Identifier: MIT
# t0123-modules-and-children.sh: modules loaded and unloaded during the run keep their samples,
# even when a second one is loaded at the same address; vfork+exec, posix_spawn and children
# with a cleared environment work; a program run with stdin, stdout and stderr closed loses
# nothing.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
test_expect_success 'two plugins, one after the other, dlopen and dlclose' '
	measure -o pl -e task-clock@f1000 "$W/plugins" "$W" >out && cat out &&
	fathom-dump pl/*.fthm >dump &&
	grep -q "libplugina.so\"" dump && grep -q "libpluginb.so\"" dump
'
test_expect_success 'each is a module of its own, with its unload time' '
	sed -n "/libplugina.so\"/,/range/p" dump | grep -q "unloaded: [1-9]" &&
	sed -n "/libpluginb.so\"/,/range/p" dump | grep -q "unloaded: [1-9]"
'
test_expect_success 'samples in each resolve to that plugin' '
	test-tool profile -r work_a -r work_b pl/*.fthm >p &&
	awk "/^total/ {t=\$2} /^reach work_a/ {a=\$3} /^reach work_b/ {b=\$3}
	     END { exit !(a > 0.3 * t && b > 0.3 * t) }" p
'
test_expect_success 'vfork+exec, posix_spawn and an emptied environment' '
	measure -o sp -e task-clock "$W/lifecycle" spawn >out 2>err; st=$?
	cat out err; test $st -eq 0 && grep -q "spawn: ok" out &&
	grep -l "/bin/dash\|/usr/bin/dash\|/bin/sh" sp/*.log >/dev/null
'
test_expect_success 'stdin, stdout and stderr closed' '
	measure -o cl -e task-clock@f1000 "$W/split" 0.3 <&- >&- 2>&-; test $? -eq 0 &&
	test "$(ls cl/*.fthm | wc -l)" -eq 1 && test-tool read-mfile cl/*.fthm &&
	tail -n 1 cl/*.log | grep -q "^summary: samples taken [1-9]"
'
test_done
