#include "core/model/weights.h"

#include <cmath>

#include "core/math/gemm.h"
#include "core/math/rng.h"

namespace headmap {

Eigen::Index LayerWeights::proj_width(int which) const {
  if (plain_qkv()) return which == kQ ? w_q.cols() : which == kK ? w_k.cols() : w_v.cols();
  return which == kQ ? b_q.size() : which == kK ? b_k.size() : b_v.size();
}
static Eigen::Index proj_offset(const LayerWeights& w, int which) {
  return which == LayerWeights::kQ ? 0 : which == LayerWeights::kK ? w.b_q.size() : w.b_q.size() + w.b_k.size();
}
MatR LayerWeights::proj_cols(int which, Eigen::Index c0, Eigen::Index n) const {
  if (plain_qkv()) return (which == kQ ? w_q : which == kK ? w_k : w_v).middleCols(c0, n);
  HM_ASSERT(c0 >= 0 && c0 + n <= proj_width(which), "proj_cols: columns out of range");
  return w_qkv.middle_cols(proj_offset(*this, which) + c0, n);
}
float LayerWeights::proj_at(int which, Eigen::Index r, Eigen::Index c) const {
  if (plain_qkv()) return (which == kQ ? w_q : which == kK ? w_k : w_v)(r, c);
  return w_qkv(r, proj_offset(*this, which) + c);
}
void LayerWeights::release_plain_qkv() {
  HM_ASSERT(w_qkv.rows() == w_q.rows() && w_qkv.cols() == w_q.cols() + w_k.cols() + w_v.cols() && b_q.size() == w_q.cols() &&
                b_k.size() == w_k.cols() && b_v.size() == w_v.cols(),
            "release_plain_qkv: fuse() first");
  w_q = MatR(), w_k = MatR(), w_v = MatR();
}

void LayerWeights::fuse() {
  if (!plain_qkv()) {  // released: W_QKV already holds them
    b_qkv.resize(w_qkv.cols());
    b_qkv << b_q, b_k, b_v;
    return;
  }
  const Eigen::Index D = w_q.rows(), W3 = w_q.cols() + w_k.cols() + w_v.cols();
  // Weights from a BF16 / F16 file (W_O kept so) keep W_QKV in the same 16 bits: exact, as
  // W_Q, W_K and W_V hold the file's values. Should a value not fit (weights changed since),
  // the packing falls back to F32 and nothing is rounded.
  if (w_o.narrow()) {
    const WeightDtype dt = w_o.dtype();
    const bool exact = w_qkv.assign_by_rows(
        D, W3,
        [&](Eigen::Index r0, Eigen::Index n, float* block) {
          Eigen::Map<MatR>(block, n, W3) << w_q.middleRows(r0, n), w_k.middleRows(r0, n), w_v.middleRows(r0, n);
          for (Eigen::Index i = 0; i < n * W3; ++i)
            if (narrow_to_float(float_to_narrow(block[i], dt), dt) != block[i]) return false;
          return true;
        },
        dt);
    if (exact) {
      b_qkv.resize(W3);
      b_qkv << b_q, b_k, b_v;
      return;
    }
  }
  // Packed a block of rows at a time: never a second full (D, 3D) copy.
  w_qkv.assign_by_rows_parallel(
      D, W3,
      [&](Eigen::Index r0, Eigen::Index n, float* block) {
        Eigen::Map<MatR>(block, n, W3) << w_q.middleRows(r0, n), w_k.middleRows(r0, n), w_v.middleRows(r0, n);
      },
      2.0);
  b_qkv.resize(W3);
  b_qkv << b_q, b_k, b_v;
}

// Counter-based (rng.h): every element depends on (key, i) only, so threads change nothing.
static MatR normal_matrix(uint64_t key, int rows, int cols, float std) {
  MatR m(rows, cols);
  fill_normals(key, m.data(), m.size(), std);
  return m;
}

// The same numbers, drawn straight into a packed matrix a block of rows at a time: no plain
// (rows, cols) copy to allocate, fault in and pack (at D = 768 that was most of a layer's cost).
static PackedMatrix normal_packed(uint64_t key, int rows, int cols, float std) {
  PackedMatrix p;
  p.assign_by_rows_parallel(
      rows, cols, [&](Eigen::Index r0, Eigen::Index n, float* block) { fill_normals_slice(key, r0 * cols, block, n * cols, std); },
      30.0);
  return p;
}

ModelWeights random_weights(int D, int L, uint64_t seed) {
  ModelWeights w;
  w.d_model = D;
  w.source.kind = WeightsSource::Kind::RandomInit;
  w.source.seed = seed;
  extend_random_weights(w, L, seed);
  return w;
}

void extend_random_weights(ModelWeights& w, int L, uint64_t seed) {
  const int D = w.d_model;
  HM_ASSERT(!w.trained() && w.source.seed == seed, "extend_random_weights completes random-init weights of the same seed");
  const float s_in = 1.0f / std::sqrt(static_cast<float>(D));
  const float s_proj = 1.0f / std::sqrt(static_cast<float>(4 * D));
  for (int l = w.num_layers(); l < L; ++l) {
    const uint64_t base = combine(combine(hash_bytes("headmap-weights", seed), static_cast<uint64_t>(D)), static_cast<uint64_t>(l));
    auto key = [&](const char* name) { return combine(base, hash_bytes(name)); };
    LayerWeights lw;
    lw.ln1_g = RowVec::Ones(D);
    lw.ln1_b = RowVec::Zero(D);
    lw.w_q = normal_matrix(key("w_q"), D, D, s_in);
    lw.w_k = normal_matrix(key("w_k"), D, D, s_in);
    lw.w_v = normal_matrix(key("w_v"), D, D, s_in);
    lw.w_o = normal_packed(key("w_o"), D, D, s_in);
    lw.b_q = RowVec::Zero(D);
    lw.b_k = RowVec::Zero(D);
    lw.b_v = RowVec::Zero(D);
    lw.b_o = RowVec::Zero(D);
    lw.ln2_g = RowVec::Ones(D);
    lw.ln2_b = RowVec::Zero(D);
    lw.w_fc = normal_packed(key("w_fc"), D, 4 * D, s_in);
    lw.b_fc = RowVec::Zero(4 * D);
    lw.w_proj = normal_packed(key("w_proj"), 4 * D, D, s_proj);
    lw.b_proj = RowVec::Zero(D);
    lw.fuse();
    w.layers.push_back(std::move(lw));
  }
}

uint64_t hashed_embedding_key(std::string_view token, uint64_t seed, int D) {
  return combine(hash_bytes(token, seed), static_cast<uint64_t>(D));
}

void hashed_embedding(std::string_view token, uint64_t seed, int D, float* out) {
  const uint64_t key = hashed_embedding_key(token, seed, D);
  for (int i = 0; i < D; ++i) out[i] = normal_at(key, static_cast<uint64_t>(i));
}

void add_sinusoidal(int t, int D, float* row) {
  for (int i = 0; i < D; i += 2) {
    const double freq = std::pow(10000.0, -static_cast<double>(i) / D);
    row[i] += static_cast<float>(std::sin(t * freq));
    if (i + 1 < D) row[i + 1] += static_cast<float>(std::cos(t * freq));
  }
}

std::vector<ParamCount> param_counts(int D, int kv_dim, int L, int V, int P, bool no_w_o) {
  const int64_t d = D, l = L, kv = kv_dim;
  const std::string kv_formula = kv == d ? "L·(D·D + D)" : "L·(D·kv_heads·d_head + kv_heads·d_head)";
  std::vector<ParamCount> p;
  p.push_back({"W_Q + b_Q", "L·(D·D + D)", l * (d * d + d), true});
  p.push_back({"W_K + b_K", kv_formula, l * (d * kv + kv), true});
  p.push_back({"W_V + b_V", kv_formula, l * (d * kv + kv), true});
  p.push_back({no_w_o ? "W_O + b_O (removed)" : "W_O + b_O", no_w_o ? "0" : "L·(D·D + D)", no_w_o ? 0 : l * (d * d + d), true});
  p.push_back({"LayerNorms", V > 0 ? "L·2·2D + 2D" : "L·2·2D", l * 4 * d + (V > 0 ? 2 * d : 0), false});
  p.push_back({"MLP (4D, GELU)", "L·(D·4D + 4D + 4D·D + D)", l * (8 * d * d + 5 * d), false});
  if (V > 0) {
    p.push_back({"token embedding (tied)", "V·D", static_cast<int64_t>(V) * d, false});
    p.push_back({"position embedding", "context·D", static_cast<int64_t>(P) * d, false});
  } else {
    p.push_back({"token embedding", "hashed: no table", 0, false});
    p.push_back({"positional encoding", "sinusoidal: no table", 0, false});
  }
  return p;
}

}  // namespace headmap
