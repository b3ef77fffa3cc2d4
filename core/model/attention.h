// attention.h: multi-head self-attention, three ways.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H
// kv_heads = K/V heads (H for multi-head, 1 for multi-query), G = H/kv_heads query heads per K/V head
// Row = query t, column = key s. Convention: y = x * W + b, W stored (D_in, D_out).
//
//   mha_forward        the fast path: one fused QKV GEMM, heads as strided views of it,
//                      (b,h) pairs in parallel, causal blocks skip the masked half.
//   head_trace         one sentence, one head kept in detail: every intermediate of the
//                      step-through (Q_h, K_h, V_h, raw/scaled/masked scores, weights, ·V,
//                      concat, W_O), computed the way the first chapter writes it, with one
//                      small (D, d_head) Linear per head.
//   mha_explicit       the course's code, op by op on N-d tensors: view, transpose, matmul,
//                      softmax, transpose, view. Slow; it exists so tests can hold every
//                      passport shape against a tensor that was really produced.
//
// All three implement the pitfall switches, and the tests hold them to each other.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/model/config.h"
#include "core/math/tensor.h"
#include "core/model/weights.h"

namespace headmap {

struct StageTimes;  // stage_times.h

struct MhaOptions {
  int num_heads = 1;             // H
  int num_kv_heads = 0;          // kv_heads; 0 = H (see ModelConfig::num_kv_heads)
  bool causal = true;
  Pitfalls pitfalls;
  const int* lengths = nullptr;  // (B) real tokens per sentence; null = all T are real
  const uint8_t* ablated = nullptr;  // (H) 1 = this head's output is zeroed before W_O
  // Asked before each (sentence, head) of mha_forward: true skips the rest, and the caller
  // drops the output (forward() returns ErrorKind::Cancelled).
  const std::function<bool()>* cancelled = nullptr;
  // The family's attention (arch.h), all off for GPT-2's block. Set by mha_options(cfg, w, layer).
  int head_dim = 0;                  // d_head when it is not D/H; 0 = D/H
  float scale = 0.0f;                // the score scale; 0 = 1/sqrt(d_head) (or the pitfall's)
  float softcap = 0.0f;              // scaled scores -> c tanh(s / c); 0 = none
  int window = 0;                    // keys s with t - s < window only (sliding window); 0 = all
  float qk_norm_eps = 1e-6f;         // the q/k RMSNorm's epsilon (weights in LayerWeights::q_norm, k_norm)
  std::vector<double> rope_inv_freq; // (rot/2) RoPE frequencies; empty = no rotation
  std::vector<double> rope_inv_freq_long;  // (rot/2) longrope's, used past rope_long_after positions; empty = none
  int rope_long_after = 0;           // longrope: the original context (more positions take the long frequencies)
  float rope_mscale = 1.0f;          // cos and sin scaled by it (longrope's attention factor)
  int rope_seq_len = 0;              // the positions the whole text holds, when a caller computes only some (the hover)
  StageTimes* times = nullptr;       // the benchmarks' per-stage timers (stage_times.h); null = off
};

// d_head under o for inputs of width D: o.head_dim, else D/H.
inline int head_dim(const MhaOptions& o, int d_model) { return o.head_dim > 0 ? o.head_dim : d_model / o.num_heads; }

inline bool head_ablated(const MhaOptions& o, int h) { return o.ablated && o.ablated[h]; }
inline int kv_heads(const MhaOptions& o) { return o.num_kv_heads > 0 ? o.num_kv_heads : o.num_heads; }
// The K/V head that query head h reads: its group's, h / G.
inline int kv_head_of(const MhaOptions& o, int h) { return h / (o.num_heads / kv_heads(o)); }

// The attention options a model config implies (lengths and ablation left unset).
inline MhaOptions mha_options(const ModelConfig& cfg) {
  MhaOptions o;
  o.num_heads = cfg.num_heads;
  o.num_kv_heads = cfg.num_kv_heads;
  o.causal = cfg.causal;
  o.pitfalls = cfg.pitfalls;
  return o;
}
// ...and with the family's attention (arch.h) for layer `layer` of these weights: d_head,
// scale, soft-cap, window, RoPE (off when cfg.positional is off). GPT-2's block: the same as above.
MhaOptions mha_options(const ModelConfig& cfg, const ModelWeights& w, int layer);

// Which keys a query may see: the one rule shared by the core, the PNG export and the
// app's texels (mask_visible below; app/common/map_colour.h colours by it).
enum class MaskKind : int {
  None = 0,         // every cell (matrices that are not query x key, such as Q or V)
  Causal = 1,       // key s <= query t, real tokens only
  Reversed = 2,     // key s > query t (the reversed-mask pitfall), real tokens only
  PaddingOnly = 3,  // every real key (bidirectional attention)
};
// Whether a map drawn under mask m shows hidden (grey) cells: padding keys are never drawn,
// so a bidirectional map has none, and its legend must not speak of a mask.
inline bool mask_greys_cells(MaskKind m) { return m == MaskKind::Causal || m == MaskKind::Reversed; }
inline MaskKind mask_kind(bool causal, const Pitfalls& p) {
  if (!causal) return MaskKind::PaddingOnly;
  return p.reversed_mask ? MaskKind::Reversed : MaskKind::Causal;
}
inline MaskKind mask_kind(const MhaOptions& o) { return mask_kind(o.causal, o.pitfalls); }
inline MaskKind mask_kind(const ModelConfig& cfg) { return mask_kind(cfg.causal, cfg.pitfalls); }

// Does query t see key s under mask m? (len = real tokens in this sentence)
inline bool mask_visible(MaskKind m, int t, int s, int len) {
  if (m == MaskKind::None) return true;
  if (t >= len || s >= len) return false;
  if (m == MaskKind::Causal) return s <= t;
  if (m == MaskKind::Reversed) return s > t;
  return true;
}

// Number of weight heads returned: H, or 1 under the head-averaged pitfall.
inline int weight_heads(const MhaOptions& o) { return o.pitfalls.head_averaged ? 1 : o.num_heads; }

// Does query t see key s? (len = real tokens in this sentence)
// A sliding window also hides keys W or more tokens back.
inline bool key_visible(const MhaOptions& o, int t, int s, int len) {
  return mask_visible(mask_kind(o), t, s, len) && (o.window <= 0 || t - s < o.window);
}

// The scale applied to Q·K^T: 1/sqrt(d_head), or 1/sqrt(D) under the pitfall, or the family's.
float score_scale(int d_model, const MhaOptions& o);

// The RoPE frequencies a text of seq_len positions takes under o (longrope: the long ones past
// its original context, as transformers chooses by the longest position).
const std::vector<double>& rope_freq_for(const MhaOptions& o, int seq_len);

// Rotates one head's q or k (d_head floats) by position t: rotate-half pairs (i, i + rot/2),
// rot = 2·inv_freq.size(), angle t·inv_freq[i]. cos_t, sin_t: (rot/2) for this t.
void rotate_half(float* v, int half, const float* cos_t, const float* sin_t);

// The attention projections as o reads them (the MLP and LayerNorms are left empty):
// W_K and W_V (D, kv_heads·d_head), fused. Full (D, D) weights are grouped: K/V head g
// keeps the columns of query head g·G, the first of its group, in the layout the split reads
// (contiguous, or interleaved under that pitfall). So random init stays a function of the
// seed and D, and a trained model keeps one head's keys per group. Weights already at
// kv_heads·d_head columns are used as they are.
LayerWeights kv_grouped(const LayerWeights& w, const MhaOptions& o);

// Fast path.
// y: (B*T, D)   weights: (B, Hw, T, T), Hw = weight_heads(o)   x: (B*T, D)
// Returns the number of real query rows (per sentence, not per head) that had no visible
// key (reversed mask only): their weights are 0 here, where PyTorch would produce NaN.
int mha_forward(const LayerWeights& w, const MatR& x, int B, int T, const MhaOptions& o, MatR& y, float* weights);

// The incremental forward's attention (KvCache, model.h): only the new query rows [P, T)
// of one sentence, against its cached keys. Causal, without ablation or a pitfall that mixes
// rows (no_w_o and scale_by_d_model are row by row and allowed).
// x_new: (n, D), n = T - P.  kv: (>= P, 2·Dkv) = [K | V] of rows [0, P), post q/k norm and
// RoPE, unscaled; resized to (T, 2·Dkv) with the new rows written.  y: (n, D).
// weights: (H, T, T): rows [P, T) written, rows < P untouched. Returns rows with no key (0).
int mha_forward_rows(const LayerWeights& w, const MatR& x_new, int P, const MhaOptions& o, MatR& kv, MatR& y, float* weights);

// The raw score q_t · k_s of one head for one (query, key) pair, before scaling and mask.
// x_t, x_s: (D) rows of the attention input. For hover tooltips: O(D · d_head).
// NaN under the forgotten-transpose pitfall, where query row t is not token t.
// Rotary models: t and s are the two positions (RoPE rotates by them); -1 = not rotated.
float head_score(const LayerWeights& w, const float* x_t, const float* x_s, int head, const MhaOptions& o, int t = -1, int s = -1);

// The queries and keys the scores read, every head at once: x W + b, then the family's q/k
// norm and RoPE by position (row r is position r % T), before the score scale.
// x: (B*T, D). q: (B*T, Dq), head h in columns h*dh..; k: (B*T, Dkv), K/V head g in g*dh..
// Without the pitfalls that move a head's columns (interleaved reshape, no transpose).
void heads_qk(const LayerWeights& w, const MatR& x, int T, const MhaOptions& o, MatR& q, MatR& k);

// Every intermediate of one head of one sentence, each with its shape.
// The feature column (of W_Q, W_K, W_V's outputs) that element j of head h reads: one
// contiguous slice per head, or, under the interleaved-reshape pitfall, every H-th
// feature starting at h. The concatenation always puts head h in columns h*dh ...
inline int head_feature(int h, int j, int H, int dh, bool interleaved) { return interleaved ? j * H + h : h * dh + j; }

struct HeadTrace {
  int head = 0, len = 0;  // which head; real tokens in the sentence
  MatR q, k, v;           // (T, d_head) Q_h = x W_Q[:, head slice] + b_Q[head slice]; K, V: its K/V head's
                          // (q and k after the family's q/k norm and RoPE: the ones the scores read)
  // The family's steps (arch.h), each empty when the family does not have it:
  MatR q_proj, k_proj;    // (T, d_head) x W + b, before q/k norm and RoPE (when the family has either)
  MatR q_normed, k_normed;  // (T, d_head) after the q/k RMSNorm over d_head, before RoPE (Qwen3, Gemma 3)
  MatR scores;            // (T, T) Q_h K_h^T
  MatR scaled;            // (T, T) scores * scale
  MatR capped;            // (T, T) c tanh(scaled / c), the logit soft-cap (Gemma 2); empty without one
  MatR masked;            // (T, T) -inf where the key is hidden (from capped when there is a cap)
  float scale = 0;        // the score scale the forward used (score_scale)
  float softcap = 0;      // c, 0 = none
  int window = 0;         // the layer's sliding window, 0 = global
  std::vector<double> rope_inv_freq;  // (rot/2) the frequencies q and k were rotated by; empty = no RoPE
  MatR weights;           // (T, T) softmax(masked), rows sum to 1 (0 for hidden rows)
  MatR head_out;          // (T, d_head) weights V_h
  MatR concat;            // (T, D) all heads' outputs side by side
  MatR out;               // (T, D) concat W_O + b_O (or concat, without W_O)
};

// x_b: (T, D), one sentence's attention input. len = its real tokens (<= T).
HeadTrace head_trace(const LayerWeights& w, const MatR& x_b, int len, int head, const MhaOptions& o);

// The course's code on tensors. x: (B, T, D). Returns every step by passport id:
// "q" (B,T,D), "k","v" (B,T,kv_heads·d_head); "q_view" (B,T,H,d_head); "q_heads"
// (B,H,T,d_head); with kv_heads < H also "k_heads" (B,kv_heads,T,d_head) and "k_repeat"
// (B,H,T,d_head); "scores",
// "scaled", "masked", "weights" (B,H,T,T); "ctx" (B,H,T,d_head); "ctx_t" (B,T,H,d_head);
// "concat" (B,T,D); "out" (B,T,D); and "weights_mean" (B,T,T) under head averaging.
std::map<std::string, Tensor> mha_explicit(const LayerWeights& w, const Tensor& x, const MhaOptions& o);

}  // namespace headmap
