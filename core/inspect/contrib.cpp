// contrib.cpp: the residual stream's parts, direct logit attribution, value-weighted maps,
// rollout, head detectors and activation patching (see contrib.h).
//
// B = batch, T = tokens, D = d_model, H = heads, dh = d_head, L = layers, V = vocab
// Sections: [parts] [attribution] [value-weighted] [rollout] [detectors] [patching] [patch cache]
#include "core/inspect/contrib.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "core/math/rng.h"

namespace headmap {

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();


// Sentence b of a batch as a batch of its own (T = its length).
Batch one_sentence(const Batch& batch, int b) {
  Batch one;
  one.tokenizer = batch.tokenizer;
  one.sentences.push_back(batch.sentences[b]);
  one.lengths.push_back(batch.lengths[b]);
  one.source_line.push_back(batch.source_line.empty() ? 0 : batch.source_line[b]);
  one.T = batch.lengths[b];
  return one;
}

// A layer's value and output projections as its heads read them: W_V (D, KV*dh) and b_V
// (KV*dh) by K/V head (the weights' own when they are already: every family, and multi-head
// GPT-2; else kv_grouped's slice, without its fused QKV copy), W_O (H*dh, D) unpacked, b_O (D).
struct LayerValues {
  MatR w_v, w_o;
  RowVec b_v, b_o;
};
LayerValues layer_values(const LayerWeights& lw, const MhaOptions& o, int D) {
  LayerValues v;
  if (lw.proj_width(LayerWeights::kV) == kv_heads(o) * head_dim(o, D)) {
    v.w_v = lw.proj(LayerWeights::kV);  // unpacked when W_QKV is its only home
    v.b_v = lw.b_v;
  } else {
    LayerWeights g = kv_grouped(lw, o);
    v.w_v = std::move(g.w_v);
    v.b_v = std::move(g.b_v);
  }
  v.w_o = lw.w_o.plain();
  v.b_o = lw.b_o;
  return v;
}

// The (D, dh) W_V columns and (dh) b_V that query head h reads (its K/V head's), and W_O's
// (dh, D) rows.
struct HeadWeights {
  MatR wv, wo;  // (D, dh), (dh, D)
  RowVec bv;    // (dh)
};
HeadWeights head_weights(const LayerValues& grouped, const MhaOptions& o, int h, int D) {
  const MatR& w_o = grouped.w_o;  // (H*dh, D)
  const int dh = head_dim(o, D), kvH = kv_heads(o), g = kv_head_of(o, h);
  const bool interleaved = o.pitfalls.interleaved_reshape;
  HeadWeights hw;
  hw.wv.resize(D, dh);
  hw.bv.resize(dh);
  for (int j = 0; j < dh; ++j) {
    const int f = head_feature(g, j, kvH, dh, interleaved);
    hw.wv.col(j) = grouped.w_v.col(f);
    hw.bv(j) = grouped.b_v(f);
  }
  if (o.pitfalls.no_w_o) {  // the concatenation as it is: head h in columns h*dh ..
    hw.wo = MatR::Zero(dh, D);
    for (int j = 0; j < dh; ++j) hw.wo(j, h * dh + j) = 1.0f;
  } else {
    hw.wo = w_o.middleRows(static_cast<Eigen::Index>(h) * dh, dh);
  }
  return hw;
}

double target_value(const float* logits_row, const LogitTarget& t) {
  return static_cast<double>(logits_row[t.token_a]) - (t.token_b >= 0 ? static_cast<double>(logits_row[t.token_b]) : 0.0);
}

Status check_target(const ModelWeights& w, const LogitTarget& t, int len) {
  if (!w.trained() || w.vocab_size() == 0)
    return Error{ErrorKind::InvalidArgument, "Attribution to a logit needs a trained model (random init has no unembedding)."};
  if (w.arch.encoder() && !w.arch.mlm_head)
    return Error{ErrorKind::InvalidArgument, "This " + w.arch.name + " has no masked-LM head (a ...Model checkpoint, not ...ForMaskedLM), so it has "
                                             "no logits: there is nothing to attribute or patch. Its maps, value-weighted maps, rollout and "
                                             "detectors still work; open a ...ForMaskedLM directory to attribute a [MASK]'s filler."};
  const int V = w.vocab_size();
  if (t.token_a < 0 || t.token_a >= V || t.token_b >= V)
    return Error{ErrorKind::InvalidArgument, "The token to attribute is not in this model's vocabulary of " + std::to_string(V) + "."};
  if (t.position < 0 || t.position >= len)
    return Error{ErrorKind::InvalidArgument, "Position " + std::to_string(t.position) + " is outside the sentence's " +
                                                 std::to_string(len) + " tokens (positions count from 0)."};
  return Status();
}

// The final norm's frozen scale at a row x (D): sigma (LayerNorm's std, RMSNorm's rms, with
// eps) and the mean it removes (0 for RMSNorm).
struct FinalScale {
  double sigma = 1, mean = 0;
};
FinalScale final_scale(const ModelWeights& w, const Eigen::VectorXd& x) {
  FinalScale f;
  const double eps = static_cast<double>(w.ln_eps);
  if (w.arch.norm == NormKind::RMSNorm) {
    f.sigma = std::sqrt(x.squaredNorm() / static_cast<double>(x.size()) + eps);
  } else {
    f.mean = x.mean();
    f.sigma = std::sqrt((x.array() - f.mean).square().mean() + eps);
  }
  return f;
}
// Standard deviation with eps of a row (D), as LayerNorm freezes it.
double ln_scale(const Eigen::VectorXd& u, double eps) { return std::sqrt((u.array() - u.mean()).square().mean() + eps); }

// A readout r (D) on a LayerNorm's output, pulled back to its input with the scale s frozen:
// LN(u) . r = u . C(g * r) / s + beta . r.
Eigen::VectorXd through_norm(const Eigen::VectorXd& r, const RowVec& g, double s) {
  Eigen::VectorXd v = (g.transpose().cast<double>().array() * r.array()).matrix();  // (D)
  v.array() -= v.mean();
  return v / s;
}
}  // namespace

