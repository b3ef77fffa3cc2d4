// The family seam (issue 25): the forward pass's family steps held to the step-through and
// to the hover score, the sliding window, llama3 RoPE scaling against its published rule,
// and config.json's settings (top-level and transformers v5's rope_parameters, layer types,
// refusals that name the family). The full families against float64 numpy forwards are the
// ctest families_match_numpy (tests/reference/family_reference.py).
//
// B = batch, T = tokens, D = d_model, H = heads, dh = d_head, KV = K/V heads, F = MLP width
#include <gtest/gtest.h>

#include <cmath>

#include "core/inspect/passport.h"
#include "core/io/hf_model.h"
#include "core/memory_budget.h"
#include "core/math/rng.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "family_fixtures.h"

using namespace headmap;
using namespace headmap::test;

namespace {

Arch every_quirk() {
  Arch a;
  a.family = "test";
  a.name = "Test";
  a.norm = NormKind::RMSNorm;
  a.norm_eps = 1e-6f;
  a.positions = PositionKind::Rotary;
  a.rope_theta = 500.0f;
  a.rotary_fraction = 0.5f;  // partial rotary
  a.rope_scaling = RopeScaling::Llama3;
  a.rope_factor = 8.0f;
  a.rope_original_context = 16;
  a.qk_norm = true;
  a.attn_softcap = 2.0f;
  a.score_scale = ScoreScale::QueryPreAttnScalar;
  a.query_pre_attn_scalar = 7.0f;
  a.windows = {3, 0};  // layer 0 local, layer 1 global
  a.mlp = MlpKind::SiluGated;
  return a;
}

}  // namespace

// Every family step (partial RoPE with llama3 scaling, q/k norms, GQA, d_head independent of
// D, query_pre_attn_scalar, soft-capping, a window shorter than the text) computed twice: by
// the fast path (fused GEMM, steps on the packed rows) and by the step-through (one small
// Linear per head); and the hover score at the two positions against the trace's raw scores.
TEST(Families, TraceAndHoverScoreMatchTheFastPathOnEveryQuirk) {
  const ModelWeights w = family_model(every_quirk(), 24, 4, 2, 10, 40, 2);  // H·dh = 40 != D = 24
  const ModelConfig cfg = config_of(w, TokenizerKind::Word);
  ASSERT_EQ(cfg.num_heads, 4);
  ASSERT_EQ(cfg.kv_heads(), 2);
  ASSERT_EQ(cfg.d_head(), 10);
  const Batch batch = make_batch({"one two three four five six seven eight nine", "ten eleven"}, cfg, w);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      ForwardOptions opt;
      opt.keep_layer_io = true;
      opt.trace = TraceRequest{l, 0, h};
      Result<ForwardOutput> out = forward(w, cfg, batch, opt);
      ASSERT_TRUE(out.ok()) << out.error().message;
      const HeadTrace& tr = *out->trace;
      const int T = out->T, len = batch.lengths[0];
      const float* fast = out->weights(l, 0, h);
      const MhaOptions mo = mha_options(cfg, w, l);
      const MatR& x = out->attn_in[static_cast<size_t>(l)];
      for (int t = 0; t < len; ++t)
        for (int s = 0; s < len; ++s) {
          EXPECT_NEAR(tr.weights(t, s), fast[t * T + s], 2e-5) << "layer " << l << " head " << h << " (" << t << ", " << s << ")";
          const float score = head_score(w.layers[static_cast<size_t>(l)], x.row(t).data(), x.row(s).data(), h, mo, t, s);
          EXPECT_NEAR(score, tr.scores(t, s), 1e-4f * std::max(1.0f, std::abs(score)));
        }
    }
}

