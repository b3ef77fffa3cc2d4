// predictions.cpp: top-k next tokens and per-sentence losses from the logits.
#include "core/inspect/predictions.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "core/text/utf8.h"

namespace headmap {

namespace {
// The n most likely of a row: ids and logits most likely first, its largest logit, its sum of exp(logit - max).
std::vector<NextToken> next_tokens_of(const ModelWeights& w, const int* ids, const float* logits, int n, float mx, double sum) {
  std::vector<NextToken> top;
  for (int i = 0; i < n; ++i) {
    NextToken nt;
    nt.id = ids[i];
    nt.prob = static_cast<float>(std::exp(static_cast<double>(logits[i] - mx)) / sum);
    nt.display = token_name(w, nt.id);
    top.push_back(std::move(nt));
  }
  return top;
}
}  // namespace

std::vector<NextToken> top_k_next(const ModelWeights& w, const NextTokenRows& next, int r, int k) {
  if (r < 0 || r >= next.rows() || k <= 0 || next.k <= 0) return {};
  const size_t at = static_cast<size_t>(r) * next.k;
  return next_tokens_of(w, next.ids.data() + at, next.logits.data() + at, std::min(k, next.k), next.max[static_cast<size_t>(r)],
                        next.sum[static_cast<size_t>(r)]);
}

std::vector<NextToken> top_k_next(const ModelWeights& w, const ForwardOutput& out, int b, int t, int k) {
  if (b < 0 || b >= out.B || t < 0 || t >= out.T || k <= 0) return {};
  const size_t r = static_cast<size_t>(b) * out.T + t;
  const int V = static_cast<int>(out.logits.cols());
  if (V == 0) return top_k_next(w, out.next, static_cast<int>(r), k);  // the row's kept next tokens: the same values
  const int n = std::min(k, V);  // the row's logits (V): its k largest, as next_tokens.h keeps them
  std::vector<int> ids(static_cast<size_t>(n));
  std::vector<float> logits(static_cast<size_t>(n));
  float mx = 0;
  double sum = 0;
  top_logits(out.logits.row(static_cast<Eigen::Index>(r)).data(), V, n, ids.data(), logits.data(), mx, sum);
  return next_tokens_of(w, ids.data(), logits.data(), n, mx, sum);
}

std::string continuation_text(const ModelWeights& w, const std::vector<Token>& tokens, int id) {
  std::vector<int> ids;
  for (const Token& t : tokens)
    if (t.id >= 0 && !t.special) ids.push_back(t.id);
  auto decode = [&](const std::vector<int>& v) {
    if (w.hf_tokenizer) return w.hf_tokenizer->decode(v, true);
    return w.bpe.empty() ? std::string() : w.bpe.decode(v);
  };
  const std::string before = decode(ids);
  ids.push_back(id);
  const std::string after = decode(ids);
  if (after.size() >= before.size() && after.compare(0, before.size(), before) == 0) return after.substr(before.size());
  return decode({id});  // a decoder that rewrites the end (rare): the token alone
}

bool has_next_tokens(const ForwardOutput& out) { return out.logits.size() > 0 || out.next.rows() > 0; }

std::vector<double> sentence_losses(const ForwardOutput& out, const Batch& batch) {
  if (out.logits.size() == 0 && out.next.rows() > 0 && batch.B() == 1) {  // next tokens kept: one sentence, the forward's own loss
    const bool whole = batch.lengths[0] >= 2 && out.loss_tokens == batch.lengths[0] - 1;
    return {whole ? out.loss : std::numeric_limits<double>::quiet_NaN()};
  }
  if (out.logits.size() == 0) return {};
  std::vector<double> losses;
  for (int b = 0; b < batch.B(); ++b) {
    double total = 0;
    int n = 0;
    for (int t = 0; t + 1 < batch.lengths[b]; ++t) {
      const auto row = out.logits.row(static_cast<Eigen::Index>(b) * out.T + t);
      const float mx = row.maxCoeff();
      const double lse = mx + std::log((row.array() - mx).exp().sum());
      total += lse - row(batch.sentences[b].tokens[t + 1].id);
      ++n;
    }
    losses.push_back(n ? total / n : std::numeric_limits<double>::quiet_NaN());
  }
  return losses;
}

std::string vocab_display(const Bpe& bpe, int id) {
  return token_display(bpe_piece(bpe, id));
}

std::string token_name(const ModelWeights& w, int id) {
  // The model's tokenizer.json names the ids when it has one (shipped models too), else its BPE.
  if (w.hf_tokenizer && id >= 0 && id < w.hf_tokenizer->vocab_size()) return token_display(hf_piece(*w.hf_tokenizer, id));
  if (id >= 0 && id < w.bpe.size()) return vocab_display(w.bpe, id);
  return "#" + std::to_string(id);
}

}  // namespace headmap
