#!/bin/sh
# SPDX-License-Identifier: MIT
# t0002-corrupt-input.sh: bad input to a reader gets a clear message naming the file and the
# problem, exit status 1, and never a crash.
. "$top_srcdir/tests/lib/test-lib.sh"

test-tool make-mfile good.mf || exit 99
size=$(wc -c <good.mf)

test_expect_error 'missing file' 1 'missing.mf: cannot open: No such file or directory' \
	fathom-dump missing.mf
mkdir adir
test_expect_error 'a directory' 1 'adir: is a directory, not a regular file' fathom-dump adir
: >empty.mf
test_expect_error 'an empty file' 1 'empty.mf: not a fathom file: empty (0 bytes' fathom-dump empty.mf
head -c 5 good.mf >five.mf
test_expect_error 'five bytes' 1 'five.mf: not a fathom file: too short (5 bytes' fathom-dump five.mf
test_expect_error 'an empty measurement file given to prof' 1 \
	'empty.mf: empty (0 bytes): not yet written, cut short, or not a' prof -o db empty.mf
test_expect_error 'an ELF binary' 1 'not a fathom file' fathom-dump "$top_builddir/tools/fathom-dump"
head -c 40 good.mf >short.mf
test_expect_error 'header only' 1 'short.mf: truncated: 40 bytes' fathom-dump short.mf
head -c $((size - 1)) good.mf >cut.mf
test_expect_error 'last byte missing' 1 'cut.mf: truncated or unfinished' fathom-dump cut.mf
{ head -c 8 good.mf; printf '\002\000'; tail -c +11 good.mf; } >v2.mf
test_expect_error 'newer major version' 1 'v2.mf: corrupt header' fathom-dump v2.mf
# Flip a byte in the middle of the compressed data.
{ head -c 200 good.mf; printf 'Z'; tail -c +202 good.mf; } >flip.mf
test_expect_error 'a changed byte in a chunk' 1 'flip.mf:' fathom-dump flip.mf
{ head -c $((size - 40)) good.mf; printf 'XXXXXXXX'; tail -c 32 good.mf; } >toc.mf
test_expect_error 'a damaged table of contents' 1 'toc.mf: corrupt table of contents' \
	fathom-dump toc.mf
test_expect_success 'every truncation of the sample is refused cleanly' '
	n=0 bad=0
	while [ $n -lt '"$size"' ]; do
		head -c $n good.mf >t.mf
		fathom-dump t.mf >/dev/null 2>err
		st=$?
		if [ $st -ne 1 ] || ! grep -q "t.mf: " err; then
			echo "length $n: exit $st: $(cat err)"; bad=$((bad + 1))
		fi
		n=$((n + 1))
	done
	test $bad -eq 0
'
test_done
