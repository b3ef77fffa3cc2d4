// colormap.h: the palette, in one place: the heatmap colour scales, the diverging scale of
// signed matrices and the grey of masked cells. Shared by the PNG writer, the GL renderer
// (which uploads the lookup tables as 1D textures) and the legends.
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
// n RGBA8 entries, for a lookup texture.
std::vector<uint8_t> colormap_lut(Colormap c, int n = 256);

// Signed data (Q, K, raw scores): blue - white - red, t in [0, 1], 0.5 = zero.
std::array<float, 3> diverging_rgb(float t);
std::vector<uint8_t> diverging_lut(int n = 256);

// Cells the attention mask hides, in the app and in exported PNGs.
inline constexpr std::array<float, 3> kMaskedRgb = {0.42f, 0.42f, 0.45f};
// Keys a sliding window hides (that the mask would show): hatched in two lighter greys,
// light with dark "/" lines (window_hatch in heatmap_figure.h says which), so a local
// layer's window is told apart from the causal mask.
inline constexpr std::array<float, 3> kWindowRgb[2] = {{0.80f, 0.80f, 0.83f}, {0.62f, 0.62f, 0.66f}};

}  // namespace headmap
