// The trainer: every backward pass against central finite differences over odd sizes,
// the training forward against forward(), and training runs (loss falls, determinism,
// cancel, snapshots, no W_O).
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab, N = B*T
//
// Two kinds of gradient check:
//  - per operation, in float: f = sum(out * R) for a fixed random R, so d f / d out = R is
//    what the backward receives. Central differences with eps = 1e-2 on O(1) inputs have a
//    truncation error ~eps^2 |f'''| ~ 1e-4 and a rounding error ~1e-6 / eps ~ 1e-4, so
//    |numeric - analytic| <= 2e-3 + 2e-2 |analytic| passes a correct backward, while a
//    wrong term (a missing mean in LayerNorm, a lost scale) is off by O(|gradient|).
//  - the whole model, against a plain double-precision reference forward written here
//    (loops, no shared code): its central differences (eps = 1e-5) are exact to ~1e-9, so
//    the float analytic gradients are held to 1e-5 + 2e-3 |g|, float accumulation error.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <functional>

#include "core/train/backprop.h"
#include "core/train/grammar.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/text/bpe.h"
#include "core/train/trainer.h"
#include "test_util.h"

using namespace headmap;
using headmap::test::random_matrix;

namespace {

// ---- helpers ---------------------------------------------------------------------------
// d f / d x_i by central differences, for every element of x (restored afterwards).
std::vector<double> numeric_grad(float* x, int64_t n, float eps, const std::function<double()>& f) {
  std::vector<double> g(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float keep = x[i];
    x[i] = keep + eps;
    const double fp = f();
    x[i] = keep - eps;
    const double fm = f();
    x[i] = keep;
    g[static_cast<size_t>(i)] = (fp - fm) / (2.0 * static_cast<double>(eps));
  }
  return g;
}

// Every element within atol + rtol |numeric|; and the gradient is not trivially zero.
void expect_grad_close(const std::vector<double>& num, const float* ana, double atol, double rtol, const std::string& what) {
  double worst = 0, norm = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < num.size(); ++i) {
    const double err = std::abs(num[i] - ana[i]) - (atol + rtol * std::abs(num[i]));
    if (err > worst || i == 0) {
      worst = err;
      worst_i = i;
    }
    norm += num[i] * num[i];
  }
  EXPECT_LE(worst, 0.0) << what << ": element " << worst_i << " numeric " << num[worst_i] << " analytic " << ana[worst_i];
  EXPECT_GT(std::sqrt(norm), 1e-4) << what << ": the gradient is ~0, so the check proves nothing";
}

double dot(const MatR& a, const MatR& r) {
  double s = 0;
  for (int64_t i = 0; i < a.size(); ++i) s += static_cast<double>(a.data()[i]) * r.data()[i];
  return s;
}

constexpr float kEps = 1e-2f;
constexpr double kAtol = 2e-3, kRtol = 2e-2;

}  // namespace

// ---- per operation ---------------------------------------------------------------------
TEST(Backprop, LayerNormMatchesFiniteDifferences) {
  for (auto [N, D] : {std::pair{7, 5}, std::pair{1, 3}, std::pair{4, 24}}) {
    MatR x = random_matrix(N, D, 11) * 1.5f;
    x.array() += 0.7f;  // a non-zero mean, so the mean term matters
    RowVec g = (random_matrix(1, D, 12) * 0.5f).array() + 1.0f;
    RowVec b = random_matrix(1, D, 13) * 0.3f;
    const MatR R = random_matrix(N, D, 14);
    MatR out;
    std::vector<float> mean(N), rstd(N);
    auto f = [&] {
      layernorm_forward(out, mean.data(), rstd.data(), x, g, b);
      return dot(out, R);
    };
    f();
    MatR dx = MatR::Zero(N, D);
    RowVec dg = RowVec::Zero(D), db = RowVec::Zero(D);
    layernorm_backward(dx, dg, db, R, x, mean.data(), rstd.data(), g);
    const std::string at = " (N=" + std::to_string(N) + ", D=" + std::to_string(D) + ")";
    expect_grad_close(numeric_grad(x.data(), x.size(), kEps, f), dx.data(), kAtol, kRtol, "LayerNorm dx" + at);
    expect_grad_close(numeric_grad(g.data(), g.size(), kEps, f), dg.data(), kAtol, kRtol, "LayerNorm dg" + at);
    expect_grad_close(numeric_grad(b.data(), b.size(), kEps, f), db.data(), kAtol, kRtol, "LayerNorm db" + at);
  }
}

TEST(Backprop, LayerNormForwardIsTheInferenceLayerNorm) {
  const MatR x = random_matrix(9, 13, 21);
  const RowVec g = random_matrix(1, 13, 22), b = random_matrix(1, 13, 23);
  MatR a, c;
  std::vector<float> mean(9), rstd(9);
  layernorm_forward(a, mean.data(), rstd.data(), x, g, b);
  layer_norm(x, g, b, c);
  EXPECT_EQ(a, c) << "the same float arithmetic, bit for bit";
}

