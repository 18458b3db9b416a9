#!/bin/sh
# SPDX-License-Identifier: MIT
# t0459-view-tui-mpi.sh: the threads pane of a run of 4 MPI ranks (mpi-lib.sh): a row per rank
# with its process and total, its threads below it, the ranks' min, median, max and imbalance
# under the threads' (a terminal tall enough for all 24 rows); at rank_work, the 1:2:3:4 split of
# the ranks' work; Enter on a rank shows its sums alone, and the title says which.
. "$top_srcdir/tests/lib/test-lib.sh"
. "$top_srcdir/tests/e2e/view-tui-lib.sh"
. "$top_srcdir/tests/e2e/mpi-lib.sh"

mpi_setup

test_expect_success 'setup: 4 ranks measured, their database' '
	mpi_measure && mpi_database
'
test_expect_success 'the threads pane: a row per rank, its threads below, the ranks summed up' '
	tui_start 120 70 --no-hot-path db && tui_wait "120x70" && tui_keys p &&
	tui_wait "─ threads: task-clock\(I\) at <program root>" &&
	tui_until "test \$(grep -Ec \"^ rank [0-3] +process [0-9]+ +\./mpi-ranks +[0-9.]+ [mun]?s +[0-9.]+% \" screen) = 4" &&
	cat screen &&
	grep -Eq "^ [0-9]+ threads  min .* median .* max .*  imbalance max/mean [0-9.]+" screen &&
	grep -Eq "^ 4 ranks  min [0-9.]+ [mun]?s  median .* max .*  imbalance max/mean [0-9.]+$" screen &&
	test "$(grep -Ec "^   #[0-9]+ +tid [0-9]+ " screen)" -ge 8 &&
	! grep -Eq "^   #.* rank " screen &&
	sed -n "s/^ rank [0-3] .* \([0-9.]*\)% .*/\1/p" screen >shares && test $(wc -l <shares) = 4 &&
	sort -rn shares | cmp - shares
'
# rank_shares_ok: the rank rows in "screen" give rank R (R + 1) / 10 of the time, to within five
# standard errors of the samples (one a millisecond: task-clock@1000000), plus the rounding.
rank_shares_ok() {
	awk '/^ rank [0-3] / {
		r = $2; v = $(NF - 2); u = $(NF - 1); s = $NF
		for (i = 1; i <= NF; i++) if ($i ~ /%$/) { s = $i; v = $(i - 2); u = $(i - 1) }
		sub(/%/, "", s); share[r] = s / 100
		total += v * (u == "s" ? 1000 : u == "ms" ? 1 : u == "us" ? 0.001 : 0)
	} END {
		if (length(share) != 4 || total <= 0) exit 1
		for (r = 0; r < 4; r++) {
			p = (r + 1) / 10; bound = 5 * sqrt(p * (1 - p) / total) + 0.0005
			printf "rank %d: %.3f, expected %.1f, bound %.3f\n", r, share[r], p, bound
			if (share[r] - p > bound || p - share[r] > bound) exit 1
		}
	}' screen
}
test_expect_success 'at rank_work (flat view), the ranks split 1:2:3:4' '
	tui_keys 3 / && tui_text rank_work && tui_keys Enter &&
	tui_wait "─ threads: task-clock\(I\) at rank_work" &&
	tui_until "test \$(grep -Ec \"^ rank [0-3] +process \" screen) = 4" && cat screen &&
	rank_shares_ok
'
test_expect_success 'Enter on a rank shows its sums alone; "all threads" the sum again' '
	tui_keys r && tui_wait "─ threads" &&
	row=$(grep -n "^ rank 2 " screen | cut -d: -f1) &&
	first=$(grep -n "^= all threads" screen | cut -d: -f1) && test -n "$row" &&
	for i in $(seq $((row - first))); do tui_keys j; done && tui_keys Enter &&
	tui_wait "showing MPI rank 2 only" && tui_wait "  rank 2 +\? help" &&
	tui_until "grep -Eq \"^=rank 2 \" screen" &&
	tui_keys g Enter && tui_wait "showing the sum over all threads" && tui_wait "  all threads" &&
	tui_keys q && tui_wait_gone "─ threads" && tui_keys q && tui_exited
'
tui_stop
test_done
