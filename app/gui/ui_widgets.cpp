// ui_widgets.cpp: see ui_widgets.h.
#include "app/gui/ui_widgets.h"
#include "app/gui/text_wrap.h"

#include <imgui_internal.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "app/common/bidi.h"
#include "app/common/heatmap_figure.h"
#include "app/gui/glyphs.h"

namespace headmap {

void add_text_vertical(ImDrawList* dl, ImVec2 pos, ImU32 col, const char* text, const char* text_end) {
  // Draw horizontally, then rotate the new vertices about `pos` by -90°. Laid out
  // horizontally the text would run past the clip rect and lose glyphs, so it is laid out
  // unclipped; the draw command's clip rect still applies to the rotated result.
  const int first = dl->VtxBuffer.Size;
  ImGui::GetFont()->RenderText(dl, ImGui::GetFontSize(), pos, col, ImVec4(-1e9f, -1e9f, 1e9f, 1e9f), text, text_end, 0.0f, false);
  const float h = ImGui::GetFontSize();
  for (int i = first; i < dl->VtxBuffer.Size; ++i) {
    ImVec2& p = dl->VtxBuffer[i].pos;
    const float dx = p.x - pos.x, dy = p.y - pos.y;
    p = ImVec2(pos.x + dy - h, pos.y - dx);
  }
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


namespace {

// One axis label as it fits `room` pixels: the token (cut with "…" when longer) and, when
// numbered, two spaces and its position, the number last (by the map). With no room for a
// letter of the token, the number alone.
struct FittedLabel {
  const char* tok = nullptr;
  const char* tok_end = nullptr;  // tok == tok_end: no token shown
  bool cut = false;
  char num[16] = "";
  float tok_w = 0, num_w = 0, w = 0;  // tok_w includes the "…"
};

constexpr const char* kEllipsis = "\xE2\x80\xA6";

FittedLabel fit_label(const std::string& token, int pos, bool numbered, float room) {
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  auto width = [&](const char* b, const char* e) { return font->CalcTextSizeA(size, FLT_MAX, 0.0f, b, e).x; };
  FittedLabel f;
  f.tok = token.c_str();
  f.tok_end = f.tok + token.size();
  const float full = width(f.tok, f.tok_end), sep = width("  ", nullptr);
  auto with_number = [&] {
    std::snprintf(f.num, sizeof f.num, "%d", pos);
    f.num_w = width(f.num, nullptr);
  };
  if (numbered) with_number();
  float tok_room = room - (numbered ? f.num_w + sep : 0.0f);
  if (full <= tok_room) {
    f.tok_w = full;
  } else {
    const float ell = width(kEllipsis, nullptr);
    const char* stop = f.tok;
    if (tok_room - ell >= size * 0.5f) font->CalcTextSizeA(size, tok_room - ell, 0.0f, f.tok, f.tok_end, &stop);
    if (stop > f.tok) {
      f.tok_end = stop;
      f.cut = true;
      f.tok_w = width(f.tok, stop) + ell;
    } else {  // not a letter fits: the position alone
      f.tok_end = f.tok;
      if (!numbered) with_number();
      numbered = true;
    }
  }
  f.w = f.tok_w + (numbered && f.tok_end > f.tok ? sep : 0.0f) + f.num_w;
  return f;
}

// The token as drawn (glyphs().shown: every script, visual order, Arabic joined). A
// right-to-left token too long for its room is cut in typed order first (cut_logical), so
// that it keeps its first letters with the "\xE2\x80\xA6" on its left; fit_label then finds it fits.
std::string drawn_label(const std::string& logical, int pos, bool numbered, float room) {
  std::string tok = glyphs().shown(logical);
  const FittedLabel f = fit_label(tok, pos, numbered, room);
  if (!f.cut || !has_rtl(logical)) return tok;
  ImFont* font = ImGui::GetFont();
  const float size = ImGui::GetFontSize();
  auto width = [&](const std::string& t) { return font->CalcTextSizeA(size, FLT_MAX, 0.0f, t.c_str(), t.c_str() + t.size()).x; };
  const float tok_room = room - (f.num[0] ? f.num_w + width("  ") : 0.0f);
  const std::string cut = cut_logical(logical, tok_room, [&](const std::string& c) { return width(glyphs().shown(c)); });
  return cut.empty() ? tok : glyphs().shown(cut);
}

// The label's text as drawn (for the GUI tests' report).
std::string label_text(const FittedLabel& f) {
  std::string t(f.tok, f.tok_end);
  if (f.cut) t += kEllipsis;
  if (f.num[0]) t += (t.empty() ? "" : "  ") + std::string(f.num);
  return t;
}

// The room a flat key label needs on an axis of n keys staggered on `lines` lines: its
// position number and a little of its token.
float flat_key_need(int n, int lines) {
  const float num_w = ImGui::CalcTextSize(std::to_string(std::max(n - 1, 0)).c_str()).x;
  return (num_w + ImGui::GetFontSize() * 0.8f) / lines;
}

}  // namespace

float flat_labels_h(int lines) { return ImGui::GetFontSize() * lines + 8; }

int flat_key_step(int n, float visible, float width, int lines) {
  return axis_ticks(0.0f, visible, n, width / std::max(visible, 1e-6f), flat_key_need(n, lines)).step;
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

  // Token labels: queries down the left, keys along the bottom, as axis ticks (see the
  // header), each within the room reserved: a row label may reach half a line past the map's
  // ends, a key label half a line past its right end but not left of the map, so that they
  // never meet in the corner they share.
  const float fh = ImGui::GetFontSize(), text_h = fh * 1.1f;
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 accent = IM_COL32(255, 140, 70, 255);
  const int hover_row = hit.hovered ? hit.row : v.hover_token, hover_col = hit.hovered ? hit.col : v.hover_token;
  // The hovered token's label always, and none it would cover.
  auto shown = [&](int i, int step, float cell, int keep, float clear) {
    if (i == keep) return true;
    if (keep >= 0 && std::abs(i - keep) * cell < clear) return false;
    return i % step == 0;
  };
  if (v.row_labels && v.label_w > 0) {
    // Rows a little shorter than a line of text get every label all the same, in a smaller
    // text (down to kRowLabelScaleMin of it); shorter still, every 2nd, 3rd, 4th, 5th, 10th...
    ImGuiWindow* win = ImGui::GetCurrentWindow();
    const float scale0 = win->FontWindowScale, row_px = std::clamp(ch / 1.05f, fh * kRowLabelScaleMin, fh);
    ImGui::SetWindowFontScale(scale0 * row_px / fh);
    const float fh = ImGui::GetFontSize(), text_h = fh * 1.05f;  // this block's text size
    const int n = static_cast<int>(v.row_labels->size());
    const AxisTicks a = axis_ticks(s.row0, row1, n, ch, text_h);
    const float right = p0.x - 6;
    auto label = [&](int t) {
      if (t < 0 || t >= n || !shown(t, a.step, ch, hover_row, text_h)) return;
      const float yc = p0.y + (t + 0.5f - s.row0) * ch;
      if (yc < p0.y || yc > p1.y) return;  // half a line past either end at most: the key labels start right of it
      const std::string tok = drawn_label((*v.row_labels)[t], t, tick_numbered(t, a.step), v.label_w - 8);  // every script, U+XXXX where no font has it
      const FittedLabel f = fit_label(tok, t, tick_numbered(t, a.step), v.label_w - 8);
      const float x = right - f.w, y = yc - fh * 0.5f;
      const ImU32 col = t == hover_row ? accent : ink;
      if (f.tok_end > f.tok) {
        dl->AddText(ImGui::GetFont(), fh, ImVec2(x, y), col, f.tok, f.tok_end);
        if (f.cut) dl->AddText(ImVec2(x + f.tok_w - ImGui::CalcTextSize(kEllipsis).x, y), col, kEllipsis);
      }
      if (f.num[0]) dl->AddText(ImVec2(right - f.num_w, y), t == hover_row ? accent : dim, f.num);
      dl->AddLine(ImVec2(p0.x - 4, yc), ImVec2(p0.x - 1, yc), dim);
      if (v.hook_labels) hook::add_rect("token_labels", ImVec2(x, y), ImVec2(right, y + fh)), hook::add_text("token_label_texts", label_text(f));
      if (v.label_texts) v.label_texts->push_back(label_text(f));
    };
    for (int t = a.first; t < a.end; t += a.step)
      if (t != hover_row) label(t);
    if (hover_row >= a.first - a.step && hover_row < a.end + a.step) label(hover_row);
    ImGui::SetWindowFontScale(scale0);
  }
  if (v.col_labels && v.label_h > 0 && v.flat_col_labels) {
    // Flat key labels, on one line or staggered on two (label_h two lines high): ticks far
    // enough apart for the position numbers, each label within its share of its line (so
    // none overlaps), the token as it fits.
    const int n = static_cast<int>(v.col_labels->size());
    const float num_w = ImGui::CalcTextSize(std::to_string(std::max(n - 1, 0)).c_str()).x;
    const int lines = v.label_h >= flat_labels_h(2) - 0.5f ? 2 : 1;
    const AxisTicks a = axis_ticks(s.col0, col1, n, cw, flat_key_need(n, lines));
    const float top0 = p1.y + 4, share = lines * a.step * cw - fh * 0.4f;
    // Each label in its share of the axis: thinned, from its number (centred on the tick)
    // on; else centred. Shares of neighbouring ticks never meet.
    auto label = [&](int c) {
      if (c < 0 || c >= n || !shown(c, a.step, cw, hover_col, a.step * cw)) return;
      const float xc = p0.x + (c + 0.5f - s.col0) * cw;
      if (xc < p0.x || xc > p1.x) return;
      const float top = top0 + ((c / a.step) % lines) * fh;  // staggered: every other tick on the second line
      const bool numbered = tick_numbered(c, a.step), from_number = a.step > 1;  // thinned: every tick numbered
      const float start = from_number ? xc - num_w * 0.5f : xc - share * 0.5f;
      const float lo = std::max(start, p0.x - 5), hi = std::min(start + share, p1.x + fh * 0.5f);
      const std::string tok = drawn_label((*v.col_labels)[c], c, numbered, hi - lo);
      const FittedLabel f = fit_label(tok, c, numbered, hi - lo);
      if (f.w > hi - lo) return;
      const float x = std::clamp(from_number ? xc - f.num_w * 0.5f : xc - f.w * 0.5f, lo, hi - f.w);
      const ImU32 col = c == hover_col ? accent : ink;
      if (f.num[0]) dl->AddText(ImVec2(x, top), c == hover_col ? accent : dim, f.num);
      if (f.tok_end > f.tok) {
        const float tx = x + f.w - f.tok_w;
        dl->AddText(ImGui::GetFont(), fh, ImVec2(tx, top), col, f.tok, f.tok_end);
        if (f.cut) dl->AddText(ImVec2(tx + f.tok_w - ImGui::CalcTextSize(kEllipsis).x, top), col, kEllipsis);
      }
      dl->AddLine(ImVec2(xc, p1.y + 1), ImVec2(xc, top - 1), dim);
      if (v.hook_labels) hook::add_rect("token_labels", ImVec2(x, top), ImVec2(x + f.w, top + fh)), hook::add_text("token_label_texts", label_text(f));
      if (v.label_texts) v.label_texts->push_back(label_text(f));
    };
    for (int c = a.first; c < a.end; c += a.step)
      if (c != hover_col) label(c);
    if (hover_col >= a.first - a.step && hover_col < a.end + a.step) label(hover_col);
  } else if (v.col_labels && v.label_h > 0) {
    const int n = static_cast<int>(v.col_labels->size());
    const AxisTicks a = axis_ticks(s.col0, col1, n, cw, text_h);
    const float top = p1.y + 6;
    // A key whose cell is narrower than a line (the first tick of a long or small map, often
    // position 0, where first-token heads look) moves right to start by the map's left end;
    // where it then meets the next tick's label, that one gives way.
    const float first_xc = p0.x + (a.first + 0.5f - s.col0) * cw;
    const int gives_way = first_xc - fh * 0.5f < p0.x - 5 && p0.x - 5 + fh > first_xc + a.step * cw - fh * 0.5f ? a.first + a.step : -1;
    auto label = [&](int c) {
      if (c < 0 || c >= n || !shown(c, a.step, cw, hover_col, text_h) || (c == gives_way && c != hover_col)) return;
      const float xc = p0.x + (c + 0.5f - s.col0) * cw;
      if (xc < p0.x || xc > p1.x) return;
      const float x = std::max(xc - fh * 0.5f, p0.x - 5);
      const std::string tok = drawn_label((*v.col_labels)[c], c, tick_numbered(c, a.step), v.label_h - 8);
      const FittedLabel f = fit_label(tok, c, tick_numbered(c, a.step), v.label_h - 8);
      const ImU32 col = c == hover_col ? accent : ink;
      // Rotated, reading upwards: the token starts furthest from the map, the number ends by it.
      if (f.tok_end > f.tok) {
        add_text_vertical(dl, ImVec2(x + fh, top + f.w), col, f.tok, f.tok_end);
        if (f.cut) add_text_vertical(dl, ImVec2(x + fh, top + f.w - f.tok_w + ImGui::CalcTextSize(kEllipsis).x), col, kEllipsis);
      }
      if (f.num[0]) add_text_vertical(dl, ImVec2(x + fh, top + f.num_w), c == hover_col ? accent : dim, f.num);
      dl->AddLine(ImVec2(xc, p1.y + 1), ImVec2(xc, p1.y + 4), dim);
      if (v.hook_labels) hook::add_rect("token_labels", ImVec2(x, top), ImVec2(x + fh, top + f.w)), hook::add_text("token_label_texts", label_text(f));
      if (v.label_texts) v.label_texts->push_back(label_text(f));
    };
    for (int c = a.first; c < a.end; c += a.step)
      if (c != hover_col) label(c);
    if (hover_col >= a.first - a.step && hover_col < a.end + a.step) label(hover_col);
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

void distance_bars(const char* label, const std::vector<float>& v, const char* overlay) {
  const float peak = v.empty() ? 1.0f : std::max(*std::max_element(v.begin(), v.end()), 1e-6f);
  const std::string id = std::string("##") + label;
  const float width = ImGui::GetContentRegionAvail().x;
  // An overlay wider than the plot (a narrow window, large text) goes above it, wrapped, not cut.
  const bool fits = !overlay || ImGui::CalcTextSize(overlay).x <= width - 2 * ImGui::GetStyle().FramePadding.x;
  if (!fits) ImGui::TextWrapped("%s", overlay);
  ImGui::PlotHistogram(id.c_str(), v.data(), static_cast<int>(v.size()), 0, fits ? overlay : nullptr, 0.0f, peak * 1.15f,
                       ImVec2(width, ImGui::GetFontSize() * 5));
  hook_widget(label);
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

HeadGridHit head_grid(AppState& s, const HeadGrid& g) {
  HeadGridHit hit;
  const float fh = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const float label_w = ImGui::CalcTextSize("L00").x + spacing;
  // As wide as the column allows (never wider: nothing is cut off), at most 4.5 em a cell.
  const float cell_w = std::max(2.0f, std::min((ImGui::GetContentRegionAvail().x - label_w) / std::max(1, g.H) - 2.0f, fh * 4.5f));
  const float cell_h = fh * 1.4f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  for (int h = 0; h < g.H; ++h) {  // head numbers (or the given labels) across the top
    char hn[64];
    std::snprintf(hn, sizeof hn, "%s", g.column_labels && h < static_cast<int>(g.column_labels->size()) ? (*g.column_labels)[h].c_str() : std::to_string(h).c_str());
    if (ImGui::CalcTextSize(hn).x > cell_w) std::snprintf(hn, sizeof hn, "%d", h);  // too long for its cell: the number
    if (ImGui::CalcTextSize(hn).x > cell_w) continue;
    const float x = origin.x + label_w + h * (cell_w + 2) + (cell_w - ImGui::CalcTextSize(hn).x) / 2;
    dl->AddText(ImVec2(x, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), hn);
  }
  const float top = origin.y + fh + 2;
  for (int l = 0; l < g.L; ++l) {
    char ln[16];
    std::snprintf(ln, sizeof ln, "%s%d", g.row_prefix, l);
    if (*g.row_prefix) dl->AddText(ImVec2(origin.x, top + l * (cell_h + 2) + (cell_h - fh) / 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), ln);
    for (int h = 0; h < g.H; ++h) {
      const size_t i = static_cast<size_t>(l) * g.H + h;
      const float v = g.values[i];
      const ImVec2 p0(origin.x + label_w + h * (cell_w + 2), top + l * (cell_h + 2)), p1(p0.x + cell_w, p0.y + cell_h);
      ImU32 fill = IM_COL32(60, 60, 60, 255), ink = IM_COL32(255, 255, 255, 255);
      if (std::isfinite(v)) {
        const float a = g.peak > 0 ? std::min(1.0f, std::abs(v) / g.peak) : 0.0f;
        if (g.diverging) {
          const int base = 45;
          fill = v >= 0 ? IM_COL32(base + static_cast<int>(20 * a), base + static_cast<int>(90 * a), base + static_cast<int>(200 * a), 255)
                        : IM_COL32(base + static_cast<int>(200 * a), base + static_cast<int>(40 * a), base + static_cast<int>(40 * a), 255);
        } else {
          const auto c = colormap_rgb(s.view.colormap, v > 0 ? a : 0.0f);
          fill = ImGui::ColorConvertFloat4ToU32(ImVec4(c[0], c[1], c[2], 1.0f));
          if (0.299f * c[0] + 0.587f * c[1] + 0.114f * c[2] > 0.6f) ink = IM_COL32(0, 0, 0, 255);  // dark text on light cells
        }
      }
      dl->AddRectFilled(p0, p1, fill, 2.0f);
      if (i < g.marked.size() && g.marked[i]) dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), IM_COL32(255, 255, 255, 255), 2.0f, 0, 2.5f);
      // The value, as precise as the cell's width allows (the tooltip has it in full).
      char num[24];
      ImVec2 ts;
      for (const char* fmt : {std::abs(v) >= 10 ? "%+.1f" : g.diverging ? "%+.2f" : "%.2f", "%.1f", "%.0f"}) {
        std::snprintf(num, sizeof num, fmt, v);
        if ((ts = ImGui::CalcTextSize(num)).x <= cell_w - 2) break;
      }
      if (!std::isfinite(v)) std::snprintf(num, sizeof num, "-"), ts = ImGui::CalcTextSize(num);
      if (ts.x <= cell_w - 2) dl->AddText(ImVec2(p0.x + (cell_w - ts.x) / 2, p0.y + (cell_h - ts.y) / 2), ink, num);
      char id[64];
      std::snprintf(id, sizeof id, "%s %d.%d", g.id, l, h);
      hook_widget(id, p0, p1);
      if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(p0, p1)) {
        hit.layer = l;
        hit.head = h;
        hit.clicked = ImGui::IsMouseClicked(ImGuiMouseButton_Left);
        ImGui::SetTooltip(g.tooltip, l, h, v);
      }
    }
  }
  ImGui::Dummy(ImVec2(label_w + g.H * (cell_w + 2), fh + 2 + g.L * (cell_h + 2)));
  return hit;
}

}  // namespace headmap