TEST(Backprop, LinearMatchesFiniteDifferences) {
  const int N = 3, I = 5, O = 7;
  MatR x = random_matrix(N, I, 31), W = random_matrix(I, O, 32);
  RowVec b = random_matrix(1, O, 33);
  const MatR R = random_matrix(N, O, 34);
  MatR y;
  auto f = [&] {
    linear_forward(y, x, W, b);
    return dot(y, R);
  };
  MatR dx, dW = MatR::Zero(I, O);
  RowVec db = RowVec::Zero(O);
  linear_backward(&dx, dW, db, R, x, W);
  expect_grad_close(numeric_grad(x.data(), x.size(), kEps, f), dx.data(), kAtol, kRtol, "linear dx");
  expect_grad_close(numeric_grad(W.data(), W.size(), kEps, f), dW.data(), kAtol, kRtol, "linear dW");
  expect_grad_close(numeric_grad(b.data(), b.size(), kEps, f), db.data(), kAtol, kRtol, "linear db");
}

TEST(Backprop, GeluMatchesFiniteDifferencesAndTheInferenceGelu) {
  const int N = 4, F = 9;
  MatR x(N, F);
  for (int i = 0; i < N * F; ++i) x.data()[i] = -4.0f + 8.0f * static_cast<float>(i) / (N * F - 1);  // -4 .. 4
  const MatR R = random_matrix(N, F, 41);
  MatR out, th;
  auto f = [&] {
    gelu_forward(out, th, x);
    return dot(out, R);
  };
  f();
  for (int i = 0; i < N * F; ++i) EXPECT_NEAR(out.data()[i], gelu(x.data()[i]), 2e-6f) << "x = " << x.data()[i];
  MatR dx;
  gelu_backward(dx, R, x, th);
  expect_grad_close(numeric_grad(x.data(), x.size(), kEps, f), dx.data(), kAtol, kRtol, "GELU dx");
}

TEST(Backprop, CausalAttentionMatchesFiniteDifferences) {
  struct Case {
    int B, T, D, H;
  };
  for (const Case c : {Case{2, 7, 6, 3}, Case{1, 1, 4, 2}, Case{2, 5, 5, 1}, Case{1, 9, 12, 4}}) {
    const int N = c.B * c.T;
    MatR qkv = random_matrix(N, 3 * c.D, 51);  // (N, 3D)
    const MatR R = random_matrix(N, c.D, 52);  // (N, D)
    MatR ctx;
    std::vector<float> att(static_cast<size_t>(c.B) * c.H * c.T * c.T);
    auto f = [&] {
      attention_forward(ctx, att.data(), qkv, c.B, c.T, c.H);
      return dot(ctx, R);
    };
    f();
    // The mask: nothing above the diagonal, rows sum to 1.
    for (int bh = 0; bh < c.B * c.H; ++bh)
      for (int t = 0; t < c.T; ++t) {
        double sum = 0;
        for (int s = 0; s < c.T; ++s) {
          const float p = att[(static_cast<size_t>(bh) * c.T + t) * c.T + s];
          if (s > t) {
            EXPECT_EQ(p, 0.0f) << "a key after the query got weight";
          }
          sum += p;
        }
        EXPECT_NEAR(sum, 1.0, 1e-5);
      }
    MatR dqkv;
    attention_backward(dqkv, R, qkv, att.data(), c.B, c.T, c.H);
    const std::string at = " (B=" + std::to_string(c.B) + ", T=" + std::to_string(c.T) + ", D=" + std::to_string(c.D) +
                           ", H=" + std::to_string(c.H) + ")";
    expect_grad_close(numeric_grad(qkv.data(), qkv.size(), kEps, f), dqkv.data(), kAtol, kRtol, "attention dqkv" + at);
  }
}

// The previous-token prior (--prev-head-weight): its gradient joins the attention's, and
// only the chosen head's queries and keys get it.
TEST(Backprop, PreviousTokenPriorMatchesFiniteDifferences) {
  const int B = 2, T = 6, D = 8, H = 2, N = B * T;
  const PrevTokenPrior prior{1, 0.7f};
  MatR qkv = random_matrix(N, 3 * D, 53);  // (N, 3D)
  const MatR R = random_matrix(N, D, 54);  // (N, D)
  MatR ctx;
  std::vector<float> att(static_cast<size_t>(B) * H * T * T);
  auto f = [&] {
    attention_forward(ctx, att.data(), qkv, B, T, H);
    return dot(ctx, R) + prev_token_prior_loss(att.data(), B, T, H, prior);
  };
  const double with = f();
  EXPECT_GT(with - dot(ctx, R), 0.0) << "-log of a weight below 1 is positive";
  MatR dqkv, dplain;
  attention_backward(dqkv, R, qkv, att.data(), B, T, H, prior);
  expect_grad_close(numeric_grad(qkv.data(), qkv.size(), kEps, f), dqkv.data(), kAtol, kRtol, "attention dqkv with the prior");
  attention_backward(dplain, R, qkv, att.data(), B, T, H);
  const int dh = D / H;
  for (int part = 0; part < 3; ++part)  // Q, K, V
    for (int h = 0; h < H; ++h) {
      const float diff = (dqkv.middleCols(part * D + h * dh, dh) - dplain.middleCols(part * D + h * dh, dh)).cwiseAbs().maxCoeff();
      if (part < 2 && h == prior.head) {
        EXPECT_GT(diff, 1e-4f) << "the prior moves head " << h << "'s " << "QK"[part];
      } else {
        EXPECT_EQ(diff, 0.0f) << "the prior leaves part " << part << " of head " << h << " alone";
      }
    }
}

