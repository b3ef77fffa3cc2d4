// logit_lens.cpp: every point of the residual stream read out as the model reads its last
// one (see logit_lens.h).
//
// T = tokens, D = d_model, L = layers, V = vocab, K = top-k, P = 2L + 1 points
#include "core/inspect/logit_lens.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace headmap {

const char* lens_target_name(LensTarget t) { return t == LensTarget::Final ? "final" : "text"; }

std::string LogitLens::point_name(int p) {
  if (p <= 0) return "embed";
  return std::to_string((p - 1) / 2) + ((p % 2) ? " attn" : " mlp");
}

int LogitLens::settled(int t) const {
  if (t < 0 || t >= T || target_ids[static_cast<size_t>(t)] < 0) return -1;
  int from = -1;
  for (int p = points() - 1; p >= 0; --p) {
    if (target_ranks[static_cast<size_t>(p) * T + t] != 0) break;
    from = p;
  }
  return from;
}

Result<LogitLens> logit_lens(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int b, LensTarget target, int k,
                             const std::function<bool()>& cancelled) {
  if (!w.trained() || w.vocab_size() == 0)
    return Error{ErrorKind::InvalidArgument, "The logit lens reads each layer through the model's unembedding: it needs trained weights "
                                             "(random init has no vocabulary to predict). Open a model or load the shipped one."};
  if (w.arch.encoder() && !w.arch.mlm_head)
    return Error{ErrorKind::InvalidArgument, "This " + w.arch.name + " has no masked-LM head (a ...Model checkpoint, not ...ForMaskedLM), "
                                             "so no layer can be read out as tokens. Open a ...ForMaskedLM directory for the logit lens."};
  if (k < 1 || k > kLensMaxTopK)
    return Error{ErrorKind::InvalidArgument, "The logit lens's top-k must be 1 to " + std::to_string(kLensMaxTopK) + ", not " + std::to_string(k) + "."};
  if (b < 0 || b >= batch.B()) return Error{ErrorKind::InvalidArgument, "There is no sentence " + std::to_string(b + 1) + " in the text."};
  const int T = batch.lengths[b];
  if (T == 0) return Error{ErrorKind::InvalidArgument, "The sentence is empty: type a few words to read what each layer predicts."};

  // Sentence b alone (T = its length), so no padded rows enter the readout.
  Batch one;
  one.tokenizer = batch.tokenizer;
  one.sentences.push_back(batch.sentences[b]);
  one.lengths.push_back(T);
  one.source_line.push_back(batch.source_line.empty() ? 0 : batch.source_line[b]);
  one.T = T;
  std::vector<MatR> resid, mid;  // L x (T, D) entering each layer; after each attention
  ForwardHook hook;
  hook.resid = &resid;
  hook.post_mid = &mid;
  ForwardOptions opt;
  opt.want_logits = true;  // so the last MLP runs, and the model's own logits come back
  opt.cancelled = cancelled;
  opt.hook = &hook;
  Result<ForwardOutput> r = forward(w, cfg, one, opt);
  if (!r) return r.error();
  const int L = r->L;

  LogitLens lens;
  lens.L = L;
  lens.T = T;
  lens.target = target;
  const int P = lens.points();
  auto point = [&](int p) -> const MatR& {  // (T, D)
    if (p == 0) return resid[0];
    const int l = (p - 1) / 2;
    if (p % 2) return mid[static_cast<size_t>(l)];
    return l + 1 < L ? resid[static_cast<size_t>(l) + 1] : r->out;
  };
  // (P, T, V) is too large for a billion-parameter model's vocabulary: one point at a time,
  // kept as its top-k and the target's probability and rank. The last point first, since
  // LensTarget::Final is its top-1.
  const std::vector<Token>& tokens = one.sentences[0].tokens;
  MatR last, logits;  // (T, V)
  stream_logits(w, point(P - 1), last);
  lens.V = static_cast<int>(last.cols());
  lens.K = std::min(k, lens.V);
  lens.top_ids.assign(static_cast<size_t>(P) * T * lens.K, -1);
  lens.top_probs.assign(static_cast<size_t>(P) * T * lens.K, 0.0f);
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  lens.target_probs.assign(static_cast<size_t>(P) * T, kNaN);
  lens.target_ranks.assign(static_cast<size_t>(P) * T, -1);
  lens.target_ids.assign(static_cast<size_t>(T), -1);
  auto better = [](const auto& row, int a, int c) { return row(a) > row(c) || (row(a) == row(c) && a < c); };
  for (int t = 0; t < T; ++t) {
    const auto row = last.row(t);  // (V)
    int id = -1;
    if (target == LensTarget::Final) {
      id = 0;
      for (int j = 1; j < lens.V; ++j)
        if (better(row, j, id)) id = j;
    } else if (w.arch.encoder()) {
      const Token& tok = tokens[static_cast<size_t>(t)];
      id = tok.masked_id >= 0 ? tok.masked_id : tok.id;
    } else if (t + 1 < T) {
      id = tokens[static_cast<size_t>(t) + 1].id;
    }
    lens.target_ids[static_cast<size_t>(t)] = id >= 0 && id < lens.V ? id : -1;
  }
  std::vector<int> ids(static_cast<size_t>(lens.V));
  for (int p = 0; p < P; ++p) {
    if (cancelled && cancelled()) return Error{ErrorKind::Cancelled, "The logit lens was cancelled by a newer request."};
    if (p + 1 < P) stream_logits(w, point(p), logits);
    const MatR& lg = p + 1 < P ? logits : last;  // (T, V)
    for (int t = 0; t < T; ++t) {
      const auto row = lg.row(t);  // (V)
      const float mx = row.maxCoeff();
      const double lse = mx + std::log((row.array() - mx).exp().cast<double>().sum());
      std::iota(ids.begin(), ids.end(), 0);
      std::partial_sort(ids.begin(), ids.begin() + lens.K, ids.end(), [&](int a, int c) { return better(row, a, c); });
      for (int i = 0; i < lens.K; ++i) {
        const size_t at = (static_cast<size_t>(p) * T + t) * lens.K + i;
        lens.top_ids[at] = ids[static_cast<size_t>(i)];
        lens.top_probs[at] = static_cast<float>(std::exp(static_cast<double>(row(ids[static_cast<size_t>(i)])) - lse));
      }
      const int id = lens.target_ids[static_cast<size_t>(t)];
      if (id < 0) continue;
      int rank = 0;
      for (int j = 0; j < lens.V; ++j) rank += better(row, j, id);
      lens.target_probs[static_cast<size_t>(p) * T + t] = static_cast<float>(std::exp(static_cast<double>(row(id)) - lse));
      lens.target_ranks[static_cast<size_t>(p) * T + t] = rank;
    }
  }
  return lens;
}

}  // namespace headmap
