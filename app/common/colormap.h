// colormap.h: the heatmap colour scales, shared by the PNG writer and the GL renderer
// (which uploads colormap_lut() as a 1D lookup texture).
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

}  // namespace headmap
