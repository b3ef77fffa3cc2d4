// trainer.cpp: parameters, the training step (forward, backward, AdamW), the corpus
// streams and the training loop (see trainer.h).
//
// B = batch, T = tokens (seq), D = d_model, H = heads, L = layers, V = vocab, N = B*T
// Sections: [options] [trainer] [training loop]
#include "core/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/train/backprop.h"
#include "core/model/config.h"
#include "core/io/export.h"
#include "core/math/gemm.h"
#include "core/model/model.h"
#include "core/math/rng.h"
#include "core/text/utf8.h"

namespace headmap {

// ---- [options] -------------------------------------------------------------------------
Status validate(const TrainOptions& o) {
  auto bad = [](std::string m) { return Status(Error{ErrorKind::InvalidConfig, std::move(m)}); };
  ModelConfig c;
  c.d_model = o.d_model;
  c.num_heads = o.num_heads;
  c.num_layers = o.num_layers;
  c.context = o.context;
  if (Status s = validate(c); !s) return s;
  if (o.seq < 2) return bad("seq must be at least 2 tokens (it is " + std::to_string(o.seq) + ").");
  if (o.seq > o.context)
    return bad("seq (" + std::to_string(o.seq) + ") is longer than the learned positions (context " + std::to_string(o.context) +
               "): raise --context or lower --seq.");
  if (o.batch < 1 || o.batch > 4096) return bad("batch must be 1..4096 (it is " + std::to_string(o.batch) + ").");
  if (o.steps < 1) return bad("steps must be at least 1.");
  if (!(o.lr > 0.0f && o.lr < 1.0f)) return bad("lr must be in (0, 1); 1e-3 .. 3e-3 suits these small models.");
  if (o.warmup < 0) return bad("warmup must be >= 0 steps.");
  if (!(o.repeat_fraction >= 0 && o.repeat_fraction <= 1)) return bad("repeat_fraction must be between 0 and 1.");
  if (!(o.prev_head_weight >= 0 && o.prev_head_weight <= 100)) return bad("prev_head_weight must be between 0 and 100.");
  if (o.prev_head_steps < 0) return bad("prev_head_steps must be >= 0 (0 = every step).");
  if (!(o.min_lr_ratio >= 0.0f && o.min_lr_ratio <= 1.0f)) return bad("min_lr_ratio must be in [0, 1].");
  if (!(o.weight_decay >= 0.0f && o.weight_decay < 1.0f)) return bad("weight_decay must be in [0, 1).");
  if (!(o.beta1 >= 0.0f && o.beta1 < 1.0f && o.beta2 >= 0.0f && o.beta2 < 1.0f)) return bad("AdamW betas must be in [0, 1).");
  if (!(o.adam_eps > 0.0f)) return bad("adam_eps must be > 0.");
  if (!(o.clip >= 0.0f)) return bad("clip must be >= 0 (0 turns clipping off).");
  if (o.eval_every < 0 || o.eval_tokens < 0 || o.progress_every < 0 || o.snapshot_every < 0)
    return bad("eval_every, eval_tokens, progress_every and snapshot_every must be >= 0.");
  if (o.threads < 0) return bad("threads must be >= 0 (0 = all cores).");
  return Status();
}

float learning_rate(const TrainOptions& o, int step) {
  if (step < o.warmup) return o.lr * static_cast<float>(step + 1) / static_cast<float>(o.warmup);
  const int span = std::max(1, o.steps - o.warmup);
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup) / span);
  const double cosine = 0.5 * (1.0 + std::cos(3.141592653589793 * progress));
  return static_cast<float>(o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * cosine));
}

