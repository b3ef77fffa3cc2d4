// panel_offsets.cpp: how each head's attention falls off with distance, and which rotary
// frequencies its scores use (issue 39; core/inspect/offset_profile.h). A grid of every head
// (rows) by distance t - s (columns), each row coloured against its own peak so a head's shape
// shows whatever its scale; a click selects the head, whose profile is drawn as bars below,
// and, on a rotary family, its scores' shares by RoPE pair, fast to slow, and the unrotated
// dims. Computed on the worker; exported as JSON.
//
// L = layers, Hw = heads in the maps, N = L*Hw, len = real tokens, P = rotary pairs
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/gui/dialogs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {

// The selected head's bars: the mean weight at each distance shown.
void profile_bars(AppState& s, const OffsetProfile& p, int l, int h, int d0) {
  std::vector<float> v;
  for (int d = d0; d < p.len; ++d) v.push_back(p.at(l, h, d));
  char overlay[96];
  std::snprintf(overlay, sizeof overlay, "head %d.%d: mean weight at distance %d .. %d", l, h, d0, p.len - 1);
  distance_bars("offset profile", v, overlay);
}

// The selected head's scores by RoPE pair (fast to slow), then the unrotated dims.
void frequency_bars(AppState& s, const OffsetProfile& p, int l, int h) {
  if (p.H == 0) {
    text_disabled_wrapped(("No frequency profile: " + p.no_frequencies + ".").c_str());
    hook_widget("no frequency profile");
    return;
  }
  const int pairs = p.pairs[static_cast<size_t>(l)];
  const int head = std::clamp(h, 0, p.H - 1);
  if (pairs == 0) {
    char line[160];
    std::snprintf(line, sizeof line, "Layer %d rotates nothing (no RoPE in this layer): its scores see position only through the text.", l);
    text_disabled_wrapped(line);
    hook_widget("no frequency profile");
    return;
  }
  std::vector<float> v;
  for (int i = 0; i < pairs; ++i) v.push_back(p.share(l, head, i));
  const float rest = p.share(l, head, p.P);
  const float peak = std::max(*std::max_element(v.begin(), v.end()), 1e-6f);
  char overlay[128];
  std::snprintf(overlay, sizeof overlay, "head %d.%d: share of its scores by RoPE pair", l, head);
  const float fh = ImGui::GetFontSize();
  ImGui::PlotHistogram("##offset frequencies", v.data(), pairs, 0, overlay, 0.0f, peak * 1.15f, ImVec2(ImGui::GetContentRegionAvail().x, fh * 5));
  hook_widget("offset frequencies");
  if (ImGui::IsItemHovered()) {
    const float x0 = ImGui::GetItemRectMin().x, w = ImGui::GetItemRectSize().x;
    const int i = std::clamp(static_cast<int>((ImGui::GetMousePos().x - x0) / w * pairs), 0, pairs - 1);
    ImGui::SetTooltip("pair %d: wavelength %.1f tokens, %.1f%% of the scores", i, p.wavelength[static_cast<size_t>(l) * p.P + i], 100 * v[static_cast<size_t>(i)]);
  }
  char caption[256];
  std::snprintf(caption, sizeof caption,
                "left: fast pairs (wavelength %.1f tokens), right: slow ones (%.0f tokens). The dims no rotation touches: %.1f%%. "
                "A head that reads position leans left; one that reads content leans right.",
                p.wavelength[static_cast<size_t>(l) * p.P], p.wavelength[static_cast<size_t>(l) * p.P + pairs - 1], 100 * rest);
  text_disabled_wrapped(caption);
}

}  // namespace

