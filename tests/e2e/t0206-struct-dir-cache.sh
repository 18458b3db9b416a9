#!/bin/sh
# SPDX-License-Identifier: MIT
# t0206-struct-dir-cache.sh: struct on a measurement directory analyses every binary of the
# load maps into DIR/structs (pseudo-paths skipped with a note, bad binaries with a warning),
# the cache answers the second time with the same bytes, and the result does not depend on
# the number of threads.
. "$top_srcdir/tests/lib/test-lib.sh"

bin="$top_builddir/tests/struct-workloads"
test_expect_success 'a measurement directory naming four modules' "
	mkdir m && make-loadmap m/a.fthm '$bin/loops-O2' '[vdso]' &&
	make-loadmap m/b.fthm '$bin/kernel-O2' '$bin/loops-O2' \"\$PWD/notelf\" &&
	echo 'process log' >m/measure.log && echo text >notelf
"
test_expect_success 'struct writes one structure file per binary' "
	struct --cache cache m 2>err; status=\$?; cat err; test \$status -eq 0 &&
	test \$(ls m/structs | wc -l) -eq 2 &&
	ls m/structs | grep -q '^loops-O2-[0-9a-f]*\\.fthst\$' &&
	ls m/structs | grep -q '^kernel-O2-[0-9a-f]*\\.fthst\$'
"
test_expect_success 'pseudo-paths are skipped with a note, bad binaries with a warning' "
	grep -q 'note: skipping \\[vdso\\]' err &&
	grep -q 'warning: skipping .*notelf: .*not an ELF file' err &&
	grep -q '2 binaries analysed, 1 skipped' err
"
test_expect_success 'the second run comes from the cache, byte for byte' "
	mkdir first && cp m/structs/* first/ && rm -r m/structs &&
	struct --cache cache m 2>err2 && test \$(grep -c 'from the cache' err2) -eq 2 &&
	for f in first/*; do cmp \"\$f\" m/structs/\$(basename \$f) || exit 1; done
"
test_expect_success 'the cache is keyed by build-id' "
	id=\$(struct --no-cache --dump '$bin/loops-O2' | sed -n 's/^  build-id //p') &&
	test -f cache/\$id.fthst
"
test_expect_success 'the default cache is under XDG_CACHE_HOME' "
	XDG_CACHE_HOME=\$PWD/xdg struct -q -o o1 '$bin/loops-O0' &&
	ls xdg/fathom/structs | grep -q '^[0-9a-f]*\\.fthst\$'
"
test_expect_success '--no-cache neither reads nor writes it' "
	XDG_CACHE_HOME=\$PWD/xdg2 struct -q --no-cache -o o2 '$bin/loops-O0' 2>err3 &&
	! test -e xdg2 && ! grep -q 'from the cache' err3
"
if command -v objcopy >/dev/null 2>&1; then
	test_expect_success 'without a build-id, the key is a hash of the contents' "
		objcopy --remove-section .note.gnu.build-id '$bin/loops-O2' noid &&
		struct -q --cache cache2 -o o3 noid && ls cache2 | grep -q '^hash-[0-9a-f]*\\.fthst\$' &&
		ls o3 | grep -q '^noid-hash-'
	"
fi
test_expect_success 'a changed binary (other build-id) is skipped with a warning' "
	mkdir m2 && make-loadmap m2/a.fthm '$bin/loops-O2=0011223344' '$bin/kernel-O0' &&
	struct --no-cache m2 2>err4 && grep -q 'warning: skipping .*loops-O2: build-id is' err4 &&
	test \$(ls m2/structs | wc -l) -eq 1
"
test_expect_success 'one thread and two give the same structure' "
	struct --no-cache -j 1 --dump '$bin/loops-O3' >j1 && struct --no-cache -j 2 --dump '$bin/loops-O3' >j2 &&
	test_cmp j1 j2 &&
	libc=\$(ldd /bin/sh 2>/dev/null | sed -n 's/.*=> \\(\\/[^ ]*libc\\.so[^ ]*\\) .*/\\1/p') &&
	if test -n \"\$libc\"; then
		struct --no-cache -j 1 --dump \"\$libc\" >l1 && struct --no-cache -j 2 --dump \"\$libc\" >l2 &&
		cmp l1 l2
	fi
"
test_done