// The step-through keeps each family step's own numbers (what Focus shows): the projections,
// the q/k norm, the rotation, the scale and the soft-cap, each recomputed here from the one
// before by the published formulas (float64, RoPE's angles from theta, not from the core's
// table), and the fast path's weights recomputed from the traced post-RoPE q and k.
TEST(Families, TraceKeepsEveryFamilyStepWithTheForwardsNumbers) {
  Arch a = every_quirk();
  a.rope_scaling = RopeScaling::None;  // angles t * theta^(-2i/rot), computed below
  const int D = 24, H = 4, KV = 2, dh = 10;
  const ModelWeights w = family_model(a, D, H, KV, dh, 40, 2);
  const ModelConfig cfg = config_of(w, TokenizerKind::Word);
  const Batch batch = make_batch({"one two three four five six seven eight nine"}, cfg, w);
  const int rot = a.rotary_dims(dh), half = rot / 2;
  ASSERT_EQ(rot, 4);  // partial rotary: dims 4-9 are not rotated
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < H; ++h) {
      ForwardOptions opt;
      opt.trace = TraceRequest{l, 0, h};
      Result<ForwardOutput> out = forward(w, cfg, batch, opt);
      ASSERT_TRUE(out.ok()) << out.error().message;
      const HeadTrace& tr = *out->trace;
      const int T = out->T, len = batch.lengths[0];
      ASSERT_EQ(tr.q_proj.rows(), T);
      ASSERT_EQ(tr.q_proj.cols(), dh);
      ASSERT_EQ(tr.k_normed.cols(), dh);
      ASSERT_EQ(static_cast<int>(tr.rope_inv_freq.size()), half);
      EXPECT_EQ(tr.window, l == 0 ? 3 : 0);
      EXPECT_FLOAT_EQ(tr.scale, 1.0f / std::sqrt(7.0f));  // query_pre_attn_scalar 7, not 1/sqrt(10)
      EXPECT_FLOAT_EQ(tr.softcap, 2.0f);
      const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
      for (int t = 0; t < len; ++t) {
        // q/k norm: x / sqrt(mean(x^2) + eps) * g over d_head.
        for (int which = 0; which < 2; ++which) {
          const MatR& raw = which ? tr.k_proj : tr.q_proj;
          const MatR& nrm = which ? tr.k_normed : tr.q_normed;
          const MatR& rotated = which ? tr.k : tr.q;
          const RowVec& g = which ? lw.k_norm : lw.q_norm;
          double ms = 0;
          for (int j = 0; j < dh; ++j) ms += double(raw(t, j)) * raw(t, j);
          const double inv = 1.0 / std::sqrt(ms / dh + 1e-6);
          for (int j = 0; j < dh; ++j) EXPECT_NEAR(nrm(t, j), raw(t, j) * inv * g(j), 1e-5) << "q/k norm, t " << t << " j " << j;
          // RoPE: pair (i, i + rot/2) turned by t * theta^(-2i/rot); the rest as it was.
          for (int i = 0; i < half; ++i) {
            const double ang = t * std::pow(500.0, -2.0 * i / rot), x1 = nrm(t, i), x2 = nrm(t, i + half);
            EXPECT_NEAR(rotated(t, i), x1 * std::cos(ang) - x2 * std::sin(ang), 1e-5) << "RoPE pair " << i << " t " << t;
            EXPECT_NEAR(rotated(t, i + half), x2 * std::cos(ang) + x1 * std::sin(ang), 1e-5) << "RoPE pair " << i << " t " << t;
          }
          for (int j = rot; j < dh; ++j) EXPECT_EQ(rotated(t, j), nrm(t, j)) << "dim " << j << " is past the rotated part";
        }
        // The forward's weights from the traced q·k: scaled, soft-capped, windowed, softmaxed.
        std::vector<double> e(static_cast<size_t>(len), 0.0);
        double mx = -1e300, sum = 0;
        for (int s2 = 0; s2 <= t; ++s2) {
          if (l == 0 && t - s2 >= 3) continue;
          double dot = 0;
          for (int j = 0; j < dh; ++j) dot += double(tr.q(t, j)) * tr.k(s2, j);
          EXPECT_NEAR(tr.scaled(t, s2), dot / std::sqrt(7.0), 1e-4);
          const double capped = 2.0 * std::tanh(dot / std::sqrt(7.0) / 2.0);
          EXPECT_NEAR(tr.capped(t, s2), capped, 1e-5);
          e[static_cast<size_t>(s2)] = capped;
          mx = std::max(mx, capped);
        }
        for (int s2 = 0; s2 <= t; ++s2)
          if (!(l == 0 && t - s2 >= 3)) sum += (e[static_cast<size_t>(s2)] = std::exp(e[static_cast<size_t>(s2)] - mx));
        const float* fast = out->weights(l, 0, h) + static_cast<size_t>(t) * T;
        for (int s2 = 0; s2 < len; ++s2) {
          const bool seen = s2 <= t && !(l == 0 && t - s2 >= 3);
          EXPECT_NEAR(fast[s2], seen ? e[static_cast<size_t>(s2)] / sum : 0.0, 2e-5) << "layer " << l << " head " << h << " (" << t << ", " << s2 << ")";
        }
      }
    }
  // GPT-2's block keeps no family steps; GPT-Neo's scale is 1.
  Arch neo;
  neo.family = "gpt_neo";
  neo.score_scale = ScoreScale::None;
  neo.windows = {2};
  const ModelWeights wn = family_model(neo, 16, 2, 2, 8, 32, 1);
  const ModelConfig cn = config_of(wn, TokenizerKind::Word);
  ForwardOptions on;
  on.trace = TraceRequest{0, 0, 1};
  Result<ForwardOutput> o2 = forward(wn, cn, make_batch({"a b c d e"}, cn, wn), on);
  ASSERT_TRUE(o2.ok()) << o2.error().message;
  EXPECT_EQ(o2->trace->scale, 1.0f);
  EXPECT_EQ(o2->trace->window, 2);
  EXPECT_EQ(o2->trace->q_proj.size(), 0);
  EXPECT_EQ(o2->trace->capped.size(), 0);
  EXPECT_TRUE(o2->trace->rope_inv_freq.empty());
  EXPECT_NEAR(o2->trace->scaled(3, 2), o2->trace->scores(3, 2), 1e-6);
}

