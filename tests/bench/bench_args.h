// bench_args.h: what the benchmarks share: command lines (positional arguments, and a switch
// anywhere), the clock, the median, and how they stop on an error.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace headmap::bench {

// argv without `flag` (the program's name first); *seen says whether it was there.
inline std::vector<char*> positional_args(int argc, char** argv, const std::string& flag, bool* seen) {
  std::vector<char*> out;
  *seen = false;
  for (int i = 0; i < argc; ++i) {
    if (flag == argv[i]) *seen = true;
    else out.push_back(argv[i]);
  }
  return out;
}

inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// The middle value of a run's times (the upper of the two middle ones for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "PROGRAM: message" on stderr, and exit status 1.
[[noreturn]] inline void fail(const char* program, const std::string& m) {
  std::fprintf(stderr, "%s: %s\n", program, m.c_str());
  std::exit(1);
}

}  // namespace headmap::bench
