// panel_ask_open.cpp: the question a file's model path asks before anything reads it
// (issue 35, F1). A view file names a model directory or checkpoint by its path; the path is
// shown, escaped (core/text/utf8.h printable), and read only on the person's Open.
#include <GLFW/glfw3.h>
#include <imgui.h>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "core/text/utf8.h"

namespace headmap {

void draw_ask_open_model(AppState& s, bool may_open) {
  static constexpr const char* kTitle = "Open the model this file names?";
  if (!s.ask_open_model) return;
  if (may_open && !ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) ImGui::OpenPopup(kTitle);
  if (!ImGui::BeginPopupModal(kTitle, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  hook_widget(kTitle);  // its title bar
  const AppState::AskOpenModel& a = *s.ask_open_model;
  const std::string question = printable(a.named_by, false) + " was saved on the model\n  " + printable(a.path, false) +
                               "\nheadmap reads it only if you open it. Open it?";
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36);
  ImGui::TextUnformatted(question.c_str());
  ImGui::PopTextWrapPos();
  hook::add_text("messages", question);
  const bool open = ImGui::Button("Open model");
  hook_widget("Open model");
  ImGui::SameLine();
  const bool not_now = ImGui::Button("Not now");
  hook_widget("Not now");
  if (open || not_now || ImGui::IsKeyPressed(GLFW_KEY_ESCAPE)) {
    answer_open_model(s, open);
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace headmap
