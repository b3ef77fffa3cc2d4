// offset_profile.h: how each head's attention falls off with distance, and which rotary
// frequencies its scores use (issue 39, point 5). No other tool shows either.
//
// T = tokens (padded), len = real tokens of the sentence, L = layers, H = query heads,
// Hw = heads in the maps (H, or 1 head-averaged), O = 2·len - 1 offsets, P = rotary pairs.
//
// The offset profile of a map w (T, T): for each offset d = t - s from -(len - 1) to
// len - 1, the mean of w[t, t - d] over the query rows t >= 1 of the sentence whose key
// t - d is a real token (metrics.h's rows: row 0 of a causal map is [1, 0, ...] and says
// nothing). A causal head has nothing at d < 0; a previous-token head peaks at d = 1.
//
// The frequency profile of a rotary head: its raw score q_t · k_s (after the family's q/k
// norm and RoPE, before the scale) is a sum over RoPE's rotate-half pairs (i, i + rot/2)
// of q_t[i] k_s[i] + q_t[i + rot/2] k_s[i + rot/2], plus the dimensions past rot that no
// rotation touches. Pair i turns by position at inv_freq[i] radians per token, a
// wavelength of 2π / inv_freq[i] tokens. Its share is the attention-weighted mean of
// |that pair's term| over the head's visible cells of rows t >= 1, divided by the sum of
// those means over every pair and the unrotated part. A head that reads position from the
// fast pairs looks at neighbours; one that keeps to the slow ones reads content.
#pragma once
#include <string>
#include <vector>

#include "core/model/model.h"

namespace headmap {

struct OffsetProfile {
  int L = 0, Hw = 0, len = 0;
  bool causal = true;             // the mask hides keys after the query: offsets d < 0 are empty
  std::vector<float> by_offset;   // (L, Hw, O) index d + len - 1
  std::vector<int> rows_at;       // (O) query rows t >= 1 whose key t - d is a real token
  int offsets() const { return len > 0 ? 2 * len - 1 : 0; }
  float at(int l, int h, int d) const { return by_offset[(static_cast<size_t>(l) * Hw + h) * offsets() + d + len - 1]; }

  // The rotary part: empty (H = 0) with a reason in `no_frequencies` when the family has no
  // RoPE (learned or no positions), or under a pitfall that scrambles which column is a head's.
  int H = 0, P = 0;                    // P = the most pairs any layer rotates
  std::vector<int> pairs;              // (L) pairs this layer rotates (0: a layer without RoPE, SmolLM3's NoPE)
  std::vector<float> wavelength;       // (L, P) 2π / inv_freq[i] in tokens; 0 past the layer's pairs
  std::vector<float> freq_share;       // (L, H, P + 1) each pair's share, then the unrotated dims'; sums to 1
  std::string no_frequencies;          // why there is no frequency profile ("" when there is one)
  float share(int l, int h, int i) const { return freq_share[(static_cast<size_t>(l) * H + h) * (P + 1) + i]; }
};

// Sentence b of a forward run with keep_layer_io (the attention inputs are what the rotary
// part reads; without them it says so). Empty (L = 0) when b is outside the batch.
OffsetProfile offset_profile(const ModelWeights& w, const ModelConfig& cfg, const ForwardOutput& out, const Batch& batch, int b);

}  // namespace headmap
