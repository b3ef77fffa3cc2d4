// The shape passport: shapes equal the tensors really computed, the course's table is
// reproduced row for row, and the attention's parameter count does not move with H.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/model/arch.h"
#include "core/model/attention.h"
#include "core/model/model.h"
#include "core/inspect/passport.h"
#include "test_util.h"

using namespace headmap;
using namespace headmap::test;

// Every attention step's shape is the shape of the tensor the course's code produced.
TEST(Passport, ShapesEqualTheComputedTensors) {
  struct Case { int B, T, D, H; Pitfalls p; };
  Pitfalls inter;
  inter.interleaved_reshape = true;
  Pitfalls avg;
  avg.head_averaged = true;
  avg.no_w_o = true;
  for (const Case c : {Case{2, 10, 24, 4, {}}, Case{1, 7, 96, 6, {}}, Case{3, 1, 16, 16, {}}, Case{2, 5, 32, 4, inter},
                       Case{2, 6, 24, 3, avg}}) {
    ModelConfig cfg = config(c.D, c.H, 2);
    cfg.pitfalls = c.p;
    const Passport p = make_passport(cfg, c.B, c.T);
    MhaOptions o;
    o.num_heads = c.H;
    o.pitfalls = c.p;
    Tensor x({c.B, c.T, c.D});
    const MatR xm = random_matrix(c.B * c.T, c.D, 5);
    std::copy(xm.data(), xm.data() + xm.size(), x.data.begin());
    const auto tensors = mha_explicit(random_layer(c.D, 6), x, o);
    int checked = 0;
    for (const auto& [id, t] : tensors) {
      const PassportStep* s = p.find(id);
      if (!s) continue;  // k_heads, v_heads: the passport shows Q's path for all three
      EXPECT_EQ(s->concrete, t.shape) << id;
      ++checked;
    }
    EXPECT_GE(checked, 11);
    EXPECT_EQ(p.find("attn_in")->concrete, x.shape);
    // ...and the model's own outputs: out (B,T,D) per layer and attention (L,B,Hw,T,T).
    const ModelWeights w = random_weights(c.D, 2, 1);
    std::vector<std::string> lines;
    for (int b = 0; b < c.B; ++b) {
      std::string s;
      for (int t = 0; t < c.T; ++t) s += "w" + std::to_string(t) + " ";
      lines.push_back(s);
    }
    ForwardOptions fo;
    fo.keep_layer_io = true;
    const ForwardOutput out = forward(w, cfg, make_batch(lines, cfg, w), fo).value();
    EXPECT_EQ(shape_numel(p.find("attention")->concrete), static_cast<int64_t>(out.attention.size()));
    EXPECT_EQ(p.find("attention")->concrete, (Shape{out.L, out.B, out.Hw, out.T, out.T}));
    EXPECT_EQ(p.find("out")->concrete, (Shape{out.B, out.T, out.attn_out[0].cols()}));
  }
}

// The lesson's table for batch=2, seq=10, d_model=512, heads=8, row for row.
TEST(Passport, ReproducesTheReshapeTable) {
  const Passport p = make_passport(config(512, 8, 1), 2, 10);
  const std::vector<std::pair<std::string, Shape>> table = {
      {"attn_in", {2, 10, 512}},    // input x
      {"q", {2, 10, 512}},          // after W_q(x)
      {"q_view", {2, 10, 8, 64}},   // after .view(2, 10, 8, 64)
      {"q_heads", {2, 8, 10, 64}},  // after .transpose(1, 2)
      {"scores", {2, 8, 10, 10}},   // scores
      {"ctx", {2, 8, 10, 64}},      // attention computation
      {"ctx_t", {2, 10, 8, 64}},    // after .transpose(1, 2)
      {"concat", {2, 10, 512}},     // after .contiguous().view(2, 10, 512)
      {"out", {2, 10, 512}},        // after W_o(x)
  };
  size_t pos = 0;
  for (const auto& [id, shape] : table) {
    while (pos < p.steps.size() && p.steps[pos].id != id) ++pos;
    ASSERT_LT(pos, p.steps.size()) << id << " missing or out of order";
    EXPECT_EQ(p.steps[pos].concrete, shape) << id;
  }
  EXPECT_EQ(p.find("q_view")->formula, "Q.view(B, T, H, d_head)");
  EXPECT_EQ(p.find("q_heads")->symbolic_str(), "(B, H, T, d_head)");
  EXPECT_TRUE(p.find("q_view")->view);
}

// Exercise 2 and the lesson's "parameter count is conserved".
TEST(Passport, AttentionParametersDoNotDependOnH) {
  for (int D : {24, 64, 512}) {
    const int64_t expected = 2 * 4 * (static_cast<int64_t>(D) * D + D);  // L = 2
    for (int H : valid_head_counts(D)) {
      const Passport p = make_passport(config(D, H, 2), 1, 8);
      EXPECT_EQ(p.attention_params, expected) << "D=" << D << " H=" << H;
    }
  }
  const Passport p1 = make_passport(config(64, 1, 2), 1, 8), p8 = make_passport(config(64, 8, 2), 1, 8);
  EXPECT_EQ(p1.total_params, p8.total_params);
  // Attention FLOPs are conserved too: H heads x d_head = D.
  EXPECT_EQ(p1.find("scores")->flops, p8.find("scores")->flops);
}

