#!/bin/sh
# SPDX-License-Identifier: MIT
# t0105-measure-dlopen.sh: sampling at 10,000 samples/s a thread that loops over dlopen,
# dlsym and dlclose never hangs.  make check runs 5 runs of 2 s; FATHOM_LONG_TESTS=1 runs
# the full 20 runs of 10 s.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
runs=5 secs=2
[ -n "${FATHOM_LONG_TESTS:-}" ] && runs=20 secs=10
command -v timeout >/dev/null || skip_all 'no timeout(1)'
test_expect_success "$runs runs of $secs s at f10000 complete without a hang" '
	ok=0 i=0
	while [ $i -lt '"$runs"' ]; do
		i=$((i + 1))
		# A cap against a hang only: far above what a slow, busy machine needs.
		if timeout -s KILL $(('"$secs"' * 10 + 120)) measure -o run$i -e task-clock@f10000 \
			"$W/dlstress" '"$secs"' >out 2>err; then
			ok=$((ok + 1))
		else
			echo "run $i failed or hung: $(cat err)"
		fi
	done
	echo "$ok of '"$runs"' runs completed"
	test $ok -eq '"$runs"'
'
test_expect_success 'the samples were recorded, unwound or dropped and counted' '
	cat run1/*.log &&
	grep -q "^summary: samples taken [1-9]" run1/*.log
'
test_done
