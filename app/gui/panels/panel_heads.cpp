// panel_heads.cpp: one heatmap per head of the chosen layer and sentence, titled with its
// index, d_head and entropy (and its label when the metrics give one). Hover a cell for the
// query, key, weight and raw score; hover a token anywhere to light its row and column in
// every head; click a head to open it in the focus view. Long maps are drawn from their
// max-pooled levels, and the wheel zooms every head at once (drag pans).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/common/heatmap_figure.h"
#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"
#include "core/inspect/metrics.h"
#include "core/inspect/predictions.h"

namespace headmap {

// Would `width` pixels more still fit on the current line?
static bool fits_on_line(float width) {
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  return ImGui::GetItemRectMax().x + ImGui::GetStyle().ItemSpacing.x + width <= right;
}

constexpr float kMinMapSide = 24.0f;  // pixels: a map is never drawn smaller

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
    const MhaOptions mo = mha_options(cfg, *f.weights, l);  // the family's RoPE (at t and k), q/k norm, scale
    const SharedRows& x = out.attn_in[l];  // (B*T, D)
    const float raw = head_score(f.weights->layers[l], x.row(static_cast<Eigen::Index>(b) * out.T + t).data(),
                                 x.row(static_cast<Eigen::Index>(b) * out.T + k).data(), h, mo, t, k);
    ImGui::Text("raw score   %.4f   (q\xC2\xB7k)", raw);
    ImGui::Text("scaled      %.4f   (\xC3\xB7 %.3g)", raw * score_scale(cfg.d_model, mo), 1.0f / score_scale(cfg.d_model, mo));
  }
  const MhaOptions mask_o = mha_options(cfg, *f.weights, l);
  if (!key_visible(mask_o, t, k, f.batch.lengths[b]))
    ImGui::TextDisabled(mask_o.window > 0 && k <= t ? "hidden: local layer, window %d" : "hidden by the mask", mask_o.window);
  ImGui::EndTooltip();
}

// Switches a head off, or on again (ablation): its box, or a right-click on its map.
static void toggle_ablation(AppState& s, HeadId id) {
  if (!s.ablated.erase(id)) s.ablated.insert(id);
}

// A K/V group's frame from p0 to p1 (its caption line on top) and its caption, as long as
// fits: "K/V 0: heads 0-3", "K/V 0", "0".
static void group_frame(AppState& s, ImVec2 p0, ImVec2 p1, int kv, int first, int last) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  dl->AddRect(p0, p1, ImGui::GetColorU32(ImGuiCol_Border, 1.5f), 3.0f, 0, 1.0f);
  char words[3][48];
  std::snprintf(words[0], sizeof words[0], "K/V %d: heads %d-%d", kv, first, last);
  std::snprintf(words[1], sizeof words[1], "K/V %d", kv);
  std::snprintf(words[2], sizeof words[2], "%d", kv);
  const float room = p1.x - p0.x - 6;
  for (const char* w : words)
    if (ImGui::CalcTextSize(w).x <= room) {
      dl->AddText(ImVec2(p0.x + 4, p0.y + 1), ImGui::GetColorU32(ImGuiCol_TextDisabled), w);
      hook::add_text("kv_groups", w);
      return;
    }
}

