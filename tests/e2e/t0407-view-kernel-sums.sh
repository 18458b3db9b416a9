#!/bin/sh
# SPDX-License-Identifier: MIT
# t0407-view-kernel-sums.sh: a program that spends much of its time in the kernel (page
# faults, a pipe between two threads) keeps that time in every view: in the top-down,
# bottom-up and flat views, for every metric, the roots' exclusive values add up to the
# program's total and the top-down roots' inclusive values too; kernel frames are named from
# the kernel symbols measure saved, and hang below the user line they interrupted.
. "$top_srcdir/tests/lib/test-lib.sh"

cat >k.c <<'PROGRAM'
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static int ping[2], pong[2];
static volatile double sink;
static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
__attribute__((noinline)) static void touch_pages(void)
{
	size_t bytes = 8u << 20;
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	madvise(p, bytes, MADV_NOHUGEPAGE);
	for (size_t i = 0; i < bytes; i += 4096)
		p[i] = 1;
	munmap(p, bytes);
}
__attribute__((noinline)) static void compute(void)
{
	double x = 1;
	for (int i = 0; i < 200000; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}
static void *echo(void *arg)
{
	char c;
	(void)arg;
	while (read(ping[0], &c, 1) == 1 && c)
		write(pong[1], &c, 1);
	return NULL;
}
__attribute__((noinline)) static void ping_pong(void)
{
	char c = 1;
	for (int i = 0; i < 200; i++)
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			exit(1);
}
int main(void)
{
	pthread_t t;
	if (pipe(ping) || pipe(pong) || pthread_create(&t, NULL, echo, NULL))
		return 1;
	/* 0.6 s of CPU time, whatever the machine's speed */
	while (cpu() < 0.6) {
		touch_pages();
		ping_pong();
		compute();
	}
	char end = 0;
	write(ping[1], &end, 1);
	pthread_join(t, NULL);
	return 0;
}
PROGRAM

test_expect_success 'setup: the program measured with kernel call paths' '
	cc -O1 -g -pthread -o k k.c &&
	measure -o m -e cpu-clock@f1000 -e page-faults@64 ./k 2>err &&
	struct m >/dev/null 2>&1 && prof -o db m >/dev/null 2>&1
'
# Kernel call paths need root or kernel.perf_event_paranoid <= 1.
if ! ls m/*.ksyms >/dev/null 2>&1; then
	skip_all "no kernel frames were sampled here (kernel call paths not permitted?)"
fi

# check_sums VIEW METRIC: in VIEW's CSV for METRIC (columns I, I %, E, E % last), the roots'
# exclusive values add up to the total (the program root's inclusive) in the bottom-up and
# flat views; in the top-down view the roots' inclusive values, and all nodes' exclusive.
check_sums() {
	view --batch --raw --view "$1" --metric "$2" --format csv db >"sums-$1.csv" &&
	awk -F, -v view="$1" '
		NR == 1 { next }
		$3 == 0 { total = $(NF - 3); rootx = $(NF - 1); next }
		{ all += $(NF - 1) }
		$3 == 1 { incl += $(NF - 3); excl += $(NF - 1) }
		function off(a, b) { d = a - b; if (d < 0) d = -d; return d > 1e-6 * (b < 0 ? -b : b) + 0.5 }
		END {
			if (total <= 0) { print view ": no total"; exit 1 }
			if (view != "top-down" && off(excl + rootx, total)) { printf "%s: roots exclusive %.0f, total %.0f\n", view, excl + rootx, total; exit 1 }
			if (view == "top-down" && off(incl + rootx, total)) { printf "%s: roots inclusive %.0f, total %.0f\n", view, incl + rootx, total; exit 1 }
			if (view == "top-down" && off(all + rootx, total)) { printf "%s: exclusive over the tree %.0f, total %.0f\n", view, all + rootx, total; exit 1 }
		}' "sums-$1.csv"
}

test_expect_success 'a third of the time or more is in the kernel (flat view)' '
	view --batch --raw --view flat --metric cpu-clock --format csv db >flat.csv &&
	awk -F, "\$3 == 0 { t = \$(NF - 3) } \$3 == 1 && \$4 ~ /kernel.kallsyms/ { k = \$(NF - 1) }
		END { printf \"kernel %.0f of %.0f\\n\", k, t; exit !(t > 0 && 3 * k >= t) }" flat.csv
'
for metric in cpu-clock page-faults; do
	for v in top-down bottom-up flat; do
		test_expect_success "$v view, $metric: the roots add up to the total" "
			check_sums $v $metric
		"
	done
done

test_expect_success 'the flat view: modules add up over their files, files over functions' '
	awk -F, "NR > 1 && \$3 >= 1 && \$3 <= 3 { s[\$3] += \$(NF - 1) }
		END { exit !(s[1] == s[2] && s[2] == s[3] && s[1] > 0) }" flat.csv
'

if grep -q "^hidden" m/*.ksyms; then
	skip "kernel frames named (the kernel hid its symbols: $(sed -n "s/^hidden //p" m/*.ksyms | head -1))"
else
	test_expect_success 'kernel frames are named: the page-fault entry, no unknown kernel code' '
		view --batch --view flat --metric cpu-clock db >flat.txt &&
		grep -q "\[kernel\] asm_exc_page_fault" flat.txt &&
		awk -F, "\$5 == \"function\" && \$4 ~ /kernel.kallsyms/ { all += \$(NF - 1) }
			\$5 == \"function\" && \$4 ~ /kernel.kallsyms/ && \$6 == \"<unknown function>\" { u += \$(NF - 1) }
			END { exit !(all > 0 && u <= all / 100) }" flat.csv
	'
fi

test_expect_success 'the kernel part hangs below the user line it interrupted, not a call' '
	view --batch --metric cpu-clock db >td.txt &&
	grep -B1 "\[kernel\] asm_exc_page_fault" td.txt | grep -q "k.c:[0-9]* *[0-9]" &&
	! grep -B1 "\[kernel\] asm_exc_page_fault" td.txt | grep -q "»"
'

test_expect_success 'bottom-up: the kernel functions are roots, with the user frame as caller' '
	view --batch --view bottom-up --metric cpu-clock --depth 2 db >bu.txt &&
	grep -q "^  \[kernel\] asm_exc_page_fault" bu.txt &&
	grep -A1 "^  \[kernel\] asm_exc_page_fault" bu.txt | grep -q "« touch_pages at k.c:"
'
test_expect_success 'hidden kernel symbols: prof and view say so, the time stays in the kernel' '
	mkdir h && cp m/*.fthm h/ && ks=$(ls m/*.ksyms) &&
	sed -n "1,3p" "$ks" >h/kernel.ksyms && echo "hidden the test hid them" >>h/kernel.ksyms &&
	prof -o hdb h >out 2>err &&
	grep -q "prof: note: kernel frames are shown by address: when measured, the test hid them" err &&
	fathom-dump hdb | grep -q "^note \"kernel frames are shown by address" &&
	view --batch --view flat --metric cpu-clock hdb >hflat &&
	grep -q "\[kernel\] <unknown function>" hflat &&
	view --batch --raw --view flat --metric cpu-clock --format csv hdb >hflat.csv &&
	test "$(awk -F, "\$3 == 1 && \$4 ~ /kernel.kallsyms/ { print \$(NF - 1) }" hflat.csv)" = \
	     "$(awk -F, "\$3 == 1 && \$4 ~ /kernel.kallsyms/ { print \$(NF - 1) }" flat.csv)"
'
test_expect_success 'a corrupt kernel symbols file is refused by name, the rest is kept' '
	mkdir c && cp m/*.fthm c/ && printf "FTHMKSYM 1\nhost x\nbuild-id zz\n" >c/bad.ksyms &&
	{ prof -o cdb c >out 2>err; test $? = 1; } &&
	grep -q "c/bad.ksyms: line 3: bad build-id" err && test -d cdb
'
test_done
