// backprop.cpp: forward and backward of each layer the trainer uses (see backprop.h).
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, V = vocab, N = B*T
// Sections: [threads] [layernorm] [linear] [gelu] [attention] [cross-entropy] [embedding]
#include "core/train/backprop.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/math/activation.h"
#include "core/math/gemm.h"

namespace headmap {

// ---- [threads] -------------------------------------------------------------------------
namespace {
using ConstBlock = Eigen::Map<const MatR, 0, Eigen::OuterStride<>>;  // a strided (rows, cols) view
using Block = Eigen::Map<MatR, 0, Eigen::OuterStride<>>;

// Runs f(i0, i1) over [0, n) cut into nt contiguous chunks (multiples of 16 floats, one
// AVX-512 register). Every element is written by exactly one thread, so results do not
// depend on scheduling.
template <class F>
void parallel_chunks(Eigen::Index n, int nt, F&& f) {
  if (nt <= 1 || n < 32) {
    f(Eigen::Index(0), n);
    return;
  }
  const Eigen::Index step = ((n + nt - 1) / nt + 15) / 16 * 16;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int p = 0; p < nt; ++p) {
    const Eigen::Index i0 = std::min(n, p * step), i1 = std::min(n, i0 + step);
    if (i1 > i0) f(i0, i1);
  }
}
}  // namespace

// ---- [layernorm] -----------------------------------------------------------------------
// out: (N, D)   mean, rstd: (N)   x: (N, D)   g, b: (D)
void layernorm_forward(MatR& out, float* mean, float* rstd, const MatR& x, const RowVec& g, const RowVec& b) {
  const Eigen::Index N = x.rows(), D = x.cols();
  HM_ASSERT(g.size() == D && b.size() == D, "LayerNorm gain and bias must have D entries");
  out.resize(N, D);
  parallel_chunks(N, threads_for(10.0 * N * D), [&](Eigen::Index i0, Eigen::Index i1) {
    for (Eigen::Index i = i0; i < i1; ++i) {
      // The same float arithmetic as layer_norm() in model.cpp, so inference matches.
      const float m = x.row(i).mean();
      const float var = (x.row(i).array() - m).square().mean();
      const float inv = 1.0f / std::sqrt(var + 1e-5f);
      out.row(i) = ((x.row(i).array() - m) * inv * g.array() + b.array()).matrix();
      mean[i] = m;
      rstd[i] = inv;
    }
  });
}

// dx: (N, D) +=   dg, db: (D) +=   dout, x: (N, D)   mean, rstd: (N)   g: (D)
void layernorm_backward(MatR& dx, RowVec& dg, RowVec& db, const MatR& dout, const MatR& x, const float* mean,
                        const float* rstd, const RowVec& g) {
  const Eigen::Index N = x.rows(), D = x.cols();
  HM_ASSERT(dx.rows() == N && dx.cols() == D && dout.rows() == N && dout.cols() == D, "dx and dout must be (N, D) like x");
  // pass 1: dx, row by row. With xhat = (x - mean) rstd and dxhat = dout * g:
  //   dx = rstd (dxhat - mean(dxhat) - xhat mean(dxhat xhat))
  parallel_chunks(N, threads_for(12.0 * N * D), [&](Eigen::Index i0, Eigen::Index i1) {
    Eigen::Array<float, 1, Eigen::Dynamic> xhat(D), dxhat(D);
    for (Eigen::Index i = i0; i < i1; ++i) {
      xhat = (x.row(i).array() - mean[i]) * rstd[i];
      dxhat = dout.row(i).array() * g.array();
      const float m1 = dxhat.mean(), m2 = (dxhat * xhat).mean();
      dx.row(i).array() += rstd[i] * (dxhat - m1 - xhat * m2);
    }
  });
  // pass 2: the gain and bias gradients, summed over rows in a fixed order.
  for (Eigen::Index i = 0; i < N; ++i) {
    dg.array() += dout.row(i).array() * (x.row(i).array() - mean[i]) * rstd[i];
    db += dout.row(i);
  }
}

// ---- [linear] --------------------------------------------------------------------------
// y: (N, out)   x: (N, in)   W: (in, out)   b: (out)
void linear_forward(MatR& y, const MatR& x, const MatR& W, const RowVec& b) {
  HM_ASSERT(x.cols() == W.rows() && b.size() == W.cols(), "linear: x (N, in), W (in, out), b (out)");
  y.resize(x.rows(), W.cols());
  gemm(y, x, W);
  y.rowwise() += b;
}