// An encoder's passport lists its steps in the order it computes them: token types and the
// embeddings' LayerNorm in the input; post-norm layers (attention reads x; add, then
// LayerNorm 1; the MLP reads that; add, then LayerNorm 2), with their shapes.
TEST(Passport, EncodersListThePostNormOrder) {
  Arch a;
  a.norm = NormKind::LayerNorm;
  a.placement = NormPlacement::PostNorm;
  a.positions = PositionKind::Learned;
  a.bidirectional = true;
  a.embed_norm = true;
  a.token_types = 2;
  a.mlp = MlpKind::GeluErf;
  ModelConfig cfg = config(32, 4, 2);
  cfg.causal = false;
  const Passport p = make_passport(cfg, 1, 9, 100, 64, &a);
  std::vector<std::string> names;
  for (const PassportStep& s : p.steps) names.push_back(s.section.substr(0, 3) + ":" + s.name);
  auto at = [&](const std::string& n) {
    const auto it = std::find(names.begin(), names.end(), n);
    EXPECT_NE(it, names.end()) << n << " is missing";
    return static_cast<int>(it - names.begin());
  };
  const int types = at("inp:+ token types"), emb_ln = at("inp:embedding LayerNorm"), embed = at("inp:embed + position");
  EXPECT_LT(embed, types);
  EXPECT_LT(types, emb_ln);
  const int q = at("att:Q projection"), out = at("att:output projection"), add1 = at("att:residual"), ln1 = at("att:LayerNorm 1");
  const int fc = at("MLP:expand + GELU"), add2 = at("MLP:residual"), ln2 = at("MLP:LayerNorm 2");
  EXPECT_LT(emb_ln, q);
  EXPECT_LT(q, out);
  EXPECT_LT(out, add1);
  EXPECT_LT(add1, ln1);  // post-norm: the norm after the residual, not before attention
  EXPECT_LT(ln1, fc);
  EXPECT_LT(fc, add2);
  EXPECT_LT(add2, ln2);
  EXPECT_EQ(std::count(names.begin(), names.end(), "att:LayerNorm 1"), 1);
  EXPECT_EQ(std::count(names.begin(), names.end(), "MLP:LayerNorm 2"), 1);
  for (const char* id : {"x_types", "x_norm", "attn_norm", "mlp_norm"}) {
    const PassportStep* s = p.find(id);
    ASSERT_NE(s, nullptr) << id;
    EXPECT_EQ(s->concrete, (Shape{1, 9, 32})) << id;
  }
  // A pre-norm model keeps LayerNorm 1 before attention.
  Arch pre = a;
  pre.placement = NormPlacement::PreNorm;
  const Passport pp = make_passport(cfg, 1, 9, 100, 64, &pre);
  ASSERT_NE(pp.find("attn_in"), nullptr);
  EXPECT_EQ(pp.find("attn_norm"), nullptr);
}

// An encoder keeps no K/V cache (bidirectional: text appended changes every token's K and
// V), so its passport says why in one line, with no bytes per token; a causal family with
// the same shapes keeps its cache line.
TEST(Passport, EncodersShowWhyThereIsNoKvCache) {
  Arch enc;
  enc.norm = NormKind::LayerNorm;
  enc.placement = NormPlacement::PostNorm;
  enc.positions = PositionKind::Learned;
  enc.bidirectional = true;
  enc.name = "BERT";
  ModelConfig cfg = config(32, 4, 2);
  cfg.causal = false;
  const Passport p = make_passport(cfg, 1, 9, 100, 64, &enc);
  EXPECT_EQ(p.kv_cache_bytes_per_token, 0);
  EXPECT_NE(p.kv_cache_line.find("no K/V cache"), std::string::npos) << p.kv_cache_line;
  EXPECT_NE(p.kv_cache_line.find("both ways"), std::string::npos) << p.kv_cache_line;
  EXPECT_EQ(p.kv_cache_line.find("bytes per token"), std::string::npos) << p.kv_cache_line;
  EXPECT_EQ(p.attention_formula.find("K/V cache"), std::string::npos) << p.attention_formula;
  EXPECT_EQ(passport_table(p).find("bytes per token"), std::string::npos);

  Arch dec = enc;
  dec.bidirectional = false;
  dec.placement = NormPlacement::PreNorm;
  cfg.causal = true;
  const Passport d = make_passport(cfg, 1, 9, 100, 64, &dec);
  EXPECT_GT(d.kv_cache_bytes_per_token, 0);
  EXPECT_NE(d.kv_cache_line.find("bytes per token"), std::string::npos) << d.kv_cache_line;
}
