// panel_rollout.cpp: attention rollout (Abnar & Zuidema 2020) as a view of its own: the
// (T, T) map R = Â_{L-1} ... Â_0, Â = (A + I) row-normalised, A the layer's mean over heads
// (or, by choice, one head of the last layer), computed on the worker (contrib.h's
// rollout). Row t says how much of position t's output, through the residual stream and
// every layer's attention, traces back to each input token. Same axis labels as the other
// maps (heatmap_view's axis ticks); exported as a figure (File-style dialog, PNG or SVG).
//
// T = tokens, L = layers, H = heads
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "app/gui/dialogs.h"
#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

void draw_rollout(AppState& s, HeatmapRenderer& r) {
  const ComputeResult* res = s.result.get();
  const ForwardData* f = res ? res->fwd.get() : nullptr;
  const int H = f ? f->out.Hw : s.cfg.num_heads;
  // The heads: their mean, or one head of the last layer.
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Heads");
  ImGui::SameLine();
  std::string current = s.contrib.rollout_head < 0 ? "mean over heads" : "last layer's head " + std::to_string(s.contrib.rollout_head);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("last layer's head 00000").x + ImGui::GetFrameHeight());
  if (ImGui::BeginCombo("##rollout heads", current.c_str())) {
    if (ImGui::Selectable("mean over heads", s.contrib.rollout_head < 0)) s.contrib.rollout_head = -1;
    hook_widget("mean over heads");
    for (int h = 0; h < H; ++h) {
      const std::string label = "last layer's head " + std::to_string(h);
      if (ImGui::Selectable(label.c_str(), s.contrib.rollout_head == h)) s.contrib.rollout_head = h;
      hook_widget(label.c_str());
    }
    ImGui::EndCombo();
  }
  hook_widget("rollout heads");
  same_line_if_fits(ImGui::CalcTextSize("Export rollout...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("Export rollout...")) s.dialog_request = AppState::DialogRequest{Dialog::ExportRollout, dialog_default_path(Dialog::ExportRollout), false};
  hook_widget("Export rollout...");
  text_disabled_wrapped_at_commas("R = (A + I) row-normalised, multiplied layer by layer from layer 0, A the layer's mean over heads "
                                  "(the chosen head at the last layer): row t is how much of position t traces back to each token.");
  if (!res || !f || f->batch.empty() || !res->request.rollout || !(*res->request.rollout == RolloutRequest{std::max(0, s.view.batch), s.contrib.rollout_head}) ||
      res->rollout.empty()) {
    text_disabled_wrapped(f && f->batch.empty() ? "Type a sentence to see its rollout." : "computing the rollout...");
    return;
  }
  const int b = std::clamp(res->request.rollout->batch, 0, f->batch.B() - 1), T = f->out.T, len = f->batch.lengths[b];
  // The rows sum to 1: the largest error is shown (and reported), the check in the window.
  double worst = 0, peak = 0;
  for (int i = 0; i < len; ++i) {
    double sum = 0;
    for (int j = 0; j < len; ++j) sum += res->rollout[static_cast<size_t>(i) * T + j], peak = std::max<double>(peak, res->rollout[static_cast<size_t>(i) * T + j]);
    worst = std::max(worst, std::abs(sum - 1.0));
  }
  hook::set_num("contrib/rollout_row_error", worst);
  char line[160];
  std::snprintf(line, sizeof line, "%s, layers 0-%d, %d tokens; rows sum to 1 (largest error %.1e)",
                s.contrib.rollout_head < 0 ? "mean over heads" : ("head " + std::to_string(s.contrib.rollout_head) + " of the last layer").c_str(),
                f->out.L - 1, len, worst);
  hook::set_text("contrib/rollout_title", line);
  text_disabled_wrapped_at_commas(line);

  const std::vector<std::string> toks(f->labels[b].begin(), f->labels[b].begin() + len);
  const float fh = ImGui::GetFontSize(), lw = std::min(token_label_width(s, b) + fh * 2.5f, fh * 10);
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float legend_h = fh * 3.5f;
  const bool flat = avail.y - legend_h - lw < 0.6f * (avail.y - legend_h);  // rotated key labels would take too much height
  auto side_of = [&](float col_h) { return std::max(fh * 4, std::min(avail.x - lw - fh, avail.y - legend_h - col_h)); };
  const float col_h = flat ? flat_labels_h(flat_label_lines(len, static_cast<float>(len), [&](int k) { return side_of(flat_labels_h(k)); })) : lw;
  const float side = side_of(col_h);
  HeatmapStyle style;
  style.mask = shown_mask(res->request.cfg, f->batch.B() > 1);
  style.colormap = s.view.colormap;
  style.vmin = 0;
  // The peak over rows that see more than one key (map_peak, as the heads' maps): row 0 is 1 on token 0 alone.
  const float row_peak = map_peak(res->rollout.data(), T, len, style.mask);
  style.vmax = row_peak > 0 ? row_peak : peak > 0 ? static_cast<float>(peak) : 1.0f;
  style.log_scale = s.view.log_scale;
  style.grid = s.view.grid_lines;
  style.len = len;
  style.hi_row = s.hover_token;
  style.hi_col = s.hover_token;
  char tag[48];
  std::snprintf(tag, sizeof tag, "rollout/%d/%d", b, res->request.rollout->head);
  const std::shared_ptr<const void> owner = s.result;  // keeps the rollout alive while its texture is cached
  HeatmapView v;
  v.tex = &r.texture(owner, tag, res->rollout.data(), len, len, T, 2048);
  v.style = style;
  v.side = side;
  v.row_labels = v.col_labels = &toks;
  v.label_w = lw;
  v.label_h = col_h;
  v.flat_col_labels = flat;
  v.hover_token = s.hover_token;
  const HeatmapHit hit = heatmap_view("rollout", r, v);
  hook::add_rect("contrib/rollout_map", ImVec2(hit.p0.x, hit.p0.y), ImVec2(hit.p1.x, hit.p1.y));
  hook_widget("rollout map", hit.p0, hit.p1);
  if (hit.hovered) {
    s.hover_token = hit.row;
    ImGui::SetTooltip("query %d \"%s\" traces %.4f back to key %d \"%s\"", hit.row, toks[hit.row].c_str(),
                      res->rollout[static_cast<size_t>(hit.row) * T + hit.col], hit.col, toks[hit.col].c_str());
  }
  colour_legend(style, "rollout weight (rows sum to 1)", std::min(avail.x * 0.4f, fh * 16), nullptr);
}

}  // namespace headmap
