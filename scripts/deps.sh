#!/bin/sh
# SPDX-License-Identifier: MIT
# deps.sh: install the Debian packages fathom needs to build and test, when they are missing.
# As root it runs apt-get; otherwise it uses sudo if that works without a password; otherwise
# it prints the exact apt-get command and exits 1.
set -eu

packages="gcc g++ make autoconf automake libtool pkg-config binutils libzstd-dev libdw-dev zlib1g-dev
libelf-dev libunwind-dev libpfm4-dev libzydis-dev libncurses-dev libiberty-dev"
# Optional: clang builds the libFuzzer harness; tmux drives view's terminal tests; jemalloc and
# tcmalloc are the other allocators MEMLEAK is tested over (t0110); gcc-multilib builds the
# 32-bit child that t0119 expects measure to name; Open MPI runs the MPI tests (t0124, t0459);
# llvm has the llvm-mca that view --mca runs (t0414).
optional="clang tmux libjemalloc2 libtcmalloc-minimal4 gcc-multilib openmpi-bin libopenmpi-dev llvm"

missing=
for p in $packages $optional; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
	echo "deps.sh: these packages are missing:$missing" >&2
	echo "deps.sh: this is not a Debian-like system (no apt-get); install their equivalents." >&2
	exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo="sudo -n"
else
	echo "deps.sh: these packages are missing:$missing" >&2
	echo "deps.sh: run as root:  apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# Optional packages may be unavailable on some mirrors; the required ones may not.
required_missing=
for p in $missing; do
	case " $optional " in *" $p "*) ;; *) required_missing="$required_missing $p" ;; esac
done
[ -z "$required_missing" ] || $sudo apt-get install -y -qq $required_missing
for p in $missing; do
	case " $optional " in
	*" $p "*) $sudo apt-get install -y -qq "$p" || echo "deps.sh: optional $p not installed" >&2 ;;
	esac
done
