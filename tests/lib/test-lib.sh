# SPDX-License-Identifier: MIT
# test-lib.sh: TAP helpers for the end-to-end shell tests (sourced, not run).
#
#   . "$top_srcdir/tests/lib/test-lib.sh"
#   test_expect_success 'dump prints the identity' 'fathom_dump f >out && grep -q host out'
#   test_done
#
# Each test body runs in a subshell inside $TEST_TMP (a fresh directory, removed at the end
# unless KEEP_TMP is set).  Programs from the build tree are on PATH.
set -u
: "${top_srcdir:?top_srcdir must be set (run through make check)}"
: "${top_builddir:?top_builddir must be set (run through make check)}"
PATH="$top_builddir/tools:$top_builddir/measure:$top_builddir/struct:$top_builddir/prof:$top_builddir/view:$top_builddir/tests/helper:$PATH"
export PATH
test_count=0
test_failed=0
TEST_TMP=$(mktemp -d "${TMPDIR:-/tmp}/fathom-e2e.XXXXXX")
trap 'test "${KEEP_TMP:-}" || rm -rf "$TEST_TMP"' EXIT
cd "$TEST_TMP" || exit 99
# The per-user caches (struct's structure files, measure's unwind tables) start empty in
# every script and never touch the user's own.
XDG_CACHE_HOME="$TEST_TMP/.cache"
export XDG_CACHE_HOME

# test_expect_success TITLE BODY: BODY (shell code) must exit 0.
test_expect_success() {
	test_count=$((test_count + 1))
	if (eval "$2") >"$TEST_TMP/.out" 2>&1; then
		echo "ok $test_count - $1"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $1"
		sed 's/^/#   /' "$TEST_TMP/.out"
	fi
}

# test_expect_failure_clean TITLE STATUS PATTERN CMD...: CMD must exit with STATUS, print
# PATTERN (a fixed string) on stderr, and not crash (no signal, no sanitizer report).
test_expect_error() {
	title=$1 want=$2 pattern=$3
	shift 3
	test_count=$((test_count + 1))
	"$@" >"$TEST_TMP/.stdout" 2>"$TEST_TMP/.stderr"
	got=$?
	if [ "$got" -eq "$want" ] && grep -qF -- "$pattern" "$TEST_TMP/.stderr" &&
	   ! grep -q 'Sanitizer' "$TEST_TMP/.stderr"; then
		echo "ok $test_count - $title"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $title"
		echo "#   exit status $got (expected $want); stderr:"
		sed 's/^/#   /' "$TEST_TMP/.stderr"
		echo "#   expected stderr to contain: $pattern"
	fi
}

# test_cmp EXPECTED ACTUAL: like cmp, but shows a diff on failure.
test_cmp() {
	diff -u "$1" "$2"
}

# patch_bytes FILE OFFSET HEXBYTES: overwrite bytes of FILE in place.
patch_bytes() {
	bytes=""
	for byte in $(echo "$3" | sed 's/../& /g'); do
		bytes="$bytes\\$(printf '%03o' "0x$byte")"
	done
	printf "$bytes" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# set_major_version FILE N: give a fathom file (doc/formats.md section 2) major format version
# N, with the header's CRC-32C recomputed, so that only the version is wrong.  Needs python3.
set_major_version() {
	python3 -c "
import sys
p, major = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, 'rb').read())
b[8:10] = major.to_bytes(2, 'little')
crc = 0xffffffff
for x in b[0:28]:
    crc ^= x
    for _ in range(8):
        crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
b[28:32] = (crc ^ 0xffffffff).to_bytes(4, 'little')
open(p, 'wb').write(b)
" "$1" "$2"
}

# has_pmu: whether the kernel lists a hardware PMU (hardware events can be counted).
has_pmu() {
	[ -e /sys/bus/event_source/devices/cpu ] || [ -e /sys/bus/event_source/devices/cpu_core ]
}

# without_pmu TITLE: whether this machine has no hardware PMU; where it has one, the test TITLE
# is skipped.
without_pmu() {
	! has_pmu && return 0
	skip 'hardware counters exist here' "$1"
	return 1
}

# test_expect_refused TITLE MESSAGE EVENT [VM_MESSAGE [VM_EVENT]]: measure -e EVENT exits with
# status 2 and MESSAGE, and before it ran the program or wrote its output directory; in a
# virtual machine, measure -e VM_EVENT (default EVENT) also says VM_MESSAGE.
test_expect_refused() {
	test_expect_error "$1" 2 "$2" measure -o out -e "$3" /bin/true
	test_expect_success 'and nothing ran or was written' '! test -e out'
	[ -n "${4:-}" ] && grep -q hypervisor /proc/cpuinfo || return 0
	test_expect_error 'and names the virtual machine' 2 "$4" measure -e "${5:-$3}" /bin/true
}

# faults_in_touch_pages METRIC DIR: whether, in test-tool's profile of METRIC in DIR's thread
# files (of measure-workloads/faults at 30 rounds, into p), touch_pages has 85% or more of the
# total and compute 10% or less.
faults_in_touch_pages() {
	test-tool profile -m "$1" -r touch_pages -r compute "$2"/*.fthm >p && cat p &&
	awk "/^total/ {t=\$2} /^reach touch_pages/ {a=\$3} /^reach compute/ {b=\$3}
	     END { printf \"faults in touch_pages: %.1f%%\\n\", 100 * a / t;
		   exit !(t >= 30 * 4096 * 0.5 && a >= 0.85 * t && b <= 0.1 * t) }" p
}

# shared_by_both METRIC DIR: whether both touch_pages and compute have some of METRIC (as
# faults_in_touch_pages reads it).
shared_by_both() {
	test-tool profile -m "$1" -r touch_pages -r compute "$2"/*.fthm >p && cat p &&
	awk "/^reach touch_pages/ {a=\$3} /^reach compute/ {b=\$3} END { exit !(a > 0 && b > 0) }" p
}

# unusable_reason NAME LIST: the reason under which LIST (the output of measure -L) says
# event NAME cannot be used here; nothing when it does not list NAME as unusable.  Each
# reason (lines indented by two spaces) heads the names (indented by six) it stops.
unusable_reason() {
	sed -n "/^Events known but not usable/,/^\$/p" "$2" | awk -v name="$1" '
		/^      / { for (i = 1; i <= NF; i++) if ($i == name) found = reason; names = 1; next }
		/^  / { line = $0; sub(/^ +/, "", line)
			if (names) reason = ""; names = 0; reason = reason (reason == "" ? "" : " ") line }
		END { if (found != "") print found }'
}

# skip REASON TITLE: one test point that cannot run here, reported as skipped.
skip() {
	test_count=$((test_count + 1))
	echo "ok $test_count - $2 # SKIP $1"
}

skip_all() {
	echo "1..0 # SKIP $1"
	exit 0
}

test_done() {
	echo "1..$test_count"
	[ "$test_failed" -eq 0 ]
}
