// panel_contributions.cpp: the Contributions tab (issue 28; in narrow layouts, sub-tabs of the Model tab): what heads add, beyond where
// they look. Eight views, each its own panel file: Rollout (panel_rollout.cpp), Patching
// (panel_patching.cpp), Head overview (panel_overview.cpp), Offsets (panel_offsets.cpp), Circuits (panel_circuits.cpp), Corpus (panel_corpus.cpp), Logit lens (panel_lens.cpp) and
// Detectors (panel_detectors.cpp). The attribution of a clicked
// prediction stays under the predictions (panel_contrib.cpp).
#include <imgui.h>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

void draw_contributions(AppState& s, HeatmapRenderer& r, bool with_model) {
  // The sub-tab wanted (-1: the model view) against the one open last frame: a scripted
  // contrib_view= or panel=, or a fresh tab bar (which opens its first tab), selects it.
  ContribState& c = s.contrib;
  const int wanted = with_model && s.view.center == CenterPanel::Model ? -1 : static_cast<int>(c.view);
  const bool switch_tab = wanted != c.open_sub;
  // Eight views (nine with the model's): where their full labels fit, the tabs share the
  // width; where they do not (a projector: 1024x768 with 1.5x text cut them to two letters),
  // each keeps its whole label and the bar scrolls (its arrows, the selected tab kept in view);
  // the list button names them all either way.
  static const char* const kLabels[] = {"Layers \xC3\x97 heads", "Rollout", "Patching", "Head overview", "Offsets", "Circuits", "Corpus", "Logit lens", "Detectors"};
  const ImGuiStyle& st = ImGui::GetStyle();
  float full = ImGui::GetFrameHeight() + st.ItemInnerSpacing.x;  // the list button
  for (size_t i = with_model ? 0 : 1; i < sizeof kLabels / sizeof kLabels[0]; ++i)
    full += ImGui::CalcTextSize(kLabels[i]).x + st.FramePadding.x * 2 + st.ItemInnerSpacing.x;
  const bool scroll = full > ImGui::GetContentRegionAvail().x;
  if (!ImGui::BeginTabBar("contrib views", ImGuiTabBarFlags_TabListPopupButton | (scroll ? ImGuiTabBarFlags_FittingPolicyScroll : 0))) return;
  int open_now = c.open_sub;
  if (with_model) {  // narrow layouts: the layers x heads view shares the Model tab with these
    const bool open = ImGui::BeginTabItem(kLabels[0], nullptr, switch_tab && wanted == -1 ? ImGuiTabItemFlags_SetSelected : 0);
    if (ImGui::IsItemVisible()) hook_widget(kLabels[0]);  // scrolled out of the bar: not there to click
    if (open) {
      open_now = -1;
      if (!switch_tab) s.view.center = CenterPanel::Model;
      draw_model(s, r);
      ImGui::EndTabItem();
    }
  }
  auto tab = [&](const char* label, ContribView v) {
    const bool open = ImGui::BeginTabItem(label, nullptr, switch_tab && wanted == static_cast<int>(v) ? ImGuiTabItemFlags_SetSelected : 0);
    if (ImGui::IsItemVisible()) hook_widget(label);
    if (open) {
      open_now = static_cast<int>(v);
      if (!switch_tab) {
        c.view = v;
        s.view.center = CenterPanel::Contrib;
      }
    }
    return open;
  };
  if (tab("Rollout", ContribView::Rollout)) {
    draw_rollout(s, r);
    ImGui::EndTabItem();
  }
  if (tab("Patching", ContribView::Patching)) {
    draw_patching(s);
    ImGui::EndTabItem();
  }
  if (tab("Head overview", ContribView::Overview)) {
    draw_overview(s);
    ImGui::EndTabItem();
  }
  if (tab("Offsets", ContribView::Offsets)) {
    draw_offsets(s);
    ImGui::EndTabItem();
  }
  if (tab("Circuits", ContribView::Circuits)) {
    draw_circuits(s);
    ImGui::EndTabItem();
  }
  if (tab("Corpus", ContribView::Corpus)) {
    draw_corpus(s);
    ImGui::EndTabItem();
  }
  if (tab("Logit lens", ContribView::Lens)) {
    draw_lens(s);
    ImGui::EndTabItem();
  }
  if (tab("Detectors", ContribView::Detectors)) {
    c.detectors_on = true;  // from now on the heads grid marks the heads above the threshold
    draw_detectors(s);
    ImGui::EndTabItem();
  }
  c.open_sub = open_now;
  ImGui::EndTabBar();
}

}  // namespace headmap
