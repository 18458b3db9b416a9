#!/bin/sh
# SPDX-License-Identifier: MIT
# t0410-view-batch-units.sh: view --batch prints values in the screen's units and rounding by
# default (text "1.00 us", "10.9 KiB"; CSV and JSON numbers in seconds and bytes, their unit in
# the CSV header and in JSON "units"), and --raw the exact stored values (ns, bytes); derived
# metrics (ratios, a time in seconds) have no percentage; a program's real bytes measured.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'setup' 'make-viewdb small db'
test_expect_success 'text: times as the screen shows them, percentages to 0.1 %' '
	view --batch db >out &&
	grep -q "^<program root>  *1.00 us 100.0%  *0 s  *0.0%  *77 100.0%" out &&
	grep -q "^        prog.c:13  *600 ns  *59.7%  *600 ns 59.7%" out &&
	grep -q "^            prog.c:33 » sqrt  *60.0 ns   *6.0%" out &&
	! grep -q "1005" out
'
test_expect_success 'text --raw: the exact nanoseconds' '
	view --batch --raw db >out &&
	grep -q "^<program root>  *1005 100.0%  *0  *0.0%  *77 100.0%" out &&
	grep -q "^        prog.c:13  *600  *59.7%  *600 59.7%" out
'
test_expect_success 'CSV: seconds to three significant digits, the unit in the header' '
	view --batch --format csv db >out &&
	head -1 out | grep -q ",cpu-clock (I) \[s\],cpu-clock (I) %,cpu-clock (E) \[s\],cpu-clock (E) %,cycles (I),cycles (I) %," &&
	grep -q "^0,,0,<program root>,root,,,,0.000001,100.0,0,0.0,77,100.0,0,0.0$" out &&
	grep -q "> prog.c:13,line,,prog.c,13,0.0000006,59.7,0.0000006,59.7,60,77.9,60,77.9$" out
'
test_expect_success 'CSV --raw: exact integers and percentages, no unit in the header' '
	view --batch --raw --format csv db >out &&
	head -1 out | grep -q ",cpu-clock (I),cpu-clock (I) %,cpu-clock (E),cpu-clock (E) %," &&
	grep -q "^0,,0,<program root>,root,,,,1005,100.0000,0,0.0000,77,100.0000,0,0.0000$" out
'
test_expect_success 'JSON: the units, and the numbers in them' '
	view --batch --format json --depth 0 db >out &&
	grep -q "\"units\": {\"cpu-clock\": \"s\", \"cycles\": null}, \"totals\": {\"cpu-clock\": 0.000001, \"cycles\": 77}" out &&
	view --batch --raw --format json --depth 0 db >out &&
	grep -q "\"units\": {\"cpu-clock\": \"ns\", \"cycles\": null}, \"totals\": {\"cpu-clock\": 1005, \"cycles\": 77}" out
'
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'JSON: every rounded value is the exact one to three significant digits' '
		for v in top-down bottom-up flat; do
			view --batch --format json --view $v db >r.json &&
			view --batch --raw --format json --view $v db >x.json &&
			python3 -c "
import json, sys
def rows(t):
    yield t
    for c in t[\"children\"]:
        yield from rows(c)
r = list(rows(json.load(open(sys.argv[1]))[\"tree\"]))
x = list(rows(json.load(open(sys.argv[2]))[\"tree\"]))
assert len(r) == len(x) > 3, (len(r), len(x))
for a, b in zip(r, x):
    assert a[\"label\"] == b[\"label\"], (a[\"label\"], b[\"label\"])
    for k in (\"inclusive\", \"exclusive\"):
        s, e = a[k][\"cpu-clock\"] * 1e9, b[k][\"cpu-clock\"]
        assert abs(s - e) <= 0.005 * e + 1e-6, (a[\"label\"], k, s, e)
        assert a[k][\"cycles\"] == b[k][\"cycles\"], (a[\"label\"], k)
" r.json x.json || exit 1
		done
	'
fi
test_expect_success 'derived metrics: three significant digits, no percentage' '
	view --batch --depth 0 --metric "cpu-clock (s)" --metric "cycles per ns" db >out &&
	grep -q "^<program root>  *1e-06  *0  *0.0766  *n/a$" out && ! grep -q "%" out &&
	view --batch --depth 0 --format csv --metric "cpu-clock (s)" --metric "cycles per ns" db >out &&
	head -1 out | grep -q ",cpu-clock (s) (I),cpu-clock (s) (E),cycles per ns (I),cycles per ns (E)$" &&
	grep -q "^0,,0,<program root>,root,,,,0.000001,0,0.0766,$" out &&
	view --batch --raw --depth 0 --format csv --metric "cpu-clock (s)" db >out &&
	grep -q "^0,,0,<program root>,root,,,,1.005e-06,0$" out
'
W="$top_builddir/tests/measure-workloads"
test_expect_success 'bytes: binary multiples in text, exact bytes in CSV and --raw' '
	measure -o m -e IO "$W/synchronous" io data >/dev/null 2>&1 && prof -o io m >/dev/null 2>&1 &&
	view --batch --depth 0 --metric "IO Bytes Written" io >out &&
	grep -q "^<program root>  *10.9 KiB 100.0%" out &&
	view --batch --depth 0 --format csv --metric "IO Bytes Written" io >out &&
	head -1 out | grep -q ",IO Bytes Written (I) \[B\],IO Bytes Written (I) %," &&
	grep -q "^0,,0,<program root>,root,,,,11200,100.0," out &&
	view --batch --raw --depth 0 --metric "IO Bytes Written" io >out &&
	grep -q "^<program root>  *11200 100.0%" out &&
	view --batch --format json --depth 0 --metric "IO Bytes Written" io |
		grep -q "\"units\": {\"IO Bytes Written\": \"B\"}, \"totals\": {\"IO Bytes Written\": 11200}"
'
test_done
