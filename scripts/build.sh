#!/bin/sh
# SPDX-License-Identifier: MIT
# build.sh: generate the build system when needed, configure in _build/ (out of tree, with
# --enable-werror) and compile.  Extra arguments go to configure.
set -eu
cd "$(dirname "$0")/.."
if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ] ||
	[ -n "$(find . -path ./_build -prune -o -name local.mk -newer configure -print)" ]; then
	echo "build.sh: generating the build system (autoreconf)"
	autoreconf -fi
fi
mkdir -p _build
cd _build
if [ ! -f Makefile ] || [ ../configure -nt config.status ]; then
	../configure --enable-werror "$@"
fi
make -j"$(nproc 2>/dev/null || echo 2)"
