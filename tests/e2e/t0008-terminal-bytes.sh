#!/bin/sh
# SPDX-License-Identifier: MIT
# t0008-terminal-bytes.sh: names from the measured program (a symbol, a source file, a module
# path and so the thread files' names) holding ESC, BEL, a C1 control and an OSC sequence reach
# no terminal raw, through every program's output; JSON carries their exact bytes.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test program"
ESC=$(printf '\033') BEL=$(printf '\007') CSI=$(printf '\302\233')
src=$(printf 'src\033[31m.c') prog=$(printf 'prog\033]0;owned\007')
# raw_free FILE...: none of the bytes a terminal acts on is in the files
raw_free() {
	! grep -l -e "$ESC" -e "$BEL" -e "$CSI" "$@"
}

test_expect_success 'setup: a program named, built and written with control bytes' '
	cat >evil.c <<-\PROGRAM &&
	#include <time.h>
	static volatile double sink;
	void evil(void) __asm__("\"evil\033]0;pwned\007\302\233" "31m\"");
	__attribute__((noinline)) void evil(void)
	{
		/* 0.3 s of CPU time, on any machine: it is sampled */
		while (clock() < CLOCKS_PER_SEC * 3 / 10)
			for (long i = 0; i < 100000; i++)
				sink += i * 0.5;
	}
	void run_evil(void) { evil(); }
	PROGRAM
	cat >"$src" <<-\PROGRAM &&
	void run_evil(void);
	__attribute__((noinline)) static void run(void) { run_evil(); }
	int main(void) { run(); return 0; }
	PROGRAM
	cc -O1 -c evil.c &&
	cc -O1 -g -o "$prog" "$src" evil.o && nm "$prog" | grep -q "evil$ESC"
'
test_expect_success 'measure, struct, prof and view print no raw control bytes' '
	measure -o m "./$prog" >o1 2>e1 && ls m | grep -q "$ESC" &&
	struct m >o2 2>e2 && prof -o db m >o3 2>e3 &&
	view --batch db >o4 2>e4 && view --batch --view flat db >o5 2>e5 &&
	view --batch --format csv db >o6 2>e6 &&
	grep -q "evil\\\\e\\]0;pwned\\\\x07\\\\u{9b}31m" o5 &&
	raw_free o1 e1 o2 e2 o3 e3 o4 e4 o5 e5 o6 e6
'
test_expect_success 'fathom-dump and struct --dump of every file print no raw control bytes' '
	for f in m/*.fthm; do fathom-dump "$f"; done >o7 2>e7 &&
	fathom-dump db >o8 2>e8 &&
	for f in m/structs/*.fthst; do struct --dump "$f" || exit 1; done >o9 2>e9 &&
	struct --dump "./$prog" >o10 2>e10 &&
	grep -q "evil\\\\x1b" o8 && raw_free o7 e7 o8 e8 o9 e9 o10 e10
'
test_expect_success 'error messages that name such a file print no raw control bytes' '
	: >"bad$ESC]0;x$BEL.fthm" && ! fathom-dump "bad$ESC]0;x$BEL.fthm" 2>e11 &&
	! view --batch "no$ESC[2Jdb" 2>e12 && ! struct "no$ESC[2Jbin" 2>e13 &&
	! prof -o x "no$ESC[2Jdir" 2>e14 &&
	grep -q "bad\\\\e" e11 && raw_free e11 e12 e13 e14
'
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'JSON carries the exact bytes of the symbol, the file and the module' '
		view --batch --view flat --format json db >o15 && raw_free o15 &&
		python3 - o15 "$src" "$prog" <<-\CHECK
		import json, os, sys
		d = json.load(open(sys.argv[1]))
		seen = set()
		def walk(n):
		    for k in ("name", "file"):
		        if n.get(k):
		            seen.add(n[k].encode("utf-8", "surrogateescape"))
		    for c in n["children"]:
		        walk(c)
		walk(d["tree"])
		assert b"evil\x1b]0;pwned\x07\xc2\x9b31m" in seen, seen
		assert any(s.endswith(os.fsencode(sys.argv[2])) for s in seen), seen
		assert any(s.endswith(os.fsencode(sys.argv[3])) for s in seen), seen
		CHECK
	'
fi
test_done
