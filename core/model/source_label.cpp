// source_label.cpp: the one-line label of a model's weights.
#include "core/model/source_label.h"

#include <cstdio>

namespace headmap {

std::string describe_source(const ModelWeights& w, const ModelConfig& cfg) {
  const WeightsSource& s = w.source;
  char buf[256];
  if (s.kind == WeightsSource::Kind::RandomInit) {
    std::snprintf(buf, sizeof buf, "random init (seed %llu)", static_cast<unsigned long long>(s.seed));
    return buf;
  }
  std::snprintf(buf, sizeof buf, "trained (D=%d, H=%d, L=%d, %ld steps, loss %.2f)", w.d_model, s.trained_heads,
                w.num_layers(), s.steps, s.final_loss);
  std::string out = buf;
  if (cfg.num_heads != s.trained_heads) out = "re-sliced from the H=" + std::to_string(s.trained_heads) + " training: " + out;
  return out;
}

}  // namespace headmap
