// contrib.h: what heads contribute, not only where they look (issue 28).
//
// B = batch, T = tokens, D = d_model, H = heads, d_head (arch.h; D/H for GPT-2), KV = K/V
// heads, L = layers, V = vocab
// Convention (attention.h): y = x W + b, W stored (D_in, D_out). Head h of a layer reads the
// W_V columns of its K/V head (GQA: h / (H/KV); values are never rotated, RoPE and q/k norms
// touch only Q and K) and writes through W_O's rows h*d_head .. (h+1)*d_head, so the
// attention block's output is sum_h ctx_h W_O[h] + b_O. Every family (arch.h) writes that
// block into the stream linearly once one scale is frozen, so the residual stream after the
// last layer is exactly
//   embeddings + sum_l (sum_h written[l,h] + bias written[l] + mlp_out[l])
// with written = head_out for pre-norm and parallel blocks (GPT-2, Llama, Qwen, Mistral,
// Gemma 1, GPT-Neo; Pythia's attention and MLP both read the layer's input and both add to
// it), and, where a norm sits after attention (Gemma 2 and 3, NormPlacement::Sandwich),
// written = head_out * g_post / rms_t(block output): the post-attention RMSNorm's scale frozen
// at this run's value, per position, as the final norm's is (StreamParts::attn_scale).
//
//   direct_attribution  each part of that sum, through the final norm's frozen scale (1/sigma
//                       of the real final stream: LayerNorm's standard deviation, RMSNorm's
//                       root mean square; Gemma's (1 + w) is its g) and g, dotted with a
//                       token's unembedding (lm_head when untied; or the difference of two):
//                       the parts sum to the logit less LayerNorm's centring term
//                       -mean(x)/sigma * sum(g * u); RMSNorm has none, so there the parts sum
//                       to the logit up to rounding. With a final logit soft-cap (Gemma 2),
//                       the pre-cap logit z is attributed (the model shows c tanh(z / c)).
//   value_weighted      ||alpha_ij f(x_j)||, f(x) = (x W_V[h] + b_V[h]) W_O[h] (Kobayashi et
//                       al. 2020), and a sink score per head.
//   rollout             (A + I) row-normalised, multiplied over layers (Abnar & Zuidema 2020).
//   detector_scores     TransformerLens's head detector: sum(A * P) / sum(A) over the cells
//                       the mask shows, for a 0/1 pattern P.
//   patch_heads         activation patching: the corrupted run with one head's output taken
//                       from the clean run; each run restarts at the patched layer.
//
// Post-norm encoders (BERT, RoBERTa, DistilBERT; NormPlacement::PostNorm) put a LayerNorm on
// the stream itself after each sub-block:
//   u1 = x_l + attn_l,  h_l = LN1(u1),  u2 = h_l + mlp_l,  x_{l+1} = LN2(u2),
//   LN(u) = C u / s * g + beta,  C u = u - mean(u),  s = sqrt(var(u) + eps), per position.
// Freezing every LayerNorm's s at the run's value makes each one affine (centring is linear),
// so x_L is exactly the sum of every part carried through the norms after it (carried_to_final):
// the embeddings (after their LayerNorm), each head's ctx_h W_O[h], each b_O, each MLP's
// output and each norm's beta. The masked-LM head reads x_L through W_t, GELU, its own
// LayerNorm and the decoder: with GELU's gate q = gelu(z) / z (z = x_L W_t + b_t) and that
// norm's scale s_m frozen too, the logit of token a at position t (a [MASK]'s filler) is exactly
//   logit = sum over parts p of p(t) . r_p  +  b_t . r_z + beta_m . u_a + bias_a,
// r_p the readout pulled back from the head to where p enters: r_z = q * C(g_m * u_a) / s_m,
// r_L = W_t r_z, and through each frozen LN (g, s): r_in = C(g * r_out) / s. direct_attribution
// reports each head, b_O, MLP and the embeddings, the betas per layer (norm_bias) and the
// head's constants (final_bias); there is no centring term (C sits inside each readout). An
// encoder without a masked-LM head has no logit to attribute: attribution and patching refuse it.
// On a bidirectional model the detectors' patterns are the same cells as on a causal one
// (previous token: the key at i-1; duplicate: an earlier copy; induction: the token after an
// earlier copy), and the keys after the query, which it also sees, count in sum(A).
//
// Every function reads one sentence (b) of a batch. Trained models only where a logit is
// involved (attribution, patching); the maps work on random init too. Not defined under the
// head-averaged and forgotten-transpose pitfalls (no per-head weights or heads as modules).
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/inspect/metrics.h"
#include "core/model/model.h"

