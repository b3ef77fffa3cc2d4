// test_huge_pages.cpp: large blocks ask the kernel for 2 MB pages (core/math/huge_pages.h):
// aligned to 2 MB, marked in the kernel's own record of the mapping (/proc/self/smaps: the
// "hg" flag that MADV_HUGEPAGE sets), usable byte for byte and given back whole; small blocks
// are ordinary 64-byte aligned ones. The packed weights' storage takes them from 4 MB.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/math/huge_pages.h"
#include "core/math/packed_gemm.h"

using namespace headmap;

namespace {
// The VmFlags of the mapping holding p, "" when none holds it (or not on Linux).
std::string vm_flags_of(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find('-')) inside = lo <= a && a < hi;
    else if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}
bool kernel_has_thp() { return std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled"); }
bool has_flag(const std::string& flags, const char* f) { return (flags + " ").find(std::string(" ") + f + " ") != std::string::npos; }
}  // namespace

TEST(HugePages, LargeBlocksAreAlignedAdvisedUsableAndGivenBack) {
  const size_t bytes = (size_t(5) << 20) + 12345;  // not a whole number of 2 MB pages
  auto* p = static_cast<unsigned char*>(huge_alloc(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % (size_t(2) << 20), 0u);
  for (size_t i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(i * 7 + 3);
  size_t wrong = 0;
  for (size_t i = 0; i < bytes; ++i) wrong += p[i] != static_cast<unsigned char>(i * 7 + 3);
  EXPECT_EQ(wrong, 0u);
#ifdef __linux__
  const std::string flags = vm_flags_of(p);
  ASSERT_FALSE(flags.empty()) << "no mapping holds the block";
  if (kernel_has_thp()) EXPECT_TRUE(has_flag(flags, "hg")) << flags;
  huge_free(p, bytes);
  EXPECT_TRUE(vm_flags_of(p).empty()) << "the block was not given back";
#else
  huge_free(p, bytes);
#endif
}

TEST(HugePages, SmallBlocksAreOrdinaryAndAligned) {
  for (size_t bytes : {size_t(1), size_t(100), size_t(64 << 10), kHugePageMin - 1}) {
    void* p = huge_alloc(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    static_cast<unsigned char*>(p)[bytes - 1] = 1;
    huge_free(p, bytes);
  }
  huge_free(nullptr, size_t(64) << 20);  // nothing to free: no effect
}

TEST(HugePages, PackedWeightsOfFourMegabytesAreOnAdvisedBlocks) {
  if (!kernel_has_thp()) GTEST_SKIP() << "this kernel has no transparent huge pages";
  PackedMatrix big, small;
  big.resize(1024, 1024);  // 4 MB of F32
  small.resize(64, 64);
  const float* b = big.panel(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % (size_t(2) << 20), 0u);
  EXPECT_TRUE(has_flag(vm_flags_of(b), "hg")) << vm_flags_of(b);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small.panel(0)) % 64, 0u);
}
