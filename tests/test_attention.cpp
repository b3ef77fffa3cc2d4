// Multi-head attention: the shape contract, the softmax and masks, the three
// implementations held to each other, re-slicing, padding, determinism.
#include <gtest/gtest.h>
#include <omp.h>

#include "core/model/attention.h"
#include "core/model/model.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

namespace {

struct MhaRun {
  MatR y;                    // (B*T, D)
  std::vector<float> w;      // (B, Hw, T, T)
  int no_key_rows = 0;
};

MhaRun fast(const LayerWeights& lw, const MatR& x, int B, int T, const MhaOptions& o) {
  MhaRun r;
  r.w.assign(static_cast<size_t>(B) * weight_heads(o) * T * T, -1.0f);
  r.no_key_rows = mha_forward(lw, x, B, T, o, r.y, r.w.data());
  return r;
}

MhaOptions opts(int H, bool causal = true) {
  MhaOptions o;
  o.num_heads = H;
  o.causal = causal;
  return o;
}

}  // namespace

// Exercise 1 of the first chapter: (2, 16, 256) in, (2, 16, 256) out, for H = 4 and 8.
TEST(Attention, ShapeContract) {
  const int B = 2, T = 16, D = 256;
  const LayerWeights lw = random_layer(D, 1);
  const MatR x = random_matrix(B * T, D, 2);
  for (int H : {4, 8}) {
    const MhaRun r = fast(lw, x, B, T, opts(H));
    EXPECT_EQ(r.y.rows(), B * T);
    EXPECT_EQ(r.y.cols(), D);
    EXPECT_EQ(r.w.size(), static_cast<size_t>(B) * H * T * T);
  }
}

