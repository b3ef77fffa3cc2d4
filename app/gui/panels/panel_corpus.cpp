// panel_corpus.cpp: where in a corpus a head fires (issue 39, point 4; exBERT's corpus search,
// CircuitsVis' max-activating examples). The person picks the source (the shipped corpus, or a
// UTF-8 text file chosen through the File dialog, read only then), the head (the selection)
// and how many examples; Search runs on the corpus worker with progress and Cancel, the
// window staying live. The view lists the head's strongest query -> key cells past the
// first token by the statistic chosen (attention weight or value-weighted norm;
// core/inspect/corpus_search.h), each as a small map of the head on its line
// with the pair outlined and the line's tokens, the query in orange and the key in blue; a click puts the line
// into the text. Above them, the head's offset profile over every line searched
// (offset_profile.h's definition). Exported as JSON (as headmap-cli --corpus), or the first
// example's map as PNG or SVG. State: CorpusState (app_state.h), derived in corpus_view.h.
//
// k = examples, len = a hit line's tokens, O = 2 len - 1 offsets
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/gui/corpus_view.h"
#include "app/gui/dialogs.h"
#include "app/gui/glyphs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {

// An integer box (- and + step it) whose hook names its text field, where a click edits it.
bool int_box(const char* label, int* v, float width) {
  ImGui::SetNextItemWidth(width);
  const bool changed = ImGui::InputInt((std::string("##") + label).c_str(), v);
  const ImVec2 p0 = ImGui::GetItemRectMin(), p1 = ImGui::GetItemRectMax();
  const float buttons = 2 * (ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
  hook_widget(label, p0, ImVec2(std::max(p0.x + 4, p1.x - buttons), p1.y));
  return changed;
}

// Where to search, and Search (or its progress and Cancel).
void source_row(AppState& s) {
  CorpusState& c = s.corpus;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Search");
  ImGui::SameLine();
  if (ImGui::RadioButton("the shipped corpus", c.source == 0)) c.source = 0;
  hook_widget("the shipped corpus");
  const std::string file = c.file.empty() ? std::string("a file...") : "the file " + std::filesystem::path(c.file).filename().string();
  same_line_if_fits(ImGui::CalcTextSize(file.c_str()).x + ImGui::GetFontSize() * 2);
  if (ImGui::RadioButton(file.c_str(), c.source == 1)) {
    c.source = 1;
    if (c.file.empty()) s.dialog_request = AppState::DialogRequest{Dialog::OpenCorpus, dialog_default_path(Dialog::OpenCorpus), false};
  }
  hook_widget("corpus file");
  same_line_if_fits(ImGui::CalcTextSize("Choose a file...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Choose a file...")) s.dialog_request = AppState::DialogRequest{Dialog::OpenCorpus, dialog_default_path(Dialog::OpenCorpus), false};
  hook_widget("Choose a file...");

  // The head and the number of examples.
  const float fh = ImGui::GetFontSize();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Head: layer");
  ImGui::SameLine();
  if (int_box("corpus layer", &s.view.layer, fh * 5.5f)) s.view.layer = std::clamp(s.view.layer, 0, std::max(0, s.cfg.num_layers - 1));
  ImGui::SameLine();
  ImGui::TextUnformatted("head");
  ImGui::SameLine();
  if (int_box("corpus head", &s.view.head, fh * 5.5f)) s.view.head = std::clamp(s.view.head, 0, std::max(0, s.cfg.num_heads - 1));
  same_line_if_fits(fh * 12);
  ImGui::TextUnformatted("examples");
  ImGui::SameLine();
  if (int_box("corpus examples", &c.top, fh * 5.5f)) c.top = std::clamp(c.top, 1, kCorpusIndexTop);
  // What they are ranked by: choosing the other searches again (its own index, kept on disk).
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("ranked by");
  for (int i = 0; i < kCorpusStats; ++i) {
    const CorpusStat st = static_cast<CorpusStat>(i);
    same_line_if_fits(ImGui::CalcTextSize(corpus_stat_label(st)).x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
    if (ImGui::RadioButton(corpus_stat_label(st), c.stat == st)) set_corpus_stat(s, st);
    hook_widget(corpus_stat_label(st));
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip(st == CorpusStat::Weight ? "the attention weight a[t, s] of query t on key s"
                                                 : "a[t, s] ||(x_s W_V + b_V) W_O||: how much of the key's value reaches the head's output\n(Kobayashi et al. 2020; "
                                                   "the first token, where heads park weight, usually carries little)");
  }

  if (c.running.empty()) {
    const std::string path = corpus_source_path(s);
    ImGui::BeginDisabled(path.empty());
    if (ImGui::Button("Search the corpus")) c.search_request = path;
    ImGui::EndDisabled();
    hook_widget("Search the corpus");
  } else {  // on the worker: its progress, and Cancel
    const auto [done, total] = c.progress;
    char prog[96];
    std::snprintf(prog, sizeof prog, total > 0 ? "searching: %d of %d lines" : "reading the file...", done, total);
    ImGui::ProgressBar(total > 0 ? static_cast<float>(done) / total : 0.0f, ImVec2(fh * 16, 0), prog);
    ImGui::SameLine();
    if (ImGui::Button("Cancel##corpus")) c.cancel_request = true;
    hook_widget("Cancel corpus search");
    hook::set_text("contrib/corpus_progress", prog);
  }
  if (!c.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", c.error.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", c.error);
  }
  if (!c.note.empty()) {
    text_disabled_wrapped(c.note.c_str());
    hook::add_text("messages", c.note);
  }
}

// One example: the head's (len, len) map on its line, the query -> key cell outlined, `side`
// pixels square; long lines are drawn in blocks (each its largest weight). Returns clicked.
bool hit_map(AppState& s, int i, const std::vector<float>& m, int len, const CorpusHit& h, float side, float peak, MaskKind mask) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  constexpr int kMostCells = 48;  // per side: more cells than pixels say nothing
  const int block = std::max(1, (len + kMostCells - 1) / kMostCells), n = (len + block - 1) / block;
  const float cell = side / n;
  for (int bi = 0; bi < n; ++bi)
    for (int bj = 0; bj < n; ++bj) {
      float v = 0;
      bool seen = false;
      for (int t = bi * block; t < std::min(len, (bi + 1) * block); ++t)
        for (int u = bj * block; u < std::min(len, (bj + 1) * block); ++u)
          if (mask_visible(mask, t, u, len)) v = std::max(v, m[static_cast<size_t>(t) * len + u]), seen = true;
      const std::array<float, 3> rgb = seen ? colormap_rgb(s.view.colormap, std::clamp(v / peak, 0.0f, 1.0f)) : std::array<float, 3>{0.25f, 0.25f, 0.27f};
      dl->AddRectFilled(ImVec2(p0.x + bj * cell, p0.y + bi * cell), ImVec2(p0.x + (bj + 1) * cell, p0.y + (bi + 1) * cell),
                        ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1)));
    }
  const ImVec2 q0(p0.x + (h.key / block) * cell, p0.y + (h.query / block) * cell);
  dl->AddRect(ImVec2(q0.x - 1, q0.y - 1), ImVec2(q0.x + cell + 1, q0.y + cell + 1), IM_COL32(255, 140, 70, 255), 0, 0, 2.0f);
  const std::string id = "corpus hit " + std::to_string(i + 1);
  ImGui::InvisibleButton(id.c_str(), ImVec2(side, side));
  hook_widget(id.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("row = query, column = key; the outlined cell: the example's pair\nclick: put this line into the text");
  return ImGui::IsItemClicked();
}

