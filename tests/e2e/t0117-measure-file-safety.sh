#!/bin/sh
# SPDX-License-Identifier: MIT
# t0117-measure-file-safety.sh: nobody else's files are touched.  A victim and an attacker, two
# otherwise unused uids (setpriv), share directories as on an HPC node: symbolic links planted
# for the victim's coming log and measurement file names, a reused MPI output directory that
# belongs to the attacker, a log swapped before an exec, cache bases another user owns or can
# write to, a stale build directory swapped with a link to the victim's files while the
# victim's clean-up runs, and struct's and prof's output directories.  Each attack must leave
# the victim's files as they were; measure, struct and prof refuse, with the directory, its
# owner and mode, or write elsewhere.  A table crafted with a valid checksum is said in the
# log.  Where links are planted, the measured process runs as pid 2 of a new pid namespace, so
# that its file names are known in advance.
. "$top_srcdir/tests/lib/test-lib.sh"

[ "$(id -u)" -eq 0 ] || skip_all "needs root, to run a victim and an attacker as two other uids"
command -v setpriv >/dev/null 2>&1 || skip_all "needs setpriv (util-linux) to run as other uids"
pidns=false
command -v unshare >/dev/null 2>&1 && unshare --pid --fork true 2>/dev/null && pidns=true
# pidns_test TITLE BODY: a test whose measured process must be pid 2 of a new pid namespace.
pidns_test() {
	if $pidns; then
		test_expect_success "$1" "$2"
	else
		skip "needs unshare --pid, so that the measured process has a known pid" "$1"
	fi
}

# Two uids without an account or a file here: the victim and the attacker.
unused_uid() {
	u=$1
	while getent passwd "$u" >/dev/null || getent group "$u" >/dev/null || [ "$u" = "${2:-}" ]; do
		u=$((u + 1))
	done
	echo "$u"
}
V=$(unused_uid 60001)
A=$(unused_uid $((V + 1)) "$V")
chmod 755 "$TEST_TMP"
for u in "$V" "$A"; do
	mkdir -p "home-$u/.cache" && chown -R "$u:$u" "home-$u" && chmod 755 "home-$u"
done
VH=$TEST_TMP/home-$V
# as UID CMD...: CMD as UID alone, with a home and a cache of its own.
as() {
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups \
		env HOME="$TEST_TMP/home-$u" XDG_CACHE_HOME="$TEST_TMP/home-$u/.cache" "$@"
}
victim() { as "$V" "$@"; }
attacker() { as "$A" "$@"; }
# victim_pid2 CMD...: the victim's CMD (measure) as pid 1 of a new pid namespace: the program
# it runs is pid 2.
victim_pid2() { unshare --pid --fork setpriv --reuid="$V" --regid="$V" --clear-groups \
	env HOME="$VH" XDG_CACHE_HOME="$VH/.cache" "$@"; }
victim true || skip_all "setpriv cannot run a command as uid $V here"

host=$(uname -n)
# The name of /bin/sh's program, as a process log names it (dash, bash...).
sh_name=$(basename "$(readlink -f /bin/sh)")
W="$top_builddir/tests/measure-workloads"
LIB="$top_builddir/measure/.libs/libmeasure.so"
# precious NAME: a new file of the victim's, $VH/NAME, and a copy NAME.orig to compare it with.
precious() {
	victim sh -c 'echo "the data of the victim" >"$HOME/$1"' sh "$1" && cp "$VH/$1" "$1.orig"
}
# A directory like /tmp: root's, sticky, everyone may create entries.
mkdir pub && chmod 1777 pub
# plant DIR FILE: the attacker's links to FILE, in DIR, at the names of pid 2's log and first
# measurement file.
plant() {
	attacker ln -s "$2" "$1/true-$host-2.log" && attacker ln -s "$2" "$1/true-$host-2-0-2.fthm"
}
# no_file_of_victim_in DIR: the victim created nothing in DIR.
no_file_of_victim_in() { test -z "$(find "$1" -mindepth 1 -uid "$V")"; }