void draw_offsets(AppState& s) {
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  const bool ours = res && res->request.offsets && *res->request.offsets == OffsetsRequest{std::max(0, s.view.batch)};
  if (!f || f->batch.empty() || !ours || !res->offsets || res->offsets->L == 0) {
    text_disabled_wrapped(f && f->batch.empty() ? "Type a sentence to see how each head's attention falls off with distance." : "computing the offset profile...");
    return;
  }
  const OffsetProfile& p = *res->offsets;
  const int L = p.L, Hw = p.Hw, N = L * Hw, len = p.len, b = std::clamp(res->request.offsets->batch, 0, f->batch.B() - 1);
  const int d0 = p.causal ? 0 : 1 - len;  // the first distance shown: a causal head sees none below 0
  const int cols = len - d0;
  const int sel_l = std::clamp(s.view.layer, 0, L - 1), sel_h = std::clamp(s.view.head, 0, Hw - 1);

  text_disabled_wrapped_at_commas("Each row a head, each column a distance t - s from the query back to the key, the colour its mean weight over the "
                                  "sentence (each row against its own peak). Click a head to select it.");
  same_line_if_fits(ImGui::CalcTextSize("Export offset profile...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export offset profile..."))
    s.dialog_request = AppState::DialogRequest{Dialog::ExportOffsets, dialog_default_path(Dialog::ExportOffsets), false};
  hook_widget("Export offset profile...");

  // The grid: N rows of `cols` cells, the head's label at the left, distances along the top.
  const float fh = ImGui::GetFontSize();
  const float label_w = ImGui::CalcTextSize("00.00 ").x;
  const float avail_w = ImGui::GetContentRegionAvail().x - label_w;
  const float cell_w = std::max(2.0f, avail_w / std::max(cols, 1));
  // The rows take the height the bars below leave (the profile; the frequencies or their note).
  const float below = fh * (p.H > 0 ? 13.5f : 9.0f);
  const float row_h = std::clamp((ImGui::GetContentRegionAvail().y - fh * 1.5f - below) / std::max(N, 1), 3.0f, fh * 1.8f);
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  // Distance labels, as many as fit, under the axis' name in the labels' column.
  dl->AddText(top, ImGui::GetColorU32(ImGuiCol_TextDisabled), "t - s");
  const int every = std::max(1, static_cast<int>(std::ceil(ImGui::CalcTextSize("-00").x * 1.4f / cell_w)));
  for (int c = 0; c < cols; c += every) {
    char num[16];
    std::snprintf(num, sizeof num, "%d", d0 + c);
    dl->AddText(ImVec2(top.x + label_w + c * cell_w, top.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), num);
  }
  const ImVec2 g0(top.x + label_w, top.y + fh * 1.2f);
  const ImVec2 g1(g0.x + cell_w * cols, g0.y + row_h * N);
  ImGui::SetCursorScreenPos(ImVec2(top.x, g0.y));
  ImGui::InvisibleButton("offsets grid", ImVec2(label_w + cell_w * cols, row_h * N));
  hook_widget("offsets grid", g0, g1);
  const bool hovered = ImGui::IsItemHovered(), clicked = ImGui::IsItemClicked();
  const int label_every = std::max(1, static_cast<int>(std::ceil(fh / row_h)));
  for (int n = 0; n < N; ++n) {
    const int l = n / Hw, h = n % Hw;
    float peak = 1e-6f;
    for (int c = 0; c < cols; ++c) peak = std::max(peak, p.at(l, h, d0 + c));
    const float y = g0.y + n * row_h;
    for (int c = 0; c < cols; ++c) {
      const std::array<float, 3> rgb = colormap_rgb(s.view.colormap, std::clamp(p.at(l, h, d0 + c) / peak, 0.0f, 1.0f));
      dl->AddRectFilled(ImVec2(g0.x + c * cell_w, y), ImVec2(g0.x + (c + 1) * cell_w, y + row_h), ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1)));
    }
    if (n % label_every == 0 || (l == sel_l && h == sel_h)) {
      char label[16];
      std::snprintf(label, sizeof label, "%d.%d", l, h);
      dl->AddText(ImVec2(top.x, y + (row_h - fh) * 0.5f), ImGui::GetColorU32(ImGuiCol_Text), label);
    }
    if (l == sel_l && h == sel_h) dl->AddRect(ImVec2(g0.x, y), ImVec2(g1.x, y + row_h), IM_COL32(255, 140, 70, 255), 0, 0, 2.0f);
  }
  if (hovered) {
    const ImVec2 m = ImGui::GetMousePos();
    const int n = std::clamp(static_cast<int>((m.y - g0.y) / row_h), 0, N - 1);
    const int c = std::clamp(static_cast<int>((m.x - g0.x) / cell_w), 0, cols - 1);
    ImGui::SetTooltip("head %d.%d at distance %d: mean weight %.4f over %d rows\nclick: select it", n / Hw, n % Hw, d0 + c, p.at(n / Hw, n % Hw, d0 + c),
                      p.rows_at[static_cast<size_t>(d0 + c + len - 1)]);
    if (clicked) {
      s.view.layer = n / Hw;
      s.view.head = n % Hw;
      s.view.batch = b;
    }
  }
  ImGui::Dummy(ImVec2(0, fh * 0.3f));
  profile_bars(s, p, sel_l, sel_h, d0);
  frequency_bars(s, p, sel_l, Hw == p.H ? sel_h : 0);
}

}  // namespace headmap
