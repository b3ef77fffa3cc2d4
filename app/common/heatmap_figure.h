// heatmap_figure.h: attention maps as a figure for slides and papers, laid out once here
// and drawn by two writers: write_figure_png (heatmap_png.h: pixels, TrueType text) and
// write_figure_svg (heatmap_svg.h: vector, text as text). One head large, or a layer's
// heads as a grid; token labels on both axes, thinned so that they never overlap; titles;
// a colour bar with its scale. The rules both writers follow (which cells the mask hides,
// a weight's colour, which labels are shown and where) live here once.
//
// T = tokens (the map's stride), len = the sentence's real tokens, Hw = weight heads
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/common/raster.h"
#include "core/error.h"
#include "core/inspect/metrics.h"
#include "core/model/attention.h"
#include "core/model/model.h"

namespace headmap {

// The A/B filter of a sentence pair (BertViz's): every cell, or only those whose query row
// is in sentence A or B and whose key column is in A or B (Token::segment). Only for a pair.
enum class PairFilter { All, AA, AB, BA, BB };
const char* pair_filter_name(PairFilter p);  // "all", "aa", "ab", "ba", "bb"
const char* pair_filter_label(PairFilter p);  // "all", "A→A", "A→B", "B→A", "B→B"
bool parse_pair_filter(const std::string& name, PairFilter* out);
// Which cells the A/B filter and "hide special tokens" leave shown: query rows [row0, row1)
// and key columns [col0, col1), minus the rows and columns of the tokens in `hidden`
// (ascending; the special tokens [CLS], [SEP], <s>, </s>). Cells outside are dimmed toward
// kFilteredRgb (filter_dims), never re-normalised. One rule for the app's texels
// (map_colour.h), the figures, Focus and the model view.
struct CellFilter {
  static constexpr int kMaxHidden = 16;  // a bound on `hidden` (each cell checks every entry)
  int row0 = 0, row1 = 1 << 30, col0 = 0, col1 = 1 << 30;
  std::vector<int> hidden;  // at most kMaxHidden
  bool active() const { return row0 > 0 || col0 > 0 || row1 < (1 << 30) || col1 < (1 << 30) || !hidden.empty(); }
  std::string key() const;  // for caches
};
// The filter for a sentence's tokens (Token::segment, Token::special); none when the
// sentence is not a pair (for the A/B part) or the switches are off.
CellFilter cell_filter(const std::vector<Token>& tokens, int len, PairFilter pf, bool hide_specials);
inline bool filter_dims(const CellFilter& f, int t, int s) {
  if (t < f.row0 || t >= f.row1 || s < f.col0 || s >= f.col1) return true;
  for (int h : f.hidden)
    if (h == t || h == s) return true;
  return false;
}
// A dimmed cell's colour: its own, kFilterDim of the way to kFilteredRgb.
inline constexpr std::array<float, 3> kFilteredRgb = {0.14f, 0.14f, 0.16f};
inline constexpr float kFilterDim = 0.85f;
inline std::array<float, 3> filter_dim_rgb(const std::array<float, 3>& c) {
  return {c[0] + (kFilteredRgb[0] - c[0]) * kFilterDim, c[1] + (kFilteredRgb[1] - c[1]) * kFilterDim, c[2] + (kFilteredRgb[2] - c[2]) * kFilterDim};
}
// One map of a figure.
struct FigureMap {
  const float* weights = nullptr;  // (len, len) rows `stride` floats apart: row t = query t, column s = key s
  int stride = 0;
  std::string title;               // above the map in a grid ("head 3  previous-token"); a single map's is the figure's
  float vmin = 0, vmax = 1;        // the colour range (the app's normalisation)
};

struct Figure {
  std::string title, subtitle;
  std::vector<std::string> tokens;  // (len) the display text of each token: both axes' labels
  std::vector<FigureMap> maps;      // one: a single head, large; more: a grid
  Colormap colormap = Colormap::Viridis;
  MaskKind mask = MaskKind::Causal;  // which cells are hidden (grey), as in the app
  int window = 0;                    // a local layer's sliding window: keys W or more back hatched (window_hatch); 0 = none
  bool log_scale = false;
  CellFilter filter;                 // the A/B filter and hidden special tokens: cells outside dimmed (filter_dims)
  std::string caption;  // beside the colour bar: what the colour means
  std::string bar_lo, bar_hi;  // the bar's end labels when the maps' scales differ; empty: "0" and "head max"
  int len() const { return static_cast<int>(tokens.size()); }
};

// ---- what a figure shows of a forward pass ------------------------------------------
struct FigureInput {
  const ForwardOutput* out = nullptr;
  const ModelConfig* cfg = nullptr;
  const std::vector<HeadMetrics>* metrics = nullptr;  // (L, B, Hw), may be null
  std::vector<std::string> tokens;                    // sentence `batch`'s display text (its real tokens)
  int layer = 0, batch = 0;
  Colormap colormap = Colormap::Viridis;
  bool log_scale = false;
  MaskKind mask = MaskKind::Causal;
  int window = 0;                                     // the layer's sliding window (Arch::window), 0 = global
  CellFilter filter;                                  // the A/B filter and hidden special tokens (cell_filter)
  std::string scale = "per head";                     // the caption's name of the normalisation
  // The colour range of head h; unset: 0 to the head's peak (map_peak), the per-head scale.
  std::function<void(int h, float* vmin, float* vmax)> range;
  std::vector<std::string> head_labels;               // (Hw) "previous-token" etc., "" for none; may be empty
  std::set<int> off;                                  // heads switched off (ablation)
  std::string source;                                 // where the weights come from
};
// One head, large: its layer, index and label in the title.
Result<Figure> head_figure(const FigureInput& in, int head);
// Every head of the layer, as a grid.
Result<Figure> heads_figure(const FigureInput& in);

// ---- the shared rules ---------------------------------------------------------------
// Where weight w falls on the colour scale, in [0, 1]: the app's texels (map_colour.h) and
// the figures, linear over [vmin, vmax] or logarithmic over [vmax * 1e-4, vmax].
float colour_position(float w, float vmin, float vmax, bool log_scale);
// The sliding window's rule, one for the app's texels (map_colour.h), the figures and the
// Focus view: -1 when cell (query t, key s) is not hidden by the window (or the mask hides
// it first: grey), else which of the two hatch greys (kWindowRgb) it is drawn in: the dark
// one on every third anti-diagonal (t + s), which draws "/" hatching, the light one elsewhere.
inline int window_hatch(MaskKind m, int window, int t, int s, int len) {
  if (window <= 0 || !mask_visible(m, t, s, len) || t - s < window) return -1;
  return (t + s) % 3 == 0 ? 1 : 0;
}
// "local, window W", the words the heads grid's and the figures' titles use for a local layer.
inline std::string window_words(int window) { return "local, window " + std::to_string(window); }
// Cell (query t, key s) of map m: the colormap at its weight's position, the masked grey, or
// the window's hatch.
Rgb figure_cell_rgb(const Figure& f, const FigureMap& m, int t, int s);
Rgb to_rgb8(const std::array<float, 3>& c);
// The ticks of one axis of n cells, of which [v0, v1) are visible in cells of `cell` pixels,
// labels `text_h` pixels across: positions first, first + step, ... below end, the step the
// smallest of 1, 2, 3, 4, 5, 10, 20, 50, ... cells whose labels cannot overlap. Arithmetic only
// (no text measured), so any length costs the same. The app's heatmaps and the exported
// figures both label their axes by it.
struct AxisTicks {
  int first = 0, step = 1, end = 0;
};
AxisTicks axis_ticks(float v0, float v1, int n, float cell, float text_h);
// The colour bar's ticks on [lo, hi]: multiples of a round step (1, 2, 2.5 or 5 times a
// power of ten), at most `most` of them, never 0.499 / 0.749 / 0.999. Empty when hi <= lo.
std::vector<double> round_ticks(double lo, double hi, int most);
// Does the tick at position i carry its position number? Every tick once they are thinned
// (step > 1), every fifth one while every token has its label.
inline bool tick_numbered(int i, int step) { return step > 1 || i % 5 == 0; }

// ---- the layout, in pixels (an SVG's user units are the same pixels) -----------------
struct FigureText {
  enum Anchor { Start, Middle, End };
  enum Role { Title, Subtitle, MapTitle, RowLabel, ColumnLabel, Tick, Caption, Position };  // Position: a tick's position number, by the map
  std::string text;  // valid UTF-8, already shortened to fit
  float x = 0, y = 0;  // the baseline's anchor point
  float px = 12;       // font size
  Anchor anchor = Start;
  bool vertical = false;  // rotated 90° counter-clockwise, reading upwards from (x, y)
  Role role = Caption;
};

struct FigureLayout {
  int width = 0, height = 0;
  int cell = 1;                     // pixels per cell
  int map = 1;                      // a map's side: cell * len
  std::vector<std::array<int, 2>> origins;  // each map's top-left corner
  std::vector<int> labelled;        // the tokens whose labels are shown, on both axes
  int bar_x = 0, bar_y = 0, bar_w = 0, bar_h = 0;  // the colour bar (horizontal; low values left)
  std::vector<FigureText> texts;    // every text: titles, token labels, the bar's ticks, the caption
  float em_per_px = 1;              // a text's font-size in an SVG: its px times this (Font::em_size)
};

// The figure's paper and inks, in both writers.
inline constexpr Rgb kFigureBg{250, 250, 250}, kFigureInk{25, 25, 30}, kFigureMuted{110, 110, 120};
inline Rgb figure_text_rgb(FigureText::Role r) {
  return r == FigureText::Subtitle || r == FigureText::Tick || r == FigureText::Caption || r == FigureText::Position ? kFigureMuted : kFigureInk;
}

// Lays the figure out, measuring text with `font` (DejaVu Sans, which the SVG names too).
Result<FigureLayout> layout_figure(const Figure& f, const Font& font);
// The fonts/DejaVuSans.ttf the figures are measured and drawn with.
Status load_figure_font(Font& font);

}  // namespace headmap
