// attention.cpp: multi-head self-attention (see attention.h for the three forms).
//
// B = batch, T = tokens, D = d_model, H = heads, dh = d_head = D/H
// kvH = K/V heads, G = H/kvH, Dkv = kvH·dh (the width of K and V)
// Sections: [shared] [fast path] [head score] [head trace] [explicit tensors]
#include "core/model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include "core/math/gemm.h"
#include "core/model/kv_cache.h"
#include "core/model/stage_times.h"

namespace headmap {

// ---- [shared] --------------------------------------------------------------------------
namespace {
using Stride2 = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
using ConstStridedView = Eigen::Map<const MatR, 0, Stride2>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The forgotten-transpose pitfall on one sentence's (T, W) block, W = P·dh: its memory
// read as (P, T, dh). Row t of head p is the flat numbers (p·T + t)·dh .. + dh, which are
// token (p·T + t) / P, slice (p·T + t) % P. dst row t, columns p·dh .. hold that row, so
// the correct heads-back step (transpose(1, 2), view) then reads head p where it expects it.
// src, dst: (T, W) with row strides src_stride, dst_stride.
void untransposed_heads(const float* src, Eigen::Index src_stride, int T, int W, int dh, float* dst, Eigen::Index dst_stride) {
  const int P = W / dh;
  for (int p = 0; p < P; ++p)
    for (int t = 0; t < T; ++t) {
      const int i = p * T + t;
      std::copy_n(src + (i / P) * src_stride + (i % P) * dh, dh, dst + t * dst_stride + p * dh);
    }
}
}  // namespace

LayerWeights kv_grouped(const LayerWeights& w, const MhaOptions& o) {
  const int D = static_cast<int>(w.d_in());
  const int H = o.num_heads, kvH = kv_heads(o);
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0) && kvH >= 1 && H % kvH == 0, "kv_heads must divide num_heads; validate() the config first");
  const int dh = head_dim(o, D), G = H / kvH, Dkv = kvH * dh;
  LayerWeights g;
  g.w_q = w.proj(LayerWeights::kQ);  // plain copies, unpacked when w keeps them only in W_QKV
  g.b_q = w.b_q;
  g.w_o = w.w_o;
  g.b_o = w.b_o;
  g.q_norm = w.q_norm;
  g.k_norm = w.k_norm;
  if (w.proj_width(LayerWeights::kK) == Dkv) {
    g.w_k = w.proj(LayerWeights::kK), g.w_v = w.proj(LayerWeights::kV), g.b_k = w.b_k, g.b_v = w.b_v;
  } else {
    HM_ASSERT(w.proj_width(LayerWeights::kK) == D && w.proj_width(LayerWeights::kV) == D, "W_K and W_V must be (D, D) or (D, kv_heads*d_head)");
    const MatR wk = w.proj(LayerWeights::kK), wv = w.proj(LayerWeights::kV);  // (D, D)
    const bool interleaved = o.pitfalls.interleaved_reshape;
    g.w_k.resize(D, Dkv), g.w_v.resize(D, Dkv), g.b_k.resize(Dkv), g.b_v.resize(Dkv);
    for (int kg = 0; kg < kvH; ++kg)
      for (int j = 0; j < dh; ++j) {
        const int src = head_feature(kg * G, j, H, dh, interleaved), dst = head_feature(kg, j, kvH, dh, interleaved);
        g.w_k.col(dst) = wk.col(src);
        g.w_v.col(dst) = wv.col(src);
        g.b_k(dst) = w.b_k(src);
        g.b_v(dst) = w.b_v(src);
      }
  }
  g.fuse();
  return g;
}

float score_scale(int d_model, const MhaOptions& o) {
  if (o.scale > 0) return o.scale;
  const int dh = head_dim(o, d_model);
  return 1.0f / std::sqrt(static_cast<float>(o.pitfalls.scale_by_d_model ? d_model : dh));
}

MhaOptions mha_options(const ModelConfig& cfg, const ModelWeights& w, int layer) {
  MhaOptions o = mha_options(cfg);
  const Arch& a = w.arch;
  if (a.is_gpt2_block()) return o;
  const int dh = a.head_dim > 0 ? a.head_dim : cfg.d_model / std::max(cfg.num_heads, 1);
  o.head_dim = a.head_dim;
  if (a.score_scale != ScoreScale::InvSqrtHeadDim) o.scale = a.score_scale_for(dh);
  o.softcap = a.attn_softcap;
  o.window = a.window(layer);
  o.qk_norm_eps = a.norm_eps;
  if (a.rope_on(layer) && cfg.positional) {
    o.rope_inv_freq = rope_inv_freq(a, dh, o.window > 0);
    if (a.rope_scaling == RopeScaling::LongRope) {
      o.rope_inv_freq_long = rope_inv_freq(a, dh, o.window > 0, true);
      o.rope_long_after = a.rope_original_context;
      o.rope_mscale = a.rope_attention_factor;
    }
  }
  return o;
}

const std::vector<double>& rope_freq_for(const MhaOptions& o, int seq_len) {
  return !o.rope_inv_freq_long.empty() && std::max(seq_len, o.rope_seq_len) > o.rope_long_after ? o.rope_inv_freq_long : o.rope_inv_freq;
}

void rotate_half(float* v, int half, const float* c, const float* s) {
  for (int i = 0; i < half; ++i) {
    const float x1 = v[i], x2 = v[i + half];
    v[i] = x1 * c[i] - x2 * s[i];
    v[i + half] = x2 * c[i] + x1 * s[i];
  }
}

