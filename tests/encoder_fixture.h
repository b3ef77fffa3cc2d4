// encoder_fixture.h: a post-norm encoder (BERT or DistilBERT's shape) in memory, for the core
// and app test suites (test_contrib_encoders.cpp, app/test_patch_cancel.cpp).
//
// D = d_model, H = heads, L = layers, F = MLP width, V = vocab
#pragma once
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/io/hf_model.h"
#include "core/math/rng.h"
#include "core/model/model.h"

namespace headmap::test {

inline RowVec normals_around(uint64_t key, int n, float centre, float s) {
  RowVec v(n);
  fill_normals(key, v.data(), n, s);
  v.array() += centre;
  return v;
}
inline MatR normals_mat(uint64_t key, int rows, int cols, float s) {
  MatR m(rows, cols);
  fill_normals(key, m.data(), m.size(), s);
  return m;
}

struct EncoderShape {
  int D = 16, H = 4, L = 3, F = 32;
  bool distil = false;  // DistilBERT: no token types
  bool mlm = true;      // a masked-LM head
};

// On the WordPiece tokenizer at `tokenizer_json` (tests/data/tokenizers/wordpiece_bert.json),
// every bias and every LayerNorm's g and beta away from 0 and 1, so each part is there to count.
inline ModelWeights post_norm_encoder(const std::string& tokenizer_json, const EncoderShape& z) {
  auto tok = HfTokenizer::load(tokenizer_json);
  EXPECT_TRUE(tok.ok());
  const int D = z.D, V = tok->vocab_size(), F = z.F;
  const std::string sizes = std::to_string(D) + (z.distil ? R"(, "n_heads": )" : R"(, "num_attention_heads": )") + std::to_string(z.H) +
                            (z.distil ? R"(, "n_layers": )" : R"(, "num_hidden_layers": )") + std::to_string(z.L) +
                            (z.distil ? R"(, "hidden_dim": )" : R"(, "intermediate_size": )") + std::to_string(F);
  Result<HfModelConfig> c = parse_hf_config(
      z.distil ? R"({"model_type": "distilbert", "dim": )" + sizes + R"(, "vocab_size": 200, "max_position_embeddings": 128, "activation": "gelu"})"
               : R"({"model_type": "bert", "hidden_size": )" + sizes +
                     R"(, "vocab_size": 200, "max_position_embeddings": 128, "type_vocab_size": 2, "layer_norm_eps": 1e-12})",
      "config.json");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  ModelWeights w;
  w.hf_tokenizer = std::make_shared<const HfTokenizer>(*tok);
  w.arch = c->arch;
  w.arch.mlm_head = z.mlm;
  w.d_model = D;
  w.context = 128;
  w.ln_eps = 1e-12f;
  uint64_t k = z.distil ? 500 : 100;
  w.tok_emb = normals_mat(++k, V, D, 0.5f);
  w.pos_emb = normals_mat(++k, 128, D, 0.2f);
  if (!z.distil) w.type_emb = normals_mat(++k, 2, D, 0.4f);
  w.emb_ln_g = normals_around(++k, D, 1.0f, 0.1f), w.emb_ln_b = normals_around(++k, D, 0.0f, 0.05f);
  const float s = 1.6f / std::sqrt(static_cast<float>(D));
  for (int l = 0; l < z.L; ++l) {
    LayerWeights lw;
    lw.w_q = normals_mat(++k, D, D, s), lw.w_k = normals_mat(++k, D, D, s), lw.w_v = normals_mat(++k, D, D, s);
    lw.w_o = PackedMatrix(normals_mat(++k, D, D, 0.75f * s));
    lw.b_q = normals_around(++k, D, 0, 0.05f), lw.b_k = normals_around(++k, D, 0, 0.05f), lw.b_v = normals_around(++k, D, 0, 0.05f);
    lw.b_o = normals_around(++k, D, 0, 0.05f);
    lw.ln1_g = normals_around(++k, D, 1.0f, 0.1f), lw.ln2_g = normals_around(++k, D, 1.0f, 0.1f);
    lw.ln1_b = normals_around(++k, D, 0.0f, 0.05f), lw.ln2_b = normals_around(++k, D, 0.0f, 0.05f);
    lw.w_fc = PackedMatrix(normals_mat(++k, D, F, 0.75f * s)), lw.w_proj = PackedMatrix(normals_mat(++k, F, D, 0.4f * s));
    lw.b_fc = normals_around(++k, F, 0, 0.05f), lw.b_proj = normals_around(++k, D, 0, 0.05f);
    lw.fuse();
    w.layers.push_back(std::move(lw));
  }
  w.lnf_g = RowVec::Ones(D), w.lnf_b = RowVec::Zero(D);
  if (z.mlm) {
    w.mlm_dense = normals_mat(++k, D, D, s), w.mlm_dense_b = normals_around(++k, D, 0, 0.05f);
    w.mlm_ln_g = normals_around(++k, D, 1.0f, 0.1f), w.mlm_ln_b = normals_around(++k, D, 0, 0.05f);
    w.mlm_bias = normals_mat(++k, 1, V, 0.1f);
  }
  w.source.kind = WeightsSource::Kind::Pretrained;
  w.source.trained_heads = z.H;
  return w;
}

}  // namespace headmap::test
