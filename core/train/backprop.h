// backprop.h: the model's layers with their backward passes, for the trainer.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H, L = layers, V = vocab
// N = B*T rows, one per token. Convention: y = x * W + b, W stored (D_in, D_out).
//
// Each forward here computes the same function as the inference path in model.cpp and
// attention.cpp (tests hold them together); it also keeps what its backward needs.
// Backward conventions, as in llm.c: parameter gradients are *accumulated* (dW += ...), so
// one zeroing per step serves every use of a tensor (the tied token embedding has two);
// input gradients are *accumulated* into the residual stream where one exists (LayerNorm,
// embeddings) and *overwritten* elsewhere, as each function says.
//
// Sections: [layernorm] [linear] [gelu] [attention] [cross-entropy] [embedding]
#pragma once
#include <cstdint>
#include <vector>

#include "core/model/weights.h"

namespace headmap {

// ---- [layernorm] -----------------------------------------------------------------------
// out: (N, D)   mean, rstd: (N) saved for the backward   x: (N, D)   g, b: (D)
// out = (x - mean) * rstd * g + b with rstd = 1/sqrt(var + 1e-5), var the biased variance.
void layernorm_forward(MatR& out, float* mean, float* rstd, const MatR& x, const RowVec& g, const RowVec& b);
// dx: (N, D) accumulated   dg, db: (D) accumulated   dout, x: (N, D)   mean, rstd: (N)
void layernorm_backward(MatR& dx, RowVec& dg, RowVec& db, const MatR& dout, const MatR& x, const float* mean,
                        const float* rstd, const RowVec& g);

// ---- [linear] --------------------------------------------------------------------------
// y: (N, out) = x (N, in) W (in, out) + b (out)
void linear_forward(MatR& y, const MatR& x, const MatR& W, const RowVec& b);
// dx: (N, in) overwritten (skipped when null)   dW: (in, out) and db: (out) accumulated
// dy: (N, out)   x: (N, in)   W: (in, out)
void linear_backward(MatR* dx, MatR& dW, RowVec& db, const MatR& dy, const MatR& x, const MatR& W);
// db: (out) accumulated with the column sums of dy: (N, out)
void add_column_sums(RowVec& db, const MatR& dy);

// ---- [gelu] ----------------------------------------------------------------------------
// GELU, tanh form (GPT-2): gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3).
// out, th: (N, F) with th = tanh(u) kept for the backward   x: (N, F)
void gelu_forward(MatR& out, MatR& th, const MatR& x);
// dx: (N, F) overwritten   dout, x, th: (N, F)
// gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
void gelu_backward(MatR& dx, const MatR& dout, const MatR& x, const MatR& th);

// ---- [attention] -----------------------------------------------------------------------
// Causal multi-head self-attention between the projections, exactly the forward's view:
// head h reads columns h*d_head .. (h+1)*d_head of Q, K and V, which sit side by side in
// qkv = [Q | K | V]. Scores are (Q_h / sqrt(d_head)) K_h^T, softmax over keys s <= t.
//
// ctx: (N, D) the heads' outputs side by side (the concatenation, before W_O)
// att: (B, H, T, T) softmax weights, 0 above the diagonal; kept for the backward
// qkv: (N, 3D)
void attention_forward(MatR& ctx, float* att, const MatR& qkv, int B, int T, int H);
// dqkv: (N, 3D) overwritten   dctx: (N, D)   qkv: (N, 3D)   att: (B, H, T, T) from the forward
// With prior.weight > 0, the gradient also holds that of an attention prior on one head:
// weight * mean over the rows t >= 1 of -log att[b, head, t, t-1] (a pull toward the
// previous token; the trainer's --prev-head option, trainer.h).
struct PrevTokenPrior {
  int head = -1;
  float weight = 0.0f;
};
void attention_backward(MatR& dqkv, const MatR& dctx, const MatR& qkv, const float* att, int B, int T, int H,
                        PrevTokenPrior prior = {});
// The prior's value for att: (B, H, T, T): weight * mean over b and t >= 1 of -log att[b, head, t, t-1].
double prev_token_prior_loss(const float* att, int B, int T, int H, PrevTokenPrior prior);

// ---- [cross-entropy] -------------------------------------------------------------------
// Mean next-token cross-entropy over the rows whose target is >= 0 (-1 = no target).
// In place: logits (N, V) become d loss / d logits = (softmax - onehot) / n_targets, and
// rows without a target become 0. row_loss: (N) scratch. Returns (mean loss, n_targets).
struct CrossEntropy {
  double loss = 0.0;  // nats per target token
  int targets = 0;
};
CrossEntropy cross_entropy_forward_backward(MatR& logits, std::vector<double>& row_loss, const int32_t* targets);
// The loss alone (logits untouched): for evaluation.
CrossEntropy cross_entropy_loss(const MatR& logits, std::vector<double>& row_loss, const int32_t* targets);

// ---- [embedding] -----------------------------------------------------------------------
// x: (N, D) = tok_emb[tokens] + pos_emb[t]   tokens: (B, T)   tok_emb: (V, D)   pos_emb: (>= T, D)
void embedding_forward(MatR& x, const int32_t* tokens, int B, int T, const MatR& tok_emb, const MatR& pos_emb);
// dtok_emb: (V, D) and dpos_emb: (>= T, D) accumulated   dx: (N, D)   tokens: (B, T)
void embedding_backward(MatR& dtok_emb, MatR& dpos_emb, const MatR& dx, const int32_t* tokens, int B, int T);

}  // namespace headmap
