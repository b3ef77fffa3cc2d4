// panel_lens.cpp: the logit lens (issue 39; core/inspect/logit_lens.h) as a view of its own:
// a grid of points (rows: the embeddings, then each layer's attention and MLP) by positions
// (columns: the sentence's tokens). Each cell shows the token that point of the stream would
// predict, read through the final norm and the unembedding, on a colour for the target's
// probability there (the model's final prediction, or the text's own next token); a cell
// whose top-1 is the target is outlined. Hover lists the cell's top-k; a click keeps that
// list under the grid. Computed on the worker; exported as JSON (File-style dialog).
//
// P = 2L + 1 points, T = tokens, K = top-k
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/common/colormap.h"
#include "app/gui/dialogs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {
// The cell's text cut to fit `width` pixels, with "..." when cut (on a UTF-8 boundary).
std::string fit_text(const std::string& s, float width) {
  if (ImGui::CalcTextSize(s.c_str()).x <= width) return s;
  std::string out = s;
  while (!out.empty()) {
    do out.pop_back();
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80);
    if (!out.empty()) out.pop_back();  // the lead byte of the character cut
    if (ImGui::CalcTextSize((out + "...").c_str()).x <= width) return out + "...";
  }
  return "";
}

// The top-k of one cell, with the target's probability and rank there.
void cell_list(const LogitLens& lens, const ForwardData& f, int p, int t, const std::vector<std::string>& toks) {
  const int id = lens.target_ids[static_cast<size_t>(t)];
  ImGui::Text("%s, position %d \"%s\":", LogitLens::point_name(p).c_str(), t, toks[static_cast<size_t>(t)].c_str());
  for (int i = 0; i < lens.K; ++i) {
    const int top = lens.top_id(p, t, i);
    ImGui::Text("  %2d. %-14s %6.2f%%%s", i + 1, token_name(*f.weights, top).c_str(), 100.0 * lens.top_prob(p, t, i), top == id ? "  (target)" : "");
  }
  if (id >= 0)
    ImGui::Text("target %s: %.2f%%, rank %d", token_name(*f.weights, id).c_str(), 100.0 * lens.target_prob(p, t),
                lens.target_ranks[static_cast<size_t>(p) * lens.T + t] + 1);
  else
    ImGui::TextDisabled("no target here (the last token has no next one in the text)");
}
}  // namespace

