// panel_circuits.cpp: what the selected head reads and writes from the weights alone (issue 39,
// point 3; core/inspect/circuits.h). Its OV circuit E W_OV U^T and QK circuit E W_QK E^T over
// the text's tokens and its top directions' tokens, side by side; the token each text token
// promotes; its copying score; its top singular directions read in the vocabulary; the learned
// positions' QK where the family has them (else why not); and every earlier head's Q, K or V
// composition into it as a layers x heads grid, a click selecting that head. The text only
// picks the tokens shown: the rest is cached per model on the worker. Exported as JSON, or the
// two maps as PNG or SVG (dialogs.h's circuits_figure).
//
// n = tokens shown, L = layers, H = heads, P = learned positions shown
#include <imgui.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app/common/colormap.h"
#include "app/gui/dialogs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

namespace {

// A signed (n, n) matrix at the cursor, `side` pixels square: row labels at the left, column
// labels above (rotated), each cell the colormap from -m to m (m its largest magnitude), as
// the exported figure colours it. A hovered cell's tooltip names both tokens.
void signed_map(AppState& s, const char* id, const float* v, int n, const std::vector<std::string>& labels, float side, float label_w,
                const char* row_word, const char* col_word) {
  const float fh = ImGui::GetFontSize();
  const float cell = side / std::max(n, 1);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const ImVec2 g0(top.x + label_w, top.y + label_w), g1(g0.x + cell * n, g0.y + cell * n);
  float peak = 0;
  for (int i = 0; i < n * n; ++i) peak = std::max(peak, std::abs(v[i]));
  if (peak <= 0) peak = 1;
  const int every = std::max(1, static_cast<int>(std::ceil(fh / cell)));
  const ImU32 ink = ImGui::GetColorU32(ImGuiCol_Text);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const std::array<float, 3> rgb = colormap_rgb(s.view.colormap, std::clamp(0.5f + 0.5f * v[i * n + j] / peak, 0.0f, 1.0f));
      dl->AddRectFilled(ImVec2(g0.x + j * cell, g0.y + i * cell), ImVec2(g0.x + (j + 1) * cell, g0.y + (i + 1) * cell),
                        ImGui::GetColorU32(ImVec4(rgb[0], rgb[1], rgb[2], 1)));
    }
    if (i % every) continue;
    const std::string& t = labels[static_cast<size_t>(i)];
    const char* end = t.c_str() + t.size();
    while (end > t.c_str() && ImGui::CalcTextSize(t.c_str(), end).x > label_w - 4) --end;  // cut to the room
    dl->AddText(ImVec2(top.x, g0.y + i * cell + (cell - fh) * 0.5f), ink, t.c_str(), end);
    add_text_vertical(dl, ImVec2(g0.x + i * cell + (cell - fh) * 0.5f, g0.y - 2), ink, t.c_str(), end);
  }
  ImGui::SetCursorScreenPos(top);
  ImGui::InvisibleButton(id, ImVec2(label_w + cell * n, label_w + cell * n));
  hook_widget(id, g0, g1);
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetMousePos();
    if (m.x >= g0.x && m.y >= g0.y) {
      const int i = std::clamp(static_cast<int>((m.y - g0.y) / cell), 0, n - 1), j = std::clamp(static_cast<int>((m.x - g0.x) / cell), 0, n - 1);
      ImGui::SetTooltip("%s \"%s\", %s \"%s\": %.4g", row_word, labels[static_cast<size_t>(i)].c_str(), col_word, labels[static_cast<size_t>(j)].c_str(),
                        v[i * n + j]);
    }
  }
}

