#include "app/common/map_colour.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace headmap {

namespace {

// to_rgb8's rounding (std::lround of c * 255) for c >= 0, without a library call: c * 255
// is a float, and adding 0.5 to it in double is exact, so truncating gives floor(x + 0.5),
// which is lround for x >= 0.
inline uint32_t round8(float c) { return static_cast<uint32_t>(static_cast<int>(static_cast<double>(c * 255) + 0.5)); }

inline uint32_t rgba(const std::array<float, 3>& c) { return round8(c[0]) | round8(c[1]) << 8 | round8(c[2]) << 16 | 0xff000000u; }

inline void store(uint8_t* o, uint32_t v) { std::memcpy(o, &v, 4); }  // R, G, B, A in memory order (little-endian)

// Is any cell of the block [t_lo, t_hi] x [s_lo, s_hi] one the mask shows? (mask_visible
// over a block: causal shows s <= t, reversed s > t, padding-only every real cell.)
inline bool any_visible(MaskKind m, int t_lo, int t_hi, int s_lo, int s_hi, int len) {
  if (m == MaskKind::None) return true;
  if (t_lo >= len || s_lo >= len) return false;
  t_hi = std::min(t_hi, len - 1);
  s_hi = std::min(s_hi, len - 1);
  if (m == MaskKind::Causal) return s_lo <= t_hi;
  if (m == MaskKind::Reversed) return s_hi > t_lo;
  return true;
}

// Texels [0, n) of a row on a colormap's linear scale, as colormap_rgb(colour_position(w))
// and to_rgb8 colour them: the place on the scale (0 for a value that is not finite), the
// stop below it and the step to the next. Plain loop for the vectoriser (gathers from the
// 32-entry tables).
void linear_row(uint32_t* out, const float* w, int n, const ColormapTable& tab, float vmin, float span) {
  for (int j = 0; j < n; ++j) {
    const float t = (w[j] - vmin) / span;
    const bool finite_up = (t >= 0.0f) & (t <= FLT_MAX);  // not && : no branch in the loop
    const float v = finite_up ? (t < 1.0f ? t : 1.0f) : 0.0f;  // colour_position's clamp; NaN, inf, -inf: 0
    const float x = v * 31.0f;
    const int i = std::min(static_cast<int>(x), 30);
    const float f = x - static_cast<float>(i);
    out[j] = round8(colormap_channel(tab, 0, i, f)) | round8(colormap_channel(tab, 1, i, f)) << 8 |
             round8(colormap_channel(tab, 2, i, f)) << 16 | 0xff000000u;
  }
}

}  // namespace

void colour_texels(uint8_t* out, const float* texels, int stride, int th, int tw, const TexelGrid& g, const MapColouring& c) {
  const int pool = std::max(1, g.pool);
  const int window = c.mask == MaskKind::None ? 0 : c.window;
  const bool filtered = c.filter.active();
  const ColormapTable& tab = colormap_table(c.colormap);
  const bool fast = !c.diverging && !c.log_scale && !tab.grey;  // linear_row
  const float span = std::max(c.vmax - c.vmin, 1e-20f);                            // colour_position's
  const float m = std::max(std::max(std::abs(c.vmin), std::abs(c.vmax)), 1e-20f);  // the diverging scale's half width
  const uint32_t masked = rgba(kMaskedRgb), hatch[2] = {rgba(kWindowRgb[0]), rgba(kWindowRgb[1])};
  // One texel's colour, the general way (log scale, diverging, grey, dimmed by the filter).
  auto colour = [&](float w, int t, int s) {
    std::array<float, 3> rgb;
    if (c.diverging) {
      const float u = 0.5f + 0.5f * w / m;
      rgb = diverging_rgb(std::isfinite(u) ? u : 0.5f);
    } else {
      rgb = colormap_rgb(c.colormap, colour_position(w, c.vmin, c.vmax, c.log_scale));
    }
    if (filtered && filter_dims(c.filter, t, s)) rgb = filter_dim_rgb(rgb);
    return rgba(rgb);
  };
  for (int i = 0; i < th; ++i) {
    const int t_lo = g.row0 + i * pool, t_hi = std::min(t_lo + pool - 1, g.rows - 1);
    const float* w_i = texels + static_cast<size_t>(i) * stride;
    uint8_t* o_i = out + static_cast<size_t>(i) * tw * 4;
    // pass 1: the mask's grey, then the window's hatch (window_hatch over the block); the
    // texels left are coloured, one run [a, b) (every mask shows a run of keys per query)
    int a = tw, b = 0;
    for (int j = 0; j < tw; ++j) {
      const int s_lo = g.col0 + j * pool, s_hi = std::min(s_lo + pool - 1, g.cols - 1);
      const bool shown = pool == 1 ? mask_visible(c.mask, t_lo, s_lo, c.len) : any_visible(c.mask, t_lo, t_hi, s_lo, s_hi, c.len);
      if (!shown) store(o_i + 4 * j, masked);
      else if (window > 0 && t_lo - s_hi >= window) store(o_i + 4 * j, hatch[(t_lo + s_lo) % 3 == 0 ? 1 : 0]);
      else a = std::min(a, j), b = j + 1;
    }
    if (a >= b) continue;
    // pass 2: the run's colours
    uint32_t run[256];
    for (int j0 = a; j0 < b; j0 += 256) {
      const int n = std::min(256, b - j0);
      if (fast) linear_row(run, w_i + j0, n, tab, c.vmin, span);
      for (int j = j0; j < j0 + n; ++j) {
        const int s_lo = g.col0 + j * pool;
        if (!fast || (filtered && filter_dims(c.filter, t_lo, s_lo))) run[j - j0] = colour(w_i[j], t_lo, s_lo);
      }
      std::memcpy(o_i + 4 * j0, run, static_cast<size_t>(n) * 4);
    }
  }
}

}  // namespace headmap