TEST(Backprop, AttentionForwardIsTheInferenceAttention) {
  // The trainer's per-head attention against mha_forward on the same layer.
  const int B = 2, T = 7, D = 12, H = 3;
  const LayerWeights lw = test::random_layer(D, 61);
  const MatR x = random_matrix(B * T, D, 62);
  MhaOptions o;
  o.num_heads = H;
  std::vector<float> w_ref(static_cast<size_t>(B) * H * T * T), w_new(w_ref.size());
  MatR y_ref;
  mha_forward(lw, x, B, T, o, y_ref, w_ref.data());
  MatR qkv, ctx, y;
  linear_forward(qkv, x, lw.w_qkv.plain(), lw.b_qkv);
  attention_forward(ctx, w_new.data(), qkv, B, T, H);
  linear_forward(y, ctx, lw.w_o.plain(), lw.b_o);
  EXPECT_LT(test::max_abs_diff(w_ref.data(), w_new.data(), w_ref.size()), 1e-6f);
  EXPECT_LT(test::max_abs_diff(y_ref.data(), y.data(), static_cast<size_t>(y.size())), 1e-5f);
}

TEST(Backprop, CrossEntropyMatchesFiniteDifferences) {
  const int N = 5, V = 7;
  MatR logits = random_matrix(N, V, 71) * 2.0f;
  const std::vector<int32_t> targets = {3, -1, 0, 6, 2};  // one row without a target
  std::vector<double> rows;
  auto f = [&] { return cross_entropy_loss(logits, rows, targets.data()).loss; };
  const double loss = f();
  MatR grad = logits;
  const CrossEntropy ce = cross_entropy_forward_backward(grad, rows, targets.data());
  EXPECT_EQ(ce.targets, 4);
  EXPECT_NEAR(ce.loss, loss, 1e-6);
  EXPECT_EQ(grad.row(1).cwiseAbs().maxCoeff(), 0.0f) << "a row without a target has no gradient";
  expect_grad_close(numeric_grad(logits.data(), logits.size(), kEps, f), grad.data(), 2e-4, kRtol, "cross-entropy dlogits");
}

TEST(Backprop, EmbeddingGradientsScatterIntoTheRowsUsed) {
  const int B = 2, T = 3, V = 5, D = 4;
  MatR tok = random_matrix(V, D, 81), pos = random_matrix(6, D, 82);
  const std::vector<int32_t> ids = {4, 1, 4, 0, 4, 2};  // id 4 three times, id 3 never
  const MatR R = random_matrix(B * T, D, 83);
  MatR x;
  auto f = [&] {
    embedding_forward(x, ids.data(), B, T, tok, pos);
    return dot(x, R);
  };
  MatR dtok = MatR::Zero(V, D), dpos = MatR::Zero(6, D);
  embedding_backward(dtok, dpos, R, ids.data(), B, T);
  expect_grad_close(numeric_grad(tok.data(), tok.size(), kEps, f), dtok.data(), kAtol, kRtol, "token embedding");
  expect_grad_close(numeric_grad(pos.data(), pos.size(), kEps, f), dpos.data(), kAtol, kRtol, "position embedding");
  EXPECT_EQ(dtok.row(3).cwiseAbs().maxCoeff(), 0.0f);
  EXPECT_EQ(dpos.row(5).cwiseAbs().maxCoeff(), 0.0f) << "positions past T get nothing";
}

