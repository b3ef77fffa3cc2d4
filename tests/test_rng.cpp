// test_rng.cpp: the fast normal stream (core/math/rng.h) is deterministic for every thread
// count and every split, and agrees with its definition computed in double precision.
// (tests/reference/normals.py holds the exported weights to the same definition in numpy.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/math/gemm.h"
#include "core/math/rng.h"

using namespace headmap;

namespace {
std::vector<float> draw(uint64_t key, int64_t n, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n), NAN);
  fill_normals(key, v.data(), n, scale);
  return v;
}
}  // namespace

TEST(Rng, SameNumbersForEveryThreadCount) {
  const int before = compute_threads();
  const int64_t n = 12 * 96 * 96 + 1;  // odd, and several blocks: threaded
  set_compute_threads(1);
  const std::vector<float> one = draw(42, n);
  set_compute_threads(2);
  const std::vector<float> two = draw(42, n);
  set_compute_threads(3);
  const std::vector<float> three = draw(42, n);
  set_compute_threads(before);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(one[i], two[i]) << "element " << i;
    ASSERT_EQ(one[i], three[i]) << "element " << i;
  }
}

TEST(Rng, AnyLengthIsAPrefixOfTheSameStream) {
  const std::vector<float> whole = draw(9, 5000);
  for (int64_t n : {1, 2, 7, 1023, 1024, 1025, 4999}) {
    const std::vector<float> part = draw(9, n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(part[i], whole[i]) << "n = " << n << ", element " << i;
  }
  const std::vector<float> scaled = draw(9, 5000, 0.25f);
  for (int i = 0; i < 5000; ++i) ASSERT_NEAR(scaled[i], 0.25f * whole[i], 1e-6f);
}

TEST(Rng, ASliceIsTheSameNumbersAsTheWholeStream) {
  // Matrices are drawn a block of rows at a time (weights.cpp): every slice that starts on a
  // pair must give the very numbers of the whole stream, across block boundaries, odd ends
  // included, on one thread and on two.
  const int threads = compute_threads();
  std::vector<float> whole(5000);
  fill_normals(99, whole.data(), static_cast<int64_t>(whole.size()), 0.5f);
  for (int nt : {1, 2}) {
    set_compute_threads(nt);
    for (auto [first, n] : {std::pair{0, 5000}, {2, 7}, {1022, 4}, {1024, 1}, {998, 3001}, {4000, 999}}) {
      std::vector<float> part(static_cast<size_t>(n));
      fill_normals_slice(99, first, part.data(), n, 0.5f);
      for (int i = 0; i < n; ++i) ASSERT_EQ(part[i], whole[first + i]) << "slice at " << first << ", element " << i << ", " << nt << " threads";
    }
  }
  set_compute_threads(threads);
}

TEST(Rng, BothBoxMullerOutputsMatchTheDefinitionInDouble) {
  const uint64_t key = combine(hash_bytes("w_q"), 768);
  const int64_t n = 100001;
  const std::vector<float> z = draw(key, n);
  double worst = 0;
  for (int64_t p = 0; p < (n + 1) / 2; ++p) {
    uint32_t a = 0, b = 0;
    normal_pair_bits(key, static_cast<uint32_t>(p), &a, &b);
    const double u1 = (a + 0.5) / 8388608.0, theta = 6.283185307179586 * (b / 16777216.0 - 0.5);
    const double r = std::sqrt(-2.0 * std::log(u1));
    worst = std::max(worst, std::abs(z[2 * p] - r * std::cos(theta)));
    if (2 * p + 1 < n) worst = std::max(worst, std::abs(z[2 * p + 1] - r * std::sin(theta)));
  }
  // float log/sin/cos (Eigen's, a few ulp) against double, on values up to ~5.8
  EXPECT_LT(worst, 1e-5) << "largest difference from the double-precision definition";
}

TEST(Rng, DifferentKeysGiveUncorrelatedStreams) {
  const std::vector<float> a = draw(1, 200000), b = draw(2, 200000);
  double ab = 0, aa = 0, bb = 0, a2b2 = 0;
  for (size_t i = 0; i < a.size(); ++i) ab += a[i] * b[i], aa += a[i] * a[i], bb += b[i] * b[i];
  // neighbouring outputs (the two of one pair) are uncorrelated too, as are their squares
  for (size_t i = 0; i + 1 < a.size(); i += 2) a2b2 += (a[i] * a[i] - 1) * (a[i + 1] * a[i + 1] - 1);
  const double n = static_cast<double>(a.size());
  EXPECT_NEAR(ab / std::sqrt(aa * bb), 0.0, 5 / std::sqrt(n));  // 5 sigma
  EXPECT_NEAR(aa / n, 1.0, 5 * std::sqrt(2 / n));
  EXPECT_NEAR(a2b2 / (n / 2), 0.0, 5 * 2 / std::sqrt(n / 2));
}
