// Each pitfall switch reproduces its classic bug and has the effect the chapters describe.
#include <gtest/gtest.h>

#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/inspect/passport.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

namespace {
const std::vector<std::string> kSentences = {"The cat sat on the mat because it was tired.",
                                             "The lawyer who the jury believed told the truth.",
                                             "The chicken didn't cross the road because it was too wide."};

ForwardOutput run(const ModelConfig& cfg, const ModelWeights& w, const Batch& batch, ForwardOptions fo = {}) {
  Result<ForwardOutput> r = forward(w, cfg, batch, fo);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return std::move(r).value();
}
}  // namespace

// Scaling by sqrt(D) divides every score by an extra sqrt(H): a hotter softmax, so every
// row's entropy rises (entropy grows with temperature) and the heads go flatter.
TEST(Pitfalls, ScaleByDModelRaisesEntropy) {
  ModelConfig cfg = config(64, 8, 2);
  const ModelWeights w = random_weights(64, 2, 7);
  const Batch batch = make_batch(kSentences, cfg, w);
  const auto good = head_metrics(run(cfg, w, batch), batch);
  cfg.pitfalls.scale_by_d_model = true;
  const auto bad = head_metrics(run(cfg, w, batch), batch);
  double g = 0, b = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    if (i < good.size() / 2) {
      EXPECT_GE(bad[i].entropy, good[i].entropy - 1e-6f) << "layer 0 head " << i;
    }
    g += good[i].entropy_norm;
    b += bad[i].entropy_norm;
  }
  EXPECT_GT(b, g + 0.02 * good.size()) << "weights should be clearly flatter";
  // With one head, sqrt(D) == sqrt(d_head): the bug is invisible.
  ModelConfig one = config(64, 1, 1), one_bad = one;
  one_bad.pitfalls.scale_by_d_model = true;
  EXPECT_EQ(run(one, w, batch).attention, run(one_bad, w, batch).attention);
}

// view(B,T,d_head,H): head h reads the interleaved features h, h+H, h+2H, ...
TEST(Pitfalls, InterleavedReshapeGivesHeadsStridedSlices) {
  const int D = 32, H = 4, dh = D / H;
  ModelConfig cfg = config(D, H, 1);
  cfg.pitfalls.interleaved_reshape = true;
  const ModelWeights w = random_weights(D, 1, 3);
  const Batch batch = make_batch({kSentences[0]}, cfg, w);
  ForwardOptions fo;
  fo.keep_layer_io = true;
  fo.trace = TraceRequest{0, 0, 1};
  const ForwardOutput bad = run(cfg, w, batch, fo);
  const MatR q_full = bad.attn_in[0] * w.layers[0].w_q;  // (T, D), biases are 0 here
  for (int j = 0; j < dh; ++j) EXPECT_NEAR((bad.trace->q.col(j) - q_full.col(j * H + 1)).cwiseAbs().maxCoeff(), 0.0f, 1e-5f);
  ModelConfig good_cfg = cfg;
  good_cfg.pitfalls.interleaved_reshape = false;
  const ForwardOutput good = run(good_cfg, w, batch);
  EXPECT_GT(max_abs_diff(good.attention.data(), bad.attention.data(), good.attention.size()), 1e-3f);
  // With one head the two views coincide (1e-6: the strided view takes Eigen's product,
  // the contiguous one the small kernel, which sum in different orders).
  ModelConfig one = config(D, 1, 1), one_bad = one;
  one_bad.pitfalls.interleaved_reshape = true;
  const ForwardOutput a = run(one, w, batch), b = run(one_bad, w, batch);
  EXPECT_LE(max_abs_diff(a.attention.data(), b.attention.data(), a.attention.size()), 1e-6f);
}