TEST(Attention, RowsSumToOneAndCausalUpperTriangleIsExactlyZero) {
  const int B = 2, T = 13, D = 48, H = 6;
  const LayerWeights lw = random_layer(D, 3);
  const MatR x = random_matrix(B * T, D, 4);
  for (bool causal : {true, false}) {
    const MhaRun r = fast(lw, x, B, T, opts(H, causal));
    for (int bh = 0; bh < B * H; ++bh)
      for (int t = 0; t < T; ++t) {
        double sum = 0;
        for (int s = 0; s < T; ++s) {
          const float v = r.w[(static_cast<size_t>(bh) * T + t) * T + s];
          sum += v;
          if (causal && s > t) {
            EXPECT_EQ(v, 0.0f) << "t=" << t << " s=" << s;
          }
          EXPECT_GE(v, 0.0f);
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
  }
}

// The fused fast path equals the first chapter's loop of per-head modules, and the
// course's explicit view/transpose code, for odd sizes: T = 1, T = 7, D = 96.
TEST(Attention, FusedAgreesWithPerHeadLoopAndExplicitTensors) {
  struct Case { int B, T, D, H; bool causal; };
  for (const Case c : {Case{1, 1, 24, 4, true}, Case{2, 7, 96, 6, true}, Case{1, 7, 96, 8, false}, Case{3, 5, 30, 5, true},
                       Case{1, 300, 64, 4, true}}) {
    SCOPED_TRACE("B=" + std::to_string(c.B) + " T=" + std::to_string(c.T) + " D=" + std::to_string(c.D) + " H=" + std::to_string(c.H));
    const LayerWeights lw = random_layer(c.D, 10 + c.D);
    const MatR x = random_matrix(c.B * c.T, c.D, 20 + c.T);
    const MhaOptions o = opts(c.H, c.causal);
    const MhaRun r = fast(lw, x, c.B, c.T, o);
    const size_t tt = static_cast<size_t>(c.T) * c.T;
    for (int b = 0; b < c.B; ++b) {
      const MatR x_b = x.middleRows(static_cast<Eigen::Index>(b) * c.T, c.T);
      for (int h = 0; h < c.H; ++h) {
        const HeadTrace tr = head_trace(lw, x_b, c.T, h, o);
        // 1e-5: float32 sums of up to 300 terms in different orders.
        EXPECT_LE(max_abs_diff(tr.weights.data(), r.w.data() + (static_cast<size_t>(b) * c.H + h) * tt, tt), 1e-5f);
        if (h == 0) {
          const MatR y_b = r.y.middleRows(static_cast<Eigen::Index>(b) * c.T, c.T);
          EXPECT_LE((tr.out - y_b).cwiseAbs().maxCoeff(), 1e-5f);
        }
      }
    }
    if (c.T <= 16) {
      Tensor xt({c.B, c.T, c.D});
      std::copy(x.data(), x.data() + x.size(), xt.data.begin());
      const auto ex = mha_explicit(lw, xt, o);
      EXPECT_LE(max_abs_diff(ex.at("weights").data.data(), r.w.data(), r.w.size()), 1e-5f);
      EXPECT_LE(max_abs_diff(ex.at("out").data.data(), r.y.data(), r.y.size()), 1e-5f);
    }
  }
}

// Changing H at the same D keeps the very same projections: only the view changes.
TEST(Attention, ReslicingKeepsTheWeights) {
  const ModelWeights w = random_weights(64, 2, 7);
  ModelConfig c4 = config(64, 4, 2), c8 = config(64, 8, 2);
  const Batch batch = make_batch({"The cat sat on the mat because it was tired."}, c4, w);
  ForwardOptions fo;
  fo.keep_layer_io = true;
  fo.trace = TraceRequest{0, 0, 1};
  const ForwardOutput o4 = forward(w, c4, batch, fo).value();
  fo.trace = TraceRequest{0, 0, 2};
  const ForwardOutput o8a = forward(w, c8, batch, fo).value();
  fo.trace = TraceRequest{0, 0, 3};
  const ForwardOutput o8b = forward(w, c8, batch, fo).value();
  // The attention input is the same tensor, and H=4's head 1 is H=8's heads 2 and 3 side by side.
  EXPECT_EQ((o4.attn_in[0] - o8a.attn_in[0]).cwiseAbs().maxCoeff(), 0.0f);
  const MatR& q4 = o4.trace->q;  // (T, 16)
  EXPECT_EQ((q4.leftCols(8) - o8a.trace->q).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ((q4.rightCols(8) - o8b.trace->q).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ((o4.trace->v.rightCols(8) - o8b.trace->v).cwiseAbs().maxCoeff(), 0.0f);
  // The weights themselves are regenerated identically whatever H the config carries.
  const ModelWeights again = random_weights(64, 2, 7);
  EXPECT_EQ((again.layers[1].w_o.plain() - w.layers[1].w_o.plain()).cwiseAbs().maxCoeff(), 0.0f);
  // ...and a different d_model gives different, deterministic weights.
  const ModelWeights w96 = random_weights(96, 2, 7), w96b = random_weights(96, 2, 7);
  EXPECT_EQ((w96.layers[0].w_q - w96b.layers[0].w_q).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_NE(w96.layers[0].w_q(0, 0), w.layers[0].w_q(0, 0));
}

TEST(Attention, PaddingGivesExactZerosAndNoNaN) {
  const ModelConfig cfg = config(32, 4, 2);
  const ModelWeights w = random_weights(32, 2, 5);
  const Batch batch = make_batch({"a b c d e f g h", "a b", "x"}, cfg, w);
  ASSERT_EQ(batch.T, 8);
  for (bool causal : {true, false}) {
    ModelConfig c = cfg;
    c.causal = causal;
    const ForwardOutput out = forward(w, c, batch).value();
    EXPECT_TRUE(all_finite(out.attention));
    for (int l = 0; l < out.L; ++l)
      for (int b = 0; b < out.B; ++b)
        for (int h = 0; h < out.H; ++h) {
          const float* m = out.weights(l, b, h);
          const int len = batch.lengths[b];
          for (int t = 0; t < out.T; ++t)
            for (int s = 0; s < out.T; ++s)
              if (t >= len || s >= len) {
                EXPECT_EQ(m[t * out.T + s], 0.0f);
              }
        }
    for (int64_t i = 0; i < out.out.size(); ++i) ASSERT_TRUE(std::isfinite(out.out.data()[i]));
  }
}

TEST(Attention, EmptyTextIsNothingToAttendOverNotAnError) {
  const ModelConfig cfg;
  const ModelWeights w = random_weights(cfg.d_model, cfg.num_layers, cfg.seed);
  const Batch batch = make_batch({""}, cfg, w);
  Result<ForwardOutput> r = forward(w, cfg, batch);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->B, 0);
  EXPECT_TRUE(r->attention.empty());
}

TEST(Attention, ResultsAreDeterministicAcrossRunsAndThreadCounts) {
  const ModelConfig cfg = config(96, 6, 2);
  const ModelWeights w = random_weights(96, 2, 9);
  const Batch batch = make_batch({"The lawyer who the jury believed told the truth.", "Short one."}, cfg, w);
  const ForwardOutput a = forward(w, cfg, batch).value();
  const ForwardOutput b = forward(random_weights(96, 2, 9), cfg, batch).value();
  EXPECT_EQ(a.attention, b.attention);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const ForwardOutput c = forward(w, cfg, batch).value();
  omp_set_num_threads(saved);
  EXPECT_LE(max_abs_diff(a.attention.data(), c.attention.data(), a.attention.size()), 1e-6f);
  // The same word has the same embedding in every sentence.
  ModelConfig nopos = cfg;
  nopos.positional = false;
  const MatR x1 = embed(w, nopos, make_batch({"the cat"}, nopos, w));
  const MatR x2 = embed(w, nopos, make_batch({"a big cat"}, nopos, w));
  EXPECT_EQ((x1.row(1) - x2.row(2)).cwiseAbs().maxCoeff(), 0.0f);
}

// Random-init embeddings are memoised (a keystroke draws one new row, not T): the rows are
// the definition's, bit for bit, whether drawn now, kept from an earlier call, or at a
// position beyond any table kept so far.
TEST(Attention, MemoisedEmbeddingsAreTheDefinitionsRows) {
  const ModelConfig cfg = config(48, 4, 1);
  const ModelWeights w = random_weights(48, 1, 5);
  std::string text;
  for (int i = 0; i < 300; ++i) text += "t" + std::to_string(i % 37) + " ";
  for (int round = 0; round < 2; ++round) {
    const Batch batch = make_batch({text, "a fresh word zq" + std::to_string(round)}, cfg, w);
    const MatR x = embed(w, cfg, batch);
    for (int b = 0; b < batch.B(); ++b)
      for (int t = 0; t < batch.T; ++t) {
        std::vector<float> want(48, 0.0f);
        if (t < batch.lengths[b]) {
          hashed_embedding(batch.sentences[b].tokens[t].text, cfg.seed, 48, want.data());
          add_sinusoidal(t, 48, want.data());
        }
        for (int i = 0; i < 48; ++i)
          ASSERT_EQ(x(static_cast<Eigen::Index>(b) * batch.T + t, i), want[i]) << "round " << round << ", sentence " << b << ", token " << t << ", i " << i;
      }
  }
}

TEST(Attention, HeadAblationZeroesTheHeadsOutputOnly) {
  const ModelConfig cfg = config(32, 4, 1);
  const ModelWeights w = random_weights(32, 1, 2);
  const Batch batch = make_batch({"one two three four five six"}, cfg, w);
  ForwardOptions fo;
  fo.trace = TraceRequest{0, 0, 0};
  const ForwardOutput base = forward(w, cfg, batch, fo).value();
  std::vector<uint8_t> off = {0, 1, 0, 0};
  fo.ablate = &off;
  const ForwardOutput cut = forward(w, cfg, batch, fo).value();
  EXPECT_EQ(base.attention, cut.attention);  // the pattern is still shown
  EXPECT_GT((base.out - cut.out).cwiseAbs().maxCoeff(), 1e-4f);
  EXPECT_EQ(cut.trace->concat.block(0, 8, cut.T, 8).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_GT(cut.trace->concat.block(0, 0, cut.T, 8).cwiseAbs().maxCoeff(), 0.0f);
}

TEST(Attention, HugeBatchesAreRefusedWithAMessage) {
  ModelConfig cfg = config(64, 8, 12);
  cfg.context = 2048;
  const ModelWeights w = random_weights(64, 12, 1);
  std::string line;
  for (int i = 0; i < 2048; ++i) line += "w ";
  const Batch batch = make_batch(std::vector<std::string>(4, line), cfg, w);  // 12 x 4 x 8 x 2048^2 floats = 6 GiB
  Result<ForwardOutput> r = forward(w, cfg, batch);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::InvalidArgument);
  EXPECT_NE(r.error().message.find("use fewer sentences"), std::string::npos) << r.error().message;
}

TEST(Attention, HeadScoreIsTheTracedRawScore) {
  const LayerWeights lw = random_layer(48, 5);
  const MatR x = random_matrix(6, 48, 6);
  MhaOptions o = opts(4);
  for (bool inter : {false, true}) {
    o.pitfalls.interleaved_reshape = inter;
    const HeadTrace tr = head_trace(lw, x, 6, 2, o);
    for (int t = 0; t < 6; ++t)
      for (int k = 0; k < 6; ++k) EXPECT_NEAR(head_score(lw, x.row(t).data(), x.row(k).data(), 2, o), tr.scores(t, k), 1e-4f);
  }
}
