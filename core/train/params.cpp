// params.cpp: see params.h.
#include "core/train/params.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/math/rng.h"

namespace headmap {

std::vector<ParamRef> param_refs(ModelParams& p, bool no_w_o) {
  std::vector<ParamRef> r;
  auto add = [&](std::string name, auto& t, bool decay) { r.push_back({std::move(name), t.data(), static_cast<int64_t>(t.size()), decay}); };
  add("tok_emb", p.tok_emb, false);
  add("pos_emb", p.pos_emb, false);
  for (size_t l = 0; l < p.layers.size(); ++l) {
    LayerParams& lp = p.layers[l];
    const std::string n = "layers." + std::to_string(l) + ".";
    add(n + "ln1_g", lp.ln1_g, false);
    add(n + "ln1_b", lp.ln1_b, false);
    add(n + "w_qkv", lp.w_qkv, true);
    add(n + "b_qkv", lp.b_qkv, false);
    if (!no_w_o) {
      add(n + "w_o", lp.w_o, true);
      add(n + "b_o", lp.b_o, false);
    }
    add(n + "ln2_g", lp.ln2_g, false);
    add(n + "ln2_b", lp.ln2_b, false);
    add(n + "w_fc", lp.w_fc, true);
    add(n + "b_fc", lp.b_fc, false);
    add(n + "w_proj", lp.w_proj, true);
    add(n + "b_proj", lp.b_proj, false);
  }
  add("lnf_g", p.lnf_g, false);
  add("lnf_b", p.lnf_b, false);
  return r;
}

ModelParams zeros_like(const ModelParams& p) {
  ModelParams z = p;
  for (ParamRef& r : param_refs(z, false)) std::fill(r.data, r.data + r.size, 0.0f);
  return z;
}

ModelParams init_params(int D, int L, int V, int P, uint64_t seed, PosInit pos_init) {
  HM_ASSERT(D >= 1 && L >= 1 && V >= 1 && P >= 1, "init_params needs positive d_model, layers, vocab and context");
  const uint64_t base = combine(hash_bytes("headmap-train-init", seed), static_cast<uint64_t>(D));
  auto normal = [&](MatR& m, const std::string& name, int rows, int cols, float std) {
    const uint64_t key = combine(base, hash_bytes(name));
    m.resize(rows, cols);
    for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = std * normal_at(key, static_cast<uint64_t>(i));
  };
  const float s = 0.02f, s_res = 0.02f / std::sqrt(2.0f * L);  // GPT-2: residual projections scaled by 1/sqrt(2L)
  ModelParams p;
  normal(p.tok_emb, "tok_emb", V, D, s);
  normal(p.pos_emb, "pos_emb", P, D, 0.01f);
  if (pos_init == PosInit::Sinusoid) {
    // The Transformer's sinusoids, w_i = 10000^(-2i/D). Amplitude s: each row's norm is
    // s * sqrt(D / 2), about a token embedding's s * sqrt(D).
    for (int i = 0; 2 * i < D; ++i) {
      const double w = std::pow(10000.0, -2.0 * i / D);
      for (int pos = 0; pos < P; ++pos) {
        p.pos_emb(pos, 2 * i) = static_cast<float>(s * std::sin(pos * w));
        if (2 * i + 1 < D) p.pos_emb(pos, 2 * i + 1) = static_cast<float>(s * std::cos(pos * w));
      }
    }
  }
  for (int l = 0; l < L; ++l) {
    const std::string n = "layers." + std::to_string(l) + ".";
    LayerParams lp;
    lp.ln1_g = RowVec::Ones(D);
    lp.ln1_b = RowVec::Zero(D);
    normal(lp.w_qkv, n + "w_qkv", D, 3 * D, s);
    lp.b_qkv = RowVec::Zero(3 * D);
    normal(lp.w_o, n + "w_o", D, D, s_res);
    lp.b_o = RowVec::Zero(D);
    lp.ln2_g = RowVec::Ones(D);
    lp.ln2_b = RowVec::Zero(D);
    normal(lp.w_fc, n + "w_fc", D, 4 * D, s);
    lp.b_fc = RowVec::Zero(4 * D);
    normal(lp.w_proj, n + "w_proj", 4 * D, D, s_res);
    lp.b_proj = RowVec::Zero(D);
    p.layers.push_back(std::move(lp));
  }
  p.lnf_g = RowVec::Ones(D);
  p.lnf_b = RowVec::Zero(D);
  return p;
}

ModelWeights to_model_weights(const ModelParams& p, const Bpe& bpe, bool no_w_o) {
  const int D = p.d_model();
  ModelWeights w;
  w.d_model = D;
  w.context = p.context();
  w.bpe = bpe;
  w.tok_emb = p.tok_emb;
  w.pos_emb = p.pos_emb;
  w.lnf_g = p.lnf_g;
  w.lnf_b = p.lnf_b;
  for (const LayerParams& lp : p.layers) {
    LayerWeights lw;
    lw.ln1_g = lp.ln1_g;
    lw.ln1_b = lp.ln1_b;
    lw.w_q = lp.w_qkv.leftCols(D);
    lw.w_k = lp.w_qkv.middleCols(D, D);
    lw.w_v = lp.w_qkv.rightCols(D);
    lw.b_q = lp.b_qkv.head(D);
    lw.b_k = lp.b_qkv.segment(D, D);
    lw.b_v = lp.b_qkv.tail(D);
    lw.w_o = PackedMatrix(no_w_o ? MatR(MatR::Identity(D, D)) : lp.w_o);
    lw.b_o = no_w_o ? RowVec(RowVec::Zero(D)) : lp.b_o;
    lw.ln2_g = lp.ln2_g;
    lw.ln2_b = lp.ln2_b;
    lw.w_fc = PackedMatrix(lp.w_fc);
    lw.b_fc = lp.b_fc;
    lw.w_proj = PackedMatrix(lp.w_proj);
    lw.b_proj = lp.b_proj;
    lw.fuse();
    w.layers.push_back(std::move(lw));
  }
  w.source.kind = WeightsSource::Kind::Trained;
  w.source.no_w_o = no_w_o;
  return w;
}

ModelParams from_model_weights(const ModelWeights& w) {
  HM_ASSERT(w.trained(), "from_model_weights needs trained weights (token and position embeddings)");
  const int D = w.d_model;
  ModelParams p;
  p.tok_emb = w.tok_emb;
  p.pos_emb = w.pos_emb;
  p.lnf_g = w.lnf_g;
  p.lnf_b = w.lnf_b;
  for (const LayerWeights& lw : w.layers) {
    LayerParams lp;
    lp.ln1_g = lw.ln1_g;
    lp.ln1_b = lw.ln1_b;
    lp.w_qkv.resize(D, 3 * D);
    lp.w_qkv << lw.w_q, lw.w_k, lw.w_v;
    lp.b_qkv.resize(3 * D);
    lp.b_qkv << lw.b_q, lw.b_k, lw.b_v;
    lp.w_o = lw.w_o.plain();
    lp.b_o = lw.b_o;
    lp.ln2_g = lw.ln2_g;
    lp.ln2_b = lw.ln2_b;
    lp.w_fc = lw.w_fc.plain();
    lp.b_fc = lw.b_fc;
    lp.w_proj = lw.w_proj.plain();
    lp.b_proj = lw.b_proj;
    p.layers.push_back(std::move(lp));
  }
  return p;
}
}  // namespace headmap
