#!/bin/sh
# SPDX-License-Identifier: MIT
# stress.sh: run a command (make check-stress: the end-to-end tests) with two busy processes
# per CPU beside it, so that a test whose verdict depends on the machine's load fails here and
# not only on somebody else's busier machine.  STRESS_PER_CPU changes the two.  The busy
# processes end with the command, also when it is interrupted.
set -u
[ $# -gt 0 ] || { echo "usage: stress.sh COMMAND [ARG]..." >&2; exit 2; }
cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
n=$((cpus * ${STRESS_PER_CPU:-2}))
pids=
stop() {
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait 2>/dev/null
	pids=
}
trap 'stop' EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
i=0
while [ $i -lt $n ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
echo "stress.sh: $n busy processes ($cpus CPUs) beside: $*"
"$@"
status=$?
stop
echo "stress.sh: status $status with $n busy processes beside it"
exit $status
