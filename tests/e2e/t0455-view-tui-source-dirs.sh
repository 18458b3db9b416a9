#!/bin/sh
# SPDX-License-Identifier: MIT
# t0455-view-tui-source-dirs.sh: a program compiled as `cc ../src/k.c` from its build directory
# names its source relative to that directory (DW_AT_comp_dir): struct and prof's fallback
# record the file as an absolute name, so the source pane finds it from any working directory.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test program"
mkdir -p proj/src proj/build elsewhere
cat >proj/src/k.c <<'PROGRAM'
#include <time.h>
static volatile double sink;
__attribute__((noinline)) static void kernel_loop(void)
{
	for (long i = 0; i < 100000; i++)
		sink += (double)i * 0.25; /* the hot line of k.c */
}
int main(void)
{
	/* 0.3 s of CPU time in kernel_loop, whatever the machine's speed: it is sampled */
	while (clock() < CLOCKS_PER_SEC * 3 / 10)
		kernel_loop();
	return 0;
}
PROGRAM
test_expect_success 'setup: built from ../src, measured, with and without struct' '
	(cd proj/build && cc -O1 -g -o k ../src/k.c && measure -o m ./k 2>/dev/null) &&
	struct proj/build/m >/dev/null 2>&1 && prof -o db proj/build/m >/dev/null 2>&1 &&
	prof --no-struct -o db-elf proj/build/m >/dev/null 2>&1
'
test_expect_success 'the file is named by its absolute path, "build/.." resolved' '
	dir=$(cd proj && pwd -P) &&
	view --batch --view flat --depth 2 db >flat && cat flat &&
	grep -q "^    $dir/src/k.c " flat && ! grep -q "\.\./src" flat &&
	view --batch --view flat --depth 2 db-elf >flat-elf &&
	grep -q "^    $dir/src/k.c " flat-elf
'
# view runs in elsewhere/, where no source is
printf '#!/bin/sh\ncd "%s/elsewhere" && exec view "$@"\n' "$PWD" >view-elsewhere
chmod +x view-elsewhere
test_expect_success 'the source pane shows it, from another working directory' '
	VIEW=./view-elsewhere && export VIEW &&
	tui_start 120 40 --keys H ../db && tui_wait "hot path" && tui_keys s &&
	tui_wait "─ source /.*/src/k\.c" && tui_wait "the hot line of k\.c" && tui_keys q q &&
	tui_exited
'
tui_stop
test_done
