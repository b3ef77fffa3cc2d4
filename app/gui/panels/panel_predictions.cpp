// panel_predictions.cpp: what a trained model predicts next. The top-k next tokens, with
// their probabilities, after the hovered token (or the clicked chip, else the sentence's
// last token), so that "cat dog ... cat -> dog" is visible; and, for a batch, each
// sentence's own loss, as a selector of the sentence the views show.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/theme.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/glyphs.h"
#include "app/common/token_labels.h"

namespace headmap {

namespace {
constexpr int kTopK = 5;

// The batch selector: one line per sentence with its own loss; a click selects it.
void sentence_selector(AppState& s, const ForwardData& f) {
  ImGui::TextUnformatted("Batch");
  same_line_if_fits(ImGui::CalcTextSize("(each sentence's own loss; click to show it)").x);
  text_disabled_wrapped("(each sentence's own loss; click to show it)");
  for (int b = 0; b < f.batch.B(); ++b) {
    const double loss = f.sentence_loss_at(b);
    std::string text;
    for (const std::string& l : f.labels[b]) text += l + " ";
    char label[96];
    if (std::isnan(loss)) std::snprintf(label, sizeof label, "%d  (one token: no loss)###s%d", b, b);
    else std::snprintf(label, sizeof label, "%d  %.2f###s%d", b, loss, b);
    const float right = ImGui::CalcTextSize(label, nullptr, true).x;
    if (ImGui::Selectable(label, s.view.batch == b)) {
      s.view.batch = b;
      s.selected_token = -1;
    }
    // The sentence's start, after the number and loss, cut to the line (never past it).
    ImGui::SameLine(right + ImGui::GetStyle().ItemSpacing.x * 3);
    const float room = ImGui::GetContentRegionAvail().x;
    std::string shown = text;
    while (!shown.empty() && ImGui::CalcTextSize((glyphs().shown(shown) + "\xE2\x80\xA6").c_str()).x > room) shown.resize(shown.size() * 3 / 4);
    while (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0xC0) == 0x80) shown.pop_back();  // whole characters
    if (!shown.empty() && (static_cast<unsigned char>(shown.back()) & 0x80)) shown.pop_back();
    ImGui::TextDisabled("%s%s", glyphs().shown(shown).c_str(), shown.size() < text.size() ? "\xE2\x80\xA6" : "");  // cut in typed order, drawn visual
    hook::add_num("sentence_losses", loss);
  }
}
// Encoders: the masked-LM head's top-k fillers of every [MASK] of the sentence on screen, and
// the masked-token loss; a model without the head says so.
void draw_mask_predictions(AppState& s, const ForwardData& f) {
  ImGui::TextUnformatted("Masked words");
  if (!f.weights->arch.mlm_head) {
    const std::string msg = "This " + f.weights->arch.name + " has no masked-LM head (a ...Model checkpoint, not ...ForMaskedLM), so it "
                            "cannot fill a [MASK]; its attention maps are all it shows.";
    text_disabled_wrapped(msg.c_str());
    hook::add_text("messages", msg);
    return;
  }
  if (!has_next_tokens(f.out) || f.batch.empty()) return;
  const int b = std::clamp(s.view.batch, 0, f.batch.B() - 1), mask = mask_token_id(*f.weights);
  const float fh = ImGui::GetFontSize(), avail = ImGui::GetContentRegionAvail().x, spacing = ImGui::GetStyle().ItemSpacing.x;
  int shown = 0;
  for (int t = 0; t < f.batch.lengths[b]; ++t) {
    const Token& tok = f.batch.sentences[b].tokens[static_cast<size_t>(t)];
    if (tok.id != mask) continue;
    ++shown;
    std::string where = "position " + std::to_string(t);
    if (tok.masked_id >= 0) where += " (was \"" + hf_piece(*f.weights->hf_tokenizer, tok.masked_id).text + "\")";
    text_disabled_wrapped(glyphs().shown(where).c_str());
    const std::vector<NextToken> top = top_k_next(*f.weights, f.out, b, t, kTopK);
    float token_w = 0;
    for (const NextToken& n : top) token_w = std::max(token_w, ImGui::CalcTextSize(glyphs().shown(n.display).c_str()).x);
    const float bar_w = std::clamp(avail - ImGui::CalcTextSize("100.0%").x - token_w - spacing * 3, fh * 2, avail * 0.35f);
    for (const NextToken& n : top) {
      const ImVec2 c = ImGui::GetCursorScreenPos();
      ImDrawList* dl = ImGui::GetWindowDrawList();
      dl->AddRectFilled(c, ImVec2(c.x + bar_w, c.y + fh), IM_COL32(60, 70, 90, 255), 2.0f);
      dl->AddRectFilled(c, ImVec2(c.x + bar_w * n.prob, c.y + fh), n.id == tok.masked_id ? IM_COL32(90, 200, 120, 255) : IM_COL32(170, 90, 160, 255), 2.0f);
      ImGui::Dummy(ImVec2(bar_w, fh));
      ImGui::SameLine();
      ImGui::Text("%5.1f%%", 100.0 * n.prob);
      const std::string drawn = glyphs().shown(n.display);  // visual order, Arabic joined (bidi.h)
      same_line_if_fits(ImGui::CalcTextSize(drawn.c_str()).x);
      if (n.id == tok.masked_id) ImGui::TextColored(kUnchangedColour, "%s", drawn.c_str());
      else ImGui::TextUnformatted(drawn.c_str());
      // A click on the filler attributes its logit at the [MASK] to every head (panel_contrib.cpp).
      const ImVec2 end(c.x + avail, c.y + fh);
      if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(c, end) && ImGui::IsMouseClicked(ImGuiMouseButton_Left))
        s.attribute = AttributionRequest{b, LogitTarget{t, n.id, -1}};
      hook_widget(("filler " + n.display).c_str(), c, end);
      hook::add_text("predictions", n.display + " " + std::to_string(n.prob));
    }
  }
  if (shown > 0) text_disabled_wrapped("click a filler: what each head adds to its logit");
  if (shown == 0) text_disabled_wrapped("No [MASK] in this sentence: type [MASK] (RoBERTa: <mask>), or click a chip to mask it.");
  if (f.out.loss_tokens > 0) {
    char loss[128];
    std::snprintf(loss, sizeof loss, "masked-token loss %.3f nats over %d masked token%s", f.out.loss, f.out.loss_tokens, f.out.loss_tokens == 1 ? "" : "s");
    text_disabled_wrapped(loss);
  }
}
}  // namespace

