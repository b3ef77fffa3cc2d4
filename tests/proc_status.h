// proc_status.h: the process's own resident memory, read from /proc/self/status (Linux), for
// the programs that report it: tests/load_peak_rss.cpp (ctest family_load_peak_rss) and
// tests/bench/bench_families.cpp (compare_torch_families.py, compare_torch_gpt2.py).
#pragma once
#include <cstdlib>
#include <fstream>
#include <string>

namespace headmap::test {

// A "Vm...:" field in KiB: "VmHWM:" (the peak resident set so far), "VmRSS:" (now); -1 when
// the field is absent (not Linux).
inline long status_kib(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::string(field).size() + 1);
  return -1;
}

}  // namespace headmap::test
