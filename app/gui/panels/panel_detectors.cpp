// panel_detectors.cpp: head detectors as scores (issue 28): previous-token, duplicate-token,
// induction, first-token, and a pattern painted with the mouse on a (T, T) canvas, each
// scored for every head as TransformerLens's head detector does, sum(A * P) / sum(A) over
// the visible cells (contrib.h's detector_scores, on the worker). The scores form a layers
// x heads grid; the heads at or above the threshold are outlined here and in the heads grid
// (detector_marked, app_state.h).
//
// T = tokens, L = layers, H = heads
#include <imgui.h>

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
constexpr std::pair<Detector, const char*> kDetectors[] = {{Detector::PreviousToken, "previous token"},
                                                           {Detector::DuplicateToken, "duplicate token"},
                                                           {Detector::Induction, "induction"},
                                                           {Detector::FirstToken, "first token"},
                                                           {Detector::Painted, "painted pattern"}};
const char* label_of(Detector d) {
  for (const auto& [k, l] : kDetectors)
    if (k == d) return l;
  return "";
}

// The canvas: one square per cell of the (T, T) pattern, row = query, column = key; the
// left button paints 1, the right button erases, dragging over cells.
void paint_canvas(AppState& s, const ForwardData& f, int b) {
  ContribState& c = s.contrib;
  const int T = f.out.T, len = f.batch.lengths[b];
  if (c.painted_T != T) {  // the sentence changed length: the painted cells that still fit are kept
    std::vector<float> p(static_cast<size_t>(T) * T, 0.0f);
    for (int i = 0; i < std::min(T, c.painted_T); ++i)
      for (int j = 0; j < std::min(T, c.painted_T); ++j) p[static_cast<size_t>(i) * T + j] = c.painted[static_cast<size_t>(i) * c.painted_T + j];
    c.painted = std::move(p);
    c.painted_T = T;
  }
  ImGui::TextUnformatted("Start from");
  for (Detector d : {Detector::PreviousToken, Detector::DuplicateToken, Detector::Induction, Detector::FirstToken}) {
    same_line_if_fits(ImGui::CalcTextSize(label_of(d)).x + ImGui::GetStyle().FramePadding.x * 2);
    if (ImGui::SmallButton(label_of(d))) c.painted = detector_pattern(d, f.batch.sentences[b].tokens, T);
    hook_widget((std::string("start from ") + label_of(d)).c_str());
  }
  same_line_if_fits(ImGui::CalcTextSize("Clear").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::SmallButton("Clear##paint")) std::fill(c.painted.begin(), c.painted.end(), 0.0f);
  hook_widget("Clear##paint");
  text_disabled_wrapped("Paint with the left button, erase with the right (rows: queries, columns: keys).");
  const float fh = ImGui::GetFontSize();
  const float side = std::max(fh * 6, std::min(ImGui::GetContentRegionAvail().x - fh * 2, fh * 16));
  const float cell = side / std::max(1, len);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("paint canvas", ImVec2(side, side), ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  const bool causal = shown_mask(s.result->request.cfg, f.batch.B() > 1) == MaskKind::Causal;
  if (ImGui::IsItemActive() || ImGui::IsItemClicked(ImGuiMouseButton_Left) || ImGui::IsItemClicked(ImGuiMouseButton_Right)) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int i = static_cast<int>((m.y - o.y) / cell), j = static_cast<int>((m.x - o.x) / cell);
    if (i >= 0 && i < len && j >= 0 && j < len) {
      const bool erase = ImGui::IsMouseDown(ImGuiMouseButton_Right);
      c.painted[static_cast<size_t>(i) * T + j] = erase ? 0.0f : 1.0f;
    }
  }
  int painted = 0;
  for (int i = 0; i < len; ++i)
    for (int j = 0; j < len; ++j) {
      const ImVec2 p0(o.x + j * cell, o.y + i * cell), p1(p0.x + cell, p0.y + cell);
      const bool on = c.painted[static_cast<size_t>(i) * T + j] > 0;
      painted += on;
      const bool hidden = causal && j > i;  // never scored: the mask hides it
      dl->AddRectFilled(p0, p1, on ? IM_COL32(250, 200, 60, 255) : hidden ? IM_COL32(40, 40, 44, 255) : IM_COL32(70, 70, 78, 255));
      if (cell >= 6) dl->AddRect(p0, p1, IM_COL32(25, 25, 30, 255));
      if (len <= 64) {
        char id[32];
        std::snprintf(id, sizeof id, "paint %d,%d", i, j);
        hook_widget(id, p0, p1);
      }
    }
  hook::set_int("contrib/painted_cells", painted);
  if (ImGui::IsItemHovered()) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int i = static_cast<int>((m.y - o.y) / cell), j = static_cast<int>((m.x - o.x) / cell);
    if (i >= 0 && i < len && j >= 0 && j < len)
      ImGui::SetTooltip("query %d \"%s\", key %d \"%s\"", i, glyphs().shown(f.labels[b][i]).c_str(), j, glyphs().shown(f.labels[b][j]).c_str());
  }
}
}  // namespace

