// metrics.h: what each head does, as numbers. Used for head labels and the tests.
//
// B = batch, T = tokens, H = heads, L = layers
// All scores are means over the query rows t >= 1 of a sentence's real tokens (row 0 of a
// causal map is always [1, 0, 0, ...] and would say nothing):
//   prev_token   w[t, t-1]        attention to the token just before
//   first_token  w[t, 0]          attention to the first token (a "sink")
//   self         w[t, t]          attention to the query's own token
//   max_weight   max_s w[t, s]    how peaked a row is
//   entropy      -sum_s w log w   in nats, over rows with at least one visible key
//   entropy_norm entropy / log(n) with n the row's visible keys, over rows with n >= 2;
//                1 = uniform over what the row may see, 0 = one key
// The induction score is measured on a probe: n random tokens, then the same n again.
// For a query t in the second copy, the score is w[t, t-n+1]: attention to the token
// that followed the earlier occurrence of the query's token.
#pragma once
#include <string>
#include <vector>

#include "core/model/model.h"

namespace headmap {

struct HeadMetrics {
  float entropy = 0, entropy_norm = 0, prev_token = 0, first_token = 0, self = 0, max_weight = 0;
};

// (L, B, Hw), index ((l*B)+b)*Hw + h.
std::vector<HeadMetrics> head_metrics(const ForwardOutput& out, const Batch& batch);

// Metrics of one (T, T) map with `len` real tokens.
HeadMetrics map_metrics(const float* w /* (T,T) */, int T, int len);

// The peak of one (T, T) map for its colour scale: the largest weight over the real rows
// that see more than one key. The first row of a causal map is always [1, 0, ...] and is
// left out, or it would set every scale to 1.
float map_peak(const float* w /* (T,T) */, int T, int len, MaskKind mask);

// The induction probe: n random tokens repeated twice, as text, so it goes through the
// model's own tokenizer. Tokens are whole words (word mode), letters (char mode), or
// whole-word vocabulary pieces (trained models).
struct InductionProbe {
  std::string text;
  int n = 0;  // tokens per copy; the probe has 2n tokens
};
InductionProbe make_induction_probe(const ModelConfig& cfg, const ModelWeights& w, int n, uint64_t seed);

// (L, H) induction scores of the model on the probe (ignores head averaging: per head).
// Empty on error (invalid config).
std::vector<float> induction_scores(const ModelWeights& w, const ModelConfig& cfg, const InductionProbe& probe);
float induction_score_of_map(const float* w /* (T,T) */, int T, int n);

// Induction on any text, where it repeats: for each query t whose token occurred before
// (at j, its most recent earlier position, with j + 1 < t), the weight w[t, j + 1] to the
// token that followed that occurrence, averaged over such queries. On the probe this is the
// score above; on a sentence said twice it is the same measure on natural text.
// Tokens are equal when their ids (trained models) or texts are. NaN when nothing repeats.
float repeat_induction_of_map(const float* w /* (T,T) */, int T, const std::vector<Token>& tokens);
// (L, B, Hw), index ((l*B)+b)*Hw + h: repeat_induction_of_map of every map.
std::vector<float> text_induction_scores(const ForwardOutput& out, const Batch& batch);

// Head labels from the metrics, with documented thresholds (see head_label()).
enum class HeadLabel { None, PreviousToken, FirstToken, Self, Induction, Broad };
const char* head_label_name(HeadLabel l);
// Thresholds: previous-token if prev_token >= 0.5, first-token if first_token >= 0.5,
// self if self >= 0.5, induction if the induction score >= 0.3, broad if entropy_norm >= 0.85.
// The strongest applicable label wins (by its score minus its threshold).
HeadLabel head_label(const HeadMetrics& m, float induction);
struct LabelThresholds {
  float prev_token = 0.5f, first_token = 0.5f, self = 0.5f, induction = 0.3f, broad = 0.85f;
};
inline constexpr LabelThresholds kLabelThresholds{};

}  // namespace headmap
