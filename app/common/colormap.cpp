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

const ColormapTable& colormap_table(Colormap c) {
  static const auto tables = [] {
    std::array<ColormapTable, kNumColormaps> t;
    for (int m = 0; m < kNumColormaps; ++m) {
      const Colormap cm = static_cast<Colormap>(m);
      t[m].grey = cm == Colormap::Grey;
      if (t[m].grey) continue;
      const float(*stops)[3] = cm == Colormap::Magma ? k_magma : cm == Colormap::Cividis ? k_cividis : k_viridis;
      for (int i = 0; i < 32; ++i)
        for (int k = 0; k < 3; ++k) {
          t[m].base[k][i] = stops[i][k];
          t[m].step[k][i] = i < 31 ? stops[i + 1][k] - stops[i][k] : 0.0f;
        }
    }
    return t;
  }();
  return tables[static_cast<size_t>(c)];
}

std::array<float, 3> colormap_rgb(Colormap c, float v) {
  v = std::clamp(v, 0.0f, 1.0f);
  const ColormapTable& t = colormap_table(c);
  if (t.grey) return {v, v, v};
  const float x = v * 31.0f;
  const int i = std::min(static_cast<int>(x), 30);
  const float f = x - static_cast<float>(i);
  return {colormap_channel(t, 0, i, f), colormap_channel(t, 1, i, f), colormap_channel(t, 2, i, f)};
}

std::array<float, 3> diverging_rgb(float t) {
  static constexpr float kBlue[3] = {0.16f, 0.36f, 0.72f}, kWhite[3] = {0.97f, 0.97f, 0.97f}, kRed[3] = {0.75f, 0.18f, 0.15f};
  t = std::clamp(t, 0.0f, 1.0f);
  const float* a = t < 0.5f ? kBlue : kWhite;
  const float* b = t < 0.5f ? kWhite : kRed;
  const float f = t < 0.5f ? t * 2 : (t - 0.5f) * 2;
  return {a[0] + f * (b[0] - a[0]), a[1] + f * (b[1] - a[1]), a[2] + f * (b[2] - a[2])};
}

}  // namespace headmap