// Layer 0's window of 3: a query sees itself and the two keys before it, no further back;
// layer 1 is global. The text is longer than the window.
TEST(Families, SlidingWindowHidesKeysOutsideTheWindow) {
  const ModelWeights w = family_model(every_quirk(), 24, 4, 2, 10, 40, 2);
  const ModelConfig cfg = config_of(w, TokenizerKind::Word);
  const Batch batch = make_batch({"a b c d e f g h i j"}, cfg, w);
  Result<ForwardOutput> out = forward(w, cfg, batch);
  ASSERT_TRUE(out.ok()) << out.error().message;
  const int T = out->T;
  ASSERT_GT(T, 3);
  for (int h = 0; h < 4; ++h)
    for (int t = 0; t < T; ++t) {
      float local = 0, global = 0;
      for (int s = 0; s < T; ++s) {
        const float wl = out->weights(0, 0, h)[t * T + s], wg = out->weights(1, 0, h)[t * T + s];
        if (t - s >= 3 || s > t) EXPECT_EQ(wl, 0.0f) << "local layer, query " << t << " key " << s;
        if (s <= t) EXPECT_GT(wg, 0.0f) << "global layer, query " << t << " key " << s;
        local += wl, global += wg;
      }
      EXPECT_NEAR(local, 1.0f, 1e-5);
      EXPECT_NEAR(global, 1.0f, 1e-5);
    }
}