namespace {
// cos and sin of t·inv_freq[i] for t < T: (T, half) each.
struct RopeTable {
  int half = 0;
  std::vector<float> cos, sin;
  // The frequencies o takes for a text of T positions, cos and sin scaled by o.rope_mscale.
  RopeTable(const MhaOptions& o, int T) : RopeTable(rope_freq_for(o, T), T, o.rope_mscale) {}
  RopeTable(const std::vector<double>& inv_freq, int T, float mscale) : half(static_cast<int>(inv_freq.size())) {
    cos.resize(static_cast<size_t>(T) * half);
    sin.resize(cos.size());
    for (int t = 0; t < T; ++t)
      for (int i = 0; i < half; ++i) {
        const double a = t * inv_freq[static_cast<size_t>(i)];
        cos[static_cast<size_t>(t) * half + i] = static_cast<float>(std::cos(a) * mscale);
        sin[static_cast<size_t>(t) * half + i] = static_cast<float>(std::sin(a) * mscale);
      }
  }
  const float* c(int t) const { return cos.data() + static_cast<size_t>(t) * half; }
  const float* s(int t) const { return sin.data() + static_cast<size_t>(t) * half; }
};

// RMSNorm of one head's vector in place: v / sqrt(mean(v^2) + eps) * g.
void rms_head(float* v, int dh, const RowVec& g, float eps) {
  double ss = 0;
  for (int j = 0; j < dh; ++j) ss += static_cast<double>(v[j]) * v[j];
  const float inv = static_cast<float>(1.0 / std::sqrt(ss / dh + eps));
  for (int j = 0; j < dh; ++j) v[j] = v[j] * inv * g(j);
}

// The q/k norm spans the whole projection (OLMo 2: H·d_head weights), not each head.
bool whole_norm(const RowVec& g, int width, int dh) { return width != dh && g.size() == width; }

// 1 / the RMS of each row of x (rows, width) + b: OLMo 2's whole-width q/k norm, for readers
// that compute one head at a time. (rows)
std::vector<float> whole_inv_rms(const MatR& x, const MatR& wm, const RowVec& b, float eps) {
  MatR full = x * wm;  // (rows, width)
  full.rowwise() += b;
  std::vector<float> inv(static_cast<size_t>(full.rows()));
  for (Eigen::Index r = 0; r < full.rows(); ++r)
    inv[static_cast<size_t>(r)] = static_cast<float>(1.0 / std::sqrt(full.row(r).cast<double>().squaredNorm() / full.cols() + eps));
  return inv;
}

// The family's steps on one head's fresh q or k at position t: q/k norm, then RoPE.
void prepare_head(float* v, int dh, int t, const RowVec& norm, float eps, const RopeTable* rope) {
  if (norm.size() == dh) rms_head(v, dh, norm, eps);
  if (rope && rope->half > 0) rotate_half(v, rope->half, rope->c(t), rope->s(t));
}

void softcap_block(float* s, int rows, int cols, int stride, float c) {
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols; ++k) s[static_cast<size_t>(r) * stride + k] = c * std::tanh(s[static_cast<size_t>(r) * stride + k] / c);
}
}  // namespace