// ---- the whole model -------------------------------------------------------------------
namespace {

// Random parameters large enough that every term of every gradient matters.
ModelParams random_params(int D, int L, int V, int P, uint64_t key) {
  ModelParams p = init_params(D, L, V, P, key);
  uint64_t k = key * 1000;
  for (ParamRef& r : param_refs(p, false)) {
    const bool gain = r.name.find("_g") != std::string::npos;
    const bool bias = r.name.find(".b_") != std::string::npos || r.name.find("_b") != std::string::npos;
    const float scale = gain ? 0.2f : bias ? 0.2f : r.name.find("emb") != std::string::npos ? 0.8f : 0.45f;
    for (int64_t i = 0; i < r.size; ++i) r.data[i] = (gain ? 1.0f : 0.0f) + scale * normal_at(++k, 0);
  }
  return p;
}

// A plain double-precision forward of the same model, written from the definition with
// loops, sharing no code with the trainer. theta: every tensor of param_refs(p, no_w_o),
// flattened in that order. Returns the mean next-token loss over targets >= 0.
double reference_loss(const std::vector<double>& theta, int D, int H, int L, int V, int P, bool no_w_o,
                      const std::vector<int32_t>& tok, const std::vector<int32_t>& tgt, int B, int T) {
  size_t at = 0;
  auto take = [&](size_t n) {
    const double* p = theta.data() + at;
    at += n;
    return p;
  };
  const double* tok_emb = take(static_cast<size_t>(V) * D);
  const double* pos_emb = take(static_cast<size_t>(P) * D);
  const int N = B * T, F = 4 * D, dh = D / H;
  using Rows = std::vector<std::vector<double>>;
  Rows x(N, std::vector<double>(D));
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < D; ++j) x[i][j] = tok_emb[tok[i] * D + j] + pos_emb[(i % T) * D + j];
  auto layernorm = [&](const Rows& in, const double* g, const double* b) {
    Rows out(in.size(), std::vector<double>(D));
    for (size_t i = 0; i < in.size(); ++i) {
      double m = 0, v = 0;
      for (double a : in[i]) m += a;
      m /= D;
      for (double a : in[i]) v += (a - m) * (a - m);
      v /= D;
      for (int j = 0; j < D; ++j) out[i][j] = (in[i][j] - m) / std::sqrt(v + 1e-5) * g[j] + b[j];
    }
    return out;
  };
  auto linear = [&](const Rows& in, const double* W, const double* b, int O) {
    Rows out(in.size(), std::vector<double>(O));
    const int I = static_cast<int>(in[0].size());
    for (size_t i = 0; i < in.size(); ++i)
      for (int o = 0; o < O; ++o) {
        double s = b[o];
        for (int k = 0; k < I; ++k) s += in[i][k] * W[k * O + o];
        out[i][o] = s;
      }
    return out;
  };
  for (int l = 0; l < L; ++l) {
    const double *ln1_g = take(D), *ln1_b = take(D), *w_qkv = take(static_cast<size_t>(D) * 3 * D), *b_qkv = take(3 * D);
    const double *w_o = no_w_o ? nullptr : take(static_cast<size_t>(D) * D), *b_o = no_w_o ? nullptr : take(D);
    const double *ln2_g = take(D), *ln2_b = take(D), *w_fc = take(static_cast<size_t>(D) * F), *b_fc = take(F);
    const double *w_proj = take(static_cast<size_t>(F) * D), *b_proj = take(D);
    const Rows qkv = linear(layernorm(x, ln1_g, ln1_b), w_qkv, b_qkv, 3 * D);
    Rows ctx(N, std::vector<double>(D, 0.0));
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < H; ++h)
        for (int t = 0; t < T; ++t) {
          std::vector<double> s(t + 1);
          double mx = -1e300, sum = 0;
          for (int u = 0; u <= t; ++u) {
            double d = 0;
            for (int j = 0; j < dh; ++j) d += qkv[b * T + t][h * dh + j] * qkv[b * T + u][D + h * dh + j];
            s[u] = d / std::sqrt(static_cast<double>(dh));
            mx = std::max(mx, s[u]);
          }
          for (double& v : s) sum += (v = std::exp(v - mx));
          for (int u = 0; u <= t; ++u)
            for (int j = 0; j < dh; ++j) ctx[b * T + t][h * dh + j] += s[u] / sum * qkv[b * T + u][2 * D + h * dh + j];
        }
    const Rows a = no_w_o ? ctx : linear(ctx, w_o, b_o, D);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < D; ++j) x[i][j] += a[i][j];
    Rows hdn = linear(layernorm(x, ln2_g, ln2_b), w_fc, b_fc, F);
    for (auto& row : hdn)
      for (double& v : row) v = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / 3.141592653589793) * (v + 0.044715 * v * v * v)));
    const Rows m = linear(hdn, w_proj, b_proj, D);
    for (int i = 0; i < N; ++i)
      for (int j = 0; j < D; ++j) x[i][j] += m[i][j];
  }
  const double *lnf_g = take(D), *lnf_b = take(D);
  EXPECT_EQ(at, theta.size()) << "the reference must read every parameter exactly once";
  const Rows xf = layernorm(x, lnf_g, lnf_b);
  double total = 0;
  int n = 0;
  for (int i = 0; i < N; ++i) {
    if (tgt[i] < 0) continue;
    std::vector<double> z(V);
    double mx = -1e300, sum = 0;
    for (int v = 0; v < V; ++v) {
      double s = 0;
      for (int j = 0; j < D; ++j) s += xf[i][j] * tok_emb[v * D + j];
      mx = std::max(mx, z[v] = s);
    }
    for (double v : z) sum += std::exp(v - mx);
    total += mx + std::log(sum) - z[tgt[i]];
    ++n;
  }
  return total / n;
}

struct ModelCase {
  int B, T, D, H, L, V;
  bool no_w_o;
};

