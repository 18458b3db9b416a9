#!/bin/sh
# SPDX-License-Identifier: MIT
# t0212-struct-noreturn.sh: calls that never return end their block.  Programs whose loops
# have error paths laid out in line (tests/struct-workloads/noreturn.c, noreturn-lib.c),
# built here with gcc and clang at -O2, with and without -fno-plt, as a PIE and as a -fPIC
# shared library: struct reports exactly the marked loops, none irreducible, and no call to
# a function that does not return (abort, exit, a local noreturn function, one found by
# analysis, one through the PLT or the GOT, the end of an inlined noreturn function) lies in
# a loop.  Also without DWARF, and on the system's glibc: __libc_malloc has no irreducible
# loop and _longjmp no loop at all, with its debug information or without.
. "$top_srcdir/tests/lib/test-lib.sh"

src="$top_srcdir/tests/struct-workloads"
command -v objdump >/dev/null 2>&1 || skip_all 'objdump (binutils) is not installed'

# "FUNCTION LINE" of every marked loop of FILE.
marks() {
	grep -n 'LOOP [a-z_]* \*/' "$1" | sed 's/^\([0-9]*\):.*LOOP \([a-z_]*\) \*\/.*/\2 \1/' | sort
}

# Loops of a dump as "FUNCTION LINE KIND", and the address ranges of each function's loops
# (the loop nodes and everything under them) as "FUNCTION LO HI" in decimal.
loops_of() {
	awk '/^    function / { fn = $2; next }
	     /^ *loop / { split($3, w, ":"); print fn, w[2], (/irreducible/ ? "irreducible" : "reducible") }' "$1"
}
loop_ranges() {
	awk '{ match($0, /^ */); ind = RLENGTH }
	     /^    function / { fn = $2; li = 0; next }
	     li && ind <= li { li = 0 }
	     /^ *loop / && !li { li = ind }
	     li { for (i = 1; i <= NF; i++) if ($i ~ /^\[0x/) { r = $i; gsub(/[][)]/, "", r)
			split(r, b, "-"); print fn, b[1], b[2] } }' "$1" |
	while read -r fn lo hi; do echo "$fn $((lo)) $((hi))"; done
}
# Calls in BINARY to the functions that do not return, as "FUNCTION ADDRESS CALLEE" (the
# address in decimal): direct, through the PLT (name@plt) or the GOT (objdump's "# slot
# <name@...>").  report() returns, but not where the inlined fatal() calls it.
noreturn_calls() {
	objdump -d --no-show-raw-insn "$1" | awk '
	/^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); next }
	/\tcall/ && match($0, /<(die|stop|hang|report|abort|exit|lib_die)[@>.]/) {
		a = $1; sub(/:$/, "", a); print fn, a, substr($0, RSTART + 1, RLENGTH - 2) }' |
	while read -r fn a callee; do echo "$fn $((0x$a)) $callee"; done
}
# Fails when a call of CALLS lies in a loop of RANGES (same function).
calls_outside_loops() {
	awk 'NR == FNR { n++; f[n] = $1; lo[n] = $2; hi[n] = $3; next }
	     { for (i = 1; i <= n; i++) if (f[i] == $1 && $2 >= lo[i] && $2 < hi[i]) {
			printf "call at %x in %s is inside a loop\n", $2, $1; bad = 1 } }
	     END { exit bad }' "$1" "$2"
}

check_binary() { # NAME BINARY SOURCE
	name=$1 bin=$2 file=$3
	test_expect_success "$name: exactly the marked loops, none irreducible" "
		struct --no-cache --dump '$bin' >dump-$name &&
		loops_of dump-$name | sort >loops-$name && marks '$file' >want-$name &&
		awk '{ print \$1, \$2 }' loops-$name >got-$name && test_cmp want-$name got-$name &&
		! grep -q irreducible loops-$name
	"
	test_expect_success "$name: no call that does not return lies in a loop" "
		noreturn_calls '$bin' >calls-$name && test -s calls-$name &&
		loop_ranges dump-$name >ranges-$name && calls_outside_loops ranges-$name calls-$name
	"
	test_expect_success "$name: the same without DWARF (strip --strip-debug)" "
		cp '$bin' nodw-$name && strip --strip-debug nodw-$name &&
		struct --no-cache --dump nodw-$name >nodw-dump-$name 2>/dev/null &&
		test \$(grep -c '^ *loop ' nodw-dump-$name) -eq \$(wc -l <want-$name) &&
		! grep -q irreducible nodw-dump-$name &&
		loop_ranges nodw-dump-$name >nodw-ranges-$name &&
		awk '\$3 != \"report\"' calls-$name >nodw-calls-$name &&
		calls_outside_loops nodw-ranges-$name nodw-calls-$name
	"
}

