// bench_args.h: the benchmarks' command lines: positional arguments, and a switch anywhere.
#pragma once
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

}  // namespace headmap::bench
