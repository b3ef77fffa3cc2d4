// panel_passport.cpp: the shape passport as a table: every tensor from the tokens to the
// output, symbolic and concrete, with FLOPs and bytes in the full view, and the parameter
// counts. Rows that changed at the last slider move are highlighted; the attention's
// parameter total is shown with its change, which for num_heads is always zero.
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <initializer_list>
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

// The table's columns, and the widest text of each (header included), measured once per
// result and font size.
enum PassportColumn { kStep, kFormula, kSymbolic, kConcrete, kFlops, kBytes, kNote, kPassportColumns };
struct PassportWidths {
  const void* fwd = nullptr;
  float font_size = 0;
  float w[kPassportColumns] = {};
  float symbolic_kv = 0;  // the symbolic column with kv_heads written KV
};

static std::string short_kv(std::string shape) {  // "(B, T, kv_heads·d_head)" -> "(B, T, KV·d_head)"
  for (size_t i; (i = shape.find("kv_heads")) != std::string::npos;) shape.replace(i, 8, "KV");
  return shape;
}

static const PassportWidths& passport_widths(const AppState& s, const Passport& p) {
  static PassportWidths c;  // the UI thread's
  if (c.fwd == s.result->fwd.get() && c.font_size == ImGui::GetFontSize()) return c;
  c = PassportWidths();
  c.fwd = s.result->fwd.get();
  c.font_size = ImGui::GetFontSize();
  auto wider = [](float& w, const std::string& t) { w = std::max(w, ImGui::CalcTextSize(t.c_str()).x); };
  const char* heads[] = {"step", "formula", "symbolic", "concrete", "FLOPs", "bytes", "note"};
  for (int i = 0; i < kPassportColumns; ++i) wider(c.w[i], heads[i]);
  c.symbolic_kv = c.w[kSymbolic];
  for (const ParamCount& pc : p.params) wider(c.w[kConcrete], grouped(pc.count));  // their counts, on a short screen
  wider(c.w[kConcrete], grouped(p.total_params));
  for (const PassportStep& st : p.steps) {
    wider(c.w[kStep], st.name);
    wider(c.w[kStep], st.section);
    wider(c.w[kFormula], st.formula);
    wider(c.w[kSymbolic], st.symbolic_str());
    wider(c.symbolic_kv, short_kv(st.symbolic_str()));
    wider(c.w[kConcrete], st.concrete_str());
    wider(c.w[kFlops], st.flops ? human_count(st.flops) : "-");
    wider(c.w[kBytes], st.view ? "view" : human_count(st.bytes));
    wider(c.w[kNote], st.note);
  }
  return c;
}

