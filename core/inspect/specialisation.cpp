// specialisation.cpp: per-head metrics averaged over sentences, induction over probes.
#include "core/inspect/specialisation.h"

#include <algorithm>
#include <cmath>

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

Result<SentenceEvidence> measure_on_sentences(const ModelWeights& w, int num_heads, const std::vector<std::string>& sentences) {
  if (!w.trained()) return Error{ErrorKind::InvalidArgument, "The sentence evidence needs trained weights (it includes the loss)."};
  ModelConfig cfg;
  cfg.d_model = w.d_model;
  cfg.num_heads = num_heads;
  cfg.num_layers = w.num_layers();
  cfg.context = w.context;
  if (Status s = check_fit(w, cfg); !s) return s.error();
  std::vector<std::string> twice;
  for (const std::string& s : sentences) twice.push_back(s + " " + s);
  const Batch once = make_batch(sentences, cfg, w), rep = make_batch(twice, cfg, w);
  if (once.empty() || rep.B() != once.B()) return Error{ErrorKind::InvalidArgument, "Every sentence needs a token to measure."};
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> a = forward(w, cfg, once, fo);
  if (!a) return a.error();
  Result<ForwardOutput> b = forward(w, cfg, rep);
  if (!b) return b.error();
  SentenceEvidence e;
  e.sentences = once.B();
  for (const std::string& s : sentences) {
    bool in_word = false;
    for (char c : s) {
      const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r';
      e.words += !space && !in_word;
      in_word = !space;
    }
  }
  for (int len : once.lengths) e.tokens += len;
  e.tokens_per_word = e.words ? static_cast<double>(e.tokens) / static_cast<double>(e.words) : 0.0;
  e.loss = a->loss;
  const std::vector<HeadMetrics> per = head_metrics(*a, once, mask_kind(cfg));  // (L, B, H)
  const std::vector<float> ind = text_induction_scores(*b, rep);  // (L, B, H)
  const int L = a->L, H = a->H, B = e.sentences;
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      double p = 0, q = 0;
      int nq = 0;
      for (int s = 0; s < B; ++s) {
        const size_t i = (static_cast<size_t>(l) * B + s) * H + h;
        p += per[i].prev_token;
        if (!std::isnan(ind[i])) q += ind[i], ++nq;
      }
      const float mp = static_cast<float>(p / B), mq = nq ? static_cast<float>(q / nq) : 0.0f;
      if (mp > e.best_prev_token) e.best_prev_token = mp, e.prev_layer = l, e.prev_head = h;
      if (mq > e.best_repeat_induction) e.best_repeat_induction = mq, e.induction_layer = l, e.induction_head = h;
    }
  return e;
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
  const std::vector<HeadMetrics> per = head_metrics(*out, batch, mask_kind(cfg));  // (L, B, H)
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