// The OV and QK maps side by side (one under the other in a narrow column), and what they say.
void circuit_maps(AppState& s, const HeadCircuit& c, const ModelWeights& w, int text_tokens) {
  const float fh = ImGui::GetFontSize(), gap = ImGui::GetStyle().ItemSpacing.x * 2;
  std::vector<std::string> labels;
  float widest = 0;
  for (int id : c.tokens) {
    labels.push_back(token_name(w, id));
    widest = std::max(widest, ImGui::CalcTextSize(labels.back().c_str()).x);
  }
  const int n = static_cast<int>(c.tokens.size());
  const float label_w = std::min(widest + 6, fh * 7);
  const float avail = ImGui::GetContentRegionAvail().x;
  const bool beside = avail >= 2 * (label_w + fh * 12) + gap;
  const float side = std::clamp(beside ? (avail - gap) / 2 - label_w : avail - label_w, fh * 6, fh * 24);
  auto map = [&](const char* title, const char* id, const std::vector<float>& v, const char* row_word, const char* col_word) {
    ImGui::BeginGroup();
    ImGui::TextUnformatted(title);
    signed_map(s, id, v.data(), n, labels, side, label_w, row_word, col_word);
    ImGui::EndGroup();
  };
  map("OV: attended to (row) \xE2\x86\x92 written (column)", "circuit OV", c.ov, "attended to", "writes");
  if (beside) ImGui::SameLine(0, gap);
  map("QK: query (row) \xE2\x86\x92 key (column)", "circuit QK", c.qk, "query", "key");
  text_disabled_wrapped("Each map coloured from -m to m, m its largest magnitude: the text's tokens first, then its top directions' tokens.");

  // What each of the text's tokens, attended to, raises most.
  std::string promotes = "Promotes (each text token, attended to, raises most):";
  for (int i = 0; i < std::min(text_tokens, n); ++i) {
    int best = 0;
    for (int j = 1; j < n; ++j)
      if (c.ov[static_cast<size_t>(i) * n + j] > c.ov[static_cast<size_t>(i) * n + best]) best = j;
    promotes += (i ? ", " : " ") + labels[static_cast<size_t>(i)] + " \xE2\x86\x92 " + labels[static_cast<size_t>(best)];
  }
  text_disabled_wrapped_at_commas(promotes);
  hook_widget("circuit promotes");
}

// The top singular directions of W_OV, each read in the vocabulary.
void directions_table(const HeadCircuit& c, const ModelWeights& w) {
  if (!ImGui::BeginTable("circuit directions", 3, ImGuiTableFlags_Borders | ImGuiTableFlags_SizingStretchProp)) return;
  ImGui::TableSetupColumn("sigma", ImGuiTableColumnFlags_WidthFixed, ImGui::GetFontSize() * 4);
  ImGui::TableSetupColumn("reads (tokens its input direction picks up)");
  ImGui::TableSetupColumn("writes (tokens its output raises)");
  ImGui::TableHeadersRow();
  auto list = [&](const std::vector<int>& ids) {
    std::string t;
    for (int id : ids) t += (t.empty() ? "" : "  ") + token_name(w, id);
    ImGui::TextWrapped("%s", t.c_str());
  };
  for (const HeadCircuit::Direction& d : c.directions) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%.3g", d.sigma);
    ImGui::TableNextColumn();
    list(d.reads);
    ImGui::TableNextColumn();
    list(d.writes);
  }
  ImGui::EndTable();
  hook_widget("circuit directions");
}

// Where positions enter the head's scores, and their own QK where the family learns them.
void positions_part(AppState& s, const HeadCircuit& c, const ModelWeights& w) {
  if (!c.qk_pos.empty()) {
    const int P = static_cast<int>(std::lround(std::sqrt(static_cast<double>(c.qk_pos.size()))));
    std::vector<std::string> labels;
    for (int p = 0; p < P; ++p) labels.push_back(std::to_string(p));
    ImGui::TextWrapped("Positions' QK (learned positions, apart from the tokens): query position (row), key position (column)");
    const float fh = ImGui::GetFontSize();
    signed_map(s, "circuit positions", c.qk_pos.data(), P, labels, std::min(ImGui::GetContentRegionAvail().x - fh * 2.5f, fh * 14), fh * 2,
               "query position", "key position");
    return;
  }
  text_disabled_wrapped(w.arch.rotary() ? "Rotary positions: Q and K are rotated by position, so the QK above is content alone, as at distance 0 "
                                          "(Offsets shows which frequencies the head uses)."
                                        : "This family adds no position to the embeddings: the QK above is the whole score from the embeddings.");
  hook_widget("circuit no positions");
}