// db: (out) +=   dy: (N, out)
void add_column_sums(RowVec& db, const MatR& dy) {
  HM_ASSERT(db.size() == dy.cols(), "bias gradient must have one entry per column of dy");
  for (Eigen::Index i = 0; i < dy.rows(); ++i) db += dy.row(i);
}

// dx: (N, in) =   dW: (in, out) +=   db: (out) +=   dy: (N, out)   x: (N, in)   W: (in, out)
void linear_backward(MatR* dx, MatR& dW, RowVec& db, const MatR& dy, const MatR& x, const MatR& W) {
  HM_ASSERT(dy.rows() == x.rows() && dy.cols() == W.cols() && x.cols() == W.rows(), "linear backward: shapes disagree");
  if (dx) {
    dx->resize(x.rows(), W.rows());
    gemm(*dx, dy, W.transpose());  // (N, out) (out, in)
  }
  gemm(dW, x.transpose(), dy, 1.0f);  // (in, N) (N, out)
  add_column_sums(db, dy);
}

// ---- [gelu] ----------------------------------------------------------------------------
namespace {
constexpr float kGeluK = static_cast<float>(kGeluTanhK);  // sqrt(2/pi), the table's (core/math/activation.h)
constexpr float kGeluC = static_cast<float>(kGeluTanhC);
}  // namespace

// out, th: (N, F)   x: (N, F)
void gelu_forward(MatR& out, MatR& th, const MatR& x) {
  out.resize(x.rows(), x.cols());
  th.resize(x.rows(), x.cols());
  parallel_chunks(x.size(), threads_for(30.0 * x.size()), [&](Eigen::Index i0, Eigen::Index i1) {
    const auto xa = Eigen::Map<const Eigen::ArrayXf>(x.data() + i0, i1 - i0);
    auto ta = Eigen::Map<Eigen::ArrayXf>(th.data() + i0, i1 - i0);
    ta = (kGeluK * (xa + kGeluC * xa.cube())).tanh();
    Eigen::Map<Eigen::ArrayXf>(out.data() + i0, i1 - i0) = 0.5f * xa * (1.0f + ta);
  });
}

// dx: (N, F) =   dout, x, th: (N, F)
void gelu_backward(MatR& dx, const MatR& dout, const MatR& x, const MatR& th) {
  dx.resize(x.rows(), x.cols());
  parallel_chunks(x.size(), threads_for(12.0 * x.size()), [&](Eigen::Index i0, Eigen::Index i1) {
    const auto xa = Eigen::Map<const Eigen::ArrayXf>(x.data() + i0, i1 - i0);
    const auto ta = Eigen::Map<const Eigen::ArrayXf>(th.data() + i0, i1 - i0);
    const auto da = Eigen::Map<const Eigen::ArrayXf>(dout.data() + i0, i1 - i0);
    Eigen::Map<Eigen::ArrayXf>(dx.data() + i0, i1 - i0) =
        da * (0.5f * (1.0f + ta) + 0.5f * xa * (1.0f - ta.square()) * kGeluK * (1.0f + 3.0f * kGeluC * xa.square()));
  });
}

// ---- [attention] -----------------------------------------------------------------------
// ctx: (N, D)   att: (B, H, T, T)   qkv: (N, 3D)
void attention_forward(MatR& ctx, float* att, const MatR& qkv, int B, int T, int H) {
  const int D = static_cast<int>(qkv.cols() / 3);
  HM_ASSERT(qkv.rows() == static_cast<Eigen::Index>(B) * T && qkv.cols() == 3 * D, "qkv must be (B*T, 3D)");
  HM_ASSERT(H >= 1 && D % H == 0, "num_heads must divide d_model");
  const int dh = D / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  ctx.resize(static_cast<Eigen::Index>(B) * T, D);
  const int nt = std::min(threads_for(4.0 * B * H * T * T * dh), B * H);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H;
    thread_local MatR qs, kt;  // (T, d_head) scaled Q_h, (d_head, T) K_h^T
    const float* base = qkv.data() + static_cast<size_t>(b) * T * 3 * D + h * dh;
    const ConstBlock Q(base, T, dh, Eigen::OuterStride<>(3 * D));          // (T, d_head)
    const ConstBlock K(base + D, T, dh, Eigen::OuterStride<>(3 * D));      // (T, d_head)
    const ConstBlock V(base + 2 * D, T, dh, Eigen::OuterStride<>(3 * D));  // (T, d_head)
    float* att_bh = att + static_cast<size_t>(bh) * T * T;                 // (T, T)
    Block S(att_bh, T, T, Eigen::OuterStride<>(T));
    Block ctx_bh(ctx.data() + static_cast<size_t>(b) * T * D + h * dh, T, dh, Eigen::OuterStride<>(D));  // (T, d_head)
    // pass 1: scores, with Q pre-scaled as the inference path does.
    qs = Q * scale;
    kt = K.transpose();
    gemm(S, qs, kt);
    // pass 2: causal softmax row by row: keys s <= t, the rest exactly 0.
    for (int t = 0; t < T; ++t) {
      float* row = att_bh + static_cast<size_t>(t) * T;
      auto r = Eigen::Map<Eigen::ArrayXf>(row, t + 1);
      const float mx = r.maxCoeff();
      r = (r - mx).exp();
      r *= 1.0f / r.sum();
      std::fill(row + t + 1, row + T, 0.0f);
    }
    // pass 3: weights · V.
    gemm(ctx_bh, S, V);
  }
}

