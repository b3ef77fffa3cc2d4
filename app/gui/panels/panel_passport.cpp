// panel_passport.cpp: the shape passport as a table: every tensor from the tokens to the
// output, symbolic and concrete, with FLOPs and bytes in the full view, and the parameter
// counts. Rows that changed at the last slider move are highlighted; the attention's
// parameter total is shown with its change, which for num_heads is always zero.
#include <imgui.h>

#include <chrono>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"

namespace headmap {

static std::string grouped(int64_t v) {  // 1050624 -> "1,050,624"
  std::string d = std::to_string(v), out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return out;
}

void draw_passport(AppState& s, bool full) {
  if (!s.result || !s.result->fwd) {
    ImGui::TextDisabled("Computing...");
    return;
  }
  const Passport& p = s.result->fwd->passport;
  const Passport* prev = s.previous && s.previous->fwd ? &s.previous->fwd->passport : nullptr;
  const ModelConfig& c = p.cfg;
  const float since = std::chrono::duration<float>(std::chrono::steady_clock::now() - s.changed_at).count();
  const float glow = prev ? std::max(0.0f, 1.0f - since / 4.0f) : 0.0f;  // highlight fades over 4 s

  if (!s.config_status.ok()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", s.config_status.error().message.c_str());
    ImGui::PopStyleColor();
    ImGui::TextDisabled("Below: the last valid configuration.");
  }
  ImGui::Text("B=%d  T=%d  D=%d  H=%d  d_head=%d  L=%d", p.B, p.T, c.d_model, c.num_heads, c.d_head(), c.num_layers);
  if (!s.last_change.empty() && glow > 0) {
    same_line_if_fits(ImGui::CalcTextSize(("  " + s.last_change).c_str()).x);
    ImGui::PushTextWrapPos(0.0f);  // a change of several sliders at once (a lesson step) is long
    ImGui::TextColored(ImVec4(kChangedColour.x, kChangedColour.y, kChangedColour.z, 0.4f + 0.6f * glow), "  %s", s.last_change.c_str());
    ImGui::PopTextWrapPos();
  }
  text_disabled_wrapped_at_commas(s.result->fwd->source);

  const int ncols = full ? 7 : 3;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_NoSavedSettings | (full ? ImGuiTableFlags_ScrollX : 0);
  // On a short screen (a projector at 1024x768 with large text) the parameter counts join
  // the table as its last section, so the steps get the height instead of a few rows.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float avail = ImGui::GetContentRegionAvail().y;
  const float params_h = line * (p.params.size() + (p.kv_saved > 0 ? 5.5f : 4.5f));
  const bool merged = avail - params_h < line * 12;
  const float table_h = std::max(line * 6, avail - (merged ? line * (p.kv_saved > 0 ? 3.5f : 2.5f) : params_h));
  // One parameter row: the name (its formula on hover) and the count, in columns 0 and col.
  auto param_row = [&](const std::string& name, int64_t count, const std::string& formula, const ImVec4* colour, int col) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    if (colour) ImGui::TextColored(*colour, "%s", name.c_str());
    else ImGui::TextUnformatted(name.c_str());
    if (!formula.empty() && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", formula.c_str());
    ImGui::TableSetColumnIndex(col);
    if (colour) ImGui::TextColored(*colour, "%s", grouped(count).c_str());
    else ImGui::TextUnformatted(grouped(count).c_str());
  };
  auto param_rows = [&](int col) {
    for (const ParamCount& pc : p.params) param_row(pc.name, pc.count, pc.formula, nullptr, col);
    param_row("attention total", p.attention_params, "", &kAccentColour, col);
    param_row("model total", p.total_params, "", nullptr, col);
  };
  s.report.passport_table_h = table_h;
  if (ImGui::BeginTable("passport", ncols, flags, ImVec2(0, table_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("step");
    if (full) ImGui::TableSetupColumn("formula");
    ImGui::TableSetupColumn("symbolic");
    ImGui::TableSetupColumn("concrete");
    if (full) {
      ImGui::TableSetupColumn("FLOPs");
      ImGui::TableSetupColumn("bytes");
      ImGui::TableSetupColumn("note");
    }
    ImGui::TableHeadersRow();
    std::string section;
    for (const PassportStep& st : p.steps) {
      if (st.section != section) {
        section = st.section;
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextColored(kAccentColour, "%s", section.c_str());
      }
      ImGui::TableNextRow();
      const PassportStep* old = prev ? prev->find(st.id) : nullptr;
      const bool changed = prev && (!old || old->concrete != st.concrete || old->formula != st.formula);
      if (changed && glow > 0)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, ImGui::GetColorU32(ImVec4(kChangedRowColour.x, kChangedRowColour.y, kChangedRowColour.z, 0.45f * glow)));
      int col = 0;
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(st.name.c_str());
      if (ImGui::IsItemHovered() && !st.note.empty()) ImGui::SetTooltip("%s", st.note.c_str());
      if (full) {
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.formula.c_str());
      }
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(st.symbolic_str().c_str());
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(st.concrete_str().c_str());
      s.report.passport_rows.push_back(st.id + " " + st.concrete_str());
      if (full) {
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.flops ? human_count(st.flops).c_str() : "-");
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.view ? "view" : human_count(st.bytes).c_str());
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextDisabled("%s", st.note.c_str());
      }
    }
    if (merged) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextColored(kAccentColour, "parameters");
      param_rows(full ? 3 : 2);  // counts in the concrete column
    }
    ImGui::EndTable();
  }

  // Parameters: the attention total does not move with H.
  if (!merged) {
    ImGui::Spacing();
    ImGui::TextUnformatted("Parameters");
    if (ImGui::BeginTable("params", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_NoSavedSettings)) {
      param_rows(1);
      ImGui::EndTable();
    }
  }
  s.report.attention_params = p.attention_params;
  if (p.kv_saved > 0) {
    ImGui::PushTextWrapPos(0.0f);  // narrow columns (a projector's 1024 px at 1.5x text) wrap it
    ImGui::TextColored(kAccentColour, "K/V sharing saves %s parameters (%.0f%% of multi-head attention's)", grouped(p.kv_saved).c_str(),
                       100.0 * p.kv_saved / (p.attention_params + p.kv_saved));
    ImGui::PopTextWrapPos();
  }
  if (prev && glow > 0) {
    const int64_t d = p.attention_params - prev->attention_params;
    if (d == 0 && prev->cfg.num_heads != c.num_heads)
      ImGui::TextColored(kUnchangedColour, "attention parameters: unchanged (H %d \xE2\x86\x92 %d)", prev->cfg.num_heads, c.num_heads);
    else if (d != 0)
      ImGui::TextColored(kChangedColour, "attention parameters: %+lld", static_cast<long long>(d));
  } else {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", p.attention_formula.c_str());  // from the core, with W_O off and K/V sharing
    ImGui::PopTextWrapPos();
  }
}

}  // namespace headmap
