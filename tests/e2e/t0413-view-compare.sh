#!/bin/sh
# SPDX-License-Identifier: MIT
# t0413-view-compare.sh: view A B.  The split program measured at 3:1 and rebuilt at 1:1 with
# its code moved (split-even): every scope of each run is in the comparison at the same place
# with its values, in the three views and in JSON, and the changes are right to within the
# sampling error; then the synthetic top-down databases of make-viewdb (tma, and tma-after
# with the stream loop less backend bound): the node changes in text, CSV and JSON; metrics of
# one run, time measured with other events, --normalize, --min-change, and wrong uses.
. "$top_srcdir/tests/lib/test-lib.sh"

W="$top_builddir/tests/measure-workloads"
CHECK="$top_srcdir/tests/e2e/compare-check.py"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
measure -o ma -e task-clock "$W/split" 1 >/dev/null 2>&1 ||
	skip_all "measure cannot sample on this machine"

# samples DB: how many samples the run's task-clock took
samples() {
	fathom-dump "$1" | sed -n 's/^  m0 "task-clock" .* samples=\([0-9]*\) .*/\1/p'
}

test_expect_success 'setup: the two runs, each with its structure, each in a database' '
	measure -o mb -e task-clock "$W/split-even" 1 >/dev/null 2>&1 &&
	struct ma >/dev/null 2>&1 && struct mb >/dev/null 2>&1 &&
	prof -o A ma >/dev/null 2>&1 && prof -o B mb >/dev/null 2>&1 &&
	test "$(samples A)" -gt 0 && test "$(samples B)" -gt 0
'
test_expect_success 'top-down: every scope of each run, with its values, loops matched' '
	view --batch --raw --format json A B >cmp.json &&
	view --batch --raw --format json A >a.json &&
	view --batch --raw --format json B >b.json &&
	python3 "$CHECK" same cmp.json a.json b.json
'
test_expect_success 'the changes of work_three and work_one, within the sampling error' '
	python3 "$CHECK" split cmp.json "$(samples A)" "$(samples B)"
'
test_expect_success 'bottom-up and flat: the functions of both runs, with their values' '
	for v in bottom-up flat; do
		view --batch --raw --format json --view $v A B >cmp-$v.json &&
		view --batch --raw --format json --view $v A >a-$v.json &&
		view --batch --raw --format json --view $v B >b-$v.json &&
		python3 "$CHECK" flat cmp-$v.json a-$v.json b-$v.json || return 1
	done
