#!/bin/sh
# SPDX-License-Identifier: MIT
# t0116-measure-relocated.sh: an installed tree can be moved.  make install DESTDIR= puts the
# programs and libmeasure.so in a staging directory, which is then moved as a whole; the moved
# measure must preload the moved library (found from its own executable, not from the build
# tree or the configured pkglibdir), and without it say which paths it tried.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
# The tests run inside make check: the install is a make of its own, not a job of that one.
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$top_builddir" install \
	DESTDIR="$TEST_TMP/stage" >install.log 2>&1; then
	echo "# make install DESTDIR=$TEST_TMP/stage failed:"
	sed 's/^/#   /' install.log
	exit 1
fi
staged_lib=$(find stage -name libmeasure.so)
staged_measure=$(find stage -path '*/bin/*' -name '*measure' -type f)
# The configured directories, as the install laid them out under DESTDIR.
pkglibdir=$(dirname "${staged_lib#stage}")
bindir=$(dirname "${staged_measure#stage}")
mv stage moved
M="$TEST_TMP/moved$bindir/$(basename "$staged_measure")"
LIB="$TEST_TMP/moved$pkglibdir/libmeasure.so"

test_expect_success 'the staged tree has measure and its library' '
	test -n "$staged_lib" && test -n "$staged_measure" && test -x "$M" && test -r "$LIB"
'
test_expect_success 'the moved measure preloads the moved library and measures' '
	"$M" -v -o m -e task-clock@f1000 "$W/split" 0.3 >/dev/null 2>err &&
	cat err &&
	grep -qxF "measure: preloading $LIB" err &&
	fathom-dump m/*.fthm >dump &&
	grep -qF "\"$LIB\"" dump &&
	grep -q "^summary: samples taken [1-9][0-9]* recorded [1-9]" m/*.log
'
rm -f "$LIB"
if [ -e "$pkglibdir/libmeasure.so" ]; then
	skip "fathom is installed in $pkglibdir, where measure finds its library" \
		'without its library, the moved measure names the paths it tried'
else
	test_expect_success 'without its library, the moved measure names the paths it tried' '
		"$M" -o gone /bin/true 2>err; status=$?
		cat err
		test $status -eq 2 &&
		grep -qF "libmeasure.so is missing" err &&
		grep -qF "$LIB (beside this measure)" err &&
		grep -qF "$pkglibdir/libmeasure.so (the configured pkglibdir)" err &&
		test ! -e gone
	'
fi
mkdir "with space"
mv moved "with space/"
cp "$top_builddir/measure/.libs/libmeasure.so" "$TEST_TMP/with space/moved$pkglibdir/"
test_expect_success 'a library path with a space is refused, not silently unmeasured' '
	"$TEST_TMP/with space/moved$bindir/$(basename "$staged_measure")" -o sp /bin/true 2>err
	status=$?
	cat err
	test $status -eq 2 && test ! -e sp &&
	grep -qF "with space/moved$pkglibdir/libmeasure.so: measure" err &&
	grep -qF "LD_PRELOAD splits its list" err
'
test_done
