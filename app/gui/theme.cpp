// theme.cpp: the Dear ImGui style.
#include "app/gui/theme.h"

namespace headmap {

void apply_theme(bool light, float font_scale) {
  ImGuiStyle& st = ImGui::GetStyle();
  st = ImGuiStyle();
  if (light) ImGui::StyleColorsLight();
  else ImGui::StyleColorsDark();
  st.FrameRounding = 3.0f;
  st.GrabRounding = 3.0f;
  st.ChildRounding = 4.0f;
  st.WindowPadding = ImVec2(10, 8);
  st.ItemSpacing = ImVec2(8, 6);
  st.ScaleAllSizes(font_scale);
}

}  // namespace headmap
