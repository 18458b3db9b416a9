#!/bin/sh
# SPDX-License-Identifier: MIT
# run-demo.sh: from a fresh Debian 12 machine to a profile of examples/matmul.c: installs what
# is missing, builds, then runs the pipeline  measure -> struct -> prof -> view.  view opens
# when stdout is a terminal; otherwise its batch output (hot path, flat view) is printed.
set -u
cd "$(dirname "$0")"
sh scripts/deps.sh || exit 1
sh scripts/build.sh >_build.log 2>&1 || { cat _build.log; echo "run-demo.sh: build failed"; exit 1; }
echo "run-demo.sh: built fathom (log in _build.log)"
B=$PWD/_build
mkdir -p _demo && cd _demo || exit 1
cc -O2 -g -o matmul ../examples/matmul.c || exit 1
echo "run-demo.sh: the program alone:"
./matmul 1000 || exit 1

# Each stage: run it from the build tree; a stage that fails stops the pipeline.
stage() {
	name=$1
	shift
	echo "run-demo.sh: \$ $name $*"
	"$B/$name/$name" "$@"
	rc=$?
	[ $rc -eq 0 ] || { echo "run-demo.sh: $name failed (exit $rc)"; exit $rc; }
}
rm -rf matmul-measurements matmul-database
stage measure -o matmul-measurements ./matmul 1000
stage struct matmul-measurements
stage prof -o matmul-database matmul-measurements
# view: interactive on a terminal; otherwise the same trees in batch mode.
if [ -t 1 ]; then
	stage view matmul-database
else
	echo "run-demo.sh: (not a terminal: view's batch mode; run '_build/view/view _demo/matmul-database' to browse)"
	stage view --batch --hot-path matmul-database
	stage view --batch --view flat --depth 4 matmul-database
fi
