# SPDX-License-Identifier: MIT
# tma-loops-lib.sh: the per-loop top-down database of t0404 and t0453 (sourced after
# test-lib.sh).  tests/struct-workloads/tma-loops.c is built at -O2 -g; tma-loops.py reads
# struct --dump and objdump -d of it and places samples in each loop, in each function outside
# its loops and under main's calls (tma-loops.place); make-tma-mfile -s writes the synthetic
# top-down measurement that credits them (tma-m/) and with -p prints each label's expected
# values (tma-loops.want); struct and prof build the database (tma-db).
#
#   tma_loops_need                 skip_all unless cc, python3 and objdump are here
#   tma_loops_place                build the program, write tma-loops.place
#   tma_loops_db [EVENT] [SUFFIX]  measurement tma-mSUFFIX/, want tma-loops.wantSUFFIX,
#                                  database tma-dbSUFFIX
#   tma_loops_line NAME            the header line of loop NAME in the source
tma_loops_src="$top_srcdir/tests/struct-workloads/tma-loops.c"
tma_loops_py="$top_srcdir/tests/e2e/tma-loops.py"

tma_loops_need() {
	command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the test program"
	command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
	command -v objdump >/dev/null 2>&1 || skip_all "objdump (binutils) is not installed"
}

tma_loops_place() {
	cc -O2 -g -o tma-loops "$tma_loops_src" 2>cc.err || { cat cc.err; return 1; }
	struct --no-cache --dump tma-loops >tma-loops.dump || return 1
	objdump -d --no-show-raw-insn tma-loops >tma-loops.disasm || return 1
	python3 "$tma_loops_py" place "$tma_loops_src" tma-loops.dump tma-loops.disasm \
		"$TEST_TMP/tma-loops" >tma-loops.place
}

tma_loops_db() {
	rm -rf "tma-m${2:-}" "tma-db${2:-}" && mkdir "tma-m${2:-}" &&
		make-tma-mfile -e "${1:-topdown}" -s tma-loops.place -p "tma-m${2:-}/tma.fthm" \
			>"tma-loops.want${2:-}" &&
		struct --no-cache "tma-m${2:-}" >"struct.out${2:-}" 2>&1 &&
		prof -o "tma-db${2:-}" "tma-m${2:-}" >"prof.out${2:-}" 2>&1 ||
		{ cat "struct.out${2:-}" "prof.out${2:-}" 2>/dev/null; return 1; }
}

tma_loops_line() {
	grep -n "LOOP $1 " "$tma_loops_src" | cut -d: -f1
}