// ---- [fast path] -----------------------------------------------------------------------
namespace {
using StridedMap = Eigen::Map<MatR, 0, Eigen::OuterStride<>>;
using ConstHeadView = Eigen::Map<const MatR, 0, Eigen::OuterStride<>>;  // unit inner stride

// Softmax in place over row[0, n), a full SIMD packet at a time. The short tail is read
// as one more packet padded with -inf (exp -> 0): with AVX-512 by a masked load, else
// through a small buffer. So a row of 7 keys costs one packet, not 7 scalar exps.
void softmax_row(float* row, int n) {
  using namespace Eigen::internal;
  using Packet = packet_traits<float>::type;
  constexpr int L = packet_traits<float>::size;
  const int full = n / L * L, rest = n - full;
#if defined(__AVX512F__)
  const __mmask16 tail_mask = static_cast<__mmask16>((1u << rest) - 1u);
  auto load_tail = [&] { return _mm512_mask_loadu_ps(pset1<Packet>(kNegInf), tail_mask, row + full); };
  auto store_tail = [&](Packet v) { _mm512_mask_storeu_ps(row + full, tail_mask, v); };
#else
  alignas(64) float buf[L];
  auto load_tail = [&] {
    std::fill(buf, buf + L, kNegInf);
    std::copy(row + full, row + n, buf);
    return pload<Packet>(buf);
  };
  auto store_tail = [&](Packet v) {
    pstore(buf, v);
    std::copy(buf, buf + rest, row + full);
  };
#endif
  // pass 1: max for a stable softmax
  const Packet tail = rest ? load_tail() : pset1<Packet>(kNegInf);
  Packet mx = tail;
  for (int i = 0; i < full; i += L) mx = pmax(mx, ploadu<Packet>(row + i));
  const Packet m = pset1<Packet>(predux_max(mx));
  // pass 2: exponentiate and sum. Padding lanes give exp(-inf) = 0 (Eigen's pexp clamps
  // to exp(-88.7), below float's smallest normal), so they add nothing.
  Packet sum = pset1<Packet>(0.0f);
  for (int i = 0; i < full; i += L) {
    const Packet e = pexp(psub(ploadu<Packet>(row + i), m));
    pstoreu(row + i, e);
    sum = padd(sum, e);
  }
  const Packet e_tail = rest ? pexp(psub(tail, m)) : pset1<Packet>(0.0f);
  sum = padd(sum, e_tail);
  // pass 3: normalise
  const Packet inv = pset1<Packet>(1.0f / predux(sum));
  for (int i = 0; i < full; i += L) pstoreu(row + i, pmul(ploadu<Packet>(row + i), inv));
  if (rest) store_tail(pmul(e_tail, inv));
}

// Softmax of one head's rows [t0, t1) over keys [k0, k1), in place in att_bh (T, T).
// Scores are already scaled (Q was pre-scaled). Keys the mask hides become exactly 0; a
// row with no visible key stays all zero. Returns the number of such rows.
int masked_softmax_block(float* att_bh, int T, int t0, int t1, int k0, int k1, const MhaOptions& o) {
  int empty_rows = 0;
  for (int t = t0; t < t1; ++t) {
    float* row = att_bh + static_cast<size_t>(t) * T;
    int a = k0, e = k1;  // visible keys [a, e) of row t
    if (o.causal) {
      if (o.pitfalls.reversed_mask) a = std::max(a, t + 1);
      else e = std::min(e, t + 1);
    }
    if (o.window > 0) a = std::max(a, t - o.window + 1);
    // Hidden keys inside the computed block: exactly 0 (Eigen's fill, not a memset call:
    // these runs are a few floats long).
    const int lo = std::max(a, k0), hi = std::min(std::max(e, k0), k1);
    Eigen::Map<Eigen::ArrayXf>(row + k0, lo - k0).setZero();
    Eigen::Map<Eigen::ArrayXf>(row + hi, k1 - hi).setZero();
    if (a >= e) {
      ++empty_rows;
      continue;
    }
    softmax_row(row + a, e - a);
  }
  return empty_rows;
}

// Query rows up to which the scores read K in place (an append's 1-3 rows); above it one
// copy of K^T serves every row.
constexpr int kScoresInPlaceRows = 3;

// S (rows, keys) = q (rows, dh) K^T, K (keys, dh) read row by row where it lies (row strides
// ldq, ldk, lds). Each score is one chain over d_head in order, rounded as small_gemm rounds
// (one fused multiply-add per step where the machine has them), so it equals small_gemm's
// q * K^T bit for bit; 8 keys at a time keep 8 chains in flight. Reading K^T's columns
// instead (a transposed copy per head) walked K at its row stride (12 KB on the 1B shape,
// one L1 set): 15 ms of an append's 32 heads x 16 layers (tests/bench/README.md).
void scores_few_rows(int rows, int keys, int dh, const float* q, int ldq, const float* K, int ldk, float* S, int lds) {
  constexpr int G = 8;
  for (int r = 0; r < rows; ++r) {
    const float* qr = q + static_cast<size_t>(r) * ldq;
    float* out = S + static_cast<size_t>(r) * lds;
    int s = 0;
    for (; s + G <= keys; s += G) {
      float acc[G] = {};
      const float* k = K + static_cast<size_t>(s) * ldk;
      for (int j = 0; j < dh; ++j)
        for (int i = 0; i < G; ++i) acc[i] = madd_rounded(qr[j], k[static_cast<size_t>(i) * ldk + j], acc[i]);
      std::copy_n(acc, G, out + s);
    }
    for (; s < keys; ++s) {
      float acc = 0.0f;
      const float* k = K + static_cast<size_t>(s) * ldk;
      for (int j = 0; j < dh; ++j) acc = madd_rounded(qr[j], k[j], acc);
      out[s] = acc;
    }
  }
}

// The rows [0, rows) of a head's K and V (dh floats each, row r at kv + r·stride and V
// `v_off` floats after it) requested into L2, ahead of the scores and weights·V that read them.
void prefetch_head_rows(const float* kv, int rows, int stride, int dh, int v_off) {
  const int lines = (dh * static_cast<int>(sizeof(float)) + 63) / 64;
  for (int r = 0; r < rows; ++r) {
    const char* k = reinterpret_cast<const char*>(kv + static_cast<size_t>(r) * stride);
    const char* v = reinterpret_cast<const char*>(kv + static_cast<size_t>(r) * stride + v_off);
    for (int i = 0; i < lines; ++i) __builtin_prefetch(k + 64 * i, 0, 2), __builtin_prefetch(v + 64 * i, 0, 2);
  }
}

// kt (dh, keys) = K (keys, dh)^T, K read row by row (Eigen's assignment walked K's columns,
// each step a row stride apart).
template <class View>
void transpose_rows(const View& K, MatR& kt) {
  const Eigen::Index keys = K.rows(), dh = K.cols();
  kt.resize(dh, keys);
  for (Eigen::Index s = 0; s < keys; ++s) {
    const float* k = K.data() + s * K.outerStride();
    for (Eigen::Index j = 0; j < dh; ++j) kt(j, s) = k[j];
  }
}

// One head of one sentence. Q (scaled), K, V: (T, dh) views into qkv. att_bh: (T, T).
// ctx: (T, dh) block of the concatenation. Returns the rows that saw no key.
// from > 0 (the incremental forward, model.h's KvCache): only query rows [from, T) are
// computed; Q and ctx then hold just those rows (T - from), and rows < from of att_bh are
// left as they are.
template <class View, class Ctx>
int attend_head(const View& Q, const View& K, const View& V, int T, int len, int block, float* att_bh, Ctx&& ctx,
                const MhaOptions& o, int from = 0) {
  int empty_rows = 0;
  StageLap lap(o.times);  // the benchmarks' thread seconds per step (null: off)
  // Outside the key range of each block nothing is computed: small maps are cleared in
  // one go (cheaper than a fill call per row), large ones row by row below.
  const bool zeroed = T <= 64;
  if (zeroed) std::fill(att_bh + static_cast<size_t>(from) * T, att_bh + static_cast<size_t>(T) * T, 0.0f);
  if (len < T) {  // padded queries: empty rows, zero output
    if (!zeroed) std::fill(att_bh + static_cast<size_t>(len) * T, att_bh + static_cast<size_t>(T) * T, 0.0f);
    ctx.bottomRows(T - len).setZero();
  }
  for (int t0 = from; t0 < len; t0 += block) {
    const int t1 = std::min(t0 + block, len);
    int k0 = 0, k1 = len;  // keys any row of this block may see
    if (o.causal) {
      if (o.pitfalls.reversed_mask) k0 = std::min(t0 + 1, len);
      else k1 = t1;
    }
    if (o.window > 0) k0 = std::max(k0, std::min(t0 - o.window + 1, k1));
    // Everything outside [k0, k1) in these rows is hidden: exactly 0.
    for (int t = t0; t < t1 && !zeroed; ++t) {
      float* row = att_bh + static_cast<size_t>(t) * T;
      std::fill(row, row + k0, 0.0f);
      std::fill(row + k1, row + T, 0.0f);
    }
    if (k0 >= k1) {  // reversed mask, last row: nothing to see
      empty_rows += t1 - t0;
      ctx.middleRows(t0 - from, t1 - t0).setZero();
      continue;
    }
    lap.lap(Stage::Softmax);  // the hidden cells' zeros
    // pass 1: scores for the block, written straight into the weights buffer.
    StridedMap S(att_bh + static_cast<size_t>(t0) * T + k0, t1 - t0, k1 - k0, Eigen::OuterStride<>(T));
    if constexpr (View::InnerStrideAtCompileTime == 1) {
      // Both products on small_gemm's rounding at every length (never Eigen's GEMM, which
      // rounds a row otherwise depending on how many rows it has): each score is one fused
      // chain over d_head in order and each output one over its keys in order, so a row
      // computed alone (the incremental forward, kv_cache.h) equals the same row of the
      // full forward bit for bit. A few query rows read K where it lies (scores_few_rows);
      // more share one copy of K^T.
      const auto q = Q.middleRows(t0 - from, t1 - t0);
      if (t1 - t0 <= kScoresInPlaceRows) {
        scores_few_rows(t1 - t0, k1 - k0, static_cast<int>(K.cols()), q.data(), static_cast<int>(q.outerStride()),
                        K.data() + static_cast<size_t>(k0) * K.outerStride(), static_cast<int>(K.outerStride()), S.data(), T);
      } else {
        thread_local MatR kt;  // (dh, keys)
        transpose_rows(K.middleRows(k0, k1 - k0), kt);
        small_gemm(t1 - t0, k1 - k0, static_cast<int>(kt.rows()), q.data(), static_cast<int>(q.outerStride()), kt.data(),
                   static_cast<int>(kt.cols()), S.data(), T, false);
      }
    } else {
      S.noalias() = Q.middleRows(t0 - from, t1 - t0) * K.middleRows(k0, k1 - k0).transpose();
    }
    if (o.softcap > 0) softcap_block(S.data(), t1 - t0, k1 - k0, T, o.softcap);
    lap.lap(Stage::Scores);
    // pass 2: mask and softmax in place.
    empty_rows += masked_softmax_block(att_bh, T, t0, t1, k0, k1, o);
    lap.lap(Stage::Softmax);
    // pass 3: weights · V for this block of queries.
    if constexpr (View::InnerStrideAtCompileTime == 1) {
      auto c = ctx.middleRows(t0 - from, t1 - t0);
      const auto v = V.middleRows(k0, k1 - k0);
      small_gemm(t1 - t0, static_cast<int>(v.cols()), k1 - k0, S.data(), T, v.data(), static_cast<int>(v.outerStride()), c.data(),
                 static_cast<int>(c.outerStride()), false);
    } else ctx.middleRows(t0 - from, t1 - t0).noalias() = S * V.middleRows(k0, k1 - k0);
    lap.lap(Stage::WeightsV);
  }
  return empty_rows;
}
}  // namespace

