// family_fixtures.h: tiny models of the model families (core/model/arch.h) made in memory,
// the config that runs one, and batches of plain vocabulary ids: the fixtures shared by the
// core suites that run the families (test_families, test_kv_cache, test_contrib).
//
// B = batch, T = tokens, D = d_model, H = heads, KV = K/V heads, dh = d_head, F = MLP width, L = layers
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/math/rng.h"
#include "core/model/model.h"
#include "core/model/weights.h"

namespace headmap::test {

// (rows, cols) of s * N(0, 1), fill_normals' stream `key`.
inline MatR normals(uint64_t key, int rows, int cols, float s) {
  MatR m(rows, cols);
  fill_normals(key, m.data(), m.size(), s);
  return m;
}

// A model of family `a` without layers or embeddings yet: D, H query heads on KV K/V heads
// (KV = H: multi-head) of d_head dh (H*dh may differ from D), MLP width F.
inline ModelWeights family_shell(const Arch& a, int D, int H, int KV, int dh, int F) {
  ModelWeights w;
  w.d_model = D;
  w.arch = a;
  w.arch.num_heads = H;
  w.arch.num_kv_heads = KV < H ? KV : 0;
  w.arch.head_dim = dh;
  w.arch.mlp_width = F;
  w.ln_eps = a.norm_eps;
  return w;
}

// A random model of family `a` in memory (RandomInit; give it tok_emb, and lm_head when
// untied, to make it a trained one): L layers, layer l drawn from the streams key + 100 l + i.
// The weights are drawn, the first norm's gain is 1 + N(0, 0.1), b_Q and b_K are drawn where
// the family has attention biases; the other gains are ones and the other biases zeros, and
// the layer holds every vector a family can have (q/k norms where `a` has them, the post
// norms of Gemma 2/3).
inline ModelWeights family_model(const Arch& a, int D, int H, int KV, int dh, int F, int L, uint64_t key = 1000) {
  ModelWeights w = family_shell(a, D, H, KV, dh, F);
  for (int l = 0; l < L; ++l) {
    const uint64_t k = key + 100 * static_cast<uint64_t>(l);
    LayerWeights lw;
    lw.ln1_g = RowVec::Ones(D) + normals(k + 1, 1, D, 0.1f);
    lw.ln1_b = RowVec::Zero(D);
    lw.ln2_g = RowVec::Ones(D);
    lw.ln2_b = RowVec::Zero(D);
    lw.w_q = normals(k + 2, D, H * dh, 0.4f);
    lw.w_k = normals(k + 3, D, KV * dh, 0.4f);
    lw.w_v = normals(k + 4, D, KV * dh, 0.3f);
    lw.w_o = PackedMatrix(normals(k + 5, H * dh, D, 0.2f));
    lw.b_q = a.attn_bias ? RowVec(normals(k + 6, 1, H * dh, 0.1f)) : RowVec(RowVec::Zero(H * dh));
    lw.b_k = a.attn_bias ? RowVec(normals(k + 7, 1, KV * dh, 0.1f)) : RowVec(RowVec::Zero(KV * dh));
    lw.b_v = RowVec::Zero(KV * dh);
    lw.b_o = RowVec::Zero(D);
    if (a.qk_norm) lw.q_norm = RowVec::Ones(dh) + normals(k + 8, 1, dh, 0.2f), lw.k_norm = RowVec::Ones(dh) + normals(k + 9, 1, dh, 0.2f);
    lw.w_fc = PackedMatrix(normals(k + 10, D, F, 0.2f));
    lw.w_gate = PackedMatrix(normals(k + 11, D, F, 0.2f));
    lw.w_proj = PackedMatrix(normals(k + 12, F, D, 0.1f));
    lw.b_fc = RowVec::Zero(F);
    lw.b_proj = RowVec::Zero(D);
    lw.post_attn_g = RowVec::Ones(D);
    lw.post_mlp_g = RowVec::Ones(D);
    lw.fuse();
    w.layers.push_back(std::move(lw));
  }
  w.source.kind = WeightsSource::Kind::RandomInit;
  return w;
}

// The config that runs w as its weights say (config_for_weights), with this tokenizer and,
// when context > 0, at most that many tokens.
inline ModelConfig config_of(const ModelWeights& w, TokenizerKind tokenizer, int context = 0) {
  ModelConfig c;
  c.tokenizer = tokenizer;
  if (context > 0) c.context = context;
  return config_for_weights(w, c);
}

// A batch of one sentence per vector of vocabulary ids (B = sentences.size(), T = the
// longest), token i's text "t<id>", sentence b from source line b.
inline Batch id_batch(const std::vector<std::vector<int>>& sentences) {
  Batch b;
  b.tokenizer = TokenizerKind::Bpe;
  for (const auto& ids : sentences) {
    TokenizedText tt;
    for (int id : ids) tt.tokens.push_back(Token{"t" + std::to_string(id), id});
    tt.total_tokens = static_cast<int>(ids.size());
    b.lengths.push_back(static_cast<int>(ids.size()));
    b.source_line.push_back(b.B());
    b.T = std::max(b.T, static_cast<int>(ids.size()));
    b.sentences.push_back(std::move(tt));
  }
  return b;
}

}  // namespace headmap::test
