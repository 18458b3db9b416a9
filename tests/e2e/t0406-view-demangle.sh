#!/bin/sh
# SPDX-License-Identifier: MIT
# t0406-view-demangle.sh: C++ names from symbol tables are shown demangled (libiberty), in
# every view and format; --no-demangle shows them as the binary spells them.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v g++ >/dev/null 2>&1 || skip_all "no g++ to build the C++ test program"
cat >p.cc <<'PROGRAM'
#include <ctime>
namespace geo {
struct Circle {
	double r;
	__attribute__((noinline)) double area(long n) const;
};
}
static volatile double sink;
double geo::Circle::area(long n) const
{
	double s = 0;
	for (long i = 0; i < n; i++)
		s += r * r * 3.14159 * (double)(i & 7);
	return s;
}
int main()
{
	geo::Circle c{2.0};
	/* 0.3 s of CPU time in area(), whatever the machine's speed: it is sampled */
	while (std::clock() < CLOCKS_PER_SEC * 3 / 10)
		sink += c.area(100000);
	return 0;
}
PROGRAM
# No -g: the names come from the symbol table, mangled.
test_expect_success 'setup: a C++ program measured' '
	g++ -O1 -o p p.cc && nm p | grep -q " _ZNK3geo6Circle4areaEl$" &&
	measure -o m ./p 2>/dev/null && struct m 2>/dev/null && prof -o db m >/dev/null 2>&1
'
test_expect_success 'the flat and bottom-up views show the demangled name' '
	view --batch --view flat db >flat && grep -q "geo::Circle::area(long) const" flat &&
	view --batch --view bottom-up db >bu && grep -q "geo::Circle::area(long) const" bu &&
	! grep -q _ZNK3geo flat bu
'
test_expect_success 'JSON and CSV carry the demangled name' '
	view --batch --view flat --format json db | grep -q "\"name\": \"geo::Circle::area(long) const\"" &&
	view --batch --view flat --format csv db | grep -q "geo::Circle::area(long) const"
'
test_expect_success '--no-demangle shows the symbol as the binary spells it' '
	view --batch --view flat --no-demangle db >raw && grep -q "_ZNK3geo6Circle4areaEl" raw &&
	! grep -q "geo::Circle" raw
'
test_done
