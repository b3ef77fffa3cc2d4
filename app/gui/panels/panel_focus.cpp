// panel_focus.cpp: one head enlarged, and its computation step by step: Q_h, K_h, V_h,
// Q_h·K_hᵀ, ÷√d_head, the mask, softmax, ·V_h, the concatenation and W_O. Each step is a
// heatmap labelled with its shape; the selected one is drawn large, with zoom (wheel) and
// pan (drag), double-click to reset.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <tuple>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"
#include "app/gui/glyphs.h"

namespace headmap {

namespace {

struct Step {
  const char* name;
  const char* explain;
  const MatR* m;     // (rows, cols), rows = query tokens
  bool square;       // (T, T): keys along the columns
  bool weights;      // probabilities: drawn with the colormap, not the diverging scale
  bool masked;       // -inf where hidden
  std::string shape;
  float lo = 0, hi = 0;  // finite range over the real rows (from the worker)
  const MapLevels* levels = nullptr;  // (T, T) steps of a long sentence: max-pooled levels (from the worker)
  int id = 0;           // trace_step_matrices' index (focus_step)
  std::string label{};  // a name built from the model's numbers (the scale), else empty
  std::string note{};   // the same for the explanation
};

// The steps in the order the forward takes them: a family's q/k norm and RoPE after the
// projections, its soft-cap after the scale (arch.h). Steps the model does not have are left out.
std::vector<Step> steps_of(const HeadTrace& tr, const ModelConfig& cfg, const Arch& arch) {
  const bool d = cfg.pitfalls.scale_by_d_model;
  const std::vector<const MatR*> m = trace_step_matrices(tr);
  const bool family = tr.q_proj.size() > 0;  // Q_h, K_h are the projections before the family's steps
  const char* scale_name = d ? "\xC3\xB7 \xE2\x88\x9A" "D (pitfall)" : "\xC3\xB7 \xE2\x88\x9A" "d_head";
  std::vector<Step> all = {
      {"Q_h", family ? "Each row is one token's query for this head, as projected: x \xC2\xB7 W_Q[:, this head's columns] + b_Q "
                       "(before the family's q/k norm and rotation)."
                     : "Each row is one token's query for this head: x \xC2\xB7 W_Q[:, this head's columns] + b_Q.", m[0], false, false, false, "(T, d_head)"},
      {"K_h", "Each row is one token's key: what it offers to be found by.", m[1], false, false, false, "(T, d_head)"},
      {"V_h", "Each row is one token's value: what it hands over when attended to.", m[2], false, false, false, "(T, d_head)"},
      {"Q_h\xC2\xB7K_h\xE1\xB5\x80", "Raw scores: how well each query matches each key (a dot product over d_head numbers).", m[3], true, false, false, "(T, T)"},
      {scale_name, d ? "PITFALL: divided by \xE2\x88\x9A" "D instead of \xE2\x88\x9A" "d_head: too small by \xE2\x88\x9AH, so the softmax is too flat."
                     : "Divided by \xE2\x88\x9A" "d_head so the scores keep unit scale whatever d_head is.", m[4], true, false, false, "(T, T)"},
      {"mask", tr.window > 0 ? "Hidden keys are set to \xE2\x88\x92\xE2\x88\x9E: causal attention cannot look ahead (grey); this local layer "
                               "also hides every key W or more tokens back, outside its sliding window (hatched)."
                             : "Hidden keys are set to \xE2\x88\x92\xE2\x88\x9E (grey): causal attention cannot look ahead; padding is never seen.",
       m[5], true, false, true, "(T, T)"},
      {"softmax", "Each row becomes a probability distribution over the visible keys: the attention weights.", m[6], true, true, false, "(T, T)"},
      {"\xC2\xB7 V_h", "Each query's output: the weighted average of the values it attends to.", m[7], false, false, false, "(T, d_head)"},
      {"concat", "All heads' outputs side by side: this head fills its own d_head columns.", m[8], false, false, false,
       tr.concat.cols() == cfg.d_model ? "(T, D)" : "(T, H\xC2\xB7" "d_head)"},
      {cfg.pitfalls.no_w_o ? "no W_O (pitfall)" : "\xC2\xB7 W_O", cfg.pitfalls.no_w_o ? "PITFALL: without W_O the heads are never mixed." : "W_O mixes the heads back into one (T, D) output.", m[9], false, false, false, "(T, D)"},
      {"q/k norm", "Each row of q and of k is RMS-normalised over its d_head numbers and scaled by the layer's own weights "
                   "(q_norm, k_norm), before the rotation: shown for q (hover for k).", m[10], false, false, false, "(T, d_head)"},
      {"RoPE", "Rotate Q and K by position: each pair (x_i, x_i+rot/2) turns by the angle pos\xC2\xB7theta^(\xE2\x88\x92" "2i/rot), so "
               "q_t\xC2\xB7k_s depends on t \xE2\x88\x92 s. The map is q after the rotation; the arrows below show each pair before and after.",
       m[11], false, false, false, "(T, d_head)"},
      {"soft-cap", "The scaled scores squashed into (\xE2\x88\x92" "c, c): c\xC2\xB7tanh(s / c). A score far above the others can no longer "
                   "take all the weight.", m[12], true, false, false, "(T, T)"},
  };
  for (size_t i = 0; i < all.size(); ++i) all[i].id = static_cast<int>(i);
  // The scale the forward used, when the family's is not 1/sqrt(d_head).
  Step& sc = all[4];
  char buf[256];
  if (arch.score_scale == ScoreScale::None && !d) {
    sc.label = "\xC3\x97 1 (no scale)";
    sc.note = "This family (GPT-Neo) does not scale its scores: Q_h\xC2\xB7K_h\xE1\xB5\x80 goes to the softmax as it is.";
  } else if (arch.score_scale == ScoreScale::QueryPreAttnScalar && !d) {
    std::snprintf(buf, sizeof buf, "\xC3\xB7 \xE2\x88\x9A%g", arch.query_pre_attn_scalar);
    sc.label = buf;
    std::snprintf(buf, sizeof buf, "Multiplied by %.4g = 1/\xE2\x88\x9A" "query_pre_attn_scalar (%g), the family's own scale, not 1/\xE2\x88\x9A" "d_head.",
                  tr.scale, arch.query_pre_attn_scalar);
    sc.note = buf;
  }
  std::snprintf(buf, sizeof buf, "(T, T) \xC3\x97 %.4g", tr.scale);
  sc.shape = buf;
  if (tr.softcap > 0) {
    std::snprintf(buf, sizeof buf, "The scaled scores squashed into (\xE2\x88\x92%g, %g): %g\xC2\xB7tanh(s / %g). A score far above the others can no "
                  "longer take all the weight; the map before is the scale step.", tr.softcap, tr.softcap, tr.softcap, tr.softcap);
    all[kStepSoftcap].note = buf;
  }
  if (!tr.rope_inv_freq.empty()) {
    const int rot = 2 * static_cast<int>(tr.rope_inv_freq.size()), dh = static_cast<int>(tr.q.cols());
    if (rot < dh) {  // partial rotary (Pythia): said in the explanation, so the strip's shape stays short
      std::snprintf(buf, sizeof buf, "Rotate Q and K by position, the first %d of the %d dimensions only (marked; the rest pass unrotated): "
                    "each pair (x_i, x_i+%d) turns by the angle pos\xC2\xB7theta^(\xE2\x88\x92" "2i/%d). The map is q after the rotation; "
                    "the arrows below show each pair before and after.", rot, dh, rot / 2, rot);
      all[kStepRope].note = buf;
    }
  }
  // The forward's order.
  static constexpr int order[] = {0, 1, 2, kStepQNorm, kStepRope, 3, 4, kStepSoftcap, 5, 6, 7, 8, 9};
  std::vector<Step> out;
  for (int id : order)
    if (all[static_cast<size_t>(id)].m->size() > 0 || id < 10) out.push_back(all[static_cast<size_t>(id)]);
  return out;
}

// The rotation of each (x_i, x_i+rot/2) pair at position `pos`: q and k before RoPE (faint)
// and after (solid), one small dial per pair, the angle written under it; the dimensions
// past rot (partial rotary) are named as not rotated. The numbers are the trace's own.
void rope_pairs(AppState& s, const HeadTrace& tr, int pos, float width) {
  const MatR& q0 = tr.q_normed.size() ? tr.q_normed : tr.q_proj;  // (T, d_head) before RoPE
  const MatR& k0 = tr.k_normed.size() ? tr.k_normed : tr.k_proj;
  if (tr.rope_inv_freq.empty() || q0.size() == 0 || pos < 0 || pos >= tr.q.rows()) return;
  const int half = static_cast<int>(tr.rope_inv_freq.size()), dh = static_cast<int>(tr.q.cols());
  const float fh = ImGui::GetFontSize();
  ImGui::Text("RoPE at position %d:", pos);
  ImGui::SameLine();
  ImGui::TextColored(ImVec4(1.0f, 0.62f, 0.25f, 1), "q");
  ImGui::SameLine();
  ImGui::TextColored(ImVec4(0.35f, 0.8f, 1.0f, 1), "k");
  text_disabled_wrapped("before (faint) and after (solid) the rotation, pairs 0, 1, ... left to right");
  if (2 * half < dh) {
    char rest[128];
    std::snprintf(rest, sizeof rest, "dims %d-%d not rotated (rotary fraction %.2g)", 2 * half, dh - 1, 2.0 * half / dh);
    same_line_if_fits(ImGui::CalcTextSize(rest).x + fh);
    ImGui::TextDisabled("%s", rest);
  }
  // One dial per pair, as many per line as fit, at most two lines (the rest hidden behind a count).
  const float cell = std::clamp(width / std::max(half, 1), fh * 2.6f, fh * 4.0f);
  const int per_line = std::max(1, static_cast<int>(width / cell));
  const int shown = std::min(half, per_line * 2);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const float r = cell * 0.5f - 3, label_h = ImGui::GetTextLineHeight();
  const ImU32 qc = IM_COL32(255, 158, 64, 255), kc = IM_COL32(90, 205, 255, 255), qf = IM_COL32(255, 158, 64, 90),
              kf = IM_COL32(90, 205, 255, 90), ring = IM_COL32(128, 128, 128, 110);
  for (int i = 0; i < shown; ++i) {
    const int row = i / per_line, col = i % per_line;
    const ImVec2 c(o.x + col * cell + cell * 0.5f, o.y + row * (cell + label_h) + cell * 0.5f);
    const float a0[2] = {q0(pos, i), q0(pos, i + half)}, a1[2] = {tr.q(pos, i), tr.q(pos, i + half)};
    const float b0[2] = {k0(pos, i), k0(pos, i + half)}, b1[2] = {tr.k(pos, i), tr.k(pos, i + half)};
    const float peak = std::max({std::hypot(a0[0], a0[1]), std::hypot(b0[0], b0[1]), 1e-12f});
    dl->AddCircle(c, r, ring, 24);
    auto arrow = [&](const float* v, ImU32 colour, float thick) {
      const ImVec2 e(c.x + v[0] / peak * r, c.y - v[1] / peak * r);  // y up
      dl->AddLine(c, e, colour, thick);
      dl->AddCircleFilled(e, thick + 1, colour);
    };
    arrow(a0, qf, 1.5f);
    arrow(b0, kf, 1.5f);
    arrow(a1, qc, 2.0f);
    arrow(b1, kc, 2.0f);
    const double angle = pos * tr.rope_inv_freq[static_cast<size_t>(i)];
    char lab[32];  // the angle, mod 360 degrees, under the dial when it fits
    std::snprintf(lab, sizeof lab, "%.0f\xC2\xB0", std::fmod(angle, 2 * M_PI) * 180 / M_PI);
    const ImVec2 ls = ImGui::CalcTextSize(lab);
    if (ls.x <= cell - 2) dl->AddText(ImVec2(c.x - ls.x * 0.5f, c.y + cell * 0.5f), ImGui::GetColorU32(ImGuiCol_TextDisabled), lab);
    const ImVec2 p0(c.x - cell * 0.5f, c.y - cell * 0.5f), p1(c.x + cell * 0.5f, c.y + cell * 0.5f + label_h);
    if (ImGui::IsMouseHoveringRect(p0, p1))
      ImGui::SetTooltip("pair (%d, %d) at position %d\nangle %d \xC2\xB7 %.4g = %.4f rad\nq (%.3f, %.3f) -> (%.3f, %.3f)\nk (%.3f, %.3f) -> (%.3f, %.3f)", i,
                        i + half, pos, pos, tr.rope_inv_freq[static_cast<size_t>(i)], angle, a0[0], a0[1], a1[0], a1[1], b0[0], b0[1], b1[0], b1[1]);
    char rep[96];
    std::snprintf(rep, sizeof rep, "pair %d pos %d angle %.6f", i, pos, angle);
    hook::add_text("rope_pairs", rep);
  }
  const int lines = (shown + per_line - 1) / per_line;
  ImGui::Dummy(ImVec2(std::min(width, per_line * cell), lines * (cell + label_h)));
  if (shown < half) ImGui::TextDisabled("(%d more pairs: widen the panel)", half - shown);
}

// The colour style of a step: weights on the colormap, signed matrices on the diverging
// scale around 0, and the mask drawn grey on (T, T) maps that carry it.
HeatmapStyle step_style(const Step& st, const AppState& s, const ModelConfig& cfg, int len, int window) {
  HeatmapStyle style;
  style.colormap = s.view.colormap;
  style.diverging = !st.weights;
  style.vmin = st.weights ? 0.0f : st.lo;
  style.vmax = st.weights ? std::max(st.hi, 1e-6f) : st.hi;
  style.mask = st.square && (st.masked || st.weights) ? shown_mask(cfg, true) : MaskKind::None;
  style.len = len;
  style.window = window;  // a local layer: keys outside the window hatched
  // The A/B filter and hidden special tokens dim the attention maps' cells (the weights).
  if (st.square && st.weights && s.result && s.result->fwd && s.result->request.trace)
    style.filter = shown_filter(s, s.result->fwd->batch, s.result->request.trace->batch);
  return style;
}

// Overlays the columns [c0, c1) of a map drawn in [p0, p1) with `cols` columns visible from
// `first`: the rest dimmed, the band outlined, its first and last index written inside.
void mark_columns(ImVec2 p0, ImVec2 p1, float first, float cols, int c0, int c1, bool indices) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float cw = (p1.x - p0.x) / std::max(cols, 1e-6f);
  const float x0 = std::clamp(p0.x + (c0 - first) * cw, p0.x, p1.x), x1 = std::clamp(p0.x + (c1 - first) * cw, p0.x, p1.x);
  const ImU32 dim = IM_COL32(20, 20, 24, 150), band = IM_COL32(255, 170, 60, 255);
  if (x0 > p0.x) dl->AddRectFilled(p0, ImVec2(x0, p1.y), dim);
  if (x1 < p1.x) dl->AddRectFilled(ImVec2(x1, p0.y), p1, dim);
  if (x1 <= x0) return;
  dl->AddRect(ImVec2(x0, p0.y), ImVec2(x1, p1.y), band, 0, 0, 2.0f);
  if (!indices) return;
  char a[16], b[16];
  std::snprintf(a, sizeof a, "%d", c0);
  std::snprintf(b, sizeof b, "%d", c1 - 1);
  const ImVec2 ta = ImGui::CalcTextSize(a), tb = ImGui::CalcTextSize(b);
  const ImU32 ink = IM_COL32(20, 20, 20, 255);
  dl->AddRectFilled(ImVec2(x0, p0.y), ImVec2(x0 + ta.x + 6, p0.y + ta.y + 2), band);
  dl->AddText(ImVec2(x0 + 3, p0.y + 1), ink, a);
  if (x1 - tb.x - 6 > x0 + ta.x + 8) {
    dl->AddRectFilled(ImVec2(x1 - tb.x - 6, p0.y), ImVec2(x1, p0.y + tb.y + 2), band);
    dl->AddText(ImVec2(x1 - tb.x - 3, p0.y + 1), ink, b);
  }
}

// The head's slice of D: the d_head columns of W_Q, W_K and W_V it reads, marked with
// their feature indices (every H-th column under the interleaved pitfall).
void head_slice_strip(AppState& s, HeatmapRenderer& r, const ForwardData& f, const ModelConfig& cfg, const TraceRequest& req) {
  const int D = cfg.d_model, H = cfg.num_heads, dh = cfg.d_head(), h = req.head;
  const bool inter = cfg.pitfalls.interleaved_reshape;
  const LayerWeights& lw = f.weights->layers[req.layer];
  const float fh = ImGui::GetFontSize(), side = fh * 3.6f;
  char what[160];
  if (inter)
    std::snprintf(what, sizeof what, "Head %d reads columns %d, %d, %d \xE2\x80\xA6 %d of W_Q, W_K, W_V: every %d-th (PITFALL)", h,
                  head_feature(h, 0, H, dh, true), head_feature(h, 1 % dh, H, dh, true), head_feature(h, 2 % dh, H, dh, true),
                  head_feature(h, dh - 1, H, dh, true), H);
  else
    std::snprintf(what, sizeof what, "Head %d reads columns %d\xE2\x80\x93%d of W_Q, W_K, W_V (d_head = %d of D = %d)", h, h * dh,
                  (h + 1) * dh - 1, dh, D);
  hook::add_text("messages", what);
  // On a short screen (a projector at 1024x768 with large text) it starts closed, so the
  // enlarged step is in view; its header stays, one click away.
  if (ImGui::GetWindowHeight() < ImGui::GetFontSize() * kFocusCompactLines) ImGui::SetNextItemOpen(false, ImGuiCond_Once);
  if (s.show.slice) ImGui::SetNextItemOpen(true), s.show.slice = false;  // a lesson's text points at it
  if (!ImGui::CollapsingHeader("The head's slice of D", ImGuiTreeNodeFlags_DefaultOpen)) return;
  hook::set_flag("focus_slice_open", true);
  // A loaded model keeps W_Q, W_K, W_V only packed in W_QKV: unpacked once for the layer shown
  // (kept while it stays shown), never every frame.
  static struct {
    std::weak_ptr<const ModelWeights> owner;
    int layer = -1;
    MatR m[3];
  } unpacked;
  const MatR* plain[3] = {&lw.w_q, &lw.w_k, &lw.w_v};
  if (!lw.plain_qkv()) {
    if (unpacked.owner.lock() != f.weights || unpacked.layer != req.layer) {
      for (int i = 0; i < 3; ++i) unpacked.m[i] = lw.proj(i);
      unpacked.owner = f.weights, unpacked.layer = req.layer;
    }
    for (int i = 0; i < 3; ++i) plain[i] = &unpacked.m[i];
  }
  const std::pair<const char*, const MatR*> mats[] = {{"W_Q", plain[0]}, {"W_K", plain[1]}, {"W_V", plain[2]}};
  for (size_t i = 0; i < std::size(mats); ++i) {
    if (i) ImGui::SameLine();
    ImGui::BeginGroup();
    // (D, D), y = x W: column c makes feature c; a family's W_Q is (D, H·d_head), its W_K and
    // W_V (D, kv_heads·d_head), where head h reads K/V head h / G.
    const MatR& m = *mats[i].second;
    const int cols = static_cast<int>(m.cols());
    const bool native_kv = i > 0 && cols == cfg.kv_heads() * dh && cols != H * dh;
    const int hc = native_kv ? h / std::max(1, H / std::max(1, cfg.kv_heads())) : h;  // the column block this head reads
    const float peak = std::max(m.cwiseAbs().maxCoeff(), 1e-6f);
    char tag[32];
    std::snprintf(tag, sizeof tag, "W/%d/%zu", req.layer, i);
    const MapTexture& tex = r.texture(f.weights, tag, m.data(), static_cast<int>(m.rows()), cols, cols, 512);
    HeatmapView v;
    v.tex = &tex;
    v.style.diverging = true;
    v.style.vmin = -peak;
    v.style.vmax = peak;
    v.style.grid = false;
    v.side = side;
    ImGui::PushID(static_cast<int>(i));
    const HeatmapHit hit = heatmap_view("w", r, v);
    ImGui::PopID();
    if (inter) {
      for (int j = 0; j < dh; ++j) {
        const int c = head_feature(h, j, H, dh, true);
        const float x = hit.p0.x + (c + 0.5f) * (hit.p1.x - hit.p0.x) / cols;
        ImGui::GetWindowDrawList()->AddLine(ImVec2(x, hit.p0.y), ImVec2(x, hit.p1.y), IM_COL32(255, 170, 60, 255), 1.5f);
      }
    } else {
      mark_columns(hit.p0, hit.p1, 0, static_cast<float>(cols), hc * dh, (hc + 1) * dh, false);
    }
    if (hit.hovered) ImGui::SetTooltip("%s row %d, column %d: %.4f%s", mats[i].first, hit.row, hit.col, m(hit.row, hit.col),
                                       hit.col / std::max(dh, 1) == hc && !inter ? "  (this head's column)" : "");
    ImGui::Text("%s", mats[i].first);
    ImGui::SameLine();
    ImGui::TextDisabled("%s", cols == D ? "(D, D)" : native_kv ? "(D, KV\xC2\xB7" "d_head)" : "(D, H\xC2\xB7" "d_head)");
    ImGui::EndGroup();
  }
  // The explanation beside the maps when it has room for a few words a line, else under them.
  char fills[128];
  std::snprintf(fills, sizeof fills, "Its output fills columns %d\xE2\x80\x93%d of the concatenation (marked in the concat step).", h * dh,
                (h + 1) * dh - 1);
  ImGui::SameLine();
  if (ImGui::GetContentRegionAvail().x < fh * 12) ImGui::NewLine();
  ImGui::BeginGroup();
  text_disabled_wrapped(what);
  text_disabled_wrapped(fills);
  ImGui::EndGroup();
}

// The soft-cap of query row t (Gemma 2): each visible key's score before (x: the scale step)
// and after (y) c·tanh(x / c), on the curve itself, with y = x faint for comparison.
void softcap_curve(AppState& s, const HeadTrace& tr, int t, float side) {
  if (tr.softcap <= 0 || tr.capped.size() == 0 || t < 0 || t >= tr.capped.rows()) return;
  const float c = tr.softcap;
  float xm = 1.5f * c;
  for (Eigen::Index k = 0; k < tr.scaled.cols(); ++k)
    if (std::isfinite(tr.masked(t, k))) xm = std::max(xm, std::abs(tr.scaled(t, k)) * 1.05f);
  char what[160];
  std::snprintf(what, sizeof what, "Soft-cap of row %d: x is the scaled score, y = %g\xC2\xB7tanh(x / %g); the dots are this row's visible keys.", t, c, c);
  text_disabled_wrapped(what);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos(), p1(p0.x + side * 1.6f, p0.y + side);
  const ImU32 axis = IM_COL32(128, 128, 128, 140), curve = IM_COL32(255, 158, 64, 255), dot = IM_COL32(90, 205, 255, 255);
  auto at = [&](float x, float y) {
    return ImVec2(p0.x + (x / xm * 0.5f + 0.5f) * (p1.x - p0.x), p0.y + (0.5f - y / (xm) * 0.5f) * (p1.y - p0.y));
  };
  dl->AddRect(p0, p1, axis);
  dl->AddLine(at(-xm, 0), at(xm, 0), axis);
  dl->AddLine(at(0, -xm), at(0, xm), axis);
  dl->AddLine(at(-xm, -xm), at(xm, xm), IM_COL32(128, 128, 128, 80));  // y = x: no cap
  dl->AddLine(at(-xm, c), at(xm, c), IM_COL32(255, 158, 64, 70));        // the cap's asymptotes
  dl->AddLine(at(-xm, -c), at(xm, -c), IM_COL32(255, 158, 64, 70));
  ImVec2 prev = at(-xm, -c * std::tanh(xm / c));
  for (int i = 1; i <= 64; ++i) {
    const float x = -xm + 2 * xm * i / 64.0f;
    const ImVec2 q = at(x, c * std::tanh(x / c));
    dl->AddLine(prev, q, curve, 2.0f);
    prev = q;
  }
  for (Eigen::Index k = 0; k < tr.scaled.cols(); ++k) {
    if (!std::isfinite(tr.masked(t, k))) continue;  // hidden keys: not in the softmax
    dl->AddCircleFilled(at(tr.scaled(t, k), tr.capped(t, k)), 3.5f, dot);
    char rep[64];
    std::snprintf(rep, sizeof rep, "%d %.6f %.6f", static_cast<int>(k), tr.scaled(t, k), tr.capped(t, k));
    hook::add_text("softcap_points", rep);
  }
  ImGui::Dummy(ImVec2(p1.x - p0.x, p1.y - p0.y));
}

}  // namespace

