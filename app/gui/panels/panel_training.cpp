// panel_training.cpp: train the sliders' configuration on the shipped corpus and watch the
// heads specialise while it runs; compare head counts (H = 1, 4, 8 at d_model 64, matched
// budgets) and training with and without W_O on one validation-loss chart.
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/gui/panels/panels.h"
#include "app/gui/ui_widgets.h"
#include "app/gui/theme.h"

namespace headmap {

namespace {

const ImU32 kCurveColours[] = {IM_COL32(90, 170, 255, 255), IM_COL32(255, 150, 60, 255), IM_COL32(120, 220, 120, 255),
                               IM_COL32(230, 90, 200, 255), IM_COL32(240, 220, 80, 255)};

std::string clock_text(double seconds) {
  char buf[32];
  const int s = static_cast<int>(std::lround(std::max(0.0, seconds)));
  std::snprintf(buf, sizeof buf, "%d:%02d", s / 60, s % 60);
  return buf;
}

// Loss against step, one line per run. val: plot validation losses (points where measured),
// else training losses.
void loss_chart(const TrainStatus& t, bool val, ImVec2 size) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  const float pad_l = ImGui::CalcTextSize("00.00").x + 8, pad_b = ImGui::GetTextLineHeight() + 6;
  const ImVec2 a(p0.x + pad_l, p0.y + 4), b(p0.x + size.x - 8, p0.y + size.y - pad_b);
  ImGui::Dummy(size);
  double lo = 1e30, hi = -1e30;
  int max_step = 1;
  for (const auto& c : t.curves)
    for (const TrainPoint& p : c) {
      const double v = val ? p.val_loss : p.train_loss;
      max_step = std::max(max_step, p.step);  // both charts span every point, to the last step reported
      if (v < 0) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  dl->AddRect(a, b, ImGui::GetColorU32(ImGuiCol_Border));
  if (lo > hi) {
    dl->AddText(ImVec2(a.x + 8, a.y + 8), ImGui::GetColorU32(ImGuiCol_TextDisabled), "no points yet");
    return;
  }
  if (hi - lo < 0.04) {  // one point, or a flat curve: a readable range around it
    lo -= 0.02;
    hi += 0.02;
  }
  const double margin = (hi - lo) * 0.05;
  lo -= margin;
  hi += margin;
  auto X = [&](int step) { return a.x + (b.x - a.x) * static_cast<float>(step) / max_step; };
  auto Y = [&](double v) { return b.y - (b.y - a.y) * static_cast<float>((v - lo) / (hi - lo)); };
  char buf[32];
  for (int i = 0; i <= 4; ++i) {  // y ticks
    const double v = lo + (hi - lo) * i / 4;
    std::snprintf(buf, sizeof buf, "%.2f", v);
    dl->AddText(ImVec2(p0.x, Y(v) - ImGui::GetTextLineHeight() * 0.5f), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
    dl->AddLine(ImVec2(a.x, Y(v)), ImVec2(b.x, Y(v)), IM_COL32(128, 128, 128, 40));
  }
  std::snprintf(buf, sizeof buf, "step %d", max_step);
  dl->AddText(ImVec2(b.x - ImGui::CalcTextSize(buf).x, b.y + 3), ImGui::GetColorU32(ImGuiCol_TextDisabled), buf);
  dl->AddText(ImVec2(a.x, b.y + 3), ImGui::GetColorU32(ImGuiCol_TextDisabled), "0");
  for (size_t r = 0; r < t.curves.size(); ++r) {
    std::vector<ImVec2> pts;
    for (const TrainPoint& p : t.curves[r]) {
      const double v = val ? p.val_loss : p.train_loss;
      if (v >= 0) pts.push_back(ImVec2(X(p.step), Y(v)));
    }
    const ImU32 col = kCurveColours[r % std::size(kCurveColours)];
    if (pts.size() >= 2) dl->AddPolyline(pts.data(), static_cast<int>(pts.size()), col, 0, 2.0f);
    for (const ImVec2& q : pts)
      if (val) dl->AddCircleFilled(q, 3.0f, col);
  }
  // Legend.
  float y = a.y + 6;
  for (size_t r = 0; r < t.labels.size(); ++r) {
    const ImU32 col = kCurveColours[r % std::size(kCurveColours)];
    dl->AddRectFilled(ImVec2(b.x - 130, y + 4), ImVec2(b.x - 116, y + 12), col);
    dl->AddText(ImVec2(b.x - 110, y), ImGui::GetColorU32(ImGuiCol_Text), t.labels[r].c_str());
    y += ImGui::GetTextLineHeight();
  }
}

}  // namespace

void draw_training(AppState& s) {
  const TrainStatus& t = s.training;
  const ModelConfig& c = s.cfg;
  const float fh = ImGui::GetFontSize();
  ImGui::TextWrapped("Trains the model on the shipped corpus (next-token prediction, AdamW), right here on the CPU. "
                     "The heatmaps follow the training as it runs: watch previous-token and induction heads appear.");
  if (!s.corpus_path.empty()) text_disabled_wrapped(("corpus: " + s.corpus_path).c_str());
  ImGui::Separator();

  // One run: the sliders' configuration.
  ImGui::PushItemWidth(fh * 10);
  // Side by side while they fit, else one under the other (a narrow window, a large font).
  const float inner = ImGui::GetStyle().ItemInnerSpacing.x;
  ImGui::SliderInt("steps", &s.train_steps, 100, 8000, "%d", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
  same_line_if_fits(fh * 10 + inner + ImGui::CalcTextSize("batch").x);
  ImGui::SliderInt("batch", &s.train_batch, 1, 64, "%d", ImGuiSliderFlags_AlwaysClamp);
  same_line_if_fits(fh * 10 + inner + ImGui::CalcTextSize("tokens per sequence").x);
  ImGui::SliderInt("tokens per sequence", &s.train_seq, 8, 128, "%d", ImGuiSliderFlags_AlwaysClamp);
  ImGui::PopItemWidth();
  const bool valid = s.config_status.ok();
  const Status trainable = trainable_kv_heads(c.num_heads, c.num_kv_heads);
  ImGui::BeginDisabled(t.running || !valid || !trainable);
  char label[128];
  std::snprintf(label, sizeof label, "Train this configuration (D = %d, H = %d, L = %d%s)", c.d_model, c.num_heads, c.num_layers,
                c.pitfalls.no_w_o ? ", no W_O" : "");
  if (ImGui::Button(label)) {
    if (Result<TrainJob> job = train_this_configuration(s)) {
      s.train_request = std::move(job).value();
      s.follow_training = true;
      s.weights_mode = WeightsMode::Trained;
    }
  }
  ImGui::EndDisabled();
  if (!valid) {
    same_line_if_fits(ImGui::CalcTextSize("(fix d_model / num_heads first)").x);
    ImGui::TextDisabled("(fix d_model / num_heads first)");
  } else if (!trainable) {
    ImGui::TextWrapped("%s", trainable.error().message.c_str());
    hook::add_text("messages", trainable.error().message);
  }

  // Comparisons: the chapters' exercises, with matched budgets.
  ImGui::Spacing();
  ImGui::TextUnformatted("Compare");
  ImGui::SameLine();
  ImGui::PushItemWidth(fh * 8);
  ImGui::SliderInt("steps each", &s.compare_steps, 100, 4000, "%d", ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp);
  ImGui::PopItemWidth();
  ImGui::BeginDisabled(t.running);
  if (ImGui::Button("H = 1, 4, 8 at d_model 64")) s.train_request = compare_heads_job(s);
  same_line_if_fits(ImGui::CalcTextSize("with and without W_O (H = 4)").x + ImGui::GetStyle().FramePadding.x * 2);
  if (ImGui::Button("with and without W_O (H = 4)")) s.train_request = compare_w_o_job(s);
  ImGui::EndDisabled();
  // Too few steps draw the same curve several times: say so, and offer the count that parts them.
  if (const std::string note = compare_steps_note(s.compare_steps); !note.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
    ImGui::TextWrapped("%s", note.c_str());
    ImGui::PopStyleColor();
    hook::add_text("messages", note);
    char use[48];
    std::snprintf(use, sizeof use, "Use %d,%03d steps each", kCompareStepsThatPart / 1000, kCompareStepsThatPart % 1000);
    ImGui::BeginDisabled(t.running);
    if (ImGui::Button(use)) s.compare_steps = kCompareStepsThatPart;
    ImGui::EndDisabled();
  }

  // Progress.
  ImGui::Separator();
  if (t.running) {
    const TrainProgress& p = t.progress;
    const float frac = p.steps ? static_cast<float>(p.step) / p.steps : 0.0f;
    char val[32] = "";
    if (p.val_loss >= 0) std::snprintf(val, sizeof val, "   val %.3f", p.val_loss);
    char overlay[200];
    std::snprintf(overlay, sizeof overlay, "%s%s step %d / %d   loss %.3f%s   %.0f tokens/s   ETA %s",
                  t.runs > 1 ? t.labels[t.run].c_str() : "", t.runs > 1 ? ":" : "", p.step, p.steps, p.train_loss, val,
                  p.tokens_per_s, clock_text(p.eta_s).c_str());
    ImGui::ProgressBar(frac, ImVec2(-fh * 6, 0), overlay);
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) s.train_cancel_request = true;
    if (t.runs == 1) ImGui::Checkbox("heatmaps follow the training", &s.follow_training);
  } else if (t.cancelled) {
    ImGui::TextColored(kPendingColour, "%s",
                       (t.snapshot ? "Cancelled at step " + std::to_string(t.progress.step) + ". The heatmaps keep the last snapshot."
                                   : std::string("Cancelled before the first snapshot: the heatmaps show the weights they showed before."))
                           .c_str());
  } else if (t.error) {
    ImGui::PushStyleColor(ImGuiCol_Text, kErrorColour);
    ImGui::TextWrapped("Training failed: %s", t.error->message.c_str());
    ImGui::PopStyleColor();
  } else if (t.done) {
    ImGui::Text("Done: %d run%s on %s.", t.runs, t.runs == 1 ? "" : "s", t.corpus_name.c_str());
    // Each run's final loss, and a button that shows its heads in the grid.
    for (size_t r = 0; r < t.final_val.size() && r < t.labels.size(); ++r) {
      char run[96], show[64];
      std::snprintf(run, sizeof run, "  %s: val %.3f", t.labels[r].c_str(), t.final_val[r]);
      std::snprintf(show, sizeof show, "Show heads##run%zu", r);
      same_line_if_fits(ImGui::CalcTextSize(run).x + ImGui::CalcTextSize("Show heads").x + ImGui::GetStyle().FramePadding.x * 2 +
                        ImGui::GetStyle().ItemSpacing.x);
      ImGui::TextUnformatted(run);
      ImGui::SameLine();
      if (ImGui::SmallButton(show)) {
        if (Status st = show_trained_run(s, static_cast<int>(r)); !st) s.status_lines.push_back(st.error().message);
      }
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("Show the heads of %s's final weights in the Heads tab", t.labels[r].c_str());
    }
    if (t.final_val.size() > 1) {  // runs that end together have not parted yet
      const auto [lo, hi] = std::minmax_element(t.final_val.begin(), t.final_val.end());
      if (*hi - *lo < 0.05) {
        char same[200];
        std::snprintf(same, sizeof same, "The runs end within %.2f nats of each other: at %d steps each they have not parted yet.",
                      *hi - *lo, t.progress.steps);
        ImGui::PushStyleColor(ImGuiCol_Text, kPendingColour);
        ImGui::TextWrapped("%s", same);
        ImGui::PopStyleColor();
        hook::add_text("messages", same);
      }
    }
  } else {
    ImGui::TextDisabled("No training yet in this session.");
  }

  if (!t.curves.empty() && !t.curves[0].empty()) {
    const float w = ImGui::GetContentRegionAvail().x;
    const float h = std::max(fh * 8, (ImGui::GetContentRegionAvail().y - fh * 3) / 2);
    ImGui::TextUnformatted("Validation loss (nats per token)");
    loss_chart(t, true, ImVec2(w, h));
    ImGui::TextUnformatted("Training loss");
    loss_chart(t, false, ImVec2(w, h));
  }
}

}  // namespace headmap