// Reversed polarity: each query sees only the future; the last query sees nothing. That row
// would be NaN in PyTorch; headmap reports it and keeps zeros.
TEST(Pitfalls, ReversedMaskSeesOnlyTheFuture) {
  ModelConfig cfg = config(32, 4, 1);
  cfg.pitfalls.reversed_mask = true;
  const ModelWeights w = random_weights(32, 1, 3);
  const Batch batch = make_batch({kSentences[0], "a b c"}, cfg, w);
  const ForwardOutput out = run(cfg, w, batch);
  EXPECT_TRUE(all_finite(out.attention));
  EXPECT_EQ(out.no_key_rows, 2);  // the last real row of each sentence
  for (int b = 0; b < out.B; ++b)
    for (int h = 0; h < out.H; ++h) {
      const float* m = out.weights(0, b, h);
      const int len = batch.lengths[b];
      for (int t = 0; t < len; ++t) {
        double sum = 0;
        for (int s = 0; s <= t; ++s) EXPECT_EQ(m[t * out.T + s], 0.0f);
        for (int s = 0; s < out.T; ++s) sum += m[t * out.T + s];
        EXPECT_NEAR(sum, t == len - 1 ? 0.0 : 1.0, 1e-5);
      }
    }
}

// No W_O: the output is the bare concatenation, each head's features in its own block.
TEST(Pitfalls, NoWOReturnsTheConcatenation) {
  ModelConfig cfg = config(32, 4, 1);
  const ModelWeights w = random_weights(32, 1, 3);
  const Batch batch = make_batch({kSentences[1]}, cfg, w);
  ForwardOptions fo;
  fo.keep_layer_io = true;
  fo.trace = TraceRequest{0, 0, 0};
  const ForwardOutput good = run(cfg, w, batch, fo);
  cfg.pitfalls.no_w_o = true;
  const ForwardOutput bad = run(cfg, w, batch, fo);
  EXPECT_EQ(good.attention, bad.attention);  // the weights do not change...
  EXPECT_LE((bad.attn_out[0] - bad.trace->concat).cwiseAbs().maxCoeff(), 1e-5f);  // ...the output is the concat
  EXPECT_GT((good.attn_out[0] - bad.attn_out[0]).cwiseAbs().maxCoeff(), 1e-3f);
  // Head 0's output lands only in features 0..7.
  EXPECT_LE((bad.attn_out[0].leftCols(8) - bad.trace->head_out).cwiseAbs().maxCoeff(), 1e-5f);
  // The passport drops W_O's parameters.
  const Passport pg = make_passport(config(32, 4, 1), 1, 9), pb = make_passport(cfg, 1, 9);
  EXPECT_EQ(pg.attention_params - pb.attention_params, 32 * 32 + 32);
}

// Head-averaged weights: (B,T,T), the mean of the heads; the model output is unchanged.
TEST(Pitfalls, HeadAveragedWeightsLoseThePerHeadPatterns) {
  ModelConfig cfg = config(32, 4, 2);
  const ModelWeights w = random_weights(32, 2, 3);
  const Batch batch = make_batch(kSentences, cfg, w);
  const ForwardOutput good = run(cfg, w, batch);
  cfg.pitfalls.head_averaged = true;
  const ForwardOutput bad = run(cfg, w, batch);
  EXPECT_EQ(bad.Hw, 1);
  EXPECT_EQ(bad.attention.size(), static_cast<size_t>(2) * batch.B() * batch.T * batch.T);
  EXPECT_EQ((good.out - bad.out).cwiseAbs().maxCoeff(), 0.0f);
  const size_t tt = static_cast<size_t>(batch.T) * batch.T;
  for (int l = 0; l < 2; ++l)
    for (int b = 0; b < batch.B(); ++b)
      for (size_t i = 0; i < tt; ++i) {
        float mean = 0;
        for (int h = 0; h < 4; ++h) mean += good.weights(l, b, h)[i] / 4;
        ASSERT_NEAR(bad.weights(l, b, 0)[i], mean, 1e-6f);
      }
  EXPECT_EQ(make_passport(cfg, 3, 12).find("attention")->concrete, (Shape{2, 3, 1, 12, 12}));
  EXPECT_EQ(make_passport(cfg, 3, 12).find("weights_mean")->concrete, (Shape{3, 12, 12}));
}
