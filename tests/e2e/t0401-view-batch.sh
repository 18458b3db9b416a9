#!/bin/sh
# SPDX-License-Identifier: MIT
# t0401-view-batch.sh: view --batch on the small database of tests/helper/viewdb.c (known
# values: total 1005, compute 360/180 with callers at lines 14 and 20, fact 42 however deep
# the recursion): the three views as text, CSV and JSON against expected output, depth, hot
# path, threads, and names from the database escaped.  Exact values with --raw (the default
# units and rounding: t0409).
. "$top_srcdir/tests/lib/test-lib.sh"
expected="$top_srcdir/tests/e2e/expected"

test_expect_success 'setup' 'make-viewdb small db'
test_expect_success 'top-down text' '
	view --batch --raw --metric cpu-clock --metric cycles db >out && test_cmp "$expected/view-small-topdown.txt" out
'
test_expect_success 'bottom-up text: function sums and call sites kept apart' '
	view --batch --raw --view bottom-up db >out && test_cmp "$expected/view-small-bottomup.txt" out &&
	grep -q "^  compute  *360 .* 180 " out && grep -q "« main at prog.c:14  *330 " out &&
	grep -q "« main at prog.c:20  *30 " out && grep -q "^  fact  *42 .* 42 " out
'
test_expect_success 'flat text: modules and files sum their functions' '
	view --batch --raw --view flat --metric cpu-clock --metric cycles db >out &&
	test_cmp "$expected/view-small-flat.txt" out &&
	grep -q "^  prog  *1005 100.0%  *945 94.0%" out && grep -q "^    util.h  *120 " out
'
test_expect_success 'CSV' '
	view --batch --raw --format csv db >out && test_cmp "$expected/view-small-topdown.csv" out &&
	grep -q "^0,,0,<program root>,root,,,,1005,100.0000,0,0.0000,77,100.0000,0,0.0000$" out
'
test_expect_success 'JSON: a nested tree with exact values' '
	view --batch --raw --format json --view flat --metric cpu-clock --metric "cycles per ns" db >out &&
	test_cmp "$expected/view-small-flat.json" out
'
if command -v python3 >/dev/null 2>&1; then
	test_expect_success 'JSON parses; the tree sums as the flat profile says' '
		view --batch --raw --format json --view bottom-up db >out &&
		python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"units\"] == {\"cpu-clock\": \"ns\", \"cycles\": None}, d[\"units\"]
t = d[\"tree\"]
assert t[\"inclusive\"][\"cpu-clock\"] == 1005, t
f = {c[\"name\"]: c for c in t[\"children\"]}
assert f[\"compute\"][\"inclusive\"][\"cpu-clock\"] == 360
assert f[\"compute\"][\"exclusive\"][\"cpu-clock\"] == 180
assert sum(c[\"inclusive\"][\"cpu-clock\"] for c in f[\"compute\"][\"children\"]) == 360
assert f[\"fact\"][\"inclusive\"][\"cpu-clock\"] == 42
for k in (\"kind\", \"name\", \"file\", \"line\", \"inclusive\", \"exclusive\", \"children\"):
    assert k in t, k
" out
	'
	test_expect_success 'JSON gives back the exact bytes of a name (ESC, newline, invalid UTF-8)' '
		view --batch --format json --view bottom-up db >out &&
		! grep -q "$(printf "\033")" out &&
		python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
names = [c[\"name\"].encode(\"utf-8\", \"surrogateescape\") for c in d[\"tree\"][\"children\"]]
assert b\"evil\\x1b[2J\\nname\\xff\\xfe\" in names, names
" out
	'
fi
test_expect_success 'depth limits the tree' '
	view --batch --depth 2 db >out && test $(wc -l <out) -eq 4 && grep -q "^    main " out
'
test_expect_success 'hot path: expanded along main, the loop, to prog.c:13' '
	view --batch --raw --hot-path db >out && grep -q "^        prog.c:13  *600 " out &&
	grep -q "^        prog.c:14 » compute  *330 " out && ! grep -q "prog.c:31" out
'
test_expect_success 'one thread' '
	view --batch --raw --thread 2 --depth 0 db >out && grep -q "^<program root>  *475 100.0%" out &&
	view --batch --thread 0 --format json --depth 0 db | grep -q "\"thread\": 0"
'
test_expect_success 'names are escaped in every format' '
	view --batch db >t && view --batch --format csv db >c && view --batch --format json db >j &&
	grep -q "evil\\\\e\[2J\\\\nname\\\\xff\\\\xfe" t && grep -q "evil\\\\e\[2J" c &&
	! grep -q "$(printf "\033")" t c j && ! LC_ALL=C grep -q "$(printf "\377")" t c j
'
test_expect_success 'ASCII arrows' '
	view --batch --ascii db | grep -q "prog.c:14 >> compute"
'
test_done