void check_whole_model(const ModelCase& c) {
  const int P = c.T + 2;  // more positions than used: the unused rows get no gradient
  ModelParams p = random_params(c.D, c.L, c.V, P, 91 + c.D + c.T);
  Rng r(5);
  std::vector<int32_t> tok(static_cast<size_t>(c.B) * c.T), tgt(tok.size());
  for (size_t i = 0; i < tok.size(); ++i) {
    tok[i] = r.below(c.V - 1);  // id V-1 never appears as input: only the unembedding uses it
    tgt[i] = (i % 5 == 3) ? -1 : r.below(c.V);
  }
  Trainer tr(p, c.H, c.no_w_o);
  const double loss = tr.loss_and_grad(tok.data(), tgt.data(), c.B, c.T);

  std::vector<double> theta;
  ModelParams& pm = tr.params();
  const std::vector<ParamRef> refs = param_refs(pm, c.no_w_o);
  for (const ParamRef& ref : refs) theta.insert(theta.end(), ref.data, ref.data + ref.size);
  auto f = [&] { return reference_loss(theta, c.D, c.H, c.L, c.V, P, c.no_w_o, tok, tgt, c.B, c.T); };
  const std::string at = " (B=" + std::to_string(c.B) + ", T=" + std::to_string(c.T) + ", D=" + std::to_string(c.D) + ", H=" +
                         std::to_string(c.H) + ", L=" + std::to_string(c.L) + ", V=" + std::to_string(c.V) + (c.no_w_o ? ", no W_O" : "") + ")";
  EXPECT_NEAR(loss, f(), 1e-5) << "the float training forward is the double reference" << at;

  ModelParams& gm = const_cast<ModelParams&>(tr.grads());
  const std::vector<ParamRef> grefs = param_refs(gm, c.no_w_o);
  size_t at_theta = 0;
  for (size_t k = 0; k < refs.size(); ++k) {
    std::vector<double> num(static_cast<size_t>(refs[k].size));
    for (int64_t i = 0; i < refs[k].size; ++i) {
      double& v = theta[at_theta + static_cast<size_t>(i)];
      const double keep = v, eps = 1e-5;
      v = keep + eps;
      const double fp = f();
      v = keep - eps;
      const double fm = f();
      v = keep;
      num[static_cast<size_t>(i)] = (fp - fm) / (2 * eps);
    }
    at_theta += static_cast<size_t>(refs[k].size);
    double worst = 0;
    int64_t worst_i = 0;
    for (int64_t i = 0; i < refs[k].size; ++i) {
      const double err = std::abs(num[static_cast<size_t>(i)] - grefs[k].data[i]) - (1e-5 + 2e-3 * std::abs(num[static_cast<size_t>(i)]));
      if (err > worst) worst = err, worst_i = i;
    }
    EXPECT_LE(worst, 0.0) << refs[k].name << at << ": element " << worst_i << " numeric " << num[static_cast<size_t>(worst_i)]
                          << " analytic " << grefs[k].data[worst_i];
  }
}

}  // namespace

TEST(TrainerGradients, WholeModelMatchesADoubleReference) {
  check_whole_model({2, 7, 6, 3, 2, 11, false});   // H=3, d_head=2, D not a power of two
  check_whole_model({3, 1, 5, 1, 1, 7, false});    // T=1: attention of one key
  check_whole_model({1, 9, 8, 4, 2, 13, false});
}

TEST(TrainerGradients, WholeModelWithoutWOMatchesADoubleReference) { check_whole_model({2, 7, 6, 3, 2, 11, true}); }

// At the real size (B=16, T=64, D=64, H=4, L=2, V=746) the products take gemm()'s threaded
// Eigen path with transposed operands, which the small cases above never reach. For each
// tensor, the derivative along its own gradient direction u = g/|g| must be |g|:
// (f(p + eps u) - f(p - eps u)) / 2 eps with eps = 1e-2 (in float: the loss moves by ~1e-3,
// far above its ~1e-6 rounding) within 1% of |g|.
TEST(TrainerGradients, FullSizeDirectionalDerivatives) {
  const int B = 16, T = 64, D = 64, H = 4, L = 2, V = 746;
  ModelParams p = init_params(D, L, V, T, 1);
  uint64_t k = 1;
  for (ParamRef& r : param_refs(p, false))
    for (int64_t i = 0; i < r.size; ++i) r.data[i] += 0.05f * normal_at(++k, 1);
  Rng rng(3);
  std::vector<int32_t> tok(static_cast<size_t>(B) * T), tgt(tok.size());
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = rng.below(V), tgt[i] = rng.below(V);
  Trainer tr(p, H, false);
  tr.loss_and_grad(tok.data(), tgt.data(), B, T);
  ModelParams g = tr.grads();
  const std::vector<ParamRef> gr = param_refs(g, false), pr = param_refs(tr.params(), false);
  for (size_t j = 0; j < gr.size(); ++j) {
    const double n = Eigen::Map<const Eigen::VectorXf>(gr[j].data, gr[j].size).cast<double>().norm();
    ASSERT_GT(n, 1e-4) << gr[j].name;
    const std::vector<float> keep(pr[j].data, pr[j].data + pr[j].size);
    const double eps = 1e-2;
    auto at = [&](double sign) {
      for (int64_t i = 0; i < pr[j].size; ++i) pr[j].data[i] = keep[static_cast<size_t>(i)] + static_cast<float>(sign * eps * gr[j].data[i] / n);
      return tr.forward(tok.data(), tgt.data(), B, T);
    };
    const double fd = (at(1) - at(-1)) / (2 * eps);
    std::copy(keep.begin(), keep.end(), pr[j].data);
    EXPECT_NEAR(fd, n, 1e-2 * n) << gr[j].name;
  }
}

// ---- the training forward is forward() -------------------------------------------------
namespace {
// A one-sentence-per-row batch of vocabulary ids, for forward().
Batch batch_of_ids(const std::vector<int32_t>& tok, int B, int T) {
  Batch batch;
  batch.tokenizer = TokenizerKind::Bpe;
  batch.T = T;
  for (int b = 0; b < B; ++b) {
    TokenizedText tt;
    for (int t = 0; t < T; ++t) {
      const int id = tok[static_cast<size_t>(b) * T + t];
      tt.tokens.push_back(Token{"w" + std::to_string(id), id});
    }
    tt.total_tokens = T;
    batch.sentences.push_back(tt);
    batch.lengths.push_back(T);
    batch.source_line.push_back(b);
  }
  return batch;
}

// These tests feed ids directly (batch_of_ids), so the model needs no tokenizer.
Bpe no_tokenizer() { return Bpe{}; }
}  // namespace

