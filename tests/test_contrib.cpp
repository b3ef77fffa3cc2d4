// What heads contribute (core/inspect/contrib.h): direct logit attribution, value-weighted
// maps, rollout, head detectors and activation patching, held to the model's own forward
// pass on a tiny random model (multi-head and grouped-query) and on the shipped default.
// The independent float64 numpy reference is tests/reference/contrib_reference.py (ctest
// contrib_matches_numpy), through headmap-cli.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers, V = vocab
#include <gtest/gtest.h>

#include <cmath>

#include "core/inspect/contrib.h"
#include "core/inspect/metrics.h"
#include "core/io/checkpoint.h"
#include "family_fixtures.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

namespace {
using test::kShippedDefault;

// A tiny "trained" model of random numbers: embeddings, positions, every bias and the final
// LayerNorm drawn, so every part of the stream is exercised.
ModelWeights tiny_model(int D, int L, int V, int context, uint64_t key) {
  ModelWeights w = random_weights(D, L, key);
  for (int l = 0; l < L; ++l) {
    LayerWeights& lw = w.layers[l];
    const uint64_t k = key + 100 * (l + 1);
    lw.b_q = random_matrix(1, D, k + 1) * 0.3f;
    lw.b_k = random_matrix(1, D, k + 2) * 0.3f;
    lw.b_v = random_matrix(1, D, k + 3) * 0.3f;
    lw.b_o = random_matrix(1, D, k + 4) * 0.3f;
    lw.ln1_g = (random_matrix(1, D, k + 5) * 0.2f).array() + 1.0f;
    lw.ln2_b = random_matrix(1, D, k + 6) * 0.1f;
    lw.b_proj = random_matrix(1, D, k + 7) * 0.1f;
    lw.fuse();
  }
  w.tok_emb = random_matrix(V, D, key + 7001);
  w.pos_emb = random_matrix(context, D, key + 7002) * 0.5f;
  w.lnf_g = (random_matrix(1, D, key + 7003) * 0.2f).array() + 1.0f;
  w.lnf_b = random_matrix(1, D, key + 7004) * 0.1f;
  w.context = context;
  return w;
}

ModelConfig tiny_config(int D, int H, int L, int kv = 0) {
  ModelConfig c = config(D, H, L);
  c.num_kv_heads = kv;
  c.context = 32;
  return c;
}

struct Tiny {
  const char* name;
  int H, kv;
};
const Tiny kTiny[] = {{"multi-head", 4, 0}, {"grouped-query", 4, 2}};

// A tiny "trained" model of another family (arch.h), every tensor drawn: H query heads on KV
// K/V heads of d_head dh (H*dh != D), MLP width F, V tokens, an untied lm_head unless tied.
// (family_fixtures.h's family_model, without V, draws the weights only.)
ModelWeights family_model(const Arch& arch, int D, int H, int KV, int dh, int F, int L, int V, uint64_t key) {
  ModelWeights w = family_shell(arch, D, H, KV, dh, F);
  const bool ln = arch.norm == NormKind::LayerNorm;
  for (int l = 0; l < L; ++l) {
    const uint64_t k = key + 100 * static_cast<uint64_t>(l + 1);
    LayerWeights lw;
    lw.ln1_g = (random_matrix(1, D, k + 1) * 0.2f).array() + 1.0f;
    lw.ln1_b = ln ? MatR(random_matrix(1, D, k + 2) * 0.1f) : MatR(MatR::Zero(1, D));
    lw.ln2_g = (random_matrix(1, D, k + 3) * 0.2f).array() + 1.0f;
    lw.ln2_b = ln ? MatR(random_matrix(1, D, k + 4) * 0.1f) : MatR(MatR::Zero(1, D));
    lw.w_q = random_matrix(D, H * dh, k + 5) * 0.4f;
    lw.w_k = random_matrix(D, KV * dh, k + 6) * 0.4f;
    lw.w_v = random_matrix(D, KV * dh, k + 7) * 0.4f;
    lw.w_o = PackedMatrix(random_matrix(H * dh, D, k + 8) * 0.3f);
    lw.b_q = random_matrix(1, H * dh, k + 9) * (arch.attn_bias ? 0.2f : 0.0f);
    lw.b_k = random_matrix(1, KV * dh, k + 10) * (arch.attn_bias ? 0.2f : 0.0f);
    lw.b_v = random_matrix(1, KV * dh, k + 11) * (arch.attn_bias ? 0.2f : 0.0f);
    lw.b_o = random_matrix(1, D, k + 12) * (arch.out_bias ? 0.2f : 0.0f);
    if (arch.qk_norm) lw.q_norm = (random_matrix(1, dh, k + 13) * 0.2f).array() + 1.0f, lw.k_norm = (random_matrix(1, dh, k + 14) * 0.2f).array() + 1.0f;
    lw.w_fc = PackedMatrix(random_matrix(D, F, k + 15) * 0.3f);
    lw.w_gate = PackedMatrix(random_matrix(D, F, k + 16) * 0.3f);
    lw.w_proj = PackedMatrix(random_matrix(F, D, k + 17) * 0.2f);
    lw.b_fc = random_matrix(1, F, k + 18) * (arch.mlp_bias ? 0.1f : 0.0f);
    lw.b_proj = random_matrix(1, D, k + 19) * (arch.mlp_bias ? 0.1f : 0.0f);
    lw.post_attn_g = (random_matrix(1, D, k + 20) * 0.3f).array() + 1.0f;
    lw.post_mlp_g = (random_matrix(1, D, k + 21) * 0.3f).array() + 1.0f;
    lw.fuse();
    w.layers.push_back(std::move(lw));
  }
  w.tok_emb = random_matrix(V, D, key + 7001);
  if (!arch.tied) w.lm_head = random_matrix(V, D, key + 7002);
  if (arch.positions == PositionKind::Learned) w.pos_emb = random_matrix(32, D, key + 7003) * 0.5f;
  w.lnf_g = (random_matrix(1, D, key + 7004) * 0.2f).array() + 1.0f;
  w.lnf_b = ln ? MatR(random_matrix(1, D, key + 7005) * 0.1f) : MatR(MatR::Zero(1, D));
  w.context = 32;
  w.source.kind = WeightsSource::Kind::Pretrained;
  return w;
}

// Llama-like: RMSNorm, RoPE, GQA 4 on 2, d_head 10 with D = 24, q/k norms, SiLU gate, untied.
Arch llama_arch() {
  Arch a;
  a.family = "llama";
  a.name = "Llama";
  a.norm = NormKind::RMSNorm;
  a.norm_eps = 1e-6f;
  a.positions = PositionKind::Rotary;
  a.qk_norm = true;
  a.attn_bias = false;
  a.out_bias = false;
  a.mlp = MlpKind::SiluGated;
  a.mlp_bias = false;
  a.tied = false;
  return a;
}
// Pythia-like: LayerNorm with biases, partial rotary, parallel attention + MLP, erf GELU, untied.
Arch neox_arch() {
  Arch a;
  a.family = "gpt_neox";
  a.name = "Pythia (GPT-NeoX)";
  a.placement = NormPlacement::Parallel;
  a.positions = PositionKind::Rotary;
  a.rotary_fraction = 0.25f;
  a.mlp = MlpKind::GeluErf;
  a.tied = false;
  return a;
}
// Gemma 2-like: RMSNorm, norms after attention and the MLP, score and final soft-caps,
// query_pre_attn_scalar, a window on layer 0, GELU-tanh gate, embeddings x sqrt(D), tied.
Arch gemma2_arch() {
  Arch a;
  a.family = "gemma2";
  a.name = "Gemma 2";
  a.norm = NormKind::RMSNorm;
  a.norm_plus_one = true;
  a.norm_eps = 1e-6f;
  a.placement = NormPlacement::Sandwich;
  a.positions = PositionKind::Rotary;
  a.attn_bias = false;
  a.out_bias = false;
  a.score_scale = ScoreScale::QueryPreAttnScalar;
  a.query_pre_attn_scalar = 12.0f;
  a.attn_softcap = 3.0f;
  a.final_softcap = 4.0f;
  a.windows = {3, 0, 3};
  a.mlp = MlpKind::GeluTanhGated;
  a.mlp_bias = false;
  a.embed_scale = true;
  return a;
}

struct Family {
  const char* name;
  Arch arch;
  int H, KV, dh;
};
std::vector<Family> families() {
  return {{"llama (GQA, RoPE, q/k norms)", llama_arch(), 4, 2, 10},
          {"pythia (parallel, partial rotary)", neox_arch(), 4, 4, 6},
          {"gemma2 (post norms, soft-caps)", gemma2_arch(), 4, 2, 8}};
}

ModelConfig family_config(const ModelWeights& w) { return config_of(w, TokenizerKind::Bpe, 32); }

// Patching head (l, h) by brute force: the corrupted sentence run from the embeddings with the
// head ablated and the clean run's head output (pc; at `position` only, or everywhere when
// position < 0; pr, the corrupted run's, elsewhere) added in its place, before any post norm.
// Returns the model's logit difference token_a - token_b at the target position (NaN, and a
// failure, when the forward fails).
float patched_from_the_embeddings(const ModelWeights& w, const ModelConfig& cfg, const Batch& corrupted, const StreamParts& pc,
                                  const StreamParts& pr, int l, int h, int position, const LogitTarget& target) {
  std::vector<uint8_t> ablate(static_cast<size_t>(pc.L * pc.H), 0);
  ablate[static_cast<size_t>(l * pc.H + h)] = 1;
  MatR add = MatR::Zero(pc.T, pc.D);  // (T, D)
  for (int t = 0; t < pc.T; ++t) add.row(t) = (position < 0 || t == position ? pc : pr).head(l, h).row(t);
  ForwardHook hook;
  hook.add_layer = l;
  hook.attn_add = &add;
  ForwardOptions opt;
  opt.want_logits = true;
  opt.ablate = &ablate;
  opt.hook = &hook;
  Result<ForwardOutput> brute = forward(w, cfg, corrupted, opt);
  EXPECT_TRUE(brute) << brute.error().message;
  if (!brute) return std::nanf("");
  return brute->logits(target.position, target.token_a) - brute->logits(target.position, target.token_b);
}
}  // namespace

