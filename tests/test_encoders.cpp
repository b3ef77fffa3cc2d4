// Encoders (issue 27): BERT, RoBERTa and DistilBERT's config.json read into the family seam,
// sentence pairs with token types, a masked token that keeps its id for the masked-token loss,
// no causal mask with padding keys hidden, and the passport's encoder steps. The full models
// against a float64 numpy forward are the ctest encoders_match_numpy
// (tests/reference/encoder_reference.py); their tokens against the official tokenizers,
// encoder_tokens_match_official.
//
// B = batch, T = tokens, D = d_model, H = heads, V = vocab
#include <gtest/gtest.h>

#include <cmath>

#include "core/inspect/metrics.h"
#include "core/inspect/passport.h"
#include "core/io/hf_model.h"
#include "core/math/rng.h"
#include "core/model/model.h"
#include "test_util.h"

using namespace headmap;

namespace {
using test::kTestData;

MatR normals(uint64_t key, int rows, int cols, float s) {
  MatR m(rows, cols);
  fill_normals(key, m.data(), m.size(), s);
  return m;
}

// A tiny BERT in memory on the WordPiece test tokenizer: post-norm, token types, a masked-LM head.
ModelWeights tiny_bert() {
  auto tok = HfTokenizer::load(kTestData + "/tokenizers/wordpiece_bert.json");
  EXPECT_TRUE(tok.ok());
  ModelWeights w;
  const int D = 8, V = tok->vocab_size(), F = 16;
  w.hf_tokenizer = std::make_shared<const HfTokenizer>(*tok);
  w.d_model = D;
  w.context = 32;
  w.ln_eps = 1e-12f;
  Result<HfModelConfig> c = parse_hf_config(R"({"model_type": "bert", "hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
    "vocab_size": 200, "max_position_embeddings": 32, "intermediate_size": 16, "type_vocab_size": 2})", "config.json");
  EXPECT_TRUE(c.ok());
  w.arch = c->arch;
  w.arch.mlm_head = true;
  w.tok_emb = normals(1, V, D, 0.5f);
  w.pos_emb = normals(2, 32, D, 0.2f);
  w.type_emb = normals(3, 2, D, 0.5f);
  w.emb_ln_g = RowVec::Ones(D), w.emb_ln_b = RowVec::Zero(D);
  LayerWeights lw;
  lw.w_q = normals(4, D, D, 0.5f), lw.w_k = normals(5, D, D, 0.5f), lw.w_v = normals(6, D, D, 0.4f);
  lw.w_o = PackedMatrix(normals(7, D, D, 0.3f));
  lw.b_q = lw.b_k = lw.b_v = lw.b_o = RowVec::Zero(D);
  lw.ln1_g = lw.ln2_g = RowVec::Ones(D), lw.ln1_b = lw.ln2_b = RowVec::Zero(D);
  lw.w_fc = PackedMatrix(normals(8, D, F, 0.3f)), lw.w_proj = PackedMatrix(normals(9, F, D, 0.2f));
  lw.b_fc = RowVec::Zero(F), lw.b_proj = RowVec::Zero(D);
  lw.fuse();
  w.layers.push_back(std::move(lw));
  w.lnf_g = RowVec::Ones(D), w.lnf_b = RowVec::Zero(D);
  w.mlm_dense = normals(10, D, D, 0.4f), w.mlm_dense_b = RowVec::Zero(D);
  w.mlm_ln_g = RowVec::Ones(D), w.mlm_ln_b = RowVec::Zero(D), w.mlm_bias = normals(11, 1, V, 0.1f);
  w.source.kind = WeightsSource::Kind::Pretrained;
  w.source.trained_heads = 2;
  return w;
}
}  // namespace

