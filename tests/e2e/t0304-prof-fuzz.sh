#!/bin/sh
# SPDX-License-Identifier: MIT
# t0304-prof-fuzz.sh: the database reader's fuzz target replays its seeds (tests/fuzz/corpus/
# dbfile plus databases written now, stored and compressed, summary.fdb alone and followed by
# threads.fdb) and a fixed set of mutations without a crash or a sanitizer report; the traces
# reader's target likewise, on the summary and traces.fdb of a traced run.
. "$top_srcdir/tests/lib/test-lib.sh"

test_expect_success 'database reader: seeds and 3000 mutations' "
	mkdir m seeds && test-tool make-mfile m/a.fthm && test-tool make-mfile --nodes 300 m/b.fthm &&
	{ prof --compression 0 -o s0 m >/dev/null 2>&1; test -f s0/summary.fdb; } &&
	{ prof -o s3 m >/dev/null 2>&1; test -f s3/summary.fdb; } &&
	cp s0/summary.fdb seeds/stored.fdb && cp s3/summary.fdb seeds/zstd.fdb &&
	cat s0/summary.fdb s0/threads.fdb >seeds/stored-threads.fdb &&
	cat s3/summary.fdb s3/threads.fdb >seeds/zstd-threads.fdb &&
	cp '$top_srcdir'/tests/fuzz/corpus/dbfile/* seeds/ &&
	'$top_builddir/tests/fuzz/fuzz-dbfile-replay' -n 3000 -s 5 seeds
"
test_expect_success 'traces reader: seeds and 3000 mutations' "
	mkdir tseeds && measure -t -o tm '$top_builddir/tests/measure-workloads/phases' 10 \
		>/dev/null &&
	{ prof -o t1 tm >/dev/null 2>&1; test -f t1/traces.fdb; } &&
	cat t1/summary.fdb t1/traces.fdb >tseeds/phases.fdb &&
	'$top_builddir/tests/fuzz/fuzz-dbtrace-replay' -n 3000 -s 7 tseeds
"
test_done