// ---- [trainer] -------------------------------------------------------------------------
Trainer::Trainer(ModelParams params, int num_heads, bool no_w_o) : p_(std::move(params)), H_(num_heads), no_w_o_(no_w_o) {
  HM_ASSERT(p_.num_layers() >= 1 && p_.d_model() >= 1, "the trainer needs at least one layer");
  HM_ASSERT(num_heads >= 1 && p_.d_model() % num_heads == 0, "num_heads must divide d_model; validate() the options first");
  g_ = zeros_like(p_);
  m_ = zeros_like(p_);
  v_ = zeros_like(p_);
  pr_ = param_refs(p_, no_w_o_);
  gr_ = param_refs(g_, no_w_o_);
  mr_ = param_refs(m_, no_w_o_);
  vr_ = param_refs(v_, no_w_o_);
  acts_.resize(static_cast<size_t>(p_.num_layers()));
}

void Trainer::zero_grad() {
  for (ParamRef& r : gr_) std::fill(r.data, r.data + r.size, 0.0f);
}

// The residual stream through the layers; leaves LN_f's input in x_out_.
void Trainer::embed_and_layers(const int32_t* tokens, int B, int T) {
  const int L = p_.num_layers(), N = B * T;
  embedding_forward(acts_[0].x_in, tokens, B, T, p_.tok_emb, p_.pos_emb);  // (N, D)
  for (int l = 0; l < L; ++l) {
    LayerActs& a = acts_[static_cast<size_t>(l)];
    const LayerParams& lp = p_.layers[static_cast<size_t>(l)];
    a.ln1_mean.resize(N), a.ln1_rstd.resize(N), a.ln2_mean.resize(N), a.ln2_rstd.resize(N);
    // attention sub-block: x_mid = x_in + attention(LN1(x_in)) W_O + b_O
    layernorm_forward(a.ln1, a.ln1_mean.data(), a.ln1_rstd.data(), a.x_in, lp.ln1_g, lp.ln1_b);  // (N, D)
    linear_forward(a.qkv, a.ln1, lp.w_qkv, lp.b_qkv);                                          // (N, 3D)
    a.att.resize(static_cast<size_t>(B) * H_ * T * T);                                         // (B, H, T, T)
    attention_forward(a.ctx, a.att.data(), a.qkv, B, T, H_);                                   // (N, D)
    if (no_w_o_) {
      a.x_mid = a.x_in + a.ctx;
    } else {
      linear_forward(a.x_mid, a.ctx, lp.w_o, lp.b_o);  // (N, D)
      a.x_mid += a.x_in;
    }
    // MLP sub-block: x_out = x_mid + GELU(LN2(x_mid) W_fc + b_fc) W_proj + b_proj
    layernorm_forward(a.ln2, a.ln2_mean.data(), a.ln2_rstd.data(), a.x_mid, lp.ln2_g, lp.ln2_b);  // (N, D)
    linear_forward(a.fc_pre, a.ln2, lp.w_fc, lp.b_fc);                                          // (N, 4D)
    gelu_forward(a.fc_act, a.fc_tanh, a.fc_pre);                                                // (N, 4D)
    MatR& out = l + 1 < L ? acts_[static_cast<size_t>(l) + 1].x_in : x_out_;
    linear_forward(out, a.fc_act, lp.w_proj, lp.b_proj);  // (N, D)
    out += a.x_mid;
  }
}

double Trainer::forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  HM_ASSERT(B >= 1 && T >= 1, "the batch must have at least one token");
  HM_ASSERT(T <= p_.context(), "seq is longer than the learned positions: lower seq or raise context");
  const int N = B * T;
  B_ = B;
  T_ = T;
  tokens_.assign(tokens, tokens + N);
  targets_.assign(targets, targets + N);
  embed_and_layers(tokens, B, T);
  lnf_mean_.resize(N), lnf_rstd_.resize(N);
  layernorm_forward(lnf_, lnf_mean_.data(), lnf_rstd_.data(), x_out_, p_.lnf_g, p_.lnf_b);  // (N, D)
  logits_.resize(N, p_.vocab_size());                                                      // (N, V)
  gemm(logits_, lnf_, p_.tok_emb.transpose());
  // Loss and d loss / d logits in one pass: the logits buffer now holds the gradient.
  return cross_entropy_forward_backward(logits_, row_loss_, targets_.data()).loss;
}