Status contrib_supported(const ModelWeights& w, const ModelConfig& cfg) {
  if (cfg.pitfalls.head_averaged || cfg.pitfalls.no_transpose)
    return Error{ErrorKind::InvalidArgument,
                 "What heads contribute is measured per head: switch off the head-averaged and forgotten-transpose pitfalls."};
  // Every block whose attention output reaches the stream linearly (a scale frozen at most)
  // is split; a placement added later is refused until it is written here.
  switch (w.arch.placement) {
    case NormPlacement::PreNorm:
    case NormPlacement::Parallel:
    case NormPlacement::Sandwich:
    case NormPlacement::PostOutput:
    case NormPlacement::PostNorm: return Status();  // each LayerNorm's scale frozen (contrib.h)
  }
  return Error{ErrorKind::InvalidArgument, "What heads contribute needs each head's output to reach the residual stream linearly; " +
                                           w.arch.name + "'s blocks are not split yet."};
}

MatR StreamParts::written(int l, int h) const {
  const MatR& out = head(l, h);
  if (attn_scale.empty()) return out;
  return out.cwiseProduct(attn_scale[static_cast<size_t>(l)]);  // (T, D)
}

RowVec StreamParts::bias_written(int l, int t) const {
  const RowVec& b = attn_bias[static_cast<size_t>(l)];
  if (attn_scale.empty()) return b;
  return b.cwiseProduct(attn_scale[static_cast<size_t>(l)].row(t));  // (D)
}

// ---- [parts] ---------------------------------------------------------------------------
Result<StreamParts> stream_parts(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch_in, int b,
                                 const std::vector<uint8_t>* ablate, const std::function<bool()>& cancelled) {
  if (Status s = contrib_supported(w, cfg); !s) return s.error();
  if (b < 0 || b >= batch_in.B()) return Error{ErrorKind::InvalidArgument, "There is no sentence " + std::to_string(b + 1) + " in the text."};
  const Batch batch = one_sentence(batch_in, b);
  std::vector<MatR> resid;  // L x (T, D)
  std::vector<MatR> mid, mlp;  // post-norm: L x (T, D) h_l and the MLP's output
  const bool post_norm = w.arch.placement == NormPlacement::PostNorm;
  ForwardHook hook;
  hook.resid = &resid;
  if (post_norm) hook.post_mid = &mid, hook.post_mlp = &mlp;
  ForwardOptions opt;
  opt.keep_layer_io = true;
  opt.want_logits = true;
  opt.ablate = ablate;
  opt.cancelled = cancelled;
  opt.hook = &hook;
  Result<ForwardOutput> r = forward(w, cfg, batch, opt);
  if (!r) return r.error();
  const ForwardOutput& out = *r;
  StreamParts p;
  p.L = out.L;
  p.H = out.H;
  p.T = out.T;
  p.D = out.D;
  p.resid = std::move(resid);
  p.embeddings = p.resid[0];
  p.attn_in.assign(out.attn_in.begin(), out.attn_in.end());  // copies: the parts are the caller's to keep
  p.final_stream = out.out;
  p.logits = out.logits;
  const int L = p.L, H = p.H, T = p.T, D = p.D;
  p.weights.resize(static_cast<size_t>(L) * H * T * T);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) std::copy_n(out.weights(l, 0, h), static_cast<size_t>(T) * T, p.weights.data() + (static_cast<size_t>(l) * H + h) * T * T);
  p.head_out.resize(static_cast<size_t>(L) * H);
  const bool post = w.arch.placement == NormPlacement::Sandwich || w.arch.placement == NormPlacement::PostOutput;
  for (int l = 0; l < L; ++l) {
    const MhaOptions mo = mha_options(cfg, w, l);  // this layer's d_head and K/V heads
    const LayerValues grouped = layer_values(w.layers[l], mo, D);
    for (int h = 0; h < H; ++h) {
      if (ablate && (*ablate)[static_cast<size_t>(l) * H + h]) {
        p.head_out[static_cast<size_t>(l) * H + h] = MatR::Zero(T, D);
        continue;
      }
      const HeadWeights hw = head_weights(grouped, mo, h, D);
      MatR v = p.attn_in[l] * hw.wv;  // (T, dh)
      v.rowwise() += hw.bv;
      const Eigen::Map<const MatR> A(p.map(l, h), T, T);  // (T, T)
      p.head_out[static_cast<size_t>(l) * H + h] = (A * v) * hw.wo;  // (T, D)
    }
    p.attn_bias.push_back(cfg.pitfalls.no_w_o || grouped.b_o.size() != D ? RowVec(RowVec::Zero(D)) : RowVec(grouped.b_o));
    MatR attn_written = out.attn_out[l];  // (T, D): what the attention block wrote into the stream
    if (post) {  // Gemma 2/3, OLMo 2: RMSNorm(block output) * g_post, its scale frozen per position
      const RowVec& g = w.layers[l].post_attn_g;
      MatR scale(T, D);  // (T, D)
      for (int t = 0; t < T; ++t) {
        const double ms = out.attn_out[l].row(t).cast<double>().squaredNorm() / D;
        scale.row(t) = g / static_cast<float>(std::sqrt(ms + static_cast<double>(w.ln_eps)));
      }
      attn_written = attn_written.cwiseProduct(scale);
      p.attn_scale.push_back(std::move(scale));
    }
    if (post_norm) {  // the MLP's output as the hook kept it; each LayerNorm's s, frozen
      std::vector<double> s1(T), s2(T);
      for (int t = 0; t < T; ++t) {
        s1[t] = ln_scale((p.resid[l].row(t).cast<double>() + out.attn_out[l].row(t).cast<double>()).transpose(), w.ln_eps);
        s2[t] = ln_scale((mid[l].row(t).cast<double>() + mlp[l].row(t).cast<double>()).transpose(), w.ln_eps);
      }
      p.s1.push_back(std::move(s1));
      p.s2.push_back(std::move(s2));
      p.mlp_out.push_back(std::move(mlp[l]));
      p.mid.push_back(std::move(mid[l]));
      continue;
    }
    const MatR& next = l + 1 < L ? p.resid[l + 1] : p.final_stream;  // (T, D)
    p.mlp_out.push_back(next - p.resid[l] - attn_written);           // (T, D): what the MLP added
  }
  return p;
}

