#!/bin/sh
# SPDX-License-Identifier: MIT
# t0205-struct-bad-input.sh: files struct cannot analyse (not ELF, empty, truncated, another
# architecture, missing, a corrupt structure file) each get a clear message naming the file
# and exit status 1, never a crash; good files named with them still work.  Corrupt DWARF is a
# warning naming the file and the section, and the binary is analysed without it.
. "$top_srcdir/tests/lib/test-lib.sh"

good="$top_builddir/tests/struct-workloads/loops-O2"

echo 'just some text' >text
: >empty
head -c 3000 "$good" >truncated
head -c 40 "$good" >tiny
cp "$good" aarch64 && patch_bytes aarch64 18 b700
cp "$good" i386 && patch_bytes i386 4 01
test_expect_error 'a text file' 1 'text: not an ELF file' struct --no-cache --dump text
test_expect_error 'an empty file' 1 'empty: not an ELF file' struct --no-cache --dump empty
test_expect_error 'a truncated ELF file' 1 'truncated: truncated' struct --no-cache --dump truncated
test_expect_error 'an ELF header cut short' 1 'tiny: truncated' struct --no-cache --dump tiny
test_expect_error 'another architecture' 1 'aarch64: unsupported architecture aarch64' \
	struct --no-cache --dump aarch64
test_expect_error 'a 32-bit class' 1 'i386: unsupported architecture' struct --no-cache --dump i386
cp "$good" badclass && patch_bytes badclass 4 07
test_expect_error 'a class byte that is neither 32 nor 64-bit' 1 \
	'badclass: corrupt ELF header: its class byte (EI_CLASS) is 7' struct --no-cache --dump badclass
cp "$good" badorder && patch_bytes badorder 5 05
test_expect_error 'a byte-order byte that is neither' 1 \
	'badorder: corrupt ELF header: its byte-order byte (EI_DATA) is 5' \
	struct --no-cache --dump badorder
cp "$good" bigendian && patch_bytes bigendian 5 02
test_expect_error 'a big-endian header' 1 'bigendian: a big-endian ELF file' \
	struct --no-cache --dump bigendian
test_expect_error 'a missing file' 1 'nosuch: cannot open' struct --no-cache --dump nosuch
mkdir emptydir
test_expect_error 'a directory of no measurements' 1 'no measurement files' \
	struct --no-cache emptydir

if command -v readelf >/dev/null 2>&1; then
	info=$(readelf -SW "$good" | awk '$2 == ".debug_info" { print $5 }')
	cp "$good" baddwarf && patch_bytes baddwarf $((0x$info + 4)) 6300
	cp "$good" baddwarf2 && patch_bytes baddwarf2 $((0x$info + 8)) 00ffffff
	# Corrupt DWARF is a warning naming the file and the section; the symbol table and the
	# machine code still give functions and loops (t0213 checks what comes out).
	for b in baddwarf baddwarf2; do
		test_expect_success "corrupt DWARF ($b): a warning naming it, functions from symbols" "
			struct --no-cache --dump $b >$b.txt 2>$b.err; status=\$?; cat $b.err &&
			test \$status -eq 0 && grep -q 'warning: .*$b: corrupt DWARF: .*(\\.debug_info)' $b.err &&
			grep -q '^ *function main ' $b.txt
		"
	done
fi

test_expect_success 'a bad file among good ones: others written, exit 1' '
	mkdir out && struct --no-cache -q -o out text "$good" truncated 2>err; test $? -eq 1 &&
	grep -q "text: not an ELF file" err && grep -q "truncated: truncated" err &&
	test $(ls out | wc -l) -eq 1
'
test_expect_success 'a corrupt structure file is refused with its name' '
	set -- out/*.fthst && cp "$1" bad.fthst && size=$(wc -c <bad.fthst) &&
	head -c $((size / 2)) "$1" >bad.fthst &&
	struct --dump bad.fthst 2>err; test $? -eq 1 && grep -q "bad.fthst" err
'
test_expect_error 'usage errors exit 2' 2 'usage' struct
test_expect_error 'a bad -j' 2 'threads' struct -j 0 "$good"
# Output directories: group write (a project directory, a umask of 002) is the group's trust;
# a directory every user can write to, and not sticky, is refused before anything is read.
test_expect_success 'a group-writable output directory is used' '
	mkdir -m 2775 group && chmod 2775 group &&
	struct --no-cache -o group "$good" >o.txt 2>err && ls group/*.fthst
'
test_expect_success 'an output directory every user can write to is refused, nothing written' '
	mkdir -m 777 open && chmod 777 open &&
	! struct --no-cache -o open "$good" >o.txt 2>err && cat err &&
	grep -q "open: writable by every user and not sticky" err && test -z "$(ls -A open)"
'
test_done
