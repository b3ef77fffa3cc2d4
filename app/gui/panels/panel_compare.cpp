// panel_compare.cpp: a pitfall beside the correct model. The same text, layer and sentence
// run twice (the worker's baseline has every pitfall off); both sets of heads are drawn on
// one shared colour scale, side by side or as an A/B toggle, with each head's entropy
// change and the passport rows the pitfall changes. A comparison's point is often a change
// of scale (√D flattens every head), which per-head colours would hide: this panel always
// uses the shared scale and says so.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <string>

#include "app/gui/glyphs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/glyphs.h"

namespace headmap {

namespace {

// The pitfalls switched on, by their labels: "scale by sqrt(D)".
std::string pitfall_names(const Pitfalls& p) {
  std::string out;
  for (const PitfallInfo& i : pitfall_list())
    if (p.*(i.flag)) out += (out.empty() ? "" : " + ") + std::string(i.label);
  return out;
}

// The passport rows whose formula, shape or note the pitfall changes, as "name: correct -> pitfall".
// With two models (`two_models`), a row only one side has is "only in A" or "only in B".
std::vector<std::string> changed_rows(const Passport& pit, const Passport& ok, bool two_models) {
  std::vector<std::string> rows;
  for (const PassportStep& a : pit.steps) {
    const PassportStep* b = ok.find(a.id);
    if (!b) {
      rows.push_back(a.name + (two_models ? ": only in A, " : ": only with the pitfall, ") + a.formula + " " + a.concrete_str());
      continue;
    }
    // What changed, on both sides of the arrow: the formula and shape, or, when only the
    // note changed (the reversed mask's visible keys), the note.
    if (a.formula != b->formula || a.concrete_str() != b->concrete_str())
      rows.push_back(a.name + ": " + b->formula + " " + b->concrete_str() + "  \xE2\x86\x92  " + a.formula + " " + a.concrete_str());
    else if (a.note != b->note)
      rows.push_back(a.name + " (" + a.formula + "): " + (b->note.empty() ? "no note" : b->note) + "  \xE2\x86\x92  " +
                     (a.note.empty() ? "no note" : a.note));
  }
  for (const PassportStep& b : ok.steps)
    if (!pit.find(b.id)) rows.push_back(b.name + (two_models ? ": only in B (" : ": gone with the pitfall (") + b.formula + ")");
  if (pit.attention_params != ok.attention_params)
    rows.push_back("attention parameters: " + human_count(ok.attention_params) + "  \xE2\x86\x92  " + human_count(pit.attention_params));
  return rows;
}

// A head's entropy as the tab compares it: in nats, or normalised (each row's entropy over
// ln of the keys it sees, metrics.h's entropy_norm) when the sides cut the text into
// different token counts, where nats would compare rows of different lengths.
float head_entropy(const ForwardData& f, int layer, int batch, int h, bool normalised) {
  const HeadMetrics& m = f.metrics[(static_cast<size_t>(layer) * f.out.B + batch) * f.out.Hw + h];
  return normalised ? m.entropy_norm : m.entropy;
}

// Each head's entropy change against the same head of the other side, largest first, as
// "head 0 -0.91", over the heads both sides have; the mean alone hides a pitfall that
// sharpens one head and flattens another (the interleaved view). Empty when either side has
// a single head (head averaging) or the layer is missing on one side.
std::string per_head_changes(const ForwardData& pit, const ForwardData& ok, int layer, int batch, bool normalised, float* largest) {
  *largest = 0;
  const int n = std::min(pit.out.Hw, ok.out.Hw);
  if (n < 2 || layer >= pit.out.L || layer >= ok.out.L) return "";
  std::vector<std::pair<float, int>> d;
  for (int h = 0; h < n; ++h) d.push_back({head_entropy(pit, layer, batch, h, normalised) - head_entropy(ok, layer, batch, h, normalised), h});
  std::stable_sort(d.begin(), d.end(), [](auto x, auto y) { return std::fabs(x.first) > std::fabs(y.first); });
  *largest = std::fabs(d[0].first);
  std::string out = "Per head:";
  const size_t shown = std::min<size_t>(d.size(), 8);
  for (size_t k = 0; k < shown; ++k) {
    char one[40];
    std::snprintf(one, sizeof one, "%s head %d %+.2f", k ? "," : "", d[k].second, d[k].first);
    out += one;
  }
  if (shown < d.size()) out += ", ... (" + std::to_string(d.size() - shown) + " more, smaller)";
  return out;
}

float mean_entropy(const ForwardData& f, int layer, int batch, bool normalised) {
  if (layer >= f.out.L || f.out.Hw == 0) return 0.0f;
  float sum = 0;
  for (int h = 0; h < f.out.Hw; ++h) sum += head_entropy(f, layer, batch, h, normalised);
  return sum / f.out.Hw;
}

}  // namespace

namespace {
// B: the correct model beside a pitfall, or any other weights (issue 28). Returns B's label
// when it is another model, "" for the correct model.
void draw_b_choice(AppState& s) {
  CompareSource& c = s.compare_b;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("B");
  ImGui::SameLine();
  auto kind_name = [&](CompareKind k, int shipped) -> std::string {
    switch (k) {
      case CompareKind::Correct: return "the correct model (A without its pitfall)";
      case CompareKind::OtherHeads: return "A's model with another num_heads";
      case CompareKind::Shipped:
        return shipped < static_cast<int>(s.shipped.size()) ? "shipped " + std::filesystem::path(s.shipped[shipped].path).stem().string() : "shipped";
      case CompareKind::File: return "a model directory or file";
    }
    return "";
  };
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 18));
  if (ImGui::BeginCombo("##compare b", kind_name(c.kind, c.shipped).c_str())) {
    for (CompareKind k : {CompareKind::Correct, CompareKind::OtherHeads}) {
      const std::string n = kind_name(k, 0);
      if (ImGui::Selectable(n.c_str(), c.kind == k)) c.kind = k;
      hook_widget(n.c_str());
    }
    for (int i = 0; i < static_cast<int>(s.shipped.size()); ++i) {
      const std::string n = kind_name(CompareKind::Shipped, i);
      if (ImGui::Selectable(n.c_str(), c.kind == CompareKind::Shipped && c.shipped == i)) c.kind = CompareKind::Shipped, c.shipped = i;
      hook_widget(n.c_str());
    }
    const std::string n = kind_name(CompareKind::File, 0);
    if (ImGui::Selectable(n.c_str(), c.kind == CompareKind::File)) c.kind = CompareKind::File;
    hook_widget(n.c_str());
    ImGui::EndCombo();
  }
  hook_widget("compare b");
  if (c.kind == CompareKind::OtherHeads) {
    same_line_if_fits(ImGui::GetFontSize() * 12);
    ImGui::TextUnformatted("num_heads");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    if (ImGui::InputInt("##b heads", &c.num_heads)) c.num_heads = std::clamp(c.num_heads, 1, kMaxDModel);
    hook_widget("B num_heads");
  }
  if (c.kind == CompareKind::File) {
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("Read").x - ImGui::GetFontSize() * 2));
    const bool enter = ImGui::InputTextWithHint("##b path", "a model directory or model.safetensors", &c.path, ImGuiInputTextFlags_EnterReturnsTrue);
    hook_widget("B path");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Any path File > Open opens: a Hugging Face model directory of any family headmap opens\n"
                        "(config.json, model.safetensors, tokenizer.json) or a checkpoint file (.safetensors).");
    ImGui::SameLine();
    // Read off the UI thread by the app through the one dispatcher (open_model_path); a
    // failure keeps the B read before and says why here and on the terminal.
    if (ImGui::Button("Read##b") || enter) request_compare_file(s, c.path);
    hook_widget("Read");
    if (!c.loading.empty()) {
      ImGui::TextDisabled("Reading %s... (B stays as it was until it is read)", c.loading.c_str());
    } else if (!c.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("%s", c.error.c_str());
      ImGui::PopStyleColor();
      hook::add_text("messages", c.error);
      if (c.file_weights) {
        ImGui::TextDisabled("B is still %s.", c.file_path.c_str());
        hook::add_text("messages", "B is still " + c.file_path);
      }
    }
  }
}
}  // namespace

