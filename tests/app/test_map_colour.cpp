// test_map_colour.cpp: the texels the app uploads (colour_texels, app/common/map_colour.h)
// against the exported figures' cells (figure_cell_rgb, which the PNG writer draws), bit for
// bit, and pooled texels against the block rule written out cell by cell here.
//
// T = tokens (rows and columns of a map), pool = cells per texel along each axis
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "app/common/heatmap_figure.h"
#include "app/common/map_colour.h"

namespace {

using headmap::CellFilter;
using headmap::Colormap;
using headmap::MapColouring;
using headmap::MaskKind;
using headmap::Rgb;
using headmap::TexelGrid;

// (T, T) values that cover the scale: a ramp through [vmin - 0.1, vmax + 0.1], every
// 8-bit rounding boundary crossed many times, and the values that are not finite.
std::vector<float> test_map(int T, float vmin, float vmax, unsigned seed) {
  std::vector<float> w(static_cast<size_t>(T) * T);
  uint32_t x = seed;
  for (size_t i = 0; i < w.size(); ++i) {
    x = x * 1664525u + 1013904223u;
    const float u = static_cast<float>(x >> 8) / static_cast<float>(1 << 24);
    w[i] = vmin - 0.1f + u * (vmax - vmin + 0.2f);
  }
  const float odd[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(), vmin, vmax, 0.0f, -0.0f};
  for (size_t k = 0; k < std::size(odd) && 3 * k < w.size(); ++k) w[3 * k] = odd[k];
  return w;
}

std::array<int, 3> texel(const std::vector<uint8_t>& rgba, int tw, int i, int j) {
  const uint8_t* p = &rgba[(static_cast<size_t>(i) * tw + j) * 4];
  EXPECT_EQ(p[3], 255) << "texel " << i << ", " << j << ": opaque";
  return {p[0], p[1], p[2]};
}
std::array<int, 3> rgb(Rgb c) { return {c.r, c.g, c.b}; }

struct Case {
  const char* name;
  MaskKind mask;
  int window;
  Colormap colormap;
  bool log_scale;
  CellFilter filter;
};

std::vector<Case> cases() {
  CellFilter pair;  // a sentence pair's A -> B, [CLS] and a [SEP] hidden
  pair.row0 = 0, pair.row1 = 5, pair.col0 = 5, pair.col1 = 1 << 30, pair.hidden = {0, 4};
  return {{"causal viridis", MaskKind::Causal, 0, Colormap::Viridis, false, {}},
          {"causal magma, log scale", MaskKind::Causal, 0, Colormap::Magma, true, {}},
          {"causal cividis, window 3", MaskKind::Causal, 3, Colormap::Cividis, false, {}},
          {"reversed grey", MaskKind::Reversed, 0, Colormap::Grey, false, {}},
          {"padding only, pair filter", MaskKind::PaddingOnly, 0, Colormap::Viridis, false, pair},
          {"no mask, log scale, filter", MaskKind::None, 0, Colormap::Viridis, true, pair}};
}

}  // namespace

// Every cell of maps of odd sizes (T = 1, 7, 37, and 300: runs longer than the colouring's
// 256-texel chunk), every mask, window, colormap, log scale and filter: the uploaded texel
// equals the exported figure's cell exactly (no tolerance: both are the same rules in the
// same float arithmetic, rounded to 8 bits the same way).
TEST(MapColour, TexelsEqualTheExportedFiguresCells) {
  for (const Case& c : cases())
    for (int T : {1, 7, 37, 300}) {
      SCOPED_TRACE(std::string(c.name) + ", T = " + std::to_string(T));
      const int len = T > 7 ? T - 3 : T;  // padding past the real tokens, except for the tiny maps
      const std::vector<float> w = test_map(T, 0.0f, 0.6f, static_cast<unsigned>(T));
      headmap::Figure f;
      f.tokens.assign(static_cast<size_t>(len), "x");
      f.colormap = c.colormap, f.mask = c.mask, f.window = c.window, f.log_scale = c.log_scale, f.filter = c.filter;
      headmap::FigureMap m;
      m.weights = w.data(), m.stride = T, m.vmin = 0.0f, m.vmax = 0.6f;
      MapColouring mc;
      mc.colormap = c.colormap, mc.vmin = 0.0f, mc.vmax = 0.6f, mc.log_scale = c.log_scale, mc.mask = c.mask, mc.len = len,
      mc.window = c.window, mc.filter = c.filter;
      std::vector<uint8_t> out(static_cast<size_t>(T) * T * 4);
      headmap::colour_texels(out.data(), w.data(), T, T, T, TexelGrid{T, T, 1, 0, 0}, mc);
      int wrong = 0;
      for (int t = 0; t < T; ++t)
        for (int s = 0; s < T; ++s)
          if (texel(out, T, t, s) != rgb(headmap::figure_cell_rgb(f, m, t, s)) && ++wrong <= 5)
            ADD_FAILURE() << "query " << t << ", key " << s << ": weight " << w[static_cast<size_t>(t) * T + s];
      EXPECT_EQ(wrong, 0);
    }
}