// dqkv: (N, 3D) =   dctx: (N, D)   qkv: (N, 3D)   att: (B, H, T, T)
void attention_backward(MatR& dqkv, const MatR& dctx, const MatR& qkv, const float* att, int B, int T, int H,
                        PrevTokenPrior prior) {
  const int D = static_cast<int>(qkv.cols() / 3);
  HM_ASSERT(dctx.rows() == qkv.rows() && dctx.cols() == D, "dctx must be (B*T, D)");
  const int dh = D / H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  dqkv.resize(qkv.rows(), 3 * D);
  const int nt = std::min(threads_for(8.0 * B * H * T * T * dh), B * H);
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int bh = 0; bh < B * H; ++bh) {
    const int b = bh / H, h = bh % H;
    thread_local MatR vt, dp, pt, dst;  // (d_head, T) V_h^T, (T, T) dP, P^T, dS^T
    const size_t row0 = static_cast<size_t>(b) * T;
    const float* base = qkv.data() + row0 * 3 * D + h * dh;
    float* dbase = dqkv.data() + row0 * 3 * D + h * dh;
    const Eigen::OuterStride<> s3(3 * D), s1(D), sT(T);
    const ConstBlock Q(base, T, dh, s3), K(base + D, T, dh, s3), V(base + 2 * D, T, dh, s3);  // (T, d_head) each
    Block dQ(dbase, T, dh, s3), dK(dbase + D, T, dh, s3), dV(dbase + 2 * D, T, dh, s3);       // (T, d_head) each
    const ConstBlock dctx_bh(dctx.data() + row0 * D + h * dh, T, dh, s1);                     // (T, d_head)
    const ConstBlock P(att + static_cast<size_t>(bh) * T * T, T, T, sT);                      // (T, T)
    // pass 1: dP = dctx_h V_h^T and dV_h = P^T dctx_h.
    vt = V.transpose();
    dp.resize(T, T);
    gemm(dp, dctx_bh, vt);
    pt = P.transpose();
    gemm(dV, pt, dctx_bh);
    // pass 1b: the prior's d/dP(t, t-1) = -weight / (n P(t, t-1)), n = B (T - 1) rows.
    if (h == prior.head && prior.weight > 0.0f && T > 1) {
      const float g = -prior.weight / static_cast<float>(static_cast<int64_t>(B) * (T - 1));
      for (int t = 1; t < T; ++t) dp(t, t - 1) += g / std::max(P(t, t - 1), 1e-30f);
    }
    // pass 2: softmax backward, dS = P (dP - sum_s dP P), times the score scale so that
    // dQ = dS K and dK = dS^T Q use the unscaled projections. Hidden keys stay 0 (P = 0).
    for (int t = 0; t < T; ++t) {
      auto p = P.row(t).head(t + 1).array();
      auto d = dp.row(t).head(t + 1).array();
      const float dot = (p * d).sum();
      d = scale * p * (d - dot);
      dp.row(t).tail(T - t - 1).setZero();
    }
    // pass 3: into the projections.
    gemm(dQ, dp, K);
    dst = dp.transpose();
    gemm(dK, dst, Q);
  }
}

double prev_token_prior_loss(const float* att, int B, int T, int H, PrevTokenPrior prior) {
  if (prior.head < 0 || prior.weight <= 0.0f || T < 2) return 0.0;
  HM_ASSERT(prior.head < H, "the prior's head must be one of the layer's heads");
  double sum = 0.0;
  for (int b = 0; b < B; ++b) {
    const float* P = att + (static_cast<size_t>(b) * H + prior.head) * T * T;  // (T, T)
    for (int t = 1; t < T; ++t) sum -= std::log(std::max(static_cast<double>(P[static_cast<size_t>(t) * T + t - 1]), 1e-30));
  }
  return prior.weight * sum / (static_cast<double>(B) * (T - 1));
}