// Llama 3.1's rule, numbers worked by hand: theta 10000 over 8 rotated dims gives wavelengths
// 2π, 20π, 200π, 2000π; with original context 100, low 1, high 4, factor 8: 2π < 25 stays,
// 2000π > 100 is divided by 8, and 20π (62.8) is blended with smooth = (100/62.8 - 1) / 3.
TEST(Families, Llama3RopeScalingFollowsThePublishedRule) {
  Arch a;
  a.positions = PositionKind::Rotary;
  a.rope_theta = 10000.0f;
  a.rope_scaling = RopeScaling::Llama3;
  a.rope_factor = 8.0f;
  a.rope_low_freq_factor = 1.0f;
  a.rope_high_freq_factor = 4.0f;
  a.rope_original_context = 100;
  const std::vector<double> f = rope_inv_freq(a, 8, false);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_DOUBLE_EQ(f[0], 1.0);
  const double pi = 3.14159265358979323846, f1 = 0.1, smooth = (100.0 / (2 * pi / f1) - 1.0) / 3.0;
  EXPECT_NEAR(f[1], (1 - smooth) * f1 / 8 + smooth * f1, 1e-12);
  EXPECT_NEAR(f[2], 0.01 / 8, 1e-15);  // 200π = 628 > 100
  EXPECT_NEAR(f[3], 0.001 / 8, 1e-15);
  a.rope_scaling = RopeScaling::Linear;
  a.rope_factor = 4.0f;
  EXPECT_NEAR(rope_inv_freq(a, 8, false)[1], 0.1 / 4, 1e-15);
  a.rope_local_theta = 100.0f;  // Gemma 3's local layers: their own theta, unscaled
  EXPECT_NEAR(rope_inv_freq(a, 8, true)[1], std::pow(100.0, -0.25), 1e-12);
}

// config.json as real files write it: Gemma 3 in transformers v5's per-layer-type
// rope_parameters with layer_types; Pythia's rotary_pct and rotary_emb_base; GPT-Neo's
// attention_types; Qwen3's head_dim independent of D.
TEST(Families, ConfigJsonSettingsAreRead) {
  Result<HfModelConfig> g = parse_hf_config(R"({"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 1, "head_dim": 32, "num_hidden_layers": 3, "intermediate_size": 96, "vocab_size": 100,
    "max_position_embeddings": 512, "sliding_window": 8, "query_pre_attn_scalar": 32,
    "layer_types": ["sliding_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0},
                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}})", "gemma3/config.json");
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->arch.windows, (std::vector<int>{8, 8, 0}));
  EXPECT_EQ(g->arch.rope_theta, 1000000.0f);
  EXPECT_EQ(g->arch.rope_local_theta, 10000.0f);
  EXPECT_EQ(g->arch.rope_scaling, RopeScaling::Linear);
  EXPECT_EQ(g->arch.placement, NormPlacement::Sandwich);
  EXPECT_TRUE(g->arch.norm_plus_one && g->arch.qk_norm && g->arch.embed_scale && g->arch.tied);
  EXPECT_EQ(g->arch.num_kv_heads, 1);
  EXPECT_EQ(g->arch.head_dim, 32);

  Result<HfModelConfig> p = parse_hf_config(R"({"model_type": "gpt_neox", "hidden_size": 64, "num_attention_heads": 4,
    "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 100, "max_position_embeddings": 2048,
    "rotary_pct": 0.25, "rotary_emb_base": 10000, "hidden_act": "gelu", "use_parallel_residual": true})", "pythia/config.json");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->arch.rotary_dims(16), 4);
  EXPECT_EQ(p->arch.placement, NormPlacement::Parallel);
  EXPECT_EQ(p->arch.mlp, MlpKind::GeluErf);
  EXPECT_FALSE(p->arch.tied);

  Result<HfModelConfig> n = parse_hf_config(R"({"model_type": "gpt_neo", "hidden_size": 64, "num_heads": 4, "num_layers": 4,
    "vocab_size": 100, "max_position_embeddings": 256, "window_size": 16, "intermediate_size": null,
    "attention_types": [[["global", "local"], 2]], "activation_function": "gelu_new"})", "neo/config.json");
  ASSERT_TRUE(n.ok()) << n.error().message;
  EXPECT_EQ(n->arch.windows, (std::vector<int>{0, 16, 0, 16}));
  EXPECT_EQ(n->arch.score_scale, ScoreScale::None);
  EXPECT_FALSE(n->arch.fixed_heads());  // learned positions: H may re-slice the weights, as GPT-2's

  Result<HfModelConfig> q = parse_hf_config(R"({"model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 28, "intermediate_size": 3072, "vocab_size": 151936,
    "max_position_embeddings": 40960, "rope_theta": 1000000, "hidden_act": "silu", "tie_word_embeddings": true})", "qwen3/config.json");
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->num_heads * q->head_dim, 2048);
  EXPECT_EQ(q->arch.num_kv_heads, 8);
  EXPECT_TRUE(q->arch.qk_norm);
  EXPECT_EQ(arch_steps(q->arch, 16, 128), "RMSNorm, RoPE (theta 1e+06), q/k norm, K/V repeat x2, SiLU-gated MLP, tied unembedding");
}