void Trainer::backward() {
  HM_ASSERT(B_ > 0, "backward() needs a forward() first");
  const int L = p_.num_layers(), B = B_, T = T_, N = B * T, D = p_.d_model();
  // pass 1: the tied unembedding, logits = lnf tok_emb^T.
  gemm(g_.tok_emb, logits_.transpose(), lnf_, 1.0f);  // (V, N) (N, D)
  dtmp_.resize(N, D);
  gemm(dtmp_, logits_, p_.tok_emb);  // (N, V) (V, D): d lnf
  // pass 2: LN_f; dx_ is the gradient of the residual stream from here down.
  dx_.setZero(N, D);
  layernorm_backward(dx_, g_.lnf_g, g_.lnf_b, dtmp_, x_out_, lnf_mean_.data(), lnf_rstd_.data(), p_.lnf_g);
  // pass 3: the layers, last first.
  for (int l = L - 1; l >= 0; --l) {
    LayerActs& a = acts_[static_cast<size_t>(l)];
    const LayerParams& lp = p_.layers[static_cast<size_t>(l)];
    LayerParams& lg = g_.layers[static_cast<size_t>(l)];
    // MLP: dx_ carries d x_out; the residual passes it straight to x_mid.
    linear_backward(&dfc_, lg.w_proj, lg.b_proj, dx_, a.fc_act, lp.w_proj);  // dfc_: (N, 4D) d fc_act
    gelu_backward(dfc2_, dfc_, a.fc_pre, a.fc_tanh);                         // dfc2_: (N, 4D) d fc_pre
    linear_backward(&dtmp_, lg.w_fc, lg.b_fc, dfc2_, a.ln2, lp.w_fc);        // dtmp_: (N, D) d ln2
    layernorm_backward(dx_, lg.ln2_g, lg.ln2_b, dtmp_, a.x_mid, a.ln2_mean.data(), a.ln2_rstd.data(), lp.ln2_g);
    // attention: dx_ now carries d x_mid.
    const MatR* dctx = &dx_;  // without W_O, the concatenation is added to the stream as is
    if (!no_w_o_) {
      linear_backward(&dctx_, lg.w_o, lg.b_o, dx_, a.ctx, lp.w_o);  // dctx_: (N, D)
      dctx = &dctx_;
    }
    attention_backward(dqkv_, *dctx, a.qkv, a.att.data(), B, T, H_, l == 0 ? prior_ : PrevTokenPrior{});  // dqkv_: (N, 3D)
    linear_backward(&dtmp_, lg.w_qkv, lg.b_qkv, dqkv_, a.ln1, lp.w_qkv);  // dtmp_: (N, D) d ln1
    layernorm_backward(dx_, lg.ln1_g, lg.ln1_b, dtmp_, a.x_in, a.ln1_mean.data(), a.ln1_rstd.data(), lp.ln1_g);
  }
  // pass 4: the embeddings.
  embedding_backward(g_.tok_emb, g_.pos_emb, dx_, tokens_.data(), B, T);
}

double Trainer::loss_and_grad(const int32_t* tokens, const int32_t* targets, int B, int T) {
  zero_grad();
  const double loss = forward(tokens, targets, B, T);
  backward();
  return loss;
}