// The parts sum to the logit (and to a logit difference) less the centring term, and each
// head's output rebuilt from its weights and values equals the attention block's own output
// (forward's fused GEMM) once summed with b_O.
TEST(Contrib, AttributionIsCompleteAndHeadsSumToTheBlock) {
  for (const Tiny& tiny : kTiny) {
    SCOPED_TRACE(tiny.name);
    const ModelWeights w = tiny_model(24, 2, 40, 32, 11);
    const ModelConfig cfg = tiny_config(24, tiny.H, 2, tiny.kv);
    const Batch batch = id_batch({{3, 9, 27, 4, 9, 27, 5, 1}, {7, 7, 2}});
    for (int b = 0; b < 2; ++b) {
      Result<StreamParts> p = stream_parts(w, cfg, batch, b);
      ASSERT_TRUE(p) << p.error().message;
      ForwardOptions opt;
      opt.keep_layer_io = true;
      Result<ForwardOutput> out = forward(w, cfg, batch, opt);
      ASSERT_TRUE(out);
      const int len = batch.lengths[b];
      for (int l = 0; l < p->L; ++l) {
        MatR sum = MatR::Zero(p->T, p->D);
        for (int h = 0; h < p->H; ++h) sum += p->head(l, h);
        sum.rowwise() += p->attn_bias[l];
        const MatR block = out->attn_out[l].middleRows(static_cast<Eigen::Index>(b) * batch.T, len);
        EXPECT_LT((sum.topRows(len) - block).cwiseAbs().maxCoeff(), 1e-4f) << "layer " << l;
      }
      for (int t = 0; t < len; ++t) {
        Result<Attribution> a = direct_attribution(w, *p, LogitTarget{t, 5, -1});
        ASSERT_TRUE(a) << a.error().message;
        EXPECT_LT(a->completeness_error, 1e-4f) << "logit " << a->logit << " parts " << a->parts_sum;
        EXPECT_GT(std::abs(a->centring), 0.0f);
        Result<Attribution> d = direct_attribution(w, *p, LogitTarget{t, 5, 12});
        ASSERT_TRUE(d);
        EXPECT_LT(d->completeness_error, 1e-4f);
      }
    }
  }
}

