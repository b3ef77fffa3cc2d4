// ui_widgets.h: widgets more than one panel draws: a labelled heatmap with hover, rotated
// text, a colour legend, token chips.
#pragma once
#include <imgui.h>

#include <string>
#include <vector>

#include "app/common/heatmap_figure.h"
#include "app/gui/app_state.h"
#include "app/gui/frame_hooks.h"
#include "app/gui/render/heatmap_renderer.h"

namespace headmap {

// Text rotated 90° counter-clockwise, reading upwards from `pos` (its baseline-left corner).
void add_text_vertical(ImDrawList* dl, ImVec2 pos, ImU32 col, const char* text, const char* text_end = nullptr);

// axis_ticks and tick_numbered: app/common/heatmap_figure.h (the exported figures use them too).

// Disabled (grey) text wrapped after ", " or ": " where it can, else at a space, and never
// inside a number such as "loss 1.59" (ImGui's own wrapping may break after a '.'); no line
// is wider than the column, and its lines read as one paragraph.
void text_disabled_wrapped_at_commas(const std::string& text);

inline constexpr float kRowLabelScaleMin = 0.7f;  // a row label's text, at its smallest, to label every row

// Flat key labels stand on one line (label_h: flat_labels_h(1)) or, staggered, on two
// (flat_labels_h(2)): every other tick on the second line, so each may take twice the width.
// Two only where one line would label fewer than every 4th key (kStaggerFromStep: a
// sentence with every 2nd, 3rd or 4th word labelled still reads) and two lines label more;
// else the line's height goes to the maps.
inline constexpr int kStaggerFromStep = 5;
float flat_labels_h(int lines);
// The tick step of flat key labels on `lines` lines under a map `width` px wide that shows
// `visible` of n keys.
int flat_key_step(int n, float visible, float width, int lines);
// 1 or 2 (above); width(lines): the map's width when the labels take that many lines.
template <class Width>
int flat_label_lines(int n, float visible, Width width) {
  const int one = flat_key_step(n, visible, width(1), 1);
  return one >= kStaggerFromStep && flat_key_step(n, visible, width(2), 2) < one ? 2 : 1;
}

struct HeatmapView {
  const MapTexture* tex = nullptr;
  const MapSource* source = nullptr;  // instead of tex: a long map drawn from its max-pooled levels
  HeatmapStyle style;
  float side = 200;  // size of the map area in pixels (square cells when rows == cols)
  float width = 0, height = 0;  // explicit size for non-square maps (0: use side)
  const std::vector<std::string>* row_labels = nullptr;  // query tokens, left
  const std::vector<std::string>* col_labels = nullptr;  // key tokens, below
  float label_w = 0, label_h = 0;  // space reserved for labels (0: none); a label longer than its room is cut with "…"
  bool flat_col_labels = false;    // key labels flat: on one line or staggered on two (label_h: flat_labels_h(lines)),
                                   // thinned to the position numbers' width
  int hover_token = -1;            // highlights that label, and always draws it
  bool hook_labels = false;  // submit every label drawn as "token_labels" (rect) and "token_label_texts" (frame_hooks.h)
  std::vector<std::string>* label_texts = nullptr;  // when set, receives every label's text as drawn
};

struct HeatmapHit {
  bool hovered = false, clicked = false, double_clicked = false;
  int row = -1, col = -1;  // cell under the mouse (in map cells)
  ImVec2 p0, p1;           // the map's rect on screen
};

// Draws the map at the cursor with its labels and reserves the space. Returns what the mouse did.
// Token labels are axis ticks (axis_ticks): every token while its cell is as tall as the
// text (a row label's text may shrink to kRowLabelScaleMin of it for that), else every 2nd,
// 3rd, 4th, 5th, 10th, ... with its position number ("cat  5", the number by the
// map), cut with "…" to the room reserved; never overlapping. The hovered token's label is
// always drawn whole (the ones it would cover are not). No clip rectangles: the labels of a
// grid of maps stay in one draw call.
HeatmapHit heatmap_view(const char* id, HeatmapRenderer& r, const HeatmapView& v);


// SameLine when `width` pixels still fit on this line, else a new line: headers of small
// items that wrap in a narrow window instead of running off it.
void same_line_if_fits(float width);

// A checkbox whose label wraps at the window's edge (Dear ImGui's runs off it). Clicking
// the label toggles it too. IsItemHovered() afterwards refers to the label.
bool checkbox_wrapped(const char* label, bool* v);

// Disabled (grey) text wrapped at the window's edge.
void text_disabled_wrapped(const char* text);

// A mean weight by distance (the offset profile, offset_profile.h) as bars the width of the
// column and five lines tall, the overlay naming what they show; `label` is its hook.
void distance_bars(const char* label, const std::vector<float>& v, const char* overlay);

// An ablated head's map: greyed out, with a clear "off" mark in its middle.
void mark_head_off(ImVec2 p0, ImVec2 p1);

// A horizontal colour bar with the values at both ends and a caption.
// hi_label replaces the number at the top end (e.g. "head max").
void colour_legend(const HeatmapStyle& s, const char* caption, float width, const char* hi_label = nullptr);

// The widest token label of sentence b of the result on screen, at the current font
// (measured once per result and font size).
float token_label_width(AppState& s, int b);

// A layers x heads grid of one number per head (patching's recovery, a detector's score):
// layers down, heads across, each cell coloured by its value and labelled with it as the
// width allows; `marked` cells outlined. Each cell is reported as "<id> l.h" (hook_widget, frame_hooks.h).
struct HeadGrid {
  const char* id = "grid";
  int L = 0, H = 0;
  const float* values = nullptr;  // (L, H)
  bool diverging = false;         // signed: blue adds, red takes away, as strong as |v| / peak; else the colormap over [0, peak]
  float peak = 1;
  std::vector<bool> marked;       // (L, H) outlined; may be empty
  const char* tooltip = "head %d.%d: %.4f";  // layer, head, value
  const char* row_prefix = "L";   // the rows' labels: "L0", "L1", ...
  const std::vector<std::string>* column_labels = nullptr;  // instead of the head numbers (positions' tokens); cut to the cell
};
struct HeadGridHit {
  int layer = -1, head = -1;  // the cell under the mouse
  bool clicked = false;
};
HeadGridHit head_grid(AppState& s, const HeadGrid& g);

// map_range and shown_mask: app_state.h (the exports use them too).

}  // namespace headmap