void draw_lens(AppState& s) {
  ContribState& c = s.contrib;
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  // Controls: the target, the top-k, the export.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Colour");
  ImGui::SameLine();
  const char* targets[] = {"P(final prediction)", "P(next token in the text)"};
  const int target = c.lens_target == LensTarget::Text ? 1 : 0;
  ImGui::SetNextItemWidth(ImGui::CalcTextSize(targets[1]).x + ImGui::GetFrameHeight() * 1.5f);
  if (ImGui::BeginCombo("##lens target", targets[target])) {
    for (int i = 0; i < 2; ++i) {
      if (ImGui::Selectable(targets[i], i == target)) c.lens_target = i == 1 ? LensTarget::Text : LensTarget::Final;
      hook_widget(targets[i]);
    }
    ImGui::EndCombo();
  }
  hook_widget("lens target");
  same_line_if_fits(ImGui::GetFontSize() * 9);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  if (ImGui::SliderInt("top-k", &c.lens_k, 1, 20, "%d", ImGuiSliderFlags_AlwaysClamp)) c.lens_k = std::clamp(c.lens_k, 1, kLensMaxTopK);
  hook_widget("top-k");
  same_line_if_fits(ImGui::CalcTextSize("Export logit lens...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export logit lens...")) s.dialog_request = AppState::DialogRequest{Dialog::ExportLens, dialog_default_path(Dialog::ExportLens), false};
  hook_widget("Export logit lens...");
  text_disabled_wrapped_at_commas(
      "Each row reads the residual stream at one point (after the embeddings, after each layer's attention, after its MLP) through "
      "the final norm and the unembedding: the cell shows the token it would predict, its colour the probability of the target, "
      "and an outline where that token is the target.");

  const bool ours = res && res->request.lens && *res->request.lens == LensRequest{std::max(0, s.view.batch), c.lens_target, std::clamp(c.lens_k, 1, kLensMaxTopK)};
  if (ours && !res->lens_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", res->lens_error.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", res->lens_error);
    return;
  }
  if (!f || f->batch.empty() || !ours || !res->lens) {
    text_disabled_wrapped(f && f->batch.empty() ? "Type a sentence to read what each layer predicts." : "computing the logit lens...");
    return;
  }
  const LogitLens& lens = *res->lens;
  const int b = std::clamp(res->request.lens->batch, 0, f->batch.B() - 1), P = lens.points(), T = lens.T;
  const std::vector<std::string> toks(f->labels[b].begin(), f->labels[b].begin() + std::min<size_t>(T, f->labels[b].size()));
  if (static_cast<int>(toks.size()) < T) return;

  // The grid: row labels on the left, the tokens along the top, in a scrolling child so that
  // a deep model or a long sentence stays readable.
  const float fh = ImGui::GetFontSize();
  const float row_h = fh * 1.5f, label_w = ImGui::CalcTextSize("00 attn").x + fh;
  float cell_w = fh * 4.5f;
  for (int t = 0; t < T; ++t) cell_w = std::max(cell_w, std::min(fh * 7, ImGui::CalcTextSize(toks[static_cast<size_t>(t)].c_str()).x + fh * 0.6f));
  const float head_h = row_h;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float list_h = fh * 1.3f * (lens.K + 3);
  const float grid_h = std::min(head_h + row_h * P + fh, std::max(fh * 8, avail.y - list_h));
  ImGui::BeginChild("lens grid", ImVec2(0, grid_h), false, ImGuiWindowFlags_HorizontalScrollbar);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const ImVec2 size(label_w + cell_w * T, head_h + row_h * P);
  ImGui::InvisibleButton("lens cells", size);
  const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
  hook_widget("lens cells", o, ImVec2(o.x + size.x, o.y + size.y));
  const ImU32 text_col = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  for (int t = 0; t < T; ++t) {  // the tokens, along the top
    const std::string label = fit_text(toks[static_cast<size_t>(t)], cell_w - fh * 0.4f);
    dl->AddText(ImVec2(o.x + label_w + cell_w * t + fh * 0.2f, o.y + (head_h - fh) * 0.5f), text_col, label.c_str());
  }
  int hp = -1, ht = -1;
  const ImVec2 m = ImGui::GetMousePos();
  if (hovered && m.x >= o.x + label_w && m.y >= o.y + head_h) {
    ht = std::min(T - 1, static_cast<int>((m.x - o.x - label_w) / cell_w));
    hp = std::min(P - 1, static_cast<int>((m.y - o.y - head_h) / row_h));
  }
  if (clicked && hp >= 0) c.lens_point = hp, c.lens_position = ht;
  for (int p = 0; p < P; ++p) {
    const float y = o.y + head_h + row_h * p;
    dl->AddText(ImVec2(o.x, y + (row_h - fh) * 0.5f), p % 2 == 1 || p == 0 ? dim : text_col, LogitLens::point_name(p).c_str());
    for (int t = 0; t < T; ++t) {
      const ImVec2 p0(o.x + label_w + cell_w * t, y), p1(p0.x + cell_w - 1, y + row_h - 1);
      const float v = lens.target_prob(p, t);
      const bool none = std::isnan(v);
      const std::array<float, 3> rgb = none ? kMaskedRgb : colormap_rgb(s.view.colormap, std::clamp(v, 0.0f, 1.0f));
      dl->AddRectFilled(p0, p1, ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1)));
      const float lum = 0.299f * rgb[0] + 0.587f * rgb[1] + 0.114f * rgb[2];
      const ImU32 ink = lum > 0.5f ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255);
      const std::string top = fit_text(token_name(*f->weights, lens.top_id(p, t)), cell_w - fh * 0.4f);
      dl->AddText(ImVec2(p0.x + fh * 0.2f, y + (row_h - fh) * 0.5f), ink, top.c_str());
      if (lens.target_ids[static_cast<size_t>(t)] >= 0 && lens.top_id(p, t) == lens.target_ids[static_cast<size_t>(t)])
        dl->AddRect(p0, p1, ink, 0, 0, 2.0f);  // the target is this cell's top-1
      if ((p == hp && t == ht) || (p == c.lens_point && t == c.lens_position))
        dl->AddRect(ImVec2(p0.x - 1, p0.y - 1), ImVec2(p1.x + 1, p1.y + 1), ImGui::GetColorU32(ImGuiCol_PlotLinesHovered), 0, 0, 3.0f);
    }
  }
  ImGui::EndChild();
  if (hp >= 0) {
    ImGui::BeginTooltip();
    cell_list(lens, *f, hp, ht, toks);
    ImGui::EndTooltip();
  }
  // The legend, then the clicked cell's top-k.
  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.vmin = 0;
  style.vmax = 1;
  colour_legend(style, c.lens_target == LensTarget::Final ? "probability of the final prediction" : "probability of the next token in the text",
                std::min(avail.x * 0.4f, fh * 16), nullptr);
  if (c.lens_point >= 0 && c.lens_point < P && c.lens_position >= 0 && c.lens_position < T) cell_list(lens, *f, c.lens_point, c.lens_position, toks);
  else text_disabled_wrapped("Click a cell to keep its top tokens here.");
}

}  // namespace headmap