// Sum_j alpha_ij f(x_j) is the head's output; each value-weighted row is alpha times ||f||.
TEST(Contrib, ValueWeightedRowsSumToTheHeadsOutput) {
  const ModelWeights w = tiny_model(24, 2, 40, 32, 12);
  const ModelConfig cfg = tiny_config(24, 4, 2, 2);
  const Batch batch = id_batch({{1, 2, 3, 4, 1, 2, 3, 4, 9}});
  Result<StreamParts> p = stream_parts(w, cfg, batch, 0);
  ASSERT_TRUE(p);
  const ValueWeighted vw = value_weighted(w, cfg, *p, 9);
  for (int l = 0; l < p->L; ++l)
    for (int h = 0; h < p->H; ++h) {
      const MatR f = head_values(w, cfg, *p, l, h);  // (T, D)
      const Eigen::Map<const MatR> A(p->map(l, h), p->T, p->T);
      EXPECT_LT((A * f - p->head(l, h)).cwiseAbs().maxCoeff(), 1e-4f);
      for (int i = 0; i < p->T; ++i)
        for (int j = 0; j <= i; ++j)
          EXPECT_NEAR(vw.map(l, h)[i * p->T + j], A(i, j) * f.row(j).norm(), 1e-4f);
      const size_t k = static_cast<size_t>(l) * p->H + h;
      EXPECT_NEAR(vw.sink[k], vw.first_attention[k] - vw.first_value[k], 1e-6f);
    }
}

