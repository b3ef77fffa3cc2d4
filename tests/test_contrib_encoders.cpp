// What heads contribute on post-norm encoders (issue 28: BERT, RoBERTa, DistilBERT): the
// masked-LM logit of a [MASK]'s filler as an exact sum of parts through every frozen LayerNorm,
// the parts carried through those norms rebuilding the final stream, value-weighted maps whose
// heads sum to the attention output, the sink over every row, rollout and detectors without a
// causal mask, patching restarted from the patched layer, and an encoder without a masked-LM
// head refused with a message. The same against a float64 numpy forward of BERT, RoBERTa and
// DistilBERT directories is the ctest contrib_encoders_match_numpy.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers, V = vocab
#include <gtest/gtest.h>

#include <cmath>

#include "core/inspect/contrib.h"
#include "core/inspect/patch_positions.h"
#include "core/model/model.h"
#include "tests/encoder_fixture.h"
#include "test_util.h"

using namespace headmap;

namespace {
using test::kTestData;

ModelWeights encoder(bool distil, bool mlm = true) {
  test::EncoderShape z;
  z.distil = distil;
  z.mlm = mlm;
  return test::post_norm_encoder(kTestData + "/tokenizers/wordpiece_bert.json", z);
}

struct EncoderRun {
  ModelWeights w;
  ModelConfig cfg;
  Batch batch;
  int mask = -1;  // the [MASK]'s position
};
EncoderRun run_on(bool distil, const std::string& text = "the cat sat on the [MASK] . the cat ran", bool mlm = true) {
  EncoderRun r;
  r.w = encoder(distil, mlm);
  r.cfg = config_for_weights(r.w, ModelConfig());
  r.batch = make_batch({text}, r.cfg, r.w);
  const int mask = mask_token_id(r.w);
  for (int t = 0; t < r.batch.lengths[0]; ++t)
    if (r.batch.sentences[0].tokens[t].id == mask) r.mask = t;
  return r;
}

int id_of(const ModelWeights& w, const std::string& word) {
  const TokenizedText tt = tokenize(word, 8, *w.hf_tokenizer);
  for (const Token& t : tt.tokens)
    if (!t.added) return t.id;
  return -1;
}
}  // namespace

// The filler's logit at the [MASK] (and a difference of two) is the sum of every head, b_O,
// MLP, the embeddings, each layer's betas and the head's biases, to 1e-4, with no centring
// term; the logit is the model's own. Heads and betas each carry something.
TEST(ContribEncoders, MaskedFillerLogitIsAnExactSumOfParts) {
  for (bool distil : {false, true}) {
    SCOPED_TRACE(distil ? "DistilBERT" : "BERT");
    const EncoderRun r = run_on(distil);
    ASSERT_GE(r.mask, 0);
    const int cat = id_of(r.w, "cat"), dog = id_of(r.w, "dog");
    ASSERT_GE(cat, 0);
    ASSERT_GE(dog, 0);
    Result<StreamParts> p = stream_parts(r.w, r.cfg, r.batch, 0);
    ASSERT_TRUE(p.ok()) << p.error().message;
    for (const LogitTarget& target : {LogitTarget{r.mask, cat, -1}, LogitTarget{r.mask, cat, dog}, LogitTarget{1, dog, -1}}) {
      Result<Attribution> a = direct_attribution(r.w, *p, target);
      ASSERT_TRUE(a.ok()) << a.error().message;
      const float want = p->logits(target.position, target.token_a) - (target.token_b >= 0 ? p->logits(target.position, target.token_b) : 0.0f);
      EXPECT_NEAR(a->logit, want, 1e-6f);
      EXPECT_EQ(a->logit, a->model_logit);
      EXPECT_LE(a->completeness_error, 1e-4f * std::max(1.0f, std::abs(a->logit)));
      double sum = a->embeddings + a->final_bias + a->centring;
      for (float v : a->heads) sum += v;
      for (int l = 0; l < a->L; ++l) sum += a->mlps[l] + a->attn_bias[l] + a->norm_bias[l];
      EXPECT_NEAR(sum, a->logit, 1e-4 * std::max(1.0, std::abs(static_cast<double>(a->logit))));
      EXPECT_EQ(a->centring, 0.0f);
      ASSERT_EQ(a->norm_bias.size(), 3u);
      float heads = 0, betas = 0;
      for (float v : a->heads) heads = std::max(heads, std::abs(v));
      for (float v : a->norm_bias) betas = std::max(betas, std::abs(v));
      EXPECT_GT(heads, 1e-3f);
      EXPECT_GT(betas, 1e-4f);
    }
  }
}

