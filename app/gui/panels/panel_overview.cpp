// panel_overview.cpp: every head of the sentence at once (issue 39; core/inspect/head_overview.h).
// A statistic chosen from metrics.h's table (entropy, sink mass, mean distance, previous-token,
// self, the detector shares) as a layers x heads grid, the heads ranked by it, and a 2-D map of
// the heads placed by how alike their patterns are on this text, the pairs that nearly
// coincide joined. A click on a head selects it (the Heads and Focus tabs show it); Focus
// links back here. Computed on the worker from the maps; exported as JSON.
//
// L = layers, Hw = heads in the maps, N = L*Hw
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>

#include "app/common/colormap.h"
#include "app/gui/dialogs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {
void select_head(AppState& s, int l, int h, int b) {
  s.view.layer = l;
  s.view.head = h;
  s.view.batch = b;
}
}  // namespace

void draw_overview(AppState& s) {
  ContribState& c = s.contrib;
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  const bool ours = res && res->request.overview && *res->request.overview == OverviewRequest{std::max(0, s.view.batch)};
  if (!f || f->batch.empty() || !ours || !res->overview || res->overview->L == 0) {
    text_disabled_wrapped(f && f->batch.empty() ? "Type a sentence to see every head at once." : "computing the head overview...");
    return;
  }
  const HeadOverview& o = *res->overview;
  const int L = o.L, Hw = o.Hw, N = L * Hw, b = std::clamp(res->request.overview->batch, 0, f->batch.B() - 1);
  c.overview_stat = std::clamp(c.overview_stat, 0, static_cast<int>(o.stat_keys.size()) - 1);
  const HeadMetricInfo& info = head_metric_info(o.stat_keys[static_cast<size_t>(c.overview_stat)]);
  const std::vector<float>& v = o.stats[static_cast<size_t>(c.overview_stat)];

  // Controls: the statistic, the export.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Statistic");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16);
  if (ImGui::BeginCombo("##overview stat", info.name)) {
    for (size_t i = 0; i < o.stat_keys.size(); ++i) {
      const char* name = head_metric_info(o.stat_keys[i]).name;
      if (ImGui::Selectable(name, static_cast<int>(i) == c.overview_stat)) c.overview_stat = static_cast<int>(i);
      hook_widget(name);
    }
    ImGui::EndCombo();
  }
  hook_widget("overview stat");
  same_line_if_fits(ImGui::CalcTextSize("Export head overview...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export head overview..."))
    s.dialog_request = AppState::DialogRequest{Dialog::ExportOverview, dialog_default_path(Dialog::ExportOverview), false};
  hook_widget("Export head overview...");
  text_disabled_wrapped_at_commas(std::string(info.name) + ": " + info.definition + ". Click a head to select it.");

  // The grid, the near duplicates outlined.
  std::vector<bool> dup(static_cast<size_t>(N), false);
  for (const auto& [n, m] : o.near_duplicates) dup[static_cast<size_t>(n)] = dup[static_cast<size_t>(m)] = true;
  const float peak = std::max(1e-6f, *std::max_element(v.begin(), v.end()));
  HeadGrid g;
  g.id = "overview";
  g.L = L;
  g.H = Hw;
  g.values = v.data();
  g.peak = peak;
  g.marked = dup;
  const std::string tip = std::string("head %d.%d: ") + info.name + " %.4f\nclick: select it";
  g.tooltip = tip.c_str();
  const HeadGridHit hit = head_grid(s, g);
  if (hit.clicked) select_head(s, hit.layer, hit.head, b);

  // The ranking and the layout, side by side where they fit.
  const float fh = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float list_w = fh * 11;
  ImGui::BeginChild("overview ranking", ImVec2(list_w, std::max(fh * 8, avail.y)), false);
  ImGui::TextUnformatted("Highest first");
  std::vector<int> order(static_cast<size_t>(N));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c2) { return v[static_cast<size_t>(a)] > v[static_cast<size_t>(c2)]; });
  for (int i = 0; i < std::min(N, 64); ++i) {
    const int n = order[static_cast<size_t>(i)];
    char label[64];
    std::snprintf(label, sizeof label, "head %d.%d  %.3f%s", n / Hw, n % Hw, v[static_cast<size_t>(n)], dup[static_cast<size_t>(n)] ? "  =" : "");
    const bool sel = s.view.layer == n / Hw && s.view.head == n % Hw;
    if (ImGui::Selectable(label, sel)) select_head(s, n / Hw, n % Hw, b);
    if (i < 2 || i == N - 1) hook_widget(label);
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("overview layout", ImVec2(0, std::max(fh * 8, avail.y)), false);
  char caption[160];
  std::snprintf(caption, sizeof caption, "Heads placed by how alike their patterns are on this text; joined: cosine >= %.2f", kNearDuplicate);
  text_disabled_wrapped_at_commas(caption);
  const ImVec2 a2 = ImGui::GetContentRegionAvail();
  const float side = std::max(fh * 6, std::min(a2.x, a2.y) - fh);
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("overview map", ImVec2(side, side));
  hook_widget("overview map", p0, ImVec2(p0.x + side, p0.y + side));
  const bool map_hovered = ImGui::IsItemHovered(), map_clicked = ImGui::IsItemClicked();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(p0, ImVec2(p0.x + side, p0.y + side), ImGui::GetColorU32(ImGuiCol_Border));
  float lo_x = 1e30f, hi_x = -1e30f, lo_y = 1e30f, hi_y = -1e30f;
  for (int n = 0; n < N; ++n) {
    lo_x = std::min(lo_x, o.layout[static_cast<size_t>(n) * 2]), hi_x = std::max(hi_x, o.layout[static_cast<size_t>(n) * 2]);
    lo_y = std::min(lo_y, o.layout[static_cast<size_t>(n) * 2 + 1]), hi_y = std::max(hi_y, o.layout[static_cast<size_t>(n) * 2 + 1]);
  }
  const float span = std::max({hi_x - lo_x, hi_y - lo_y, 1e-6f}), pad = fh * 1.5f;
  auto at = [&](int n) {
    const float x = (o.layout[static_cast<size_t>(n) * 2] - (lo_x + hi_x) * 0.5f) / span, y = (o.layout[static_cast<size_t>(n) * 2 + 1] - (lo_y + hi_y) * 0.5f) / span;
    return ImVec2(p0.x + side * 0.5f + x * (side - 2 * pad), p0.y + side * 0.5f + y * (side - 2 * pad));
  };
  for (const auto& [n, m] : o.near_duplicates) dl->AddLine(at(n), at(m), IM_COL32(255, 140, 70, 200), 2.0f);
  int near = -1;
  float best = fh * fh;
  std::vector<ImVec4> labelled;  // label boxes drawn: a label that would overlap one is left to the tooltip
  const ImVec2 mouse = ImGui::GetMousePos();
  for (int n = 0; n < N; ++n) {
    const ImVec2 q = at(n);
    const std::array<float, 3> rgb = colormap_rgb(s.view.colormap, std::clamp(v[static_cast<size_t>(n)] / peak, 0.0f, 1.0f));
    dl->AddCircleFilled(q, fh * 0.35f, ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1)));
    const bool sel = s.view.layer == n / Hw && s.view.head == n % Hw;
    if (sel) dl->AddCircle(q, fh * 0.55f, IM_COL32(255, 140, 70, 255), 0, 2.5f);
    char label[16];
    std::snprintf(label, sizeof label, "%d.%d", n / Hw, n % Hw);
    const ImVec2 ls = ImGui::CalcTextSize(label);
    const ImVec4 box(q.x + fh * 0.4f, q.y - fh * 0.5f, q.x + fh * 0.4f + ls.x, q.y - fh * 0.5f + ls.y);
    const bool free = std::none_of(labelled.begin(), labelled.end(),
                                   [&](const ImVec4& r) { return box.x < r.z && r.x < box.z && box.y < r.w && r.y < box.w; });
    if (free || sel) {
      dl->AddText(ImVec2(box.x, box.y), ImGui::GetColorU32(ImGuiCol_Text), label);
      labelled.push_back(box);
    }
    const float d = (q.x - mouse.x) * (q.x - mouse.x) + (q.y - mouse.y) * (q.y - mouse.y);
    if (map_hovered && d < best) best = d, near = n;
  }
  if (near >= 0) {
    ImGui::SetTooltip("head %d.%d: %s %.4f%s", near / Hw, near % Hw, info.name, v[static_cast<size_t>(near)], dup[static_cast<size_t>(near)] ? "\nits pattern nearly coincides with a joined head's" : "");
    if (map_clicked) select_head(s, near / Hw, near % Hw, b);
  }
  ImGui::EndChild();
}

}  // namespace headmap