// Rollout: every real row sums to 1, padded rows are 0, and one layer of it is (A + I) / 2.
TEST(Contrib, RolloutRowsSumToOne) {
  const ModelWeights w = tiny_model(24, 3, 40, 32, 13);
  const ModelConfig cfg = tiny_config(24, 4, 3);
  const Batch batch = id_batch({{1, 2, 3, 4, 5, 6, 7}, {8, 9, 10}});
  Result<ForwardOutput> out = forward(w, cfg, batch);
  ASSERT_TRUE(out);
  for (int b = 0; b < 2; ++b)
    for (int head = -1; head < 4; ++head) {
      const std::vector<float> r = rollout(*out, batch, b, 2, head);
      for (int i = 0; i < batch.T; ++i) {
        double s = 0;
        for (int j = 0; j < batch.T; ++j) s += r[i * batch.T + j];
        EXPECT_NEAR(s, i < batch.lengths[b] ? 1.0 : 0.0, 1e-5) << "row " << i;
      }
    }
  const std::vector<float> r0 = rollout(*out, batch, 0, 0, 1);
  const float* a = out->weights(0, 0, 1);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j) EXPECT_NEAR(r0[i * batch.T + j], (a[i * batch.T + j] + (i == j)) / 2, 1e-6);
}

// Detector scores against the formula written out, and against the project's own metrics:
// on a causal map sum(A) over the real rows is len, so previous-token = sum_t A[t,t-1] / len.
TEST(Contrib, DetectorScoresFollowTheFormula) {
  const ModelWeights w = tiny_model(24, 2, 40, 32, 14);
  const ModelConfig cfg = tiny_config(24, 4, 2);
  const Batch batch = id_batch({{5, 6, 7, 8, 5, 6, 7, 8, 3}});
  Result<ForwardOutput> out = forward(w, cfg, batch);
  ASSERT_TRUE(out);
  const int T = 9;
  const std::vector<HeadMetrics> m = head_metrics(*out, batch);
  const std::vector<float> prev = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::PreviousToken);
  const std::vector<float> first = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::FirstToken);
  const std::vector<float> dup = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::DuplicateToken);
  const std::vector<float> ind = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::Induction);
  std::vector<float> paint(T * T, 0.0f);
  for (int t = 0; t < T; ++t) paint[t * T + t] = 1;  // the diagonal: the self score
  const std::vector<float> painted = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::Painted, &paint);
  ASSERT_EQ(prev.size(), 8u);
  for (int k = 0; k < 8; ++k) {
    const float* A = out->weights(k / 4, 0, k % 4);
    EXPECT_NEAR(prev[k], m[k].prev_token * (T - 1) / T, 1e-5);
    EXPECT_NEAR(first[k], (m[k].first_token * (T - 1) + 1) / T, 1e-5);
    EXPECT_NEAR(painted[k], (m[k].self * (T - 1) + 1) / T, 1e-5);
    // Duplicates of 5 6 7 8: query 4+i copies key i; induction looks one further, i + 1.
    double d = 0, in = 0, total = 0;
    for (int i = 0; i < 4; ++i) d += A[(4 + i) * T + i], in += A[(4 + i) * T + i + 1];
    for (int t = 0; t < T; ++t)
      for (int s = 0; s <= t; ++s) total += A[t * T + s];
    EXPECT_NEAR(dup[k], d / total, 1e-5);
    EXPECT_NEAR(ind[k], in / total, 1e-5);
  }
}

