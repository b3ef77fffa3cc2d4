// map_levels.h: max-pooled reductions of a map, so long sequences draw fast and stay true.
//
// T = tokens. A (T, T) attention map at T = 2048 has 4 M cells; a head's map on screen has
// a few hundred pixels a side. Level k holds blocks of 2^k x 2^k cells, each reduced to
// its maximum: a single strong cell is never averaged away, at any level. The app uploads
// the level that fits the pixels, and full-resolution tiles only where it is zoomed in.
#pragma once
#include <vector>

namespace headmap {

struct MapLevels {
  int rows = 0, cols = 0;                  // cells of the source map (level 0, not stored here)
  std::vector<std::vector<float>> pooled;  // level k >= 1 at pooled[k - 1]: (level_rows(k), level_cols(k)), row-major

  int num_levels() const { return static_cast<int>(pooled.size()) + 1; }  // level 0 included
  int level_rows(int k) const { return (rows + (1 << k) - 1) >> k; }
  int level_cols(int k) const { return (cols + (1 << k) - 1) >> k; }
  const float* level(int k) const { return pooled[k - 1].data(); }  // k >= 1
};

// How a block is reduced. Max suits weights (>= 0). Magnitude suits signed maps (Q K^T,
// scores): the cell farthest from 0 wins with its sign, so a strong negative cell survives
// as well as a strong positive one; a hidden (-inf) cell wins only if the whole block is.
enum class Pool { Max, Magnitude };

// Levels 1, 2, ... of the (rows, cols) map `data` (row stride `stride`), each the 2 x 2
// reduction of the one before, until both sides are <= min_side. A map that already fits
// has none. Cells beyond the edge never win.
MapLevels max_pool_levels(const float* data, int rows, int cols, int stride, int min_side = 64, Pool pool = Pool::Max);
// The same levels written into m, in the storage of the levels it held (an earlier pass's
// map, nothing reads it any more): typing into the 1B shape rebuilt 512 maps' levels, 10 MB
// in ~1,500 blocks, each keystroke (tests/bench/README.md, helper rss10).
void max_pool_levels_into(MapLevels& m, const float* data, int rows, int cols, int stride, int min_side = 64, Pool pool = Pool::Max);

}  // namespace headmap
