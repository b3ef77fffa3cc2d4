// ui_widgets.cpp: see ui_widgets.h.
#include "app/gui/ui_widgets.h"
#include "app/gui/text_wrap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "app/common/heatmap_figure.h"
#include "app/gui/glyphs.h"

namespace headmap {

void add_text_vertical(ImDrawList* dl, ImVec2 pos, ImU32 col, const char* text) {
  // Draw horizontally, then rotate the new vertices about `pos` by -90°. Laid out
  // horizontally the text would run past the clip rect and lose glyphs, so it is laid out
  // unclipped; the draw command's clip rect still applies to the rotated result.
  const int first = dl->VtxBuffer.Size;
  ImGui::GetFont()->RenderText(dl, ImGui::GetFontSize(), pos, col, ImVec4(-1e9f, -1e9f, 1e9f, 1e9f), text, nullptr, 0.0f, false);
  const float h = ImGui::GetFontSize();
  for (int i = first; i < dl->VtxBuffer.Size; ++i) {
    ImVec2& p = dl->VtxBuffer[i].pos;
    const float dx = p.x - pos.x, dy = p.y - pos.y;
    p = ImVec2(pos.x + dy - h, pos.y - dx);
  }
}

void report_widget(AppState& s, const char* label) { report_widget(s, label, ImGui::GetItemRectMin(), ImGui::GetItemRectMax()); }

void report_widget(AppState& s, const char* label, ImVec2 p0, ImVec2 p1) {
  const char* hidden = std::strstr(label, "##");
  s.report.widgets.push_back({hidden ? std::string(label, hidden) : std::string(label), {p0.x, p0.y, p1.x, p1.y}});
}

float token_label_width(AppState& s, int b) {
  AppState::LabelWidth& c = s.label_width;
  const ForwardData* f = s.result && s.result->fwd ? s.result->fwd.get() : nullptr;
  if (!f || b < 0 || b >= static_cast<int>(f->labels.size())) return 0;
  if (c.fwd != f || c.batch != b || c.font_size != ImGui::GetFontSize()) {
    c.fwd = f;
    c.batch = b;
    c.font_size = ImGui::GetFontSize();
    c.width = 0;
    for (const std::string& l : f->labels[b]) c.width = std::max(c.width, ImGui::CalcTextSize(glyphs().shown(l).c_str()).x);
  }
  return c.width;
}

// Which of n labels of `cell` pixels each to draw so that none overlaps (text `text_h`
// pixels across): every k-th, plus `keep` (the hovered one), without its neighbours.
static bool label_shown(int i, float cell, float text_h, int keep) {
  const int k = label_step(cell, text_h);  // the exported figures' rule too (heatmap_figure.h)
  if (i == keep) return true;
  if (keep >= 0 && std::abs(i - keep) * cell < text_h) return false;
  return i % k == 0;
}

HeatmapHit heatmap_view(const char* id, HeatmapRenderer& r, const HeatmapView& v) {
  HeatmapHit hit;
  const float w = v.width > 0 ? v.width : v.side, h = v.height > 0 ? v.height : v.side;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 p0(origin.x + v.label_w, origin.y), p1(p0.x + w, p0.y + h);
  hit.p0 = p0;
  hit.p1 = p1;
  ImGui::PushID(id);
  ImGui::InvisibleButton("map", ImVec2(v.label_w + w, h + v.label_h));
  const bool hovered_area = ImGui::IsItemHovered();
  hit.clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  hit.double_clicked = hovered_area && ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
  ImGui::PopID();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const int rows = v.source ? v.source->rows : v.tex ? v.tex->rows : 0;
  const int cols = v.source ? v.source->cols : v.tex ? v.tex->cols : 0;
  const bool drawn = v.source ? r.draw_map(dl, p0, p1, *v.source, v.style) : (v.tex && v.tex->valid());
  if (!drawn) {
    dl->AddRectFilled(p0, p1, IM_COL32(60, 60, 66, 255));
    return hit;
  }
  if (!v.source) r.draw(dl, p0, p1, *v.tex, v.style);
  dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), ImGui::GetColorU32(ImGuiCol_Border));

  // Which cell is under the mouse (in map cells, through the zoom window).
  const HeatmapStyle& s = v.style;
  const float col1 = s.col1 < 0 ? static_cast<float>(cols) : s.col1;
  const float row1 = s.row1 < 0 ? static_cast<float>(rows) : s.row1;
  const float cw = w / std::max(col1 - s.col0, 1e-6f), ch = h / std::max(row1 - s.row0, 1e-6f);
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (hovered_area && m.x >= p0.x && m.x < p1.x && m.y >= p0.y && m.y < p1.y) {
    hit.hovered = true;
    hit.col = static_cast<int>(std::floor(s.col0 + (m.x - p0.x) / cw));
    hit.row = static_cast<int>(std::floor(s.row0 + (m.y - p0.y) / ch));
    if (hit.col >= cols || hit.row >= rows || hit.col < 0 || hit.row < 0) hit.hovered = false;
  }

  // Token labels: queries down the left, keys along the bottom; every k-th when cells are
  // smaller than a line of text, and the hovered one always.
  const float fh = ImGui::GetFontSize(), text_h = fh * 1.1f;
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text), accent = IM_COL32(255, 140, 70, 255);
  const int hover_row = hit.hovered ? hit.row : v.hover_token, hover_col = hit.hovered ? hit.col : v.hover_token;
  if (v.row_labels && v.label_w > 0) {
    // Half a line past the map's ends, so the first and last labels are whole (the title
    // starts right of this column, the key labels below it).
    dl->PushClipRect(ImVec2(origin.x, p0.y - fh * 0.5f), ImVec2(p0.x, p1.y + fh * 0.5f), true);
    const int n = static_cast<int>(v.row_labels->size());
    for (int t = std::max(0, static_cast<int>(s.row0)); t < static_cast<int>(std::ceil(row1)) && t < n; ++t) {
      if (!label_shown(t, ch, text_h, hover_row)) continue;
      const std::string shown = glyphs().shown((*v.row_labels)[t]);  // every script, U+XXXX where no font has it
      const char* text = shown.c_str();
      const float tw = std::min(ImGui::CalcTextSize(text).x, v.label_w - 6);
      const float y = p0.y + (t - s.row0) * ch + (ch - fh) * 0.5f;
      dl->AddText(ImVec2(p0.x - 6 - tw, y), t == hover_row ? accent : ink, text);
      if (v.label_rects) v.label_rects->push_back({p0.x - 6 - tw, y, p0.x - 6, y + fh});
    }
    dl->PopClipRect();
  }
  if (v.col_labels && v.label_h > 0) {
    dl->PushClipRect(ImVec2(p0.x - fh * 0.5f, p1.y), ImVec2(p1.x + fh * 0.5f, p1.y + v.label_h), true);
    const int n = static_cast<int>(v.col_labels->size());
    for (int c = std::max(0, static_cast<int>(s.col0)); c < static_cast<int>(std::ceil(col1)) && c < n; ++c) {
      if (!label_shown(c, cw, text_h, hover_col)) continue;
      const std::string shown = glyphs().shown((*v.col_labels)[c]);
      const char* text = shown.c_str();
      const float tw = std::min(ImGui::CalcTextSize(text).x, v.label_h - 6);
      const float x = p0.x + (c - s.col0) * cw + (cw - fh) * 0.5f;
      add_text_vertical(dl, ImVec2(x + fh, p1.y + 6 + tw), c == hover_col ? accent : ink, text);
      if (v.label_rects) v.label_rects->push_back({x, p1.y + 6, x + fh, p1.y + 6 + tw});
    }
    dl->PopClipRect();
  }
  return hit;
}

