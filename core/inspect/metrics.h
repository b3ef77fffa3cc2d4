// metrics.h: what each head does, as numbers. Used for head labels and the tests.
//
// B = batch, T = tokens, H = heads, L = layers
// All scores are means over the query rows t >= 1 of a sentence's real tokens (row 0 of a
// causal map is always [1, 0, 0, ...] and would say nothing):
//   prev_token   w[t, t-1]        attention to the token just before
//   first_token  w[t, 0]          attention to the first token (a "sink")
//   self         w[t, t]          attention to the query's own token
//   max_weight   max_s w[t, s]    how peaked a row is
//   entropy      -sum_s w log w   in nats, over rows with at least one visible key
//   entropy_norm entropy / log(n) with n the row's visible keys, over rows with n >= 2;
//                1 = uniform over what the row may see, 0 = one key
// The induction score is measured on a probe: n random tokens, then the same n again.
// For a query t in the second copy, the score is w[t, t-n+1]: attention to the token
// that followed the earlier occurrence of the query's token.
#pragma once
#include <string>
#include <vector>

#include "core/model/model.h"

namespace headmap {

struct HeadMetrics {
  float entropy = 0, entropy_norm = 0, prev_token = 0, first_token = 0, self = 0, max_weight = 0;
  // Encoders' kinds (0 under a causal mask): the mean weight on the next token, and on the
  // separators the post-processor added after the first position ([SEP], </s>).
  float next_token = 0, sep_sink = 0;
  // Position 0 is the [CLS] (or RoBERTa's <s>) of an encoder's template: an added token at 0
  // and another after it ([SEP], </s>). A first-token head there is a "[CLS] sink".
  bool first_is_cls = false;
};

// (L, B, Hw), index ((l*B)+b)*Hw + h. mask: the maps' (mask_kind); under a causal one only
// the cells that can be non-zero are read (the same metrics, summed over fewer zeros).
std::vector<HeadMetrics> head_metrics(const ForwardOutput& out, const Batch& batch, MaskKind mask = MaskKind::PaddingOnly);

// Metrics of one (T, T) map with `len` real tokens (mask: as head_metrics).
HeadMetrics map_metrics(const float* w /* (T,T) */, int T, int len, MaskKind mask = MaskKind::PaddingOnly);

// The peak of one (T, T) map for its colour scale: the largest weight over the real rows
// that see more than one key. The first row of a causal map is always [1, 0, ...] and is
// left out, or it would set every scale to 1.
float map_peak(const float* w /* (T,T) */, int T, int len, MaskKind mask);

// The induction probe: n random tokens repeated twice, as text, so it goes through the
// model's own tokenizer. Tokens are whole words (word mode), letters (char mode), or
// whole-word vocabulary pieces (trained models).
struct InductionProbe {
  std::string text;
  int n = 0;  // tokens per copy; the probe has 2n tokens
};
InductionProbe make_induction_probe(const ModelConfig& cfg, const ModelWeights& w, int n, uint64_t seed);

// (L, H) induction scores of the model on the probe (ignores head averaging: per head).
// Empty on error (invalid config).
std::vector<float> induction_scores(const ModelWeights& w, const ModelConfig& cfg, const InductionProbe& probe);
float induction_score_of_map(const float* w /* (T,T) */, int T, int n);

// Induction on any text, where it repeats a run of several tokens: for each query t that
// ends a repeated run of kInductionRun tokens (tokens t-2, t-1, t occurred before in that
// order, ending at j, its most recent such occurrence, with j + 1 < t), the weight w[t, j + 1]
// to the token that followed that occurrence, averaged over such queries. A single token
// that occurs twice (a second "the") is not a repeated run: copying from it is a guess, and
// one query's weight is noise. On the probe this is the score above from its third token on;
// on a sentence said twice it is the same measure on natural text.
// Tokens are equal when their ids (trained models) and texts are. NaN when no run repeats.
inline constexpr int kInductionRun = 3;
float repeat_induction_of_map(const float* w /* (T,T) */, int T, const std::vector<Token>& tokens);
// (L, B, Hw), index ((l*B)+b)*Hw + h: repeat_induction_of_map of every map.
std::vector<float> text_induction_scores(const ForwardOutput& out, const Batch& batch);

// The induction score a head's label uses: the probe's, or the head's own on the text
// (repeat_induction_of_map) when the text repeats a run, that is higher, and the probe
// agrees (probe >= kLabelThresholds.induction_probe_agrees: the head copies on random
// tokens too). So a sentence said twice labels the heads that copy from its first
// occurrence, and a head that happens to look at one cell of a repeated run does not.
float label_induction(float probe, float text_induction /* NaN: no run repeats */);

// Every head metric's one name and definition. The app (tooltips, the Detectors tab),
// headmap-cli (its tables, --detectors) and the exports (run JSON "metric_definitions")
// name a number by this table, so the same word never stands for two measures: the probe's
// induction score, the text's, and the induction detector's share are three metrics.
enum class HeadMetric {
  Entropy, EntropyNorm, PrevToken, FirstToken, Self, MaxWeight, NextToken, SepSink,
  InductionProbe,   // induction_scores: the probe of random tokens said twice
  InductionText,    // repeat_induction_of_map: this text's repeated runs
  DetectorPrevToken, DetectorDuplicate, DetectorInduction, DetectorFirstToken, DetectorPainted,  // contrib.h's detector_scores
  MeanDistance,     // head_overview.h's mean_distance_of_map
  Count
};
struct HeadMetricInfo {
  const char* key;         // the exports' and the CLI's key: "induction", "detector_induction"
  const char* name;        // what people read beside the number: "induction score (probe)"
  const char* definition;  // how it is measured, in one sentence
};
const HeadMetricInfo& head_metric_info(HeadMetric m);

// Head labels from the metrics, with documented thresholds (see head_label()).
enum class HeadLabel { None, PreviousToken, FirstToken, Self, Induction, Broad, NextToken, SepSink, ClsSink };
const char* head_label_name(HeadLabel l);
// Thresholds: previous-token if prev_token >= 0.5, first-token if first_token >= 0.5,
// self if self >= 0.5, induction if the induction score >= 0.3, broad if entropy_norm >= 0.85;
// encoders also next-token if next_token >= 0.5 and "[SEP] sink" if sep_sink >= 0.5; a
// first-token head whose position 0 is an encoder's [CLS] (first_is_cls) is a "[CLS] sink".
// The strongest applicable label wins (by its score minus its threshold).
HeadLabel head_label(const HeadMetrics& m, float induction);
struct LabelThresholds {
  float prev_token = 0.5f, first_token = 0.5f, self = 0.5f, induction = 0.3f, broad = 0.85f, next_token = 0.5f, sep_sink = 0.5f;
  float induction_probe_agrees = 0.15f;  // label_induction: the probe score the text's score needs beside it
};
inline constexpr LabelThresholds kLabelThresholds{};

}  // namespace headmap
