// next_tokens.h: each row's most likely next tokens, kept in place of its (V) logits.
//
// Typing into the app runs every keystroke through a K/V cache (kv_cache.h), which kept every
// row's logits: (T + 32, V) floats, 82 MB at T = 128 on the 1B shape (V = 128,256), in up to
// three blocks (the one on screen, the newest, a copy on write after an edit under a row on
// screen), each edit copying the kept rows. What reads them is a few tokens per row: the
// predictions panel (5), Generate (16). So with ForwardOptions::next_tokens_k a row keeps its k
// largest logits, their ids, its largest logit and its sum of exp(logit - max): 8k + 12 bytes.
// top_k_next (core/inspect/predictions.h) gives the same tokens and probabilities from them,
// bit for bit, as from the full row: both go through top_logits. The loss is the forward's own
// (every row's cross-entropy from its full row, as before).
//
// T = tokens (rows), V = vocab, k = tokens kept per row
#pragma once
#include <cstdint>
#include <vector>

#include "core/model/weights.h"

namespace headmap {

struct NextTokenRows {
  int k = 0;                  // tokens per row
  std::vector<int> ids;       // (T, k) most likely first; equal logits: the lower id first
  std::vector<float> logits;  // (T, k) their logits
  std::vector<float> max;     // (T) each row's largest logit
  std::vector<double> sum;    // (T) each row's sum over V of exp(logit - max), in double
  int rows() const { return static_cast<int>(max.size()); }
  void resize(int rows, int k_per_row);  // the first rows kept (all dropped when k changes)
  uint64_t bytes() const { return ids.size() * 4 + logits.size() * 4 + max.size() * 4 + sum.size() * 8; }
};

// One row of logits (V) -> its k (1 <= k <= V) largest: ids (k) and logits (k), most likely
// first, equal logits by the lower id (top_k_next's order); mx its largest logit, sum its
// sum of exp(logit - mx) in double. One pass over the row with the k best kept sorted.
void top_logits(const float* row, int V, int k, int* ids, float* logits, float& mx, double& sum);

// The next-token cross-entropy (nats) of one row of logits (V) for target id.
double row_nll(const Eigen::Ref<const RowVec>& row, int id);

// Rows [first, first + fresh.rows()) of `rows` from their logits fresh (n, V), each row's k
// largest (top_logits), on the compute threads; `rows` holds at least first + n rows.
void set_next_token_rows(NextTokenRows& rows, int first, const Eigen::Ref<const MatR>& fresh);

}  // namespace headmap