// The four families added as table entries (issue 36): each one's quirk read from its config.
TEST(Families, NewFamiliesQuirksAreRead) {
  Result<HfModelConfig> p3 = parse_hf_config(R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 100, "max_position_embeddings": 64,
    "original_max_position_embeddings": 8, "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1, 1, 1, 1, 2],
    "long_factor": [2, 2, 2, 2, 2, 2, 2, 4]}})", "phi3/config.json");
  ASSERT_TRUE(p3.ok()) << p3.error().message;
  EXPECT_EQ(p3->arch.rope_scaling, RopeScaling::LongRope);
  EXPECT_EQ(p3->arch.rope_original_context, 8);
  EXPECT_NEAR(p3->arch.rope_attention_factor, std::sqrt(2.0), 1e-6) << "sqrt(1 + ln(64/8) / ln 8)";
  EXPECT_EQ(p3->arch.rope_long_factors.back(), 4.0f);
  const std::vector<double> shrt = rope_inv_freq(p3->arch, 16, false), lng = rope_inv_freq(p3->arch, 16, false, true);
  EXPECT_NEAR(shrt[7] / lng[7], 2.0, 1e-12);
  EXPECT_NE(arch_steps(p3->arch, 4, 16).find("longrope"), std::string::npos);
  EXPECT_EQ(parse_hf_config(R"({"model_type": "phi3", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
    "intermediate_size": 96, "vocab_size": 100, "rope_scaling": {"type": "longrope", "short_factor": [1, 1],
    "long_factor": [2, 2]}, "original_max_position_embeddings": 8})", "c").ok(), false) << "factors of the wrong length";

  Result<HfModelConfig> phi = parse_hf_config(R"({"model_type": "phi", "hidden_size": 64, "num_attention_heads": 4,
    "num_hidden_layers": 2, "intermediate_size": 256, "vocab_size": 100, "max_position_embeddings": 2048})", "phi/config.json");
  ASSERT_TRUE(phi.ok()) << phi.error().message;
  EXPECT_EQ(phi->arch.placement, NormPlacement::Parallel);
  EXPECT_EQ(phi->arch.rotary_dims(16), 8) << "partial_rotary_factor 0.5 by default";
  EXPECT_TRUE(phi->arch.attn_bias && phi->arch.out_bias && phi->arch.mlp_bias && !phi->arch.tied);
  EXPECT_EQ(phi->arch.mlp, MlpKind::GeluTanh);

  Result<HfModelConfig> o = parse_hf_config(R"({"model_type": "olmo2", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 100})", "olmo2/config.json");
  ASSERT_TRUE(o.ok()) << o.error().message;
  EXPECT_EQ(o->arch.placement, NormPlacement::PostOutput);
  EXPECT_TRUE(o->arch.qk_norm && o->arch.qk_norm_whole);

  Result<HfModelConfig> sm = parse_hf_config(R"({"model_type": "smollm3", "hidden_size": 64, "num_attention_heads": 4,
    "num_key_value_heads": 2, "num_hidden_layers": 8, "intermediate_size": 96, "vocab_size": 100})", "smollm3/config.json");
  ASSERT_TRUE(sm.ok()) << sm.error().message;
  EXPECT_EQ(sm->arch.no_rope_layers, (std::vector<uint8_t>{0, 0, 0, 1, 0, 0, 0, 1})) << "every fourth layer by default";
  EXPECT_TRUE(sm->arch.rope_on(0) && !sm->arch.rope_on(3));
  EXPECT_NE(arch_steps(sm->arch, 4, 16).find("no RoPE on layers 3, 7"), std::string::npos) << arch_steps(sm->arch, 4, 16);
  sm = parse_hf_config(R"({"model_type": "smollm3", "hidden_size": 64, "num_attention_heads": 4, "no_rope_layers": [1, 0],
    "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 96, "vocab_size": 100})", "smollm3/config.json");
  ASSERT_TRUE(sm.ok()) << sm.error().message;
  EXPECT_EQ(sm->arch.no_rope_layers, (std::vector<uint8_t>{0, 1}));
  ModelWeights w;
  w.arch = sm->arch;
  ModelConfig cfg;
  cfg.d_model = 64, cfg.num_heads = 4, cfg.num_layers = 2;
  EXPECT_FALSE(mha_options(cfg, w, 0).rope_inv_freq.empty());
  EXPECT_TRUE(mha_options(cfg, w, 1).rope_inv_freq.empty()) << "a NoPE layer rotates nothing";
}