// With every LayerNorm's scale frozen, the embeddings, heads, b_O, MLPs and betas, each carried
// through the norms after it, rebuild the final stream.
TEST(ContribEncoders, PartsCarriedThroughTheFrozenNormsRebuildTheFinalStream) {
  const EncoderRun r = run_on(false);
  Result<StreamParts> p = stream_parts(r.w, r.cfg, r.batch, 0);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const int L = p->L, T = p->T, D = p->D;
  ASSERT_EQ(p->s1.size(), static_cast<size_t>(L));
  ASSERT_EQ(p->mid.size(), static_cast<size_t>(L));
  MatR stream = carried_to_final(r.w, *p, p->embeddings, 0);  // (T, D)
  for (int l = 0; l < L; ++l) {
    const LayerWeights& lw = r.w.layers[l];
    MatR attn = MatR::Zero(T, D), beta1(T, D), beta2(T, D);
    for (int h = 0; h < p->H; ++h) attn += p->written(l, h);
    for (int t = 0; t < T; ++t) {
      attn.row(t) += p->bias_written(l, t);
      beta1.row(t) = lw.ln1_b;
      beta2.row(t) = lw.ln2_b;
    }
    stream += carried_to_final(r.w, *p, attn, 2 * l) + carried_to_final(r.w, *p, p->mlp_out[l] + beta1, 2 * l + 1) +
              carried_to_final(r.w, *p, beta2, 2 * l + 2);
  }
  EXPECT_LT((stream - p->final_stream).cwiseAbs().maxCoeff(), 1e-4f);
  // h_l itself: LN1's input carried one norm on, plus its beta.
  MatR attn = MatR::Zero(T, D);
  for (int h = 0; h < p->H; ++h) attn += p->head(0, h);
  attn.rowwise() += p->attn_bias[0];
  MatR h0 = p->resid[0] + attn;
  for (int t = 0; t < T; ++t) {
    const double mean = h0.row(t).cast<double>().mean();
    h0.row(t) = ((h0.row(t).cast<double>().array() - mean) / p->s1[0][t]).cast<float>().matrix().cwiseProduct(r.w.layers[0].ln1_g) + r.w.layers[0].ln1_b;
  }
  EXPECT_LT((h0 - p->mid[0]).cwiseAbs().maxCoeff(), 1e-4f);
}

// Kobayashi et al. (2020) on BERT: sum_j alpha_ij f(x_j), f(x) = (x W_V[h] + b_V[h]) W_O[h] on
// the layer's input (post-norm: x itself), summed over heads plus b_O, is the attention output;
// the sink counts row 0 too (no causal mask). Rollout rows sum to 1; the previous-token score is
// the mean weight on the key at i-1 (every row sums to 1 over the keys it sees, after it too).
TEST(ContribEncoders, ValueWeightedRolloutAndDetectorsWithoutACausalMask) {
  const EncoderRun r = run_on(false);
  ForwardOptions fo;
  fo.keep_layer_io = true;
  Result<ForwardOutput> out = forward(r.w, r.cfg, r.batch, fo);
  ASSERT_TRUE(out.ok()) << out.error().message;
  Result<StreamParts> p = stream_parts(r.w, r.cfg, r.batch, 0);
  ASSERT_TRUE(p.ok()) << p.error().message;
  const int L = p->L, H = p->H, T = p->T;
  const ValueWeighted vw = value_weighted(r.w, r.cfg, *p, T);
  for (int l = 0; l < L; ++l) {
    MatR sum = MatR::Zero(T, p->D);
    sum.rowwise() += p->attn_bias[l];
    for (int h = 0; h < H; ++h) {
      const MatR f = head_values(r.w, r.cfg, *p, l, h);  // (T, D)
      const Eigen::Map<const MatR> A(p->map(l, h), T, T);
      sum += A * f;
      double fa = 0, fv = 0;
      for (int i = 0; i < T; ++i) {
        double total = 0;
        for (int j = 0; j < T; ++j) total += A(i, j) * f.row(j).norm();
        fa += A(i, 0);
        fv += A(i, 0) * f.row(0).norm() / total;
      }
      EXPECT_NEAR(vw.sink[static_cast<size_t>(l) * H + h], (fa - fv) / T, 1e-5);
    }
    EXPECT_LT((sum - out->attn_out[l]).cwiseAbs().maxCoeff(), 1e-4f) << "layer " << l;
  }
  for (int l = 0; l < L; ++l) {
    const std::vector<float> ro = rollout(*out, r.batch, 0, l);
    for (int i = 0; i < T; ++i) {
      double s = 0;
      for (int j = 0; j < T; ++j) s += ro[static_cast<size_t>(i) * T + j];
      EXPECT_NEAR(s, 1.0, 1e-5);
    }
  }
  const std::vector<float> prev = detector_scores(*out, r.batch, 0, mask_kind(r.cfg), Detector::PreviousToken);
  ASSERT_EQ(prev.size(), static_cast<size_t>(L) * H);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      double m = 0;
      for (int i = 1; i < T; ++i) m += out->weights(l, 0, h)[static_cast<size_t>(i) * T + i - 1];
      EXPECT_NEAR(prev[static_cast<size_t>(l) * H + h], m / T, 1e-5);
    }
}

