// specialisation.cpp: per-head metrics averaged over sentences, induction over probes.
#include "core/inspect/specialisation.h"

#include <algorithm>

#include "core/model/model.h"

namespace headmap {

float Specialisation::best_prev_token(int layer) const {
  float best = 0.0f;
  for (int h = 0; h < H; ++h) best = std::max(best, metrics[static_cast<size_t>(layer) * H + h].prev_token);
  return best;
}

float Specialisation::best_induction(int layer) const {
  float best = 0.0f;
  for (int h = 0; h < H; ++h) best = std::max(best, induction[static_cast<size_t>(layer) * H + h]);
  return best;
}

std::vector<HeadLabel> Specialisation::labels() const {
  std::vector<HeadLabel> out;
  for (size_t i = 0; i < metrics.size(); ++i) out.push_back(head_label(metrics[i], induction[i]));
  return out;
}

Result<Specialisation> measure_specialisation(const ModelWeights& w, int num_heads, const std::vector<std::string>& sentences,
                                              int probe_tokens, int probes) {
  ModelConfig cfg;
  cfg.d_model = w.d_model;
  cfg.num_heads = num_heads;
  cfg.num_layers = w.num_layers();
  cfg.context = w.trained() ? w.context : cfg.context;
  if (Status s = check_fit(w, cfg); !s) return s.error();
  const Batch batch = make_batch(sentences, cfg, w);
  if (batch.empty()) return Error{ErrorKind::InvalidArgument, "None of the sentences has a token to measure."};
  Result<ForwardOutput> out = forward(w, cfg, batch);
  if (!out) return out.error();
  const std::vector<HeadMetrics> per = head_metrics(*out, batch);  // (L, B, H)
  Specialisation s;
  s.L = out->L;
  s.H = out->H;
  s.sentences = batch.B();
  s.metrics.assign(static_cast<size_t>(s.L) * s.H, HeadMetrics{});
  s.induction.assign(static_cast<size_t>(s.L) * s.H, 0.0f);
  for (int l = 0; l < s.L; ++l)
    for (int h = 0; h < s.H; ++h) {
      HeadMetrics& m = s.metrics[static_cast<size_t>(l) * s.H + h];
      for (int b = 0; b < s.sentences; ++b) {
        const HeadMetrics& x = per[(static_cast<size_t>(l) * s.sentences + b) * s.H + h];
        m.entropy += x.entropy;
        m.entropy_norm += x.entropy_norm;
        m.prev_token += x.prev_token;
        m.first_token += x.first_token;
        m.self += x.self;
        m.max_weight += x.max_weight;
      }
      const float inv = 1.0f / static_cast<float>(s.sentences);
      m.entropy *= inv, m.entropy_norm *= inv, m.prev_token *= inv, m.first_token *= inv, m.self *= inv, m.max_weight *= inv;
    }
  int counted = 0;
  for (int p = 1; p <= probes; ++p) {
    const std::vector<float> ind = induction_scores(w, cfg, make_induction_probe(cfg, w, probe_tokens, static_cast<uint64_t>(p)));
    if (ind.size() != s.induction.size()) continue;
    for (size_t i = 0; i < ind.size(); ++i) s.induction[i] += ind[i];
    ++counted;
  }
  if (counted)
    for (float& v : s.induction) v /= static_cast<float>(counted);
  return s;
}

}  // namespace headmap
