#!/bin/sh
# SPDX-License-Identifier: MIT
# t0119-measure-unmeasurable-children.sh: children that LD_PRELOAD cannot measure (statically
# linked, 32-bit, set-user-ID) are named with the reason in measure's summary, run unchanged,
# and the program's own output gets nothing from us (no loader error for a 32-bit child).
. "$top_srcdir/tests/lib/test-lib.sh"

command -v cc >/dev/null 2>&1 || skip_all "no C compiler to build the children"
command -v bash >/dev/null 2>&1 || skip_all "no bash (the parent that forks and execs them)"
printf 'int main(void) { return 3; }\n' >child.c
# parent.sh CHILD: fork and exec CHILD (bash forks for a command that is not the last).
printf '#!/bin/sh\nexec bash -c "\\"$1\\"; echo child \\$?; true"\n' >parent.sh
chmod +x parent.sh

if cc -static -o static-child child.c 2>/dev/null; then
	test_expect_success 'a statically linked child is named, and runs' '
		measure -o m1 ./parent.sh ./static-child >out 2>err && cat err &&
		grep -qx "child 3" out &&
		grep -q "warning: ./static-child: statically linked (no loader to preload" err
	'
else
	skip 'cc -static fails (no libc.a)' 'a statically linked child is named, and runs'
fi
if cc -m32 -o child32 child.c 2>/dev/null; then
	test_expect_success 'a 32-bit child is named, and its loader prints no error' '
		measure -o m2 ./parent.sh ./child32 >out 2>err && cat err &&
		grep -qx "child 3" out && ! grep -q "ld.so" err &&
		grep -q "warning: ./child32: a 32-bit program (measure.s library is 64-bit)" err
	'
else
	skip 'cc -m32 fails (Debian: apt-get install gcc-multilib)' \
		'a 32-bit child is named, and its loader prints no error'
fi
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	test_expect_success 'a set-user-ID child of another user is named, and runs' '
		chmod 755 "$TEST_TMP" && mkdir u && chmod 777 u && cp child.c parent.sh u/ && cc -o u/suid-child child.c &&
		chmod 4755 u/suid-child &&
		(cd u && HOME="$TEST_TMP/u" setpriv --reuid 60001 --regid 60001 --clear-groups \
			measure -o m ./parent.sh ./suid-child >out 2>err) && cat u/err &&
		grep -qx "child 3" u/out &&
		grep -q "warning: ./suid-child: set-user-ID or set-group-ID (its loader ignores" u/err
	'
else
	skip 'needs root and setpriv to run as another user' \
		'a set-user-ID child of another user is named, and runs'
fi
test_done
