#!/bin/sh
# SPDX-License-Identifier: MIT
# t0122-real-programs.sh: a measured `make -j2` and a measured Python script that starts
# threads, forks and runs a subprocess both succeed with their normal output; one directory
# then holds files for every process; --no-follow measures only the top process.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
mkdir proj
for i in 1 2 3 4 5 6; do
	printf 'int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' $i $i >proj/f$i.c
done
printf 'int f1(int);\nint main(void) { return f1(4) == 6 ? 0 : 1; }\n' >proj/main.c
printf 'OBJS = main.o f1.o f2.o f3.o f4.o f5.o f6.o\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n%%.o: %%.c\n\t$(CC) -O2 -c $< -o $@\n' >proj/Makefile
test_expect_success 'make -j2 of a small C project' '
	measure -o mk -e task-clock make -C proj -j2 >out 2>err && proj/prog &&
	test "$(ls mk/*.log | wc -l)" -ge 8 &&
	for log in mk/*.log; do tail -n 1 "$log" | grep -q "^summary:" || exit 1; done &&
	! grep -q "^error" mk/*.log
'
if command -v python3 >/dev/null; then
	cat >py.py <<'PY'
import os, threading, subprocess
def work(n):
    s = 0
    for i in range(n): s += i * i
    return s
ts = [threading.Thread(target=work, args=(200000,)) for _ in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
pid = os.fork()
if pid == 0:
    work(100000); os._exit(3)
_, st = os.waitpid(pid, 0)
out = subprocess.run(["/bin/echo", "child-echo"], capture_output=True, text=True).stdout.strip()
print("python ok", os.WEXITSTATUS(st), out)
PY
	test_expect_success 'python3 with threads, fork and a subprocess' '
		measure -o py -e task-clock python3 py.py >out 2>err && grep -qx "python ok 3 child-echo" out &&
		test "$(ls py/*.fthm | wc -l)" -ge 6 && ! grep -q "^error" py/*.log
	'
else
	skip 'no python3' 'python3 with threads, fork and a subprocess'
fi
test_expect_success '--no-follow measures only the top process' '
	measure --no-follow -o nf -e task-clock "$W/forkexec" 3 >out &&
	grep -q "4 of 4 children exited with 7" out &&
	test "$(ls nf/*.log | wc -l)" -eq 1 && test "$(ls nf/*.fthm | wc -l)" -eq 1
'
test_done