void draw_predictions(AppState& s) {
  if (!s.result || !s.result->fwd) return;
  const ForwardData& f = *s.result->fwd;
  if (f.weights && f.weights->arch.encoder()) return draw_mask_predictions(s, f);
  if (!f.weights->trained() || f.batch.empty()) return;
  // A typing pass's maps come first, its next tokens a moment later (ForwardData::late):
  // meanwhile the last predictions stay, dimmed, so the panel keeps its height as one types.
  const bool pending = f.next_pending();
  AppState::Predictions& p = s.predictions;
  if (pending) hook::add_text("predictions_pending", "computing");
  if (pending && p.top.empty()) {
    ImGui::TextUnformatted("Next token");
    same_line_if_fits(ImGui::CalcTextSize("computing\xE2\x80\xA6").x);
    ImGui::TextDisabled("computing\xE2\x80\xA6");
    return;
  }
  if (!pending && !f.has_next()) return;
  if (f.batch.B() > 1) {
    sentence_selector(s, f);
    ImGui::Spacing();
  }
  const int b = std::clamp(s.view.batch, 0, f.batch.B() - 1);
  const int len = f.batch.lengths[b];
  if (len == 0) return;
  // The position: the hovered token, else the clicked chip, else the last token.
  const int pos = s.hover_token >= 0 && s.hover_token < len ? s.hover_token
                  : s.selected_token >= 0 && s.selected_token < len ? s.selected_token : len - 1;
  if (!pending && (p.fwd != &f || p.seq != s.result->seq || p.batch != b || p.pos != pos)) {
    char where[160];
    std::snprintf(where, sizeof where, "after \"%s\" (position %d)", f.labels[b][pos].c_str(), pos);
    p = {&f, s.result->seq, b, pos, where, f.top_next(b, pos, kTopK)};
    // Each entry labelled as the maps label a token (token_labels.h): a byte that ends the
    // character before it reads "ق 2/2", one that starts a character "… 1/2".
    const std::vector<Token>& toks = f.batch.sentences[b].tokens;
    const std::vector<Token> before(toks.begin(), toks.begin() + std::min<size_t>(toks.size(), static_cast<size_t>(pos) + 1));
    for (NextToken& t : p.top) t.display = next_token_label(*f.weights, before, t.id);
  }
  if (p.top.empty()) return;

  // Pending, the last predictions stay as they were, line for line (their own "after" line, the
  // panel no taller or shorter as they come), dimmed, and "computing…" beside Generate.
  if (pending) ImGui::BeginDisabled();
  const std::string where_drawn = glyphs().shown(p.where);
  ImGui::TextUnformatted("Next token");
  same_line_if_fits(ImGui::CalcTextSize(where_drawn.c_str()).x);
  text_disabled_wrapped(where_drawn.c_str());
  // Generate: the most likely next token after the last sentence, appended to the text; the
  // K/V cache keeps every row before it, so the heads panel shows one row computed.
  if (ImGui::Button("Generate")) s.generate_tokens += 1;
  hook_widget("Generate");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip("Append the model's most likely next token (greedy) to the end of the text, one per press.\n"
                      "The K/V cache keeps the K and V of every token before it: watch one new row appear in each map.");
  hook::add_text("buttons", "Generate");
  if (pending) {
    same_line_if_fits(ImGui::CalcTextSize("computing\xE2\x80\xA6").x);
    ImGui::TextDisabled("computing\xE2\x80\xA6");
  }
  const bool known = pos + 1 < len;  // the text's own next token, when there is one
  const int actual = known ? f.batch.sentences[b].tokens[pos + 1].id : -1;
  // The bar leaves room for the percentage and the widest token on its line.
  const float fh = ImGui::GetFontSize(), avail = ImGui::GetContentRegionAvail().x, spacing = ImGui::GetStyle().ItemSpacing.x;
  float token_w = 0;
  for (const NextToken& t : p.top) token_w = std::max(token_w, ImGui::CalcTextSize(glyphs().shown(t.display).c_str()).x);
  const float bar_w = std::clamp(avail - ImGui::CalcTextSize("100.0%").x - token_w - spacing * 3, fh * 2, avail * 0.35f);
  for (const NextToken& t : p.top) {
    // A bar as long as the probability, the token, and the percentage.
    const ImVec2 c = ImGui::GetCursorScreenPos();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(c, ImVec2(c.x + bar_w, c.y + fh), IM_COL32(60, 70, 90, 255), 2.0f);
    dl->AddRectFilled(c, ImVec2(c.x + bar_w * t.prob, c.y + fh), t.id == actual ? IM_COL32(90, 200, 120, 255) : IM_COL32(90, 150, 230, 255), 2.0f);
    ImGui::Dummy(ImVec2(bar_w, fh));
    ImGui::SameLine();
    ImGui::Text("%5.1f%%", 100.0 * t.prob);
    const std::string drawn = glyphs().shown(t.display);  // visual order, Arabic joined (bidi.h)
    same_line_if_fits(ImGui::CalcTextSize(drawn.c_str()).x);
    if (t.id == actual) ImGui::TextColored(kUnchangedColour, "%s", drawn.c_str());
    else ImGui::TextUnformatted(drawn.c_str());
    // A click on the entry attributes its logit to every head (panel_contrib.cpp).
    const ImVec2 end(c.x + avail, c.y + fh);
    if (pending) continue;
    if (ImGui::IsWindowHovered() && ImGui::IsMouseHoveringRect(c, end) && ImGui::IsMouseClicked(ImGuiMouseButton_Left))
      s.attribute = AttributionRequest{b, LogitTarget{pos, t.id, -1}};
    hook_widget(("next " + t.display).c_str(), c, end);
    hook::add_text("predictions", t.display + " " + std::to_string(t.prob));
  }
  if (pending) {
    ImGui::EndDisabled();
    return;
  }
  if (!s.result->request.cfg.causal) {  // the model sees the token it is asked for
    ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
    ImGui::TextWrapped("%s", kCausalOffLossNote);
    ImGui::PopStyleColor();
  }
  if (known) {
    const bool in_top = std::any_of(p.top.begin(), p.top.end(), [&](const NextToken& t) { return t.id == actual; });
    text_disabled_wrapped(glyphs().shown("the text goes on with \"" + f.labels[b][pos + 1] + "\"" + (in_top ? " (green)" : ", not in the top 5")).c_str());
  }
  hook::set_text("predicted_after", f.labels[b][pos]);
}

}  // namespace headmap
