#!/bin/sh
# SPDX-License-Identifier: MIT
# t0007-fifo-input.sh: a FIFO where a reader expects a file (given by name, or found inside a
# measurement or database directory) is refused by name at once, with status 1: no reader
# blocks on it (open(2) of a FIFO without a writer would wait forever).  Each run is capped by
# timeout(1), whose status 124 would mean the reader blocked.
. "$top_srcdir/tests/lib/test-lib.sh"

# fifo_refused TITLE PATTERN COMMAND...: COMMAND ends with status 1 (not 124) and names it.
fifo_refused() {
	title=$1 pattern=$2
	shift 2
	test_expect_error "$title" 1 "$pattern" timeout 60 "$@"
}

test_expect_success 'setup' '
	mkfifo pipe && chmod +x pipe &&
	mkdir m && test-tool make-mfile m/a-1.fthm && prof -o db m >/dev/null 2>&1 &&
	mkdir m-fifo && cp m/a-1.fthm m-fifo/ && mkfifo m-fifo/b-2.fthm &&
	cp -r db db-fifo && rm db-fifo/summary.fdb && mkfifo db-fifo/summary.fdb &&
	cp -r db db-fifo2 && rm db-fifo2/threads.fdb && mkfifo db-fifo2/threads.fdb &&
	mkdir s-fifo && mkfifo s-fifo/x.fthst
'
fifo_refused 'fathom-dump FIFO' 'pipe: is a FIFO, not a regular file' fathom-dump pipe
fifo_refused 'view --batch FIFO' 'pipe: is a FIFO, not a regular file' view --batch pipe
fifo_refused 'view --batch on a database whose summary is a FIFO' \
	'db-fifo/summary.fdb: is a FIFO, not a regular file' view --batch db-fifo
fifo_refused 'view --batch --thread on a database whose thread values are a FIFO' \
	'db-fifo2/threads.fdb: is a FIFO, not a regular file' view --batch --thread 0 db-fifo2
fifo_refused 'prof FIFO' 'pipe: is a FIFO, not a regular file' prof -o out1 pipe
fifo_refused 'prof on a directory holding a FIFO' 'm-fifo/b-2.fthm: is a FIFO, not a regular file' \
	prof -o out2 m-fifo
test_expect_success '... and the good file beside it is still merged' '
	fathom-dump out2 | grep -q "^threads 1 "
'
fifo_refused 'prof -S FIFO' 'pipe: is a FIFO, not a regular file' prof -S pipe -o out3 m
fifo_refused 'prof -S on a directory holding a FIFO' 's-fifo/x.fthst: is a FIFO' \
	prof -S s-fifo -o out4 m
fifo_refused 'struct FIFO' 'pipe: is a FIFO, not a regular file' struct pipe
fifo_refused 'struct --dump FIFO' 'pipe: is a FIFO, not a regular file' struct --dump pipe
# In directory mode struct warns about what it skips and goes on (struct(1), EXIT STATUS).
test_expect_error 'struct on a measurement directory holding a FIFO warns about it' 0 \
	'warning: skipping m-fifo/b-2.fthm: is a FIFO, not a regular file' timeout 60 struct m-fifo
test_expect_error 'measure on an executable FIFO' 2 'pipe: is a FIFO, not a regular file' \
	timeout 60 measure -o out5 ./pipe
test_done
