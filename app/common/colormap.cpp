#include "app/common/colormap.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace headmap {

#include "app/common/colormap_data.inc"
// The stops were sampled with:
//   from matplotlib import colormaps
//   [colormaps[name](i / 31)[:3] for i in range(32)]

const char* colormap_name(Colormap c) {
  switch (c) {
    case Colormap::Viridis: return "viridis";
    case Colormap::Magma: return "magma";
    case Colormap::Cividis: return "cividis";
    case Colormap::Grey: return "grey";
  }
  return "viridis";
}

bool parse_colormap(const char* name, Colormap* out) {
  for (int i = 0; i < kNumColormaps; ++i)
    if (std::strcmp(name, colormap_name(static_cast<Colormap>(i))) == 0) {
      *out = static_cast<Colormap>(i);
      return true;
    }
  if (std::strcmp(name, "gray") == 0) {
    *out = Colormap::Grey;
    return true;
  }
  return false;
}

std::array<float, 3> colormap_rgb(Colormap c, float v) {
  v = std::clamp(v, 0.0f, 1.0f);
  if (c == Colormap::Grey) return {v, v, v};
  const float(*stops)[3] = c == Colormap::Magma ? k_magma : c == Colormap::Cividis ? k_cividis : k_viridis;
  const float x = v * 31.0f;
  const int i = std::min(static_cast<int>(x), 30);
  const float f = x - static_cast<float>(i);
  return {stops[i][0] + f * (stops[i + 1][0] - stops[i][0]), stops[i][1] + f * (stops[i + 1][1] - stops[i][1]),
          stops[i][2] + f * (stops[i + 1][2] - stops[i][2])};
}

// n RGBA8 entries of a colour scale over [0, 1].
template <class Scale>
static std::vector<uint8_t> make_lut(int n, Scale rgb_at) {
  std::vector<uint8_t> lut(static_cast<size_t>(n) * 4);
  for (int i = 0; i < n; ++i) {
    const std::array<float, 3> rgb = rgb_at(n > 1 ? static_cast<float>(i) / (n - 1) : 0.0f);
    for (int k = 0; k < 3; ++k) lut[i * 4 + k] = static_cast<uint8_t>(std::lround(rgb[k] * 255.0f));
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

std::vector<uint8_t> colormap_lut(Colormap c, int n) {
  return make_lut(n, [c](float v) { return colormap_rgb(c, v); });
}

std::array<float, 3> diverging_rgb(float t) {
  static constexpr float kBlue[3] = {0.16f, 0.36f, 0.72f}, kWhite[3] = {0.97f, 0.97f, 0.97f}, kRed[3] = {0.75f, 0.18f, 0.15f};
  t = std::clamp(t, 0.0f, 1.0f);
  const float* a = t < 0.5f ? kBlue : kWhite;
  const float* b = t < 0.5f ? kWhite : kRed;
  const float f = t < 0.5f ? t * 2 : (t - 0.5f) * 2;
  return {a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])};
}

std::vector<uint8_t> diverging_lut(int n) { return make_lut(n, diverging_rgb); }

}  // namespace headmap