namespace {
// The families' steps on each head's q and k in qkv (rows, Dq + 2Dkv): q/k RMSNorm, then
// RoPE by position. Row r is position pos0 + r % period (mha_forward: sentences of T rows
// from 0; the incremental forward: the new rows of one sentence, from the cached prefix).
void qk_steps(const LayerWeights& w, const MhaOptions& o, MatR& qkv, int period, int pos0, int dh, int Dq) {
  const int H = o.num_heads, kvH = kv_heads(o), Dkv = kvH * dh;
  const Eigen::Index rows = qkv.rows(), W3 = qkv.cols();
  const bool q_whole = whole_norm(w.q_norm, Dq, dh), k_whole = whole_norm(w.k_norm, Dkv, dh);
  const bool qk_norm = (w.q_norm.size() == dh && w.k_norm.size() == dh) || q_whole || k_whole;
  if (!qk_norm && o.rope_inv_freq.empty()) return;
  const RowVec none;
  const RopeTable rope(o, pos0 + period);
  const RopeTable* rp = o.rope_inv_freq.empty() ? nullptr : &rope;
#pragma omp parallel for schedule(static) num_threads(threads_for(20.0 * rows * (H + kvH) * dh))
  for (Eigen::Index r = 0; r < rows; ++r) {
    float* row = qkv.data() + r * W3;
    const int t = pos0 + static_cast<int>(r % period);
    if (q_whole) rms_head(row, Dq, w.q_norm, o.qk_norm_eps);  // OLMo 2: over all heads at once
    if (k_whole) rms_head(row + Dq, Dkv, w.k_norm, o.qk_norm_eps);
    for (int h = 0; h < H; ++h) prepare_head(row + h * dh, dh, t, q_whole ? none : w.q_norm, o.qk_norm_eps, rp);
    for (int g = 0; g < kvH; ++g) prepare_head(row + Dq + g * dh, dh, t, k_whole ? none : w.k_norm, o.qk_norm_eps, rp);
  }
}
}  // namespace

namespace {
// y (N, D) = concat (N, Dq) · W_O (Dq, D) + b_O: W_O mixes the heads; the no-W_O pitfall
// returns the concatenation as it is. Both attention paths end here.
void output_projection(const LayerWeights& w, const MhaOptions& o, const MatR& concat, MatR& y) {
  y.resize(concat.rows(), w.w_o.cols());
  if (o.pitfalls.no_w_o) {
    y = concat;
  } else {
    packed_gemm(y, concat, w.w_o);
    y.rowwise() += w.b_o;
  }
}
}  // namespace

// x: (B*T, D)  q: (B*T, Dq)  k: (B*T, Dkv)
void heads_qk(const LayerWeights& w_in, const MatR& x, int T, const MhaOptions& o, MatR& q, MatR& k) {
  const int D = static_cast<int>(w_in.d_in());
  const int H = o.num_heads, kvH = kv_heads(o);
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0) && kvH >= 1 && H % kvH == 0, "validate() the config first");
  HM_ASSERT(!o.pitfalls.interleaved_reshape && !o.pitfalls.no_transpose, "heads_qk reads heads as contiguous columns");
  const int dh = head_dim(o, D), Dq = H * dh, Dkv = kvH * dh;
  LayerWeights grouped;  // full (D, D) K/V weights narrowed to the K/V heads, as mha_forward does
  const LayerWeights* wp = &w_in;
  if (w_in.proj_width(LayerWeights::kK) != Dkv) {
    grouped = kv_grouped(w_in, o);
    wp = &grouped;
  }
  const LayerWeights& w = *wp;
  MatR qkv(x.rows(), Dq + 2 * Dkv);  // (B*T, Dq + 2Dkv) = [Q | K | V]
  packed_gemm(qkv, x, w.w_qkv);
  qkv.rowwise() += w.b_qkv;
  qk_steps(w, o, qkv, T, 0, dh, Dq);
  q = qkv.leftCols(Dq);
  k = qkv.middleCols(Dq, Dkv);
}

