// test_map_levels.cpp: the max-pooled reductions the app draws long maps from
// (core/inspect/map_levels.h): a single strong cell survives every level at T = 2048, and
// every level equals a brute-force block maximum, odd sizes included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include "core/inspect/map_levels.h"
#include "core/math/rng.h"

using namespace headmap;

TEST(MapLevels, ASingleStrongCellSurvivesEveryLevelAtT2048) {
  const int T = 2048;
  Rng rng(3);
  for (int trial = 0; trial < 4; ++trial) {
    // A map of small weights (below 1/T, as a spread-out head at T = 2048) and one 1.0 cell.
    std::vector<float> map(static_cast<size_t>(T) * T);
    for (float& v : map) v = static_cast<float>(rng.uniform()) / T;
    const int r = rng.below(T), c = rng.below(T);
    map[static_cast<size_t>(r) * T + c] = 1.0f;
    const MapLevels m = max_pool_levels(map.data(), T, T, T, 64);
    ASSERT_EQ(m.num_levels(), 6);  // 2048, 1024, 512, 256, 128, 64 cells a side
    for (int k = 1; k < m.num_levels(); ++k) {
      const int lr = m.level_rows(k), lc = m.level_cols(k);
      const float* lv = m.level(k);
      EXPECT_EQ(lv[static_cast<size_t>(r >> k) * lc + (c >> k)], 1.0f) << "level " << k << ", cell (" << r << ", " << c << ")";
      EXPECT_EQ(std::count(lv, lv + static_cast<size_t>(lr) * lc, 1.0f), 1) << "level " << k;
      // An average would have diluted it to 1/4^k + (1 - 1/4^k)/(2T) at most.
      const double mean_bound = 1.0 / (1 << (2 * k)) + 1.0 / (2.0 * T);
      EXPECT_GT(1.0, 2 * mean_bound) << "level " << k << ": the test would not tell max from mean";
    }
  }
}

TEST(MapLevels, EveryLevelIsTheBlockMaximumAtOddSizes) {
  Rng rng(11);
  for (auto [rows, cols, stride] : {std::tuple{7, 7, 9}, std::tuple{129, 100, 130}, std::tuple{1000, 1000, 1000}, std::tuple{65, 300, 301}}) {
    std::vector<float> map(static_cast<size_t>(rows) * stride, std::numeric_limits<float>::quiet_NaN());  // padding never read
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) map[static_cast<size_t>(i) * stride + j] = static_cast<float>(rng.uniform() - 0.5);
    const MapLevels m = max_pool_levels(map.data(), rows, cols, stride, 4);
    EXPECT_LE(std::max(m.level_rows(m.num_levels() - 1), m.level_cols(m.num_levels() - 1)), 4);
    for (int k = 1; k < m.num_levels(); ++k) {
      const int p = 1 << k;
      for (int i = 0; i < m.level_rows(k); ++i)
        for (int j = 0; j < m.level_cols(k); ++j) {
          float want = -INFINITY;
          for (int a = i * p; a < std::min(rows, (i + 1) * p); ++a)
            for (int b = j * p; b < std::min(cols, (j + 1) * p); ++b) want = std::max(want, map[static_cast<size_t>(a) * stride + b]);
          ASSERT_EQ(m.level(k)[static_cast<size_t>(i) * m.level_cols(k) + j], want)
              << rows << "x" << cols << " level " << k << " cell (" << i << ", " << j << ")";
        }
    }
  }
  // A map that already fits has no levels.
  const float one = 1.0f;
  EXPECT_EQ(max_pool_levels(&one, 1, 1, 1, 64).num_levels(), 1);
}

// Signed maps (Q K^T, scores) reduce by magnitude: a strong negative cell survives beside
// positive ones, keeps its sign, and a hidden (-inf) cell wins only where a whole block is hidden.
TEST(MapLevels, MagnitudeKeepsAStrongNegativeCellAndTheMask) {
  const int T = 1024;
  Rng rng(5);
  std::vector<float> map(static_cast<size_t>(T) * T);
  for (int i = 0; i < T; ++i)
    for (int j = 0; j < T; ++j)  // a causal score map: small values, -inf above the diagonal
      map[static_cast<size_t>(i) * T + j] = j > i ? -INFINITY : static_cast<float>(rng.uniform() - 0.5);
  const int r = 700, c = 301;
  map[static_cast<size_t>(r) * T + c] = -9.0f;
  const MapLevels by_max = max_pool_levels(map.data(), T, T, T, 64, Pool::Max);
  const MapLevels by_mag = max_pool_levels(map.data(), T, T, T, 64, Pool::Magnitude);
  for (int k = 1; k < by_mag.num_levels(); ++k) {
    const int lc = by_mag.level_cols(k);
    EXPECT_EQ(by_mag.level(k)[static_cast<size_t>(r >> k) * lc + (c >> k)], -9.0f) << "level " << k;
    EXPECT_NE(by_max.level(k)[static_cast<size_t>(r >> k) * lc + (c >> k)], -9.0f) << "level " << k << ": max would drop it";
    for (int i = 0; i < by_mag.level_rows(k); ++i)
      for (int j = 0; j < lc; ++j) {
        // The block holds a visible cell exactly when its first column is <= its last row.
        const bool visible = (j << k) <= std::min(T - 1, ((i + 1) << k) - 1);
        const float v = by_mag.level(k)[static_cast<size_t>(i) * lc + j];
        ASSERT_EQ(std::isfinite(v), visible) << "level " << k << " cell (" << i << ", " << j << ")";
      }
  }
}

// max_pool_levels_into: written into the levels of an earlier map (the app's worker reuses a
// retired pass's, helper rss10), larger, smaller or with more or fewer levels, poisoned with
// NaN, the levels equal a fresh max_pool_levels of the map bit for bit, and no level of the
// earlier map is left over; a level grown gets room for the next, slightly larger maps.
TEST(MapLevels, LevelsWrittenIntoAnEarlierMapsEqualFreshOnesAndKeepNoLeftOver) {
  Rng rng(17);
  MapLevels reused;
  for (int side : {125, 126, 128, 300, 40, 17, 16, 9, 129, 130}) {
    std::vector<float> map(static_cast<size_t>(side) * side);
    for (float& v : map) v = static_cast<float>(rng.uniform());
    for (std::vector<float>& level : reused.pooled) std::fill(level.begin(), level.end(), std::numeric_limits<float>::quiet_NaN());
    max_pool_levels_into(reused, map.data(), side, side, side, 16);
    const MapLevels fresh = max_pool_levels(map.data(), side, side, side, 16);
    ASSERT_EQ(reused.num_levels(), fresh.num_levels()) << "side " << side;
    EXPECT_EQ(reused.rows, side);
    EXPECT_EQ(reused.cols, side);
    for (int k = 1; k < fresh.num_levels(); ++k) {
      ASSERT_EQ(reused.pooled[k - 1].size(), fresh.pooled[k - 1].size()) << "side " << side << " level " << k;
      EXPECT_EQ(reused.pooled[k - 1], fresh.pooled[k - 1]) << "side " << side << " level " << k;
    }
  }
  MapLevels typing;
  max_pool_levels_into(typing, std::vector<float>(64 * 64, 0.5f).data(), 64, 64, 64, 16);
  const float* before = typing.pooled[0].data();
  max_pool_levels_into(typing, std::vector<float>(66 * 66, 0.5f).data(), 66, 66, 66, 16);
  EXPECT_EQ(typing.pooled[0].data(), before) << "typing two tokens on reallocated the first level";
}
