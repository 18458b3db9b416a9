// SPDX-License-Identifier: MIT
// unwind-wl-cxx.cc: the C++ work of the unwinder cross-check (unwind-ref.c): libstdc++'s
// containers, strings, streams and algorithms, and exceptions thrown through a few frames.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

static volatile long cxx_sink;

__attribute__((noinline)) static void maybe_throw(int depth, unsigned *seed)
{
	if (depth == 0) {
		if (rand_r(seed) % 2)
			throw std::runtime_error("unwind-wl-cxx");
		return;
	}
	std::string s(static_cast<size_t>(depth), 'x');
	maybe_throw(depth - 1, seed);
	cxx_sink += static_cast<long>(s.size());
}

extern "C" void unwind_wl_cxx(unsigned *seed)
{
	std::vector<std::string> words;
	for (int i = 0; i < 300; i++) {
		std::ostringstream os;
		os << "w" << rand_r(seed) % 10000 << '.' << i;
		words.push_back(os.str());
	}
	std::sort(words.begin(), words.end());
	std::map<std::string, int> counts;
	for (const auto &w : words)
		counts[w.substr(0, 3)]++;
	cxx_sink += static_cast<long>(counts.size());
	for (int i = 0; i < 20; i++) {
		try {
			maybe_throw(static_cast<int>(rand_r(seed) % 6), seed);
		} catch (const std::exception &e) {
			cxx_sink += static_cast<long>(std::string(e.what()).size());
		}
	}
}