double Trainer::update(const TrainOptions& o, float lr) {
  // pass 1: the global gradient norm, summed tensor by tensor in a fixed order.
  double ss = 0.0;
  for (const ParamRef& g : gr_) ss += Eigen::Map<const Eigen::VectorXf>(g.data, g.size).squaredNorm();
  const double norm = std::sqrt(ss);
  const float coef = (o.clip > 0.0f && norm > o.clip) ? static_cast<float>(o.clip / (norm + 1e-6)) : 1.0f;
  // pass 2: AdamW (Loshchilov & Hutter): decoupled decay p -= lr wd p, then the Adam step
  // with bias-corrected moments, as torch.optim.AdamW does it.
  ++t_;
  const float b1 = o.beta1, b2 = o.beta2;
  const float bc1 = 1.0f - static_cast<float>(std::pow(static_cast<double>(b1), static_cast<double>(t_)));
  const float bc2 = 1.0f - static_cast<float>(std::pow(static_cast<double>(b2), static_cast<double>(t_)));
  const float step = lr / bc1, inv_sqrt_bc2 = 1.0f / std::sqrt(bc2);
  for (size_t k = 0; k < pr_.size(); ++k) {
    auto p = Eigen::Map<Eigen::ArrayXf>(pr_[k].data, pr_[k].size);
    const auto g = Eigen::Map<const Eigen::ArrayXf>(gr_[k].data, gr_[k].size) * coef;
    auto m = Eigen::Map<Eigen::ArrayXf>(mr_[k].data, mr_[k].size);
    auto v = Eigen::Map<Eigen::ArrayXf>(vr_[k].data, vr_[k].size);
    if (pr_[k].decay && o.weight_decay > 0.0f) p *= 1.0f - lr * o.weight_decay;
    m = b1 * m + (1.0f - b1) * g;
    v = b2 * v + (1.0f - b2) * g.square();
    p -= step * m / (v.sqrt() * inv_sqrt_bc2 + o.adam_eps);
  }
  return norm;
}

// ---- [training loop] -------------------------------------------------------------------
namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Restores OpenMP's thread count when training ends, however it ends.
struct ThreadsGuard {
  int saved;
  explicit ThreadsGuard(int n) : saved(compute_threads()) {
    if (n > 0) set_compute_threads(n);
  }
  ~ThreadsGuard() { set_compute_threads(saved); }
};

std::string options_json(const TrainOptions& o, const std::string& corpus) {
  nlohmann::json j = {{"d_model", o.d_model}, {"num_heads", o.num_heads}, {"num_layers", o.num_layers}, {"context", o.context},
                      {"no_w_o", o.no_w_o},
                      {"pos_init", o.pos_init == PosInit::Sinusoid ? "sinusoid" : "normal"},
                      {"repeat_fraction", o.repeat_fraction}, {"prev_head_weight", o.prev_head_weight},
                      {"prev_head_steps", o.prev_head_steps}, {"steps", o.steps}, {"batch", o.batch}, {"seq", o.seq}, {"lr", o.lr},
                      {"warmup", o.warmup}, {"min_lr_ratio", o.min_lr_ratio}, {"weight_decay", o.weight_decay},
                      {"beta1", o.beta1}, {"beta2", o.beta2}, {"adam_eps", o.adam_eps}, {"clip", o.clip}, {"seed", o.seed},
                      {"eval_every", o.eval_every}, {"eval_tokens", o.eval_tokens}, {"threads", compute_threads()},
                      {"corpus", corpus}};
  return j.dump();
}
}  // namespace

