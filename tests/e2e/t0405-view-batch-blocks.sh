#!/bin/sh
# SPDX-License-Identifier: MIT
# t0405-view-batch-blocks.sh: view --batch on a database whose contexts span many blocks
# (make-viewdb large: 30,000 contexts, blocks of 4,096): every top-down value is its exclusive
# value plus its children's inclusive values and the root is the sum of every exclusive value,
# summed here with awk across the blocks, for the sums over threads and for one thread (only
# the contexts it has values in, as fathom-dump lists them); flat
# and bottom-up give every function the same values, and the modules add up to the total.
. "$top_srcdir/tests/lib/test-lib.sh"

# The top-down tree of a CSV with one metric: inclusive = exclusive + the children's
# inclusive at every row, the root = the sum of the exclusive values, ROWS rows.
check_tree() {
	awk -F, -v want_rows="$2" '
	function close_top(   v) {
		if (S[top] + E[top] != I[top]) {
			if (bad++ < 5)
				printf "row %d: inclusive %s, exclusive %s + children %s\n",
				       R[top], I[top], E[top], S[top]
		}
		v = I[top]
		top--
		if (top >= 0)
			S[top] += v
	}
	BEGIN { top = -1; bad = 0; rows = 0; sum = 0 }
	NR == 1 { next }
	{
		d = $3 + 0
		while (top >= 0 && D[top] >= d)
			close_top()
		top++
		D[top] = d; I[top] = $(NF - 3) + 0; E[top] = $(NF - 1) + 0; S[top] = 0; R[top] = NR
		sum += E[top]
		if (d == 0)
			root = I[top]
		rows++
	}
	END {
		while (top >= 0)
			close_top()
		if (root != sum) {
			printf "root %s, exclusive values %s\n", root, sum
			bad++
		}
		if (rows != want_rows) {
			printf "%d rows, not %d\n", rows, want_rows
			bad++
		}
		printf "%d rows, total %s\n", rows, root
		exit bad != 0
	}' "$1"
}

test_expect_success 'setup: 30,000 contexts in more than three blocks' '
	make-viewdb large --contexts 30000 --threads 3 db &&
	fathom-dump db >dump &&
	sed -n "s/^contexts \([0-9]*\) (\([0-9]*\) per block)\$/\1 \2/p" dump >blocks &&
	read n per <blocks && echo "$n contexts, $per per block" &&
	test "$n" -gt $((3 * per)) && echo "$n" >ncontexts
'
test_expect_success 'top-down, sums over threads: every value adds up across the blocks' '
	view --batch --raw --metric cpu-clock --format csv db >td.csv &&
	check_tree td.csv "$(cat ncontexts)"
'
test_expect_success 'top-down, another metric and one thread (threads.fdb by block)' '
	view --batch --raw --metric instructions --format csv db >td-i.csv &&
	check_tree td-i.csv "$(cat ncontexts)" &&
	view --batch --raw --thread 1 --metric cpu-clock --format csv db >td1.csv &&
	sed -n "/^thread t1:/,/^thread t1 flat/p" dump |
		awk "\$2 ~ /^m[0-9]/ && \$3 != 0 { c[\$1] = 1 } END { print length(c) }" >ran1 &&
	echo "thread 1 has values in $(cat ran1) of $(cat ncontexts) contexts" &&
	test "$(cat ran1)" -gt 1000 && test "$(cat ran1)" -lt "$(cat ncontexts)" &&
	check_tree td1.csv "$(cat ran1)" &&
	! cmp -s td.csv td1.csv
'
test_expect_success 'flat functions = bottom-up roots; the modules add up to the total' '
	view --batch --raw --view flat --metric cpu-clock --format csv db >flat.csv &&
	view --batch --raw --view bottom-up --depth 1 --metric cpu-clock --format csv db >bu.csv &&
	awk -F, "\$5 == \"function\" { print \$6, \$(NF - 3), \$(NF - 1) }" flat.csv | sort >f &&
	awk -F, "\$3 == 1 { print \$6, \$(NF - 3), \$(NF - 1) }" bu.csv | sort >b &&
	test "$(wc -l <f)" -gt 100 && test_cmp f b &&
	awk -F, "NR > 1 && \$3 == 1 { e += \$(NF - 1) } \$3 == 0 { t = \$(NF - 3) }
		 END { print e, t; exit e != t || t == 0 }" flat.csv
'
test_done