TEST(Encoders, ConfigJsonIsReadIntoTheFamilySeam) {
  Result<HfModelConfig> bert = parse_hf_config(R"({"model_type": "bert", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
    "vocab_size": 100, "max_position_embeddings": 64, "intermediate_size": 48, "type_vocab_size": 2, "layer_norm_eps": 1e-12})", "config.json");
  ASSERT_TRUE(bert.ok()) << bert.error().message;
  EXPECT_EQ(bert->arch.placement, NormPlacement::PostNorm);
  EXPECT_TRUE(bert->arch.bidirectional && bert->arch.embed_norm);
  EXPECT_EQ(bert->arch.token_types, 2);
  EXPECT_EQ(bert->arch.position_offset, 0);
  EXPECT_EQ(bert->arch.mlp, MlpKind::GeluErf);
  EXPECT_FLOAT_EQ(bert->arch.norm_eps, 1e-12f);
  Result<HfModelConfig> roberta = parse_hf_config(R"({"model_type": "roberta", "hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 2,
    "vocab_size": 100, "max_position_embeddings": 66, "intermediate_size": 48, "type_vocab_size": 1, "pad_token_id": 1})", "config.json");
  ASSERT_TRUE(roberta.ok()) << roberta.error().message;
  EXPECT_EQ(roberta->arch.position_offset, 2);  // past padding_idx 1
  EXPECT_EQ(roberta->arch.token_types, 1);
  Result<HfModelConfig> distil = parse_hf_config(R"({"model_type": "distilbert", "dim": 32, "n_heads": 4, "n_layers": 2, "hidden_dim": 48,
    "vocab_size": 100, "max_position_embeddings": 64, "activation": "gelu"})", "config.json");
  ASSERT_TRUE(distil.ok()) << distil.error().message;
  EXPECT_EQ(distil->arch.token_types, 0);
  EXPECT_EQ(distil->num_layers, 2);
  EXPECT_EQ(distil->mlp_width, 48);
}

// A pair's tokens carry their types, a masked token keeps its id, and the loss is the masked
// token's own cross-entropy. Every real key is visible both ways; padding keys get 0.
TEST(Encoders, PairsMaskedTokensAndPaddingInABatch) {
  const ModelWeights w = tiny_bert();
  const ModelConfig cfg = config_for_weights(w, ModelConfig());
  EXPECT_FALSE(cfg.causal);
  BatchExtras ex;
  ex.pairs = {"the dog ran", ""};
  ex.masked = {{0, 2}};
  const Batch batch = make_batch({"hello there cat", "cat"}, cfg, w, &ex);
  ASSERT_EQ(batch.B(), 2);
  const std::vector<Token>& s0 = batch.sentences[0].tokens;
  ASSERT_GE(s0.size(), 6u);
  EXPECT_TRUE(s0.front().added);
  EXPECT_EQ(s0.front().segment, 0);
  EXPECT_EQ(s0.back().type, 1);
  EXPECT_EQ(s0.back().segment, 1);
  int b_tokens = 0;
  for (const Token& t : s0) b_tokens += t.segment == 1;
  EXPECT_GE(b_tokens, 3);
  const int mask = mask_token_id(w);
  ASSERT_GE(mask, 0);
  EXPECT_EQ(s0[2].id, mask);
  ASSERT_GE(s0[2].masked_id, 0);
  const int target = s0[2].masked_id;
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> out = forward(w, cfg, batch, fo);
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->loss_tokens, 1);
  const auto row = out->logits.row(2).cast<double>();
  const double lse = std::log((row.array() - row.maxCoeff()).exp().sum()) + row.maxCoeff();
  EXPECT_NEAR(out->loss, lse - row(target), 1e-5);
  const int T = batch.T, n1 = batch.lengths[1];
  ASSERT_LT(n1, T);
  double above = 0, padding = 0;
  for (int h = 0; h < out->H; ++h) {
    const float* m0 = out->weights(0, 0, h);
    for (int t = 0; t < T; ++t)
      for (int s = t + 1; s < T; ++s) above += m0[t * T + s];  // keys after the query: seen
    const float* m1 = out->weights(0, 1, h);
    for (int t = 0; t < T; ++t)
      for (int s = n1; s < T; ++s) padding += m1[t * T + s];
  }
  EXPECT_GT(above, 0.5);
  EXPECT_EQ(padding, 0.0);
}