MatR carried_to_final(const ModelWeights& w, const StreamParts& p, const MatR& v, int k) {
  MatR x = v;  // (T, D)
  for (int i = std::max(k, 0); i < 2 * p.L && i / 2 < static_cast<int>(p.s1.size()); ++i) {
    const int l = i / 2;
    const LayerWeights& lw = w.layers[l];
    const RowVec& g = i % 2 == 0 ? lw.ln1_g : lw.ln2_g;
    const std::vector<double>& s = i % 2 == 0 ? p.s1[l] : p.s2[l];
    for (int t = 0; t < p.T; ++t) {  // C x / s * g
      const double mean = x.row(t).cast<double>().mean();
      for (int d = 0; d < p.D; ++d) x(t, d) = static_cast<float>((x(t, d) - mean) / s[t] * g(d));
    }
  }
  return x;
}

// ---- [attribution] ---------------------------------------------------------------------
std::vector<std::pair<int, int>> Attribution::ranking() const {
  std::vector<std::pair<int, int>> r;
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) r.emplace_back(l, h);
  std::stable_sort(r.begin(), r.end(), [&](const auto& a, const auto& b) {
    return heads[static_cast<size_t>(a.first) * H + a.second] > heads[static_cast<size_t>(b.first) * H + b.second];
  });
  return r;
}

