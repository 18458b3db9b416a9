#!/bin/sh
# SPDX-License-Identifier: MIT
# t0006-programs.sh: every program (measure, struct, prof, view, fathom-dump) answers --help and
# --version with status 0, refuses an unknown option with a non-zero status and the option
# named, and refuses an input that is not what it reads with the file named; view opens a
# database.
. "$top_srcdir/tests/lib/test-lib.sh"

echo "not a measurement, a binary or a database" >something
for prog in measure struct prof view fathom-dump; do
	test_expect_success "$prog --help and --version" "
		$prog --help >out && grep -q '^usage: $prog ' out &&
		$prog --version >out && grep -q '^$prog (fathom) [0-9]' out
	"
	test_expect_success "$prog refuses an unknown option" "
		! $prog --frobnicate something >out 2>err && cat err &&
		grep -q -- '--frobnicate' err && ! test -s out
	"
done
test_expect_error 'measure names a program it cannot find' 2 "something-missing-here: No such file" \
	measure -o never ./something-missing-here
test_expect_error 'struct names what is not an ELF file' 1 "something: not an ELF file" \
	struct something
test_expect_error 'prof names what is not a measurement file' 1 \
	"something: not a fathom measurement file" prof -o db-never something
test_expect_error 'fathom-dump names what is not a fathom file' 1 "something: not a fathom file" \
	fathom-dump something
test_expect_success 'view --batch prints a database' '
	make-viewdb small db && view --batch --depth 1 db | grep -q "^<program root>  *1.00 us 100.0%"
'
test_expect_error 'view names what is not a database' 1 "something" view --batch something
test_done
