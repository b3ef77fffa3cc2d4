// panel_patching.cpp: activation patching in the app (issue 28). The clean sentence is the
// text's selected one; a second box holds the corrupted one, which must have the same token
// count (the view says so when it has not). The measured quantity is a logit difference,
// A - B at a position (by default the last position, an encoder's [MASK], the clean run's top prediction against
// the corrupted run's). For each head the corrupted run is repeated from that head's layer
// with its output taken from the clean run (contrib.h's patch_heads), on the worker, with
// progress and Cancel, cached by its inputs; the grid shows the normalised recovery
// (patched - corrupted) / (clean - corrupted). A click on a cell patches that head at one
// position at a time (patch_positions.h); a position's cell opens the head in Focus there.
//
// L = layers, H = heads, T = tokens
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/glyphs.h"

namespace headmap {

namespace {
// Below this clean - corrupted logit difference the recoveries, which divide by it, are
// mostly noise, and the view says so.
constexpr float kPatchMinDifference = 1.0f;

void error_line(AppState& s, const std::string& m) {
  ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
  ImGui::TextWrapped("%s", m.c_str());
  ImGui::PopStyleColor();
  hook::add_text("messages", m);
}

// A combo of one run's top predictions for token A or B; -1 is its default (the top one).
void token_combo(AppState& s, const char* label, int* token, const std::vector<NextToken>& top, int resolved, const char* which) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::SameLine();
  std::string shown = "-";
  for (const NextToken& t : top)
    if (t.id == resolved) shown = t.display;
  if (*token < 0) shown += std::string(" (") + which + " top)";
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 12));
  const std::string id = std::string("##") + label;
  if (ImGui::BeginCombo(id.c_str(), glyphs().shown(shown).c_str())) {
    if (ImGui::Selectable((std::string(which) + " run's top prediction").c_str(), *token < 0)) *token = -1;
    for (const NextToken& t : top) {
      char item[96];
      std::snprintf(item, sizeof item, "%s  %.3f", glyphs().shown(t.display).c_str(), t.prob);
      if (ImGui::Selectable(item, *token == t.id)) *token = t.id;
      hook_widget((std::string(label) + " " + t.display).c_str());
    }
    ImGui::EndCombo();
  }
  hook_widget((std::string("token ") + label).c_str());
}
}  // namespace