void draw_compare(AppState& s, HeatmapRenderer& r) {
  draw_b_choice(s);
  const bool other = s.compare_b.kind != CompareKind::Correct;
  std::string b_label;
  if (other) {
    std::optional<Result<CompareSideRequest>> side = compare_side(s);
    if (side && !*side) {
      const CompareSource& cb = s.compare_b;
      const bool said = cb.kind == CompareKind::File && !cb.file_weights && (!cb.error.empty() || !cb.loading.empty());
      if (!said) {  // (a path being read, or refused, is said under the path box)
        ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
        ImGui::TextWrapped("%s", side->error().message.c_str());
        ImGui::PopStyleColor();
        hook::add_text("messages", side->error().message);
      }
      return;
    }
    if (side) b_label = (*side)->label;
  }
  ModelConfig& c = s.cfg;
  // The switch, here too, so the comparison is one click away: one pitfall at a time.
  int on = -1, count = 0;
  const std::vector<PitfallInfo>& list = pitfall_list();
  for (size_t i = 0; i < list.size(); ++i)
    if (c.pitfalls.*(list[i].flag)) on = static_cast<int>(i), ++count;
  if (!other) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Pitfall");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 10));
  if (ImGui::BeginCombo("##pitfall", count > 1 ? "several" : on >= 0 ? list[on].label : "none (the correct model)")) {
    if (ImGui::Selectable("none (the correct model)", count == 0)) c.pitfalls = Pitfalls{};
    for (const PitfallInfo& p : list) {
      if (ImGui::Selectable(p.label, count == 1 && c.pitfalls.*(p.flag))) {
        c.pitfalls = Pitfalls{};
        c.pitfalls.*(p.flag) = true;
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", p.explain);
    }
    ImGui::EndCombo();
  }
  if (!c.pitfalls.any()) {
    ImGui::TextWrapped("All pitfalls are off: this is the correct model. Switch one on above to see what it changes, or choose another model as B.");
    return;
  }
  }
  if (!s.result || !s.result->fwd) {
    ImGui::TextDisabled("Computing...");
    return;
  }
  if (other && !s.result->compare_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("B: %s", s.result->compare_error.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", s.result->compare_error);
    return;
  }
  if (!s.result->baseline || other != s.result->request.compare_b.has_value()) {
    ImGui::TextDisabled(other ? "Computing B beside it..." : "Computing the correct model beside it...");
    return;
  }
  const std::shared_ptr<const ForwardData>& pit_p = s.result->fwd;
  const std::shared_ptr<const ForwardData>& ok_p = s.result->baseline;
  const ForwardData &pit = *pit_p, &ok = *ok_p;
  const ModelConfig& cfg = s.result->request.cfg;
  if (pit.batch.empty()) {
    ImGui::TextWrapped("Nothing to attend over: type a sentence, or pick one from Presets.");
    return;
  }
  // The layer on screen: any layer either side has; a side without it says so in its grid.
  const int layers = std::max(pit.out.L, ok.out.L);
  const int layer = std::clamp(s.view.layer, 0, layers - 1), batch = std::clamp(s.view.batch, 0, pit.out.B - 1);
  if (ok.batch.empty() || batch >= ok.out.B) {
    ImGui::TextWrapped("B cuts this text into no tokens.");
    return;
  }
  auto has_layer = [&](const ForwardData& f) { return layer < f.out.L; };
  // Each side's own tokens: another tokenizer may cut the text differently, and then the
  // positions do not align and entropies are compared normalised (per row, over ln of the
  // keys it sees), since nats grow with the number of keys.
  const std::vector<std::string>& ta = pit.labels[batch];
  const std::vector<std::string>& tb = ok.labels[batch];
  const bool retokenized = other && ta != tb;
  // ...and when one side attends causally and the other in both directions (an encoder):
  // its rows see other numbers of keys.
  const bool other_mask = other && cfg.causal != s.result->request.compare_b->cfg.causal;
  const bool normalised = (retokenized && ta.size() != tb.size()) || other_mask;
  const char* unit = normalised ? "nats / ln(keys)" : "nats";
  hook::set_text("compare/entropy_unit", unit);

  // One shared scale: 0 to the larger peak of both models' maps in this layer.
  float vmax = 0;
  for (const ForwardData* f : {&pit, &ok})
    if (has_layer(*f))
      for (int h = 0; h < f->out.Hw; ++h) vmax = std::max(vmax, f->map_max[(static_cast<size_t>(layer) * f->out.B + batch) * f->out.Hw + h]);
  if (vmax <= 0) vmax = 1;

  const float e_pit = mean_entropy(pit, layer, batch, normalised), e_ok = mean_entropy(ok, layer, batch, normalised);
  // Side by side, or one grid switching between A (the pitfall) and B (the correct model).
  int& mode = s.view.compare_mode;
  const float radio = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x;
  same_line_if_fits(radio + ImGui::CalcTextSize("side by side").x);
  ImGui::RadioButton("side by side", &mode, 0);
  hook_widget("side by side");
  same_line_if_fits(radio + ImGui::CalcTextSize("A/B").x);
  ImGui::RadioButton("A/B", &mode, 1);
  hook_widget("A/B");
  if (mode == 1) {
    same_line_if_fits(radio + ImGui::CalcTextSize("A: pitfall").x);
    ImGui::RadioButton(other ? "A" : "A: pitfall", &s.view.compare_show_correct, 0);
    hook_widget(other ? "A" : "A: pitfall");
    same_line_if_fits(radio + ImGui::CalcTextSize("B: correct").x);
    ImGui::RadioButton(other ? "B" : "B: correct", &s.view.compare_show_correct, 1);
    hook_widget(other ? "B" : "B: correct");
  }
  if (layers > 1) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    ImGui::SliderInt("##layer", &s.view.layer, 0, layers - 1, "layer %d", ImGuiSliderFlags_AlwaysClamp);
    ImGui::SameLine();
  }
  char scale[96];
  std::snprintf(scale, sizeof scale, "Shared colour scale, 0 to %.2f", vmax);
  ImGui::PushStyleColor(ImGuiCol_Text, kAccentColour);
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(scale);
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("A comparison uses one colour scale for both models, set automatically: per-head colours\n"
                      "would stretch each map to its own peak and hide a change of scale such as \xE2\x88\x9A" "D's.");
  // What differs between the sides, said plainly: their tokenizations, layers and heads.
  // Lines never broken inside a number (text_wrap.h), in a colour.
  auto wrapped = [&](const ImVec4& colour, const std::string& text) {
    ImGui::PushStyleColor(ImGuiCol_TextDisabled, colour);
    text_disabled_wrapped_at_commas(text);
    ImGui::PopStyleColor();
  };
  auto note = [&](const std::string& text) {
    wrapped(kAccentColour, text);
    hook::add_text("compare/notes", text);
    hook::add_text("messages", text);
  };
  if (other_mask && !(retokenized && ta.size() != tb.size()))
    note(std::string(cfg.causal ? "A attends causally, B in both directions" : "A attends in both directions, B causally") +
         ": their rows see different numbers of keys, so entropies are normalised: each row's over ln(keys it sees).");
  if (retokenized) {
    note("The tokenizations differ: A cuts the sentence into " + std::to_string(ta.size()) + " tokens, B into " + std::to_string(tb.size()) +
         ", so positions do not align." + (ta.size() != tb.size() ? " Entropies are normalised: each row's over ln(keys it sees)." : ""));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Each side runs on its own tokenizer's tokens; each map's axes show its own.\n"
                        "Compare the patterns, not cell by cell.%s",
                        normalised ? "\nWith different token counts, nats would compare rows of different lengths: each row's entropy\n"
                                     "is divided by ln of the keys it sees (0 = all on one key, 1 = spread evenly), then averaged."
                                   : "");
  }
  if (other && pit.out.L != ok.out.L)
    note("A has " + std::to_string(pit.out.L) + " layers, B " + std::to_string(ok.out.L) + ": " +
         (layers - 1 > std::min(pit.out.L, ok.out.L) ? "layers " + std::to_string(std::min(pit.out.L, ok.out.L)) + "-" + std::to_string(layers - 1)
                                                     : "layer " + std::to_string(layers - 1)) +
         " only in " + (pit.out.L > ok.out.L ? "A." : "B."));
  if (other && pit.out.Hw != ok.out.Hw && pit.out.Hw > 1 && ok.out.Hw > 1)
    note("A has " + std::to_string(pit.out.Hw) + " heads, B " + std::to_string(ok.out.Hw) + ": per-head changes for heads 0-" +
         std::to_string(std::min(pit.out.Hw, ok.out.Hw) - 1) + ", the rest only in " + (pit.out.Hw > ok.out.Hw ? "A." : "B."));
  char delta[200];
  const char* short_unit = normalised ? "normalised" : "nats";
  if (!has_layer(pit) || !has_layer(ok))
    std::snprintf(delta, sizeof delta, "Mean entropy of layer %d: only %s has it (%.2f %s)", layer, has_layer(pit) ? "A" : "B",
                  has_layer(pit) ? e_pit : e_ok, short_unit);
  else if (other)
    std::snprintf(delta, sizeof delta, "Mean entropy of layer %d: A %.2f %s, B %.2f: A %+.2f (%s)", layer, e_pit, short_unit, e_ok, e_pit - e_ok,
                  e_pit > e_ok + 0.005f ? "flatter" : e_pit < e_ok - 0.005f ? "sharper" : "unchanged");
  else
    std::snprintf(delta, sizeof delta, "Mean entropy %.2f nats against %.2f correct: %+.2f (%s)", e_pit, e_ok, e_pit - e_ok,
                  e_pit > e_ok + 0.005f ? "flatter" : e_pit < e_ok - 0.005f ? "sharper" : "unchanged");
  wrapped(kChangedColour, delta);
  hook::add_text("messages", delta);
  float largest = 0;
  const std::string per_head = per_head_changes(pit, ok, layer, batch, normalised, &largest);
  if (!per_head.empty()) {
    // The heads' own changes, largest first; a warning when they dwarf the mean's.
    std::string line = per_head;
    if (largest >= 0.1f && largest > 3 * std::fabs(e_pit - e_ok)) {
      char warn[120];
      std::snprintf(warn, sizeof warn, " (up to %.2f: the mean hides it)", largest);
      line += warn;
    }
    wrapped(kChangedColour, line);
    hook::add_text("messages", line);
  }
  const int both_heads = has_layer(pit) && has_layer(ok) ? std::min(pit.out.Hw, ok.out.Hw) : 0;
  if (other && both_heads > 0) {  // a score beside the entropy: each head's previous-token share, A -> B (a share: it needs no normalising)
    std::string line = "Previous-token score, A \xE2\x86\x92 B:";
    for (int h = 0; h < both_heads && h < 16; ++h) {
      const size_t ia = (static_cast<size_t>(layer) * pit.out.B + batch) * pit.out.Hw + h, ib = (static_cast<size_t>(layer) * ok.out.B + batch) * ok.out.Hw + h;
      char one[64];
      std::snprintf(one, sizeof one, "%s head %d %.2f \xE2\x86\x92 %.2f", h ? "," : "", h, pit.metrics[ia].prev_token, ok.metrics[ib].prev_token);
      line += one;
    }
    text_disabled_wrapped_at_commas(line);
    hook::add_text("messages", line);
  }
  hook::add_text("messages", "shared colour scale");

  // The maps take the room left above the changed passport rows. The two grids (A and B)
  // sit one above the other or side by side, whichever gives larger maps; in each, the
  // heads wrap into rows, each map under one line of title and entropy, the query tokens
  // left of its first column and the key tokens under its last row (each side its own).
  const std::vector<std::string> rows = changed_rows(pit.passport, ok.passport, other);
  const float fh = ImGui::GetFontSize(), line = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The rows wrap: up to three of them, as tall as they will be drawn.
  float rows_h = line * 2.5f;
  for (size_t i = 0; i < rows.size() && i < 3; ++i)
    rows_h += ImGui::CalcTextSize(rows[i].c_str(), nullptr, false, avail.x).y + ImGui::GetStyle().ItemSpacing.y;
  if (retokenized) rows_h += line * 2;  // the two token lines under the legend
  const int grids = mode == 0 ? 2 : 1;
  const int most = std::max({has_layer(pit) ? pit.out.Hw : 1, has_layer(ok) ? ok.out.Hw : 1, 1});
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2, text_h = line;
  // The axis labels' room: the widest token of either side and its position number.
  float widest = 0;
  for (const std::vector<std::string>* t : {&ta, &tb})
    for (const std::string& l : *t) widest = std::max(widest, ImGui::CalcTextSize(glyphs().shown(l).c_str()).x);
  const float num_w = ImGui::CalcTextSize(std::to_string(std::max<size_t>(std::max(ta.size(), tb.size()), 1) - 1).c_str()).x;
  float lw = std::min(widest, fh * 6) + ImGui::CalcTextSize("  ").x + num_w + 8;
  int per_row = most;
  float side = 0;
  bool beside = false;
  auto fit = [&] {
    side = 0;
    for (bool b : {false, true}) {
      if (b && grids == 1) continue;
      const float grid_w = (b ? (avail.x - gap * 2) / 2 : avail.x) - lw, grid_h = (avail.y - rows_h) / (b ? 1 : grids) - line - lw;
      for (int cols = 1; cols <= most; ++cols) {
        const int grid_rows = (most + cols - 1) / cols;
        const float sd = std::min(grid_w / cols - gap, grid_h / grid_rows - text_h - gap);
        if (sd > side) side = sd, per_row = cols, beside = b;
      }
    }
  };
  fit();
  if (side < fh * 5) {  // too little room (a small window, long notes): maps still readable, with their labels, and the tab scrolls
    side = fh * 5;
    const float grid_w = (beside ? (avail.x - gap * 2) / 2 : avail.x) - lw;
    per_row = std::clamp(static_cast<int>((grid_w + gap) / (side + gap)), 1, most);
  }

  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.log_scale = s.view.log_scale;
  style.grid = s.view.grid_lines;
  style.vmin = 0;
  style.vmax = vmax;
  style.hi_row = s.hover_token;
  style.hi_col = s.hover_token;
  auto grid = [&](const std::shared_ptr<const ForwardData>& fp, const ModelConfig& gcfg, const char* name, bool is_pitfall) {
    const ForwardData& f = *fp;
    const ForwardData& o = is_pitfall ? ok : pit;  // the other side
    ImGui::TextColored(is_pitfall ? kChangedColour : kUnchangedColour, "%s", name);
    if (!has_layer(f)) {
      ImGui::TextDisabled("No layer %d: %s has %d.", layer, is_pitfall ? "A" : "B", f.out.L);
      return;
    }
    style.mask = shown_mask(gcfg, f.out.B > 1);
    const int len = f.batch.lengths[batch];  // each side's own tokens (another tokenizer may cut the text differently)
    style.len = len;
    hook::set_int(is_pitfall ? "compare/heads_a" : "compare/heads_b", f.out.Hw);
    const std::vector<std::string>& toks = f.labels[batch];
    std::vector<std::string> drawn;  // this side's axis labels, as drawn
    const float x0 = ImGui::GetCursorPosX();
    for (int h = 0; h < f.out.Hw; ++h) {
      const int col = h % per_row;
      if (col != 0) {  // a fixed stride, whatever the width of the line over the map
        ImGui::SameLine();
        ImGui::SetCursorPosX(x0 + lw + col * (side + gap));
      }
      ImGui::BeginGroup();
      const float e = head_entropy(f, layer, batch, h, normalised);
      // One line over the map, the longest form that fits its width: the head and its
      // entropy, and on A's side the change against the same head of B (or B's mean).
      const bool same_head = h < o.out.Hw && has_layer(o);
      const float e_other = same_head ? head_entropy(o, layer, batch, h, normalised) : (is_pitfall ? e_ok : e_pit);
      const float e_ref = is_pitfall ? e_other : e;
      const float e_a = is_pitfall ? e : e_other;
      const bool avg = f.out.Hw == 1 && gcfg.pitfalls.head_averaged;
      const bool changes = is_pitfall && has_layer(ok);
      char forms[3][64];
      if (avg) {
        std::snprintf(forms[0], 64, "mean of %d heads  %.2f (%+.2f)", gcfg.num_heads, e, e_a - e_ref);
        std::snprintf(forms[1], 64, "mean %+.2f", e_a - e_ref);
        std::snprintf(forms[2], 64, "mean");
      } else {
        if (changes) std::snprintf(forms[0], 64, "head %d  %.2f %s (%+.2f)", h, e, normalised ? "norm." : "nats", e - e_ref);
        else std::snprintf(forms[0], 64, "head %d  %.2f %s", h, e, normalised ? "norm." : "nats");
        if (changes) std::snprintf(forms[1], 64, "%d: %+.2f", h, e - e_ref);
        else std::snprintf(forms[1], 64, "%d: %.2f", h, e);
        std::snprintf(forms[2], 64, "%d", h);
      }
      char shown_e[64];
      std::snprintf(shown_e, sizeof shown_e, "%s %d.%d %.2f", is_pitfall ? "A" : "B", layer, h, e);
      hook::add_text("compare/entropies", shown_e);
      const char* title = forms[2];
      for (const char* form : {forms[0], forms[1]})
        if (ImGui::CalcTextSize(form).x <= side) {
          title = form;
          break;
        }
      const float gx = ImGui::GetCursorPosX();
      if (col == 0) ImGui::SetCursorPosX(gx + lw);  // over the map, not its labels
      if (is_pitfall) ImGui::TextColored(kChangedColour, "%s", title);
      else ImGui::TextDisabled("%s", title);
      if (col == 0) ImGui::SetCursorPosX(gx);
      char tag[64];
      std::snprintf(tag, sizeof tag, "cmp/%d/%d/%d", layer, batch, h);
      const MapTexture& tex = r.texture(fp, tag, f.out.weights(layer, batch, h), len, len, f.out.T, 1024);
      HeatmapView v;
      v.tex = &tex;
      v.style = style;
      v.side = side;
      // The axes: this side's own tokens, left of the first column and under the last row.
      if (lw > 0 && col == 0) v.row_labels = &toks, v.label_w = lw;
      if (lw > 0 && h + per_row >= f.out.Hw) v.col_labels = &toks, v.label_h = lw;
      v.hover_token = s.hover_token;
      v.label_texts = &drawn;
      ImGui::PushID(is_pitfall ? 1 : 0);
      ImGui::PushID(h);
      const HeatmapHit hit = heatmap_view("cmp", r, v);
      ImGui::PopID();
      ImGui::PopID();
      hook::add_rect("compare_heatmaps", ImVec2(hit.p0.x, hit.p0.y), ImVec2(hit.p1.x, hit.p1.y));
      if (!is_pitfall && hook::wants_map_values()) {  // for --report only: T x T floats per head each frame
        const float* m = f.out.weights(layer, batch, h);  // (T, T), the first len x len shown
        std::vector<float> shown;  // (len, len)
        for (int i = 0; i < len; ++i) shown.insert(shown.end(), m + static_cast<size_t>(i) * f.out.T, m + static_cast<size_t>(i) * f.out.T + len);
        hook::add_nums("compare/b_maps", shown);
      }
      if (hit.hovered) {
        const float w = f.out.weights(layer, batch, h)[static_cast<size_t>(hit.row) * f.out.T + hit.col];
        ImGui::SetTooltip("query %d \"%s\", key %d \"%s\"\nweight %.4f, entropy of the head %.3f %s", hit.row, glyphs().shown(toks[hit.row]).c_str(), hit.col,
                          glyphs().shown(toks[hit.col]).c_str(), w, e, unit);
      }
      ImGui::EndGroup();
    }
    for (const std::string& d : drawn) hook::add_text("compare/axis_labels", std::string(is_pitfall ? "A " : "B ") + d);
  };
  ModelConfig ok_cfg = cfg;
  ok_cfg.pitfalls = Pitfalls{};
  if (other) ok_cfg = s.result->request.compare_b->cfg;
  // A's title fits its grid's width, or side by side it would push B off the window.
  const float title_room = beside ? (avail.x - gap * 2) / 2 : avail.x;
  std::string pit_name = other ? "A: " + pit.source : "A: with " + pitfall_names(cfg.pitfalls);
  if (ImGui::CalcTextSize(pit_name.c_str()).x > title_room) pit_name = other ? "A: this model" : "A: pitfall";
  std::string ok_name = other ? "B: " + b_label + ", " + ok.source : "B: correct";
  if (ImGui::CalcTextSize(ok_name.c_str()).x > title_room) ok_name = other ? "B: " + b_label : "B: correct";
  if (ImGui::CalcTextSize(ok_name.c_str()).x > title_room) ok_name = "B";
  hook::set_text("compare/a", pit_name);
  hook::set_text("compare/b", ok_name);
  if (mode == 0 || s.view.compare_show_correct == 0) {
    ImGui::BeginGroup();
    grid(pit_p, cfg, pit_name.c_str(), true);
    ImGui::EndGroup();
    if (beside) ImGui::SameLine(0, gap * 2);
  }
  if (mode == 0 || s.view.compare_show_correct == 1) {
    ImGui::BeginGroup();
    grid(ok_p, ok_cfg, ok_name.c_str(), false);
    ImGui::EndGroup();
  }

  ImGui::Spacing();
  colour_legend(style, "weight, one scale for both models", std::min(avail.x * 0.3f, fh * 14));
  // Each side's own tokens, when B's tokenizer cuts the text differently.
  if (retokenized) {
    std::string a = "A's " + std::to_string(ta.size()) + " tokens:", b = "B's " + std::to_string(tb.size()) + " tokens:";
    for (const std::string& t : ta) a += " [" + glyphs().shown(t) + "]";
    for (const std::string& t : tb) b += " [" + glyphs().shown(t) + "]";
    text_disabled_wrapped(a.c_str());
    text_disabled_wrapped(b.c_str());
    hook::set_texts("compare/a_tokens", ta);
    hook::set_texts("compare/b_tokens", tb);
  }
  ImGui::TextUnformatted(other ? "Passport rows that differ, B \xE2\x86\x92 A" : "Passport rows the pitfall changes");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Every row of the passport whose formula or shape differs from the correct model's.");
  if (rows.empty()) ImGui::TextDisabled("none: the shapes are the same, only the numbers differ");
  for (const std::string& row : rows) {
    ImGui::PushStyleColor(ImGuiCol_Text, kChangedColour);
    ImGui::TextWrapped("%s", row.c_str());
    ImGui::PopStyleColor();
    hook::add_text("passport_changes", row);
  }
}

}  // namespace headmap
