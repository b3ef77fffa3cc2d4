// source_label.cpp: the one-line label of a model's weights.
#include "core/model/source_label.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/io/hf_tensors.h"  // parameters_text

namespace headmap {

// Grouped-query attention on weights trained as multi-head: say which K/V heads are kept.
static std::string kv_suffix(const ModelWeights& w, const ModelConfig& cfg) {
  if (cfg.kv_heads() >= cfg.num_heads || w.arch.fixed_heads()) return "";  // a family's own K/V heads are in its line
  std::string out = ", kv_heads=" + std::to_string(cfg.kv_heads());
  if (w.source.kind != WeightsSource::Kind::RandomInit && !w.layers.empty() && w.layers[0].proj_width(LayerWeights::kK) == w.d_model)
    out += " (first head's K/V per group)";
  return out;
}

// Where pretrained weights came from, as the person knows it: the cache name they opened
// ("qwen3:8b") rather than a blob's path, else the path with HOME as "~".
static std::string shown_where(const WeightsSource& s) {
  if (!s.opened_as.empty()) return s.opened_as;
  std::string where = s.path;
  if (const char* home = std::getenv("HOME"); home && *home && where.rfind(std::string(home) + "/", 0) == 0)
    where = "~" + where.substr(std::strlen(home));
  return where;
}

std::string describe_source(const ModelWeights& w, const ModelConfig& cfg) {
  return describe_weights(w, cfg) + kv_suffix(w, cfg);
}

std::string describe_weights(const ModelWeights& w, const ModelConfig& cfg) {
  const WeightsSource& s = w.source;
  char buf[256];
  if (s.kind == WeightsSource::Kind::RandomInit) {
    std::snprintf(buf, sizeof buf, "random init (seed %llu)", static_cast<unsigned long long>(s.seed));
    return buf;
  }
  if (s.kind == WeightsSource::Kind::Pretrained && !w.arch.is_gpt2_block()) {
    // "Qwen3 from ~/models/Qwen3-0.6B: D=1024, H=16 (8 K/V), d_head=128, L=28, 0.6B parameters, BF16"
    const std::string where = shown_where(s);
    const int dh = cfg.d_head(), kv = cfg.kv_heads();
    std::string heads = "H=" + std::to_string(cfg.num_heads) + (kv < cfg.num_heads ? " (" + std::to_string(kv) + " K/V)" : "");
    std::string out = w.arch.name + " from " + where + ": D=" + std::to_string(w.d_model) + ", " + heads + ", d_head=" + std::to_string(dh) +
                      ", L=" + std::to_string(w.num_layers()) + ", " + parameters_text(s.parameters) + " parameters" +
                      (s.dtype.empty() ? "" : ", " + s.dtype);
    if (!w.arch.fixed_heads() && cfg.num_heads != s.trained_heads) out = "re-sliced to H=" + std::to_string(cfg.num_heads) + ": " + out;
    if (cfg.num_layers < w.num_layers()) out += " (first " + std::to_string(cfg.num_layers) + " layers)";
    return out;
  }
  if (s.kind == WeightsSource::Kind::Pretrained) {
    // "gpt2 from ~/models/gpt2: D=768, H=12, L=12, 124M parameters"
    const std::string where = shown_where(s);
    std::snprintf(buf, sizeof buf, ": D=%d, H=%d, L=%d, ", w.d_model, s.trained_heads, w.num_layers());
    std::string out = s.model_name + " from " + where + buf + parameters_text(s.parameters) + " parameters";
    if (cfg.num_heads != s.trained_heads) out = "re-sliced to H=" + std::to_string(cfg.num_heads) + ": " + out;
    if (cfg.num_layers < w.num_layers()) out += " (first " + std::to_string(cfg.num_layers) + " layers)";
    return out;
  }
  std::snprintf(buf, sizeof buf, "trained (D=%d, H=%d, L=%d, %ld steps, loss %.2f)", w.d_model, s.trained_heads,
                w.num_layers(), s.steps, s.final_loss);
  std::string out = buf;
  if (cfg.num_heads != s.trained_heads) out = "re-sliced from the H=" + std::to_string(s.trained_heads) + " training: " + out;
  return out;
}

}  // namespace headmap