void same_line_if_fits(float width) {
  // Measured before moving: SameLine() then NewLine() would leave the cursor's reach past
  // the edge (Dear ImGui counts it as content, and the window would look cut off).
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  if (ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right) ImGui::SameLine();
}

bool checkbox_wrapped(const char* label, bool* v) {
  ImGui::PushID(label);
  bool changed = ImGui::Checkbox("##box", v);
  ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::PopTextWrapPos();
  if (ImGui::IsItemClicked()) *v = !*v, changed = true;  // the label toggles, as Checkbox's does
  ImGui::PopID();
  return changed;
}

void text_disabled_wrapped(const char* text) {
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextDisabled("%s", text);
  ImGui::PopTextWrapPos();
}

void mark_head_off(ImVec2 p0, ImVec2 p1) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRectFilled(p0, p1, IM_COL32(40, 40, 44, 200));  // the pattern stays faintly visible
  const char* text = "off";
  const float fh = ImGui::GetFontSize(), side = std::min(p1.x - p0.x, p1.y - p0.y);
  const float size = std::clamp(side * 0.3f, fh * 0.8f, fh * 2.5f);
  const ImVec2 ts = ImGui::CalcTextSize(text);
  const float k = size / fh, w = ts.x * k, h = ts.y * k;
  const ImVec2 c((p0.x + p1.x) * 0.5f, (p0.y + p1.y) * 0.5f);
  dl->AddRectFilled(ImVec2(c.x - w * 0.5f - 6, c.y - h * 0.5f - 3), ImVec2(c.x + w * 0.5f + 6, c.y + h * 0.5f + 3), IM_COL32(200, 60, 50, 255), 4.0f);
  dl->AddText(ImGui::GetFont(), size, ImVec2(c.x - w * 0.5f, c.y - h * 0.5f), IM_COL32(255, 255, 255, 255), text);
  dl->AddLine(p0, p1, IM_COL32(200, 60, 50, 160), 2.0f);
}

