#include "app/gui/model_source.h"

#include <algorithm>
#include <filesystem>

#include "app/common/model_options.h"
#include "app/gui/enum_names.h"
#include "core/io/checkpoint.h"

namespace headmap {
namespace fs = std::filesystem;

CheckpointInfo checkpoint_info_of(const ModelWeights& w, const std::string& path) {
  CheckpointInfo c;
  c.path = path;
  c.d_model = w.d_model;
  c.num_heads = w.source.trained_heads;
  c.num_layers = w.num_layers();
  c.context = w.context;
  c.steps = w.source.steps;
  c.val_loss = w.source.val_loss;
  c.no_w_o = w.source.no_w_o;
  return c;
}

// Through the core's reader (core/io/checkpoint.h), which checks the whole file: a file
// listed here is one the worker can load.
Result<CheckpointInfo> checkpoint_info(const std::string& path) {
  Result<ModelWeights> w = load_checkpoint(path);
  if (!w) return w.error();
  return checkpoint_info_of(*w, path);
}

std::vector<CheckpointInfo> scan_checkpoints(const std::string& dir) {
  std::vector<CheckpointInfo> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors")
      if (Result<ModelWeights> w = load_checkpoint(e.path().string())) {
        CheckpointInfo c = checkpoint_info_of(*w, e.path().string());
        c.weights = std::make_shared<const ModelWeights>(std::move(w).value());  // kept: a slider move never reads it again
        out.push_back(std::move(c));
      }
  std::sort(out.begin(), out.end(), [](const CheckpointInfo& a, const CheckpointInfo& b) { return a.path < b.path; });
  return out;
}

constexpr EnumName<WeightsMode> kWeightsModes[] = {
    {WeightsMode::Trained, "trained"}, {WeightsMode::TrainedForH, "trained_for_h"}, {WeightsMode::Random, "random"}};
const char* weights_mode_name(WeightsMode m) { return enum_name(kWeightsModes, m); }
bool parse_weights_mode(const std::string& name, WeightsMode* out) { return parse_enum_name(name, kWeightsModes, out); }

// The "trained" choice: the weights open at the sliders' D and L, re-sliced to their H.
static WeightsChoice choose_trained(const ModelConfig& cfg, const WeightsInputs& in) {
  WeightsChoice c;
  if (in.pretrained) {  // the sliders follow its D and L; any H divides its D anew
    c.in_memory = in.pretrained;
    c.context_limit = std::min(in.pretrained->context, kMaxContext);
    return c;
  }
  const auto fits = [&](int d, int l) { return d == cfg.d_model && l == cfg.num_layers; };
  if (in.session && fits(in.session->d_model, in.session->num_layers())) {
    c.in_memory = in.session;
    c.context_limit = in.session->context;
    return c;
  }
  if (in.user_info && fits(in.user_info->d_model, in.user_info->num_layers)) {
    c.checkpoint = in.user_checkpoint;
    c.loaded = in.user_info->weights;
    c.context_limit = in.user_info->context;
    return c;
  }
  // The shipped default, as headmap-cli runs it (load_model_weights): whatever the sliders'
  // H, the same weights re-sliced. Another shipped checkpoint only where the default does
  // not fit D and L; those trained without W_O are for the comparison, never picked here.
  const std::string default_name = fs::path(kDefaultCheckpoint).filename().string();
  const CheckpointInfo* pick = nullptr;
  if (in.shipped)
    for (const CheckpointInfo& k : *in.shipped) {
      if (!fits(k.d_model, k.num_layers) || k.no_w_o) continue;
      if (!pick || fs::path(k.path).filename() == default_name) pick = &k;
    }
  if (pick) {
    c.checkpoint = pick->path;
    c.loaded = pick->weights;
    c.context_limit = pick->context;
    return c;
  }
  c.note = "No trained model for d_model " + std::to_string(cfg.d_model) + " with " + std::to_string(cfg.num_layers) +
           (cfg.num_layers == 1 ? " layer" : " layers") + ": random init. Train one in the Training tab.";
  return c;
}

// The "trained for this H" choice: weights trained with exactly the sliders' D, H and L
// (and with or without W_O, as the switch says), never re-sliced.
static WeightsChoice choose_trained_for_h(const ModelConfig& cfg, const WeightsInputs& in) {
  WeightsChoice c;
  const auto exact = [&](int d, int h, int l, bool no_wo) {
    return d == cfg.d_model && h == cfg.num_heads && l == cfg.num_layers && no_wo == cfg.pitfalls.no_w_o;
  };
  const auto exact_w = [&](const ModelWeights& w) { return exact(w.d_model, w.source.trained_heads, w.num_layers(), w.source.no_w_o); };
  if (in.pretrained && exact_w(*in.pretrained)) return choose_trained(cfg, in);
  if (in.session && exact_w(*in.session)) {
    c.in_memory = in.session;
    c.context_limit = in.session->context;
    return c;
  }
  if (in.user_info && exact(in.user_info->d_model, in.user_info->num_heads, in.user_info->num_layers, in.user_info->no_w_o)) {
    c.checkpoint = in.user_checkpoint;
    c.loaded = in.user_info->weights;
    c.context_limit = in.user_info->context;
    return c;
  }
  std::string family;  // the shipped trainings of this D and L, for the note
  if (in.shipped)
    for (const CheckpointInfo& k : *in.shipped) {
      if (exact(k.d_model, k.num_heads, k.num_layers, k.no_w_o)) {
        c.checkpoint = k.path;
        c.loaded = k.weights;
        c.context_limit = k.context;
        return c;
      }
      if (k.d_model == cfg.d_model && k.num_layers == cfg.num_layers)
        family += (family.empty() ? "" : ", ") + std::to_string(k.num_heads) + (k.no_w_o ? " without W_O" : "");
    }
  c = choose_trained(cfg, in);
  if (c.note.empty())
    c.note = "Nothing here was trained with H = " + std::to_string(cfg.num_heads) + (cfg.pitfalls.no_w_o ? " without W_O" : "") +
             " at d_model " + std::to_string(cfg.d_model) + " with " + std::to_string(cfg.num_layers) +
             (cfg.num_layers == 1 ? " layer" : " layers") + (family.empty() ? "" : " (trained: H = " + family + ")") +
             ": the trained weights re-sliced instead.";
  return c;
}

WeightsChoice choose_weights(const ModelConfig& cfg, const WeightsInputs& in) {
  switch (in.mode) {
    case WeightsMode::Random: return WeightsChoice();
    case WeightsMode::TrainedForH: return choose_trained_for_h(cfg, in);
    case WeightsMode::Trained: break;
  }
  return choose_trained(cfg, in);
}

}  // namespace headmap