TEST(Trainer, TrainingLossIsForwardLoss) {
  struct Case {
    int B, T, D, H, L, V;
    bool no_w_o;
    float scale;  // 0: the trainer's init; else random parameters of this kind
  };
  for (const Case c : {Case{3, 16, 64, 4, 2, 50, false, 0}, Case{2, 9, 24, 3, 2, 30, false, 1}, Case{2, 9, 24, 3, 2, 30, true, 1},
                       Case{1, 5, 10, 5, 1, 12, false, 1}}) {
    const ModelParams p = c.scale == 0 ? init_params(c.D, c.L, c.V, 2 * c.T, 3) : random_params(c.D, c.L, c.V, 2 * c.T, 4);
    Rng r(9);
    std::vector<int32_t> tok(static_cast<size_t>(c.B) * c.T), tgt(tok.size());
    for (int32_t& t : tok) t = r.below(c.V);
    for (int b = 0; b < c.B; ++b)  // forward() scores t -> t+1 inside each sentence
      for (int t = 0; t < c.T; ++t) tgt[static_cast<size_t>(b) * c.T + t] = t + 1 < c.T ? tok[static_cast<size_t>(b) * c.T + t + 1] : -1;
    Trainer tr(p, c.H, c.no_w_o);
    const double train_loss = tr.forward(tok.data(), tgt.data(), c.B, c.T);

    const Bpe vocab = no_tokenizer();
    const ModelWeights w = to_model_weights(p, vocab, c.no_w_o);
    ModelConfig cfg = test::config(c.D, c.H, c.L);
    cfg.context = 2 * c.T;
    ForwardOptions fo;
    fo.want_logits = true;
    Result<ForwardOutput> out = forward(w, cfg, batch_of_ids(tok, c.B, c.T), fo);
    ASSERT_TRUE(out) << out.error().message;
    EXPECT_NEAR(train_loss, out->loss, 1e-5) << "D=" << c.D << " H=" << c.H << (c.no_w_o ? " no W_O" : "");
    if (c.no_w_o) {  // w_o = I: the no-W_O switch at inference computes the same
      cfg.pitfalls.no_w_o = true;
      Result<ForwardOutput> out2 = forward(w, cfg, batch_of_ids(tok, c.B, c.T), fo);
      ASSERT_TRUE(out2);
      EXPECT_NEAR(out2->loss, out->loss, 1e-6);
    }
  }
}

TEST(Trainer, ModelWeightsRoundTrip) {
  const ModelParams p = random_params(12, 2, 20, 8, 5);
  const ModelWeights w = to_model_weights(p, no_tokenizer(), false);
  ASSERT_EQ(w.layers[0].w_qkv.cols(), 36);
  EXPECT_EQ(w.layers[1].w_k, p.layers[1].w_qkv.middleCols(12, 12));
  ModelParams q = from_model_weights(w);
  ModelParams pc = p;
  const auto a = param_refs(pc, false), b = param_refs(q, false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(std::equal(a[k].data, a[k].data + a[k].size, b[k].data)) << a[k].name;
}

// ---- training runs ---------------------------------------------------------------------
namespace {
const TrainCorpus& small_corpus() {
  static const TrainCorpus c = [] {
    GrammarCorpusOptions go;
    go.target_bytes = 120000;
    Result<TrainCorpus> r = train_corpus_from_text(generate_grammar_corpus(go), "test-grammar");
    EXPECT_TRUE(r);
    return std::move(r).value();
  }();
  return c;
}

TrainOptions tiny_options() {
  TrainOptions o;
  o.d_model = 24;
  o.num_heads = 3;
  o.num_layers = 1;
  o.context = 24;
  o.seq = 16;
  o.batch = 8;
  o.steps = 60;
  o.warmup = 10;
  o.lr = 5e-3f;
  o.eval_every = 20;
  o.eval_tokens = 1024;
  o.progress_every = 5;
  return o;
}
}  // namespace

TEST(Trainer, ValidateNamesTheFix) {
  TrainOptions o = tiny_options();
  o.num_heads = 5;
  Status s = validate(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("divisible"), std::string::npos) << s.error().message;
  o = tiny_options();
  o.seq = 32;
  s = validate(o);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("--context"), std::string::npos) << s.error().message;
  EXPECT_TRUE(validate(tiny_options()));
  o = tiny_options();
  o.seq = 200;
  o.context = 200;
  TrainCorpus c = small_corpus();
  c.val.resize(50);
  Result<TrainResult> r = train(c, o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::InvalidArgument);
}

TEST(Trainer, LearningRateWarmsUpThenDecays) {
  TrainOptions o;
  o.steps = 1000;
  o.warmup = 100;
  o.lr = 1e-3f;
  EXPECT_FLOAT_EQ(learning_rate(o, 0), 1e-5f);
  EXPECT_FLOAT_EQ(learning_rate(o, 99), 1e-3f);
  EXPECT_NEAR(learning_rate(o, 100), 1e-3f, 1e-9f);
  EXPECT_NEAR(learning_rate(o, 999), 1e-4f, 1e-6f);
  EXPECT_GT(learning_rate(o, 400), learning_rate(o, 600));
}

