// test_parallel.cpp: the passes between the GEMMs split over threads (core/math/parallel.h)
// give the bits one thread gives: the activations' packet code rounds otherwise than its
// scalar head and tail, so a chunk that started off a 64-byte boundary would change the last
// bits of some elements (and an appended token would no longer equal a full recompute).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/math/activation.h"
#include "core/math/parallel.h"

using namespace headmap;

TEST(Parallel, ActivationsOnManyThreadsEqualOneThreadBitForBit) {
  std::mt19937 rng(38);
  std::normal_distribution<float> normal(0.0f, 4.0f);
  std::vector<float> base(100003);
  for (float& v : base) v = normal(rng);
  // Both runs start at the same address modulo 64 (offset floats past a 64-byte boundary):
  // where the scalar head and tail fall depends on it.
  std::vector<float> one_block(base.size() + 32), many_block(base.size() + 32);
  auto at = [](std::vector<float>& b, int offset) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(b.data()) + 63) / 64 * 64) + offset;
  };
  for (Activation a : {Activation::Silu, Activation::GeluTanh, Activation::GeluErf})
    for (int64_t n : {int64_t(777), int64_t(4099), int64_t(100003)})
      for (int offset : {0, 1, 5, 9, 15})
        for (int threads : {2, 3, 7}) {
          float* one = at(one_block, offset);
          float* many = at(many_block, offset);
          std::copy_n(base.data(), n, one);
          std::copy_n(base.data(), n, many);
          activate_inplace(a, one, n, 1);
          activate_inplace(a, many, n, threads);
          EXPECT_EQ(0, std::memcmp(one, many, static_cast<size_t>(n) * sizeof(float)))
              << activation_name(a) << ", " << n << " values from float " << offset << " past a 64-byte boundary on " << threads << " threads";
        }
}

TEST(Parallel, ParallelForVisitsEveryItemOnce) {
  for (int64_t n : {int64_t(0), int64_t(1), int64_t(1000)}) {
    std::vector<int> seen(static_cast<size_t>(n), 0);
    parallel_for(n, 1e9, [&](int64_t i) { ++seen[static_cast<size_t>(i)]; });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(1, seen[static_cast<size_t>(i)]) << i;
  }
}
