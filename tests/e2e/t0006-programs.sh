#!/bin/sh
# SPDX-License-Identifier: MIT
# t0006-programs.sh: every program answers --help and --version, and view (the last to land)
# opens a database and refuses what is not one, with status 1 and the file named.
. "$top_srcdir/tests/lib/test-lib.sh"

for prog in view; do
	test_expect_success "$prog --help and --version" "
		$prog --help | grep -q '^usage: $prog ' &&
		$prog --version | grep -q '^$prog (fathom) '
	"
done
test_expect_success 'view --batch prints a database' '
	make-viewdb small db && view --batch --depth 1 db | grep -q "^<program root>  *1005 100.0%"
'
test_expect_error 'view names what is not a database' 1 "something" view --batch something
test_done