// ---- [cross-entropy] -------------------------------------------------------------------
// logits: (N, V) in place   row_loss: (N)   targets: (N)
CrossEntropy cross_entropy_forward_backward(MatR& logits, std::vector<double>& row_loss, const int32_t* targets) {
  const Eigen::Index N = logits.rows(), V = logits.cols();
  row_loss.assign(static_cast<size_t>(N), 0.0);
  CrossEntropy ce;
  for (Eigen::Index i = 0; i < N; ++i) ce.targets += targets[i] >= 0;
  const float inv_n = ce.targets ? 1.0f / static_cast<float>(ce.targets) : 0.0f;
  parallel_chunks(N, threads_for(20.0 * N * V), [&](Eigen::Index i0, Eigen::Index i1) {
    for (Eigen::Index i = i0; i < i1; ++i) {
      auto row = logits.row(i).array();
      const int y = targets[i];
      if (y < 0) {
        row.setZero();
        continue;
      }
      HM_ASSERT(y < V, "a target id is outside the vocabulary");
      // pass 1: max, exp, sum (a stable log-sum-exp); pass 2: the gradient in place.
      const float target_logit = row(y);
      const float mx = row.maxCoeff();
      row = (row - mx).exp();
      const float sum = row.sum();
      row_loss[static_cast<size_t>(i)] = mx + std::log(static_cast<double>(sum)) - target_logit;
      row *= inv_n / sum;
      row(y) -= inv_n;
    }
  });
  double total = 0;
  for (double l : row_loss) total += l;  // a fixed order: the same sum on every run
  ce.loss = ce.targets ? total / ce.targets : 0.0;
  return ce;
}

// logits: (N, V)   row_loss: (N)   targets: (N)
CrossEntropy cross_entropy_loss(const MatR& logits, std::vector<double>& row_loss, const int32_t* targets) {
  const Eigen::Index N = logits.rows();
  row_loss.assign(static_cast<size_t>(N), 0.0);
  CrossEntropy ce;
  for (Eigen::Index i = 0; i < N; ++i) ce.targets += targets[i] >= 0;
  parallel_chunks(N, threads_for(20.0 * N * logits.cols()), [&](Eigen::Index i0, Eigen::Index i1) {
    for (Eigen::Index i = i0; i < i1; ++i) {
      const int y = targets[i];
      if (y < 0) continue;
      HM_ASSERT(y < logits.cols(), "a target id is outside the vocabulary");
      const auto row = logits.row(i).array();
      const float mx = row.maxCoeff();
      row_loss[static_cast<size_t>(i)] = mx + std::log(static_cast<double>((row - mx).exp().sum())) - row(y);
    }
  });
  double total = 0;
  for (double l : row_loss) total += l;
  ce.loss = ce.targets ? total / ce.targets : 0.0;
  return ce;
}

// ---- [embedding] -----------------------------------------------------------------------
// x: (N, D)   tokens: (B, T)   tok_emb: (V, D)   pos_emb: (>= T, D)
void embedding_forward(MatR& x, const int32_t* tokens, int B, int T, const MatR& tok_emb, const MatR& pos_emb) {
  HM_ASSERT(pos_emb.rows() >= T, "the sequence is longer than the learned positions: lower seq or raise context");
  x.resize(static_cast<Eigen::Index>(B) * T, tok_emb.cols());
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const Eigen::Index i = static_cast<Eigen::Index>(b) * T + t;
      const int id = tokens[i];
      HM_ASSERT(id >= 0 && id < tok_emb.rows(), "a token id is outside the vocabulary");
      x.row(i) = tok_emb.row(id) + pos_emb.row(t);
    }
}

// dtok_emb: (V, D) +=   dpos_emb: (>= T, D) +=   dx: (N, D)   tokens: (B, T)
void embedding_backward(MatR& dtok_emb, MatR& dpos_emb, const MatR& dx, const int32_t* tokens, int B, int T) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t) {
      const Eigen::Index i = static_cast<Eigen::Index>(b) * T + t;
      dtok_emb.row(tokens[i]) += dx.row(i);
      dpos_emb.row(t) += dx.row(i);
    }
}

}  // namespace headmap