// y: (B*T, D)  weights: (B, Hw, T, T)  x: (B*T, D)
int mha_forward(const LayerWeights& w_in, const MatR& x, int B, int T, const MhaOptions& o, MatR& y, float* weights) {
  const int D = static_cast<int>(w_in.d_in());
  const int H = o.num_heads, kvH = kv_heads(o);
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0), "num_heads must divide d_model; validate() the config first");
  HM_ASSERT(kvH >= 1 && H % kvH == 0, "num_kv_heads must divide num_heads; validate() the config first");
  HM_ASSERT(x.rows() == static_cast<Eigen::Index>(B) * T && x.cols() == D, "x must be (B*T, D)");
  // Dq = H·dh, the width of Q and of the concatenation: D for GPT-2's block.
  const int dh = head_dim(o, D), Dq = H * dh, G = H / kvH, Dkv = kvH * dh, W3 = Dq + 2 * Dkv;
  // Grouped-query attention on full (D, D) weights: narrow W_K and W_V first (kv_grouped).
  LayerWeights grouped;
  const LayerWeights* wp = &w_in;
  if (w_in.proj_width(LayerWeights::kK) != Dkv) {
    grouped = kv_grouped(w_in, o);
    wp = &grouped;
  }
  const LayerWeights& w = *wp;
  HM_ASSERT(w.w_qkv.rows() == D && w.w_qkv.cols() == W3, "call LayerWeights::fuse() after changing w_q/w_k/w_v");
  HM_ASSERT(w.w_o.rows() == Dq, "W_O must be (H*d_head, D)");
  const bool interleaved = o.pitfalls.interleaved_reshape;
  HM_ASSERT(!(interleaved && o.pitfalls.no_transpose), "the interleaved and no-transpose pitfalls exclude each other; validate() the config");
  const Eigen::Index BT = static_cast<Eigen::Index>(B) * T;

  // pass 1: one GEMM for Q, K and V side by side; Q is pre-scaled so scores come out scaled.
  // Buffers reused across calls. Plain references, because the OpenMP workers below must
  // see this thread's buffers, not thread_locals of their own.
  thread_local MatR qkv_buffer, concat_buffer, untransposed_buffer;
  MatR& qkv = qkv_buffer;        // (B*T, Dq + 2Dkv) = [Q | K | V]
  MatR& concat = concat_buffer;  // (B*T, Dq), head h in columns h*dh ..
  StageClock clock(o.times, Stage::QkvProj);
  qkv.resize(BT, W3);
  packed_gemm(qkv, x, w.w_qkv);
  qkv.rowwise() += w.b_qkv;
  clock.next(Stage::QkSteps);
  qk_steps(w, o, qkv, T, 0, dh, Dq);
  qkv.leftCols(Dq) *= score_scale(D, o);
  clock.next(Stage::HeadsWall);
  if (o.pitfalls.no_transpose) {  // each sentence's Q, K and V memory re-read as (P, T, dh)
    MatR& u = untransposed_buffer;
    u.resize(BT, W3);
    for (int b = 0; b < B; ++b)
      for (const auto& [c0, width] : {std::pair{0, Dq}, std::pair{Dq, Dkv}, std::pair{Dq + Dkv, Dkv}})
        untransposed_heads(qkv.data() + static_cast<Eigen::Index>(b) * T * W3 + c0, W3, T, width, dh,
                           u.data() + static_cast<Eigen::Index>(b) * T * W3 + c0, W3);
    std::swap(qkv, u);
  }

  // pass 2: each (b, h) reads its head, and its group's K/V head, as strided views of qkv.
  concat.resize(BT, Dq);
  std::vector<float> per_head;  // (B, H, T, T) when averaging heads
  float* w_all = weights;
  if (o.pitfalls.head_averaged) {
    per_head.resize(static_cast<size_t>(B) * H * T * T);
    w_all = per_head.data();
  }
  // Causal attention in row blocks: block [t0,t1) only needs keys [0,t1).
  const int block = (o.causal && T > 256) ? 128 : std::max(T, 1);
  const double flops = 4.0 * B * H * static_cast<double>(T) * T * dh;
  int no_key_rows = 0;

  auto run_head = [&](int bh) {
    if (o.cancelled && (*o.cancelled)()) return 0;  // a newer request: the output is dropped
    const int b = bh / H, h = bh % H;
    const int len = o.lengths ? o.lengths[b] : T;
    const float* row0 = qkv.data() + static_cast<size_t>(b) * T * W3;
    const float* q = row0 + head_feature(h, 0, H, dh, interleaved);
    const float* k = row0 + Dq + head_feature(h / G, 0, kvH, dh, interleaved);
    const float* v = k + Dkv;
    float* att_bh = w_all + static_cast<size_t>(bh) * T * T;                   // (T, T)
    auto ctx = concat.block(static_cast<Eigen::Index>(b) * T, h * dh, T, dh);  // (T, dh)
    int empty = 0;
    if (interleaved) {  // head h reads every H-th feature (K/V: every kvH-th): views with an inner stride
      const Stride2 sq(W3, H), skv(W3, kvH);
      empty = attend_head(ConstStridedView(q, T, dh, sq), ConstStridedView(k, T, dh, skv),
                          ConstStridedView(v, T, dh, skv), T, len, block, att_bh, ctx, o);
    } else {  // head h reads one contiguous slice: Eigen sees unit inner stride at compile time
      const Eigen::OuterStride<> st(W3);
      empty = attend_head(ConstHeadView(q, T, dh, st), ConstHeadView(k, T, dh, st),
                          ConstHeadView(v, T, dh, st), T, len, block, att_bh, ctx, o);
    }
    if (head_ablated(o, h)) ctx.setZero();  // the weights stay visible; the output is cut
    return h == 0 ? empty : 0;              // count query rows once, not once per head
  };
  // Small problems stay on this thread: entering an OpenMP region costs microseconds.
  if (const int nt = threads_for(flops); nt <= 1) {
    for (int bh = 0; bh < B * H; ++bh) no_key_rows += run_head(bh);
  } else {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(+ : no_key_rows)
    for (int bh = 0; bh < B * H; ++bh) no_key_rows += run_head(bh);
  }

  // pass 3: the head-averaged pitfall returns one (T, T) map per sentence.
  if (o.pitfalls.head_averaged) {
    const size_t tt = static_cast<size_t>(T) * T;
    for (int b = 0; b < B; ++b) {
      float* dst = weights + b * tt;
      std::fill(dst, dst + tt, 0.0f);
      for (int h = 0; h < H; ++h) {
        const float* src = per_head.data() + (static_cast<size_t>(b) * H + h) * tt;
        for (size_t i = 0; i < tt; ++i) dst[i] += src[i];
      }
      for (size_t i = 0; i < tt; ++i) dst[i] /= static_cast<float>(H);
    }
  }

  // pass 4: W_O mixes the heads.
  clock.next(Stage::OutProj);
  output_projection(w, o, concat, y);
  return no_key_rows;
}