Result<TrainResult> train(const TrainCorpus& corpus, const TrainOptions& o, const TrainHooks& hooks) {
  if (Status s = validate(o); !s) return s.error();
  const int B = o.batch, T = o.seq, V = corpus.bpe.size();
  const int64_t n_train = static_cast<int64_t>(corpus.train.size()), n_val = static_cast<int64_t>(corpus.val.size());
  if (n_train < T + 1 || n_val < T + 1)
    return Error{ErrorKind::InvalidArgument, "The corpus " + corpus.name + " has " + std::to_string(n_train) + " training and " +
                                                 std::to_string(n_val) + " validation tokens; seq " + std::to_string(T) +
                                                 " needs at least " + std::to_string(T + 1) + " in each: lower --seq or use a larger corpus."};
  if (V < 1) return Error{ErrorKind::InvalidArgument, "The corpus has no vocabulary."};
  const ThreadsGuard threads(o.threads);
  const auto t_start = Clock::now();

  Trainer tr(init_params(o.d_model, o.num_layers, V, o.context, o.seed, o.pos_init), o.num_heads, o.no_w_o);
  Rng rng(combine(o.seed, 0xBA7C4ull));
  std::vector<int32_t> tok(static_cast<size_t>(B) * T), tgt(static_cast<size_t>(B) * T);  // (B, T) each
  std::vector<int32_t> rep(static_cast<size_t>(T) + 1);  // a repeated run (repeat_fraction)

  // The validation set: fixed, non-overlapping windows from the start of the split, in
  // batches of B (a short last batch is padded with rows that have no targets).
  const int64_t max_windows = o.eval_tokens > 0 ? std::max<int64_t>(1, o.eval_tokens / T) : INT64_MAX;
  const int64_t n_windows = std::min<int64_t>((n_val - 1) / T, max_windows);
  auto evaluate = [&]() {
    double total = 0.0;
    int64_t count = 0;
    for (int64_t w0 = 0; w0 < n_windows; w0 += B) {
      for (int b = 0; b < B; ++b) {
        const int64_t w = w0 + b;
        for (int t = 0; t < T; ++t) {
          const size_t i = static_cast<size_t>(b) * T + t;
          tok[i] = w < n_windows ? corpus.val[static_cast<size_t>(w * T + t)] : corpus.val[static_cast<size_t>(t)];
          tgt[i] = w < n_windows ? corpus.val[static_cast<size_t>(w * T + t + 1)] : -1;
        }
      }
      const int64_t rows = std::min<int64_t>(B, n_windows - w0) * T;
      total += tr.forward(tok.data(), tgt.data(), B, T) * static_cast<double>(rows);
      count += rows;
    }
    return count ? total / static_cast<double>(count) : 0.0;
  };

  auto make_weights = [&](int steps_done, double train_loss, double val_loss) {
    ModelWeights w = to_model_weights(tr.params(), corpus.bpe, o.no_w_o);
    w.source.trained_heads = o.num_heads;
    w.source.steps = steps_done;
    w.source.final_loss = train_loss;
    w.source.val_loss = val_loss > 0 ? val_loss : 0.0;
    w.source.corpus = corpus.name;
    w.source.seed = o.seed;
    w.source.train_options = options_json(o, corpus.name);
    return w;
  };

  TrainResult res;
  std::vector<double> step_loss;
  step_loss.reserve(static_cast<size_t>(o.steps));
  double train_time = 0.0, eval_time = 0.0, window_sum = 0.0, val_loss = -1.0;
  int window_n = 0, evals = 0;
  const int n_evals_total = (o.eval_every > 0 ? o.steps / o.eval_every : 0) + (o.eval_every > 0 && o.steps % o.eval_every == 0 ? 0 : 1);
  TrainProgress pr;
  pr.steps = o.steps;
  for (int s = 0; s < o.steps; ++s) {
    if (hooks.cancel && hooks.cancel->load(std::memory_order_relaxed))
      return Error{ErrorKind::Cancelled, "Training was cancelled after " + std::to_string(s) + " of " + std::to_string(o.steps) + " steps."};
    const auto t0 = Clock::now();
    // pass 1: B random windows of T+1 tokens: inputs and next-token targets.
    for (int b = 0; b < B; ++b) {
      if (o.repeat_fraction > 0 && rng.uniform() < o.repeat_fraction && V > 257) {
        // A random run of n tokens, then the same run again: T + 1 tokens in all.
        const int n = (T + 2) / 2;
        for (int t = 0; t < n; ++t) rep[static_cast<size_t>(t)] = 256 + static_cast<int32_t>(rng.next() % static_cast<uint64_t>(V - 256));
        for (int t = n; t <= T; ++t) rep[static_cast<size_t>(t)] = rep[static_cast<size_t>(t - n)];
        for (int t = 0; t < T; ++t) {
          tok[static_cast<size_t>(b) * T + t] = rep[static_cast<size_t>(t)];
          tgt[static_cast<size_t>(b) * T + t] = t >= n ? rep[static_cast<size_t>(t + 1)] : -1;  // the second copy only
        }
        continue;
      }
      const int64_t off = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(n_train - T));
      for (int t = 0; t < T; ++t) {
        tok[static_cast<size_t>(b) * T + t] = corpus.train[static_cast<size_t>(off + t)];
        tgt[static_cast<size_t>(b) * T + t] = corpus.train[static_cast<size_t>(off + t + 1)];
      }
    }
    // pass 2: loss, gradients, one AdamW update.
    const float lr = learning_rate(o, s);
    const bool prior_on = o.prev_head_weight > 0 && (o.prev_head_steps == 0 || s < o.prev_head_steps);
    tr.set_prev_token_prior(prior_on ? PrevTokenPrior{0, o.prev_head_weight} : PrevTokenPrior{});
    const double loss = tr.loss_and_grad(tok.data(), tgt.data(), B, T);
    const double gnorm = tr.update(o, lr);
    train_time += seconds_since(t0);
    if (!std::isfinite(loss) || !std::isfinite(gnorm))
      return Error{ErrorKind::InvalidArgument, "The loss diverged (not finite) at step " + std::to_string(s + 1) +
                                                   ": lower --lr (now " + std::to_string(o.lr) + ") or keep --clip on."};
    step_loss.push_back(loss);
    window_sum += loss;
    ++window_n;
    // pass 3: evaluation, progress, snapshots.
    const int done = s + 1;
    const bool last = done == o.steps;
    const bool eval_now = last || (o.eval_every > 0 && done % o.eval_every == 0);
    if (eval_now) {
      const auto te = Clock::now();
      val_loss = evaluate();
      eval_time += seconds_since(te);
      ++evals;
    }
    const bool report = last || eval_now || (o.progress_every > 0 && done % o.progress_every == 0);
    const bool snapshot = o.snapshot_every > 0 && (last || done % o.snapshot_every == 0);
    if (report || snapshot) {
      pr.step = done;
      pr.train_loss = window_n ? window_sum / window_n : loss;
      pr.val_loss = val_loss;
      pr.evaluated = eval_now;
      pr.lr = lr;
      pr.grad_norm = gnorm;
      pr.tokens_per_s = train_time > 0 ? static_cast<double>(done) * B * T / train_time : 0.0;
      pr.elapsed_s = seconds_since(t_start);
      const double per_eval = evals ? eval_time / evals : 0.0;
      pr.eta_s = (o.steps - done) * (train_time / done) + std::max(0, n_evals_total - evals) * per_eval;
    }
    if (report) {
      res.history.push_back({done, pr.train_loss, eval_now ? val_loss : -1.0});
      if (hooks.on_progress) hooks.on_progress(pr);
      window_sum = 0.0;
      window_n = 0;
    }
    if (snapshot && hooks.on_snapshot) hooks.on_snapshot(make_weights(done, pr.train_loss, val_loss), pr);
  }

  const size_t tail = std::min<size_t>(100, step_loss.size());
  double tail_sum = 0.0;
  for (size_t i = step_loss.size() - tail; i < step_loss.size(); ++i) tail_sum += step_loss[i];
  res.final_train_loss = tail_sum / static_cast<double>(tail);
  res.val_loss = val_loss;
  res.seconds = seconds_since(t_start);
  res.tokens_per_s = train_time > 0 ? static_cast<double>(o.steps) * B * T / train_time : 0.0;
  res.weights = make_weights(o.steps, res.final_train_loss, val_loss);
  return res;
}

}  // namespace headmap
