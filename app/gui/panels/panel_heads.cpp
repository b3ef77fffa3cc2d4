// panel_heads.cpp: one heatmap per head of the chosen layer and sentence, titled with its
// index, d_head and entropy (and its label when the metrics give one). Hover a cell for the
// query, key, weight and raw score; hover a token anywhere to light its row and column in
// every head; click a head to open it in the focus view. Long maps are drawn from their
// max-pooled levels, and the wheel zooms every head at once (drag pans).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"
#include "core/inspect/metrics.h"
#include "core/inspect/predictions.h"

namespace headmap {

// Picks the number of columns that gives the largest square maps in the space available.
static int grid_columns(int n, float avail_w, float avail_h, float extra_w, float extra_h, float* side) {
  int best = 1;
  *side = 0;
  for (int cols = 1; cols <= n; ++cols) {
    const int rows = (n + cols - 1) / cols;
    const float s = std::min(avail_w / cols - extra_w, avail_h / rows - extra_h);
    if (s > *side) {
      *side = s;
      best = cols;
    }
  }
  return best;
}

static void head_tooltip(const AppState& s, const ForwardData& f, int l, int b, int h, int t, int k) {
  const ForwardOutput& out = f.out;
  const std::vector<std::string>& toks = f.labels[b];
  const float w = out.weights(l, b, h)[static_cast<size_t>(t) * out.T + k];
  ImGui::BeginTooltip();
  ImGui::Text("query  %d  \"%s\"", t, toks[t].c_str());
  ImGui::Text("key    %d  \"%s\"", k, toks[k].c_str());
  ImGui::Separator();
  ImGui::Text("weight      %.4f", w);
  const ModelConfig& cfg = s.result->request.cfg;
  if (!cfg.pitfalls.head_averaged && !cfg.pitfalls.no_transpose) {  // no-transpose: row t is not token t
    const MhaOptions mo = mha_options(cfg);
    const MatR& x = out.attn_in[l];  // (B*T, D)
    const float raw = head_score(f.weights->layers[l], x.row(static_cast<Eigen::Index>(b) * out.T + t).data(),
                                 x.row(static_cast<Eigen::Index>(b) * out.T + k).data(), h, mo);
    ImGui::Text("raw score   %.4f   (q\xC2\xB7k)", raw);
    ImGui::Text("scaled      %.4f   (\xC3\xB7 %.3g)", raw * score_scale(cfg.d_model, mo), 1.0f / score_scale(cfg.d_model, mo));
  }
  if (!key_visible(mha_options(cfg), t, k, f.batch.lengths[b]))
    ImGui::TextDisabled("hidden by the mask");
  ImGui::EndTooltip();
}

// Switches a head off, or on again (ablation): its box, or a right-click on its map.
static void toggle_ablation(AppState& s, HeadId id) {
  if (!s.ablated.erase(id)) s.ablated.insert(id);
}

void draw_heads(AppState& s, HeatmapRenderer& r) {
  if (!s.compute_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s%s", s.compute_error.c_str(), s.result ? " Showing the last result." : "");
    ImGui::PopStyleColor();
    s.report.messages.push_back(s.compute_error);
  }
  if (!s.result || !s.result->fwd) {
    if (!s.config_status.ok()) ImGui::TextWrapped("Fix the configuration to see the heads: %s", s.config_status.error().message.c_str());
    else if (s.compute_error.empty()) ImGui::TextDisabled("Computing...");
    return;
  }
  const std::shared_ptr<const ForwardData>& fp = s.result->fwd;
  const ForwardData& f = *fp;
  const ForwardOutput& out = f.out;
  const ModelConfig& cfg = s.result->request.cfg;
  if (f.batch.empty()) {
    ImGui::TextWrapped("Nothing to attend over: the text has no tokens. Type a sentence, or pick one from Presets.");
    return;
  }
  int& layer = s.view.layer;
  int& batch = s.view.batch;
  layer = std::clamp(layer, 0, out.L - 1);
  batch = std::clamp(batch, 0, out.B - 1);

  // Header: which layer and sentence, and where the weights come from.
  // Indices are numbered from 0 (as headmap-cli, the exports and numpy number them), and say so.
  char layer_fmt[48], sentence_fmt[48];
  std::snprintf(layer_fmt, sizeof layer_fmt, "layer %%d (of 0-%d)", out.L - 1);
  std::snprintf(sentence_fmt, sizeof sentence_fmt, "sentence %%d (of 0-%d)", out.B - 1);
  const float pad = ImGui::GetStyle().FramePadding.x * 2 + ImGui::GetFontSize();
  ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::CalcTextSize(layer_fmt).x + pad));
  ImGui::SliderInt("##layer", &layer, 0, out.L - 1, layer_fmt);
  if (out.B > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::CalcTextSize(sentence_fmt).x + pad));
    ImGui::SliderInt("##sentence", &batch, 0, out.B - 1, sentence_fmt);
  }
  // The header's items wrap onto a new line when the window is narrow (a projector).
  char text[96];
  std::snprintf(text, sizeof text, "  %.1f ms", f.compute_ms);
  same_line_if_fits(ImGui::CalcTextSize(text).x);
  ImGui::TextDisabled("%s", text);
  if (f.weights->trained() && out.loss_tokens > 0) {
    // The pruning exercise: switch heads off (the boxes by the titles) and watch this move.
    const int off = static_cast<int>(s.result->request.ablated.size());
    std::snprintf(text, sizeof text, "  loss on this text %.3f nats/token", out.loss);
    same_line_if_fits(ImGui::CalcTextSize(text).x);
    ImGui::TextUnformatted(text);
    if (off) {
      std::snprintf(text, sizeof text, "(%d head%s off)", off, off == 1 ? "" : "s");
      same_line_if_fits(ImGui::CalcTextSize(text).x);
      ImGui::TextColored(kPendingColour, "%s", text);
    }
    if (!cfg.causal) {  // the model can see the answer: say so beside the loss
      const std::string note = std::string("(") + kCausalOffLossNote + ")";
      same_line_if_fits(ImGui::CalcTextSize(note.c_str()).x);
      ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(note.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
      s.report.messages.push_back(kCausalOffLossNote);
    }
  }
  if (s.stale) {
    same_line_if_fits(ImGui::CalcTextSize("  updating...").x);
    ImGui::TextColored(kPendingColour, "  updating...");
  } else if (!f.complete) {  // a long request shows its visible layer first
    ImGui::SameLine();
    ImGui::TextColored(kPendingColour, "  layers %d to %d still computing...", out.L, cfg.num_layers - 1);
  }

  if (!s.config_status.ok()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("Showing the last valid configuration (d_model %d, %d heads). %s", cfg.d_model, cfg.num_heads,
                       s.config_status.error().message.c_str());
    ImGui::PopStyleColor();
  }
  const int len = f.batch.lengths[batch];
  const std::vector<std::string>& toks = f.labels[batch];
  const float fh = ImGui::GetFontSize();
  const float title_h = ImGui::GetTextLineHeightWithSpacing();
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 2.5f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2;
  // Try with token labels; drop them if the cells would be too small to read.
  // Labels thin out to what fits (heatmap_view), so they stay unless they would take more
  // than a third of each map's room.
  const float lw = std::min(token_label_width(s, batch), fh * 10) + 8;
  float side = 0, bare = 0;
  int cols = grid_columns(out.Hw, avail.x, avail.y - legend_h, lw + gap, title_h + lw + gap, &side);
  const int bare_cols = grid_columns(out.Hw, avail.x, avail.y - legend_h, gap, title_h + gap, &bare);
  const bool labels = side >= bare * 0.67f && side >= fh * 4;
  if (!labels) cols = bare_cols, side = bare;
  side = std::max(side, 24.0f);
  // A title may use its map's width and the gap to the next column, less the usual spacing
  // (the row's spare width lies after its last column, not between columns: titles that
  // used a share of it ran into the next column's box at 1024x768).
  const float title_room = side + gap - ImGui::GetStyle().ItemSpacing.x;
  // Head ablation: a box before each title switches the head's output off (its pattern stays
  // on screen); so does a right-click on the map, which is all there is room for when the
  // box and the widest number do not fit (128 heads on a 1024x768 projector): then no title
  // has a box, rather than some.
  const bool can_ablate = !cfg.pitfalls.head_averaged && cfg.num_heads == s.cfg.num_heads && cfg.num_layers == s.cfg.num_layers;
  const float box_w = ImGui::GetFontSize() + 2.0f + ImGui::GetStyle().ItemInnerSpacing.x + 1.0f;  // frame padding 1, then the inner spacing
  const bool boxes = can_ablate && ImGui::CalcTextSize(std::to_string(out.Hw - 1).c_str()).x + box_w <= title_room;

  // The zoom window, in cells, the same for every head.
  float& zoom = s.view.heads_zoom;
  zoom = std::clamp(zoom, 1.0f, std::max(1.0f, len / 4.0f));
  const float half = 0.5f / zoom;
  s.view.heads_pan_x = std::clamp(s.view.heads_pan_x, half, 1 - half);
  s.view.heads_pan_y = std::clamp(s.view.heads_pan_y, half, 1 - half);

  float vmin = 0, vmax = 1;
  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.log_scale = s.view.log_scale;
  style.grid = s.view.grid_lines;
  style.mask = shown_mask(cfg, out.B > 1);
  style.len = len;
  style.hi_row = s.hover_token >= 0 ? s.hover_token : -1;
  style.hi_col = s.hover_key >= 0 ? s.hover_key : s.hover_token;
  style.col0 = (s.view.heads_pan_x - half) * len;
  style.col1 = (s.view.heads_pan_x + half) * len;
  style.row0 = (s.view.heads_pan_y - half) * len;
  style.row1 = (s.view.heads_pan_y + half) * len;
  int hovered_row = -1, hovered_col = -1;
  const int deferred_before = r.deferred();

  // Each cell at its column's own x, so a title wider than its map cannot push the rest of
  // the row along (and the last column off the window).
  const float x0 = ImGui::GetCursorPosX(), cell = side + (labels ? lw : 0.0f) + gap;
  r.begin_batch(ImGui::GetWindowDrawList());  // the maps' images merge into one draw call
  for (int h = 0; h < out.Hw; ++h) {
    if (h % cols != 0) ImGui::SameLine(x0 + static_cast<float>(h % cols) * cell);
    ImGui::BeginGroup();
    const size_t mi = (static_cast<size_t>(layer) * out.B + batch) * out.Hw + h;
    const HeadMetrics& m = f.metrics[mi];
    const std::vector<float>& probes = s.result->induction;  // (L, H); empty until the probe is done
    const float probe = (!cfg.pitfalls.head_averaged && !probes.empty()) ? probes[static_cast<size_t>(layer) * out.H + h] : 0.0f;
    const float ind = label_induction(probe, mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf(""));
    const HeadLabel label = cfg.pitfalls.head_averaged ? HeadLabel::None : head_label(m, ind);
    bool show_label = label != HeadLabel::None;  // dropped from the title when even "head N" and it do not fit (tooltip)
    char title[160];
    if (cfg.pitfalls.head_averaged)
      std::snprintf(title, sizeof title, "mean of %d heads  \xC2\xB7  %.2f nats", cfg.num_heads, m.entropy);
    else {
      // Grouped-query and multi-query attention: which K/V head this query head shares.
      char kv[48] = "";
      if (cfg.kv_heads() < cfg.num_heads)
        std::snprintf(kv, sizeof kv, "  \xC2\xB7  K/V %d", h / (cfg.num_heads / cfg.kv_heads()));
      std::snprintf(title, sizeof title, "head %d%s  \xC2\xB7  d_head %d  \xC2\xB7  %.2f nats", h, kv, cfg.d_head(), m.entropy);
      // Title and label must fit above the map, or the grid's columns drift and the label is
      // clipped: drop d_head (the controls show it), then the entropy (the tooltip has it),
      // then the K/V head (the tooltip has it too).
      // The ablation box, if any; the label follows the title at the usual spacing.
      const float box = boxes ? box_w : 0.0f;
      float extra = box + (label != HeadLabel::None ? ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(head_label_name(label)).x : 0.0f);
      if (ImGui::CalcTextSize(title).x + extra > title_room)
        std::snprintf(title, sizeof title, "head %d%s  \xC2\xB7  %.2f nats", h, kv, m.entropy);
      if (ImGui::CalcTextSize(title).x + extra > title_room) std::snprintf(title, sizeof title, "head %d%s", h, kv);
      if (kv[0] && ImGui::CalcTextSize(title).x + extra > title_room) {  // the K/V head outranks the label (in the tooltip)
        show_label = false;
        extra = box;
        if (ImGui::CalcTextSize(title).x + extra > title_room) std::snprintf(title, sizeof title, "%d%s", h, kv);
      }
      if (ImGui::CalcTextSize(title).x + extra > title_room) std::snprintf(title, sizeof title, "head %d", h);
      // The label outranks the word "head": "13 broad" before "head 13".
      if (show_label && ImGui::CalcTextSize(title).x + extra > title_room) std::snprintf(title, sizeof title, "%d", h);
      if (show_label && ImGui::CalcTextSize(title).x + extra > title_room) {
        show_label = false;
        std::snprintf(title, sizeof title, "head %d", h);
      }
      if (ImGui::CalcTextSize(title).x + box > title_room) std::snprintf(title, sizeof title, "%d", h);
    }
    if (labels) ImGui::SetCursorPosX(ImGui::GetCursorPosX() + lw);
    const ImVec2 title_p0 = ImGui::GetCursorScreenPos();
    if (boxes) {
      const HeadId id{layer, h};
      bool on = s.ablated.count(id) == 0;
      ImGui::PushID(h);
      ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(1, 1));
      if (ImGui::Checkbox("##on", &on)) toggle_ablation(s, id);
      report_widget(s, ("switch " + std::to_string(layer) + "." + std::to_string(h)).c_str());
      ImGui::PopStyleVar();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Switch this head off: its output is zeroed before W_O (ablation). Or right-click its map.");
      ImGui::PopID();
      ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    }
    ImGui::TextUnformatted(title);
    s.report.head_titles.push_back(title);
    if (show_label) {
      ImGui::SameLine();
      ImGui::TextColored(kAccentColour, "%s", head_label_name(label));
    }
    s.report.head_title_rects.push_back({title_p0.x, title_p0.y, ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y});
    if (ImGui::IsItemHovered()) {
      // Induction: the probe's score, and the text's own where it repeats a run of tokens.
      const float text_ind = mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf("");
      char text_part[96] = "";
      if (!std::isnan(text_ind)) std::snprintf(text_part, sizeof text_part, ", %.2f on this text's repeated runs", text_ind);
      ImGui::SetTooltip("head %d (of heads 0-%d), layer %d (of 0-%d)\n%s%sentropy %.3f nats (%.2f of the maximum)\n"
                        "previous-token %.2f   first-token %.2f   self %.2f\npeak weight %.2f   induction %.2f on the probe%s",
                        h, out.Hw - 1, layer, out.L - 1, show_label || label == HeadLabel::None ? "" : head_label_name(label),
                        show_label || label == HeadLabel::None ? "" : "\n", m.entropy, m.entropy_norm, m.prev_token, m.first_token, m.self,
                        m.max_weight, probe, text_part);
    }
    map_range(s, layer, batch, h, &vmin, &vmax);
    style.vmin = vmin;
    style.vmax = vmax;
    char tag[64];
    std::snprintf(tag, sizeof tag, "w/%d/%d/%d", layer, batch, h);
    MapSource src;
    src.owner = fp;
    src.tag = tag;
    src.data = out.weights(layer, batch, h);
    src.rows = src.cols = len;
    src.stride = out.T;
    src.levels = mi < f.levels.size() ? &f.levels[mi] : nullptr;
    HeatmapView v;
    v.source = &src;
    v.style = style;
    v.side = side;
    if (labels) {
      v.row_labels = &toks;
      v.col_labels = &toks;
      v.label_w = lw;
      v.label_h = lw;
    }
    v.hover_token = s.hover_token;
    v.label_rects = &s.report.token_labels;
    ImGui::PushID(h);
    const HeatmapHit hit = heatmap_view("head", r, v);
    const bool dragging = ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left);
    ImGui::PopID();
    s.report.heatmaps.push_back({hit.p0.x, hit.p0.y, hit.p1.x, hit.p1.y});
    report_widget(s, ("map " + std::to_string(layer) + "." + std::to_string(h)).c_str(), hit.p0, hit.p1);
    if (!cfg.pitfalls.head_averaged && s.ablated.count(HeadId{layer, h})) mark_head_off(hit.p0, hit.p1), s.report.heads_off++;
    if (hit.hovered) {
      s.hover_head = h;  // "Export this head" (Ctrl+H) writes the head under the mouse
      hovered_row = hit.row;
      hovered_col = hit.col;
      head_tooltip(s, f, layer, batch, h, hit.row, hit.col);
      // Wheel: zoom every head about this cell. Drag: pan. A click without a drag opens Focus.
      const ImGuiIO& io = ImGui::GetIO();
      if (io.MouseWheel != 0) {
        const float mx = (hit.col + 0.5f) / len, my = (hit.row + 0.5f) / len;
        const float nz = std::clamp(zoom * std::pow(1.25f, io.MouseWheel), 1.0f, std::max(1.0f, len / 4.0f));
        s.view.heads_pan_x = mx + (s.view.heads_pan_x - mx) * zoom / nz;
        s.view.heads_pan_y = my + (s.view.heads_pan_y - my) * zoom / nz;
        zoom = nz;
      }
      if (can_ablate && ImGui::IsMouseClicked(ImGuiMouseButton_Right)) toggle_ablation(s, HeadId{layer, h});  // the box's switch
      if (ImGui::IsMouseReleased(ImGuiMouseButton_Left) && io.MouseDragMaxDistanceSqr[ImGuiMouseButton_Left] < 16 &&
          !cfg.pitfalls.head_averaged) {
        s.view.head = h;
        s.view.center = CenterPanel::Focus;
      }
    }
    if (dragging) {
      const ImVec2 d = ImGui::GetIO().MouseDelta;
      s.view.heads_pan_x -= d.x / std::max(hit.p1.x - hit.p0.x, 1.0f) / zoom;
      s.view.heads_pan_y -= d.y / std::max(hit.p1.y - hit.p0.y, 1.0f) / zoom;
    }
    ImGui::EndGroup();
  }
  r.end_batch();
  s.report.heads_map_pool = r.largest_pool_drawn();
  s.report.heads_deferred = r.deferred() - deferred_before;
  // Hovering a cell lights its query row and key column in every head (next frame).
  if (hovered_row >= 0) {
    s.hover_token = hovered_row;
    s.hover_key = hovered_col;
  } else if (ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows)) {
    s.hover_key = -1;
  }

  ImGui::Spacing();
  const char* scale = s.view.norm == Normalisation::PerHead    ? "per head"
                      : s.view.norm == Normalisation::PerLayer ? "per layer"
                      : s.view.norm == Normalisation::Global   ? "over the model"
                                                               : "absolute";
  style.vmin = 0;
  style.vmax = s.view.norm == Normalisation::Absolute || s.view.norm == Normalisation::PerHead ? 1.0f : vmax;
  char caption[200];
  std::snprintf(caption, sizeof caption, "weight, %s%s.  Rows: queries; columns: keys; grey: masked.", scale,
                s.view.log_scale ? " (log scale)" : "");
  colour_legend(style, caption, std::min(avail.x * 0.3f, fh * 14), s.view.norm == Normalisation::PerHead ? "max" : nullptr);
  if (zoom > 1.0f) {  // on a line of its own: beside a caption that wrapped, it would overlap its last line
    ImGui::TextDisabled("zoom %.1fx (wheel, drag)", zoom);
    ImGui::SameLine();
    const bool reset = ImGui::SmallButton("reset zoom");
    report_widget(s, "reset zoom");
    if (reset) {
      zoom = 1.0f;
      s.view.heads_pan_x = s.view.heads_pan_y = 0.5f;
    }
  }
}

}  // namespace headmap
