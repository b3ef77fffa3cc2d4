// trainer.h: next-token language-model training of the core's own model, in process.
//
// B = batch, T = tokens (seq), D = d_model, H = heads, d_head = D/H, L = layers, V = vocab
// N = B*T rows, one per token. Convention: y = x * W + b, W stored (D_in, D_out).
//
// The model is the one forward() runs (model.h): learned token and position embeddings,
// L pre-LN blocks x += MHA(LN1(x)); x += MLP(LN2(x)) with a 4D GELU (tanh) MLP, a final
// LN_f and the tied unembedding logits = LN_f(x) tok_emb^T. Biases everywhere. Backward
// passes are hand-written (backprop.h); the optimiser is AdamW with global-norm clipping.
//
// How a UI drives it:
//   1. load_train_corpus() (or train_corpus_from_text()) once: vocabulary + token streams.
//   2. On a worker thread: train(corpus, options, hooks). It runs on the calling thread and
//      uses up to options.threads OpenMP threads inside each step.
//   3. hooks.on_progress is called on that thread after every progress_every steps and
//      after each evaluation; hooks.on_snapshot every snapshot_every steps with a complete,
//      fused ModelWeights copy that forward() can run. Copy what you need and return: the
//      step waits for the hook.
//   4. Set *hooks.cancel to true from any thread: train() returns ErrorKind::Cancelled
//      before the next step (the last snapshot stays valid).
//
// Determinism: the same corpus, options and thread count give bit-identical losses and
// weights. Batches come from Rng(seed), the init from counter-based streams of the seed.
//
// The parameters live in params.h, the tokenized training text in train_corpus.h.
//
// Sections: [options] [trainer] [training loop]
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/text/tokenizer.h"
#include "core/model/weights.h"
#include "core/train/backprop.h"
#include "core/train/params.h"
#include "core/train/train_corpus.h"

namespace headmap {

// ---- [options] -------------------------------------------------------------------------
struct TrainOptions {
  int d_model = 64, num_heads = 4, num_layers = 2;
  int context = 128;   // learned positions (>= seq); inference may run up to this many tokens
  bool no_w_o = false; // the chapter's exercise: heads concatenated, never mixed by W_O
  PosInit pos_init = PosInit::Normal;  // how the learned position table starts (params.h)
  // This share of the batch's rows are a random run of tokens said twice (ids >= 256, the
  // learned merges), with targets on the second copy only: nothing predicts it but looking
  // back to the token after the current one's earlier occurrence. It rewards a sharp
  // previous-token head and an induction head over a blur of the last few tokens.
  float repeat_fraction = 0.0f;
  // An attention prior on layer 0, head 0: prev_head_weight * the mean of -log of its weight
  // on the token just before each query, added to the loss for the first prev_head_steps
  // steps (0 = every step), then dropped. It teaches that head the previous-token pattern
  // early; after the prior ends only the language-model loss keeps (or loses) it. The
  // reported losses are the cross-entropy alone.
  float prev_head_weight = 0.0f;
  int prev_head_steps = 0;
  int steps = 4000;    // optimiser steps
  int batch = 16;      // B sequences per step
  int seq = 64;        // T tokens per sequence (windows of T+1 tokens: inputs and targets)
  float lr = 3e-3f;    // peak learning rate
  int warmup = 200;    // linear warm-up steps, then a cosine decay to lr * min_lr_ratio
  float min_lr_ratio = 0.1f;
  float weight_decay = 0.1f;  // decoupled (AdamW), on the (in, out) matrices only
  float beta1 = 0.9f, beta2 = 0.95f, adam_eps = 1e-8f;
  float clip = 1.0f;         // global gradient-norm clip; 0 = off
  uint64_t seed = 1;         // init and batch sampling
  int eval_every = 250;      // validation loss every N steps (and at the end); 0 = only at the end
  int eval_tokens = 16384;   // validation tokens per evaluation (a fixed set); 0 = the whole split
  int threads = 0;           // OpenMP threads inside a step; 0 = compute_threads()
  int progress_every = 10;   // on_progress every N steps
  int snapshot_every = 0;    // on_snapshot every N steps (and at the end); 0 = never
};

// Checks the options against each other and the corpus size; the message names the fix.
Status validate(const TrainOptions& o);

// The learning rate at step s (0-based): linear warm-up, then cosine to lr * min_lr_ratio.
float learning_rate(const TrainOptions& o, int step);

// ---- [trainer] -------------------------------------------------------------------------
// One model's parameters, gradients, AdamW state and activations. All buffers are sized
// on the first step and reused: a step allocates nothing once the shapes are set.
class Trainer {
 public:
  Trainer(ModelParams params, int num_heads, bool no_w_o);