// OLMo 2's q/k norm over all heads, longrope past its original context (attention factor
// included) and a NoPE layer: the step-through and the hover score hold to the fast path.
TEST(Families, TraceAndHoverMatchTheFastPathOnTheNewQuirks) {
  Arch a = every_quirk();
  a.qk_norm = false;  // the fixture's per-head norms replaced below
  a.rope_scaling = RopeScaling::LongRope;
  a.rope_original_context = 4;  // the text is longer
  a.rope_short_factors = {1.0f, 1.5f}, a.rope_long_factors = {3.0f, 9.0f};  // rot/2 = 2 of dh 10 at fraction 0.5
  a.rope_attention_factor = 1.3f;
  a.no_rope_layers = {0, 1};
  a.qk_norm = a.qk_norm_whole = true;
  ModelWeights w = family_model(a, 24, 4, 2, 10, 40, 2);
  for (LayerWeights& lw : w.layers)
    lw.q_norm = RowVec::Ones(40) + normals(7, 1, 40, 0.3f), lw.k_norm = RowVec::Ones(20) + normals(8, 1, 20, 0.3f);
  const ModelConfig cfg = config_of(w, TokenizerKind::Word);
  const Batch batch = make_batch({"one two three four five six seven eight nine"}, cfg, w);
  for (int l = 0; l < 2; ++l)
    for (int h = 0; h < 4; ++h) {
      ForwardOptions opt;
      opt.keep_layer_io = true;
      opt.trace = TraceRequest{l, 0, h};
      Result<ForwardOutput> out = forward(w, cfg, batch, opt);
      ASSERT_TRUE(out.ok()) << out.error().message;
      const HeadTrace& tr = *out->trace;
      const int T = out->T;
      EXPECT_EQ(tr.rope_inv_freq.empty(), l == 1) << "layer 1 is a NoPE layer";
      MhaOptions mo = mha_options(cfg, w, l);
      mo.rope_seq_len = T;
      const MatR& x = out->attn_in[static_cast<size_t>(l)];
      for (int t = 0; t < T; ++t)
        for (int s = 0; s < T; ++s) {
          EXPECT_NEAR(tr.weights(t, s), out->weights(l, 0, h)[t * T + s], 2e-5) << "layer " << l << " head " << h;
          const float score = head_score(w.layers[static_cast<size_t>(l)], x.row(t).data(), x.row(s).data(), h, mo, t, s);
          EXPECT_NEAR(score, tr.scores(t, s), 1e-4f * std::max(1.0f, std::abs(score)));
        }
    }
}

