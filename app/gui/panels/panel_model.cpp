// panel_model.cpp: the model view, a layers x heads grid of thumbnails. Click a thumbnail
// to select that layer and head; double-click to open it in the focus view.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"

namespace headmap {

void draw_model(AppState& s, HeatmapRenderer& r) {
  if (!s.result || !s.result->fwd || s.result->fwd->batch.empty()) {
    ImGui::TextDisabled("Nothing to show yet.");
    return;
  }
  const std::shared_ptr<const ForwardData>& fp = s.result->fwd;
  const ForwardOutput& out = fp->out;
  const ModelConfig& cfg = s.result->request.cfg;
  const int b = std::clamp(s.view.batch, 0, out.B - 1);
  const int len = fp->batch.lengths[b];
  const float fh = ImGui::GetFontSize();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float head_w = fh * 4.5f;  // room for "layer 11"
  const float gap = ImGui::GetStyle().ItemSpacing.x;
  const float side = std::max(fh * 2, std::min((avail.x - head_w) / out.Hw - gap, (avail.y - fh * 3) / out.L - gap - fh * 0.2f));

  char hint[160];
  std::snprintf(hint, sizeof hint, "Sentence %d. Layers and heads are numbered from 0. Click: select the layer and head. Double-click: open it in the focus view.", b);
  text_disabled_wrapped(hint);
  // "head 11" is wider than a thumbnail at 12 heads: then the numbers alone, under one "head".
  const bool room = ImGui::CalcTextSize("head 00").x + gap <= side;
  if (room || cfg.pitfalls.head_averaged) ImGui::Dummy(ImVec2(head_w, 0));
  else ImGui::TextUnformatted("head");
  for (int h = 0; h < out.Hw; ++h) {
    ImGui::SameLine(head_w + h * (side + gap) + ImGui::GetStyle().WindowPadding.x);
    ImGui::Text(cfg.pitfalls.head_averaged ? "mean" : room ? "head %d" : "%d", h);
  }
  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.log_scale = s.view.log_scale;
  style.grid = false;
  style.mask = shown_mask(cfg, out.B > 1);
  style.len = len;
  style.filter = shown_filter(s, fp->batch, b);  // the A/B filter, hidden special tokens: dimmed
  r.begin_batch(ImGui::GetWindowDrawList());  // the thumbnails' images merge into one draw call
  for (int l = 0; l < out.L; ++l) {
    ImGui::AlignTextToFramePadding();
    ImGui::Text("layer %d", l);
    for (int h = 0; h < out.Hw; ++h) {
      ImGui::SameLine(head_w + h * (side + gap) + ImGui::GetStyle().WindowPadding.x);
      char tag[48];
      std::snprintf(tag, sizeof tag, "thumb/%d/%d/%d", l, b, h);
      const size_t mi = (static_cast<size_t>(l) * out.B + b) * out.Hw + h;
      MapSource src;  // long maps: from their max-pooled levels
      src.owner = fp;
      src.tag = tag;
      src.data = out.weights(l, b, h);
      src.rows = src.cols = len;
      src.stride = out.T;
      src.levels = mi < fp->levels.size() ? &fp->levels[mi] : nullptr;
      HeatmapView v;
      v.source = &src;
      v.style = style;
      map_range(s, l, b, h, &v.style.vmin, &v.style.vmax);
      v.side = side;
      ImGui::PushID(l * 1000 + h);
      const HeatmapHit hit = heatmap_view("thumb", r, v);
      ImGui::PopID();
      if (s.ablated.count(HeadId{l, h}) && !cfg.pitfalls.head_averaged) mark_head_off(hit.p0, hit.p1);
      if (l == s.view.layer && h == s.view.head)
        ImGui::GetWindowDrawList()->AddRect(ImVec2(hit.p0.x - 3, hit.p0.y - 3), ImVec2(hit.p1.x + 3, hit.p1.y + 3),
                                            IM_COL32(255, 140, 70, 255), 0, 0, 2.5f);
      if (hit.clicked) {
        s.view.layer = l;
        s.view.head = h;
      }
      if (hit.double_clicked && !cfg.pitfalls.head_averaged) s.view.center = CenterPanel::Focus;
      if (hit.hovered) {
        const HeadMetrics& m = fp->metrics[(static_cast<size_t>(l) * out.B + b) * out.Hw + h];
        ImGui::SetTooltip("layer %d, head %d\nentropy %.2f nats, previous-token %.2f, first-token %.2f", l, h, m.entropy, m.prev_token,
                          m.first_token);
      }
    }
  }
  r.end_batch();
}

}  // namespace headmap