// Pooled texels (a long map's level, or a tile of it starting inside the map): the block's
// rule, cell by cell. Drawn when any cell of the block is visible (grey else), hatched when
// every cell of it is W or more keys back, coloured by the texel's value (the block's max,
// pooled by the worker) and dimmed as its first cell is.
TEST(MapColour, PooledTexelsFollowTheirBlocks) {
  const int rows = 45, cols = 45;  // cells; 45 is no multiple of the pools: the last blocks are cut by the edge
  for (const Case& c : cases())
    for (int pool : {2, 4, 8})
      for (auto [row0, col0] : {std::pair{0, 0}, std::pair{8, 16}}) {
        SCOPED_TRACE(std::string(c.name) + ", pool " + std::to_string(pool) + ", tile at " + std::to_string(row0) + ", " + std::to_string(col0));
        const int th = (rows - row0 + pool - 1) / pool, tw = (cols - col0 + pool - 1) / pool;
        const std::vector<float> w = test_map(std::max(th, tw), 0.0f, 0.6f, static_cast<unsigned>(pool));
        const int stride = std::max(th, tw), len = 40;
        MapColouring mc;
        mc.colormap = c.colormap, mc.vmin = 0.0f, mc.vmax = 0.6f, mc.log_scale = c.log_scale, mc.mask = c.mask, mc.len = len,
        mc.window = c.window, mc.filter = c.filter;
        std::vector<uint8_t> out(static_cast<size_t>(th) * tw * 4);
        headmap::colour_texels(out.data(), w.data(), stride, th, tw, TexelGrid{rows, cols, pool, row0, col0}, mc);
        int wrong = 0;
        for (int i = 0; i < th; ++i)
          for (int j = 0; j < tw; ++j) {
            const int t0 = row0 + i * pool, s0 = col0 + j * pool;
            bool any = false, all_back = true;
            for (int t = t0; t < std::min(t0 + pool, rows); ++t)
              for (int s = s0; s < std::min(s0 + pool, cols); ++s) {
                any |= headmap::mask_visible(c.mask, t, s, len);
                all_back &= t - s >= c.window;
              }
            std::array<float, 3> want;
            if (!any) want = headmap::kMaskedRgb;
            else if (c.window > 0 && c.mask != MaskKind::None && all_back) want = headmap::kWindowRgb[(t0 + s0) % 3 == 0 ? 1 : 0];
            else {
              want = headmap::colormap_rgb(c.colormap, headmap::colour_position(w[static_cast<size_t>(i) * stride + j], 0.0f, 0.6f, c.log_scale));
              if (headmap::filter_dims(c.filter, t0, s0)) want = headmap::filter_dim_rgb(want);
            }
            if (texel(out, tw, i, j) != rgb(headmap::to_rgb8(want)) && ++wrong <= 5) ADD_FAILURE() << "texel " << i << ", " << j;
          }
        EXPECT_EQ(wrong, 0);
      }
}

// Signed maps (Focus's Q, K and scores): the diverging scale around 0, as wide as the larger
// end of the range; white at 0, and a value that is not finite drawn as 0.
TEST(MapColour, SignedMapsUseTheDivergingScaleAroundZero) {
  const int T = 19;
  std::vector<float> w = test_map(T, -2.0f, 0.5f, 7u);
  w[1] = 0.0f;
  MapColouring mc;
  mc.diverging = true, mc.vmin = -2.0f, mc.vmax = 0.5f;
  std::vector<uint8_t> out(static_cast<size_t>(T) * T * 4);
  headmap::colour_texels(out.data(), w.data(), T, T, T, TexelGrid{T, T, 1, 0, 0}, mc);
  for (int k = 0; k < T * T; ++k) {
    const float u = 0.5f + 0.5f * w[static_cast<size_t>(k)] / 2.0f;
    const Rgb want = headmap::to_rgb8(headmap::diverging_rgb(std::isfinite(u) ? u : 0.5f));
    ASSERT_EQ(texel(out, T, k / T, k % T), rgb(want)) << "cell " << k << ": weight " << w[static_cast<size_t>(k)];
  }
  EXPECT_EQ(texel(out, T, 0, 1), rgb(headmap::to_rgb8(headmap::diverging_rgb(0.5f)))) << "0 is the scale's middle";
}