for cc in gcc clang; do
	if ! command -v $cc >/dev/null 2>&1; then
		skip "$cc is not installed (clang is optional: scripts/deps.sh)" "$cc: the programs"
		continue
	fi
	test_expect_success "$cc: build the programs and libraries" "
		$cc -O2 -g -o nr-$cc '$src/noreturn.c' &&
		$cc -O2 -g -fno-plt -o nr-$cc-noplt '$src/noreturn.c' &&
		$cc -O2 -g -fPIC -shared -o libnr-$cc.so '$src/noreturn-lib.c' &&
		$cc -O2 -g -fPIC -fno-plt -shared -o libnr-$cc-noplt.so '$src/noreturn-lib.c'
	"
	test_expect_success "$cc: calls go through the PLT and the GOT as this test means" "
		objdump -d libnr-$cc.so | grep -q 'call.*<lib_die@plt>' &&
		objdump -d libnr-$cc.so | grep -q 'call.*<abort@plt>' &&
		objdump -d libnr-$cc-noplt.so | grep -q 'call.*\*.*(%rip).*<abort@' &&
		objdump -d nr-$cc-noplt | grep -q 'call.*\*.*(%rip).*<exit@'
	"
	check_binary $cc "nr-$cc" "$src/noreturn.c"
	check_binary $cc-noplt "nr-$cc-noplt" "$src/noreturn.c"
	check_binary $cc-lib "libnr-$cc.so" "$src/noreturn-lib.c"
	check_binary $cc-lib-noplt "libnr-$cc-noplt.so" "$src/noreturn-lib.c"
done

# The system's glibc, with whatever debug information it has, and a copy without any (no
# build-id nor debug link to find it by).
libc=$(ldd "$(readlink -f /bin/sh)" 2>/dev/null | sed -n 's/.*libc\.so\.6 => \(\/[^ ]*\) .*/\1/p')
if [ -z "$libc" ] || ! objdump -T "$libc" 2>/dev/null | grep -q ' __libc_malloc$' ||
   ! objdump -T "$libc" 2>/dev/null | grep -q ' _longjmp$'; then
	skip 'no glibc with __libc_malloc and _longjmp found' 'glibc'
else
	# FUNCTION's loops in a dump, by its name or its symbol.
	fn_loops() {
		awk -v want="$1" '/^    function / { infn = ($2 == want || index($0, " symbol=" want " ")) }
		     infn && /^ *loop /' "$2"
	}
	test_expect_success 'glibc: a copy without debug information' "
		objcopy --remove-section .note.gnu.build-id --remove-section .gnu_debuglink \
			'$libc' libc-nodebug.so
	"
	# Printed for the record: the irreducible loops of the whole library.
	for f in "$libc" libc-nodebug.so; do
		n=$(basename "$f")
		test_expect_success "glibc ($n): _longjmp has no loop (__longjmp does not return)" "
			struct --no-cache --dump '$f' >dump-$n 2>err-$n && grep 'irreducible' err-$n &&
			fn_loops _longjmp dump-$n >longjmp-$n && ! test -s longjmp-$n
		"
	done
	# The false loops of __libc_malloc come from an inlined noreturn function
	# (__malloc_assert, malloc_printerr) whose last call may return: that takes DWARF.
	if grep -q '^  flags dwarf' "dump-$(basename "$libc")"; then
		test_expect_success 'glibc with DWARF: __libc_malloc has no irreducible loop' "
			fn_loops __libc_malloc 'dump-$(basename "$libc")' >malloc &&
			! grep -q irreducible malloc
		"
	else
		skip 'the system glibc has no debug information' 'glibc: __libc_malloc'
	fi
fi
test_done
