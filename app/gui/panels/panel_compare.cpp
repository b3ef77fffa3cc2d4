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
std::vector<std::string> changed_rows(const Passport& pit, const Passport& ok) {
  std::vector<std::string> rows;
  for (const PassportStep& a : pit.steps) {
    const PassportStep* b = ok.find(a.id);
    if (!b) {
      rows.push_back(a.name + ": only with the pitfall, " + a.formula + " " + a.concrete_str());
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
    if (!pit.find(b.id)) rows.push_back(b.name + ": gone with the pitfall (" + b.formula + ")");
  if (pit.attention_params != ok.attention_params)
    rows.push_back("attention parameters: " + human_count(ok.attention_params) + "  \xE2\x86\x92  " + human_count(pit.attention_params));
  return rows;
}

// Each head's entropy change against the same head of the correct model, largest first,
// as "head 0 -0.91"; the mean alone hides a pitfall that sharpens one head and flattens
// another (the interleaved view). Empty when the head counts differ (head averaging).
std::string per_head_changes(const ForwardData& pit, const ForwardData& ok, int layer, int batch, float* largest) {
  *largest = 0;
  if (pit.out.Hw != ok.out.Hw || pit.out.Hw < 2) return "";
  std::vector<std::pair<float, int>> d;
  for (int h = 0; h < pit.out.Hw; ++h) {
    const size_t i = (static_cast<size_t>(layer) * pit.out.B + batch) * pit.out.Hw + h;
    d.push_back({pit.metrics[i].entropy - ok.metrics[i].entropy, h});
  }
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

float mean_entropy(const ForwardData& f, int layer, int batch) {
  float sum = 0;
  for (int h = 0; h < f.out.Hw; ++h) sum += f.metrics[(static_cast<size_t>(layer) * f.out.B + batch) * f.out.Hw + h].entropy;
  return f.out.Hw ? sum / f.out.Hw : 0.0f;
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
      case CompareKind::File: return "a checkpoint file";
    }
    return "";
  };
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 18));
  if (ImGui::BeginCombo("##compare b", kind_name(c.kind, c.shipped).c_str())) {
    for (CompareKind k : {CompareKind::Correct, CompareKind::OtherHeads}) {
      const std::string n = kind_name(k, 0);
      if (ImGui::Selectable(n.c_str(), c.kind == k)) c.kind = k;
      report_widget(s, n.c_str());
    }
    for (int i = 0; i < static_cast<int>(s.shipped.size()); ++i) {
      const std::string n = kind_name(CompareKind::Shipped, i);
      if (ImGui::Selectable(n.c_str(), c.kind == CompareKind::Shipped && c.shipped == i)) c.kind = CompareKind::Shipped, c.shipped = i;
      report_widget(s, n.c_str());
    }
    const std::string n = kind_name(CompareKind::File, 0);
    if (ImGui::Selectable(n.c_str(), c.kind == CompareKind::File)) c.kind = CompareKind::File;
    report_widget(s, n.c_str());
    ImGui::EndCombo();
  }
  report_widget(s, "compare b");
  if (c.kind == CompareKind::OtherHeads) {
    same_line_if_fits(ImGui::GetFontSize() * 12);
    ImGui::TextUnformatted("num_heads");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    if (ImGui::InputInt("##b heads", &c.num_heads)) c.num_heads = std::clamp(c.num_heads, 1, kMaxDModel);
    report_widget(s, "B num_heads");
  }
  if (c.kind == CompareKind::File) {
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 6, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("Read").x - ImGui::GetFontSize() * 2));
    const bool enter = ImGui::InputTextWithHint("##b path", "model.safetensors", &c.path, ImGuiInputTextFlags_EnterReturnsTrue);
    report_widget(s, "B path");
    ImGui::SameLine();
    if (ImGui::Button("Read##b") || enter) {  // read and checked whole by the core; a failure keeps the file B had
      Result<CheckpointInfo> info = checkpoint_info(c.path);
      if (info) {
        c.file_info = *info;
        c.error.clear();
      } else {
        c.error = info.error().message;
        std::fprintf(stderr, "headmap: %s\n", c.error.c_str());
      }
    }
    report_widget(s, "Read");
    if (!c.error.empty()) {
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("%s", c.error.c_str());
      ImGui::PopStyleColor();
      s.report.messages.push_back(c.error);
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
      ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
      ImGui::TextWrapped("%s", side->error().message.c_str());
      ImGui::PopStyleColor();
      s.report.messages.push_back(side->error().message);
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
    s.report.messages.push_back(s.result->compare_error);
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
  // A layer both models have (B may be shallower).
  const int layer = std::clamp(s.view.layer, 0, std::min(pit.out.L, ok.out.L) - 1), batch = std::clamp(s.view.batch, 0, pit.out.B - 1);
  if (ok.batch.empty() || batch >= ok.out.B) {
    ImGui::TextWrapped("B cuts this text into no tokens.");
    return;
  }
  const int len = pit.batch.lengths[batch];

  // One shared scale: 0 to the larger peak of both models' maps in this layer.
  float vmax = 0;
  for (const ForwardData* f : {&pit, &ok})
    for (int h = 0; h < f->out.Hw; ++h) vmax = std::max(vmax, f->map_max[(static_cast<size_t>(layer) * f->out.B + batch) * f->out.Hw + h]);
  if (vmax <= 0) vmax = 1;

  const float e_pit = mean_entropy(pit, layer, batch), e_ok = mean_entropy(ok, layer, batch);
  // Side by side, or one grid switching between A (the pitfall) and B (the correct model).
  int& mode = s.view.compare_mode;
  const float radio = ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x;
  same_line_if_fits(radio + ImGui::CalcTextSize("side by side").x);
  ImGui::RadioButton("side by side", &mode, 0);
  report_widget(s, "side by side");
  same_line_if_fits(radio + ImGui::CalcTextSize("A/B").x);
  ImGui::RadioButton("A/B", &mode, 1);
  report_widget(s, "A/B");
  if (mode == 1) {
    same_line_if_fits(radio + ImGui::CalcTextSize("A: pitfall").x);
    ImGui::RadioButton("A: pitfall", &s.view.compare_show_correct, 0);
    report_widget(s, "A: pitfall");
    same_line_if_fits(radio + ImGui::CalcTextSize("B: correct").x);
    ImGui::RadioButton("B: correct", &s.view.compare_show_correct, 1);
    report_widget(s, "B: correct");
  }
  if (pit.out.L > 1) {
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
    ImGui::SliderInt("##layer", &s.view.layer, 0, pit.out.L - 1, "layer %d");
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
  char delta[200];
  if (other)
    std::snprintf(delta, sizeof delta, "Mean entropy of layer %d: A %.2f nats, B %.2f: A %+.2f (%s)", layer, e_pit, e_ok, e_pit - e_ok,
                  e_pit > e_ok + 0.005f ? "flatter" : e_pit < e_ok - 0.005f ? "sharper" : "unchanged");
  else
    std::snprintf(delta, sizeof delta, "Mean entropy %.2f nats against %.2f correct: %+.2f (%s)", e_pit, e_ok, e_pit - e_ok,
                  e_pit > e_ok + 0.005f ? "flatter" : e_pit < e_ok - 0.005f ? "sharper" : "unchanged");
  ImGui::PushStyleColor(ImGuiCol_Text, kChangedColour);
  ImGui::TextWrapped("%s", delta);
  ImGui::PopStyleColor();
  s.report.messages.push_back(delta);
  float largest = 0;
  const std::string per_head = per_head_changes(pit, ok, layer, batch, &largest);
  if (!per_head.empty()) {
    // The heads' own changes, largest first; a warning when they dwarf the mean's.
    std::string line = per_head;
    if (largest >= 0.1f && largest > 3 * std::fabs(e_pit - e_ok)) {
      char warn[120];
      std::snprintf(warn, sizeof warn, " (up to %.2f: the mean hides it)", largest);
      line += warn;
    }
    ImGui::PushStyleColor(ImGuiCol_Text, kChangedColour);
    ImGui::TextWrapped("%s", line.c_str());
    ImGui::PopStyleColor();
    s.report.messages.push_back(line);
  }
  if (other && pit.out.Hw == ok.out.Hw) {  // a score beside the entropy: each head's previous-token share, A -> B
    std::string line = "Previous-token score, A \xE2\x86\x92 B:";
    for (int h = 0; h < pit.out.Hw && h < 16; ++h) {
      const size_t ia = (static_cast<size_t>(layer) * pit.out.B + batch) * pit.out.Hw + h, ib = (static_cast<size_t>(layer) * ok.out.B + batch) * ok.out.Hw + h;
      char one[64];
      std::snprintf(one, sizeof one, "%s head %d %.2f \xE2\x86\x92 %.2f", h ? "," : "", h, pit.metrics[ia].prev_token, ok.metrics[ib].prev_token);
      line += one;
    }
    text_disabled_wrapped_at_commas(line);
    s.report.messages.push_back(line);
  }
  s.report.messages.push_back("shared colour scale");

  // The maps take the room left above the changed passport rows. The two grids (A and B)
  // sit one above the other or side by side, whichever gives larger maps; in each, the
  // heads wrap into rows, each map under one line of title and entropy.
  const std::vector<std::string> rows = changed_rows(pit.passport, ok.passport);
  const float fh = ImGui::GetFontSize(), line = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The rows wrap: up to three of them, as tall as they will be drawn.
  float rows_h = line * 2.5f;
  for (size_t i = 0; i < rows.size() && i < 3; ++i)
    rows_h += ImGui::CalcTextSize(rows[i].c_str(), nullptr, false, avail.x).y + ImGui::GetStyle().ItemSpacing.y;
  const int grids = mode == 0 ? 2 : 1;
  const int most = std::max(pit.out.Hw, ok.out.Hw);
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2, text_h = line;
  int per_row = most;
  float side = 0;
  bool beside = false;
  for (bool b : {false, true}) {
    if (b && grids == 1) continue;
    const float grid_w = b ? (avail.x - gap * 2) / 2 : avail.x, grid_h = (avail.y - rows_h) / (b ? 1 : grids) - line;
    for (int cols = 1; cols <= most; ++cols) {
      const int grid_rows = (most + cols - 1) / cols;
      const float sd = std::min(grid_w / cols - gap, grid_h / grid_rows - text_h - gap);
      if (sd > side) side = sd, per_row = cols, beside = b;
    }
  }
  if (side < fh * 2.5f) {  // too little room: the smallest readable maps, in as many columns as fit the width
    side = fh * 2.5f;
    const float grid_w = beside ? (avail.x - gap * 2) / 2 : avail.x;
    per_row = std::clamp(static_cast<int>((grid_w + gap) / (side + gap)), 1, most);
  }

  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.log_scale = s.view.log_scale;
  style.grid = s.view.grid_lines;
  style.vmin = 0;
  style.vmax = vmax;
  style.len = len;
  style.hi_row = s.hover_token;
  style.hi_col = s.hover_token;
  auto grid = [&](const std::shared_ptr<const ForwardData>& fp, const ModelConfig& gcfg, const char* name, bool is_pitfall) {
    const ForwardData& f = *fp;
    ImGui::TextColored(is_pitfall ? kChangedColour : kUnchangedColour, "%s", name);
    style.mask = shown_mask(gcfg, f.out.B > 1);
    const int len = f.batch.lengths[batch];  // each side's own tokens (another tokenizer may cut the text differently)
    style.len = len;
    (is_pitfall ? s.report.compare_heads_a : s.report.compare_heads_b) = f.out.Hw;
    const float x0 = ImGui::GetCursorPosX();
    for (int h = 0; h < f.out.Hw; ++h) {
      if (h % per_row != 0) {  // a fixed stride, whatever the width of the line over the map
        ImGui::SameLine();
        ImGui::SetCursorPosX(x0 + (h % per_row) * (side + gap));
      }
      ImGui::BeginGroup();
      const size_t mi = (static_cast<size_t>(layer) * f.out.B + batch) * f.out.Hw + h;
      const float e = f.metrics[mi].entropy;
      // One line over the map, the longest form that fits its width: the head and its
      // entropy, and on the pitfall's side the change against the same head (or the mean).
      const float e_ref = ok.out.Hw == f.out.Hw ? ok.metrics[(static_cast<size_t>(layer) * ok.out.B + batch) * ok.out.Hw + h].entropy : e_ok;
      const bool avg = f.out.Hw == 1 && gcfg.pitfalls.head_averaged;
      char forms[3][64];
      if (avg) {
        std::snprintf(forms[0], 64, "mean of %d heads  %.2f nats (%+.2f)", gcfg.num_heads, e, e - e_ref);
        std::snprintf(forms[1], 64, "mean %+.2f", e - e_ref);
        std::snprintf(forms[2], 64, "mean");
      } else {
        if (is_pitfall) std::snprintf(forms[0], 64, "head %d  %.2f nats (%+.2f)", h, e, e - e_ref);
        else std::snprintf(forms[0], 64, "head %d  %.2f nats", h, e);
        if (is_pitfall) std::snprintf(forms[1], 64, "%d: %+.2f", h, e - e_ref);
        else std::snprintf(forms[1], 64, "%d: %.2f", h, e);
        std::snprintf(forms[2], 64, "%d", h);
      }
      const char* title = forms[2];
      for (const char* form : {forms[0], forms[1]})
        if (ImGui::CalcTextSize(form).x <= side) {
          title = form;
          break;
        }
      if (is_pitfall) ImGui::TextColored(kChangedColour, "%s", title);
      else ImGui::TextDisabled("%s", title);
      char tag[64];
      std::snprintf(tag, sizeof tag, "cmp/%d/%d/%d", layer, batch, h);
      const MapTexture& tex = r.texture(fp, tag, f.out.weights(layer, batch, h), len, len, f.out.T, 1024);
      HeatmapView v;
      v.tex = &tex;
      v.style = style;
      v.side = side;
      ImGui::PushID(is_pitfall ? 1 : 0);
      ImGui::PushID(h);
      const HeatmapHit hit = heatmap_view("cmp", r, v);
      ImGui::PopID();
      ImGui::PopID();
      s.report.compare_heatmaps.push_back({hit.p0.x, hit.p0.y, hit.p1.x, hit.p1.y});
      if (hit.hovered) {
        const float w = f.out.weights(layer, batch, h)[static_cast<size_t>(hit.row) * f.out.T + hit.col];
        ImGui::SetTooltip("query %d \"%s\", key %d \"%s\"\nweight %.4f, entropy of the head %.3f nats", hit.row,
                          glyphs().shown(f.labels[batch][hit.row]).c_str(), hit.col, glyphs().shown(f.labels[batch][hit.col]).c_str(), w, e);
      }
      ImGui::EndGroup();
    }
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
  s.report.compare_a = pit_name;
  s.report.compare_b = ok_name;
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
  const std::vector<std::string>& ta = pit.labels[batch];
  const std::vector<std::string>& tb = ok.labels[batch];
  if (other && ta != tb) {
    std::string a = "A's tokens:", b = "B's tokens:";
    for (const std::string& t : ta) a += " [" + t + "]";
    for (const std::string& t : tb) b += " [" + t + "]";
    text_disabled_wrapped(glyphs().shown(a).c_str());  // drawn: visual order, Arabic joined (bidi.h)
    text_disabled_wrapped(glyphs().shown(b).c_str());
    s.report.compare_b_tokens = tb;
  }
  ImGui::TextUnformatted(other ? "Passport rows that differ, B \xE2\x86\x92 A" : "Passport rows the pitfall changes");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("Every row of the passport whose formula or shape differs from the correct model's.");
  if (rows.empty()) ImGui::TextDisabled("none: the shapes are the same, only the numbers differ");
  for (const std::string& row : rows) {
    ImGui::PushStyleColor(ImGuiCol_Text, kChangedColour);
    ImGui::TextWrapped("%s", row.c_str());
    ImGui::PopStyleColor();
    s.report.passport_changes.push_back(row);
  }
}

}  // namespace headmap
