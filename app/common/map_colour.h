// map_colour.h: a map's colours as RGBA8 texels, on the CPU: what the app uploads into its
// atlas pages (app/gui/render/heatmap_renderer.h) and, cell for cell, what the exported
// figures draw (figure_cell_rgb): the same rules (mask_visible, window_hatch, filter_dims,
// colour_position, colormap_rgb, to_rgb8), so a texel equals the PNG's cell bit for bit.
//
// A texel is one cell, or a pool x pool block of cells max-pooled by the worker
// (core/inspect/map_levels.h); a pooled texel is drawn when any cell of its block is
// visible (its max is theirs), hatched when every visible cell is outside the window, and
// dimmed by the filter as its first cell is.
#pragma once
#include <cstdint>

#include "app/common/colormap.h"
#include "app/common/heatmap_figure.h"
#include "core/model/attention.h"

namespace headmap {

// How a map's values become colours: the scale and the cells the mask, window and filter
// take out.
struct MapColouring {
  Colormap colormap = Colormap::Viridis;
  float vmin = 0.0f, vmax = 1.0f;
  bool log_scale = false;
  bool diverging = false;  // signed data: diverging_rgb, 0 in the middle of [-m, m], m = max(|vmin|, |vmax|)
  MaskKind mask = MaskKind::None;
  int len = 0;     // real tokens (for the mask)
  int window = 0;  // a local layer's window (hatched keys); ignored without a mask
  CellFilter filter;
};

// Where texels sit on the map: texel (i, j) starts at cell (row0 + i * pool, col0 + j * pool)
// of a map of (rows, cols) cells; a block past the map's edge is clipped to it.
struct TexelGrid {
  int rows = 0, cols = 0;
  int pool = 1;
  int row0 = 0, col0 = 0;
};

// out: (th, tw) RGBA8, alpha 255, rows packed. texels: (th, tw) floats, row stride `stride`.
void colour_texels(uint8_t* out, const float* texels, int stride, int th, int tw, const TexelGrid& grid, const MapColouring& c);

}  // namespace headmap
