// circuits.cpp: see circuits.h.
//
// D = d_model, dh = d_head, H = query heads, KV = K/V heads, L = layers, V = vocabulary,
// n = tokens shown. The small products run in double.
#include "core/inspect/circuits.h"

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/model/attention.h"

namespace headmap {
namespace {

using MatD = Eigen::MatrixXd;

// One layer's attention weights per head, the input norm's gain folded in: Q[h], K[h], V[h]
// (D, dh) (K and V of the head's K/V group), O[h] (dh, D).
struct LayerHeads {
  std::vector<MatD> q, k, v, o;
};

LayerHeads layer_heads(const ModelWeights& w, const ModelConfig& cfg, int l) {
  const MhaOptions o = mha_options(cfg, w, l);
  const LayerWeights g = kv_grouped(w.layers[static_cast<size_t>(l)], o);  // W_K, W_V: (D, KV*dh)
  const MatR wq = g.proj(LayerWeights::kQ), wk = g.proj(LayerWeights::kK), wv = g.proj(LayerWeights::kV);  // (D, H*dh), (D, KV*dh) x2
  const MatR wo = w.layers[static_cast<size_t>(l)].w_o.plain();                                            // (H*dh, D)
  const int D = static_cast<int>(wq.rows()), H = o.num_heads, KV = kv_heads(o), dh = head_dim(o, D);
  const bool interleaved = o.pitfalls.interleaved_reshape;
  // The gain of the norm the attention reads through (not a post-norm block's: it reads x itself).
  const NormPlacement p = w.arch.placement;
  const RowVec& gain = w.layers[static_cast<size_t>(l)].ln1_g;
  const bool fold = (p == NormPlacement::PreNorm || p == NormPlacement::Parallel || p == NormPlacement::Sandwich) && gain.size() == D;
  LayerHeads lh;
  for (int h = 0; h < H; ++h) {
    const int kvh = kv_head_of(o, h);
    MatD q(D, dh), k(D, dh), v(D, dh), out(dh, D);
    for (int j = 0; j < dh; ++j) {
      const int f = head_feature(h, j, H, dh, interleaved), fk = head_feature(kvh, j, KV, dh, interleaved);
      for (int r = 0; r < D; ++r) {
        const double s = fold ? gain(r) : 1.0;
        q(r, j) = s * wq(r, f);
        k(r, j) = s * wk(r, fk);
        v(r, j) = s * wv(r, fk);
      }
      for (int c = 0; c < D; ++c) out(j, c) = wo(h * dh + j, c);
    }
    lh.q.push_back(std::move(q));
    lh.k.push_back(std::move(k));
    lh.v.push_back(std::move(v));
    lh.o.push_back(std::move(out));
  }
  return lh;
}

// tr(M^T G M G2) for symmetric G, G2: ||X M Y^T||_F^2 with G = X^T X, G2 = Y^T Y.
double frob2(const MatD& m, const MatD& g, const MatD& g2) { return ((g * m).cwiseProduct(m * g2)).sum(); }

// E[id] as the forward reads it (times sqrt(D) where the family scales its embeddings).
Eigen::VectorXd embedding(const ModelWeights& w, int id) {
  RowVec e(w.d_model);
  w.embedding_row(id, e.data());
  const double s = w.arch.embed_scale ? std::sqrt(static_cast<double>(w.d_model)) : 1.0;
  return e.transpose().cast<double>() * s;
}

// The embedding (as the forward reads it) and unembedding rows of tokens id(0) .. id(n-1): e, u (n, D).
template <class Id>
void vocab_rows(const ModelWeights& w, int n, Id id, MatD& e, MatD& u) {
  e.resize(n, w.d_model);
  u.resize(n, w.d_model);
  for (int i = 0; i < n; ++i) {
    e.row(i) = embedding(w, id(i)).transpose();
    u.row(i) = w.unembedding_row(id(i)).template cast<double>();
  }
}

Status check_head(int L, int H, int layer, int head) {
  if (layer < 0 || layer >= L || head < 0 || head >= H)
    return Error{ErrorKind::InvalidArgument, "No head " + std::to_string(layer) + "." + std::to_string(head) + ": the model has " + std::to_string(L) +
                                                 " layers of " + std::to_string(H) + " heads."};
  return Status();
}

// The k ids with the largest values, largest first.
std::vector<int> top_ids(const Eigen::VectorXd& v, int k) {
  std::vector<int> ids(static_cast<size_t>(v.size()));
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min<int>(k, static_cast<int>(ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int a, int b) { return v(a) > v(b) || (v(a) == v(b) && a < b); });
  ids.resize(static_cast<size_t>(k));
  return ids;
}

}  // namespace

namespace {
// A head's Gram matrices (dh, dh) and its circuits' squared norms.
struct HeadGrams {
  MatD gv, oo, gq, gk;
  double ov2 = 0, qk2 = 0;
};
HeadGrams head_grams(const LayerHeads& lh, int h) {
  HeadGrams g;
  g.gv = lh.v[h].transpose() * lh.v[h];
  g.oo = lh.o[h] * lh.o[h].transpose();
  g.gq = lh.q[h].transpose() * lh.q[h];
  g.gk = lh.k[h].transpose() * lh.k[h];
  g.ov2 = g.gv.cwiseProduct(g.oo).sum();  // ||V O||_F^2 = tr(V^T V O O^T)
  g.qk2 = g.gq.cwiseProduct(g.gk).sum();  // ||Q K^T||_F^2
  return g;
}
// Writer A (its W_O oa, its grams ga) into reader B (head hb of lb, its grams gb): the Q, K
// and V composition scores.
std::array<float, 3> compose(const MatD& oa, const HeadGrams& ga, const LayerHeads& lb, int hb, const HeadGrams& gb) {
  const double den_ov = std::sqrt(ga.ov2);
  auto score = [&](const MatD& m, const MatD& g2, double norm2) {
    const double d = den_ov * std::sqrt(norm2);
    return d > 0 ? static_cast<float>(std::sqrt(std::max(0.0, frob2(m, ga.gv, g2))) / d) : 0.0f;
  };
  return {score(oa * lb.q[hb], gb.gk, gb.qk2),   // V_A (O_A Q_B) K_B^T
          score(oa * lb.k[hb], gb.gq, gb.qk2),   // V_A (O_A K_B) Q_B^T
          score(oa * lb.v[hb], gb.oo, gb.ov2)};  // V_A (O_A V_B) O_B
}
}  // namespace

Composition composition_scores(const ModelWeights& w, const ModelConfig& cfg) {
  Composition c;
  const int L = static_cast<int>(w.layers.size()), H = cfg.num_heads, N = L * H;
  c.L = L;
  c.H = H;
  c.q.assign(static_cast<size_t>(N) * N, 0.0f);
  c.k = c.q;
  c.v = c.q;
  std::vector<LayerHeads> heads;
  for (int l = 0; l < L; ++l) heads.push_back(layer_heads(w, cfg, l));
  std::vector<HeadGrams> grams;
  for (int n = 0; n < N; ++n) grams.push_back(head_grams(heads[static_cast<size_t>(n / H)], n % H));
  for (int b = 0; b < N; ++b)
    for (int a = 0; a < (b / H) * H; ++a) {  // every head of an earlier layer
      const std::array<float, 3> s = compose(heads[static_cast<size_t>(a / H)].o[a % H], grams[a], heads[static_cast<size_t>(b / H)], b % H, grams[b]);
      const size_t at = static_cast<size_t>(b) * N + a;
      c.q[at] = s[0];
      c.k[at] = s[1];
      c.v[at] = s[2];
    }
  return c;
}

Result<CompositionRow> composition_into(const ModelWeights& w, const ModelConfig& cfg, int layer, int head) {
  const int L = static_cast<int>(w.layers.size()), H = cfg.num_heads;
  if (Status st = check_head(L, H, layer, head); !st) return st.error();
  CompositionRow c;
  c.L = L;
  c.H = H;
  c.layer = layer;
  c.head = head;
  c.q.assign(static_cast<size_t>(L) * H, 0.0f);
  c.k = c.q;
  c.v = c.q;
  const LayerHeads lb = layer_heads(w, cfg, layer);
  const HeadGrams gb = head_grams(lb, head);
  for (int la = 0; la < layer; ++la) {  // one earlier layer at a time: memory for one layer's heads
    const LayerHeads lh = layer_heads(w, cfg, la);
    for (int h = 0; h < H; ++h) {
      const std::array<float, 3> s = compose(lh.o[h], head_grams(lh, h), lb, head, gb);
      const size_t at = static_cast<size_t>(la) * H + h;
      c.q[at] = s[0];
      c.k[at] = s[1];
      c.v[at] = s[2];
    }
  }
  return c;
}

Eigen::MatrixXd vocab_gram(const ModelWeights& w) {
  if (!w.trained()) return MatD();
  const int V = w.vocab_size(), D = w.d_model;
  MatD ute = MatD::Zero(D, D);  // U^T E (D, D)
  const int block = 1024;
  for (int r0 = 0; r0 < V; r0 += block) {
    const int n = std::min(block, V - r0);
    MatD e, u;  // (n, D) x2
    vocab_rows(w, n, [r0](int i) { return r0 + i; }, e, u);
    ute.noalias() += u.transpose() * e;
  }
  return ute;
}

Result<HeadCircuit> head_circuit_weights(const ModelWeights& w, const ModelConfig& cfg, int layer, int head, const Eigen::MatrixXd& ute,
                                         int k_directions, int k_tokens, int positions) {
  if (!w.trained()) return Error{ErrorKind::InvalidArgument, "A head's circuits need trained weights: random init has no vocabulary to read them in."};
  if (Status st = check_head(static_cast<int>(w.layers.size()), cfg.num_heads, layer, head); !st) return st.error();
  const int V = w.vocab_size(), D = w.d_model;
  if (ute.rows() != D || ute.cols() != D) return Error{ErrorKind::InvalidArgument, "The vocabulary's U^T E is not this model's."};
  const LayerHeads lh = layer_heads(w, cfg, layer);
  const MatD &q = lh.q[head], &k = lh.k[head], &v = lh.v[head], &o = lh.o[head];  // (D, dh) x3, (dh, D)
  HeadCircuit hc;
  hc.layer = layer;
  hc.head = head;

  // The singular directions of W_OV = v o (rank dh): v = Q1 R1, o^T = Q2 R2, so
  // W_OV = Q1 (R1 R2^T) Q2^T and the small middle's SVD gives both sides.
  Eigen::HouseholderQR<MatD> qr1(v), qr2(o.transpose());
  const int dh = static_cast<int>(v.cols());
  const MatD q1 = qr1.householderQ() * MatD::Identity(D, dh), q2 = qr2.householderQ() * MatD::Identity(D, dh);
  const MatD r1 = qr1.matrixQR().topRows(dh).triangularView<Eigen::Upper>(), r2 = qr2.matrixQR().topRows(dh).triangularView<Eigen::Upper>();
  Eigen::JacobiSVD<MatD> svd(r1 * r2.transpose(), Eigen::ComputeFullU | Eigen::ComputeFullV);
  const MatD in_dirs = q1 * svd.matrixU(), out_dirs = q2 * svd.matrixV();  // (D, dh) each, columns by sigma descending

  // Over the vocabulary, in blocks: every token's embedding read along each input direction,
  // its unembedding along each output direction.
  const int kd = std::min(k_directions, dh);
  Eigen::MatrixXd reads(V, kd), writes(V, kd);  // (V, kd)
  const int block = 1024;
  for (int r0 = 0; r0 < V; r0 += block) {
    const int n = std::min(block, V - r0);
    MatD e, u;  // (n, D) x2
    vocab_rows(w, n, [r0](int i) { return r0 + i; }, e, u);
    reads.middleRows(r0, n) = e * in_dirs.leftCols(kd);
    writes.middleRows(r0, n) = u * out_dirs.leftCols(kd);
  }
  for (int i = 0; i < kd; ++i) {
    // A direction's sign is free (u and v flip together): the token it reads most strongly
    // is made a positive reading.
    if (-reads.col(i).minCoeff() > reads.col(i).maxCoeff()) reads.col(i) *= -1, writes.col(i) *= -1;
    HeadCircuit::Direction d;
    d.sigma = static_cast<float>(svd.singularValues()(i));
    d.reads = top_ids(reads.col(i), k_tokens);
    d.writes = top_ids(writes.col(i), k_tokens);
    hc.directions.push_back(std::move(d));
  }
  // The copying score: the eigenvalues of o U^T E v (dh, dh), the full OV circuit's nonzero ones.
  Eigen::EigenSolver<MatD> eig(o * ute * v, false);
  double sum = 0, abs_sum = 0;
  for (Eigen::Index i = 0; i < eig.eigenvalues().size(); ++i) sum += eig.eigenvalues()(i).real(), abs_sum += std::abs(eig.eigenvalues()(i));
  hc.copying = abs_sum > 0 ? sum / abs_sum : 0;

  // Learned positions: their own QK, apart from the tokens'.
  if (w.arch.positions == PositionKind::Learned && w.pos_emb.rows() > 0) {
    const int P = std::min<int>(positions, static_cast<int>(w.pos_emb.rows()));
    const MatD pe = w.pos_emb.topRows(P).cast<double>();  // (P, D)
    const MatD pq = (pe * q) * (pe * k).transpose();      // (P, P)
    hc.qk_pos.resize(static_cast<size_t>(P) * P);
    for (int i = 0; i < P; ++i)
      for (int j = 0; j < P; ++j) hc.qk_pos[static_cast<size_t>(i) * P + j] = static_cast<float>(pq(i, j));
  }
  return hc;
}

HeadCircuit circuit_on_tokens(HeadCircuit hc, const ModelWeights& w, const ModelConfig& cfg, const std::vector<int>& tokens) {
  const int V = w.vocab_size();
  const LayerHeads lh = layer_heads(w, cfg, hc.layer);
  const MatD &q = lh.q[hc.head], &k = lh.k[hc.head], &v = lh.v[hc.head], &o = lh.o[hc.head];  // (D, dh) x3, (dh, D)
  // The tokens shown: the given ones (distinct, in range), then the directions' own.
  hc.tokens.clear();
  for (int id : tokens)
    if (id >= 0 && id < V && std::find(hc.tokens.begin(), hc.tokens.end(), id) == hc.tokens.end()) hc.tokens.push_back(id);
  for (const HeadCircuit::Direction& d : hc.directions)
    for (const std::vector<int>* list : {&d.reads, &d.writes})
      for (int id : *list)
        if (std::find(hc.tokens.begin(), hc.tokens.end(), id) == hc.tokens.end()) hc.tokens.push_back(id);
  const int n = static_cast<int>(hc.tokens.size());
  MatD e, u;  // (n, D) x2
  vocab_rows(w, n, [&hc](int i) { return hc.tokens[static_cast<size_t>(i)]; }, e, u);
  const MatD ov = (e * v) * (o * u.transpose());  // (n, n)
  const MatD qk = (e * q) * (e * k).transpose();   // (n, n)
  hc.ov.resize(static_cast<size_t>(n) * n);
  hc.qk.resize(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) hc.ov[static_cast<size_t>(i) * n + j] = static_cast<float>(ov(i, j)), hc.qk[static_cast<size_t>(i) * n + j] = static_cast<float>(qk(i, j));
  return hc;
}

Result<HeadCircuit> head_circuit(const ModelWeights& w, const ModelConfig& cfg, int layer, int head, const std::vector<int>& tokens,
                                 int k_directions, int k_tokens, int positions) {
  Result<HeadCircuit> base = head_circuit_weights(w, cfg, layer, head, vocab_gram(w), k_directions, k_tokens, positions);
  if (!base) return base.error();
  return circuit_on_tokens(std::move(base).value(), w, cfg, tokens);
}

}  // namespace headmap