'
test_expect_success 'JSON: the groups, the renamed program said, the scopes counted' '
	python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))[\"comparison\"]
g = c[\"groups\"][0]
assert (g[\"metric\"], g[\"a\"], g[\"b\"], g[\"delta\"], g[\"ratio\"]) == (\"task-clock\",
    \"A:task-clock\", \"B:task-clock\", \"B-A:task-clock\", \"B/A:task-clock\"), g
assert any(\"split-even\" in n for n in c[\"notes\"]), c[\"notes\"]
assert c[\"contexts\"][\"matched\"] > 10, c[\"contexts\"]
" cmp.json
'
test_expect_success 'text: columns of A, B, B-A and B/A, sorted by the size of the change' '
	view --batch --depth 12 A B >out && head -1 out >head &&
	grep -q "A:task-clock (I) .* B:task-clock (I) .* B-A:task-clock (I) .* B/A:task-clock (I)" head &&
	grep -A1 "loop at split.c" out | tail -1 | grep -q "» work_"
'
test_expect_success 'CSV: a runs column; --metric NAME brings its group' '
	view --batch --format csv --metric task-clock A B >out &&
	head -1 out | grep -q "^id,parent,depth,path,kind,name,file,line,runs,A:task-clock (I) \[s\]" &&
	grep -q ",work_three,.*,both," out
'
test_expect_success 'hot path: it follows the change' '
	view --batch --hot-path A B >out && grep -q "» work_" out
'
test_expect_success '--min-change: small changes hidden, the two functions kept' '
	view --batch --raw --format json --min-change 10% A B >min.json &&
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
total = max(d[\"totals\"][\"A:task-clock\"], d[\"totals\"][\"B:task-clock\"])
def big(n):
    return any(abs(n[s][\"B-A:task-clock\"]) >= 0.1 * total for s in (\"inclusive\", \"exclusive\"))
def walk(n, root):
    below = [walk(c, False) for c in n[\"children\"]]
    assert root or big(n) or any(below), n[\"label\"]
    return big(n) or any(below)
walk(d[\"tree\"], True)
names = set()
def collect(n):
    names.add(n[\"name\"]); [collect(c) for c in n[\"children\"]]
collect(d[\"tree\"])
assert {\"work_three\", \"work_one\"} <= names, names
assert \"__vdso_clock_gettime\" not in names
" min.json
'
test_expect_success 'time measured with another event: compared in seconds, and said' '
	measure -o mc -e cpu-clock "$W/split-even" 1 >/dev/null 2>&1 && prof -o C mc >/dev/null 2>&1 &&
	view --batch --format json --depth 0 A C >out &&
	grep -q "time: A.s task-clock compared with B.s cpu-clock, in seconds" out &&
	grep -q "\"B-A:task-clock\"" out
'

test_expect_success 'setup: the two top-down databases' '
	make-viewdb tma T1 && make-viewdb tma-after T2
'
test_expect_success 'TMA text: both breakdowns of a scope and the change of each node' '
	view --batch --topdown T1 T2 >out &&
	grep -A7 "kern.c:6 " out >k6 && cat k6 &&
	grep -q "| *Backend Bound 75.0% -> 50.0% (-25.0 pp)" k6 &&
	grep -q "| *Retiring 15.0% -> 40.0% (+25.0 pp)" k6 &&
	grep -A7 "kern.c:8 " out | grep -q "| *Backend Bound 15.0% -> 15.0% (+0.0 pp)" &&
	grep -A7 "^    main " out | grep -q "| *Backend Bound 45.0% -> 32.5% (-12.5 pp)"
'
test_expect_success 'TMA JSON: a, b and change of each node' '
	view --batch --raw --topdown --format json T1 T2 >out && python3 "$CHECK" tma out
'
test_expect_success 'TMA CSV: A, B and B-A columns per node' '
	view --batch --raw --topdown --format csv T1 T2 >out &&
	head -1 out | grep -q ",topdown Backend Bound (A),topdown Backend Bound (B),topdown Backend Bound (B-A)$" &&
	grep "> kern.c:6,line," out | grep -q ",0.75,0.5,-0.25$"
'
test_expect_success 'a metric of one run: shown for it, and said' '
	make-viewdb small S &&
	view --batch --format json --depth 0 S T1 >out &&
	grep -q "\"one_run\": \[{\"metric\": \"A:cycles\", \"run\": \"A\"}" out &&
	grep -q "cycles: measured in A only" out
'
test_expect_success 'scopes of one run are marked' '
	view --batch S T1 >out && grep -q "^    main  " out &&
	grep -q "^      loop at prog.c:12 \[A only\]  " out && grep -q "^        kern.c:6 \[B only\]  " out
'
test_expect_success '--normalize: counts as shares of each run'"'"'s total, time stays' '
	view --batch --raw --normalize --format json --depth 0 T1 T2 >out &&
	python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
g = {x[\"metric\"]: x for x in d[\"comparison\"][\"groups\"]}
assert g[\"cpu-clock\"][\"normalized\"] is False
assert g[\"slots\"][\"normalized\"] is True, g
assert g[\"slots\"][\"delta\"] == \"B-A:slots\", g
" out &&
	view --batch --raw --normalize --format json --metric topdown-be-bound T1 T2 >out &&
	python3 "$CHECK" normalized out
'
test_expect_error 'three databases' 1 'one database, or two to compare' view --batch A B C
test_expect_error '--normalize with one database' 1 'two databases to compare' view --batch --normalize A
test_expect_error 'a timeline of two runs' 1 'a timeline is of one run' view --batch --view trace A B
test_expect_error '--min-change: not a number' 1 'not a number' view --batch --min-change lots A B
test_expect_error 'a measurement directory as B' 1 'a measurement directory' view --batch A ma
test_expect_error 'a missing database' 1 'nowhere' view --batch A nowhere
test_done
