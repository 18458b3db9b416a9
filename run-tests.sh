#!/bin/sh
# SPDX-License-Identifier: MIT
# run-tests.sh: from a fresh Debian 12 machine to the whole test suite: installs what is
# missing, builds, runs `make check` (and `make distcheck` with --distcheck), and ends with a
# line "N passed, N failed, N skipped" counting every test point.
set -u
cd "$(dirname "$0")"
distcheck=no
[ "${1:-}" = --distcheck ] && distcheck=yes

sh scripts/deps.sh || exit 1
sh scripts/build.sh || { echo "run-tests.sh: build failed"; exit 1; }
status=0
make -C _build -j"$(nproc 2>/dev/null || echo 2)" check || status=1
if [ $status -ne 0 ]; then
	echo "run-tests.sh: failures; their logs:"
	grep -l -E '^:test-result: (FAIL|ERROR)' $(find _build -name '*.trs') 2>/dev/null |
		sed 's/\.trs$/.log/' | while read -r log; do echo "==> $log"; cat "$log"; done
fi
if [ $distcheck = yes ] && [ $status -eq 0 ]; then
	make -C _build distcheck || { echo "run-tests.sh: make distcheck failed"; status=1; }
fi
trs=$(find _build -name '*.trs' -not -path '*/fathom-*/*')
passed=$(cat $trs /dev/null | grep -c '^:test-result: PASS')
failed=$(cat $trs /dev/null | grep -c -E '^:test-result: (FAIL|ERROR|XPASS)')
skipped=$(cat $trs /dev/null | grep -c '^:test-result: SKIP')
[ $status -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo "$passed passed, $failed failed, $skipped skipped"
exit $status