// Patching head (l, h) from layer l on equals a brute-force run from the embeddings, where
// the head is ablated in the corrupted run and the clean head's output added in its place.
TEST(Contrib, PatchingRestartsAtTheLayerAndMatchesARunFromTheEmbeddings) {
  const ModelWeights w = tiny_model(24, 3, 40, 32, 15);
  const ModelConfig cfg = tiny_config(24, 4, 3);
  const Batch clean = id_batch({{3, 9, 27, 4, 9, 27, 5}}), corrupted = id_batch({{3, 9, 27, 4, 8, 27, 5}});
  const LogitTarget target{6, 4, 8};
  for (int position : {-1, 4}) {
    Result<PatchResult> r = patch_heads(w, cfg, clean, corrupted, target, position);
    ASSERT_TRUE(r) << r.error().message;
    Result<StreamParts> pc = stream_parts(w, cfg, clean, 0), pr = stream_parts(w, cfg, corrupted, 0);
    ASSERT_TRUE(pc && pr);
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h) {
        const float diff = patched_from_the_embeddings(w, cfg, corrupted, *pc, *pr, l, h, position, target);
        EXPECT_NEAR(r->patched[l * 4 + h], diff, 1e-4) << "head " << l << "." << h << " position " << position;
        EXPECT_NEAR(r->recovery[l * 4 + h], (diff - r->corrupted) / (r->clean - r->corrupted), 1e-3);
      }
    // Patching every position of a whole layer's heads at once would give the clean run; one
    // head of the last layer at the target position moves the difference by its own change.
  }
  // Different token counts are refused with a message, not a crash.
  Result<PatchResult> bad = patch_heads(w, cfg, clean, id_batch({{3, 9}}), target);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("same token count"), std::string::npos);
}

// The shipped default (D=128, H=4, L=2) on a sentence of our own said twice: head 1.1 is an
// induction head that reads layer 0's previous-token head 0.0 (K-composition).
TEST(Contrib, ShippedInductionHeadReadsThePreviousTokenHead) {
  Result<ModelWeights> w = load_checkpoint(kShippedDefault);
  ASSERT_TRUE(w) << w.error().message;
  ModelConfig cfg;
  cfg.d_model = w->d_model;
  cfg.num_heads = 4;
  cfg.num_layers = w->num_layers();
  cfg.context = w->context;
  const std::string s = "My aunt keeps three green parrots in the kitchen.";
  const Batch batch = make_batch({s + " " + s}, cfg, *w);
  ASSERT_EQ(batch.lengths[0] % 2, 0);
  const int n = batch.lengths[0] / 2;  // tokens per copy
  std::vector<uint8_t> ablate(8, 0);
  ablate[0] = 1;  // head 0.0
  ForwardOptions ab;
  ab.ablate = &ablate;
  Result<ForwardOutput> out = forward(*w, cfg, batch), cut = forward(*w, cfg, batch, ab);
  ASSERT_TRUE(out && cut);
  const float ind = detector_scores(*out, batch, 0, MaskKind::Causal, Detector::Induction)[5];
  const float ind_cut = detector_scores(*cut, batch, 0, MaskKind::Causal, Detector::Induction)[5];
  // Attribution of each prediction in the second copy (position t predicts token t + 1).
  double attr = 0, attr_cut = 0;
  int first = 0, count = 0;
  Result<StreamParts> p = stream_parts(*w, cfg, batch, 0), pcut = stream_parts(*w, cfg, batch, 0, &ablate);
  ASSERT_TRUE(p && pcut);
  for (int t = n; t + 1 < 2 * n; ++t) {
    const LogitTarget target{t, batch.sentences[0].tokens[t + 1].id, -1};
    Result<Attribution> a = direct_attribution(*w, *p, target), ac = direct_attribution(*w, *pcut, target);
    ASSERT_TRUE(a && ac);
    EXPECT_LT(a->completeness_error, 1e-4f * std::max(1.0f, std::abs(a->logit)));
    attr += a->heads[5];
    attr_cut += ac->heads[5];
    first += a->ranking()[0] == std::pair{1, 1};
    ++count;
  }
  attr /= count;
  attr_cut /= count;
  std::printf("induction score of 1.1: %.3f, with 0.0 ablated %.3f\n", ind, ind_cut);
  std::printf("mean attribution of 1.1 to the copied token: %.3f, with 0.0 ablated %.3f; ranked first on %d of %d\n", attr,
              attr_cut, first, count);
  EXPECT_GE(ind, 0.3f);
  EXPECT_LT(ind_cut, 0.5f * ind);
  EXPECT_LT(attr_cut, 0.5 * attr);
  EXPECT_GT(first * 2, count);
}

