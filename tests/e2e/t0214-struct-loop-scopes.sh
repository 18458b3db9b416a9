#!/bin/sh
# SPDX-License-Identifier: MIT
# t0214-struct-loop-scopes.sh: a loop whose condition is an inlined comparator
# (tests/struct-workloads/isort.c, -O2 -g -fPIC -shared) sits in its caller's scope with the
# comparator's and the body's inline call sites inside it, and every instruction of the
# sorting functions (and of the other struct workloads) has in struct's tree exactly the
# inline chain and lines that addr2line -i gives it.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test library"
command -v addr2line >/dev/null 2>&1 && command -v objdump >/dev/null 2>&1 ||
	skip_all "no addr2line or objdump (binutils) to compare with"
src="$top_srcdir/tests/struct-workloads/isort.c"
bin="$top_builddir/tests/struct-workloads"

# chains LIB FUNCTION...: "ADDR CHAIN" for every instruction of the FUNCTIONs, from struct's
# dump (struct.chains) and from addr2line -i (a2l.chains).  CHAIN is "F>INLINE...|LINE...":
# the function and its inlined callees outermost first, then the call-site line of each
# inline and, last, the line of the address itself.
hexfn='function hex(s,   i, v) { sub(/^0x/, "", s); v = 0
	for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
	return v }'
chains() {
	lib=$1; shift
	struct --no-cache --dump "$lib" >chains.dump || return 1
	: >insns
	for fn in "$@"; do
		objdump -d --no-show-raw-insn --disassemble="$fn" "$lib" |
			sed -n 's/^ *\([0-9a-f][0-9a-f]*\):.*/\1/p' >>insns
	done
	test -s insns || return 1
	# The dump: an indented tree; each stmt row is a range with one line.
	awk "$hexfn"'
	function num(s) { return s == "?" ? "?" : s + 0 }
	{ match($0, /^ */); ind = RLENGTH; kind = $1 }
	kind != "function" && kind != "inline" && kind != "loop" && kind != "stmt" { next }
	kind == "function" { n = 0; fname = $2; next }
	{ while (n > 0 && sind[n] >= ind) n-- }
	kind == "inline" { split($5, w, ":"); n++; sind[n] = ind; sname[n] = $2; scall[n] = num(w[2]); next }
	kind == "loop" { n++; sind[n] = ind; sname[n] = ""; next }
	{
		names = fname; lines = ""
		for (i = 1; i <= n; i++)
			if (sname[i] != "") { names = names ">" sname[i]; lines = lines scall[i] ">" }
		if ($2 == "?") leaf = "?"; else { split($2, w, ":"); leaf = num(w[2]) }
		r = $3; gsub(/[\[\)]/, "", r); split(r, b, "-")
		print hex(b[1]), hex(b[2]), names "|" lines leaf
	}' chains.dump >stmts || return 1
	awk "$hexfn"'
	NR == FNR { lo[NR] = $1; hi[NR] = $2; c[NR] = $3; m = NR; next }
	{ a = hex($1); for (i = 1; i <= m; i++) if (lo[i] <= a && a < hi[i]) break
	  print $1, (i <= m ? c[i] : "none") }' stmts insns >struct.chains || return 1
	# addr2line -a -i -f: the address, then name and file:line per frame, innermost first.
	sed 's/^/0x/' insns | xargs addr2line -a -i -f -e "$lib" | awk '
	function flush() { if (addr != "") { sub(/^0x0*/, "", addr); print addr, names "|" lines } }
	/^0x/ { flush(); addr = $0; names = ""; lines = ""; st = 0; next }
	st == 0 { fn = $0; st = 1; next }
	{ l = $0; sub(/ .*/, "", l); k = split(l, w, ":"); l = (w[k] == "?" ? "?" : w[k] + 0)
	  names = (names == "" ? fn : fn ">" names); lines = (lines == "" ? l : l ">" lines); st = 0 }
	END { flush() }' >a2l.chains
}

test_expect_success 'setup: the library builds' '
	cc -O2 -g -fPIC -shared -o isort.so "$src" 2>cc.err || { cat cc.err; exit 1; }
'
test_expect_success 'every instruction of the sorts has addr2line -i'"'"'s inline chain' '
	chains isort.so unguarded_insert insertion_sort &&
	test $(wc -l <a2l.chains) -gt 20 && test_cmp a2l.chains struct.chains &&
	grep -q "^[0-9a-f]* unguarded_insert>move|" a2l.chains &&
	grep -q "^[0-9a-f]* unguarded_insert>less|" a2l.chains
'
# The loop of unguarded_insert and what sits directly in it (kind and name, one level down).
loop_shape() {
	awk '
	{ match($0, /^ */); ind = RLENGTH }
	$1 == "function" { infn = ($2 == "unguarded_insert"); next }
	!infn { next }
	$1 == "loop" && !lind { lind = ind; print "loop under", (ind == 6 ? "function" : "?"); next }
	lind && ind <= lind { lind = 0 }
	lind && ind == lind + 2 && $1 != "stmt" && $1 != "blocks" { print $1, $2 }
	lind && ind > lind && $1 == "loop" { print "nested loop" }' chains.dump
}
test_expect_success 'the comparator loop sits in the function, less and move inside it' '
	loop_shape >shape && cat shape &&
	printf "%s\n" "loop under function" "inline less" "inline move" >want &&
	sort -u shape | sort >got && sort want >want.s && test_cmp want.s got &&
	! awk "/^ *inline less/ { i = length(\$0) - length(substr(\$0, match(\$0, /[^ ]/))) }
	       i && /^ *loop/ && match(\$0, /[^ ]/) - 1 > i { bad = 1 } END { exit !bad }" chains.dump
'
for w in loops-O0 loops-O2 loops-O3 kernel-O2 kernel-O3 clones-O2 clones-O3; do
	test_expect_success "$w: every instruction of every function with DWARF agrees" "
		fns=\$(struct --no-cache --dump '$bin/$w' | awk '\$1 == \"function\" && \$3 == \"at\" { print \$2 }') &&
		chains '$bin/$w' \$fns && test_cmp a2l.chains struct.chains
	"
done
test_done
