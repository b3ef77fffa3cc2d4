// heatmap_png.h: one layer's heads as a grid of heatmaps in a PNG, drawn on the CPU.
// Used by headmap-cli --png; the GUI draws the same picture with GL.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/common/heatmap_figure.h"
#include "app/common/raster.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"

namespace headmap {

struct HeadsPngOptions {
  int layer = 0, batch = 0;
  Colormap colormap = Colormap::Viridis;
  std::string subtitle;  // e.g. the weights' source
  std::vector<std::array<int, 4>>* map_rects = nullptr;  // out, optional: each head's map (x0, y0, x1, y1) in pixels
  int cols = 0;  // heads per row; 0: all of up to 4 heads in one row, else a square grid
  int window = 0;  // the layer's sliding window (Arch::window): keys outside it hatched (window_hatch); 0 = global
  CellFilter filter;  // the A/B filter and hidden special tokens (cell_filter): cells outside dimmed, as in the app
};

// The picture on a canvas, for a larger figure (a lesson's slide: app/cli/cli_lesson.cpp).
Result<Canvas> draw_heads_canvas(const ForwardOutput& out, const Batch& batch, const ModelConfig& cfg,
                                 const std::vector<HeadMetrics>& metrics, const HeadsPngOptions& opt);

// The legend's caption of draw_heads_canvas: what the colour is and, only where the maps have
// them, the first causal row left out of the scale, the masked grey, the window's hatch and the
// filter's dimming (a bidirectional encoder's maps have no masked cell and no row left out).
std::string heads_png_caption(MaskKind mask, int window, bool filtered);

// Colour = weight / the head's largest weight (per-head scale, stated in the legend).
Status write_heads_png(const std::string& path, const ForwardOutput& out, const Batch& batch, const ModelConfig& cfg,
                       const std::vector<HeadMetrics>& metrics, const HeadsPngOptions& opt);

// A figure (heatmap_figure.h: one head large, or a layer's heads) as a PNG: the same layout
// as write_figure_svg, in pixels.
Status write_figure_png(const std::string& path, const Figure& f);
// The figure laid out by layout_figure, drawn on a canvas of its size (the caller checked the size).
Canvas figure_canvas(const Figure& f, const FigureLayout& layout, const Font& font);

}  // namespace headmap
