// specialisation.h: the evidence that a trained model's heads specialised, measured with
// the project's own metrics (metrics.h) on text the caller did not pick by hand.
//
// B = batch (sentences), T = tokens, H = heads, L = layers
//   prev_token, first_token, ... : head_metrics() on the given sentences (e.g. a corpus's
//                                  held-out lines), averaged over sentences per head
//   induction                    : induction_scores() on `probes` induction probes of n
//                                  tokens each (seeds 1..probes), averaged per head
#pragma once
#include <string>
#include <vector>

#include "core/error.h"
#include "core/inspect/metrics.h"
#include "core/model/weights.h"

namespace headmap {

struct Specialisation {
  int L = 0, H = 0;
  std::vector<HeadMetrics> metrics;  // (L, H) means over the sentences
  std::vector<float> induction;      // (L, H) means over the probes
  int sentences = 0;                 // sentences measured

  float best_prev_token(int layer) const;  // max over the heads of layer
  float best_induction(int layer) const;
  std::vector<HeadLabel> labels() const;   // (L, H) head_label() of each head
};

// Runs the model (trained or not) at num_heads on the sentences and the probes. Sentences
// longer than the model's context are truncated, as everywhere. Errors: a config that does
// not fit the weights; no sentence with tokens.
Result<Specialisation> measure_specialisation(const ModelWeights& w, int num_heads, const std::vector<std::string>& sentences,
                                              int probe_tokens = 20, int probes = 8);

}  // namespace headmap
