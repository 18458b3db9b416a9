# SPDX-License-Identifier: MIT
# pin.sh: sourced by the benchmarks (bash).  Sets CPUS to the CPUs this process may use
# (/proc/self/status Cpus_allowed_list, e.g. "0-3,6"), or to nothing when PIN=0 or taskset is
# missing; pin_prefix RUN prints "taskset -c C" for run RUN, the CPUs taken in turn.  The
# virtual CPUs of these machines differ, at times by 30% on a memory-bound workload: the
# configurations of one run go on the same CPU so that their ratios compare like with like.
CPUS=()
if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null; then
	IFS=, read -ra pin_parts <<<"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
	for pin_part in "${pin_parts[@]}"; do
		case $pin_part in
		*-*) for ((c = ${pin_part%-*}; c <= ${pin_part#*-}; c++)); do CPUS+=("$c"); done ;;
		?*) CPUS+=("$pin_part") ;;
		esac
	done
fi
pin_prefix() {
	[ ${#CPUS[@]} -gt 0 ] && echo "taskset -c ${CPUS[$1 % ${#CPUS[@]}]}"
}
