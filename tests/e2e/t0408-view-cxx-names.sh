#!/bin/sh
# SPDX-License-Identifier: MIT
# t0408-view-cxx-names.sh: functions from DWARF carry their qualified names (namespaces,
# classes, template arguments, lambdas), compiler clones keep their suffix, and functions with
# the same short name (two static helper(int), two inlined static step) stay apart, in every
# view; --no-demangle shows the names as the binary spells them.
. "$top_srcdir/tests/lib/test-lib.sh"

command -v g++ >/dev/null 2>&1 || skip_all "no g++ to build the C++ test program"
cat >a.cc <<'PROGRAM'
#include <ctime>
#include <vector>
static volatile double sink;
static double busy_until(double cpu_seconds) { return std::clock() < CLOCKS_PER_SEC * cpu_seconds; }
namespace hydro {
struct Domain {
	std::vector<double> x;
	__attribute__((noinline)) Domain(int n);
};
Domain::Domain(int n) : x(n)
{
	while (busy_until(0.15))
		for (int i = 0; i < n; i++)
			x[i] += i * 0.5;
}
template <typename T> __attribute__((noinline)) T total(const std::vector<T> &v)
{
	T s = 0;
	for (const T &e : v)
		s += e;
	return s;
}
}
__attribute__((always_inline)) static inline double step(double v) { return ((v / 1.0001) / 1.0002) / 1.0003 + 1; }
__attribute__((noinline)) static double helper(int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s = step(s);
	return s;
}
__attribute__((noinline)) static void scale(double *v, int n, double k)
{
	for (int i = 0; i < n; i++)
		v[i] = v[i] * k + 1;
}
double other_helper(int n);
static volatile int length = 4096;
int main()
{
	hydro::Domain d(4096);
	std::vector<int> vi(4096, 1);
	std::vector<double> vd(4096, 1.0);
	auto first = [&](double lim) { while (busy_until(lim)) sink += hydro::total(vd); };
	auto second = [&](double lim) { while (busy_until(lim)) sink += hydro::total(vi); };
	first(0.30);
	second(0.45);
	while (busy_until(0.60))
		sink += helper(length);
	while (busy_until(0.75))
		sink += other_helper(4096);
	while (busy_until(0.90)) {
		scale(vd.data(), 4096, 3.0);
		scale(vd.data() + 1, 4095, 3.0);
	}
	return (int)sink & 0;
}
PROGRAM
cat >b.cc <<'PROGRAM'
__attribute__((always_inline)) static inline double step(double v) { return ((v / 0.9999) / 0.9998) / 0.9997 - 1; }
__attribute__((noinline)) static double helper(int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s = step(s);
	return s;
}
double other_helper(int n) { return helper(n); }
PROGRAM
test_expect_success 'setup: a C++ program of two files measured' '
	g++ -O2 -g -o p a.cc b.cc &&
	nm p | grep -q "_ZL5scalePdid[.]constprop[.]0$" &&
	test "$(nm p | grep -c " _ZL6helperi$")" = 2 &&
	measure -o m ./p 2>/dev/null && struct m 2>/dev/null && prof -o db m >/dev/null 2>&1 &&
	view --batch --view bottom-up db >bu && view --batch --view flat db >flat &&
	view --batch db >td
'
test_expect_success 'namespaces, classes and template arguments qualify the names' '
	for v in bu flat td; do
		grep -q "hydro::Domain::Domain(int)" $v &&
		grep -q "double hydro::total<double>(std::vector<double, std::allocator<double> > const&)" $v &&
		grep -q "int hydro::total<int>(std::vector<int, std::allocator<int> > const&)" $v ||
		{ echo "not in $v"; return 1; }
	done
'
test_expect_success 'two lambdas are two functions, named by where they are' '
	grep -q "^  main::{lambda@44}::operator() " bu &&
	grep -q "^  main::{lambda@45}::operator() " bu &&
	grep -q "inlined main::{lambda@44}::operator() at a.cc:46" td &&
	grep -q "inlined main::{lambda@45}::operator() at a.cc:47" td
'
test_expect_success 'a clone keeps its suffix' '
	grep -q "^  scale(double\*, int, double) \[clone .constprop.0\] " bu &&
	grep -q "^      scale(double\*, int, double) \[clone .constprop.0\] " flat
'
test_expect_success 'two static functions of one name are two rows, one in each file' '
	test "$(grep -c "^  helper(int) " bu)" = 2 &&
	sed -n "/^    \/.*\/a.cc /,/^    [^ ]/p" flat | grep -q "^      helper(int) " &&
	sed -n "/^    \/.*\/b.cc /,/^    [^ ]/p" flat | grep -q "^      helper(int) "
'
test_expect_success 'two inlined static functions of one name are two rows' '
	struct --no-cache --dump p >dump &&
	grep -q "inline step called at .*a.cc:29:11 declared at .*a.cc:24 " dump &&
	grep -q "inline step called at .*b.cc:6:11 declared at .*b.cc:1 " dump &&
	test "$(grep -c "^  step " bu)" = 2
'
test_expect_success 'JSON carries the qualified names' '
	view --batch --view bottom-up --format json db >bu.json &&
	grep -q "\"name\": \"hydro::Domain::Domain(int)\"" bu.json &&
	grep -q "\"name\": \"main::{lambda@44}::operator()\"" bu.json
'
test_expect_success '--no-demangle shows the linkage names' '
	view --batch --view bottom-up --no-demangle db >raw &&
	grep -q "_ZN5hydro6DomainC2Ei" raw && grep -q "_ZL5scalePdid.constprop.0" raw &&
	! grep -q "hydro::Domain" raw
'
test_done