namespace {
// An attribution's header, and the running sum (double) its parts are added to.
Attribution attribution_of(const StreamParts& p, const LogitTarget& target, double sigma) {
  Attribution a;
  a.L = p.L;
  a.H = p.H;
  a.target = target;
  a.sigma = static_cast<float>(sigma);
  return a;
}
struct PartSum {
  double sum = 0;
  float operator()(double v) {
    sum += v;
    return static_cast<float>(v);
  }
};

// Post-norm blocks and the masked-LM head (contrib.h): a readout vector pulled back from the
// logit through every frozen LayerNorm and the frozen GELU gate, each part dotted with the
// readout where it enters. Every sum in double.
Attribution post_norm_attribution(const ModelWeights& w, const StreamParts& p, const LogitTarget& target) {
  const int D = p.D, t = target.position;
  const double eps = static_cast<double>(w.ln_eps);
  Eigen::VectorXd u = w.unembedding_row(target.token_a).transpose().cast<double>();  // (D)
  double bias = w.mlm_bias.size() > target.token_a ? static_cast<double>(w.mlm_bias(target.token_a)) : 0.0;
  if (target.token_b >= 0) {
    u -= w.unembedding_row(target.token_b).transpose().cast<double>();
    if (w.mlm_bias.size() > target.token_b) bias -= static_cast<double>(w.mlm_bias(target.token_b));
  }
  // The head: z = x_L W_t + b_t, y = gelu(z) = z * gate (gate frozen), logit = LN_m(y) . u + bias.
  const Eigen::MatrixXd Wt = w.mlm_dense.cast<double>();  // (D, D) (in, out)
  const Eigen::VectorXd x = p.final_stream.row(t).transpose().cast<double>();  // (D)
  const Eigen::VectorXd z = Wt.transpose() * x + w.mlm_dense_b.transpose().cast<double>();  // (D)
  Eigen::VectorXd y(D), gate(D);
  for (int i = 0; i < D; ++i) {
    const double v = z(i);
    y(i) = activate(w.arch.activation(), v);
    gate(i) = v != 0.0 ? y(i) / v : 0.5;
  }
  const double s_m = ln_scale(y, eps);
  const Eigen::VectorXd r_z = (gate.array() * through_norm(u, w.mlm_ln_g, s_m).array()).matrix();  // (D)
  Eigen::VectorXd r = Wt * r_z;  // (D): the readout on x_L
  Attribution a = attribution_of(p, target, s_m);
  PartSum add;
  auto dot = [](const auto& row, const Eigen::VectorXd& rr) { return row.template cast<double>().dot(rr.transpose()); };
  a.final_bias = add(w.mlm_dense_b.cast<double>().dot(r_z.transpose()) + w.mlm_ln_b.cast<double>().dot(u.transpose()) + bias);
  a.heads.assign(static_cast<size_t>(p.L) * p.H, 0.0f);
  a.attn_bias.assign(p.L, 0.0f);
  a.mlps.assign(p.L, 0.0f);
  a.norm_bias.assign(p.L, 0.0f);
  for (int l = p.L - 1; l >= 0; --l) {  // r: the readout on x_{l+1}
    const LayerWeights& lw = w.layers[l];
    double betas = lw.ln2_b.cast<double>().dot(r.transpose());
    const Eigen::VectorXd r2 = through_norm(r, lw.ln2_g, p.s2[l][t]);  // on u2 = h_l + mlp_l
    a.mlps[l] = add(dot(p.mlp_out[l].row(t), r2));
    betas += lw.ln1_b.cast<double>().dot(r2.transpose());
    const Eigen::VectorXd r1 = through_norm(r2, lw.ln1_g, p.s1[l][t]);  // on u1 = x_l + attn_l
    for (int h = 0; h < p.H; ++h) a.heads[static_cast<size_t>(l) * p.H + h] = add(dot(p.head(l, h).row(t), r1));
    a.attn_bias[l] = add(dot(p.attn_bias[l], r1));
    a.norm_bias[l] = add(betas);
    r = r1;
  }
  a.embeddings = add(dot(p.embeddings.row(t), r));
  a.parts_sum = static_cast<float>(add.sum);
  a.model_logit = a.logit = static_cast<float>(target_value(p.logits.row(t).data(), target));
  a.completeness_error = static_cast<float>(std::abs(a.logit - add.sum));
  return a;
}
}  // namespace

Result<Attribution> direct_attribution(const ModelWeights& w, const StreamParts& p, const LogitTarget& target) {
  if (Status s = check_target(w, target, p.T); !s) return s.error();
  if (p.logits.rows() != p.T) return Error{ErrorKind::InvalidArgument, "These stream parts were computed without logits."};
  if (w.arch.placement == NormPlacement::PostNorm) {
    if (static_cast<int>(p.s1.size()) != p.L) return Error{ErrorKind::InvalidArgument, "These stream parts were computed without the post-norm steps."};
    return post_norm_attribution(w, p, target);
  }
  const int D = p.D, t = target.position;
  // u = U[a] - U[b] (U (V, D), maybe kept 16-bit); the frozen scale sigma of the real final stream at t.
  Eigen::VectorXd u = w.unembedding_row(target.token_a).transpose().cast<double>();  // (D)
  if (target.token_b >= 0) u -= w.unembedding_row(target.token_b).transpose().cast<double>();
  const Eigen::VectorXd x = p.final_stream.row(t).transpose().cast<double>();  // (D)
  const FinalScale fs = final_scale(w, x);
  const double mean = fs.mean, sigma = fs.sigma;
  const Eigen::VectorXd ueff = (w.lnf_g.transpose().cast<double>().array() * u.array() / sigma).matrix();  // (D)
  const bool layer_norm = w.arch.norm != NormKind::RMSNorm;
  auto part = [&](const auto& row) { return row.template cast<double>().dot(ueff.transpose()); };

  Attribution a = attribution_of(p, target, sigma);
  PartSum add;
  a.embeddings = add(part(p.embeddings.row(t)));
  for (int l = 0; l < p.L; ++l) {
    for (int h = 0; h < p.H; ++h) {
      if (p.attn_scale.empty()) a.heads.push_back(add(part(p.head(l, h).row(t))));
      else a.heads.push_back(add(part(p.head(l, h).row(t).cwiseProduct(p.attn_scale[static_cast<size_t>(l)].row(t)))));
    }
    a.attn_bias.push_back(add(part(p.bias_written(l, t))));
    a.mlps.push_back(add(part(p.mlp_out[l].row(t))));
  }
  // The final norm's bias, and the lm_head's own (Phi: b[a] - b[b]).
  double head_bias = 0.0;
  if (w.lm_head_b.size() > target.token_a) head_bias = w.lm_head_b(target.token_a) - (target.token_b >= 0 ? w.lm_head_b(target.token_b) : 0.0f);
  a.final_bias = layer_norm && w.lnf_b.size() == D ? add(w.lnf_b.cast<double>().dot(u.transpose()) + head_bias) : add(head_bias);
  const double centring = layer_norm ? -mean * ueff.sum() : 0.0;
  a.centring = static_cast<float>(centring);
  a.parts_sum = static_cast<float>(add.sum + centring);
  a.model_logit = static_cast<float>(target_value(p.logits.row(t).data(), target));
  a.softcap = w.arch.final_softcap;
  if (a.softcap > 0) {
    // The pre-cap logit, from the final stream through the final norm (double): z = norm(x) . u.
    Eigen::VectorXd xn = ((x.array() - mean) / sigma).matrix();  // (D)
    xn.array() *= w.lnf_g.transpose().cast<double>().array();
    if (layer_norm && w.lnf_b.size() == D) xn += w.lnf_b.transpose().cast<double>();
    a.logit = static_cast<float>(xn.dot(u));
  } else {
    a.logit = a.model_logit;
  }
  a.completeness_error = std::abs(a.logit - a.parts_sum);
  return a;
}

