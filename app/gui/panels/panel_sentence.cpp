// panel_sentence.cpp: the text box (one sentence per line = the batch), the token chips
// that show exactly how the model split the text, and the chapters' preset sentences.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/presets.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "core/inspect/metrics.h"

namespace headmap {

// One token as a small framed chip; returns true while hovered (*clicked when clicked).
static bool token_chip(const std::string& label, bool continues, bool highlighted, bool selected, bool* clicked) {
  const ImVec2 pad(6, 3);
  const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
  const ImVec2 size(ts.x + pad.x * 2, ts.y + pad.y * 2);
  if (ImGui::GetContentRegionAvail().x < size.x + 4) ImGui::NewLine();  // with the spacing after it
  const ImVec2 p = ImGui::GetCursorScreenPos();
  *clicked = ImGui::InvisibleButton(label.c_str(), size);
  const bool hovered = ImGui::IsItemHovered();
  if (!ImGui::IsItemVisible()) {  // scrolled out of the chips' box: nothing to draw
    ImGui::SameLine(0, continues ? 1.0f : 4.0f);
    return false;
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 fill = highlighted || hovered ? IM_COL32(255, 140, 70, 255) : continues ? IM_COL32(70, 90, 120, 255) : IM_COL32(52, 70, 100, 255);
  dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), fill, 4.0f);
  dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y), highlighted || hovered ? IM_COL32(20, 20, 20, 255) : IM_COL32(235, 235, 240, 255),
              label.c_str());
  if (selected) dl->AddRect(ImVec2(p.x - 1, p.y - 1), ImVec2(p.x + size.x + 1, p.y + size.y + 1), IM_COL32(255, 200, 90, 255), 4.0f, 0, 2.0f);
  ImGui::SameLine(0, continues ? 1.0f : 4.0f);  // sub-word pieces sit close to their word
  return hovered;
}

void draw_sentence(AppState& s, const Presets& presets) {
  // "Sentence (one per line: B)" and the Presets button on one line when they fit, else the
  // hint goes under the title: they never overlap.
  const char* hint = "(one per line: B)";
  const char* presets_label = "Presets \xE2\x96\xBE";
  const ImGuiStyle& st = ImGui::GetStyle();
  const float button_w = ImGui::CalcTextSize(presets_label).x + st.FramePadding.x * 2;
  const float line_w = ImGui::GetContentRegionAvail().x;
  const bool hint_fits = ImGui::CalcTextSize("Sentence").x + ImGui::CalcTextSize(hint).x + button_w + st.ItemSpacing.x * 3 <= line_w;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Sentence");
  if (hint_fits) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", hint);
  }
  ImGui::SameLine(std::max(ImGui::GetCursorPosX(), ImGui::GetCursorPosX() + ImGui::GetContentRegionAvail().x - button_w));
  if (ImGui::Button(presets_label)) ImGui::OpenPopup("presets");
  if (ImGui::BeginPopup("presets")) {
    for (const Preset& p : presets.items) {
      if (ImGui::Selectable(preset_menu_label(p).c_str())) {
        if (p.text == "@induction-probe") {  // drawn from the model's own vocabulary
          const ModelWeights none;  // untrained: probe words from the built-in list
          const ModelWeights* w = s.result && s.result->fwd ? s.result->fwd->weights.get() : &none;
          s.text = make_induction_probe(s.cfg, *w, 20, s.cfg.seed).text;
        } else {
          s.text = p.text;
        }
      }
      if (ImGui::IsItemHovered() && !p.note.empty()) ImGui::SetTooltip("%s", p.note.c_str());
    }
    ImGui::EndPopup();
  }
  if (!hint_fits) ImGui::TextDisabled("%s", hint);
  const float lines = 3.3f;
  if (s.focus_text) {
    ImGui::SetKeyboardFocusHere();
    s.focus_text = false;
  }
  ImGui::InputTextMultiline("##text", &s.text, ImVec2(-1, ImGui::GetTextLineHeight() * lines + ImGui::GetStyle().FramePadding.y * 2));
}

void draw_sentence_tokens(AppState& s) {
  // Token chips, from the result on screen: exactly what the model attends over.
  if (!s.result || !s.result->fwd) return;
  const ImGuiStyle& st = ImGui::GetStyle();
  const ForwardData& f = *s.result->fwd;
  const Batch& batch = f.batch;
  int hovered = -1;
  // The chips scroll in a box of at most kChipRowsShown rows, so a long text never pushes
  // the controls off screen. Its height: the rows the chips wrap into at this width.
  const float chip_h = ImGui::GetTextLineHeight() + 6 + st.ItemSpacing.y;
  const float box_w = ImGui::GetContentRegionAvail().x - st.ScrollbarSize - st.WindowPadding.x;
  float rows = 0, x = box_w;
  for (int b = 0; b < batch.B(); ++b, x = box_w)
    for (const std::string& l : f.labels[b]) {
      const float w = ImGui::CalcTextSize(l.c_str()).x + 12 + 4;
      if (x + w > box_w) rows += 1, x = 0;
      x += w;
    }
  const float box_h = std::min(std::min(rows + 0.25f, kChipRowsShown) * chip_h, ImGui::GetMainViewport()->WorkSize.y * kChipBoxMaxShare) +
                      st.WindowPadding.y;
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0, st.WindowPadding.y * 0.5f));
  ImGui::BeginChild("chips", ImVec2(0, box_h), false);
  s.report.chips_box_h = box_h;
  for (int b = 0; b < batch.B(); ++b) {
    const std::vector<std::string>& labels = f.labels[b];
    if (b == 0) s.report.tokens = labels;
    if (batch.B() > 1) {
      ImGui::TextDisabled("%d:", b);
      ImGui::SameLine();
    }
    ImGui::PushID(b);
    for (size_t t = 0; t < labels.size(); ++t) {
      ImGui::PushID(static_cast<int>(t));
      const bool cont = batch.sentences[b].tokens[t].continues, mine = b == s.view.batch;
      bool clicked = false;
      if (token_chip(labels[t], cont, mine && static_cast<int>(t) == s.hover_token, mine && static_cast<int>(t) == s.selected_token,
                     &clicked) && mine)
        hovered = static_cast<int>(t);
      if (clicked) {  // select this sentence and position: its next-token predictions stay shown
        s.view.batch = b;
        s.selected_token = static_cast<int>(t);
      }
      ImGui::PopID();
    }
    ImGui::PopID();
    ImGui::NewLine();
  }
  ImGui::EndChild();
  ImGui::PopStyleVar();
  if (hovered >= 0) s.hover_token = hovered;
  char count[128];
  std::snprintf(count, sizeof count, "%d token%s x %d sentence%s, %s tokenizer", batch.T, batch.T == 1 ? "" : "s", batch.B(),
                batch.B() == 1 ? "" : "s", tokenizer_name(batch.tokenizer));
  text_disabled_wrapped(count);
  for (const std::string& note : batch.notes(f.weights->trained() ? f.weights->context : 0)) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.75f, 0.3f, 1.0f));
    ImGui::TextWrapped("%s", note.c_str());
    ImGui::PopStyleColor();
    s.report.messages.push_back(note);
  }
  if (batch.empty()) {
    const char* msg = "Nothing to attend over: type a sentence, or pick one from Presets.";
    ImGui::TextWrapped("%s", msg);
    s.report.messages.push_back(msg);
  }
}

}  // namespace headmap
