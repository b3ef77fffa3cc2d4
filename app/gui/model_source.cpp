#include "app/gui/model_source.h"

#include <algorithm>
#include <filesystem>

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

WeightsChoice choose_weights(const ModelConfig& cfg, const WeightsInputs& in) {
  WeightsChoice c;
  if (in.mode == WeightsMode::Random) return c;
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
  const CheckpointInfo* same_h = nullptr;
  const CheckpointInfo* any = nullptr;
  if (in.shipped)
    for (const CheckpointInfo& k : *in.shipped) {
      // Checkpoints trained without W_O are for the comparison, never picked by themselves.
      if (!fits(k.d_model, k.num_layers) || k.no_w_o) continue;
      if (k.num_heads == cfg.num_heads && !same_h) same_h = &k;
      // Re-slicing prefers the 4-head training, the default, then the first one found.
      if (!any || (k.num_heads == 4 && any->num_heads != 4)) any = &k;
    }
  if (const CheckpointInfo* k = same_h ? same_h : any) {
    c.checkpoint = k->path;
    c.loaded = k->weights;
    c.context_limit = k->context;
    return c;
  }
  c.note = "No trained model for d_model " + std::to_string(cfg.d_model) + " with " + std::to_string(cfg.num_layers) +
           (cfg.num_layers == 1 ? " layer" : " layers") + ": random init. Train one in the Training tab.";
  return c;
}

}  // namespace headmap