pidns_test 'MPI rank, an -o directory of the attacker (0777) with links planted: refused' '
	precious p1 && attacker mkdir pub/out && attacker chmod 777 pub/out && plant pub/out "$VH/p1" &&
	status=0 &&
	victim_pid2 env SLURM_PROCID=0 measure -o "$TEST_TMP/pub/out" -e task-clock /bin/true \
		>out 2>err || status=$? &&
	cat err && cmp p1.orig "$VH/p1" && test "$status" -eq 2 &&
	grep -q "pub/out: .*uid $A.*mode 0777" err && no_file_of_victim_in pub/out
'
pidns_test 'MPI rank, a sticky directory with links planted: the files go elsewhere' '
	precious p2 && mkdir pub/mpi && chmod 1777 pub/mpi && plant pub/mpi "$VH/p2" &&
	victim_pid2 env SLURM_PROCID=0 measure -o "$TEST_TMP/pub/mpi" -e task-clock /bin/true \
		>out 2>err &&
	cat err && cmp p2.orig "$VH/p2" &&
	test -L "pub/mpi/true-$host-2.log" && test -L "pub/mpi/true-$host-2-0-2.fthm" &&
	grep -q "^measure: rank 0: 1 process, 1 thread file" err &&
	ls pub/mpi/true-$host-2.*.log && tail -n 1 pub/mpi/true-$host-2.*.log | grep -q "^summary: " &&
	test "$(find pub/mpi -name "*.fthm" -type f -uid "$V" | wc -l)" -eq 1