void draw_focus(AppState& s, HeatmapRenderer& r) {
  if (!s.result || !s.result->fwd || s.result->fwd->batch.empty()) {
    ImGui::TextDisabled("Nothing to show yet.");
    return;
  }
  const ModelConfig& cfg = s.result->request.cfg;
  if (cfg.pitfalls.head_averaged) {
    ImGui::TextWrapped("The head-averaged pitfall is on: the per-head maps were averaged away, so there is no single head to step "
                       "through. Switch it off in Controls to see each head.");
    return;
  }
  if (!s.result->trace) {
    ImGui::TextDisabled("Computing the step-through...");
    return;
  }
  const HeadTrace& tr = *s.result->trace;
  const ForwardData& f = *s.result->fwd;
  const TraceRequest& req = *s.result->request.trace;  // a trace answers a request for one
  const std::vector<std::string>& toks = f.labels[req.batch];
  const int len = tr.len;

  ImGui::Text("Layer %d, head %d (of heads 0-%d), sentence %d", req.layer, req.head, cfg.num_heads - 1, req.batch);
  char keys[96];
  std::snprintf(keys, sizeof keys, "   \xE2\x86\x90 \xE2\x86\x92 heads, \xE2\x86\x91 \xE2\x86\x93 layers   d_head = %d", cfg.d_head());
  same_line_if_fits(ImGui::CalcTextSize(keys).x);
  ImGui::TextDisabled("%s", keys);
  if (s.stale) {
    same_line_if_fits(ImGui::CalcTextSize("  updating...").x);
    ImGui::TextColored(kPendingColour, "  updating...");
  }
  // Back to every head at once (Contributions > Head overview), this one selected there.
  same_line_if_fits(ImGui::CalcTextSize("All heads...").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("All heads...")) {
    s.contrib.view = ContribView::Overview;
    s.view.center = CenterPanel::Contrib;
  }
  hook_widget("All heads...");

  if (f.weights->arch.rotary() && !f.weights->arch.rope_on(req.layer))  // SmolLM3's NoPE layers
    text_disabled_wrapped("No RoPE in this layer (a NoPE layer): q and k carry no position, so the scores see only what the tokens are.");
  head_slice_strip(s, r, f, cfg, req);
  ImGui::Separator();

  std::vector<Step> steps = steps_of(tr, cfg, f.weights->arch);
  for (Step& st : steps) {
    const size_t id = static_cast<size_t>(st.id);
    if (id < s.result->trace_range.size()) std::tie(st.lo, st.hi) = s.result->trace_range[id];
    if (id < s.result->trace_levels.size() && s.result->trace_levels[id].num_levels() > 1) st.levels = &s.result->trace_levels[id];
    if (!st.label.empty()) st.name = st.label.c_str();
    if (!st.note.empty()) st.explain = st.note.c_str();
    hook::add_text("focus_steps", st.name);
  }
  // focus_step is a step id (trace_step_matrices); one this model does not have shows softmax.
  int& sel_id = s.view.focus_step;
  int sel = -1;
  for (size_t i = 0; i < steps.size(); ++i)
    if (steps[i].id == sel_id) sel = static_cast<int>(i);
  if (sel < 0) {
    sel_id = 6;
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].id == sel_id) sel = static_cast<int>(i);
  }
  const std::shared_ptr<const void> owner = s.result;  // the trace lives in the result

  // The strip: every step as a small map with its name and shape; it wraps when narrow.
  const float fh = ImGui::GetFontSize();
  // On a short screen the strip is smaller and the shapes move into the tooltips, so that
  // the enlarged step below stays in view.
  const bool compact = ImGui::GetWindowHeight() < fh * kFocusCompactLines;
  const float thumb = fh * (compact ? 2.4f : 3.4f);
  const float arrow_w = ImGui::CalcTextSize("\xE2\x86\x92").x + ImGui::GetStyle().ItemSpacing.x * 2;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    const float item_w = std::max({thumb, ImGui::CalcTextSize(st.name).x, compact ? 0.0f : ImGui::CalcTextSize(st.shape.c_str()).x});
    if (i) {
      ImGui::SameLine();
      if (ImGui::GetContentRegionAvail().x < item_w + arrow_w) ImGui::NewLine();
      else {
        ImGui::TextDisabled("\xE2\x86\x92");
        ImGui::SameLine();
      }
    }
    ImGui::BeginGroup();
    char tag[32];
    std::snprintf(tag, sizeof tag, "step/%zu", i);
    const int rows = len, cols = static_cast<int>(st.m->cols());
    const MapSource src{owner, tag, st.m->data(), rows, cols, cols, st.levels};
    HeatmapView v;
    if (st.levels) v.source = &src;  // a long (T, T) step: from its max-pooled levels
    else v.tex = &r.texture(owner, tag, st.m->data(), rows, cols, cols, 1024);
    v.style = step_style(st, s, cfg, len, tr.window);
    v.style.grid = false;
    v.width = thumb;
    v.height = thumb;
    ImGui::PushID(static_cast<int>(i));
    const HeatmapHit hit = heatmap_view("thumb", r, v);
    ImGui::PopID();
    if (static_cast<int>(i) == sel)
      ImGui::GetWindowDrawList()->AddRect(ImVec2(hit.p0.x - 3, hit.p0.y - 3), ImVec2(hit.p1.x + 3, hit.p1.y + 3), IM_COL32(255, 140, 70, 255), 0, 0, 2.5f);
    if (hit.clicked) sel = static_cast<int>(i), sel_id = st.id;
    if (hit.hovered) ImGui::SetTooltip("%s %s\n%s", st.name, st.shape.c_str(), st.explain);
    ImGui::TextUnformatted(st.name);
    if (!compact) ImGui::TextDisabled("%s", st.shape.c_str());
    ImGui::EndGroup();
  }
  ImGui::Separator();

  // The selected step, large.
  const Step& st = steps[sel];
  char shape[96];
  std::snprintf(shape, sizeof shape, "%s = (%d, %d)", st.shape.c_str(), len, static_cast<int>(st.m->cols()));
  ImGui::Text("%s", st.name);
  ImGui::SameLine();
  ImGui::TextDisabled("%s", shape);
  hook::set_text("focus_step_shown", std::string(st.name) + " " + shape);
  // On a short screen the explanation is a hover away (the map gets its lines).
  if (compact) {
    same_line_if_fits(ImGui::CalcTextSize(" (?)").x);
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", st.explain);
  } else {
    ImGui::TextWrapped("%s", st.explain);
  }

  char tag[32];
  std::snprintf(tag, sizeof tag, "big/%d", st.id);
  const MapSource big_src{owner, tag, st.m->data(), len, static_cast<int>(st.m->cols()), static_cast<int>(st.m->cols()), st.levels};
  // The labels' room: the widest token (at most 10 lines of text) and its position number.
  const float lw = std::min(token_label_width(s, req.batch), fh * 10) + ImGui::CalcTextSize("  ").x +
                   ImGui::CalcTextSize(std::to_string(std::max(len - 1, 0)).c_str()).x + 8;
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  // The RoPE step keeps room under its map for the pairs' dials (two lines of them).
  const bool rope = st.id == kStepRope;
  const float legend_h = ImGui::GetTextLineHeightWithSpacing() * 2.5f +
                         (rope ? ImGui::GetTextLineHeightWithSpacing() * 2 + 2 * (std::clamp(avail.x / std::max<float>(tr.rope_inv_freq.size(), 1), fh * 2.6f, fh * 4.0f) + fh) : 0.0f) +
                         (st.id == kStepSoftcap ? ImGui::GetTextLineHeightWithSpacing() * 2 + fh * 7 : 0.0f);
  const int cols = static_cast<int>(st.m->cols());
  // Zoom window: centre (pan_x, pan_y) in [0,1], zoom >= 1.
  float& zoom = s.view.zoom;
  zoom = std::clamp(zoom, 1.0f, 64.0f);
  const float half = 0.5f / zoom;
  s.view.pan_x = std::clamp(s.view.pan_x, half, 1 - half);
  s.view.pan_y = std::clamp(s.view.pan_y, half, 1 - half);
  const float c0 = (s.view.pan_x - half) * cols, c1 = (s.view.pan_x + half) * cols;
  const float r0 = (s.view.pan_y - half) * len, r1 = (s.view.pan_y + half) * len;
  const bool col_tokens = st.square;
  // The height left under the strip (the panel scrolls only when that is less than a few
  // lines). Labels thin out to axis ticks with position numbers, so they stay at any length.
  // The key labels rotated, or flat on one line when rotated ones would take more than
  // 40% of the height (a projector's short screen).
  const bool labels = true, flat = col_tokens && avail.y - legend_h - lw < 0.6f * (avail.y - legend_h);
  const float aspect = (c1 - c0) / std::max(r1 - r0, 1e-6f);
  auto map_size = [&](float col_h) {  // (width, height) under key labels col_h high
    const float map_h = std::max(fh * 4, std::max(avail.y - legend_h, col_h + fh * 8) - col_h);
    return ImVec2(std::min(avail.x - (labels ? lw : 0) - fh, map_h * (st.square ? 1.0f : std::max(aspect, 0.25f))), map_h);
  };
  const float col_h = !col_tokens ? 0.0f : !flat ? lw : flat_labels_h(flat_label_lines(cols, c1 - c0, [&](int k) { return map_size(flat_labels_h(k)).x; }));
  const float map_h = map_size(col_h).y, map_w = map_size(col_h).x;

  HeatmapView v;
  // A long (T, T) step is drawn from its max-pooled levels, with full-resolution tiles when
  // zoomed in; the others are at most (T, D) and upload whole.
  if (st.levels) v.source = &big_src;
  else v.tex = &r.texture(owner, tag, st.m->data(), len, static_cast<int>(st.m->cols()), static_cast<int>(st.m->cols()), 2048);
  v.style = step_style(st, s, cfg, len, tr.window);
  v.style.log_scale = st.weights && s.view.log_scale;
  v.style.grid = s.view.grid_lines;
  v.style.col0 = c0;
  v.style.col1 = c1;
  v.style.row0 = r0;
  v.style.row1 = r1;
  v.style.hi_row = s.hover_token;
  v.style.hi_col = col_tokens ? s.hover_token : -1;
  v.width = map_w;
  v.height = std::min(map_h, st.square ? map_w : map_h);
  if (labels) {
    v.row_labels = &toks;
    v.label_w = lw;
    if (col_tokens) {
      v.col_labels = &toks;
      v.label_h = col_h;
      v.flat_col_labels = flat;
    }
  }
  v.hover_token = s.hover_token;
  const HeatmapHit hit = heatmap_view("big", r, v);
  hook::add_rect("focus_map", ImVec2(hit.p0.x, hit.p0.y), ImVec2(hit.p1.x, hit.p1.y));
  hook_widget("focus map", hit.p0, hit.p1);
  hook::set_int("focus_map_pool", r.largest_pool_drawn());
  const int dh = cfg.d_head(), head = req.head;
  if (st.m == &tr.concat) mark_columns(hit.p0, hit.p1, c0, c1 - c0, head * dh, (head + 1) * dh, true);  // this head's columns
  const int rot = 2 * static_cast<int>(tr.rope_inv_freq.size());
  if (rope && rot < dh) mark_columns(hit.p0, hit.p1, c0, c1 - c0, 0, rot, true);  // partial rotary: the rest is not rotated
  if (hit.hovered) {
    const float val = (*st.m)(hit.row, hit.col);
    ImGui::BeginTooltip();
    ImGui::Text("row %d \"%s\"", hit.row, glyphs().shown(toks[hit.row]).c_str());
    if (col_tokens) ImGui::Text("column %d \"%s\"", hit.col, glyphs().shown(toks[hit.col]).c_str());
    else if (st.m->cols() == dh)
      ImGui::Text("feature %d of the head = column %d of D", hit.col, head_feature(head, hit.col, cfg.num_heads, dh, cfg.pitfalls.interleaved_reshape));
    else ImGui::Text("feature %d%s", hit.col, hit.col / std::max(dh, 1) == head ? " (this head's columns)" : "");
    if (std::isfinite(val)) ImGui::Text("value %.4f", val);
    if (st.id == kStepQNorm) ImGui::Text("k: %.4f", tr.k_normed(hit.row, hit.col));
    if (rope) ImGui::Text("k: %.4f%s", tr.k(hit.row, hit.col), hit.col >= rot ? "  (not rotated)" : "");
    else ImGui::TextUnformatted("value \xE2\x88\x92\xE2\x88\x9E (hidden by the mask)");
    ImGui::EndTooltip();
    // Wheel zooms about the mouse; drag pans; double-click resets.
    const float wheel = ImGui::GetIO().MouseWheel;
    if (wheel != 0) {
      const float mx = (hit.col + 0.5f) / cols, my = (hit.row + 0.5f) / std::max(len, 1);
      const float nz = std::clamp(zoom * std::pow(1.25f, wheel), 1.0f, 64.0f);
      s.view.pan_x = mx + (s.view.pan_x - mx) * zoom / nz;
      s.view.pan_y = my + (s.view.pan_y - my) * zoom / nz;
      zoom = nz;
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
      const ImVec2 d = ImGui::GetIO().MouseDelta;
      s.view.pan_x -= d.x / std::max(hit.p1.x - hit.p0.x, 1.0f) / zoom;
      s.view.pan_y -= d.y / std::max(hit.p1.y - hit.p0.y, 1.0f) / zoom;
    }
    if (hit.double_clicked) {
      zoom = 1;
      s.view.pan_x = s.view.pan_y = 0.5f;
    }
  }
  if (zoom > 1.0f) {
    char z[96];
    std::snprintf(z, sizeof z, "zoom %.1fx (wheel, drag, double-click to reset)", zoom);
    same_line_if_fits(ImGui::CalcTextSize(z).x);
    ImGui::TextDisabled("%s", z);
  }
  colour_legend(v.style,
                !st.weights               ? "signed value: blue < 0 < red"
                : v.style.filter.active() ? "attention weight; dimmed: filtered out (rows not renormalised)"
                                          : "attention weight",
                std::min(avail.x * 0.3f, fh * 14));
  // The rotation of each pair at the hovered token, else the selected one, else the last.
  if (rope) {
    const int pos = s.hover_token >= 0 && s.hover_token < len ? s.hover_token
                    : s.selected_token >= 0 && s.selected_token < len ? s.selected_token : len - 1;
    rope_pairs(s, tr, pos, ImGui::GetContentRegionAvail().x);
  }
  if (st.id == kStepSoftcap) {  // the row under the mouse, else the selected token's, else the last
    const int row = hit.hovered ? hit.row : s.selected_token >= 0 && s.selected_token < len ? s.selected_token : len - 1;
    softcap_curve(s, tr, row, std::min(fh * 7, ImGui::GetContentRegionAvail().x / 1.6f));
  }
}

}  // namespace headmap
