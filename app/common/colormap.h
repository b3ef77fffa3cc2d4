// colormap.h: the palette, in one place: the heatmap colour scales, the diverging scale of
// signed matrices and the grey of masked cells. Shared by the PNG and SVG writers, the app's
// texels (map_colour.h) and the legends.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace headmap {

enum class Colormap { Viridis, Magma, Cividis, Grey };
inline constexpr int kNumColormaps = 4;
const char* colormap_name(Colormap c);
bool parse_colormap(const char* name, Colormap* out);

// v in [0, 1] -> RGB in [0, 1].
std::array<float, 3> colormap_rgb(Colormap c, float v);
// A scale as colormap_rgb interpolates it: channel k at x = v * 31 in [i, i + 1] is
// base[k][i] + (x - i) * step[k][i], step the difference to stop i + 1 (Grey: none, v itself).
// Loops that colour many cells (map_colour.cpp) read it with the same expression, so they
// round as colormap_rgb does.
struct ColormapTable {
  bool grey = false;
  float base[3][32] = {}, step[3][32] = {};
};
const ColormapTable& colormap_table(Colormap c);
inline float colormap_channel(const ColormapTable& t, int k, int i, float f) { return t.base[k][i] + f * t.step[k][i]; }

// Signed data (Q, K, raw scores): blue - white - red, t in [0, 1], 0.5 = zero.
std::array<float, 3> diverging_rgb(float t);

// Cells the attention mask hides, in the app and in exported PNGs.
inline constexpr std::array<float, 3> kMaskedRgb = {0.42f, 0.42f, 0.45f};
// Keys a sliding window hides (that the mask would show): hatched in two lighter greys,
// light with dark "/" lines (window_hatch in heatmap_figure.h says which), so a local
// layer's window is told apart from the causal mask.
inline constexpr std::array<float, 3> kWindowRgb[2] = {{0.80f, 0.80f, 0.83f}, {0.62f, 0.62f, 0.66f}};

}  // namespace headmap