Result<Attribution> direct_attribution(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int b,
                                       const LogitTarget& target, const std::vector<uint8_t>* ablate) {
  if (b >= 0 && b < batch.B())
    if (Status s = check_target(w, target, batch.lengths[b]); !s) return s.error();
  Result<StreamParts> p = stream_parts(w, cfg, batch, b, ablate);
  if (!p) return p.error();
  return direct_attribution(w, *p, target);
}

// ---- [value-weighted] ------------------------------------------------------------------
namespace {
// f(x) = (x W_V[h] + b_V[h]) W_O[h] for the rows x (N, D) of a layer's attention input: (N, D).
MatR head_values_of(const HeadWeights& hw, const MatR& x) {
  MatR v = x * hw.wv;  // (N, dh)
  v.rowwise() += hw.bv;
  return v * hw.wo;  // (N, D)
}
}  // namespace

MatR head_values(const ModelWeights& w, const ModelConfig& cfg, const StreamParts& p, int l, int h) {
  const MhaOptions mo = mha_options(cfg, w, l);
  return head_values_of(head_weights(layer_values(w.layers[l], mo, p.D), mo, h, p.D), p.attn_in[l]);
}

MatR head_value_norms(const ModelWeights& w, const ModelConfig& cfg, const MatR& attn_in, int l) {
  const MhaOptions mo = mha_options(cfg, w, l);
  const int D = static_cast<int>(attn_in.cols()), H = mo.num_heads;
  const LayerValues grouped = layer_values(w.layers[l], mo, D);
  MatR norms(H, attn_in.rows());  // (H, N)
  for (int h = 0; h < H; ++h) norms.row(h) = head_values_of(head_weights(grouped, mo, h, D), attn_in).rowwise().norm().transpose();
  return norms;
}

ValueWeighted value_weighted(const ModelWeights& w, const ModelConfig& cfg, const StreamParts& p, int len) {
  const int L = p.L, H = p.H, T = p.T;
  ValueWeighted vw;
  vw.L = L;
  vw.H = H;
  vw.T = T;
  vw.maps.assign(static_cast<size_t>(L) * H * T * T, 0.0f);
  vw.value_norm.assign(static_cast<size_t>(L) * H * T, 0.0f);
  for (int l = 0; l < L; ++l) {
    const MatR norms = head_value_norms(w, cfg, p.attn_in[l], l);  // (H, T)
    for (int h = 0; h < H; ++h) {
      float* norm = vw.value_norm.data() + (static_cast<size_t>(l) * H + h) * T;
      for (int j = 0; j < T; ++j) norm[j] = j < len ? norms(h, j) : 0.0f;
      const float* A = p.map(l, h);
      float* m = vw.maps.data() + (static_cast<size_t>(l) * H + h) * T * T;
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j) m[i * T + j] = A[i * T + j] * norm[j];
      double fa = 0, fv = 0;
      int rows = 0;
      for (int i = cfg.causal ? 1 : 0; i < len; ++i) {  // causal: row 0 sees only token 0
        double total = 0;
        for (int j = 0; j < len; ++j) total += m[i * T + j];
        fa += A[i * T];
        fv += total > 0 ? m[i * T] / total : 0.0;
        ++rows;
      }
      vw.first_attention.push_back(rows ? static_cast<float>(fa / rows) : kNaN);
      vw.first_value.push_back(rows ? static_cast<float>(fv / rows) : kNaN);
      vw.sink.push_back(rows ? static_cast<float>((fa - fv) / rows) : kNaN);
    }
  }
  return vw;
}