void colour_legend(const HeatmapStyle& s, const char* caption, float width, const char* hi_label) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float bar_h = ImGui::GetFontSize() * 0.8f;
  const int steps = 64;
  for (int i = 0; i < steps; ++i) {
    const float t = static_cast<float>(i) / (steps - 1);
    const std::array<float, 3> c = s.diverging ? diverging_rgb(t) : colormap_rgb(s.colormap, t);
    dl->AddRectFilled(ImVec2(p.x + width * i / steps, p.y), ImVec2(p.x + width * (i + 1) / steps + 1, p.y + bar_h),
                      ImGui::ColorConvertFloat4ToU32(ImVec4(c[0], c[1], c[2], 1)));
  }
  char lo[32], hi[32];
  if (s.diverging) {
    const float m = std::max(std::abs(s.vmin), std::abs(s.vmax));
    std::snprintf(lo, sizeof lo, "%.3g", -m);
    std::snprintf(hi, sizeof hi, "%.3g", m);
  } else {
    std::snprintf(lo, sizeof lo, "%.3g", s.log_scale ? s.vmax * 1e-4f : s.vmin);
    std::snprintf(hi, sizeof hi, "%.3g", s.vmax);
  }
  if (hi_label) std::snprintf(hi, sizeof hi, "%s", hi_label);
  ImGui::Dummy(ImVec2(width, bar_h));
  ImGui::SameLine();
  ImGui::PushTextWrapPos(0.0f);  // a narrow window wraps the caption instead of cutting it
  ImGui::TextDisabled("  %s", caption);
  ImGui::PopTextWrapPos();
  // The end values under the bar.
  ImGui::SetCursorScreenPos(ImVec2(p.x, p.y + bar_h + 2));
  ImGui::TextUnformatted(lo);
  ImGui::SameLine();
  ImGui::SetCursorScreenPos(ImVec2(p.x + width - ImGui::CalcTextSize(hi).x, p.y + bar_h + 2));
  ImGui::TextUnformatted(hi);
}

void text_disabled_wrapped_at_commas(const std::string& text) {
  const std::vector<std::string> lines = wrap_at_breaks(text, ImGui::GetContentRegionAvail().x, [](std::string_view t) {
    return ImGui::CalcTextSize(t.data(), t.data() + t.size()).x;
  });
  // Lines of one paragraph: no item spacing between them, only after the last. Each is
  // drawn unwrapped: wrap_at_breaks made it fit.
  const ImVec2 spacing = ImGui::GetStyle().ItemSpacing;
  for (size_t k = 0; k < lines.size(); ++k) {
    if (k + 1 < lines.size()) ImGui::PushStyleVar(ImGuiStyleVar_ItemSpacing, ImVec2(spacing.x, 0.0f));
    ImGui::TextDisabled("%s", lines[k].c_str());
    if (k + 1 < lines.size()) ImGui::PopStyleVar();
  }
}

}  // namespace headmap