TEST(Encoders, PassportShowsTheEncoderSteps) {
  const ModelWeights w = tiny_bert();
  const ModelConfig cfg = config_for_weights(w, ModelConfig());
  const Passport p = make_passport(cfg, 1, 9, w.vocab_size(), w.context, &w.arch);
  for (const char* part : {"post-norm", "no causal mask", "token type", "LayerNorm of the embeddings", "masked-LM head"})
    EXPECT_NE(p.family.find(part), std::string::npos) << part << " in " << p.family;
}

// The encoder heads' kinds: a head that reads the next token, and one that rests on [SEP].
TEST(Encoders, NextTokenAndSepSinkHeadsAreLabelled) {
  Batch batch;
  TokenizedText tt;
  for (int t = 0; t < 5; ++t) {
    Token tok;
    tok.text = t == 0 ? "[CLS]" : t == 4 ? "[SEP]" : "w";
    tok.added = t == 0 || t == 4;
    tt.tokens.push_back(tok);
  }
  batch.sentences.push_back(tt);
  batch.lengths = {5};
  batch.T = 5;
  ForwardOutput out;
  out.L = out.B = 1, out.H = out.Hw = 2, out.T = 5;
  out.attention.assign(2 * 25, 0.0f);
  for (int t = 0; t < 5; ++t) {
    out.attention[static_cast<size_t>(t) * 5 + std::min(t + 1, 4)] = 1.0f;  // head 0: the next token
    out.attention[25 + static_cast<size_t>(t) * 5 + 4] = 1.0f;             // head 1: [SEP]
  }
  const std::vector<HeadMetrics> m = head_metrics(out, batch);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_FLOAT_EQ(m[0].next_token, 1.0f);
  EXPECT_EQ(head_label(m[0], 0.0f), HeadLabel::NextToken);
  EXPECT_FLOAT_EQ(m[1].sep_sink, 1.0f);
  EXPECT_EQ(head_label(m[1], 0.0f), HeadLabel::SepSink);
  EXPECT_STREQ(head_label_name(HeadLabel::SepSink), "[SEP] sink");
}

// A head that rests on position 0 is a "[CLS] sink" when position 0 is an encoder's [CLS]
// (the post-processor added it and a [SEP] after it), and stays "first-token" when only a
// BOS was added (a causal family's <s>) or nothing was.
TEST(Encoders, ClsSinkHasItsOwnLabel) {
  auto label_of = [](bool cls, bool sep) {
    Batch batch;
    TokenizedText tt;
    for (int t = 0; t < 5; ++t) {
      Token tok;
      tok.text = t == 0 && cls ? "[CLS]" : t == 4 && sep ? "[SEP]" : "w";
      tok.added = (t == 0 && cls) || (t == 4 && sep);
      tt.tokens.push_back(tok);
    }
    batch.sentences.push_back(tt);
    batch.lengths = {5};
    batch.T = 5;
    ForwardOutput out;
    out.L = out.B = out.H = out.Hw = 1, out.T = 5;
    out.attention.assign(25, 0.0f);
    for (int t = 0; t < 5; ++t) out.attention[static_cast<size_t>(t) * 5] = 1.0f;  // every query on position 0
    const std::vector<HeadMetrics> m = head_metrics(out, batch);
    return head_label(m[0], 0.0f);
  };
  EXPECT_EQ(label_of(true, true), HeadLabel::ClsSink);
  EXPECT_STREQ(head_label_name(label_of(true, true)), "[CLS] sink");
  EXPECT_EQ(label_of(true, false), HeadLabel::FirstToken) << "a BOS alone is not a [CLS]";
  EXPECT_EQ(label_of(false, false), HeadLabel::FirstToken);
}
