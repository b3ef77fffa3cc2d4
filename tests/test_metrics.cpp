// Head metrics on hand-made maps whose answers are known.
#include <gtest/gtest.h>

#include <cmath>

#include "core/inspect/metrics.h"
#include "test_util.h"

using namespace headmap;

namespace {
// A causal (T, T) map where row t puts all its weight on key f(t).
std::vector<float> one_hot_map(int T, int (*f)(int)) {
  std::vector<float> m(static_cast<size_t>(T) * T, 0.0f);
  for (int t = 0; t < T; ++t) m[t * T + f(t)] = 1.0f;
  return m;
}
}  // namespace

TEST(Metrics, PreviousFirstAndSelfHeads) {
  const int T = 6;
  const auto prev = one_hot_map(T, [](int t) { return t > 0 ? t - 1 : 0; });
  HeadMetrics m = map_metrics(prev.data(), T, T);
  EXPECT_FLOAT_EQ(m.prev_token, 1.0f);
  EXPECT_FLOAT_EQ(m.max_weight, 1.0f);
  EXPECT_FLOAT_EQ(m.entropy, 0.0f);
  EXPECT_EQ(head_label(m, 0.0f), HeadLabel::PreviousToken);

  const auto first = one_hot_map(T, [](int) { return 0; });
  m = map_metrics(first.data(), T, T);
  EXPECT_FLOAT_EQ(m.first_token, 1.0f);
  EXPECT_FLOAT_EQ(m.prev_token, 1.0f / 5);  // row 1's previous token is the first token
  EXPECT_EQ(head_label(m, 0.0f), HeadLabel::FirstToken);

  const auto self = one_hot_map(T, [](int t) { return t; });
  m = map_metrics(self.data(), T, T);
  EXPECT_FLOAT_EQ(m.self, 1.0f);
  EXPECT_EQ(head_label(m, 0.0f), HeadLabel::Self);
}

TEST(Metrics, UniformCausalRowsHaveNormalisedEntropyOne) {
  const int T = 7;
  std::vector<float> m(T * T, 0.0f);
  for (int t = 0; t < T; ++t)
    for (int s = 0; s <= t; ++s) m[t * T + s] = 1.0f / (t + 1);
  const HeadMetrics hm = map_metrics(m.data(), T, T);
  EXPECT_NEAR(hm.entropy_norm, 1.0f, 1e-6f);
  double mean_entropy = 0;  // rows 0..6: log(1)..log(7)
  for (int t = 0; t < T; ++t) mean_entropy += std::log(t + 1.0);
  EXPECT_NEAR(hm.entropy, mean_entropy / T, 1e-5);
  EXPECT_EQ(head_label(hm, 0.0f), HeadLabel::Broad);
}

TEST(Metrics, PaddingRowsAreIgnored) {
  const int T = 5, len = 3;
  std::vector<float> m(T * T, 0.0f);
  for (int t = 0; t < len; ++t) m[t * T + t] = 1.0f;
  EXPECT_FLOAT_EQ(map_metrics(m.data(), T, len).self, 1.0f);
}

TEST(Metrics, InductionScoreOfAPerfectInductionMap) {
  const int n = 5, T = 2 * n;
  std::vector<float> m(T * T, 0.0f);
  for (int t = 0; t < T; ++t) m[t * T + (t >= n ? t - n + 1 : 0)] = 1.0f;
  EXPECT_FLOAT_EQ(induction_score_of_map(m.data(), T, n), 1.0f);
  EXPECT_EQ(head_label(map_metrics(m.data(), T, T), induction_score_of_map(m.data(), T, n)), HeadLabel::Induction);
  // A previous-token map scores 0 on induction.
  const auto prev = one_hot_map(T, [](int t) { return t > 0 ? t - 1 : 0; });
  EXPECT_FLOAT_EQ(induction_score_of_map(prev.data(), T, n), 0.0f);
}

TEST(Metrics, InductionProbeIsTwoCopiesOfTheSameTokens) {
  ModelConfig cfg;
  const ModelWeights w = random_weights(cfg.d_model, cfg.num_layers, cfg.seed);
  const InductionProbe p = make_induction_probe(cfg, w, 12, 3);
  const Batch b = make_batch({p.text}, cfg, w);
  ASSERT_EQ(b.lengths[0], 24);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(b.sentences[0].tokens[i].text, b.sentences[0].tokens[i + 12].text);
  const std::vector<float> s = induction_scores(w, cfg, p);
  EXPECT_EQ(s.size(), static_cast<size_t>(cfg.num_layers * cfg.num_heads));
}