// The line's tokens as one wrapped run, the query and the key in colour.
void hit_tokens(const std::vector<std::string>& tok, const CorpusHit& h) {
  const float right = ImGui::GetContentRegionMax().x + ImGui::GetWindowPos().x;
  for (int t = 0; t < static_cast<int>(tok.size()); ++t) {
    const std::string shown = glyphs().shown(tok[static_cast<size_t>(t)]);
    const float w = ImGui::CalcTextSize(shown.c_str()).x;
    if (t > 0) {
      ImGui::SameLine(0, 0);
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    if (t == h.query || t == h.key) ImGui::TextColored(t == h.query ? kPendingColour : kAccentColour, "%s", shown.c_str());
    else ImGui::TextUnformatted(shown.c_str());
  }
}

}  // namespace

void draw_corpus(AppState& s) {
  source_row(s);
  const CorpusState::Derived& d = corpus_derived(s);
  if (!d.of) {
    text_disabled_wrapped("Choose a source and press Search: the model on screen reads every line, and the selected head's strongest "
                          "query \xE2\x86\x92 key weights past the first token are listed, each with its line.");
    return;
  }
  ImGui::Separator();
  const CorpusOutcome& o = *d.of;
  char header[320];
  std::snprintf(header, sizeof header, "Head %d.%d over %d lines (%d query rows) of %s: its largest %ss past the first token.", d.layer, d.head,
                o.index->lines, o.index->rows, o.job.label.c_str(), corpus_stat_label(o.index->stat));
  text_disabled_wrapped_at_commas(header);
  same_line_if_fits(ImGui::CalcTextSize("Export corpus search...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export corpus search..."))
    s.dialog_request = AppState::DialogRequest{Dialog::ExportCorpus, dialog_default_path(Dialog::ExportCorpus), false};
  hook_widget("Export corpus search...");
  if (s.result && s.result->fwd && s.result->fwd->weights != o.job.weights)
    text_disabled_wrapped("Searched with the model shown before: press Search to search with the one on screen.");
  if (!d.search) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", d.error.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", d.error);
    return;
  }
  const CorpusSearch& cs = *d.search;
  // The offset profile over the corpus: distances from 0 (a causal head sees none below).
  const bool causal = mask_kind(o.job.cfg) == MaskKind::Causal;
  std::vector<float> bars(cs.by_offset.begin() + (causal && cs.len > 0 ? cs.len - 1 : 0), cs.by_offset.end());
  char overlay[128];
  std::snprintf(overlay, sizeof overlay, "head %d.%d over the corpus: mean weight at distance %d..%d", d.layer, d.head, causal ? 0 : 1 - cs.len,
                cs.len - 1);
  distance_bars("corpus offset profile", bars, overlay);
  text_disabled_wrapped("Left: the query itself (distance 0); right: far back, where only long lines reach (and their first token, where heads park weight, counts).");
  hook::set_nums("contrib/corpus_offsets", cs.by_offset);

  std::vector<float> weights, scores;
  for (const CorpusHit& h : cs.hits) weights.push_back(h.weight), scores.push_back(h.score);
  hook::set_nums("contrib/corpus_weights", weights);
  hook::set_nums("contrib/corpus_scores", scores);
  hook::set_text("contrib/corpus_stat", corpus_stat_name(cs.stat));
  const float fh = ImGui::GetFontSize(), side = fh * 6;
  ImGui::BeginChild("corpus hits", ImVec2(0, std::max(ImGui::GetContentRegionAvail().y, fh * 12)), false);  // on a short screen the tab scrolls to it
  if (!d.maps_ready) {  // the hits' maps are on the corpus worker: the lines meanwhile
    ImGui::TextDisabled("computing the examples' maps...");
    for (int i = 0; i < static_cast<int>(cs.hits.size()); ++i) {
      const CorpusHit& h = cs.hits[static_cast<size_t>(i)];
      ImGui::Text("%d.  %.4g  line %d:  %s", i + 1, h.score, h.line + 1, (*o.lines)[static_cast<size_t>(h.line)].c_str());
    }
  }
  for (int i = 0; d.maps_ready && i < static_cast<int>(cs.hits.size()) && i < static_cast<int>(d.maps.size()); ++i) {
    const CorpusHit& h = cs.hits[static_cast<size_t>(i)];
    const std::vector<std::string>& tok = d.tokens[static_cast<size_t>(i)];
    const int len = static_cast<int>(tok.size());
    ImGui::PushID(i);
    const std::vector<float>& m = d.maps[static_cast<size_t>(i)];
    const float peak = std::max(1e-6f, map_peak(m.data(), len, len, mask_kind(o.job.cfg)));
    if (hit_map(s, i, m, len, h, side, peak, mask_kind(o.job.cfg))) {
      s.text = (*o.lines)[static_cast<size_t>(h.line)];
      s.selected_token = h.query;
    }
    ImGui::SameLine();
    ImGui::BeginGroup();
    char line[200];
    std::snprintf(line, sizeof line, cs.stat == CorpusStat::Weight ? "%d.  %.4f  line %d:  %s \xE2\x86\x92 %s" : "%d.  %.4g  line %d:  %s \xE2\x86\x92 %s", i + 1, h.score, h.line + 1, glyphs().shown(tok[static_cast<size_t>(h.query)]).c_str(),
                  glyphs().shown(tok[static_cast<size_t>(h.key)]).c_str());
    ImGui::TextUnformatted(line);
    hook::add_text("contrib/corpus_lines", (*o.lines)[static_cast<size_t>(h.line)]);
    hit_tokens(tok, h);
    ImGui::EndGroup();
    ImGui::PopID();
  }
  ImGui::EndChild();
}

}  // namespace headmap