void draw_heads(AppState& s, HeatmapRenderer& r) {
  if (!s.compute_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s%s", s.compute_error.c_str(), s.result ? " Showing the last result." : "");
    ImGui::PopStyleColor();
    hook::add_text("messages", s.compute_error);
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
  // The layer and sentence drawn: the selection clamped to the maps shown, the selection itself
  // kept. A frame that still shows the result of the step before (a lesson step from a model
  // of 1 layer to one of 2, with layer=1) once clamped the selection to layer 0 for good.
  int layer = std::clamp(s.view.layer, 0, out.L - 1);
  int batch = std::clamp(s.view.batch, 0, out.B - 1);

  // Header: which layer and sentence, and where the weights come from.
  // Indices are numbered from 0 (as headmap-cli, the exports and numpy number them), and say so.
  char layer_fmt[48], sentence_fmt[48];
  std::snprintf(layer_fmt, sizeof layer_fmt, "layer %%d (of 0-%d)", out.L - 1);
  std::snprintf(sentence_fmt, sizeof sentence_fmt, "sentence %%d (of 0-%d)", out.B - 1);
  const float pad = ImGui::GetStyle().FramePadding.x * 2 + ImGui::GetFontSize();
  ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::CalcTextSize(layer_fmt).x + pad));
  if (ImGui::SliderInt("##layer", &layer, 0, out.L - 1, layer_fmt, ImGuiSliderFlags_AlwaysClamp))  // a typed number (Ctrl+click) too
    s.view.layer = layer;
  if (out.B > 1) {
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(ImGui::GetFontSize() * 8, ImGui::CalcTextSize(sentence_fmt).x + pad));
    if (ImGui::SliderInt("##sentence", &batch, 0, out.B - 1, sentence_fmt, ImGuiSliderFlags_AlwaysClamp)) s.view.batch = batch;
  }
  // A sliding-window layer (Mistral, Gemma 2 and 3, GPT-Neo's local layers) says so.
  if (const int win = f.weights->arch.window(layer); win > 0) {
    const std::string local = window_words(win);  // the figures' titles say the same
    same_line_if_fits(ImGui::CalcTextSize(local.c_str()).x);
    ImGui::TextColored(kChangedColour, "%s", local.c_str());
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("This layer's queries see only the last %d tokens (themselves included): keys further back get weight 0.", win);
  }
  // Encoders: BertViz's A/B filter (a pair only), and the special tokens' rows and columns
  // hidden (the "[SEP] sink"); the cells stay as computed, dimmed (cell_filter).
  if (is_pair(f.batch, batch)) {
    const char* filters[] = {"A/B: all", "A\xE2\x86\x92" "A", "A\xE2\x86\x92" "B", "B\xE2\x86\x92" "A", "B\xE2\x86\x92" "B"};
    int pf = static_cast<int>(s.view.pair_filter);
    const float combo_w = ImGui::CalcTextSize(filters[0]).x + ImGui::GetFrameHeight() + ImGui::GetStyle().FramePadding.x * 2;
    same_line_if_fits(combo_w);
    ImGui::SetNextItemWidth(combo_w);
    if (ImGui::Combo("##pair_filter", &pf, filters, 5)) s.view.pair_filter = static_cast<PairFilter>(pf);
    hook_widget("pair filter");
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Sentence pair: show only the cells whose query (row) is in sentence A or B and whose key (column) is in A or B;\n"
                        "the others are dimmed. [CLS] and the first [SEP] belong to A, the last [SEP] to B.");
  }
  bool any_special = false;
  for (const Token& t : f.batch.sentences[static_cast<size_t>(batch)].tokens) any_special = any_special || t.special;
  if (any_special || s.view.hide_specials) {
    const char* hide = "hide specials";
    same_line_if_fits(ImGui::CalcTextSize(hide).x + ImGui::GetFrameHeight() + ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::Checkbox(hide, &s.view.hide_specials);
    hook_widget(hide);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Dim the rows and columns of the special tokens ([CLS], [SEP], <s>, </s>), where many heads park their weight.\n"
                        "The other weights are shown as computed: rows not renormalised.");
  }
  // The header's items wrap onto a new line when the window is narrow (a projector).
  char text[96];
  // The presenter's "big heads": the selected head (or it and the next) alone, large; the
  // arrow keys choose the head, B steps through the choices.
  if (!cfg.pitfalls.head_averaged) {
    const char* shows[] = {"all heads", "1 large", "2 large"};
    const float combo_w = ImGui::CalcTextSize(shows[0]).x + ImGui::GetFrameHeight() + ImGui::GetStyle().FramePadding.x * 2;
    same_line_if_fits(combo_w);
    ImGui::SetNextItemWidth(combo_w);
    ImGui::Combo("##big", &s.view.big_heads, shows, 3);
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("Big heads, for a projector: the selected head alone, or it and the next, as large as the panel allows.\n"
                        "\xE2\x86\x90 \xE2\x86\x92 choose the head; B steps through all, 1 and 2.");
  }
  if (f.weights->trained() && f.loss_tokens() > 0) {
    // The pruning exercise: switch heads off (the boxes by the titles) and watch this move.
    const int off = static_cast<int>(s.result->request.ablated.size());
    // On a narrow panel the shorter form, on the same line (the heads get the height).
    const bool masked = f.weights->arch.encoder();  // encoders: the masked-token loss
    std::snprintf(text, sizeof text, masked ? "  masked-token loss %.3f nats" : "  loss on this text %.3f nats/token", f.loss());
    if (!fits_on_line(ImGui::CalcTextSize(text).x)) std::snprintf(text, sizeof text, "  loss %.3f", f.loss());
    same_line_if_fits(ImGui::CalcTextSize(text).x);
    ImGui::TextUnformatted(text);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("The model's loss on this text: %.3f nats per token.", f.loss());
    if (off) {
      std::snprintf(text, sizeof text, "(%d head%s off)", off, off == 1 ? "" : "s");
      same_line_if_fits(ImGui::CalcTextSize(text).x);
      ImGui::TextColored(kPendingColour, "%s", text);
    }
    if (!cfg.causal && !masked) {  // the model can see the answer: say so beside the loss
      const std::string note = std::string("(") + kCausalOffLossNote + ")";
      same_line_if_fits(ImGui::CalcTextSize(note.c_str()).x);
      ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
      ImGui::PushTextWrapPos(0.0f);
      ImGui::TextUnformatted(note.c_str());
      ImGui::PopTextWrapPos();
      ImGui::PopStyleColor();
      hook::add_text("messages", kCausalOffLossNote);
    }
  }
  std::snprintf(text, sizeof text, "  %.1f ms", f.compute_ms);  // only where it fits on the line
  if (fits_on_line(ImGui::CalcTextSize(text).x)) {
    ImGui::SameLine();
    ImGui::TextDisabled("%s", text);
  }
  // The incremental forward (kv_cache.h): which rows the last keystroke reused from the K/V
  // cache and which it computed; the maps mark them on their row axis.
  const int kv_reused = out.kv_reused, kv_computed = out.kv_computed;
  hook::set_int("kv_cache/reused", kv_reused);
  hook::set_int("kv_cache/computed", kv_computed);
  if (kv_reused + kv_computed > 0) {
    std::snprintf(text, sizeof text, "  K/V cache: reused %d row%s (blue strip), computed %d (orange)", kv_reused, kv_reused == 1 ? "" : "s", kv_computed);
    hook::set_text("kv_cache/line", text + 2);
    // On the line it shares where it fits, in the shorter form if need be (the strip's colours
    // stay named: they are its legend); else, once rows were reused (the strip then has two
    // colours to tell apart), at the start of the next line. A pass that reused nothing (a
    // launch, a new text) takes no line of the maps' height for it on a projector.
    if (!fits_on_line(ImGui::CalcTextSize(text).x)) std::snprintf(text, sizeof text, "  K/V: %d reused (blue), %d new (orange)", kv_reused, kv_computed);
    const bool same_line = fits_on_line(ImGui::CalcTextSize(text).x);
    if (same_line) ImGui::SameLine();
    if (same_line || kv_reused > 0) {
      ImGui::TextColored(kAccentColour, "%s", text);
      hook_widget("K/V cache");
    }
    if ((same_line || kv_reused > 0) && ImGui::IsItemHovered())
      ImGui::SetTooltip("The text shares its first %d tokens with the last request: their K and V (every layer, every K/V head)\n"
                        "and their rows of every map were kept, so only the last %d row%s computed. The strip at the\n"
                        "left of each map marks them: blue = reused from the cache, orange = computed now.",
                        kv_reused, kv_computed, kv_computed == 1 ? " was" : "s were");
  }
  if (s.stale) {
    same_line_if_fits(ImGui::CalcTextSize("  updating...").x);
    ImGui::TextColored(kPendingColour, "  updating...");
  } else if (!f.complete) {  // a long request shows its visible layer first
    ImGui::SameLine();
    ImGui::TextColored(kPendingColour, "  layers %d to %d still computing...", out.L, cfg.num_layers - 1);
  }
  if (f.inputs.bf16_products) {  // View > BF16 products: the maps they give are never shown unlabelled
    const bool refused = !f.products_diff && !f.products_note.empty();  // bf16_products_refusal's words
    const std::string line = "BF16 products (View menu): " + (f.products_diff   ? f.products_note + "; " + precision_diff_text(*f.products_diff)
                                                              : refused ? f.products_note
                                                                        : std::string("on; their difference from F32 follows with all the layers"));
    ImGui::PushStyleColor(ImGuiCol_Text, refused ? kErrorColour : kPendingColour);
    ImGui::TextWrapped("%s", line.c_str());
    ImGui::PopStyleColor();
    hook::set_text("bf16_products/line", line);
  }
  if (f.inputs.int8_products) {  // View > 8-bit products: the same, their difference once the text is still
    const bool refused = !f.int8_note.empty();  // int8_products_refusal's words
    const ForwardData::LateDiff* d = f.late_diff_ready();
    const std::string line = "8-bit products (View menu): " + (refused ? f.int8_note
                                                               : d     ? d->text
                                                                       : std::string("on; their difference from F32 follows when the text is still"));
    ImGui::PushStyleColor(ImGuiCol_Text, refused ? kErrorColour : kPendingColour);
    ImGui::TextWrapped("%s", line.c_str());
    ImGui::PopStyleColor();
    hook::set_text("int8_products/line", line);
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
  const float line_h = ImGui::GetTextLineHeightWithSpacing();
  const float legend_h = line_h * 2.5f;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float gap = ImGui::GetStyle().ItemSpacing.x * 2, spacing = ImGui::GetStyle().ItemSpacing.x;
  // Which heads: all, or the presenter's "big heads" (the selected one, or it and the next).
  std::vector<int> heads;
  const int big = cfg.pitfalls.head_averaged ? 0 : std::clamp(s.view.big_heads, 0, 2);
  if (big > 0) {
    const int h0 = std::clamp(s.view.head, 0, out.Hw - 1);
    heads.push_back(h0);
    if (big == 2 && out.Hw > 1) heads.push_back((h0 + 1) % out.Hw);
  } else {
    for (int h = 0; h < out.Hw; ++h) heads.push_back(h);
  }
  const int n = static_cast<int>(heads.size());
  // The labels the heads earned (from their metrics), before the layout: a title keeps its
  // label whatever the room (on a second line, cut with "...", when the line is too short).
  const std::vector<float>& probes = s.result->induction;  // (L, H); empty until the probe is done
  std::vector<HeadLabel> earned(n, HeadLabel::None);
  float widest_label = 0;
  for (int i = 0; i < n; ++i) {
    const size_t mi = (static_cast<size_t>(layer) * out.B + batch) * out.Hw + heads[i];
    const float probe = (!cfg.pitfalls.head_averaged && !probes.empty()) ? probes[static_cast<size_t>(layer) * out.H + heads[i]] : 0.0f;
    const float ind = label_induction(probe, mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf(""));
    earned[i] = cfg.pitfalls.head_averaged ? HeadLabel::None : head_label(f.metrics[mi], ind);
    if (earned[i] != HeadLabel::None) widest_label = std::max(widest_label, ImGui::CalcTextSize(head_label_name(earned[i])).x);
  }

  // The maps of the grid show the same tokens through the same zoom window, so they share
  // their axes: the query labels stand once left of each row of maps, the key labels once
  // under each column, and the maps get the rest. The labels' room: the widest token and
  // its position number, within a quarter of the panel; at least the numbers.
  const bool can_ablate = !cfg.pitfalls.head_averaged && cfg.num_heads == s.cfg.num_heads && cfg.num_layers == s.cfg.num_layers;
  const float box_w = ImGui::GetFontSize() + 2.0f + ImGui::GetStyle().ItemInnerSpacing.x + 1.0f;  // frame padding 1, then the inner spacing
  const float num_w = ImGui::CalcTextSize(std::to_string(std::max(len - 1, 0)).c_str()).x;
  const float lw_min = num_w + 8 + fh * 0.5f;
  const float lw_full = std::min(token_label_width(s, batch), fh * 10) + ImGui::CalcTextSize("  ").x + num_w + 8;
  float lw = std::clamp(lw_full, lw_min, std::max(lw_min, 0.25f * std::min(avail.x, avail.y - legend_h)));
  float title_h = line_h;
  // A grid: its columns, the maps' height (side) and width (map_w: wider than tall, up to
  // kHeadsMapAspectMax, when the height is what binds and the panel has width to spare),
  // and the key labels' height: rotated (lw) or flat (on one line or two); pitch: from one column to
  // the next.
  struct Grid {
    int cols = 1;
    float side = 0, map_w = 0, col_h = 0, pitch = 0;
    bool flat = false;
  };
  // The widest title on one line: a box, the widest number and the widest label.
  const float one_line_title = ImGui::CalcTextSize(std::to_string(out.Hw - 1).c_str()).x + (can_ablate ? box_w : 0.0f) + spacing + widest_label;
  // Grouped- and multi-query attention: the query heads that share a K/V head stand in one
  // thin frame, under a caption line of their own ("K/V 0: heads 0-3").
  const int kvG = cfg.num_heads / std::max(1, cfg.kv_heads());  // query heads per K/V head
  const bool grouped = big == 0 && !cfg.pitfalls.head_averaged && cfg.kv_heads() < cfg.num_heads && kvG > 1;
  const float group_h = grouped ? line_h : 0.0f;
  auto layout = [&](float lw_row, bool flat, int lines) {
    Grid g;
    g.flat = flat;
    g.col_h = lw_row > 0 ? (flat ? flat_labels_h(lines) : lw_row) : 0.0f;
    g.cols = grid_columns(n, avail.x - lw_row, avail.y - legend_h - g.col_h, gap, group_h + title_h + spacing, &g.side);
    if (g.side < kMinMapSide) {  // more heads than the panel holds: as many columns as fit, the rows scroll
      g.side = kMinMapSide;
      g.cols = std::clamp(static_cast<int>((avail.x - lw_row) / (kMinMapSide + gap)), 1, n);
    }
    g.map_w = std::clamp((avail.x - lw_row) / g.cols - gap, g.side, g.side * kHeadsMapAspectMax);
    // Maps bound by the height leave width over: the columns stand as far apart as the
    // titles need to keep their labels on one line (a longer sentence or the causal note
    // above the grid would otherwise put every label on a second line and halve the maps).
    g.pitch = g.map_w + gap;
    if (widest_label > 0 && big == 0)
      g.pitch = std::clamp(one_line_title + spacing, g.pitch, std::max(g.pitch, (avail.x - lw_row) / g.cols));
    return g;
  };
  // Rotated key labels carry the tokens; flat ones, on one line, leave the maps more height
  // when that is what binds (a projector's short screen), unless the maps are large anyway.
  // Flat labels on one line, or staggered on two where one line would thin them a lot.
  const float visible_keys = len / std::clamp(s.view.heads_zoom, 1.0f, std::max(1.0f, len / 4.0f));
  auto flat_layout = [&](float lw_row) {
    const int lines = flat_label_lines(len, visible_keys, [&](int k) {
      const Grid q = layout(lw_row, true, k);
      return std::max(q.map_w, q.side);
    });
    return layout(lw_row, true, lines);
  };
  auto best = [&] {
    const Grid rotated = layout(lw, false, 1), flat = flat_layout(lw);
    return rotated.side >= flat.side * 0.9f || (rotated.side >= fh * 10 && rotated.side >= flat.side * 0.65f) ? rotated : flat;
  };
  Grid g = best();
  const bool labels = g.side >= fh * 2.5f;  // maps too small for a label: the tooltip has the tokens
  if (!labels) lw = 0, g = layout(0, false, 1);
  // A title may use its column's width (its map's and the gap to the next), less the usual
  // spacing. The shortest title with a box is the number; when it and a label do not fit on
  // a line, every label goes on a second line.
  auto room_of = [&](const Grid& q) { return q.pitch - spacing; };
  auto boxes_fit = [&](const Grid& q) { return can_ablate && ImGui::CalcTextSize(std::to_string(out.Hw - 1).c_str()).x + box_w <= room_of(q); };
  const float shortest = ImGui::CalcTextSize(std::to_string(out.Hw - 1).c_str()).x + (boxes_fit(g) ? box_w : 0.0f);
  bool two_lines = widest_label > 0 && shortest + spacing + widest_label > room_of(g);
  if (two_lines) {
    // Unless the second line would cost the maps too much (128 heads on a projector): then
    // a label that does not fit stays in the title's tooltip.
    title_h = line_h * 2;
    const Grid g2 = labels ? best() : layout(0, false, 1);
    if (g2.side >= g.side * 0.6f && room_of(g2) >= ImGui::CalcTextSize("abc\xE2\x80\xA6").x) g = g2;  // a few letters at least
    else title_h = line_h, two_lines = false;
  }
  const int cols = g.cols;
  const float side = g.side, map_w = std::max(g.map_w, side);
  const float title_room = room_of(g);
  // Head ablation: a box before each title switches the head's output off (its pattern stays
  // on screen); so does a right-click on the map, which is all there is room for when the
  // box and the widest number do not fit (128 heads on a 1024x768 projector): then no title
  // has a box, rather than some.
  const bool boxes = boxes_fit(g);

  // Title and label must fit above the map: drop d_head (the controls show it), then the
  // entropy and the K/V head (the tooltip has them), then the word "head"; the label stays
  // (on the second line when there is one). Every title drops as much as the longest needs,
  // so that the grid reads alike.
  auto title_fits = [&](int i, int level, char* title) {
    const int h = heads[i];
    const float entropy = f.metrics[(static_cast<size_t>(layer) * out.B + batch) * out.Hw + h].entropy;
    char kv[48] = "";  // grouped-query and multi-query attention: the K/V head this query head shares
    if (cfg.kv_heads() < cfg.num_heads) std::snprintf(kv, sizeof kv, "  \xC2\xB7  K/V %d", h / (cfg.num_heads / cfg.kv_heads()));
    switch (level) {
      case 0: std::snprintf(title, 160, "head %d%s  \xC2\xB7  d_head %d  \xC2\xB7  %.2f nats", h, kv, cfg.d_head(), entropy); break;
      case 1: std::snprintf(title, 160, "head %d%s  \xC2\xB7  %.2f nats", h, kv, entropy); break;
      case 2: std::snprintf(title, 160, "head %d%s", h, kv); break;
      case 3: std::snprintf(title, 160, "%d%s", h, kv); break;
      case 4: std::snprintf(title, 160, "head %d", h); break;
      default: std::snprintf(title, 160, "%d", h); return true;
    }
    const float extra = (boxes ? box_w : 0.0f) +
                        (earned[i] != HeadLabel::None && !two_lines ? spacing + ImGui::CalcTextSize(head_label_name(earned[i])).x : 0.0f);
    return ImGui::CalcTextSize(title).x + extra <= title_room;
  };
  int title_level = 0;
  if (!cfg.pitfalls.head_averaged) {
    char title[160];
    for (int i = 0; i < n; ++i)
      while (!title_fits(i, title_level, title)) ++title_level;
  }

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
  style.window = f.weights->arch.window(layer);  // a local layer: keys outside the window hatched
  style.filter = shown_filter(s, f.batch, batch);  // the A/B filter, hidden special tokens: dimmed
  style.hi_row = s.hover_token >= 0 ? s.hover_token : -1;
  style.hi_col = s.hover_key >= 0 ? s.hover_key : s.hover_token;
  style.col0 = (s.view.heads_pan_x - half) * len;
  style.col1 = (s.view.heads_pan_x + half) * len;
  style.row0 = (s.view.heads_pan_y - half) * len;
  style.row1 = (s.view.heads_pan_y + half) * len;
  int hovered_row = -1, hovered_col = -1;
  const int deferred_before = r.deferred();

  // Each cell at its own place, so a title wider than its map cannot push the rest of the
  // row along (and the last column off the window).
  ImVec2 grid0 = ImGui::GetCursorScreenPos();
  if (big > 0)  // the presenter's heads stand in the middle
    grid0.x += std::max(0.0f, (avail.x - lw - cols * g.pitch + gap) * 0.5f);
  const float pitch_x = g.pitch, pitch_y = group_h + title_h + side + spacing;
  float grid_bottom = grid0.y;
  r.begin_batch(ImGui::GetWindowDrawList());  // the maps' images merge into one draw call
  for (int i = 0; i < n; ++i) {
    const int h = heads[i], col = i % cols, row = i / cols;
    const ImVec2 cell(grid0.x + lw + col * pitch_x, grid0.y + row * pitch_y + group_h);
    // The first head of a K/V group on this row: the group's frame and caption over its
    // heads on this row (a group that wraps is framed on each row it spans).
    if (grouped && (h % kvG == 0 || col == 0)) {
      const int kv = h / kvG, last = std::min({(kv + 1) * kvG - 1, h + (cols - 1 - col), out.Hw - 1});
      group_frame(s, ImVec2(cell.x - gap * 0.3f, cell.y - group_h), ImVec2(cell.x + (last - h) * pitch_x + map_w + gap * 0.3f, cell.y + title_h + side + 2),
                  kv, kv * kvG, std::min((kv + 1) * kvG, out.Hw) - 1);
    }
    ImGui::SetCursorScreenPos(cell);
    const size_t mi = (static_cast<size_t>(layer) * out.B + batch) * out.Hw + h;
    const HeadMetrics& m = f.metrics[mi];
    const float probe = (!cfg.pitfalls.head_averaged && !probes.empty()) ? probes[static_cast<size_t>(layer) * out.H + h] : 0.0f;
    const HeadLabel label = earned[i];
    char title[160];
    if (cfg.pitfalls.head_averaged)
      std::snprintf(title, sizeof title, "mean of %d heads  \xC2\xB7  %.2f nats", cfg.num_heads, m.entropy);
    else {
      int level = title_level;
      while (!title_fits(i, level, title)) ++level;
    }
    const ImVec2 title_p0 = ImGui::GetCursorScreenPos();
    if (boxes) {
      const HeadId id{layer, h};
      bool on = s.ablated.count(id) == 0;
      ImGui::PushID(h);
      ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(1, 1));
      if (s.heads_capture) {  // the PNG shows heads, not the app's switches: the box's room, its title where it stands
        ImGui::AlignTextToFramePadding();
        ImGui::Dummy(ImVec2(fh + 2.0f, fh + 2.0f));
      } else if (ImGui::Checkbox("##on", &on)) toggle_ablation(s, id);
      hook_widget(("switch " + std::to_string(layer) + "." + std::to_string(h)).c_str());
      ImGui::PopStyleVar();
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Switch this head off: its output is zeroed before W_O (ablation). Or right-click its map.");
      ImGui::PopID();
      ImGui::SameLine(0, ImGui::GetStyle().ItemInnerSpacing.x);
    }
    ImGui::TextUnformatted(title);
    std::string shown_title = title;
    float title_x1 = ImGui::GetItemRectMax().x;
    bool title_hovered = ImGui::IsItemHovered();
    if (label != HeadLabel::None) {
      const char* name = head_label_name(label);
      if (two_lines) {
        ImGui::SetCursorScreenPos(ImVec2(cell.x, cell.y + line_h));
        // Cut to the room with "..." when even a line of its own is too short (128 heads).
        std::string cut = name;
        if (ImGui::CalcTextSize(name).x > title_room) {
          const char* stop = name;
          ImGui::GetFont()->CalcTextSizeA(fh, title_room - ImGui::CalcTextSize("\xE2\x80\xA6").x, 0.0f, name, nullptr, &stop);
          cut = stop > name ? std::string(name, stop) + "\xE2\x80\xA6" : std::string();
        }
        if (!cut.empty()) {
          ImGui::TextColored(kAccentColour, "%s", cut.c_str());
          shown_title += "  " + cut;
        }
        title_x1 = std::max(title_x1, ImGui::GetItemRectMax().x);
        title_hovered = title_hovered || ImGui::IsItemHovered();
      } else if (ImGui::GetItemRectMax().x + spacing + ImGui::CalcTextSize(name).x <= cell.x + title_room) {
        ImGui::SameLine();
        ImGui::TextColored(kAccentColour, "%s", name);
        shown_title += std::string("  ") + name;
        title_x1 = std::max(title_x1, ImGui::GetItemRectMax().x);
        title_hovered = title_hovered || ImGui::IsItemHovered();
      }
    }
    hook::add_text("head_titles", shown_title);
    hook::add_rect("head_title_rects", ImVec2(title_p0.x, title_p0.y), ImVec2(title_x1, ImGui::GetItemRectMax().y));
    if (title_hovered) {
      // The label (whole, even where the title cut it), the probe's induction score, and the
      // text's own where it repeats a run of tokens.
      const float text_ind = mi < f.text_induction.size() ? f.text_induction[mi] : std::nanf("");
      char text_part[96] = "";
      if (!std::isnan(text_ind)) std::snprintf(text_part, sizeof text_part, "\n%s %.2f", head_metric_info(HeadMetric::InductionText).name, text_ind);
      ImGui::SetTooltip("head %d (of heads 0-%d), layer %d (of 0-%d)\n%s%sentropy %.3f nats (%.2f of the maximum)\n"
                        "previous-token %.2f   first-token %.2f   self %.2f\npeak weight %.2f   %s %.2f%s",
                        h, out.Hw - 1, layer, out.L - 1, label == HeadLabel::None ? "" : head_label_name(label),
                        label == HeadLabel::None ? "" : "\n", m.entropy, m.entropy_norm, m.prev_token, m.first_token, m.self,
                        m.max_weight, head_metric_info(HeadMetric::InductionProbe).name, probe, text_part);
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
    v.width = map_w;
    v.height = side;
    // The shared axes: query labels left of the first column, key labels under the last map
    // of each column.
    const bool row_axis = labels && col == 0, col_axis = labels && i + cols >= n;
    if (row_axis) v.row_labels = &toks, v.label_w = lw;
    if (col_axis) v.col_labels = &toks, v.label_h = g.col_h, v.flat_col_labels = g.flat;
    ImGui::SetCursorScreenPos(ImVec2(cell.x - (row_axis ? lw : 0.0f), cell.y + title_h));
    v.hover_token = s.hover_token;
    v.hook_labels = true;
    ImGui::PushID(h);
    const HeatmapHit hit = heatmap_view("head", r, v);
    const bool dragging = ImGui::IsItemActive() && ImGui::IsMouseDragging(ImGuiMouseButton_Left);
    ImGui::PopID();
    grid_bottom = std::max(grid_bottom, hit.p1.y + (col_axis ? g.col_h : 0.0f));
    hook::add_rect("heatmaps", ImVec2(hit.p0.x, hit.p0.y), ImVec2(hit.p1.x, hit.p1.y));
    ++s.heads_maps_drawn;
    if (kv_reused + kv_computed > 0 && batch == 0) {  // the K/V cache's rows on the row axis: reused blue, computed orange
      ImDrawList* dl = ImGui::GetWindowDrawList();
      const float span = std::max(style.row1 - style.row0, 1e-3f), hgt = hit.p1.y - hit.p0.y;
      // just outside the map's left edge, so no cell is covered
      const float x1 = hit.p0.x - 1.0f, x0 = x1 - std::max(3.0f, fh * 0.25f);
      auto row_y = [&](int t) { return std::clamp(hit.p0.y + (t - style.row0) / span * hgt, hit.p0.y, hit.p1.y); };
      dl->AddRectFilled(ImVec2(x0, row_y(0)), ImVec2(x1, row_y(kv_reused)), ImGui::GetColorU32(kAccentColour));
      dl->AddRectFilled(ImVec2(x0, row_y(kv_reused)), ImVec2(x1, row_y(len)), IM_COL32(255, 150, 40, 255));
    }
    hook_widget(("map " + std::to_string(layer) + "." + std::to_string(h)).c_str(), hit.p0, hit.p1);
    if (!cfg.pitfalls.head_averaged && s.ablated.count(HeadId{layer, h})) mark_head_off(hit.p0, hit.p1), hook::bump("heads_off");
    if (!cfg.pitfalls.head_averaged && detector_marked(s, layer, h)) {  // at or above the Detectors view's threshold
      ImGui::GetWindowDrawList()->AddRect(ImVec2(hit.p0.x - 3, hit.p0.y - 3), ImVec2(hit.p1.x + 3, hit.p1.y + 3),
                                          ImGui::GetColorU32(kAccentColour), 0.0f, 0, 3.0f);
      hook::add_text("contrib/detector_marked", std::to_string(layer) + "." + std::to_string(h));
    }
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
  }
  r.end_batch();
  ImGui::SetCursorScreenPos(ImVec2(grid0.x, grid_bottom + ImGui::GetStyle().ItemSpacing.y));
  hook::set_int("heads_map_pool", r.largest_pool_drawn());
  hook::set_int("heads_deferred", r.deferred() - deferred_before);
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
  char caption[300];
  std::snprintf(caption, sizeof caption, "%s, %s%s.  Rows: queries; columns: keys%s%s%s",
                s.view.value_weighted ? "value-weighted share, \xE2\x80\x96\xCE\xB1 f(x)\xE2\x80\x96 / row sum" : "weight", scale,
                s.view.log_scale ? " (log scale)" : "", mask_greys_cells(style.mask) ? "; grey: masked" : "", style.window > 0 ? "; hatched: outside the window" : "",
                style.filter.active() ? "; dimmed: filtered out (rows not renormalised)." : ".");
  colour_legend(style, caption, std::min(avail.x * 0.3f, fh * 14), s.view.norm == Normalisation::PerHead ? "max" : nullptr);
  // The figure File > Export heads as PNG writes: the grid from its first title to the legend.
  const ImVec2 win0 = ImGui::GetWindowPos();
  s.heads_figure[0] = win0.x;
  s.heads_figure[1] = grid0.y;
  s.heads_figure[2] = win0.x + ImGui::GetWindowSize().x;
  s.heads_figure[3] = ImGui::GetCursorScreenPos().y;
  if (zoom > 1.0f) {  // on a line of its own: beside a caption that wrapped, it would overlap its last line
    ImGui::TextDisabled("zoom %.1fx (wheel, drag)", zoom);
    ImGui::SameLine();
    const bool reset = ImGui::SmallButton("reset zoom");
    hook_widget("reset zoom");
    if (reset) {
      zoom = 1.0f;
      s.view.heads_pan_x = s.view.heads_pan_y = 0.5f;
    }
  }
}

}  // namespace headmap