// What headmap cannot open says so, naming the family and what to do.
TEST(Families, UnsupportedSettingsAreRefusedByName) {
  auto message = [](const std::string& json) {
    Result<HfModelConfig> c = parse_hf_config(json, "config.json");
    return c.ok() ? std::string("(accepted)") : c.error().message;
  };
  EXPECT_NE(message(R"({"model_type": "t5", "hidden_size": 8})").find("llama, mistral, qwen2, qwen3"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "bert", "hidden_size": 8})").find("BERT: \"num_attention_heads\" is missing"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1, "vocab_size": 10,
    "max_position_embeddings": 8, "intermediate_size": 16, "position_embedding_type": "relative_key"})").find("relative_key"), std::string::npos);
  EXPECT_NE(message(R"({"model_type": "gemma3", "text_config": {}, "vision_config": {}})").find("multimodal"), std::string::npos);
  const std::string yarn = message(R"({"model_type": "llama", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
    "vocab_size": 10, "intermediate_size": 16, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}})");
  EXPECT_NE(yarn.find("Llama"), std::string::npos) << yarn;
  EXPECT_NE(yarn.find("yarn"), std::string::npos) << yarn;
  EXPECT_NE(message(R"({"model_type": "qwen2", "hidden_size": 12, "num_attention_heads": 3, "num_key_value_heads": 2,
    "num_hidden_layers": 1, "vocab_size": 10, "intermediate_size": 16})").find("K/V heads"), std::string::npos);
}

// The passport shows the family's steps and shapes; GPT-2's block shows none of them.
TEST(Families, PassportShowsTheFamilysSteps) {
  const ModelWeights w = family_model(every_quirk(), 24, 4, 2, 10, 40, 2);
  const ModelConfig cfg = config_of(w, TokenizerKind::Word);
  const Passport p = make_passport(cfg, 1, 9, 0, 0, &w.arch);
  for (const char* id : {"rope", "qk_norm", "softcap", "k_repeat"}) EXPECT_NE(p.find(id), nullptr) << id;
  ASSERT_NE(p.find("concat"), nullptr);
  EXPECT_EQ(p.find("concat")->concrete, (Shape{1, 9, 40}));  // H·d_head, not D
  EXPECT_EQ(p.find("fc")->concrete, (Shape{1, 9, 40}));      // F
  EXPECT_EQ(p.kv_cache_bytes_per_token, 2 * 2 * 2 * 10 * 4);
  const Arch gpt2;
  const Passport q = make_passport(ModelConfig(), 1, 9, 0, 0, &gpt2);
  EXPECT_EQ(q.find("rope"), nullptr);
  EXPECT_TRUE(q.family.empty());
}