TEST(Trainer, LossGoesDownAndIsDeterministic) {
  // Bit for bit: the same corpus, options and thread count give the same losses and weights
  // (softmax rows live in aligned storage, so Eigen's vectorised sums start at the same
  // element on every run; see Trainer::LayerActs::att).
  const TrainOptions o = tiny_options();
  std::vector<TrainProgress> reports;
  TrainHooks hooks;
  hooks.on_progress = [&](const TrainProgress& p) { reports.push_back(p); };
  Result<TrainResult> a = train(small_corpus(), o, hooks);
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_GE(a->history.size(), 3u);
  const double first = a->history.front().train_loss, last = a->history.back().train_loss;
  EXPECT_LT(last, first - 1.0) << "60 steps should take the loss well below its start (ln V = " << std::log(small_corpus().bpe.size()) << ")";
  EXPECT_GT(a->val_loss, 0.0);
  EXPECT_LT(a->val_loss, first);
  // Reports: every 5 steps, a val loss at 20, 40, 60, an ETA that reaches 0.
  ASSERT_EQ(reports.size(), 12u);
  EXPECT_TRUE(reports[3].evaluated);
  EXPECT_GT(reports[3].val_loss, 0.0);
  EXPECT_EQ(reports.back().step, 60);
  EXPECT_EQ(reports.back().eta_s, 0.0);
  EXPECT_GT(reports.back().tokens_per_s, 0.0);

  Result<TrainResult> b = train(small_corpus(), o);
  ASSERT_TRUE(b);
  ASSERT_EQ(a->history.size(), b->history.size());
  for (size_t i = 0; i < a->history.size(); ++i)
    EXPECT_EQ(a->history[i].train_loss, b->history[i].train_loss) << "step " << a->history[i].step;
  EXPECT_TRUE(a->weights.tok_emb == b->weights.tok_emb);
  EXPECT_TRUE(a->weights.layers[0].w_qkv == b->weights.layers[0].w_qkv);

  TrainOptions o2 = o;
  o2.seed = 2;
  Result<TrainResult> c = train(small_corpus(), o2);
  ASSERT_TRUE(c);
  EXPECT_NE(a->history.back().train_loss, c->history.back().train_loss) << "another seed, another run";
}

TEST(Trainer, TheResultRunsInForwardAndDescribesItself) {
  TrainOptions o = tiny_options();
  o.steps = 20;
  Result<TrainResult> r = train(small_corpus(), o);
  ASSERT_TRUE(r);
  const ModelWeights& w = r->weights;
  EXPECT_TRUE(w.trained());
  EXPECT_EQ(w.source.kind, WeightsSource::Kind::Trained);
  EXPECT_EQ(w.source.trained_heads, 3);
  EXPECT_EQ(w.source.steps, 20);
  EXPECT_EQ(w.source.corpus, "test-grammar");
  ModelConfig cfg = test::config(24, 3, 1);
  cfg.context = 24;
  const Batch batch = make_batch({"The cat sat on the mat because it was tired."}, cfg, w);
  ASSERT_EQ(batch.lengths[0], 11) << "the words are in the vocabulary: one token each";
  ForwardOptions fo;
  fo.want_logits = true;
  Result<ForwardOutput> out = forward(w, cfg, batch, fo);
  ASSERT_TRUE(out);
  EXPECT_LT(out->loss, std::log(static_cast<double>(w.vocab_size())));
}

TEST(Trainer, CancelStopsCleanly) {
  TrainOptions o = tiny_options();
  std::atomic<bool> cancel{false};
  TrainHooks hooks;
  int calls = 0;
  hooks.cancel = &cancel;
  hooks.on_progress = [&](const TrainProgress& p) {
    ++calls;
    if (p.step >= 10) cancel = true;
  };
  Result<TrainResult> r = train(small_corpus(), o, hooks);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::Cancelled);
  EXPECT_NE(r.error().message.find("10 of 60"), std::string::npos) << r.error().message;
  EXPECT_EQ(calls, 2);
  cancel = true;  // cancelled before it starts
  r = train(small_corpus(), o, hooks);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::Cancelled);
}

TEST(Trainer, SnapshotsAreCompleteModels) {
  TrainOptions o = tiny_options();
  o.steps = 30;
  o.snapshot_every = 10;
  std::vector<int> steps;
  TrainHooks hooks;
  hooks.on_snapshot = [&](const ModelWeights& w, const TrainProgress& p) {
    steps.push_back(p.step);
    EXPECT_EQ(w.source.steps, p.step);
    ASSERT_EQ(w.layers[0].w_qkv.cols(), 3 * 24) << "fused";
    ModelConfig cfg = test::config(24, 3, 1);
    cfg.context = 24;
    const Batch batch = make_batch({"the dog ran across the road"}, cfg, w);
    Result<ForwardOutput> out = forward(w, cfg, batch);
    EXPECT_TRUE(out);
  };
  Result<TrainResult> r = train(small_corpus(), o, hooks);
  ASSERT_TRUE(r);
  EXPECT_EQ(steps, (std::vector<int>{10, 20, 30}));
}

