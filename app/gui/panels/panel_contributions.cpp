// panel_contributions.cpp: the Contributions tab (issue 28): what heads add, beyond where
// they look. Three views, each its own panel file: Rollout (panel_rollout.cpp), Patching
// (panel_patching.cpp) and Detectors (panel_detectors.cpp). The attribution of a clicked
// prediction stays under the predictions (panel_contrib.cpp).
#include <imgui.h>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

void draw_contributions(AppState& s, HeatmapRenderer& r) {
  const bool switch_tab = s.contrib.view != s.contrib.drawn;  // a scripted contrib_view= selects its tab
  if (!ImGui::BeginTabBar("contrib views")) return;
  auto tab = [&](const char* label, ContribView v) {
    const bool open = ImGui::BeginTabItem(label, nullptr, switch_tab && s.contrib.view == v ? ImGuiTabItemFlags_SetSelected : 0);
    report_widget(s, label);
    if (open && !switch_tab) s.contrib.view = v;
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
  if (tab("Detectors", ContribView::Detectors)) {
    s.contrib.detectors_on = true;  // from now on the heads grid marks the heads above the threshold
    draw_detectors(s);
    ImGui::EndTabItem();
  }
  s.contrib.drawn = s.contrib.view;
  ImGui::EndTabBar();
}

}  // namespace headmap