// The incremental forward's attention (model.h, KvCache): the new query rows [P, T) of one
// sentence against the cached keys. x_new: (n, D), n = T - P. kv: (>= P, 2·Dkv) = [K | V]
// per row, post q/k norm and RoPE, unscaled (as mha_forward's qkv holds them); rows [P, T)
// written, grown (reserve_rows) only when it has no room for them. y: (n, D). weights:
// (H, T, T), rows [P, T) written.
int mha_forward_rows(const LayerWeights& w_in, const MatR& x_new, int P, const MhaOptions& o, MatR& kv, MatR& y, float* weights) {
  const int D = static_cast<int>(w_in.d_in());
  const int H = o.num_heads, kvH = kv_heads(o);
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0) && kvH >= 1 && H % kvH == 0, "validate() the config first");
  HM_ASSERT(o.causal && !o.pitfalls.reversed_mask && !o.pitfalls.interleaved_reshape && !o.pitfalls.no_transpose &&
                !o.pitfalls.head_averaged && !o.ablated,
            "the incremental forward serves causal attention without row-mixing pitfalls or ablation");
  HM_ASSERT(x_new.cols() == D && P >= 0 && kv.rows() >= P, "x_new must be (n, D) and kv hold the P cached rows");
  const int dh = head_dim(o, D), Dq = H * dh, G = H / kvH, Dkv = kvH * dh, W3 = Dq + 2 * Dkv;
  const int n = static_cast<int>(x_new.rows()), T = P + n;
  LayerWeights grouped;
  const LayerWeights* wp = &w_in;
  if (w_in.proj_width(LayerWeights::kK) != Dkv) {
    grouped = kv_grouped(w_in, o);
    wp = &grouped;
  }
  const LayerWeights& w = *wp;
  thread_local MatR qkv_buffer, concat_buffer;
  MatR& qkv = qkv_buffer;  // (n, Dq + 2Dkv) = [Q | K | V] of the new rows
  StageClock clock(o.times, Stage::QkvProj);
  qkv.resize(n, W3);
  packed_gemm(qkv, x_new, w.w_qkv);
  qkv.rowwise() += w.b_qkv;
  clock.next(Stage::QkSteps);
  qk_steps(w, o, qkv, n, P, dh, Dq);
  clock.next(Stage::KvCopy);
  reserve_rows(kv, T, 2 * Dkv);  // room for kKvMapsRoom more: an append moves no kept row
  kv.middleRows(P, n) = qkv.rightCols(2 * Dkv);
  clock.next(Stage::QkSteps);
  qkv.leftCols(Dq) *= score_scale(D, o);
  clock.next(Stage::HeadsWall);
  MatR& concat = concat_buffer;  // (n, Dq)
  concat.resize(n, Dq);
  const int block = T > 256 ? 128 : std::max(T, 1);
  int no_key_rows = 0;
  auto run_head = [&](int h) {
    if (o.cancelled && (*o.cancelled)()) return 0;
    const ConstHeadView Q(qkv.data() + h * dh, n, dh, Eigen::OuterStride<>(W3));
    const ConstHeadView K(kv.data() + (h / G) * dh, T, dh, Eigen::OuterStride<>(2 * Dkv));
    const ConstHeadView V(kv.data() + Dkv + (h / G) * dh, T, dh, Eigen::OuterStride<>(2 * Dkv));
    // The kept keys and values come from memory (the weights streamed since evicted them), dh
    // floats every 2·Dkv: a stride the hardware prefetcher does not follow, so each key waited
    // on its own round trip (GPT-2's append: 15 us a head for 66 KB). All are asked for here.
    if (n <= kScoresInPlaceRows) prefetch_head_rows(kv.data() + (h / G) * dh, T, 2 * Dkv, dh, Dkv);
    auto ctx = concat.block(0, h * dh, n, dh);  // (n, dh)
    const int empty = attend_head(Q, K, V, T, T, block, weights + static_cast<size_t>(h) * T * T, ctx, o, P);
    return h == 0 ? empty : 0;
  };
  // The kept K and V come from memory (16 "flops" a float: latency-bound, see run_head): GPT-2's
  // 0.8 MB a layer is worth both threads, though its products are only 0.4 MFLOP.
  if (const int nt = threads_for(4.0 * H * static_cast<double>(n) * T * dh + 32.0 * kvH * static_cast<double>(T) * dh); nt <= 1) {
    for (int h = 0; h < H; ++h) no_key_rows += run_head(h);
  } else {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(+ : no_key_rows)
    for (int h = 0; h < H; ++h) no_key_rows += run_head(h);
  }
  clock.next(Stage::OutProj);
  output_projection(w, o, concat, y);
  return no_key_rows;
}

// ---- [head score] ----------------------------------------------------------------------
float head_score(const LayerWeights& w, const float* x_t, const float* x_s, int head, const MhaOptions& o, int t, int s) {
  const int D = static_cast<int>(w.d_in());
  const int H = o.num_heads, dh = head_dim(o, D), kvH = kv_heads(o);
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0) && head >= 0 && head < H, "head index out of range for this config");
  if (o.pitfalls.no_transpose) return std::numeric_limits<float>::quiet_NaN();
  const int kv_cols = static_cast<int>(w.proj_width(LayerWeights::kK));  // H·dh (grouped here), or kvH * dh
  const bool full = kv_cols == H * dh && kvH < H;
  const int kh = full ? kv_head_of(o, head) * (H / kvH) : kv_head_of(o, head);  // the column block K is read from
  const int kH = full ? H : kvH;
  const Eigen::Map<const RowVec> xt(x_t, D), xs(x_s, D);
  std::vector<float> q(static_cast<size_t>(dh)), k(static_cast<size_t>(dh));
  for (int j = 0; j < dh; ++j) {
    const int f = head_feature(head, j, H, dh, o.pitfalls.interleaved_reshape);
    const int fk = head_feature(kh, j, kH, dh, o.pitfalls.interleaved_reshape);
    q[static_cast<size_t>(j)] = xt.dot(w.proj_cols(LayerWeights::kQ, f, 1).col(0)) + w.b_q(f);
    k[static_cast<size_t>(j)] = xs.dot(w.proj_cols(LayerWeights::kK, fk, 1).col(0)) + w.b_k(fk);
  }
  // The families' steps: q/k norm, then RoPE at the two positions (the hover knows them).
  const bool q_whole = whole_norm(w.q_norm, H * dh, dh), k_whole = whole_norm(w.k_norm, kvH * dh, dh);
  if (q_whole || k_whole) {  // OLMo 2: the norm spans every head's q (k), so the whole rows are projected
    const MatR xq = xt, xk = xs;  // (1, D)
    const float iq = q_whole ? whole_inv_rms(xq, w.proj(LayerWeights::kQ), w.b_q, o.qk_norm_eps)[0] : 1.0f;
    const float ik = k_whole ? whole_inv_rms(xk, w.proj(LayerWeights::kK), w.b_k, o.qk_norm_eps)[0] : 1.0f;
    for (int j = 0; j < dh; ++j) {
      if (q_whole) q[static_cast<size_t>(j)] *= iq * w.q_norm(head * dh + j);
      if (k_whole) k[static_cast<size_t>(j)] *= ik * w.k_norm(kh * dh + j);
    }
  }
  if (!o.rope_inv_freq.empty() || w.q_norm.size() == dh) {
    const RopeTable rope(o, std::max(t, s) + 1);
    const RopeTable* rp = o.rope_inv_freq.empty() || t < 0 || s < 0 ? nullptr : &rope;
    const RowVec none;
    prepare_head(q.data(), dh, std::max(t, 0), q_whole ? none : w.q_norm, o.qk_norm_eps, rp);
    prepare_head(k.data(), dh, std::max(s, 0), k_whole ? none : w.k_norm, o.qk_norm_eps, rp);
  }
  double score = 0;
  for (int j = 0; j < dh; ++j) score += static_cast<double>(q[static_cast<size_t>(j)]) * k[static_cast<size_t>(j)];
  return static_cast<float>(score);
}