  // Forward with the activations kept. tokens, targets: (B, T); target -1 = no target.
  // Returns the mean cross-entropy over the targets (nats per token). The logits buffer
  // ends up holding d loss / d logits (computed in the same pass), ready for backward().
  double forward(const int32_t* tokens, const int32_t* targets, int B, int T);
  // Gradients of the last forward's loss, accumulated into grads() (zero them first).
  void backward();
  void zero_grad();
  // zero_grad, forward, backward: the loss, with grads() filled.
  double loss_and_grad(const int32_t* tokens, const int32_t* targets, int B, int T);
  // Global-norm clipping (when clip > 0) and one AdamW update. Returns the norm before
  // clipping.
  double update(const TrainOptions& o, float lr);
  // The previous-token prior on layer 0 (backprop.h); head -1 or weight 0 = none.
  void set_prev_token_prior(PrevTokenPrior p) { prior_ = p; }

  const ModelParams& params() const { return p_; }
  ModelParams& params() { return p_; }
  const ModelParams& grads() const { return g_; }
  int num_heads() const { return H_; }
  bool no_w_o() const { return no_w_o_; }
  long updates() const { return t_; }

 private:
  struct LayerActs {
    MatR x_in;             // (N, D) residual stream entering the layer
    MatR ln1;              // (N, D)
    std::vector<float> ln1_mean, ln1_rstd;  // (N)
    MatR qkv;              // (N, 3D)
    // (B, H, T, T). Aligned: Eigen vectorises a row sum from the first aligned element, so
    // a buffer at another address mod 64 would sum in another order and give other bits.
    std::vector<float, Eigen::aligned_allocator<float>> att;
    MatR ctx;              // (N, D) heads side by side
    MatR x_mid;            // (N, D) after the attention residual
    MatR ln2;              // (N, D)
    std::vector<float> ln2_mean, ln2_rstd;  // (N)
    MatR fc_pre, fc_tanh, fc_act;           // (N, 4D) each
  };
  ModelParams p_, g_, m_, v_;  // parameters, gradients, AdamW moments
  std::vector<ParamRef> pr_, gr_, mr_, vr_;
  int H_;
  bool no_w_o_;
  PrevTokenPrior prior_;
  long t_ = 0;  // AdamW updates so far
  int B_ = 0, T_ = 0;
  std::vector<int32_t> tokens_, targets_;  // (B, T) of the last forward
  std::vector<LayerActs> acts_;            // L
  MatR x_out_, lnf_;                       // (N, D)
  std::vector<float> lnf_mean_, lnf_rstd_; // (N)
  MatR logits_;                            // (N, V); the backward turns it into dlogits
  std::vector<double> row_loss_;           // (N)
  MatR dx_, dtmp_, dctx_, dqkv_, dfc_, dfc2_;  // gradient scratch: (N, D) x3, (N, 3D), (N, 4D) x2
  void embed_and_layers(const int32_t* tokens, int B, int T);
};

// ---- [training loop] -------------------------------------------------------------------
struct TrainProgress {
  int step = 0, steps = 0;   // steps done, of steps
  double train_loss = 0.0;   // mean loss over the steps since the last report (nats/token)
  double val_loss = -1.0;    // the latest validation loss; -1 until measured
  bool evaluated = false;    // this report follows a fresh evaluation
  double lr = 0.0;           // learning rate of the last step
  double grad_norm = 0.0;    // gradient norm of the last step, before clipping
  double tokens_per_s = 0.0; // training tokens per second, over the run so far
  double elapsed_s = 0.0;
  double eta_s = 0.0;        // remaining seconds, from the rate so far (evaluations included)
};

struct TrainHooks {
  std::function<void(const TrainProgress&)> on_progress;
  std::function<void(const ModelWeights&, const TrainProgress&)> on_snapshot;
  const std::atomic<bool>* cancel = nullptr;  // true: stop before the next step
};

struct TrainPoint {
  int step;
  double train_loss;  // mean over the steps since the previous point
  double val_loss;    // -1 when not measured at this step
};

struct TrainResult {
  ModelWeights weights;             // fused, source = Trained, vocabulary included
  std::vector<TrainPoint> history;  // one point per progress report
  double final_train_loss = 0.0;    // mean over the last min(100, steps) steps
  double val_loss = 0.0;            // at the end
  double seconds = 0.0;
  double tokens_per_s = 0.0;        // training steps only
};

// Trains a fresh model on the corpus. Errors: invalid options (InvalidConfig), a corpus too
// small for the options (InvalidArgument), cancellation (Cancelled).
Result<TrainResult> train(const TrainCorpus& corpus, const TrainOptions& o, const TrainHooks& hooks = {});

}  // namespace headmap
