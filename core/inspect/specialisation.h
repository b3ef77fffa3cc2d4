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

// The figures of the real-English targets, on sentences a person might type:
//   tokens_per_word   tokens / whitespace-separated words, over all the sentences
//   best_prev_token   the head (any layer) with the highest previous-token score, averaged
//                     over the sentences
//   best_repeat_induction  each sentence said twice ("S S"): the head with the highest
//                     repeat_induction_of_map() (metrics.h), averaged over the sentences
//   loss              mean next-token cross-entropy over the sentences (nats/token)
struct SentenceEvidence {
  int sentences = 0;
  long words = 0, tokens = 0;
  double tokens_per_word = 0, loss = 0;
  float best_prev_token = 0, best_repeat_induction = 0;
  int prev_layer = 0, prev_head = 0, induction_layer = 0, induction_head = 0;
};
// Errors: untrained weights (no loss), a config that does not fit, no sentence.
Result<SentenceEvidence> measure_on_sentences(const ModelWeights& w, int num_heads, const std::vector<std::string>& sentences);

// Runs the model (trained or not) at num_heads on the sentences and the probes. Sentences
// longer than the model's context are truncated, as everywhere. Errors: a config that does
// not fit the weights; no sentence with tokens.
Result<Specialisation> measure_specialisation(const ModelWeights& w, int num_heads, const std::vector<std::string>& sentences,
                                              int probe_tokens = 20, int probes = 8);

}  // namespace headmap
