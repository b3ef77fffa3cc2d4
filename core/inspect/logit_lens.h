// logit_lens.h: what each layer would predict (issue 39, point 1; nostalgebraist 2020, as
// TransformerLens's accumulated_resid + apply_ln_to_stack and NDIF Workbench's lens).
//
// The residual stream of one sentence is read at 2L + 1 points: after the embeddings, and in
// every layer l after its attention sub-block has written (ForwardHook::post_mid: x + attn,
// Sandwich after its post-attention norm, PostNorm h = LN1(x + attn)) and after its MLP (the
// stream entering layer l + 1; after the last layer, the final stream). Each point is passed
// through what the model applies to its last stream (stream_logits: the final norm with its
// own scale at that point, the unembedding or untied lm_head, Gemma 2's final soft-cap;
// encoders their masked-LM head), so the last point's logits are the model's own.
//
// B = batch, T = tokens, D = d_model, L = layers, V = vocab, K = top-k, P = 2L + 1 points
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/model/model.h"

namespace headmap {

// Which token's probability the grid shows at each position (a decoder's position t predicts
// token t + 1; an encoder's fills position t).
enum class LensTarget {
  Final,  // the token the model finally predicts there (the last point's top-1)
  // The token the text really has there: decoders the next token (none at the last
  // position); encoders the token at the position itself (a masked token's original).
  Text,
};
const char* lens_target_name(LensTarget t);  // "final", "text"

struct LogitLens {
  int L = 0, T = 0, K = 0, V = 0;
  LensTarget target = LensTarget::Final;
  int points() const { return 2 * L + 1; }
  // Point p: 0 = the embeddings, 2l + 1 = after layer l's attention, 2l + 2 = after its MLP.
  static std::string point_name(int p);  // "embed", "3 attn", "3 mlp"
  std::vector<int> top_ids;          // (P, T, K) most likely first (ties: the lower id)
  std::vector<float> top_probs;      // (P, T, K) softmax over the whole vocabulary
  std::vector<int> target_ids;       // (T) the target token at each position, -1 where there is none
  std::vector<float> target_probs;   // (P, T) its probability at each point; NaN where there is none
  std::vector<int> target_ranks;     // (P, T) its rank (0 = top-1); -1 where there is none
  int top_id(int p, int t, int k = 0) const { return top_ids[(static_cast<size_t>(p) * T + t) * K + k]; }
  float top_prob(int p, int t, int k = 0) const { return top_probs[(static_cast<size_t>(p) * T + t) * K + k]; }
  float target_prob(int p, int t) const { return target_probs[static_cast<size_t>(p) * T + t]; }
  // The first point from which the target stays the top-1 to the end ("where the answer
  // settled"); -1 where it never is the top-1 at the last point or there is no target.
  int settled(int t) const;
};

inline constexpr int kLensMaxTopK = 50;

// The lens on sentence b of the batch. Errors: random init (no vocabulary to read out), an
// encoder without a masked-LM head, k outside 1..kLensMaxTopK, b outside the batch, a
// cancelled pass, and forward()'s own. The pitfalls are read as they run: the lens shows
// the stream the forward computed.
Result<LogitLens> logit_lens(const ModelWeights& w, const ModelConfig& cfg, const Batch& batch, int b, LensTarget target,
                             int k = 5, const std::function<bool()>& cancelled = {});

}  // namespace headmap