void draw_patching(AppState& s) {
  ContribState& c = s.contrib;
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  const int b = f && !f->batch.empty() ? std::clamp(s.view.batch, 0, f->batch.B() - 1) : 0;
  // The clean sentence (the text) and the corrupted one (this box).
  char line[160];
  std::snprintf(line, sizeof line, "Clean: the text%s (%d tokens)", f && f->batch.B() > 1 ? ("'s sentence " + std::to_string(b)).c_str() : "",
                f && !f->batch.empty() ? f->batch.lengths[b] : 0);
  ImGui::TextUnformatted(line);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Corrupted");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##corrupted", "the same sentence with a word changed", &c.corrupted);
  hook_widget("corrupted sentence");

  const PatchOutcome* o = res && res->patch && res->request.patch && res->request.patch == compute_request(s).patch ? res->patch.get() : nullptr;
  if (o && !o->corrupted_tokens.empty() && o->corrupted_tokens.size() != o->clean_tokens.size()) {
    // Said at once, in the window: the counts differ (each sentence's tokens shown to compare).
    std::string toks = "clean:";
    for (const std::string& t : o->clean_tokens) toks += " [" + t + "]";
    toks += "   corrupted:";
    for (const std::string& t : o->corrupted_tokens) toks += " [" + t + "]";
    text_disabled_wrapped(toks.c_str());
  }
  // The logit difference: A - B at a position.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Position");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6);
  if (ImGui::InputInt("##position", &c.patch_position)) c.patch_position = std::clamp(c.patch_position, -1, kMaxContext - 1);
  hook_widget("patch position");
  const char* default_pos = f && f->weights && f->weights->arch.encoder() ? "(-1: the clicked chip, else the [MASK], else where the runs differ most)"
                                                                          : "(-1: the clicked chip, else where the runs differ most)";
  same_line_if_fits(ImGui::CalcTextSize(default_pos).x);
  ImGui::TextDisabled("%s", default_pos);
  token_combo(s, "A", &c.patch_token_a, o ? o->clean_top : std::vector<NextToken>{}, o ? o->target.token_a : -1, "clean");
  same_line_if_fits(ImGui::GetFontSize() * 14);
  token_combo(s, "B", &c.patch_token_b, o ? o->corrupted_top : std::vector<NextToken>{}, o ? o->target.token_b : -1, "corrupted");

  if (!c.patch_run) {
    ImGui::TextColored(kPendingColour, "Cancelled.");
    ImGui::SameLine();
    if (ImGui::Button("Run patching")) c.patch_run = true;
    hook_widget("Run patching");
    return;
  }
  if (c.corrupted.empty()) {
    text_disabled_wrapped("Type a corrupted sentence above: the clean one with a word changed, the same number of tokens.");
    return;
  }
  if (!o) {  // on the worker: its progress, and Cancel
    const auto [done, total] = c.patch_progress;
    char prog[64];
    std::snprintf(prog, sizeof prog, total > 0 ? "patching %d of %d runs" : "patching...", done, total);
    ImGui::ProgressBar(total > 0 ? static_cast<float>(done) / total : 0.0f, ImVec2(ImGui::GetFontSize() * 14, 0), prog);
    ImGui::SameLine();
    if (ImGui::Button("Cancel##patching")) c.patch_run = false;  // the next request leaves it out: the worker drops it
    hook_widget("Cancel patching");
    hook::add_text("messages", prog);
    return;
  }
  if (!o->error.empty() && !o->heads) {
    error_line(s, o->error);
    return;
  }
  const PatchResult& p = *o->heads;
  auto piece = [&](int id, const std::vector<NextToken>& a, const std::vector<NextToken>& bb) {
    for (const auto* list : {&a, &bb})
      for (const NextToken& t : *list)
        if (t.id == id) return t.display;
    return "#" + std::to_string(id);
  };
  const std::string after = o->target.position < static_cast<int>(o->clean_tokens.size()) ? o->clean_tokens[o->target.position] : "";
  char target[256];
  const bool encoder = f && f->weights && f->weights->arch.encoder();  // its head predicts the token at the position, not after it
  std::snprintf(target, sizeof target, "logit(%s) - logit(%s) %s \"%s\" (position %d): clean %.3f, corrupted %.3f",
                piece(o->target.token_a, o->clean_top, o->corrupted_top).c_str(), piece(o->target.token_b, o->clean_top, o->corrupted_top).c_str(),
                encoder ? "at" : "after", after.c_str(), o->target.position, p.clean, p.corrupted);
  hook::set_text("contrib/patch_target", target);
  text_disabled_wrapped_at_commas(target);
  // Every recovery divides by clean - corrupted: a difference near 0 makes them noise.
  if (std::abs(p.clean - p.corrupted) < kPatchMinDifference) {
    char warn[320];
    std::snprintf(warn, sizeof warn,
                  "Clean and corrupted differ by only %.2f here: every recovery is divided by it, so these are mostly noise. "
                  "Click the chip of a position where the sentences lead to different words, or change the corrupted sentence.",
                  std::abs(p.clean - p.corrupted));
    ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
    ImGui::TextWrapped("%s", warn);
    ImGui::PopStyleColor();
    hook::add_text("messages", warn);
  }
  text_disabled_wrapped("Each head's output taken from the clean run, the rest recomputed from its layer: recovery = (patched - corrupted) / (clean - corrupted).");
  float peak = 1;
  for (float v : p.recovery)
    if (std::isfinite(v)) peak = std::max(peak, std::abs(v));
  hook::set_nums("contrib/patch_recovery", p.recovery);
  HeadGrid g;
  g.id = "patch";
  g.L = p.L;
  g.H = p.H;
  g.values = p.recovery.data();
  g.diverging = true;
  g.peak = peak;
  g.marked.assign(p.recovery.size(), false);
  if (c.patch_head && c.patch_head->layer < p.L && c.patch_head->head < p.H)
    g.marked[static_cast<size_t>(c.patch_head->layer) * p.H + c.patch_head->head] = true;
  g.tooltip = "head %d.%d recovers %.4f of the difference\nclick: patch it at one position at a time";
  const HeadGridHit hit = head_grid(s, g);
  if (hit.clicked) c.patch_head = HeadId{hit.layer, hit.head};
  if (!c.patch_head) {
    text_disabled_wrapped("Click a head to patch it at one position at a time.");
    return;
  }
  const HeadId hd = *c.patch_head;
  std::snprintf(line, sizeof line, "Head %d.%d patched at one position at a time:", hd.layer, hd.head);
  ImGui::TextUnformatted(line);
  if (ImGui::SmallButton("Open in Focus##patch")) {
    s.view.layer = hd.layer;
    s.view.head = hd.head;
    s.view.batch = b;
    s.view.center = CenterPanel::Focus;
  }
  hook_widget("Open in Focus##patch");
  if (o->inputs.per_position != c.patch_head || (o->per_position.empty() && o->error.empty())) {
    text_disabled_wrapped("computing...");
    return;
  }
  if (!o->error.empty()) {
    error_line(s, o->error);
    return;
  }
  hook::set_nums("contrib/patch_per_position", o->per_position);
  HeadGrid pg;
  pg.id = "position";
  pg.L = 1;
  pg.H = static_cast<int>(o->per_position.size());
  pg.values = o->per_position.data();
  pg.diverging = true;
  pg.peak = peak;
  pg.row_prefix = "";
  pg.column_labels = &o->clean_tokens;
  pg.tooltip = "%.0dposition %d: recovery %.4f\nclick: open the head in Focus at this position";
  const HeadGridHit ph = head_grid(s, pg);
  if (ph.clicked) {
    s.view.layer = hd.layer;
    s.view.head = hd.head;
    s.view.batch = b;
    s.selected_token = ph.head;
    s.view.center = CenterPanel::Focus;
  }
}

}  // namespace headmap
