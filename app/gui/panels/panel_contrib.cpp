// panel_contrib.cpp: what each head adds to a prediction (issue 28). A click on a Next-token
// entry asks the compute worker for that logit's direct attribution (core/inspect/contrib.h);
// this panel shows it as a layers x heads grid, each cell the head's contribution in logit
// units (blue adds, red takes away), then the embeddings, the MLPs and the biases, and the
// completeness check: the parts plus the final LayerNorm's centring term equal the logit. On a
// post-norm encoder (a click on a [MASK]'s filler) every LayerNorm's scale is frozen and the
// parts are the same plus each layer's LayerNorm betas and the masked-LM head's biases, with
// no centring term (contrib.h).
// A click on a cell opens that head in Focus at the position.
//
// L = layers, H = heads
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/glyphs.h"

namespace headmap {

namespace {
// Blue for a positive contribution, red for a negative one, as strong as |v| / peak.
ImU32 signed_colour(float v, float peak) {
  const float a = peak > 0 ? std::min(1.0f, std::abs(v) / peak) : 0.0f;
  const int base = 45;
  if (v >= 0) return IM_COL32(base + static_cast<int>(20 * a), base + static_cast<int>(90 * a), base + static_cast<int>(200 * a), 255);
  return IM_COL32(base + static_cast<int>(200 * a), base + static_cast<int>(40 * a), base + static_cast<int>(40 * a), 255);
}
}  // namespace

void draw_contrib(AppState& s) {
  if (!s.attribute) return;
  ImGui::Spacing();
  ImGui::Separator();
  const AttributionRequest req = *s.attribute;
  ImGui::TextUnformatted("What each head adds");
  same_line_if_fits(ImGui::CalcTextSize("Close").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::SmallButton("Close##contrib")) {
    s.attribute.reset();
    return;
  }
  hook_widget("Close##contrib");
  const ComputeResult* res = s.result.get();
  if (!res || !res->request.attribution || !(*res->request.attribution == req)) {
    text_disabled_wrapped("computing the attribution...");
    return;
  }
  if (!res->attribution) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", res->attribution_error.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", res->attribution_error);
    return;
  }
  const Attribution& a = *res->attribution;
  const ForwardData* f = res->fwd.get();
  std::string token = "#" + std::to_string(a.target.token_a), after;
  if (f && f->weights && f->weights->trained()) token = token_name(*f->weights, a.target.token_a);
  if (f && req.batch < static_cast<int>(f->labels.size()) && a.target.position < static_cast<int>(f->labels[req.batch].size()))
    after = f->labels[req.batch][a.target.position];
  char line[256];
  const bool post_norm = !a.norm_bias.empty();  // BERT, RoBERTa, DistilBERT
  if (post_norm)
    std::snprintf(line, sizeof line, "logit of \"%s\" at \"%s\" (position %d, masked-LM head): %.3f, every LayerNorm's scale frozen",
                  token.c_str(), after.c_str(), a.target.position, a.logit);
  else if (a.softcap > 0)  // Gemma 2: the parts sum to the logit before the cap
    std::snprintf(line, sizeof line, "pre-cap logit of \"%s\" after \"%s\" (position %d): %.3f (the model's, after its cap c·tanh(z/c), c = %g: %.3f)",
                  token.c_str(), after.c_str(), a.target.position, a.logit, static_cast<double>(a.softcap), a.model_logit);
  else
    std::snprintf(line, sizeof line, "logit of \"%s\" after \"%s\" (position %d): %.3f", token.c_str(), after.c_str(),
                  a.target.position, a.logit);
  text_disabled_wrapped_at_commas(glyphs().shown(line));  // never broken inside a number; tokens drawn visual (bidi.h)

  // The grid: layers down, heads across.
  float peak = 0;
  for (float v : a.heads) peak = std::max(peak, std::abs(v));
  const float fh = ImGui::GetFontSize(), spacing = ImGui::GetStyle().ItemSpacing.x;
  const float label_w = ImGui::CalcTextSize("L00").x + spacing;
  // As wide as the column allows (never wider: nothing is cut off), at most 4.5 em a cell.
  const float cell_w = std::max(2.0f, std::min((ImGui::GetContentRegionAvail().x - label_w) / std::max(1, a.H) - 2.0f, fh * 4.5f));
  const float cell_h = fh * 1.4f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  for (int h = 0; h < a.H; ++h) {  // head numbers across the top
    char hn[16];
    std::snprintf(hn, sizeof hn, "%d", h);
    const float x = origin.x + label_w + h * (cell_w + 2) + (cell_w - ImGui::CalcTextSize(hn).x) / 2;
    dl->AddText(ImVec2(x, origin.y), ImGui::GetColorU32(ImGuiCol_TextDisabled), hn);
  }
  const float top = origin.y + fh + 2;
  const std::pair<int, int> best = a.ranking().empty() ? std::pair{-1, -1} : a.ranking()[0];
  for (int l = 0; l < a.L; ++l) {
    char ln[16];
    std::snprintf(ln, sizeof ln, "L%d", l);
    dl->AddText(ImVec2(origin.x, top + l * (cell_h + 2) + (cell_h - fh) / 2), ImGui::GetColorU32(ImGuiCol_TextDisabled), ln);
    for (int h = 0; h < a.H; ++h) {
      const float v = a.heads[static_cast<size_t>(l) * a.H + h];
      const ImVec2 p0(origin.x + label_w + h * (cell_w + 2), top + l * (cell_h + 2)), p1(p0.x + cell_w, p0.y + cell_h);
      dl->AddRectFilled(p0, p1, signed_colour(v, peak), 2.0f);
      if (best == std::pair{l, h}) dl->AddRect(p0, p1, IM_COL32(255, 255, 255, 255), 2.0f, 0, 2.0f);
      // The value, as precise as the cell's width allows (the tooltip has it in full).
      char num[24];
      ImVec2 ts;
      for (const char* fmt : {std::abs(v) >= 10 ? "%+.1f" : "%+.2f", "%.1f", "%.0f"}) {
        std::snprintf(num, sizeof num, fmt, v);
        if ((ts = ImGui::CalcTextSize(num)).x <= cell_w - 2) break;
      }
      if (ts.x <= cell_w - 2) dl->AddText(ImVec2(p0.x + (cell_w - ts.x) / 2, p0.y + (cell_h - ts.y) / 2), IM_COL32(255, 255, 255, 255), num);
      char id[32];
      std::snprintf(id, sizeof id, "attribution %d.%d", l, h);
      hook_widget(id, p0, p1);
      if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(p0, p1)) {
        ImGui::SetTooltip("head %d.%d adds %+.4f to the logit\nclick: open it in Focus at position %d", l, h, v, a.target.position);
        if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {  // the head in Focus, at the position
          s.view.layer = l;
          s.view.head = h;
          s.view.batch = req.batch;
          s.selected_token = a.target.position;
          s.view.center = CenterPanel::Focus;
        }
      }
    }
  }
  ImGui::Dummy(ImVec2(label_w + a.H * (cell_w + 2), fh + 2 + a.L * (cell_h + 2)));

  // The rest of the stream, and completeness.
  std::string rest;
  char part[64];
  std::snprintf(part, sizeof part, "embeddings %+.2f", a.embeddings);
  rest += part;
  for (int l = 0; l < a.L; ++l) {
    std::snprintf(part, sizeof part, ", MLP %d %+.2f, b_O %d %+.2f", l, a.mlps[l], l, a.attn_bias[l]);
    rest += part;
    if (post_norm) {
      std::snprintf(part, sizeof part, ", LN betas %d %+.2f", l, a.norm_bias[l]);
      rest += part;
    }
  }
  if (post_norm) std::snprintf(part, sizeof part, ", masked-LM head biases %+.2f", a.final_bias);
  else std::snprintf(part, sizeof part, ", ln_f bias %+.2f, centring %+.2f", a.final_bias, a.centring);
  rest += part;
  text_disabled_wrapped_at_commas(rest);
  const bool complete = a.completeness_error <= 1e-4f * std::max(1.0f, std::abs(a.logit));
  std::snprintf(line, sizeof line, "parts sum to %.4f, the logit is %.4f: %s (error %.1e)", a.parts_sum, a.logit,
                complete ? "complete" : "NOT complete", a.completeness_error);
  ImGui::PushStyleColor(ImGuiCol_TextDisabled, complete ? kUnchangedColour : kErrorColour);
  text_disabled_wrapped_at_commas(line);
  ImGui::PopStyleColor();
  hook::add_text("messages", line);
}

}  // namespace headmap