Result<std::vector<float>> value_weighted_shares(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch,
                                                 const std::vector<uint8_t>* ablate, const std::function<bool()>& cancelled) {
  const int L = cfg.num_layers, B = batch.B(), H = cfg.num_heads, T = batch.T;
  std::vector<float> maps(static_cast<size_t>(L) * B * H * T * T, 0.0f);  // (L, B, H, T, T)
  for (int b = 0; b < B; ++b) {
    Result<StreamParts> p = stream_parts(w, cfg, batch, b, ablate, cancelled);
    if (!p) return p.error();
    const int len = batch.lengths[b];
    const ValueWeighted vw = value_weighted(w, cfg, *p, len);  // (L, H, len, len)
    for (int l = 0; l < L; ++l)
      for (int h = 0; h < H; ++h) {
        const float* src = vw.map(l, h);
        float* dst = maps.data() + ((static_cast<size_t>(l) * B + b) * H + h) * T * T;
        for (int i = 0; i < len; ++i) {
          double total = 0;
          for (int j = 0; j < len; ++j) total += src[static_cast<size_t>(i) * len + j];
          if (total > 0)
            for (int j = 0; j < len; ++j) dst[static_cast<size_t>(i) * T + j] = static_cast<float>(src[static_cast<size_t>(i) * len + j] / total);
        }
      }
  }
  return maps;
}

// ---- [rollout] -------------------------------------------------------------------------
std::vector<float> rollout(const ForwardOutput& out, const Batch& batch, int b, int upto, int head) {
  const int T = out.T, Hw = out.Hw;
  std::vector<float> result(static_cast<size_t>(T) * T, 0.0f);
  if (b < 0 || b >= out.B || upto < 0 || upto >= out.L || head >= Hw) return result;
  const int len = batch.lengths[b];
  Eigen::MatrixXd R = Eigen::MatrixXd::Identity(len, len);  // (len, len)
  for (int l = 0; l <= upto; ++l) {
    Eigen::MatrixXd A = Eigen::MatrixXd::Zero(len, len);  // (len, len)
    const bool one = l == upto && head >= 0;
    for (int h = one ? head : 0; h < (one ? head + 1 : Hw); ++h) {
      const float* m = out.weights(l, b, h);
      for (int i = 0; i < len; ++i)
        for (int j = 0; j < len; ++j) A(i, j) += m[static_cast<size_t>(i) * T + j];
    }
    A /= one ? 1.0 : Hw;
    A += Eigen::MatrixXd::Identity(len, len);
    for (int i = 0; i < len; ++i) A.row(i) /= A.row(i).sum();
    R = A * R;
  }
  for (int i = 0; i < len; ++i)
    for (int j = 0; j < len; ++j) result[static_cast<size_t>(i) * T + j] = static_cast<float>(R(i, j));
  return result;
}

// ---- [detectors] -----------------------------------------------------------------------
const char* detector_name(Detector d) {
  switch (d) {
    case Detector::PreviousToken: return "previous_token";
    case Detector::DuplicateToken: return "duplicate_token";
    case Detector::Induction: return "induction";
    case Detector::FirstToken: return "first_token";
    case Detector::Painted: return "painted";
  }
  return "?";
}

HeadMetric detector_metric(Detector d) {
  switch (d) {
    case Detector::PreviousToken: return HeadMetric::DetectorPrevToken;
    case Detector::DuplicateToken: return HeadMetric::DetectorDuplicate;
    case Detector::Induction: return HeadMetric::DetectorInduction;
    case Detector::FirstToken: return HeadMetric::DetectorFirstToken;
    case Detector::Painted: return HeadMetric::DetectorPainted;
  }
  return HeadMetric::DetectorPainted;
}

std::vector<float> detector_pattern(Detector d, const std::vector<Token>& tokens, int T) {
  std::vector<float> p(static_cast<size_t>(T) * T, 0.0f);
  const int n = std::min(T, static_cast<int>(tokens.size()));
  auto same = [&](int i, int j) { return tokens[i].id == tokens[j].id && tokens[i].text == tokens[j].text; };
  for (int t = 0; t < n; ++t) {
    switch (d) {
      case Detector::PreviousToken:
        if (t >= 1) p[static_cast<size_t>(t) * T + t - 1] = 1;
        break;
      case Detector::FirstToken: p[static_cast<size_t>(t) * T] = 1; break;
      case Detector::DuplicateToken:
      case Detector::Induction:
        for (int s = 0; s < t; ++s)
          if (same(t, s)) p[static_cast<size_t>(t) * T + s + (d == Detector::Induction ? 1 : 0)] = 1;
        break;
      case Detector::Painted: break;
    }
  }
  return p;
}

float detector_score(const float* A, const float* P, int T, int len, MaskKind mask) {
  double num = 0, den = 0;
  for (int t = 0; t < len; ++t)
    for (int s = 0; s < len; ++s) {
      if (!mask_visible(mask, t, s, len)) continue;
      const double a = A[static_cast<size_t>(t) * T + s];
      num += a * P[static_cast<size_t>(t) * T + s];
      den += a;
    }
  return den > 0 ? static_cast<float>(num / den) : 0.0f;
}

std::vector<float> detector_scores(const ForwardOutput& out, const Batch& batch, int b, MaskKind mask, Detector d,
                                   const std::vector<float>* painted) {
  std::vector<float> scores;
  if (b < 0 || b >= out.B) return scores;
  const int T = out.T;
  std::vector<float> pattern;
  if (d == Detector::Painted) {
    if (!painted || painted->size() != static_cast<size_t>(T) * T) return scores;
    pattern = *painted;
  } else {
    pattern = detector_pattern(d, batch.sentences[b].tokens, T);
  }
  for (int l = 0; l < out.L; ++l)
    for (int h = 0; h < out.Hw; ++h) scores.push_back(detector_score(out.weights(l, b, h), pattern.data(), T, batch.lengths[b], mask));
  return scores;
}

