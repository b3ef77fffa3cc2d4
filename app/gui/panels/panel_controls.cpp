// panel_controls.cpp: the model's knobs. An invalid d_model / num_heads pair is allowed on
// screen, because it is a lesson: the core's message is shown with a one-click fix, and
// nothing snaps silently.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"

namespace headmap {

static void help_marker(const char* text) {
  same_line_if_fits(ImGui::CalcTextSize("(?)").x);
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void draw_controls(AppState& s) {
  ModelConfig& c = s.cfg;
  const bool trained = s.result && s.result->fwd && s.result->fwd->weights->trained();
  // Sliders leave room for their label and its (?), so nothing runs off a narrow column.
  const ImGuiStyle& st = ImGui::GetStyle();
  const float avail = ImGui::GetContentRegionAvail().x;
  // The (?) follows on the same line, unless that leaves the slider too short: then it wraps.
  const float label_w = ImGui::CalcTextSize("num_heads").x + st.ItemInnerSpacing.x + 2, fh = ImGui::GetFontSize();
  float w = std::min(avail * 0.62f, avail - label_w - ImGui::CalcTextSize("(?)").x - st.ItemSpacing.x);
  if (w < fh * 5) w = std::max(fh * 3, avail - label_w);
  ImGui::PushItemWidth(w);

  // A pretrained model fixes D and L; H can still move, as a re-slicing of the same weights.
  const ModelWeights* fixed = (s.pretrained && s.weights_mode != WeightsMode::Random) ? s.pretrained.get() : nullptr;
  if (fixed) {
    c.d_model = fixed->d_model;
    c.num_layers = fixed->num_layers();
  }
  ImGui::BeginDisabled(fixed != nullptr);
  ImGui::SliderInt("d_model", &c.d_model, 1, std::max(1024, c.d_model), "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  help_marker("D, the width of every token's vector. The heads split it: d_head = D / H.");
  if (fixed) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("d_model and layers are fixed by %s's weights", fixed->source.model_name.c_str());
    ImGui::PopTextWrapPos();
  } else {
    bool first = true;
    for (int d : {24, 64, 128, 256, 512, 768}) {
      char label[16];
      std::snprintf(label, sizeof label, "%d", d);
      if (!first) same_line_if_fits(ImGui::CalcTextSize(label).x + st.FramePadding.x * 2);
      first = false;
      if (ImGui::SmallButton(label)) c.d_model = d;
    }
  }
  // A rotary (or otherwise fixed) family's heads are its weights: H, K/V heads and d_head stay.
  const bool heads_fixed = fixed && fixed->arch.fixed_heads();
  if (heads_fixed) {
    c.num_heads = fixed->arch.num_heads;
    c.num_kv_heads = fixed->arch.num_kv_heads;
    c.head_dim = fixed->arch.head_dim;
  } else {
    c.head_dim = 0;  // d_head = D/H again (random init, GPT-2-style weights)
  }
  ImGui::BeginDisabled(heads_fixed);
  ImGui::SliderInt("num_heads", &c.num_heads, 1, std::max(32, std::min(c.d_model, 64)), "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  help_marker("H, the number of heads. Any H that divides d_model is valid; the parameters do not change with H.");
  if (heads_fixed) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("num_heads is fixed by %s's weights: %s, d_head %d%s", fixed->source.model_name.c_str(),
                        fixed->arch.rotary() ? "RoPE rotates each head's own pairs" : "its heads have their own d_head", c.d_head(),
                        c.kv_heads() < c.num_heads ? (", " + std::to_string(c.kv_heads()) + " K/V heads").c_str() : "");
    ImGui::PopTextWrapPos();
  } else if (fixed && c.num_heads != fixed->source.trained_heads) {
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextDisabled("re-slicing %s's %d heads into %d: the same weights, another view", fixed->source.model_name.c_str(),
                        fixed->source.trained_heads, c.num_heads);
    ImGui::PopTextWrapPos();
  }

  // K/V heads: the divisors of H, from multi-query (1) to plain multi-head (H).
  auto kv_label = [&](int k) {
    return std::to_string(k) + (k == c.num_heads ? " (multi-head)" : k == 1 ? " (multi-query)" : " (grouped-query)");
  };
  // The disabled block encloses the whole combo: BeginCombo opens its list as a window of its
  // own, and Dear ImGui checks that BeginDisabled/EndDisabled pair within one window (an
  // EndDisabled between BeginCombo and EndCombo aborted the app at the first click).
  ImGui::BeginDisabled(heads_fixed);
  if (ImGui::BeginCombo("KV heads", kv_label(c.kv_heads()).c_str())) {
    if (c.num_heads >= 1 && c.num_heads <= kMaxDModel)
      for (int k : valid_kv_head_counts(c.num_heads))
        if (ImGui::Selectable(kv_label(k).c_str(), k == c.kv_heads())) c.num_kv_heads = k == c.num_heads ? 0 : k;
    ImGui::EndCombo();
  }
  ImGui::EndDisabled();
  help_marker("Multi-query (1) and grouped-query attention: K and V have fewer heads than Q, and each K/V head serves a group "
              "of H / kv_heads query heads. W_K and W_V shrink to (D, kv_heads\xC2\xB7" "d_head); the passport shows the "
              "parameters saved. On trained weights each group keeps the K and V of its first head.");

  if (s.config_status.ok()) {
    char text[64];
    if (c.head_dim > 0) std::snprintf(text, sizeof text, "d_head = %d (the weights' own; H\xC2\xB7" "d_head = %d)", c.d_head(), c.num_heads * c.d_head());
    else std::snprintf(text, sizeof text, "d_head = %d / %d = %d", c.d_model, c.num_heads, c.d_head());
    text_disabled_wrapped(text);
  } else {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("%s", s.config_status.error().message.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", s.config_status.error().message);
    const int fix = nearest_valid_head_count(c.d_model, c.num_heads);
    const int kv_fix = nearest_valid_kv_heads(c.num_heads, c.num_kv_heads);
    const bool heads_ok = fix == c.num_heads && kv_fix != c.num_kv_heads;  // then the K/V heads do not fit H
    char label[64];
    if (heads_ok) {
      std::snprintf(label, sizeof label, "Use nearest valid (KV heads = %d)", kv_fix);
      if (ImGui::CalcTextSize(label).x + st.FramePadding.x * 2 > ImGui::GetContentRegionAvail().x)
        std::snprintf(label, sizeof label, "Use KV heads = %d###Use nearest valid", kv_fix);  // a narrow column: the short form
    } else {
      std::snprintf(label, sizeof label, "Use nearest valid (H = %d)", fix);
      if (ImGui::CalcTextSize(label).x + st.FramePadding.x * 2 > ImGui::GetContentRegionAvail().x)
        std::snprintf(label, sizeof label, "Use H = %d###Use nearest valid", fix);  // a narrow column: the short form
    }
    hook::add_text("buttons", "Use nearest valid");
    if (ImGui::Button(label)) {
      if (heads_ok) c.num_kv_heads = kv_fix == c.num_heads ? 0 : kv_fix;
      else c.num_heads = fix;
    }
  }
  ImGui::Separator();
  ImGui::BeginDisabled(fixed != nullptr);
  ImGui::SliderInt("layers", &c.num_layers, 1, std::max(kMaxLayers, c.num_layers), "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::EndDisabled();
  ImGui::SliderInt("context", &c.context, 1, kMaxContext, "%d", ImGuiSliderFlags_AlwaysClamp | ImGuiSliderFlags_Logarithmic);
  help_marker("Maximum tokens per sentence. Longer text is truncated, and the truncation is reported under the sentence.");
  if (trained && s.result->fwd->weights->context < c.context)
    text_disabled_wrapped(("(the trained model reads at most " + std::to_string(s.result->fwd->weights->context) + " tokens)").c_str());
  int seed = static_cast<int>(c.seed);
  if (ImGui::InputInt("seed", &seed)) c.seed = static_cast<uint64_t>(std::max(0, seed));
  ImGui::Checkbox("causal mask", &c.causal);
  help_marker("Each query sees only itself and earlier tokens. Hidden cells are drawn grey.");
  same_line_if_fits(ImGui::CalcTextSize("positions (?)").x + ImGui::GetFrameHeight() + st.ItemInnerSpacing.x * 2);
  ImGui::Checkbox("positions", &c.positional);
  help_marker("Add the positional encoding (sinusoidal for random init, learned for a trained model).");
  if (!trained) {
    int tok = c.tokenizer == TokenizerKind::Char ? 1 : 0;
    if (ImGui::Combo("tokenizer", &tok, "word\0char\0")) c.tokenizer = tok == 1 ? TokenizerKind::Char : TokenizerKind::Word;
  } else if (const ModelWeights& w = *s.result->fwd->weights; w.hf_tokenizer && !w.source.tokenizer_files.empty()) {
    // A pretrained directory's tokenizer: its files and model, as headmap-cli tokenize names them.
    text_disabled_wrapped(("tokenizer: the model's " + w.source.tokenizer_files + " (" + w.hf_tokenizer->model_type() + ")").c_str());
    help_marker("The model's own tokenizer, split as Hugging Face's library splits it: special tokens such as the first token (BOS) are chips of their own colour, and a character cut into byte pieces is grouped under it. A dot marks a piece that starts with a space.");
  } else {
    text_disabled_wrapped("tokenizer: the model's byte-level BPE");
    help_marker("Sub-words learned from the training text (GPT-2's algorithm). A word the model knows is one token; a rare one splits into pieces, down to single bytes, so nothing is ever unknown. A dot marks a piece that starts with a space.");
  }
  ImGui::PopItemWidth();

  ImGui::Separator();
  ImGui::TextUnformatted("Weights");
  ImGui::SameLine();
  // One line whatever the column's width: the three choices in a combo.
  static const std::pair<WeightsMode, const char*> modes[] = {
      {WeightsMode::Trained, "trained"}, {WeightsMode::TrainedForH, "trained for this H"}, {WeightsMode::Random, "random init"}};
  const char* shown = modes[0].second;
  for (const auto& [m, name] : modes)
    if (m == s.weights_mode) shown = name;
  ImGui::SetNextItemWidth(std::max(fh * 4, ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize("(?)").x - st.ItemSpacing.x));
  if (ImGui::BeginCombo("##weights", shown)) {
    for (const auto& [m, name] : modes)
      if (ImGui::Selectable(name, m == s.weights_mode)) s.weights_mode = m;
    ImGui::EndCombo();
  }
  help_marker("Trained: a model trained on the shipped corpus (or in the Training tab); moving num_heads re-slices the same "
              "weights, as headmap-cli --heads does. Trained for this H: a model trained separately with this num_heads "
              "(the shipped H = 1, 2, 8, and H = 4 without W_O when that switch is on), as --checkpoint opens it. "
              "Random init: weights from the seed, so the patterns come only from the words and positions.");
  if (s.result && s.result->fwd) {
    text_disabled_wrapped_at_commas(s.result->fwd->source);
  }
  if (!s.weights_note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
    ImGui::TextWrapped("%s", s.weights_note.c_str());
    ImGui::PopStyleColor();
  }

  ImGui::Separator();
  ImGui::TextUnformatted("Pitfalls");
  help_marker("Each switch reproduces one classic multi-head bug from the chapters. All off is the correct model.");
  for (const PitfallInfo& p : pitfall_list()) {
    checkbox_wrapped(p.label, &(c.pitfalls.*(p.flag)));
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      ImGui::PushTextWrapPos(ImGui::GetFontSize() * 30.0f);
      ImGui::TextUnformatted(p.explain);
      ImGui::PopTextWrapPos();
      ImGui::EndTooltip();
    }
  }
  if (c.pitfalls.reversed_mask && !c.causal) text_disabled_wrapped("(the reversed mask needs the causal mask on)");
}

}  // namespace headmap