TEST(Trainer, TrainsWithoutWO) {
  TrainOptions o = tiny_options();
  o.no_w_o = true;
  Result<TrainResult> r = train(small_corpus(), o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_LT(r->history.back().train_loss, r->history.front().train_loss - 1.0);
  EXPECT_TRUE(r->weights.source.no_w_o);
  EXPECT_EQ(r->weights.layers[0].w_o.plain(), MatR(MatR::Identity(24, 24))) << "stored as the identity: the same function";
  EXPECT_EQ(r->weights.layers[0].b_o, RowVec(RowVec::Zero(24)));
}

// --pos-init sinusoid: the position table starts from the Transformer's sinusoids, each
// row about a token embedding's size; the rest of the init is unchanged.
TEST(Trainer, SinusoidalPositionsStartFromTheFormula) {
  const int D = 16, L = 1, V = 300, P = 32;
  const ModelParams n = init_params(D, L, V, P, 5), s = init_params(D, L, V, P, 5, PosInit::Sinusoid);
  EXPECT_TRUE(n.tok_emb == s.tok_emb);
  EXPECT_TRUE(n.layers[0].w_qkv == s.layers[0].w_qkv);
  EXPECT_FALSE(n.pos_emb == s.pos_emb);
  for (int p : {0, 1, 7, 31})
    for (int i = 0; i < D / 2; ++i) {
      const double w = std::pow(10000.0, -2.0 * i / D);
      EXPECT_NEAR(s.pos_emb(p, 2 * i), 0.02 * std::sin(p * w), 1e-7) << p << " " << i;
      EXPECT_NEAR(s.pos_emb(p, 2 * i + 1), 0.02 * std::cos(p * w), 1e-7) << p << " " << i;
    }
  EXPECT_NEAR(s.pos_emb.row(3).norm(), 0.02 * std::sqrt(D / 2.0), 1e-6);
}

// --repeat-fraction: rows that are a random run said twice teach the model to copy from the
// first copy (an induction head over a previous-token head). On fresh runs the loss of the
// second copy falls far below a guess; trained on the grammar alone for as many steps, it
// does not.
TEST(Trainer, RepeatedRunsTeachCopying) {
  TrainOptions o = tiny_options();
  o.d_model = 32;
  o.num_heads = 2;
  o.num_layers = 2;
  o.steps = 300;
  o.lr = 1e-2f;
  o.eval_every = 0;
  o.repeat_fraction = 1.0f;
  Status bad = [&] {
    TrainOptions b = o;
    b.repeat_fraction = 1.5f;
    return validate(b);
  }();
  EXPECT_FALSE(bad);
  Result<TrainResult> copy = train(small_corpus(), o);
  ASSERT_TRUE(copy) << copy.error().message;
  o.repeat_fraction = 0.0f;
  Result<TrainResult> plain = train(small_corpus(), o);
  ASSERT_TRUE(plain) << plain.error().message;
  const int V = small_corpus().bpe.size(), T = o.seq, B = 16, n = (T + 2) / 2;
  ASSERT_GT(V, 300);
  Rng rng(99);
  std::vector<int32_t> tok(static_cast<size_t>(B) * T), tgt(tok.size());
  for (int b = 0; b < B; ++b) {
    std::vector<int32_t> run(T + 1);
    for (int t = 0; t < n; ++t) run[t] = 256 + static_cast<int32_t>(rng.below(V - 256));
    for (int t = n; t <= T; ++t) run[t] = run[t - n];
    for (int t = 0; t < T; ++t) {
      tok[static_cast<size_t>(b) * T + t] = run[t];
      tgt[static_cast<size_t>(b) * T + t] = t >= n ? run[t + 1] : -1;
    }
  }
  auto loss_on_repeats = [&](const ModelWeights& w) {
    Trainer tr(from_model_weights(w), o.num_heads, false);
    return tr.forward(tok.data(), tgt.data(), B, T);
  };
  const double guess = std::log(static_cast<double>(V - 256));
  const double l_copy = loss_on_repeats(copy->weights), l_plain = loss_on_repeats(plain->weights);
  // (0.37 to 0.6 of a guess, depending on the thread count's rounding: 0.7 leaves room)
  EXPECT_LT(l_copy, 0.7 * guess) << "trained on repeated runs; a guess scores " << guess;
  EXPECT_GT(l_plain, 0.8 * guess) << "trained without them";
}

// --prev-head-weight: the prior teaches layer 0, head 0 the previous-token pattern; its
// mean weight on the previous token (rows t >= 1, the app's metric) ends far above the
// same run's without the prior, and the other heads are left to the loss.
TEST(Trainer, PreviousTokenPriorTeachesHeadZero) {
  TrainOptions o = tiny_options();
  o.steps = 120;
  o.eval_every = 0;
  auto prev_token_of = [&](const TrainOptions& opt) {
    Result<TrainResult> r = train(small_corpus(), opt);
    EXPECT_TRUE(r) << r.error().message;
    ModelConfig c;
    c.d_model = opt.d_model;
    c.num_heads = opt.num_heads;
    c.num_layers = opt.num_layers;
    c.context = opt.context;
    const Batch b = make_batch({"the cat sat on the mat and the dog ran to the park"}, c, r->weights);
    Result<ForwardOutput> out = forward(r->weights, c, b, {});
    EXPECT_TRUE(out) << out.error().message;
    return head_metrics(*out, b)[0].prev_token;  // layer 0, sentence 0, head 0
  };
  const float plain = prev_token_of(o);
  o.prev_head_weight = 1.0f;
  const float taught = prev_token_of(o);
  EXPECT_GT(taught, 0.7f) << "without the prior: " << plain;  // measured: 0.88 against 0.15
  EXPECT_GT(taught, plain + 0.3f);
  TrainOptions bad = o;
  bad.prev_head_steps = -1;
  EXPECT_FALSE(validate(bad));
}