// ---- [head trace] ----------------------------------------------------------------------
// x_b: (T, D). Every head is a module of its own: Linear(D, dh) for Q, K and V.
HeadTrace head_trace(const LayerWeights& w_in, const MatR& x_b, int len, int head, const MhaOptions& o) {
  const int D = static_cast<int>(w_in.d_in());
  const int H = o.num_heads;
  HM_ASSERT(H >= 1 && (o.head_dim > 0 || D % H == 0), "num_heads must divide d_model; validate() the config first");
  HM_ASSERT(head >= 0 && head < H, "head index out of range");
  HM_ASSERT(x_b.cols() == D && len <= x_b.rows(), "x_b must be (T, D) with len <= T");
  const int T = static_cast<int>(x_b.rows());
  const int dh = head_dim(o, D), Dq = H * dh, kvH = kv_heads(o), Dkv = kvH * dh;
  const RopeTable rope(o, T);
  const RopeTable* rp = o.rope_inv_freq.empty() ? nullptr : &rope;
  const bool interleaved = o.pitfalls.interleaved_reshape;
  const float scale = score_scale(D, o);
  const LayerWeights w = kv_grouped(w_in, o);  // W_K, W_V: (D, Dkv)
  const bool q_whole = whole_norm(w.q_norm, Dq, dh), k_whole = whole_norm(w.k_norm, Dkv, dh);
  const std::vector<float> q_inv = q_whole ? whole_inv_rms(x_b, w.w_q, w.b_q, o.qk_norm_eps) : std::vector<float>();  // (T)
  const std::vector<float> k_inv = k_whole ? whole_inv_rms(x_b, w.w_k, w.b_k, o.qk_norm_eps) : std::vector<float>();  // (T)

  // The forgotten-transpose pitfall has no per-head module to write: its heads are pieces of
  // the full (T, D) projections' memory, so those are computed and re-read as (H, T, dh).
  MatR q_all, k_all, v_all;  // (T, D), (T, Dkv), (T, Dkv), untransposed
  if (o.pitfalls.no_transpose) {
    auto project = [&](const MatR& wm, const RowVec& bv, int width) {
      MatR full = x_b * wm;  // (T, width)
      full.rowwise() += bv;
      MatR u(T, width);
      untransposed_heads(full.data(), width, T, width, dh, u.data(), width);
      return u;
    };
    q_all = project(w.w_q, w.b_q, Dq);
    k_all = project(w.w_k, w.b_k, Dkv);
    v_all = project(w.w_v, w.b_v, Dkv);
  }

  HeadTrace tr;
  tr.head = head;
  tr.len = len;
  tr.scale = scale;
  tr.softcap = o.softcap;
  tr.window = o.window;
  tr.rope_inv_freq = rope_freq_for(o, T);
  tr.concat = MatR::Zero(T, Dq);
  for (int h = 0; h < H; ++h) {
    const int g = kv_head_of(o, h);  // the K/V head this query head reads
    MatR q, k, v;                    // (T, dh) each
    if (o.pitfalls.no_transpose) {
      q = q_all.middleCols(h * dh, dh);
      k = k_all.middleCols(g * dh, dh);
      v = v_all.middleCols(g * dh, dh);
    } else {
      // This head's own (D, dh) weights and (dh) biases: the columns of W it reads.
      MatR wq(D, dh), wk(D, dh), wv(D, dh);
      RowVec bq(dh), bk(dh), bv(dh);
      for (int j = 0; j < dh; ++j) {
        const int f = head_feature(h, j, H, dh, interleaved), fk = head_feature(g, j, kvH, dh, interleaved);
        wq.col(j) = w.w_q.col(f);
        wk.col(j) = w.w_k.col(fk);
        wv.col(j) = w.w_v.col(fk);
        bq(j) = w.b_q(f);
        bk(j) = w.b_k(fk);
        bv(j) = w.b_v(fk);
      }
      q = x_b * wq;  // (T, dh)
      q.rowwise() += bq;
      k = x_b * wk;  // (T, dh)
      k.rowwise() += bk;
      v = x_b * wv;  // (T, dh)
      v.rowwise() += bv;
    }
    const bool qk_norm = (w.q_norm.size() == dh && w.k_norm.size() == dh) || q_whole || k_whole;
    MatR q_proj, k_proj, q_normed, k_normed;  // (T, dh) each, kept for the traced head only
    if (h == head && (qk_norm || rp)) q_proj = q, k_proj = k;
    const RowVec none;
    for (int t = 0; t < T; ++t) {  // the families' q/k norm and RoPE, row by row
      for (int j = 0; j < dh && (q_whole || k_whole); ++j) {
        if (q_whole) q(t, j) *= q_inv[static_cast<size_t>(t)] * w.q_norm(h * dh + j);
        if (k_whole) k(t, j) *= k_inv[static_cast<size_t>(t)] * w.k_norm(g * dh + j);
      }
      prepare_head(q.row(t).data(), dh, t, q_whole ? none : w.q_norm, o.qk_norm_eps, nullptr);
      prepare_head(k.row(t).data(), dh, t, k_whole ? none : w.k_norm, o.qk_norm_eps, nullptr);
    }
    if (h == head && qk_norm) q_normed = q, k_normed = k;
    if (rp)
      for (int t = 0; t < T; ++t) {
        rotate_half(q.row(t).data(), rp->half, rp->c(t), rp->s(t));
        rotate_half(k.row(t).data(), rp->half, rp->c(t), rp->s(t));
      }
    MatR scores = q * k.transpose();  // (T, T)
    MatR scaled = scores * scale;     // (T, T)
    MatR capped;                      // (T, T) when soft-capped
    if (o.softcap > 0) {
      capped = scaled;
      softcap_block(capped.data(), T, T, T, o.softcap);
    }
    MatR masked = o.softcap > 0 ? capped : scaled;  // (T, T)
    MatR att = MatR::Zero(T, T);      // (T, T)
    for (int t = 0; t < T; ++t) {
      float mx = kNegInf;
      for (int s = 0; s < T; ++s) {
        if (!key_visible(o, t, s, len)) masked(t, s) = kNegInf;
        mx = std::max(mx, masked(t, s));
      }
      if (mx == kNegInf) continue;  // no visible key: a row of zeros, not NaN
      double sum = 0;
      for (int s = 0; s < T; ++s) sum += (att(t, s) = masked(t, s) == kNegInf ? 0.0f : std::exp(masked(t, s) - mx));
      att.row(t) /= static_cast<float>(sum);
    }
    MatR out_h = att * v;  // (T, dh)
    if (!head_ablated(o, h)) tr.concat.block(0, h * dh, T, dh) = out_h;
    if (h == head) {
      tr.q = std::move(q);
      tr.k = std::move(k);
      tr.v = std::move(v);
      tr.q_proj = std::move(q_proj);
      tr.k_proj = std::move(k_proj);
      tr.q_normed = std::move(q_normed);
      tr.k_normed = std::move(k_normed);
      tr.scores = std::move(scores);
      tr.scaled = std::move(scaled);
      tr.capped = std::move(capped);
      tr.masked = std::move(masked);
      tr.weights = std::move(att);
      tr.head_out = std::move(out_h);
    }
  }
  if (o.pitfalls.no_w_o) {
    tr.out = tr.concat;
  } else {
    tr.out.resize(tr.concat.rows(), w.w_o.cols());
    packed_gemm(tr.out, tr.concat, w.w_o);
    tr.out.rowwise() += w.b_o;
  }
  return tr;
}