// Every earlier head's Q, K or V composition into (layer, head), a click selecting it.
void composition_part(AppState& s, const CompositionRow& row, int d_model) {
  ContribState& c = s.contrib;
  ImGui::AlignTextToFramePadding();
  ImGui::Text("Composition into head %d.%d:", row.layer, row.head);
  for (int k = 0; k < 3; ++k) {
    static const char* const names[] = {"Q", "K", "V"};
    ImGui::SameLine();
    if (ImGui::RadioButton(names[k], c.circuits_composition == k)) c.circuits_composition = k;
    hook_widget(names[k]);
  }
  if (row.layer == 0) {
    text_disabled_wrapped("Layer 0 reads the embeddings alone: no earlier head writes into it.");
    hook_widget("no composition");
    return;
  }
  char line[320];
  std::snprintf(line, sizeof line,
                "how much of each earlier head's output lies in what this head's %s read, TransformerLens's score (1 when all of it does, "
                "about 1/sqrt(D) = %.2f for random maps). Click a head to select it.",
                c.circuits_composition == 0 ? "queries" : c.circuits_composition == 1 ? "keys" : "values",
                1.0 / std::sqrt(static_cast<double>(std::max(1, d_model))));
  text_disabled_wrapped_at_commas(line);
  const std::vector<float>& v = c.circuits_composition == 0 ? row.q : c.circuits_composition == 1 ? row.k : row.v;
  HeadGrid g;
  g.id = "composition";
  g.L = row.layer;  // the earlier layers' rows of the (L, H) row
  g.H = row.H;
  g.values = v.data();
  g.peak = std::max(1e-6f, *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(row.layer) * row.H));
  g.tooltip = "head %d.%d composes into this one: %.4f\nclick: select it";
  // At most 12 lines tall, scrolled inside beyond (a deep model's earlier layers).
  const float fh = ImGui::GetFontSize(), need = fh + 4 + row.layer * (fh * 1.4f + 2) + ImGui::GetStyle().ItemSpacing.y;
  ImGui::BeginChild("composition rows", ImVec2(0, std::min(need, fh * 12)));
  const HeadGridHit hit = head_grid(s, g);
  ImGui::EndChild();
  if (hit.clicked) {
    s.view.layer = hit.layer;
    s.view.head = hit.head;
  }
}

}  // namespace

void draw_circuits(AppState& s) {
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  const int layer = std::clamp(s.view.layer, 0, std::max(0, s.cfg.num_layers - 1)), head = std::clamp(s.view.head, 0, std::max(0, s.cfg.num_heads - 1));
  const bool ours = res && res->request.circuits && *res->request.circuits == CircuitsRequest{std::max(0, s.view.batch), layer, head};
  if (!f || f->batch.empty() || !f->weights) {
    text_disabled_wrapped("Type a sentence: a head's circuits come from the weights alone, shown over the text's tokens.");
    return;
  }
  if (!ours || (!res->composition && res->circuit_error.empty())) {
    char wait[160];
    std::snprintf(wait, sizeof wait, "computing head %d.%d's circuits (a model's first head reads its whole vocabulary)...", layer, head);
    text_disabled_wrapped(wait);
    return;
  }
  const ModelWeights& w = *f->weights;
  char header[200];
  std::snprintf(header, sizeof header, "Head %d.%d from the weights alone (the text picks only the tokens shown). Select a head on the heads grid or below.",
                layer, head);
  text_disabled_wrapped_at_commas(header);
  same_line_if_fits(ImGui::CalcTextSize("Export circuits...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export circuits..."))
    s.dialog_request = AppState::DialogRequest{Dialog::ExportCircuits, dialog_default_path(Dialog::ExportCircuits), false};
  hook_widget("Export circuits...");

  if (res->composition) composition_part(s, *res->composition, w.d_model);
  ImGui::Separator();
  if (res->circuit) {
    const HeadCircuit& c = *res->circuit;
    if (w.arch.encoder())
      text_disabled_wrapped("An encoder: its output is read through the masked-LM decoder alone (the head's dense layer, GELU and norm before it "
                            "are left out), so OV and the copying score say what a head adds toward a token, not the prediction.");
    ImGui::Text("Copying score %.3f", c.copying);
    hook_widget("circuit copying");
    text_disabled_wrapped("the full OV circuit's eigenvalues, sum / sum of |.|: near 1, the head copies what it attends to; near -1, it suppresses it.");
    std::vector<int> distinct;  // the text's distinct tokens: the first rows and columns
    const auto& sent = f->batch.sentences[static_cast<size_t>(std::clamp(res->request.circuits->batch, 0, f->batch.B() - 1))];
    for (const Token& t : sent.tokens)
      if (std::find(distinct.begin(), distinct.end(), t.id) == distinct.end()) distinct.push_back(t.id);
    circuit_maps(s, c, w, static_cast<int>(distinct.size()));
    directions_table(c, w);
    positions_part(s, c, w);
  } else {
    const std::string why = "No OV or QK circuit: " + res->circuit_error;
    text_disabled_wrapped(why.c_str());
    hook_widget("no circuit");
    hook::add_text("messages", why);
  }
}

}  // namespace headmap