void draw_passport(AppState& s, bool full) {
  if (!s.result || !s.result->fwd) {
    // Nothing computed yet: say why when the model refused the request (or the config is invalid), never "Computing..." for good.
    const std::string& why = !s.compute_error.empty() ? s.compute_error : !s.config_status.ok() ? s.config_status.error().message : s.compute_error;
    if (why.empty()) {
      ImGui::TextDisabled("Computing...");
    } else {
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("Nothing to show: %s", why.c_str());
      ImGui::PopStyleColor();
    }
    return;
  }
  const Passport& p = s.result->fwd->passport;
  const Passport* prev = s.previous_passport ? &*s.previous_passport : nullptr;
  const ModelConfig& c = p.cfg;
  const float since = std::chrono::duration<float>(std::chrono::steady_clock::now() - s.changed_at).count();
  const float glow = prev ? std::max(0.0f, 1.0f - since / 4.0f) : 0.0f;  // highlight fades over 4 s

  if (!s.config_status.ok()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", s.config_status.error().message.c_str());
    ImGui::PopStyleColor();
    ImGui::TextDisabled("Below: the last valid configuration.");
  }
  if (c.kv_heads() < c.num_heads)  // KV: the shapes' short name for kv_heads when the panel is narrow
    ImGui::Text("B=%d  T=%d  D=%d  H=%d  KV=%d  d_head=%d  L=%d", p.B, p.T, c.d_model, c.num_heads, c.kv_heads(), c.d_head(), c.num_layers);
  else
    ImGui::Text("B=%d  T=%d  D=%d  H=%d  d_head=%d  L=%d", p.B, p.T, c.d_model, c.num_heads, c.d_head(), c.num_layers);
  if (!p.family.empty()) ImGui::TextWrapped("%s", p.family.c_str());  // the family's own steps (arch.h)
  if (!s.last_change.empty() && glow > 0) {
    same_line_if_fits(ImGui::CalcTextSize(("  " + s.last_change).c_str()).x);
    ImGui::PushTextWrapPos(0.0f);  // a change of several sliders at once (a lesson step) is long
    ImGui::TextColored(ImVec4(kChangedColour.x, kChangedColour.y, kChangedColour.z, 0.4f + 0.6f * glow), "  %s", s.last_change.c_str());
    ImGui::PopTextWrapPos();
    hook::set_text("passport_note", s.last_change);
  }
  text_disabled_wrapped_at_commas(s.result->fwd->source);
  // The K/V cache an incremental forward keeps: per token, for the context, and what K/V
  // sharing saves (core/inspect/passport.h).
  text_disabled_wrapped_at_commas(p.kv_cache_line);
  hook::set_text("passport_kv", p.kv_cache_line);
  // The weights as they are held: each group's type (a GGUF file's blocks stay blocks), bits
  // per weight and bytes (core/inspect/passport.h's weight_storage). Their own table; on a
  // short screen (the steps would get under 12 rows) rows at the end of the steps' table.
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float params_h = line * (p.params.size() + (p.kv_saved > 0 ? 5.5f : 4.5f));
  const bool storage_merged = ImGui::GetContentRegionAvail().y - line * (p.storage.size() + 1.5f) - params_h < line * 12;
  if (!p.storage.empty() && !storage_merged && ImGui::BeginTable("weights_storage", 4, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) {
    for (const char* h : {"weights", "type", "bits/weight", "bytes"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const WeightStorage& ws : p.storage) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn(), ImGui::TextUnformatted(ws.name.c_str());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(ws.type.c_str());
      ImGui::TableNextColumn(), ImGui::Text("%.2f", ws.bits_per_weight());
      ImGui::TableNextColumn(), ImGui::TextUnformatted(human_count(ws.bytes).c_str());
    }
    ImGui::EndTable();
  }

  // On a short screen (a projector at 1024x768 with large text) the parameter counts join
  // the table as its last section, so the steps get the height instead of a few rows.
  const float avail = ImGui::GetContentRegionAvail().y;
  const bool merged = avail - params_h < line * 12;
  // The columns that fit the panel's width, with no horizontal scrollbar: step and the two
  // shapes always; the note gives way first, then FLOPs and bytes, then the formula (which
  // the step's tooltip then shows); then "kv_heads" is written KV in the shapes.
  const PassportWidths& cw = passport_widths(s, p);
  const ImGuiStyle& sty = ImGui::GetStyle();
  const float room = ImGui::GetContentRegionAvail().x - sty.ScrollbarSize - 2;
  auto need = [&](std::initializer_list<int> cols, bool kv_short) {
    float w = 0;
    for (int c : cols) w += (c == kSymbolic && kv_short ? cw.symbolic_kv : cw.w[c]) + sty.CellPadding.x * 2 + 1;
    return w;
  };
  bool show_formula = full, show_costs = full, show_note = full, kv_short = false;
  // The note takes the width left, cut with "…" (whole in the step's tooltip), when that is
  // at least a few words.
  float note_w = cw.w[kNote];
  if (show_note && need({kStep, kFormula, kSymbolic, kConcrete, kFlops, kBytes, kNote}, false) > room) {
    note_w = room - need({kStep, kFormula, kSymbolic, kConcrete, kFlops, kBytes}, false) - sty.CellPadding.x * 2 - 1;
    show_note = note_w >= ImGui::GetFontSize() * 8;
  }
  if (show_costs && need({kStep, kFormula, kSymbolic, kConcrete, kFlops, kBytes}, false) > room) show_costs = false;
  if (show_formula && need({kStep, kFormula, kSymbolic, kConcrete}, false) > room) show_formula = false;
  if (need({kStep, kSymbolic, kConcrete}, false) > room) kv_short = true;
  // The step column: its names wrap when even that is too wide (and the parameters' names,
  // in it on a short screen, wrap at its width).
  const float step_w = std::max(ImGui::GetFontSize() * 4, std::min(cw.w[kStep], cw.w[kStep] + room - need({kStep, kSymbolic, kConcrete}, kv_short)));
  const int ncols = 3 + show_formula + 2 * show_costs + show_note;
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit |
                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_NoSavedSettings;
  const float table_h = std::max(line * 6, avail - (merged ? line * (p.kv_saved > 0 ? 3.5f : 2.5f) : params_h));
  // One parameter row: the name (its formula on hover) and the count, in columns 0 and col.
  auto param_row = [&](const std::string& name, int64_t count, const std::string& formula, const ImVec4* colour, int col) {
    ImGui::TableNextRow();
    ImGui::TableSetColumnIndex(0);
    ImGui::PushTextWrapPos(0.0f);
    if (colour) ImGui::PushStyleColor(ImGuiCol_Text, *colour);
    ImGui::TextUnformatted(name.c_str());
    if (colour) ImGui::PopStyleColor();
    ImGui::PopTextWrapPos();
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
  hook::set_num("passport_table_h", table_h);
  hook::set_num("passport_right", ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x);
  if (ImGui::BeginTable("passport", ncols, flags, ImVec2(0, table_h))) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("step", ImGuiTableColumnFlags_WidthFixed, step_w);
    if (show_formula) ImGui::TableSetupColumn("formula");
    ImGui::TableSetupColumn("symbolic");
    ImGui::TableSetupColumn("concrete");
    if (show_costs) {
      ImGui::TableSetupColumn("FLOPs");
      ImGui::TableSetupColumn("bytes");
    }
    if (show_note) ImGui::TableSetupColumn("note", ImGuiTableColumnFlags_WidthFixed, note_w);
    // The header row, each header's place reported (the GUI tests check both shapes are in view).
    ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
    for (int i = 0; i < ncols; ++i) {
      if (!ImGui::TableSetColumnIndex(i)) continue;
      const char* name = ImGui::TableGetColumnName(i);
      ImGui::TableHeader(name);
      hook::add_text("passport_columns", name);
      hook::add_rect("passport_column_rects", ImVec2(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y), ImVec2(ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y));
    }
    std::string section;
    for (const PassportStep& st : p.steps) {
      if (st.section != section) {
        section = st.section;
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::PushStyleColor(ImGuiCol_Text, kAccentColour);
        ImGui::PushTextWrapPos(0.0f);
        ImGui::TextUnformatted(section.c_str());
        ImGui::PopTextWrapPos();
        ImGui::PopStyleColor();
      }
      ImGui::TableNextRow();
      const PassportStep* old = prev ? prev->find(st.id) : nullptr;
      const bool changed = prev && (!old || old->concrete != st.concrete || old->formula != st.formula);
      if (changed && glow > 0)
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, ImGui::GetColorU32(ImVec4(kChangedRowColour.x, kChangedRowColour.y, kChangedRowColour.z, 0.45f * glow)));
      int col = 0;
      ImGui::TableSetColumnIndex(col++);
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(st.name.c_str());
      ImGui::PopTextWrapPos();
      if (ImGui::IsItemHovered() && (!st.note.empty() || (full && (!show_formula || !show_costs)))) {
        // What the columns left out: the formula, the FLOPs and bytes, then the note.
        std::string tip = full && !show_formula ? st.formula : "";
        if (full && !show_costs)
          tip += (tip.empty() ? "" : "\n") + std::string("FLOPs ") + (st.flops ? human_count(st.flops) : "-") + ", " +
                 (st.view ? "a view (no bytes)" : "bytes " + human_count(st.bytes));
        if (!st.note.empty()) tip += (tip.empty() ? "" : "\n") + st.note;
        ImGui::SetTooltip("%s", tip.c_str());
      }
      if (show_formula) {
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.formula.c_str());
      }
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(kv_short ? short_kv(st.symbolic_str()).c_str() : st.symbolic_str().c_str());
      ImGui::TableSetColumnIndex(col++);
      ImGui::TextUnformatted(st.concrete_str().c_str());
      hook::add_text("passport_rows", st.id + " " + st.concrete_str());
      if (show_costs) {
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.flops ? human_count(st.flops).c_str() : "-");
        ImGui::TableSetColumnIndex(col++);
        ImGui::TextUnformatted(st.view ? "view" : human_count(st.bytes).c_str());
      }
      if (show_note) {
        ImGui::TableSetColumnIndex(col++);
        if (ImGui::CalcTextSize(st.note.c_str()).x <= note_w) {
          ImGui::TextDisabled("%s", st.note.c_str());
        } else {
          const char* stop = st.note.c_str();
          ImGui::GetFont()->CalcTextSizeA(ImGui::GetFontSize(), note_w - ImGui::CalcTextSize("\xE2\x80\xA6").x, 0.0f, st.note.c_str(),
                                          nullptr, &stop);
          ImGui::TextDisabled("%s\xE2\x80\xA6", std::string(st.note.c_str(), stop).c_str());
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", st.note.c_str());
        }
      }
    }
    if (merged) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextColored(kAccentColour, "parameters");  // their names wrap in the step column
      const bool top_seen = ImGui::IsItemVisible();
      // A lesson's text points at them: at the table's top. The request stays until the result
      // shown is the step's own (a step that changes the model shows the step before's passport
      // until its forward lands, and a scroll made then lands on the old rows).
      if (s.show.params) ImGui::SetScrollHereY(0.0f), s.show.params = s.stale;
      param_rows(show_formula ? 3 : 2);  // counts in the concrete column
      hook::set_flag("passport_params_visible", top_seen && ImGui::IsItemVisible());
    }
    if (storage_merged && !p.storage.empty()) {
      ImGui::TableNextRow();
      ImGui::TableSetColumnIndex(0);
      ImGui::TextColored(kAccentColour, "weights held");
      for (const WeightStorage& ws : p.storage) {
        ImGui::TableNextRow();
        ImGui::TableSetColumnIndex(0);
        ImGui::TextUnformatted(ws.name.c_str());
        ImGui::TableSetColumnIndex(show_formula ? 3 : 2);  // type, bits per weight and bytes in the concrete column
        ImGui::TextWrapped("%s  %.2f bits  %s", ws.type.c_str(), ws.bits_per_weight(), human_count(ws.bytes).c_str());  // within the column
      }
    }
    ImGui::EndTable();
  }

  // Parameters: the attention total does not move with H.
  if (!merged) {
    ImGui::Spacing();
    ImGui::TextUnformatted("Parameters");
    const bool top_seen = ImGui::IsItemVisible();
    bool end_seen = false;
    if (ImGui::BeginTable("params", 2, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_NoSavedSettings)) {
      param_rows(1);
      end_seen = ImGui::IsItemVisible();
      ImGui::EndTable();
    }
    if (s.show.params) ImGui::SetScrollHereY(1.0f), s.show.params = s.stale;  // as above
    hook::set_flag("passport_params_visible", top_seen && end_seen);
  }
  hook::set_int("attention_params", p.attention_params);
  if (p.kv_saved > 0) {
    ImGui::PushStyleColor(ImGuiCol_Text, kAccentColour);
    ImGui::TextWrapped("K/V sharing saves %s parameters (%.0f%% of multi-head attention's)", grouped(p.kv_saved).c_str(),
                       100.0 * p.kv_saved / (p.attention_params + p.kv_saved));
    ImGui::PopStyleColor();
  }
  if (prev && glow > 0) {
    const int64_t d = p.attention_params - prev->attention_params;
    if (d == 0 && prev->cfg.num_heads != c.num_heads)
      ImGui::TextColored(kUnchangedColour, "attention parameters: unchanged (H %d \xE2\x86\x92 %d)", prev->cfg.num_heads, c.num_heads);
    else if (d != 0) {  // "132,096 -> 16,384 (-115,712)": a bare "-115712" read as a count
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextColored(kChangedColour, "attention parameters: %s \xE2\x86\x92 %s (%s%s)", grouped(prev->attention_params).c_str(),
                         grouped(p.attention_params).c_str(), d > 0 ? "+" : "\xE2\x88\x92", grouped(d > 0 ? d : -d).c_str());
      ImGui::PopTextWrapPos();
    }
  } else {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("%s", p.attention_formula.c_str());  // from the core, with W_O off and K/V sharing
    ImGui::PopTextWrapPos();
  }
}

}  // namespace headmap
