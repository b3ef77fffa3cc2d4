// map_levels.cpp: see map_levels.h.
#include "core/inspect/map_levels.h"

#include <algorithm>
#include <cmath>

namespace headmap {

namespace {
// Max: the larger. Magnitude: the one farther from 0 (a finite value beats -inf).
inline float pick_max(float a, float b) { return std::max(a, b); }
inline float pick_magnitude(float a, float b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return std::fabs(b) > std::fabs(a) ? b : a;
}

// dst (ceil(rows/2), ceil(cols/2)) = the 2 x 2 reduction of src (rows, cols), row stride `stride`.
template <float (*pick)(float, float)>
void pool2(const float* src, int rows, int cols, int stride, float* dst) {
  const int out_rows = (rows + 1) / 2, out_cols = (cols + 1) / 2, pairs = cols / 2;
  std::vector<float> vmax(static_cast<size_t>(cols));
  for (int i = 0; i < out_rows; ++i) {
    const float* a = src + static_cast<size_t>(2 * i) * stride;
    const float* b = 2 * i + 1 < rows ? a + stride : a;  // the last odd row pairs with itself
    // pass 1: the two rows' max, a vector at a time.
    for (int c = 0; c < cols; ++c) vmax[c] = pick(a[c], b[c]);
    // pass 2: neighbouring columns.
    float* o = dst + static_cast<size_t>(i) * out_cols;
    for (int c = 0; c < pairs; ++c) o[c] = pick(vmax[2 * c], vmax[2 * c + 1]);
    if (cols % 2) o[out_cols - 1] = vmax[cols - 1];
  }
}
}  // namespace

// room: a level grown gets 1/8 more cells (typing: the next maps are a little larger).
static void pool_levels(MapLevels& m, const float* data, int rows, int cols, int stride, int min_side, Pool pool, bool room) {
  m.rows = rows;
  m.cols = cols;
  min_side = std::max(min_side, 1);
  const float* src = data;
  int src_stride = stride;
  size_t n = 0;  // levels written
  for (int k = 1; m.level_rows(k - 1) > min_side || m.level_cols(k - 1) > min_side; ++k, ++n) {
    const int r = m.level_rows(k - 1), c = m.level_cols(k - 1);
    if (n == m.pooled.size()) m.pooled.emplace_back();
    std::vector<float>& level = m.pooled[n];
    const size_t cells = static_cast<size_t>(m.level_rows(k)) * m.level_cols(k);
    if (level.capacity() < cells) {  // room for a few more rows and columns (typing), not vector's doubling
      std::vector<float> grown;
      grown.reserve(room ? cells + cells / 8 : cells);
      level.swap(grown);
    }
    level.resize(cells);  // every cell written below
    if (pool == Pool::Magnitude) pool2<pick_magnitude>(src, r, c, src_stride, level.data());
    else pool2<pick_max>(src, r, c, src_stride, level.data());
    src = level.data();
    src_stride = m.level_cols(k);
  }
  m.pooled.resize(n);
}

void max_pool_levels_into(MapLevels& m, const float* data, int rows, int cols, int stride, int min_side, Pool pool) {
  pool_levels(m, data, rows, cols, stride, min_side, pool, true);
}

MapLevels max_pool_levels(const float* data, int rows, int cols, int stride, int min_side, Pool pool) {
  MapLevels m;
  pool_levels(m, data, rows, cols, stride, min_side, pool, false);
  return m;
}

}  // namespace headmap