// Patching on an encoder: each head's run restarts at its layer from the corrupted run's kept
// residual; the same difference as the whole corrupted run from the embeddings with that head's
// clean output added. One head at one position at a time agrees with patch_heads at it.
TEST(ContribEncoders, PatchingRestartsFromThePatchedLayer) {
  const EncoderRun clean = run_on(true, "the cat sat on the [MASK] . the cat ran");
  const Batch corrupted = make_batch({"the dog sat on the [MASK] . the cat ran"}, clean.cfg, clean.w);
  ASSERT_EQ(corrupted.lengths[0], clean.batch.lengths[0]);
  const LogitTarget target{clean.mask, id_of(clean.w, "cat"), id_of(clean.w, "dog")};
  int calls = 0;
  Result<PatchResult> r = patch_heads(clean.w, clean.cfg, clean.batch, corrupted, target, -1, {}, [&](int, int) { ++calls; });
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(calls, r->L * r->H);
  EXPECT_NE(r->clean, r->corrupted);
  Result<StreamParts> pc = stream_parts(clean.w, clean.cfg, clean.batch, 0), pr = stream_parts(clean.w, clean.cfg, corrupted, 0);
  ASSERT_TRUE(pc.ok() && pr.ok());
  EXPECT_NEAR(r->clean, pc->logits(target.position, target.token_a) - pc->logits(target.position, target.token_b), 1e-5f);
  float moved = 0;
  for (int l = 0; l < r->L; ++l)
    for (int h = 0; h < r->H; ++h) {
      const MatR delta = pc->head(l, h) - pr->head(l, h);  // (T, D)
      ForwardHook hook;
      hook.add_layer = l;
      hook.attn_add = &delta;
      ForwardOptions opt;
      opt.want_logits = true;
      opt.hook = &hook;
      Result<ForwardOutput> full = forward(clean.w, clean.cfg, corrupted, opt);  // from the embeddings
      ASSERT_TRUE(full.ok());
      const float want = full->logits(target.position, target.token_a) - full->logits(target.position, target.token_b);
      EXPECT_NEAR(r->patched[static_cast<size_t>(l) * r->H + h], want, 1e-4f) << l << "." << h;
      moved = std::max(moved, std::abs(want - r->corrupted));
    }
  EXPECT_GT(moved, 1e-3f) << "no head moved the difference: a test that cannot tell";
  Result<std::vector<float>> per = patch_head_positions(clean.w, clean.cfg, clean.batch, corrupted, target, 1, 2);
  ASSERT_TRUE(per.ok()) << per.error().message;
  Result<PatchResult> one = patch_heads(clean.w, clean.cfg, clean.batch, corrupted, target, 2);
  ASSERT_TRUE(one.ok());
  EXPECT_NEAR((*per)[2], one->recovery[static_cast<size_t>(1) * one->H + 2], 1e-5f);
}

// An encoder without a masked-LM head (a ...Model checkpoint) has no logit: attribution and
// patching say so in words, and its maps' contributions still work.
TEST(ContribEncoders, WithoutAMaskedLmHeadTheLogitsAreRefusedAndTheMapsStay) {
  const EncoderRun r = run_on(false, "the cat sat on the [MASK] .", false);
  Result<Attribution> a = direct_attribution(r.w, r.cfg, r.batch, 0, LogitTarget{1, 5, -1});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("no masked-LM head"), std::string::npos) << a.error().message;
  Result<PatchResult> p = patch_heads(r.w, r.cfg, r.batch, r.batch, LogitTarget{1, 5, 6});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("no masked-LM head"), std::string::npos) << p.error().message;
  Result<std::vector<float>> vw = value_weighted_shares(r.w, r.cfg, r.batch);
  ASSERT_TRUE(vw.ok()) << vw.error().message;
  const int T = r.batch.T;
  double row = 0;
  for (int j = 0; j < T; ++j) row += (*vw)[static_cast<size_t>(T) + j];  // layer 0, head 0, row 1
  EXPECT_NEAR(row, 1.0, 1e-5);
}