void draw_detectors(AppState& s) {
  ContribState& c = s.contrib;
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Pattern");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("duplicate token 000").x + ImGui::GetFrameHeight());
  if (ImGui::BeginCombo("##detector", label_of(c.detector))) {
    for (const auto& [d, label] : kDetectors) {
      if (ImGui::Selectable(label, c.detector == d)) c.detector = d;
      hook_widget(label);
    }
    ImGui::EndCombo();
  }
  hook_widget("detector");
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Threshold");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, ImGui::GetFontSize() * 12));
  ImGui::SliderFloat("##threshold", &c.threshold, 0.0f, 1.0f, "%.2f", ImGuiSliderFlags_AlwaysClamp);
  hook_widget("detector threshold");
  const HeadMetricInfo& metric = head_metric_info(detector_metric(c.detector));  // the one name (metrics.h), as the CLI and exports give it
  hook::set_text("contrib/detector_metric", metric.name);
  text_disabled_wrapped_at_commas(std::string("Score: the ") + metric.name + ", " + metric.definition +
                                  ": the share of the head's attention that falls on the pattern. Heads at or above the threshold are "
                                  "outlined, here and in the Heads tab.");
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  if (!f || f->batch.empty()) {
    text_disabled_wrapped("Type a sentence to score its heads.");
    return;
  }
  const int b = std::clamp(s.view.batch, 0, f->batch.B() - 1);
  if (!res->request.cfg.causal)  // encoders: what the causal patterns mean when every key is seen (contrib.h)
    text_disabled_wrapped_at_commas("No causal mask: each query also sees the keys after it, and they count in sum(A). Previous token is "
                                    "still the key at i-1, duplicate an earlier copy of the token, induction the token after an "
                                    "earlier copy.");
  if (c.detector == Detector::Painted) paint_canvas(s, *f, b);
  const DetectorRequest want = *compute_request(s).detectors;
  if (!res->request.detectors || !(*res->request.detectors == want) || res->detector_scores.empty()) {
    text_disabled_wrapped(c.detector == Detector::Painted && c.painted_T != f->out.T ? "paint a pattern" : "scoring the heads...");
    return;
  }
  hook::set_nums("contrib/detector_scores", res->detector_scores);
  HeadGrid g;
  g.id = "detector";
  g.L = f->out.L;
  g.H = f->out.Hw;
  g.values = res->detector_scores.data();
  g.peak = 1.0f;
  for (int l = 0; l < g.L; ++l)
    for (int h = 0; h < g.H; ++h) g.marked.push_back(detector_marked(s, l, h));
  const std::string tip = std::string("head %d.%d: ") + metric.name + " %.4f\nclick: open it in Focus";
  g.tooltip = tip.c_str();
  const HeadGridHit hit = head_grid(s, g);
  if (hit.clicked) {
    s.view.layer = hit.layer;
    s.view.head = hit.head;
    s.view.batch = b;
    s.view.center = CenterPanel::Focus;
  }
  // "Heads with an induction pattern share at or above 0.30: head 1.1 (0.41)": a head named
  // as a head, its score beside it, never a bare "1.1" that reads as a score.
  std::string above;
  int n_above = 0;
  for (int l = 0; l < g.L; ++l)
    for (int h = 0; h < g.H; ++h)
      if (g.marked[static_cast<size_t>(l) * g.H + h]) {
        char one[64];
        std::snprintf(one, sizeof one, "head %d.%d (%.2f)", l, h, g.values[static_cast<size_t>(l) * g.H + h]);
        above += (above.empty() ? "" : ", ") + std::string(one);
        ++n_above;
      }
  char lead[64];
  std::snprintf(lead, sizeof lead, " at or above %.2f: ", c.threshold);
  const std::string line = std::string("Heads whose ") + metric.name + " is" + lead + (n_above == 0 ? std::string("none") : above);
  hook::set_text("contrib/detector_line", line);
  text_disabled_wrapped_at_commas(line);
}

}  // namespace headmap