// The memory budget counts a family model's real sizes (issue 25): d_head independent of D,
// K/V heads, the gated MLP's three matrices, an untied lm_head, Gemma 2/3's extra norms, q/k
// norms. weights_bytes of family_weights_shape equals the floats a model of that Arch holds
// (every matrix and vector of ModelWeights, counted here from the model itself); and the
// bytes a weight takes scale the matrices and embeddings, so narrow weights only set it.
TEST(Families, MemoryBudgetCountsTheFamilysRealSizes) {
  for (bool untied : {false, true}) {
    Arch a = every_quirk();
    a.placement = NormPlacement::Sandwich;  // family_model holds every vector a family can have
    const int D = 32, H = 4, KV = 2, dh = 12, F = 40, L = 2, V = 50;
    a.num_heads = H, a.num_kv_heads = KV, a.head_dim = dh, a.mlp_width = F;
    ModelWeights w = family_model(a, D, H, KV, dh, F, L);
    w.tok_emb = normals(1, V, D, 0.1f);
    if (untied) w.lm_head = normals(2, V, D, 0.1f);
    w.lnf_g = RowVec::Ones(D), w.lnf_b = RowVec::Zero(D);
    uint64_t held = static_cast<uint64_t>(w.tok_emb.size() + w.lm_head.size() + w.pos_emb.size() + w.lnf_g.size() + w.lnf_b.size());
    for (const LayerWeights& lw : w.layers) {
      for (const MatR* m : {&lw.w_q, &lw.w_k, &lw.w_v}) held += static_cast<uint64_t>(m->size());
      for (const PackedMatrix* m : {&lw.w_o, &lw.w_fc, &lw.w_proj, &lw.w_gate, &lw.w_qkv}) held += static_cast<uint64_t>(m->rows() * m->cols());
      for (const RowVec* v : {&lw.ln1_g, &lw.ln1_b, &lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o, &lw.ln2_g, &lw.ln2_b, &lw.b_fc, &lw.b_proj, &lw.q_norm,
                              &lw.k_norm, &lw.post_attn_g, &lw.post_mlp_g, &lw.b_qkv})
        held += static_cast<uint64_t>(v->size());
    }
    WeightsShape s = family_weights_shape(w.arch, D, L, V, 0, untied, "F32");
    EXPECT_EQ(family_weights_shape(w.arch, D, L, V, 0, untied, "BF16").bytes_per_weight, 2u);  // kept 16-bit
    EXPECT_EQ(s.H, uint64_t(H));
    EXPECT_EQ(s.KV, uint64_t(KV));
    EXPECT_EQ(s.d_head, uint64_t(dh));
    EXPECT_EQ(weights_bytes(s), 4 * held) << (untied ? "untied" : "tied");
    // Two bytes a weight: the packed matrices and embeddings halve; the float32 vectors and
    // the plain W_Q, W_K, W_V (read by the step-through) stay.
    const uint64_t four = weights_bytes(s);
    s.bytes_per_weight = 2;
    const uint64_t matrices = uint64_t(L) * (D * (H * dh + 2 * KV * dh) + H * dh * D + 3 * D * F) + (untied ? 2 : 1) * uint64_t(V) * D;
    EXPECT_EQ(four - weights_bytes(s), 2 * matrices);
  }
  // GPT-2's block: the same formula (one head of D, F = 4D, tied, learned positions).
  const ModelWeights g = random_weights(24, 2, 7);
  uint64_t held = static_cast<uint64_t>(g.pos_emb.size() + g.lnf_g.size() + g.lnf_b.size());
  for (const LayerWeights& lw : g.layers) {
    for (const MatR* m : {&lw.w_q, &lw.w_k, &lw.w_v}) held += static_cast<uint64_t>(m->size());
    for (const PackedMatrix* m : {&lw.w_o, &lw.w_fc, &lw.w_proj, &lw.w_qkv}) held += static_cast<uint64_t>(m->rows() * m->cols());
    for (const RowVec* v : {&lw.ln1_g, &lw.ln1_b, &lw.b_q, &lw.b_k, &lw.b_v, &lw.b_o, &lw.ln2_g, &lw.ln2_b, &lw.b_fc, &lw.b_proj, &lw.b_qkv})
      held += static_cast<uint64_t>(v->size());
  }
  const uint64_t final_norm = g.lnf_g.size() == 0 ? 2 * 24 : 0;  // random weights have none; the formula counts LN_f's g and b
  EXPECT_EQ(model_weights_bytes(24, 2, 0, static_cast<uint64_t>(g.pos_emb.rows())), 4 * (held + final_norm));
}
