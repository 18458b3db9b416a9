#!/bin/sh
# SPDX-License-Identifier: MIT
# run-mfile-bench.sh: runs the measurement-file benchmark (bench/mfile-bench) from a build tree.
#
#   bench/run-mfile-bench.sh [BUILDDIR [MFILE-BENCH OPTIONS...]]
#
# BUILDDIR defaults to the current directory ("make bench" runs it there).  Options go to
# mfile-bench: --nodes N (default 1000000), --runs R (default 5), --dir DIR (default a new
# directory under $TMPDIR or /tmp).
set -eu
builddir=${1:-.}
[ $# -gt 0 ] && shift
bench="$builddir/bench/mfile-bench"
if [ ! -x "$bench" ]; then
	echo "run-mfile-bench.sh: $bench not found: run 'make bench' (or 'make bench/mfile-bench')" \
	     "in the build directory" >&2
	exit 2
fi
if [ ! -w /proc/self/clear_refs ]; then
	echo "run-mfile-bench.sh: /proc/self/clear_refs is not writable: cannot measure peak memory" >&2
	exit 2
fi
echo "host: $(uname -srm), $(nproc 2>/dev/null || echo '?') CPUs," \
     "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)"
exec "$bench" "$@"