// Every family's stream splits: the heads' outputs (each query head through its K/V head's
// unrotated values) plus b_O are the attention block's own output; the parts sum to the
// (pre-cap) logit, with no centring term under RMSNorm; the soft-capped model logit is
// c tanh(logit / c); sum_j alpha_ij f(x_j) is the head's output.
TEST(Contrib, EveryFamilyIsAttributedCompletely) {
  for (const Family& fam : families()) {
    SCOPED_TRACE(fam.name);
    const ModelWeights w = family_model(fam.arch, 24, fam.H, fam.KV, fam.dh, 40, 3, 40, 21);
    const ModelConfig cfg = family_config(w);
    const Batch batch = id_batch({{3, 9, 27, 4, 9, 27, 5, 1}});
    Result<StreamParts> p = stream_parts(w, cfg, batch, 0);
    ASSERT_TRUE(p) << p.error().message;
    ForwardOptions opt;
    opt.keep_layer_io = true;
    Result<ForwardOutput> out = forward(w, cfg, batch, opt);
    ASSERT_TRUE(out);
    MatR stream = p->embeddings;  // (T, D) rebuilt from the parts
    for (int l = 0; l < p->L; ++l) {
      MatR sum = MatR::Zero(p->T, p->D);
      for (int h = 0; h < p->H; ++h) {
        sum += p->head(l, h);
        stream += p->written(l, h);
        const MatR f = head_values(w, cfg, *p, l, h);  // (T, D)
        const Eigen::Map<const MatR> A(p->map(l, h), p->T, p->T);
        EXPECT_LT((A * f - p->head(l, h)).cwiseAbs().maxCoeff(), 1e-4f) << "head " << l << "." << h;
      }
      sum.rowwise() += p->attn_bias[l];
      EXPECT_LT((sum - out->attn_out[l]).cwiseAbs().maxCoeff(), 1e-4f) << "layer " << l;
      for (int t = 0; t < p->T; ++t) stream.row(t) += p->bias_written(l, t);
      stream += p->mlp_out[l];
    }
    EXPECT_LT((stream - p->final_stream).cwiseAbs().maxCoeff(), 1e-4f);
    EXPECT_EQ(p->attn_scale.size(), fam.arch.placement == NormPlacement::Sandwich ? 3u : 0u);
    float bent = 0;  // the largest gap between the attributed and the model's (capped) logit
    for (int t = 0; t < 8; ++t)
      for (const LogitTarget target : {LogitTarget{t, 5, -1}, LogitTarget{t, 5, 12}}) {
        Result<Attribution> a = direct_attribution(w, *p, target);
        ASSERT_TRUE(a) << a.error().message;
        EXPECT_LT(a->completeness_error, 1e-4f * std::max(1.0f, std::abs(a->logit))) << "logit " << a->logit << " parts " << a->parts_sum;
        if (fam.arch.norm == NormKind::RMSNorm) {
          EXPECT_EQ(a->centring, 0.0f);
          EXPECT_EQ(a->final_bias, 0.0f);
        } else {
          EXPECT_NE(a->centring, 0.0f);
        }
        const float c = fam.arch.final_softcap;
        if (c > 0 && target.token_b < 0) EXPECT_NEAR(a->model_logit, c * std::tanh(a->logit / c), 1e-4f);
        if (c == 0) EXPECT_EQ(a->model_logit, a->logit);
        bent = std::max(bent, std::abs(a->logit - a->model_logit));
      }
    if (fam.arch.final_softcap > 0) EXPECT_GT(bent, 0.05f);  // the cap bends these logits
  }
}