// ---- [explicit tensors] ----------------------------------------------------------------
static Tensor tensor_of(const MatR& m) {
  Tensor t({m.rows(), m.cols()});
  std::copy(m.data(), m.data() + m.size(), t.data.begin());
  return t;
}

static std::vector<float> vec_of(const RowVec& v) { return std::vector<float>(v.data(), v.data() + v.size()); }

// x: (B, T, D)
std::map<std::string, Tensor> mha_explicit(const LayerWeights& w_in, const Tensor& x, const MhaOptions& o) {
  HM_ASSERT(x.rank() == 3, "x must be (B, T, D)");
  const int64_t B = x.dim(0), T = x.dim(1), D = x.dim(2);
  const int64_t H = o.num_heads, dh = D / H;
  HM_ASSERT(H >= 1 && D % H == 0, "num_heads must divide d_model");
  const int64_t kvH = kv_heads(o), G = H / kvH;
  const LayerWeights w = kv_grouped(w_in, o);  // W_K, W_V: (D, kvH·dh)
  std::map<std::string, Tensor> s;

  s["q"] = add_bias(matmul(x, tensor_of(w.w_q)), vec_of(w.b_q));  // (B, T, D)
  s["k"] = add_bias(matmul(x, tensor_of(w.w_k)), vec_of(w.b_k));  // (B, T, kvH·dh)
  s["v"] = add_bias(matmul(x, tensor_of(w.w_v)), vec_of(w.b_v));  // (B, T, kvH·dh)

  // Split heads. Correct: view(B,T,P,dh).transpose(1,2). Pitfalls: view(B,T,dh,P), whose
  // head axis is last, then permute(0,3,1,2) spelled as two transposes; or the transpose
  // forgotten, so the same memory is read as (B,P,T,dh). P = H for Q, kvH for K and V.
  auto split = [&](const Tensor& t, int64_t P) {
    if (o.pitfalls.interleaved_reshape) return t.view({B, T, dh, P}).transpose(1, 3).transpose(2, 3);
    if (o.pitfalls.no_transpose) return t.view({B, T, P, dh}).view({B, P, T, dh});
    return t.view({B, T, P, dh}).transpose(1, 2);
  };
  s["q_view"] = o.pitfalls.interleaved_reshape ? s["q"].view({B, T, dh, H}) : s["q"].view({B, T, H, dh});
  s["q_heads"] = split(s["q"], H);  // (B, H, T, dh)
  s["k_heads"] = split(s["k"], kvH);  // (B, kvH, T, dh)
  s["v_heads"] = split(s["v"], kvH);  // (B, kvH, T, dh)
  if (kvH < H) {  // each K/V head repeated for the G query heads of its group
    auto repeat = [&](const Tensor& t) {
      Tensor r({B, H, T, dh});  // (B, H, T, dh)
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          std::copy_n(t.data.begin() + ((b * kvH + h / G) * T) * dh, T * dh, r.data.begin() + ((b * H + h) * T) * dh);
      return r;
    };
    s["k_repeat"] = repeat(s["k_heads"]);
    s["v_repeat"] = repeat(s["v_heads"]);
  }
  const Tensor& k_h = kvH < H ? s["k_repeat"] : s["k_heads"];
  const Tensor& v_h = kvH < H ? s["v_repeat"] : s["v_heads"];

  s["scores"] = matmul(s["q_heads"], transpose_last2(k_h));                     // (B, H, T, T)
  s["scaled"] = scale(s["scores"], score_scale(static_cast<int>(D), o));                  // (B, H, T, T)
  Tensor masked = s["scaled"];                                                            // (B, H, T, T)
  for (int64_t b = 0; b < B; ++b) {
    const int len = o.lengths ? o.lengths[b] : static_cast<int>(T);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t k = 0; k < T; ++k)
          if (!key_visible(o, static_cast<int>(t), static_cast<int>(k), len))
            masked.data[((b * H + h) * T + t) * T + k] = kNegInf;
  }
  s["masked"] = masked;
  s["weights"] = softmax_last(masked);                 // (B, H, T, T)
  s["ctx"] = matmul(s["weights"], v_h);                // (B, H, T, dh)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      if (head_ablated(o, static_cast<int>(h)))
        std::fill_n(s["ctx"].data.begin() + (b * H + h) * T * dh, T * dh, 0.0f);
  s["ctx_t"] = s["ctx"].transpose(1, 2);               // (B, T, H, dh)
  s["concat"] = s["ctx_t"].view({B, T, D});            // (B, T, D)
  s["out"] = o.pitfalls.no_w_o ? s["concat"] : add_bias(matmul(s["concat"], tensor_of(w.w_o.plain())), vec_of(w.b_o));
  if (o.pitfalls.head_averaged) {
    Tensor mean({B, T, T});  // (B, T, T)
    const Tensor& wt = s["weights"];
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < T * T; ++i) mean.data[b * T * T + i] += wt.data[(b * H + h) * T * T + i] / H;
    s["weights_mean"] = mean;
  }
  return s;
}

}  // namespace headmap
