#!/bin/sh
# SPDX-License-Identifier: MIT
# t0209-struct-compressed.sh: compressed DWARF (zlib, SHF_COMPRESSED), in the binary and in a
# separate debug file found through .gnu_debuglink, is decompressed by struct's own threads:
# the structure is the same as from the uncompressed binary whatever -j, and a corrupt or
# short compressed section gets a clear message and exit status 1.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v objcopy >/dev/null 2>&1 || skip_all 'objcopy (binutils) is not installed'
command -v readelf >/dev/null 2>&1 || skip_all 'readelf (binutils) is not installed'

bin="$top_builddir/tests/struct-workloads"
# The dump without the lines that name the files.
body() {
	grep -v -e '^module ' -e '^  debug-file ' "$1"
}

for w in kernel-O2 loops-O3 clones-O2; do
	p="$bin/$w"
	test_expect_success "$w: compressed copies are made" "
		struct --no-cache --dump '$p' >plain-$w && body plain-$w >want-$w &&
		grep -q ' loop ' want-$w &&
		objcopy --compress-debug-sections=zlib '$p' z-$w &&
		readelf -SW z-$w | grep ' \\.debug_info ' | grep -q ' C ' &&
		objcopy --only-keep-debug --compress-debug-sections=zlib '$p' sep-$w.debug &&
		objcopy --strip-debug --add-gnu-debuglink=sep-$w.debug '$p' sep-$w &&
		! readelf -SW sep-$w | grep -q '\\.debug_info'
	"
	for j in 1 2 3; do
		test_expect_success "$w: compressed DWARF in the binary, -j$j: same structure" "
			struct -j$j --no-cache --dump z-$w >z-$w-$j && body z-$w-$j >got &&
			test_cmp want-$w got
		"
		test_expect_success "$w: compressed separate debug file, -j$j: same structure" "
			struct -j$j --no-cache --dump sep-$w >sep-$w-$j && body sep-$w-$j >got &&
			test_cmp want-$w got &&
			grep -q '^  debug-file .*sep-$w\\.debug\$' sep-$w-$j
		"
	done
done

# A program of many units, so that several threads read units (streamed from compressed
# .debug_info) and their line rows are sorted in several runs and merged.
if command -v cc >/dev/null 2>&1; then
	mkdir many && i=0 && : >many/main.c
	while [ $i -lt 24 ]; do
		cat >many/u$i.c <<EOF
int f$i(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) {
		if (a[i] > $i)
			s += a[i];
		else
			s -= i;
	}
	return s;
}
int g$i(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			s += a[j] * $i;
	return s;
}
EOF
		echo "int f$i(const int *, int); int g$i(const int *, int);" >>many/main.c
		i=$((i + 1))
	done
	{
		echo 'int main(int argc, char **argv) { int a[64] = { argc }; int s = 0;'
		i=0
		while [ $i -lt 24 ]; do
			echo "s += f$i(a, argc * 8) + g$i(a, argc * 8);"
			i=$((i + 1))
		done
		echo 'return s & 1; }'
	} >>many/main.c
	test_expect_success 'a program of 25 units' '
		cc -g -O2 -o many/prog many/*.c &&
		objcopy --compress-debug-sections=zlib many/prog many/zprog &&
		struct -j1 --no-cache --dump many/prog >many-1 && body many-1 >many-want &&
		test $(grep -c "^    function [fg][0-9]* " many-want) -eq 48 &&
		test $(grep -c "^ *loop at .*/many/u[0-9]*\.c:" many-want) -ge 48
	'
	for j in 2 3 5; do
		test_expect_success "a program of 25 units, -j$j: the same, compressed or not" "
			struct -j$j --no-cache --dump many/prog >many-$j && body many-$j >got &&
			test_cmp many-want got &&
			struct -j$j --no-cache --dump many/zprog >zmany-$j && body zmany-$j >got &&
			test_cmp many-want got
		"
	done
fi

w=kernel-O2
info=$(readelf -SW z-$w | awk '$2 == ".debug_info" { print $5 }')
size=$(readelf -SW z-$w | awk '$2 == ".debug_info" { print $6 }')
if [ -n "$info" ]; then
	# Elf64_Chdr: type (4), reserved (4), size (8), alignment (8), then the zlib stream.
	cp z-$w badzlib && patch_bytes badzlib $((0x$info + 24 + 0x$size / 2)) 5a5a5a5a5a5a5a5a
	# Unreadable DWARF is a warning naming the section: the binary is analysed without it.
	for j in 1 2; do
		test_expect_error "corrupt compressed .debug_info, -j$j: a warning, no DWARF" 0 \
			'warning: badzlib: corrupt compressed section .debug_info' \
			struct -j$j --no-cache --dump badzlib
	done
	cp z-$w badsize && patch_bytes badsize $((0x$info + 9)) 40
	test_expect_error 'a compressed size larger than the data: a warning, no DWARF' 0 \
		'warning: badsize: corrupt compressed section .debug_info: less data' \
		struct --no-cache --dump badsize
fi
test_done
