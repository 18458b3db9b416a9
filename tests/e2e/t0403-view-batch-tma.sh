#!/bin/sh
# SPDX-License-Identifier: MIT
# t0403-view-batch-tma.sh: view --batch --topdown: the TMA database of tests/helper/viewdb.c
# with known percentages, and a database that prof built from make-tma-mfile's synthetic
# top-down measurement, whose percentages make-tma-mfile -p computes on its own.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'setup' 'make-viewdb tma db && make-viewdb small small'
test_expect_success 'text: the TMA tree under each node, marks for threshold and dominance' '
	view --batch --topdown --depth 2 db >out &&
	grep -q "^    |     Backend Bound 45.0% ! \*$" out &&
	grep -q "^    |     Retiring 22.5%$" out && grep -q "^    |     Bad Speculation 18.5% !$" out &&
	grep -q "^    |   Stall 59.0% \*$" out
'
test_expect_success 'a node without slots: n/a, never 0' '
	view --batch --topdown db >out && grep -A3 "kern.c:12" out | grep -q "Total Slots n/a"
'
test_expect_success 'JSON: fractions, null where not computable' '
	view --batch --raw --topdown --format json db >out &&
	grep -q "\"topdown\": {\"Total Slots\": 1, \"Active\": 0.41000000000000003, \"Retiring\": 0.225, \"Bad Speculation\": 0.185, \"Stall\": 0.59000000000000008, \"Frontend Bound\": 0.14, \"Backend Bound\": 0.45}" out &&
	grep -q "\"topdown\": {\"Total Slots\": null, \"Active\": null" out
'
test_expect_success 'CSV: one column per TMA node' '
	view --batch --raw --topdown --format csv --depth 0 db >out &&
	head -1 out | grep -q ",topdown Total Slots,topdown Active,topdown Retiring," &&
	grep -q "^0,,0,<program root>,root,.*,1,0.41000000000000003,0.225,0.185,0.59000000000000008,0.14,0.45$" out
'
test_expect_success 'without TMA metrics: no breakdown' '
	view --batch --topdown --format json --depth 0 small | grep -q "\"topdown\": {}"
'
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'prof on a synthetic top-down measurement: every leaf as make-tma-mfile -p' '
		mkdir m && make-tma-mfile -p m/a.fthm >want &&
		prof -o pdb m >/dev/null 2>&1 && view --batch --raw --topdown --format csv pdb >got &&
		python3 -c "
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]
cols = {h[len(\"topdown \"):]: i for i, h in enumerate(head) if h.startswith(\"topdown \")}
got = {}
for r in rows[1:]:
    if r[4] == \"line\":
        addr = int(r[3].split(\" > \")[-1].split(\"+0x\")[-1], 16)
        got[addr] = {k: r[i] for k, i in cols.items()}
checked = 0
for line in open(sys.argv[2]):
    if not line.startswith(\"ctx \"):
        continue
    w = line.split()
    addr, name, value = int(w[1], 16), \" \".join(w[2:-1]), float(w[-1])
    if name == \"Total Slots\":
        continue
    assert addr in got, (hex(addr), sorted(got))
    assert abs(float(got[addr][name]) - value) < 1e-6, (hex(addr), name, got[addr][name], value)
    checked += 1
assert checked >= 10, checked
" got want
	'
fi
test_done
