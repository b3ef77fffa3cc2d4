// panel_lesson.cpp: the lesson player, a strip under the views: the step's text, "step 4
// of 12", Back, Next and Reveal. Moving between steps (buttons, PageUp/PageDown, the arrows)
// goes through go_to_lesson_step (lessons.h), which sets the whole state of the step.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "app/gui/lessons.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "core/text/utf8.h"

namespace headmap {
namespace {

std::string step_label(const AppState& s) {
  return "step " + std::to_string(s.lesson.step + 1) + " of " + std::to_string(s.lesson.lesson->steps.size());
}

// The lines of text under the buttons, for the panel's height and its drawing alike.
struct Body {
  std::string heading, text, question, reveal, note;
};
Body body_of(const AppState& s) {
  const Lesson& l = *s.lesson.lesson;
  const LessonStep& st = l.steps[s.lesson.step];
  // A lesson file's text is drawn escaped: a control character or a bidi override (U+202E
  // reversed a title) shows as \u{202e}, never acts (issue 35, F11).
  Body b;
  b.heading = printable(l.title + ": " + st.title);
  b.text = printable(st.text);
  b.note = lesson_note(st);  // quieter, on a line of its own
  if (!st.question.empty()) b.question = printable(st.question);
  if (s.lesson.revealed && !st.reveal.empty()) b.reveal = printable(st.reveal);
  return b;
}

}  // namespace

float lesson_panel_height(const AppState& s, float width) {
  if (!s.lesson.open()) return 0;
  const ImGuiStyle& st = ImGui::GetStyle();
  const float wrap = std::max(1.0f, width - 2 * st.WindowPadding.x - st.ScrollbarSize);
  const Body b = body_of(s);
  float h = ImGui::GetFrameHeightWithSpacing() + 2 * st.WindowPadding.y;  // the buttons
  for (const std::string* t : {&b.heading, &b.text, &b.note, &b.question, &b.reveal})
    if (!t->empty()) h += ImGui::CalcTextSize(t->c_str(), nullptr, false, wrap).y + st.ItemSpacing.y;
  if (lesson_controls_taken(s)) h += ImGui::GetFrameHeightWithSpacing() * 2;
  return h;
}

void draw_lesson(AppState& s, bool status_lines) {
  if (!s.lesson.open()) return;
  const Lesson& l = *s.lesson.lesson;
  const int n = static_cast<int>(l.steps.size());
  const LessonStep& st = l.steps[s.lesson.step];
  const ImVec2 p = ImGui::GetWindowPos(), sz = ImGui::GetWindowSize();
  hook::set_rect("lesson/panel", ImVec2(p.x, p.y), ImVec2(p.x + sz.x, p.y + sz.y));
  const std::string label = step_label(s);
  hook::set_text("lesson/shown", label);
  hook::set_text("lesson/title", printable(st.title));
  hook::set_flag("lesson/revealed", s.lesson.revealed);

  int go = -1;
  // The buttons side by side while they fit (a strip), else on the next line (a column).
  auto button_w = [](const char* l) { return ImGui::CalcTextSize(l, nullptr, true).x + 2 * ImGui::GetStyle().FramePadding.x; };
  ImGui::BeginDisabled(s.lesson.step == 0);
  if (ImGui::Button("\xE2\x97\x80 Back")) go = s.lesson.step - 1;
  ImGui::EndDisabled();
  same_line_if_fits(button_w("Next \xE2\x96\xB6"));
  ImGui::BeginDisabled(s.lesson.step + 1 >= n);
  if (ImGui::Button("Next \xE2\x96\xB6")) go = s.lesson.step + 1;
  ImGui::EndDisabled();
  if (!st.reveal.empty()) {
    const char* reveal = s.lesson.revealed ? "Hide answer" : "Reveal";
    same_line_if_fits(button_w(reveal));
    if (ImGui::Button(reveal)) {
      s.lesson.revealed = !s.lesson.revealed;
      s.lesson.scroll_to_answer = s.lesson.revealed;
    }
  }
  same_line_if_fits(button_w("Close lesson"));
  if (ImGui::Button("Close lesson")) {
    close_lesson(s);
    return;
  }
  // "step 4 of 12" beside the buttons when it fits, else on a line of its own.
  const float w = ImGui::CalcTextSize(label.c_str()).x;
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < w) ImGui::NewLine();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label.c_str());

  // The newest status lines ("Wrote 9 slides to ...") under the text, when the sentence
  // column that shows them is a tab away.
  const size_t first = s.status_lines.size() > kStatusLinesShown ? s.status_lines.size() - kStatusLinesShown : 0;
  float status_h = 0;
  if (status_lines && !s.status_lines.empty()) {
    const float wrap = ImGui::GetContentRegionAvail().x;
    for (size_t i = first; i < s.status_lines.size(); ++i)
      status_h += ImGui::CalcTextSize(s.status_lines[i].c_str(), nullptr, false, wrap).y + ImGui::GetStyle().ItemSpacing.y;
    status_h = std::min(status_h + ImGui::GetStyle().ItemSpacing.y * 2, ImGui::GetContentRegionAvail().y * 0.4f);
  }
  // The text scrolls under the buttons, which stay in view.
  ImGui::BeginChild("lesson_text", ImVec2(0, -status_h), false);
  const Body b = body_of(s);
  hook::set_text("lesson/note", b.note);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::PushStyleColor(ImGuiCol_Text, kAccentColour);
  ImGui::TextUnformatted(b.heading.c_str());
  ImGui::PopStyleColor();
  ImGui::TextUnformatted(b.text.c_str());
  if (!b.note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextUnformatted(b.note.c_str());
    ImGui::PopStyleColor();
  }
  if (!b.question.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kChangedColour);
    ImGui::TextUnformatted(b.question.c_str());
    ImGui::PopStyleColor();
  }
  if (!b.reveal.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kUnchangedColour);
    ImGui::TextUnformatted(b.reveal.c_str());
    ImGui::PopStyleColor();
    if (s.lesson.scroll_to_answer) {  // the answer in view, even when the strip scrolls
      ImGui::SetScrollHereY(1.0f);
      s.lesson.scroll_to_answer = false;
    }
  }
  if (lesson_controls_taken(s)) {
    ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
    ImGui::TextUnformatted("You have the controls. Restore (or Next) brings back the lesson's state.");
    ImGui::PopStyleColor();
    if (ImGui::Button("Restore this step")) go = s.lesson.step;
  }
  ImGui::PopTextWrapPos();
  ImGui::EndChild();
  if (status_h > 0) {
    ImGui::Separator();
    ImGui::BeginChild("lesson_status", ImVec2(0, 0), false);
    for (size_t i = first; i < s.status_lines.size(); ++i) {
      ImGui::TextWrapped("%s", s.status_lines[i].c_str());
      hook::add_text("messages", s.status_lines[i]);
    }
    ImGui::EndChild();
  }
  if (go >= 0) {
    if (Status r = go_to_lesson_step(s, go); !r) s.error_popup = r.error().message;
  }
}

}  // namespace headmap