'
pidns_test 'the default output directory, where the attacker linked its name: another' '
	victim mkdir "$VH/d" && attacker ln -s "$VH/d" pub/true-measurements &&
	(cd pub && victim_pid2 measure -e task-clock /bin/true >../out 2>../err) &&
	cat err && grep -q "true-measurements already exists; writing to .*true-measurements-2" err &&
	test -z "$(ls -A "$VH/d")" && ls pub/true-measurements-2/*.fthm
'
# The program swaps its own log before it executes another: neither its own last lines nor
# the new image's may follow.  Both go to a new log, whose first line names the run.
# swapped_log DIR FILE: the log of DIR that was swapped for a link to FILE (or FILE itself),
# and the log made instead, which holds the shell's last lines and those of the image it
# executed.
swapped_log() {
	swapped=
	for f in "$1"/*.log; do
		if [ "$f" -ef "$2" ]; then swapped=$f; fi
	done
	test -n "$swapped" && made=${swapped%.log}.1.log && test -f "$made" && ! test -L "$made" &&
	head -n 1 "$made" | grep -q "^run " && grep -q "process .*ended (exec)" "$made" &&
	grep -q "^process [0-9]*: /usr/bin/true" "$made" && tail -n 1 "$made" | grep -q "^summary: "
}
test_expect_success 'a log swapped for a link before an exec: neither image appends through it' '
	precious p4 && victim mkdir "$VH/ex" &&
	victim measure -o "$VH/ex/m" -e task-clock sh -c "l=$VH/ex/m/$sh_name-$host-\$\$.log; \
		test -f \$l && rm \$l && ln -s $VH/p4 \$l && exec /bin/true" 2>err &&
	cat err && cmp p4.orig "$VH/p4" && swapped_log "$VH/ex/m" "$VH/p4"
'
test_expect_success 'a log swapped for a hard link to another file: not appended to either' '
	precious p5 &&
	victim measure -o "$VH/ex/h" -e task-clock sh -c "l=$VH/ex/h/$sh_name-$host-\$\$.log; \
		test -f \$l && rm \$l && ln $VH/p5 \$l && exec /bin/true" 2>err &&
	cat err && cmp p5.orig "$VH/p5" && swapped_log "$VH/ex/h" "$VH/p5"
'
test_expect_success 'a cache base of the attacker (--cache): said on stderr and not used' '
	attacker mkdir pub/cache && attacker chmod 777 pub/cache &&
	victim measure --cache "$TEST_TMP/pub/cache" -o "$VH/c1" -e task-clock /bin/true 2>err &&
	cat err && grep -q "warning: cannot keep unwind tables between runs: .*pub/cache: .*uid $A" err &&
	test -z "$(ls -A pub/cache)"
'
test_expect_success 'a cache base under XDG_CACHE_HOME that the attacker owns: not used' '
	attacker mkdir -p pub/xdg/fathom/unwind && attacker chmod -R 777 pub/xdg &&
	victim env XDG_CACHE_HOME="$TEST_TMP/pub/xdg" measure -o "$VH/c2" -e task-clock \
		/bin/true 2>err &&
	cat err && grep -q "warning: cannot keep unwind tables between runs: .*pub/xdg" err &&
	test -z "$(ls -A pub/xdg/fathom/unwind)"
'
test_expect_success 'a cache base of the victim that others can write to (0777): not used' '
	victim mkdir "$VH/open" && victim chmod 777 "$VH/open" &&
	victim measure --cache "$VH/open" -o "$VH/c3" -e task-clock /bin/true 2>err &&
	cat err && grep -q "open: writable by every user.*mode 0777" err && test -z "$(ls -A "$VH/open")"
'
test_expect_success 'a cache of the victim inside a directory of the attacker: not used' '
	attacker mkdir pub/att && attacker chmod 777 pub/att &&
	victim mkdir -m 700 pub/att/mine &&
	victim measure --cache "$TEST_TMP/pub/att/mine" -o "$VH/c4" -e task-clock /bin/true 2>err &&
	cat err && grep -q "cannot keep unwind tables between runs: .*pub/att: .*uid $A" err &&
	test -z "$(ls -A pub/att/mine)"
'
# The clean-up of stale builds against renameat2(RENAME_EXCHANGE) in a loop: in a base like
# /tmp (root's, sticky), the attacker swaps its own stale build directory with a link to a
# directory of the victim's while the victim's clean-up runs 20,000 times.  Whatever the
# interleaving, no file of the victim's may go.
test_expect_success 'the clean-up of stale builds, raced 20,000 times by a rename exchange' '
	mkdir race && chmod 1777 race &&
	victim mkdir "$VH/docs" && for f in a b c d; do victim sh -c "echo $f >$VH/docs/$f"; done &&
	attacker mkdir race/build-00000000000000aa &&
	attacker touch -d "40 days ago" race/build-00000000000000aa &&
	attacker ln -s "$VH/docs" race/swap &&
	attacker rename-exchange race/build-00000000000000aa race/swap "$TEST_TMP/pub/ready" \
		"$TEST_TMP/pub/stop" >exchanges 2>attacker.err &
	pid=$! && waited=0 &&
	while ! test -e pub/ready && kill -0 $pid 2>/dev/null && [ $waited -lt 1200 ]; do
		sleep 0.1; waited=$((waited + 1))
	done &&
	if ! test -e pub/ready; then kill $pid; cat attacker.err; exit 1; fi &&
	{ victim cache-cleanup "$TEST_TMP/race" "$LIB" 20000 "$VH/docs/a" >cleanups 2>cleanup.err;
	  rc=$?; touch pub/stop; wait $pid; } &&
	cat cleanups exchanges cleanup.err attacker.err && test $rc -eq 0 &&
	grep -q "^iterations 20000 cleanups 20000$" cleanups &&
	grep -q "^exchanges [1-9]" exchanges &&
	for f in a b c d; do test "$(cat "$VH/docs/$f")" = $f || exit 1; done
'
# A table crafted for the program, with a valid checksum: nothing stops it, but the log says
# that the call paths through the tables mapped from the cache came out partial.
crafted_table() {
	python3 - "$1" <<-\EOF
	import struct, sys
	path = sys.argv[1]
	b = bytearray(open(path, "rb").read())
	hdr = bytearray(b[:96])
	# nrows nfdes nunknown nbad has_index nbuckets shift crc, after magic, row size, key
	struct.pack_into("<8I", hdr, 48, 1, 1, 0, 0, 0, 0, 0, 0)
	body = hdr + bytes(16)  # one row: CFI_NONE from offset 0
	crc = 0xffffffff
	for x in body:
	    crc ^= x
	    for _ in range(8):
	        crc = (crc >> 1) ^ (0x82f63b78 if crc & 1 else 0)
	struct.pack_into("<I", body, 76, crc ^ 0xffffffff)
	open(path + ".new", "wb").write(body)
	EOF
	mv "$1.new" "$1"
}
test_expect_success 'a crafted table shared from the cache: the partial call paths are said' '
	measure -o k1 -e task-clock@f1000 "$W/callpaths" memcpy 0.5 >/dev/null 2>err &&
	measure -o k2 -e task-clock@f1000 "$W/callpaths" memcpy 0.5 >/dev/null 2>err &&
	grep -q "unwind tables .*(0 built, [1-9][0-9]* shared)" k2/*.log &&
	! grep -q "^warning: .*partial" k2/*.log &&
	id=$(readelf -n "$W/callpaths" | sed -n "s/.*Build ID: *//p") && test -n "$id" &&
	table=$(ls "$XDG_CACHE_HOME"/fathom/unwind/build-*/"$id".cfi) && crafted_table "$table" &&
	measure -o k3 -e task-clock@f1000 "$W/callpaths" memcpy 0.5 >/dev/null 2>err &&
	cat err && ! grep -q "building the table again" k3/*.log &&
	line=$(grep "^warning: .* call paths .*partial.*unwind tables mapped from" k3/*.log) &&
	echo "$line" | grep -q "callpaths" &&
	n=$(echo "$line" | sed "s/^warning: \([0-9]*\) of \([0-9]*\) .*/\1/") &&
	of=$(echo "$line" | sed "s/^warning: \([0-9]*\) of \([0-9]*\) .*/\2/") &&
	recorded=$(sed -n "s/^summary: samples taken [0-9]* recorded \([0-9]*\).*/\1/p" k3/*.log) &&
	test "$of" -eq "$recorded" && test $((2 * n)) -gt "$recorded" &&
	grep -q "warning: .*partial.*unwind tables mapped from" err
'
# struct's structure cache and output directory, prof's database.
test_expect_success 'struct: a structure cache of the attacker is said and not used' '
	victim mkdir "$VH/s" &&
	victim make-loadmap "$VH/s/m.fthm" "$top_builddir/tests/struct-workloads/loops-O2" &&
	victim struct -q --cache "$TEST_TMP/pub/cache" "$VH/s" 2>err &&
	cat err && grep -q "no cache: .*pub/cache: .*uid $A" err && test -z "$(ls -A pub/cache)" &&
	ls "$VH"/s/structs/*.fthst >/dev/null
'
test_expect_success 'struct: an output directory of the attacker is refused, nothing written' '
	attacker mkdir pub/sout && attacker chmod 777 pub/sout &&
	! victim struct -q --no-cache -o "$TEST_TMP/pub/sout" "$VH/s" 2>err &&
	cat err && grep -q "pub/sout: .*uid $A.*mode 0777" err && test -z "$(ls -A pub/sout)"
'
test_expect_success 'prof: a database directory of the attacker is not replaced' '
	attacker mkdir pub/db && attacker chmod 777 pub/db && attacker touch pub/db/summary.fdb &&
	ls -la pub/db >before &&
	! victim sh -c "cd $VH && prof -o $TEST_TMP/pub/db s" 2>err &&
	cat err && grep -q "pub/db: .*uid $A.*mode 0777" err &&
	ls -la pub/db >after && test_cmp before after
'
test_done
