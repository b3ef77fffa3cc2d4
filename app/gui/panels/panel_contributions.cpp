// panel_contributions.cpp: the Contributions tab (issue 28; in narrow layouts, sub-tabs of the Model tab): what heads add, beyond where
// they look. Eight views, each its own panel file: Rollout (panel_rollout.cpp), Patching
// (panel_patching.cpp), Head overview (panel_overview.cpp), Offsets (panel_offsets.cpp), Circuits (panel_circuits.cpp), Corpus (panel_corpus.cpp), Logit lens (panel_lens.cpp) and
// Detectors (panel_detectors.cpp). The attribution of a clicked
// prediction stays under the predictions (panel_contrib.cpp).
#include <imgui.h>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {

struct SubView {
  const char* label;
  int id;  // -1: the layers x heads view (narrow layouts), else a ContribView
};

constexpr SubView kSubViews[] = {{"Layers \xC3\x97 heads", -1},
                                 {"Rollout", static_cast<int>(ContribView::Rollout)},
                                 {"Patching", static_cast<int>(ContribView::Patching)},
                                 {"Head overview", static_cast<int>(ContribView::Overview)},
                                 {"Offsets", static_cast<int>(ContribView::Offsets)},
                                 {"Circuits", static_cast<int>(ContribView::Circuits)},
                                 {"Corpus", static_cast<int>(ContribView::Corpus)},
                                 {"Logit lens", static_cast<int>(ContribView::Lens)},
                                 {"Detectors", static_cast<int>(ContribView::Detectors)}};

void draw_sub_view(AppState& s, HeatmapRenderer& r, int id) {
  switch (id) {
    case -1: draw_model(s, r); break;
    case static_cast<int>(ContribView::Rollout): draw_rollout(s, r); break;
    case static_cast<int>(ContribView::Patching): draw_patching(s); break;
    case static_cast<int>(ContribView::Overview): draw_overview(s); break;
    case static_cast<int>(ContribView::Offsets): draw_offsets(s); break;
    case static_cast<int>(ContribView::Circuits): draw_circuits(s); break;
    case static_cast<int>(ContribView::Corpus): draw_corpus(s); break;
    case static_cast<int>(ContribView::Lens): draw_lens(s); break;
    case static_cast<int>(ContribView::Detectors):
      s.contrib.detectors_on = true;  // from now on the heads grid marks the heads above the threshold
      draw_detectors(s);
      break;
    default: break;
  }
}

// A click on a sub-view: it becomes the view shown (the Model tab's own view, or a
// Contributions view).
void choose_sub_view(AppState& s, int id) {
  if (id == -1) {
    s.view.center = CenterPanel::Model;
    return;
  }
  s.contrib.view = static_cast<ContribView>(id);
  s.view.center = CenterPanel::Contrib;
}

}  // namespace

void draw_contributions(AppState& s, HeatmapRenderer& r, bool with_model) {
  // The sub-view wanted (-1: the model view) against the one open last frame: a scripted
  // contrib_view= or panel=, or a fresh tab bar (which opens its first tab), selects it.
  ContribState& c = s.contrib;
  const int wanted = with_model && s.view.center == CenterPanel::Model ? -1 : static_cast<int>(c.view);
  const bool switch_tab = wanted != c.open_sub;
  const size_t first = with_model ? 0 : 1;
  const size_t count = sizeof kSubViews / sizeof kSubViews[0];
  // Eight views (nine with the model's). Where their full labels fit, they are tabs sharing
  // the width. Where they do not (a projector: 1024x768 with 1.5x text cut the tabs to two
  // letters, and a scrolling bar hides most of them), each is a button with its whole label,
  // the buttons wrapped over as many rows as they need, the open one lit.
  const ImGuiStyle& st = ImGui::GetStyle();
  float full = ImGui::GetFrameHeight() + st.ItemInnerSpacing.x;  // the tab bar's list button
  for (size_t i = first; i < count; ++i) full += ImGui::CalcTextSize(kSubViews[i].label).x + st.FramePadding.x * 2 + st.ItemInnerSpacing.x;
  if (full > ImGui::GetContentRegionAvail().x) {
    int chosen = wanted;
    const float right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
    for (size_t i = first; i < count; ++i) {
      const SubView& v = kSubViews[i];
      const float w = ImGui::CalcTextSize(v.label).x + st.FramePadding.x * 2;
      if (i > first) {
        ImGui::SameLine();
        if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
      }
      const bool lit = v.id == wanted;
      if (lit) ImGui::PushStyleColor(ImGuiCol_Button, st.Colors[ImGuiCol_TabActive]);
      if (ImGui::Button(v.label)) chosen = v.id;
      hook_widget(v.label);
      if (lit) ImGui::PopStyleColor();
    }
    if (chosen != wanted) choose_sub_view(s, chosen);
    ImGui::Separator();
    draw_sub_view(s, r, chosen);
    c.open_sub = chosen;
    return;
  }
  if (!ImGui::BeginTabBar("contrib views", ImGuiTabBarFlags_TabListPopupButton)) return;
  int open_now = c.open_sub;
  for (size_t i = first; i < count; ++i) {
    const SubView& v = kSubViews[i];
    const bool open = ImGui::BeginTabItem(v.label, nullptr, switch_tab && wanted == v.id ? ImGuiTabItemFlags_SetSelected : 0);
    hook_widget(v.label);
    if (!open) continue;
    open_now = v.id;
    if (!switch_tab) choose_sub_view(s, v.id);
    draw_sub_view(s, r, v.id);
    ImGui::EndTabItem();
  }
  c.open_sub = open_now;
  ImGui::EndTabBar();
}

}  // namespace headmap