namespace headmap {

// The .npy files that headmap-cli's contribution options add to an --npy directory
// (export_npy_dir accepts a directory that holds them, so an export can be repeated).
inline constexpr const char* kContribNpyFiles[] = {"attribution_heads.npy", "value_weighted.npy", "value_norm.npy",
                                                   "rollout.npy",           "detectors.npy",      "patch_recovery.npy",
                                                   "logit_lens_target.npy", "logit_lens_top.npy",
                                                   "head_similarity.npy",   "head_layout.npy",
                                                   "offset_profile.npy",    "frequency_share.npy"};

// The residual stream of one sentence, split into its parts.
struct StreamParts {
  int L = 0, H = 0, T = 0, D = 0;
  MatR embeddings;                 // (T, D) token + position (Gemma: times sqrt(D))
  std::vector<MatR> head_out;      // (L*H) x (T, D), index l*H + h: ctx_h W_O[h], no bias, before any post-attention norm
  std::vector<RowVec> attn_bias;   // (L) x (D): b_O
  // (L) x (T, D), Sandwich blocks only (else empty): the post-attention norm's frozen factor
  // g_post / rms_t(attention block output) at each position; what a head writes into the
  // stream is head_out * attn_scale (elementwise), and b_O's share b_O * attn_scale.
  std::vector<MatR> attn_scale;
  std::vector<MatR> mlp_out;       // (L) x (T, D): what the MLP wrote into the stream (b_proj, post norm included)
  MatR final_stream;               // (T, D) the residual after the last layer (before ln_f)
  std::vector<MatR> resid;         // (L) x (T, D) the residual entering each layer
  std::vector<MatR> attn_in;       // (L) x (T, D) LN1 of it, the attention's input
  std::vector<float> weights;      // (L, H, T, T) attention, row = query
  MatR logits;                     // (T, V) trained models only, else empty: the model's own (soft-capped when it caps)
  // Post-norm blocks only (else empty; see the top of this file): mlp_out[l] is what the MLP
  // added to h_l before LN2, mid[l] is h_l = LN1(x_l + attn_l), and s1, s2 each LayerNorm's
  // frozen s per position.
  std::vector<MatR> mid;                     // (L) x (T, D)
  std::vector<std::vector<double>> s1, s2;   // (L) x (T)
  const float* map(int l, int h) const { return weights.data() + (static_cast<size_t>(l) * H + h) * T * T; }
  const MatR& head(int l, int h) const { return head_out[static_cast<size_t>(l) * H + h]; }
  // (T, D) what head (l, h) writes into the residual stream: head(l, h), times attn_scale[l]
  // where a norm follows attention. Sum_l sum_h of these, the biases' shares, the MLPs and
  // the embeddings is final_stream (post-norm: once each is carried_to_final, with the betas).
  MatR written(int l, int h) const;
  // (D) what b_O of layer l writes at position t.
  RowVec bias_written(int l, int t) const;
};

// What heads contribute is defined for cfg and w: not under the head-averaged and
// forgotten-transpose pitfalls, and only for blocks whose output reaches the stream linearly.
Status contrib_supported(const ModelWeights& w, const ModelConfig& cfg);

// Runs the model on sentence b of the batch (with `ablate` as in ForwardOptions) and splits
// the stream. Errors: those of forward(), an unsupported pitfall, b outside the batch.
Result<StreamParts> stream_parts(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int b,
                                 const std::vector<uint8_t>* ablate = nullptr,
                                 const std::function<bool()>& cancelled = {});

// Post-norm blocks: v (T, D), entering the stream at point k, carried to final_stream through
// the linear part C v / s * g of every later frozen LayerNorm (no beta). k = 2l: before layer
// l's LN1 (with its attention output; the embeddings at k = 0), 2l + 1: before its LN2 (with
// its MLP output; LN1's beta enters there), 2L: final_stream itself (LN2's beta of layer l
// enters at 2l + 2). (T, D)
MatR carried_to_final(const ModelWeights& w, const StreamParts& parts, const MatR& v, int k);

// The logit of token_a at `position`, or the difference logit(a) - logit(b) when token_b >= 0.
struct LogitTarget {
  int position = 0;
  int token_a = -1;
  int token_b = -1;  // -1: a single logit
  bool operator==(const LogitTarget&) const = default;
};

struct Attribution {
  int L = 0, H = 0;
  LogitTarget target;
  std::vector<float> heads;      // (L, H) each head's direct contribution
  std::vector<float> attn_bias;  // (L) b_O's
  std::vector<float> mlps;       // (L) each MLP's (b_proj included)
  float embeddings = 0;          // token + position
  float final_bias = 0;          // ln_f's b dotted with the unembedding (0 for RMSNorm); post-norm: the masked-LM head's b_t, beta_m and decoder bias
  float centring = 0;            // LayerNorm: -mean(x)/sigma * sum(g * u), not a part, the rest of the logit; RMSNorm and post-norm: 0
  std::vector<float> norm_bias;  // (L) post-norm only (else empty): the betas of layer l's LN1 and LN2, carried on
  // The attributed logit (or difference): the model's own, from forward(); with a final
  // soft-cap, the pre-cap logit z = norm(x) . u (the model shows model_logit = c tanh(z / c)).
  float logit = 0;
  float model_logit = 0;         // the model's output logit (or difference), after any soft-cap; = logit without one
  float softcap = 0;             // the final logit soft-cap c (Gemma 2), 0 = none
  float parts_sum = 0;           // every part above plus the centring term
  float completeness_error = 0;  // |logit - parts_sum|
  float sigma = 0;               // the final norm's frozen scale at the position (LayerNorm: std; RMSNorm: rms; post-norm: the masked-LM head's norm)
  // The heads, best first: (layer, head) by contribution, largest first.
  std::vector<std::pair<int, int>> ranking() const;
};

// Direct logit attribution from the parts of a stream. u (V, D) is w.unembedding().
Result<Attribution> direct_attribution(const ModelWeights& w, const StreamParts& parts, const LogitTarget& target);
// The same on one sentence, run here.
Result<Attribution> direct_attribution(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int b,
                                       const LogitTarget& target, const std::vector<uint8_t>* ablate = nullptr);

// Value-weighted maps of every head.
struct ValueWeighted {
  int L = 0, H = 0, T = 0;
  std::vector<float> maps;       // (L, H, T, T) alpha_ij * ||f(x_j)||
  std::vector<float> value_norm; // (L, H, T) ||f(x_j)||
  // Sink score per head, over the real query rows t >= 1 under a causal mask (row 0 sees only
  // token 0), every real row t >= 0 without one (encoders: token 0 is [CLS] or <s>):
  // first_attention = mean alpha_t0; first_value = mean of the value-weighted share of
  // token 0, alpha_t0 ||f_0|| / sum_j alpha_tj ||f_j||; sink = first_attention - first_value
  // (high: the head looks at token 0 but takes little from it).
  std::vector<float> first_attention, first_value, sink;  // (L, H)
  const float* map(int l, int h) const { return maps.data() + (static_cast<size_t>(l) * H + h) * T * T; }
};
// f(x_j) of head (l, h) for every j: (T, D). Sum_j alpha_ij f(x_j) is the head's output row i
// (head_out, before any post-attention norm; W_V of its K/V head, unrotated).
MatR head_values(const ModelWeights& w, const ModelConfig& cfg, const StreamParts& parts, int l, int h);
// ||f(x_j)|| of every head h of layer l, for rows x_j (N, D) of that layer's attention input
// (ForwardOutput::attn_in, any rows): (H, N). The one definition of the value norm, which
// value_weighted and the corpus search's value-weighted statistic read.
MatR head_value_norms(const ModelWeights& w, const ModelConfig& cfg, const MatR& attn_in, int l);
ValueWeighted value_weighted(const ModelWeights& w, const ModelConfig& cfg, const StreamParts& parts, int len);
// The maps of a whole batch as the app's value-weighted switch shows them: (L, B, H, T, T),
// each real row the value-weighted share alpha_ij ||f(x_j)|| / sum_k alpha_ik ||f(x_k)||, so
// it sums to 1 as an attention row does (and is 0 where the head adds nothing).
Result<std::vector<float>> value_weighted_shares(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch,
                                                 const std::vector<uint8_t>* ablate = nullptr,
                                                 const std::function<bool()>& cancelled = {});

// Attention rollout of sentence b through layers 0..upto: R = Â_upto ... Â_0, Â = (A + I)
// with rows normalised, A the layer's mean over heads, or head `head` at layer `upto` when
// head >= 0 (the layers below stay averaged). (T, T), row = query; rows of real tokens sum
// to 1, padded rows are 0.
std::vector<float> rollout(const ForwardOutput& out, const Batch& batch, int b, int upto, int head = -1);

// Head detector patterns (T, T) 0/1, from TransformerLens's head_detector: previous token
// (t, t-1); duplicate token (t, s) with s < t and the same token; induction (t, s + 1) for
// each duplicate (t, s) with s + 1 <= t; first token (t, 0). Tokens are equal when their ids
// and texts are.
enum class Detector { PreviousToken, DuplicateToken, Induction, FirstToken, Painted };
const char* detector_name(Detector d);
// The metric a detector's scores are (metrics.h's table: its name and definition).
HeadMetric detector_metric(Detector d);
std::vector<float> detector_pattern(Detector d, const std::vector<Token>& tokens, int T);
// sum(A * P) / sum(A) over the cells with query and key real and visible under the mask
// (TransformerLens's "mul" measure on the tril'd map). 0 when the map is empty.
float detector_score(const float* A /* (T,T) */, const float* P /* (T,T) */, int T, int len, MaskKind mask);
// (L, Hw) scores of sentence b. `painted` (T, T) is the pattern for Detector::Painted.
std::vector<float> detector_scores(const ForwardOutput& out, const Batch& batch, int b, MaskKind mask, Detector d,
                                   const std::vector<float>* painted = nullptr);

// Activation patching of a logit difference (target.token_b >= 0). The difference is the
// model's own (after a final soft-cap, unlike attribution's pre-cap logit). A head's output
// (ctx_h W_O[h], before any post-attention norm, which is then recomputed) is what is swapped;
// in a parallel block (Pythia) the layer's MLP reads the layer's input, so only later layers see it.
struct PatchResult {
  int L = 0, H = 0;
  int position = -1;              // the patched position, -1 = all
  float clean = 0, corrupted = 0; // the logit difference of either run
  std::vector<float> patched;     // (L, H) the corrupted run's difference with that head patched
  std::vector<float> recovery;    // (L, H) (patched - corrupted) / (clean - corrupted)
};
// The steps every patching loop shares (patch_heads, patch_head_positions). The clean and
// corrupted runs of sentence 0 of each, checked (same token count, a difference A - B, a model
// with logits), and their differences.
struct PatchRuns {
  StreamParts clean, corrupt;
  Batch corrupted;             // sentence 0 of the corrupted batch, alone
  double clean_diff = 0, corrupt_diff = 0;
  // The corrupted run from `layer` on (its residual entering the layer, kept) with delta
  // (T, D) added to that layer's attention output: the target's difference. Cancelled as
  // forward() is.
  Result<double> patched(const ModelWeights& w, const ModelConfig& cfg, int layer, const MatR& delta, const LogitTarget& target,
                         const std::function<bool()>& cancelled) const;
  // The normalised recovery of a patched difference; NaN when clean and corrupted agree.
  float recovery(double patched) const;
};
Result<PatchRuns> patch_runs(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean, const Batch& corrupted,
                             const LogitTarget& target, const std::function<bool()>& cancelled = {});

// Sentence 0 of `clean` and of `corrupted`, which must have the same token count. For each
// head, the corrupted run from that head's layer on (its residual entering the layer, kept)
// with the head's output at `position` (-1 = every position) replaced by the clean run's.
// progress(done, total) is called after each head; cancelled() stops with ErrorKind::Cancelled.
// For a worker: progress(done, total) is called on the caller's thread after each head (total
// = L*H); cancelled() before each head's run and inside its forward pass, where the compute
// threads ask it too, so it must be thread-safe and cheap (an atomic flag).
Result<PatchResult> patch_heads(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean, const Batch& corrupted,
                                const LogitTarget& target, int position = -1,
                                const std::function<bool()>& cancelled = {},
                                const std::function<void(int, int)>& progress = {});

// Everything a patching result depends on, for caching it: the weights (their address and a
// fingerprint of their contents, so a reloaded or retrained model at the same address is a
// new key), the config, both sentences' token ids, the target and the patched position.
struct PatchKey {
  const void* weights = nullptr;
  uint64_t fingerprint = 0;
  ModelConfig cfg;
  std::vector<int> clean_ids, corrupted_ids;
  LogitTarget target;
  int position = -1;
  bool operator==(const PatchKey&) const = default;
  uint64_t hash() const;
};
// Sentence 0 of each batch, as patch_heads reads them.
PatchKey patch_key(const ModelWeights& w, const ModelConfig& cfg, const Batch& clean, const Batch& corrupted,
                   const LogitTarget& target, int position = -1);
// A few dozen sampled floats of every tensor kind, the sizes and the source: different
// weights give different fingerprints (not a cryptographic hash; O(L), microseconds).
uint64_t weights_fingerprint(const ModelWeights& w);

// The last `capacity` patching results by key, least recently used dropped first. Thread-safe
// (a worker puts, the UI thread may find).
class PatchCache {
 public:
  explicit PatchCache(size_t capacity = 16) : capacity_(capacity) {}
  std::optional<PatchResult> find(const PatchKey& key);
  void put(const PatchKey& key, const PatchResult& result);
  size_t size() const;
  void clear();

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::list<std::pair<PatchKey, PatchResult>> items_;  // most recent first
};
// patch_heads through a cache: the cached result when the key is there (no run, progress
// not called), else the run, kept on success (a cancelled or failed run is not kept).
Result<PatchResult> patch_heads_cached(PatchCache& cache, const ModelWeights& w, const ModelConfig& cfg, const Batch& clean,
                                       const Batch& corrupted, const LogitTarget& target, int position = -1,
                                       const std::function<bool()>& cancelled = {},
                                       const std::function<void(int, int)>& progress = {});

}  // namespace headmap