// ---- [patching] ------------------------------------------------------------------------
Result<PatchRuns> patch_runs(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean_in, const Batch& corrupted_in,
                             const LogitTarget& target, const std::function<bool()>& cancelled) {
  if (clean_in.empty() || corrupted_in.empty()) return Error{ErrorKind::InvalidArgument, "Patching needs a clean and a corrupted sentence."};
  const int n = clean_in.lengths[0];
  if (corrupted_in.lengths[0] != n)
    return Error{ErrorKind::InvalidArgument, "The clean sentence has " + std::to_string(n) + " tokens and the corrupted one " +
                                                 std::to_string(corrupted_in.lengths[0]) +
                                                 ": patching needs the same token count (edit one until they match)."};
  if (target.token_b < 0) return Error{ErrorKind::InvalidArgument, "Patching measures a logit difference: give two tokens, A-B."};
  if (Status s = check_target(w, target, n); !s) return s.error();
  PatchRuns runs;
  Result<StreamParts> clean = stream_parts(w, cfg, clean_in, 0, nullptr, cancelled);
  if (!clean) return clean.error();
  Result<StreamParts> corrupt = stream_parts(w, cfg, corrupted_in, 0, nullptr, cancelled);
  if (!corrupt) return corrupt.error();
  runs.clean = std::move(clean).value();
  runs.corrupt = std::move(corrupt).value();
  runs.corrupted = one_sentence(corrupted_in, 0);
  runs.clean_diff = target_value(runs.clean.logits.row(target.position).data(), target);
  runs.corrupt_diff = target_value(runs.corrupt.logits.row(target.position).data(), target);
  return runs;
}

Result<double> PatchRuns::patched(const ModelWeights& w, const ModelConfig& cfg, int layer, const MatR& delta, const LogitTarget& target,
                                  const std::function<bool()>& cancelled) const {
  if (cancelled && cancelled()) return Error{ErrorKind::Cancelled, "Patching was cancelled."};
  ForwardHook hook;
  hook.start_layer = layer;
  hook.start_resid = &corrupt.resid[layer];
  hook.add_layer = layer;
  hook.attn_add = &delta;
  ForwardOptions opt;
  opt.want_logits = true;
  opt.cancelled = cancelled;
  opt.hook = &hook;
  Result<ForwardOutput> out = forward(w, cfg, corrupted, opt);
  if (!out) return out.error();
  return target_value(out->logits.row(target.position).data(), target);
}

float PatchRuns::recovery(double patched) const {
  const double gap = clean_diff - corrupt_diff;
  return gap != 0 ? static_cast<float>((patched - corrupt_diff) / gap) : kNaN;
}

Result<PatchResult> patch_heads(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean_in, const Batch& corrupted_in,
                                const LogitTarget& target, int position, const std::function<bool()>& cancelled,
                                const std::function<void(int, int)>& progress) {
  if (!clean_in.empty() && (position < -1 || position >= clean_in.lengths[0]))
    return Error{ErrorKind::InvalidArgument, "The patched position is outside the sentence."};
  Result<PatchRuns> runs = patch_runs(w, cfg, clean_in, corrupted_in, target, cancelled);
  if (!runs) return runs.error();
  const StreamParts &clean = runs->clean, &corrupt = runs->corrupt;
  const int L = clean.L, H = clean.H, T = clean.T, D = clean.D;
  PatchResult r;
  r.L = L;
  r.H = H;
  r.position = position;
  r.clean = static_cast<float>(runs->clean_diff);
  r.corrupted = static_cast<float>(runs->corrupt_diff);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      // The head's output swapped: clean minus corrupted, added to the corrupted block's output.
      MatR delta = MatR::Zero(T, D);  // (T, D)
      for (int t = 0; t < T; ++t)
        if (position < 0 || t == position) delta.row(t) = clean.head(l, h).row(t) - corrupt.head(l, h).row(t);
      Result<double> v = runs->patched(w, cfg, l, delta, target, cancelled);
      if (!v) return v.error();
      r.patched.push_back(static_cast<float>(*v));
      r.recovery.push_back(runs->recovery(*v));
      if (progress) progress(l * H + h + 1, L * H);
    }
  return r;
}

