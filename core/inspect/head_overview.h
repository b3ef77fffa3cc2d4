// head_overview.h: every head of one sentence at once (issue 39, point 2): a statistic per
// head beside metrics.h's, how alike the heads' patterns are, a 2-D layout of the heads by
// that likeness, and the pairs whose patterns nearly coincide (AttentionViz's head
// clusters; Inspectus' layer x head summary).
//
// B = batch, T = tokens, L = layers, Hw = heads in the maps (H, or 1 head-averaged), N = L*Hw
// Rows are the real query rows t >= 1 of the sentence, as metrics.h's (row 0 of a causal map
// is [1, 0, ...] and says nothing), for every measure here but the entropy (metrics.h's: every
// row that sees a key).
#pragma once
#include <utility>
#include <vector>

#include "core/inspect/metrics.h"
#include "core/model/model.h"

namespace headmap {

// sum_s w[t, s] |t - s| over the keys, the mean over the rows t >= 1 of the `len` real tokens
// (HeadMetric::MeanDistance). 0 for a sentence of one token.
float mean_distance_of_map(const float* w /* (T,T) */, int T, int len);

// Pairs of heads whose patterns have at least this cosine similarity are marked as near
// duplicates.
inline constexpr float kNearDuplicate = 0.95f;

struct HeadOverview {
  int L = 0, Hw = 0;
  // The statistics one chooses between, each (L, Hw), named by metrics.h's table: entropy,
  // first-token weight (the sink mass), mean attention distance, previous-token, self, and
  // the four detector shares of contrib.h on this text.
  std::vector<HeadMetric> stat_keys;
  std::vector<std::vector<float>> stats;
  const std::vector<float>* stat(HeadMetric m) const;  // null when not among stat_keys
  std::vector<float> mean_distance;  // (L, Hw)
  // (N, N), head index n = l * Hw + h: the cosine similarity of two heads' maps, each map the
  // (len - 1) x len block of rows t >= 1 flattened (1 on the diagonal; 0 for an empty map).
  std::vector<float> similarity;
  // (N, 2) classical multidimensional scaling of the distances 1 - similarity: the two
  // leading eigenvectors of the double-centred -D^2 / 2, each times the square root of its
  // eigenvalue (0 where the eigenvalue is not positive), each column's largest |value| made
  // positive. Heads that look alike sit close.
  std::vector<float> layout;
  std::vector<std::pair<int, int>> near_duplicates;  // (n, m), n < m, similarity >= kNearDuplicate
  float sim(int n, int m) const { return similarity[static_cast<size_t>(n) * L * Hw + m]; }
};

// Sentence b of a forward's output, the detectors under `mask`. Empty (L = 0) when b is
// outside the batch.
HeadOverview head_overview(const ForwardOutput& out, const Batch& batch, int b, MaskKind mask);

}  // namespace headmap