// On every family, patching head (l, h) from layer l on equals a run from the embeddings with
// the head ablated and the clean head's output added in its place (before any post norm).
TEST(Contrib, EveryFamilyPatchesLikeARunFromTheEmbeddings) {
  for (const Family& fam : families()) {
    SCOPED_TRACE(fam.name);
    const ModelWeights w = family_model(fam.arch, 24, fam.H, fam.KV, fam.dh, 40, 3, 40, 22);
    const ModelConfig cfg = family_config(w);
    const Batch clean = id_batch({{3, 9, 27, 4, 9, 27, 5}}), corrupted = id_batch({{3, 9, 27, 4, 8, 27, 5}});
    const LogitTarget target{6, 4, 8};
    const int H = fam.H;
    for (int position : {-1, 4}) {
      Result<PatchResult> r = patch_heads(w, cfg, clean, corrupted, target, position);
      ASSERT_TRUE(r) << r.error().message;
      Result<StreamParts> pc = stream_parts(w, cfg, clean, 0), pr = stream_parts(w, cfg, corrupted, 0);
      ASSERT_TRUE(pc && pr);
      double moved = 0;
      for (int l = 0; l < 3; ++l)
        for (int h = 0; h < H; ++h) {
          const float diff = patched_from_the_embeddings(w, cfg, corrupted, *pc, *pr, l, h, position, target);
          EXPECT_NEAR(r->patched[static_cast<size_t>(l * H + h)], diff, 1e-4) << "head " << l << "." << h << " position " << position;
          moved = std::max(moved, std::abs(static_cast<double>(diff) - r->corrupted));
        }
      EXPECT_GT(moved, 1e-3);  // some head changes the difference
    }
  }
}

// The patching run for a worker: progress after every head, cancelled between heads, and
// its results cached by a key of everything they depend on.
TEST(Contrib, PatchingIsCancellableAndCachedByItsInputs) {
  const ModelWeights w = family_model(llama_arch(), 24, 4, 2, 10, 40, 2, 40, 23);
  const ModelConfig cfg = family_config(w);
  const Batch clean = id_batch({{3, 9, 27, 4, 9}}), corrupted = id_batch({{3, 9, 27, 4, 8}});
  const LogitTarget target{4, 4, 8};
  PatchCache cache(2);
  std::vector<std::pair<int, int>> steps;
  auto progress = [&](int done, int total) { steps.emplace_back(done, total); };
  Result<PatchResult> first = patch_heads_cached(cache, w, cfg, clean, corrupted, target, -1, {}, progress);
  ASSERT_TRUE(first) << first.error().message;
  ASSERT_EQ(steps.size(), 8u);
  EXPECT_EQ(steps.back(), std::make_pair(8, 8));
  EXPECT_EQ(cache.size(), 1u);
  steps.clear();
  Result<PatchResult> again = patch_heads_cached(cache, w, cfg, clean, corrupted, target, -1, {}, progress);
  ASSERT_TRUE(again);
  EXPECT_TRUE(steps.empty());  // from the cache: no run
  EXPECT_EQ(again->patched, first->patched);
  // Every input is in the key.
  const PatchKey key = patch_key(w, cfg, clean, corrupted, target, -1);
  EXPECT_EQ(key, patch_key(w, cfg, clean, corrupted, target, -1));
  EXPECT_EQ(key.hash(), patch_key(w, cfg, clean, corrupted, target, -1).hash());
  EXPECT_FALSE(key == patch_key(w, cfg, clean, corrupted, target, 2));
  EXPECT_FALSE(key == patch_key(w, cfg, clean, corrupted, LogitTarget{4, 4, 9}, -1));
  EXPECT_FALSE(key == patch_key(w, cfg, corrupted, clean, target, -1));
  ModelConfig other = cfg;
  other.causal = false;
  EXPECT_FALSE(key == patch_key(w, other, clean, corrupted, target, -1));
  ModelWeights changed = w;
  changed.layers[1].w_v(0, 0) += 1.0f;
  EXPECT_NE(weights_fingerprint(changed), weights_fingerprint(w));
  ModelWeights head = w;
  head.lm_head(0, 0) += 1.0f;
  EXPECT_NE(weights_fingerprint(head), weights_fingerprint(w));
  // Cancelled after the third head: ErrorKind::Cancelled, nothing cached.
  steps.clear();
  int asked = 0;
  auto cancel = [&] { return steps.size() >= 3 && ++asked > 0; };
  Result<PatchResult> stopped = patch_heads_cached(cache, w, cfg, clean, corrupted, target, 2, cancel, progress);
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().kind, ErrorKind::Cancelled);
  EXPECT_EQ(steps.size(), 3u);
  EXPECT_EQ(cache.size(), 1u);
  // Capacity 2: the least recently used result goes.
  ASSERT_TRUE(patch_heads_cached(cache, w, cfg, clean, corrupted, target, 2));
  ASSERT_TRUE(patch_heads_cached(cache, w, cfg, clean, corrupted, target, 3));
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_FALSE(cache.find(key).has_value());
}