// ---- [patch cache] ---------------------------------------------------------------------
namespace {
uint64_t mix_floats(uint64_t h, const float* v, size_t n) {
  h = combine(h, n);
  if (n == 0) return h;
  // 16 evenly spaced values and the last, bit for bit.
  const size_t step = std::max<size_t>(1, n / 16);
  for (size_t i = 0; i < n; i += step) {
    uint32_t bits;
    std::memcpy(&bits, v + i, sizeof bits);
    h = combine(h, bits);
  }
  uint32_t last;
  std::memcpy(&last, v + n - 1, sizeof last);
  return combine(h, last);
}
uint64_t mix_mat(uint64_t h, const MatR& m) { return mix_floats(combine(h, static_cast<uint64_t>(m.cols())), m.data(), static_cast<size_t>(m.size())); }
// W_Q, W_K or W_V as mix_mat would hash the plain matrix, read from wherever it lives.
uint64_t mix_proj(uint64_t h, const LayerWeights& lw, int which) {
  if (lw.plain_qkv()) return mix_mat(h, which == LayerWeights::kQ ? lw.w_q : which == LayerWeights::kK ? lw.w_k : lw.w_v);
  const Eigen::Index cols = lw.proj_width(which), n = lw.d_in() * cols;
  h = combine(combine(h, static_cast<uint64_t>(cols)), static_cast<uint64_t>(n));  // as mix_mat, then mix_floats
  if (n == 0) return h;
  auto bits_at = [&](Eigen::Index i) {
    const float v = lw.proj_at(which, i / cols, i % cols);
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  };
  const Eigen::Index step = std::max<Eigen::Index>(1, n / 16);
  for (Eigen::Index i = 0; i < n; i += step) h = combine(h, bits_at(i));
  return combine(h, bits_at(n - 1));
}
uint64_t mix_vec(uint64_t h, const RowVec& v) { return mix_floats(h, v.data(), static_cast<size_t>(v.size())); }

std::vector<int> sentence_ids(const Batch& b) {
  std::vector<int> ids;
  if (b.empty()) return ids;
  for (const Token& t : b.sentences[0].tokens) ids.push_back(t.id);
  return ids;
}
}  // namespace

uint64_t weights_fingerprint(const ModelWeights& w) {
  uint64_t h = hash_bytes(w.arch.family);
  h = combine(h, static_cast<uint64_t>(w.d_model));
  h = combine(h, static_cast<uint64_t>(w.num_layers()));
  h = combine(h, hash_bytes(w.source.path));
  h = combine(h, hash_bytes(w.source.model_name));
  h = combine(h, w.source.seed);
  h = combine(h, static_cast<uint64_t>(w.source.steps));
  h = mix_mat(h, w.tok_emb);
  h = mix_mat(h, w.pos_emb);
  h = mix_mat(h, w.lm_head);
  h = mix_vec(h, w.lnf_g);
  h = mix_vec(h, w.lnf_b);
  for (const LayerWeights& lw : w.layers) {
    h = mix_proj(h, lw, LayerWeights::kQ);
    h = mix_proj(h, lw, LayerWeights::kK);
    h = mix_proj(h, lw, LayerWeights::kV);
    h = mix_vec(h, lw.b_o);
    h = mix_vec(h, lw.ln1_g);
    h = mix_vec(h, lw.ln2_g);
    h = mix_vec(h, lw.b_proj);
    h = mix_vec(h, lw.post_attn_g);
  }
  return h;
}

PatchKey patch_key(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean, const Batch& corrupted,
                   const LogitTarget& target, int position) {
  PatchKey k;
  k.weights = &w;
  k.fingerprint = weights_fingerprint(w);
  k.cfg = cfg;
  k.clean_ids = sentence_ids(clean);
  k.corrupted_ids = sentence_ids(corrupted);
  k.target = target;
  k.position = position;
  return k;
}

uint64_t PatchKey::hash() const {
  uint64_t h = combine(fingerprint, reinterpret_cast<uintptr_t>(weights));
  for (int id : clean_ids) h = combine(h, static_cast<uint64_t>(id));
  h = combine(h, 0xC1EA4ull);
  for (int id : corrupted_ids) h = combine(h, static_cast<uint64_t>(id));
  h = combine(h, static_cast<uint64_t>(target.position));
  h = combine(h, static_cast<uint64_t>(target.token_a));
  h = combine(h, static_cast<uint64_t>(target.token_b));
  h = combine(h, static_cast<uint64_t>(position));
  h = combine(h, static_cast<uint64_t>(cfg.num_heads));
  h = combine(h, static_cast<uint64_t>(cfg.num_layers));
  return h;
}

std::optional<PatchResult> PatchCache::find(const PatchKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = items_.begin(); it != items_.end(); ++it)
    if (it->first == key) {
      items_.splice(items_.begin(), items_, it);  // most recent first
      return items_.front().second;
    }
  return std::nullopt;
}

void PatchCache::put(const PatchKey& key, const PatchResult& result) {
  std::lock_guard<std::mutex> lock(mu_);
  items_.remove_if([&](const auto& item) { return item.first == key; });
  items_.emplace_front(key, result);
  while (items_.size() > capacity_) items_.pop_back();
}

size_t PatchCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return items_.size();
}

void PatchCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  items_.clear();
}

Result<PatchResult> patch_heads_cached(PatchCache& cache, const ModelWeights& w, const ModelConfig& cfg, const Batch& clean,
                                       const Batch& corrupted, const LogitTarget& target, int position,
                                       const std::function<bool()>& cancelled, const std::function<void(int, int)>& progress) {
  const PatchKey key = patch_key(w, cfg, clean, corrupted, target, position);
  if (std::optional<PatchResult> hit = cache.find(key)) return *hit;
  Result<PatchResult> r = patch_heads(w, cfg, clean, corrupted, target, position, cancelled, progress);
  if (r) cache.put(key, *r);
  return r;
}

}  // namespace headmap
