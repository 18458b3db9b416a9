#!/bin/sh
# SPDX-License-Identifier: MIT
# t0006-programs.sh: the programs not landed yet answer --help and --version, and until their
# milestone lands say plainly that they are not implemented (exit 2) instead of doing nothing.
. "$top_srcdir/tests/lib/test-lib.sh"

for prog in view; do
	test_expect_success "$prog --help and --version" "
		$prog --help | grep -q '^usage: $prog ' &&
		$prog --version | grep -q '^$prog (fathom) '
	"
	test_expect_error "$prog says it is not implemented yet" 2 \
		"$prog: not implemented in fathom" $prog something
done
test_done
