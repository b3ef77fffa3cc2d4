// panel_sentence.cpp: the text box (one sentence per line = the batch), the token chips
// that show exactly how the model split the text, and the chapters' preset sentences.
#include <imgui.h>
#include <imgui_stdlib.h>

#include "app/gui/panels/panels.h"
#include "app/gui/presets.h"
#include "app/gui/ui_widgets.h"
#include "core/inspect/metrics.h"

namespace headmap {

// One token as a small framed chip; returns true while hovered.
static bool token_chip(const std::string& label, bool continues, bool highlighted, bool padded_view) {
  const ImVec2 pad(6, 3);
  const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
  const ImVec2 size(ts.x + pad.x * 2, ts.y + pad.y * 2);
  if (ImGui::GetContentRegionAvail().x < size.x) ImGui::NewLine();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(label.c_str(), size);
  const bool hovered = ImGui::IsItemHovered();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 fill = highlighted || hovered ? IM_COL32(255, 140, 70, 255) : continues ? IM_COL32(70, 90, 120, 255) : IM_COL32(52, 70, 100, 255);
  dl->AddRectFilled(p, ImVec2(p.x + size.x, p.y + size.y), fill, 4.0f);
  dl->AddText(ImVec2(p.x + pad.x, p.y + pad.y), highlighted || hovered ? IM_COL32(20, 20, 20, 255) : IM_COL32(235, 235, 240, 255),
              label.c_str());
  (void)padded_view;
  ImGui::SameLine(0, continues ? 1.0f : 4.0f);  // sub-word pieces sit close to their word
  return hovered;
}

void draw_sentence(AppState& s, const Presets& presets) {
  ImGui::TextUnformatted("Sentence");
  ImGui::SameLine();
  ImGui::TextDisabled("(one per line: B)");
  ImGui::SameLine(ImGui::GetContentRegionAvail().x + ImGui::GetCursorPosX() - ImGui::CalcTextSize("Presets \xE2\x96\xBE").x -
                  ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Presets \xE2\x96\xBE")) ImGui::OpenPopup("presets");
  if (ImGui::BeginPopup("presets")) {
    for (const Preset& p : presets.items) {
      if (ImGui::Selectable(p.name.c_str())) {
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
  const float lines = 3.3f;
  if (s.focus_text) {
    ImGui::SetKeyboardFocusHere();
    s.focus_text = false;
  }
  ImGui::InputTextMultiline("##text", &s.text, ImVec2(-1, ImGui::GetTextLineHeight() * lines + ImGui::GetStyle().FramePadding.y * 2));

  // Token chips, from the result on screen: exactly what the model attends over.
  if (!s.result || !s.result->fwd) return;
  const Batch& batch = s.result->fwd->batch;
  int hovered = -1;
  for (int b = 0; b < batch.B(); ++b) {
    const std::vector<std::string>& labels = s.result->fwd->labels[b];
    if (b == 0) s.report.tokens = labels;
    if (batch.B() > 1) {
      ImGui::TextDisabled("%d:", b);
      ImGui::SameLine();
    }
    ImGui::PushID(b);
    for (size_t t = 0; t < labels.size(); ++t) {
      ImGui::PushID(static_cast<int>(t));
      const bool cont = batch.sentences[b].tokens[t].continues;
      if (token_chip(labels[t], cont, b == s.view.batch && static_cast<int>(t) == s.hover_token, false) && b == s.view.batch)
        hovered = static_cast<int>(t);
      ImGui::PopID();
    }
    ImGui::PopID();
    ImGui::NewLine();
  }
  if (hovered >= 0) s.hover_token = hovered;
  ImGui::TextDisabled("%d token%s x %d sentence%s, %s tokenizer", batch.T, batch.T == 1 ? "" : "s", batch.B(),
                      batch.B() == 1 ? "" : "s", tokenizer_name(batch.tokenizer));
  for (const std::string& note : batch.notes()) {
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
