// requests.h: the typed values that travel between the view state and the workers.
//
// The UI turns its state into one ComputeRequest in one function (compute_request in
// app_state.h) and posts it; the compute worker answers with a ComputeResult, immutable once
// published. Requests are values: equal inputs give equal requests, compared and hashed
// field by field. The worker trusts what a request says (the UI checked the config) and
// rebuilds nothing from it. Training runs the same way: a TrainJob in, a TrainStatus out.
//
// This is the only compute header AppState includes: no thread classes live here.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#pragma once
#include <atomic>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/inspect/contrib.h"
#include "core/inspect/corpus_search.h"
#include "core/inspect/head_overview.h"
#include "core/inspect/offset_profile.h"
#include "core/inspect/circuits.h"
#include "core/inspect/logit_lens.h"
#include "core/inspect/map_levels.h"
#include "core/inspect/metrics.h"
#include "core/inspect/passport.h"
#include "core/inspect/precision.h"
#include "core/inspect/predictions.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "core/train/trainer.h"

namespace headmap {

// One head of the model: layer l, head h. Ablation is kept by HeadId, so a head keeps its
// identity when H or L moves.
struct HeadId {
  int layer = 0, head = 0;
  auto operator<=>(const HeadId&) const = default;
};

// Which weights a request runs on: a checkpoint file, weights in memory, or random init.
struct WeightsRef {
  std::string checkpoint;                          // a file to load; empty: see below
  std::shared_ptr<const ModelWeights> in_memory;   // or weights in memory (training); neither: random init from cfg.seed
  uint64_t in_memory_id = 0;                       // names in_memory: changes with every snapshot
  // checkpoint's weights when the app has already read the file (a hint, not part of its
  // identity: equality leaves it out).
  std::shared_ptr<const ModelWeights> loaded;
  bool random_init() const { return checkpoint.empty() && !in_memory; }
  bool operator==(const WeightsRef& o) const {
    return checkpoint == o.checkpoint && in_memory == o.in_memory && in_memory_id == o.in_memory_id;
  }
};

// A logit to attribute to every head (issue 28): the Next-token entry clicked, in sentence batch.
struct AttributionRequest {
  int batch = 0;
  LogitTarget target;
  bool operator==(const AttributionRequest&) const = default;
};

// The Contributions tab's views (issue 28), computed on the worker beside the maps.
// Rollout of sentence `batch` through every layer, averaged over heads, or head `head` of the
// last layer (the layers below averaged), as contrib.h's rollout().
struct RolloutRequest {
  int batch = 0;
  int head = -1;  // -1: the mean over heads
  bool operator==(const RolloutRequest&) const = default;
};
// The logit lens of sentence `batch` (logit_lens.h): every layer's stream read as the last.
struct LensRequest {
  int batch = 0;
  LensTarget target = LensTarget::Final;
  int k = 5;
  bool operator==(const LensRequest&) const = default;
};
// The head overview of sentence `batch` (head_overview.h): every head's statistics, likeness
// and layout.
struct OverviewRequest {
  int batch = 0;
  bool operator==(const OverviewRequest&) const = default;
};
// The offset profile of sentence `batch` (offset_profile.h): each head's weight by distance
// and, on a rotary family, its RoPE frequencies' shares.
struct OffsetsRequest {
  int batch = 0;
  bool operator==(const OffsetsRequest&) const = default;
};
// The circuits of head (layer, head) (circuits.h) over sentence `batch`'s tokens, and every
// head's composition scores. From the weights alone, cached per model and config.
struct CircuitsRequest {
  int batch = 0, layer = 0, head = 0;
  bool operator==(const CircuitsRequest&) const = default;
};
// One head detector's score for every head of sentence `batch` (contrib.h's detector_scores).
struct DetectorRequest {
  int batch = 0;
  Detector detector = Detector::PreviousToken;
  std::vector<float> painted;  // (T, T) 0/1, T the batch's: the pattern of Detector::Painted, else empty
  bool operator==(const DetectorRequest&) const = default;
};
// Activation patching between the clean sentence (the main text's selected one) and a
// corrupted one of the same token count (contrib.h's patch_heads). Trained models only.
struct PatchRequest {
  std::string clean, corrupted;
  int position = -1;                   // the measured position; -1: the last token (an encoder: its first [MASK])
  int token_a = -1, token_b = -1;      // the logit difference A - B; -1: the clean / the corrupted run's top prediction there
  std::optional<HeadId> per_position;  // also that head patched at one position at a time
  bool operator==(const PatchRequest&) const = default;
};
// The worker's answer to a PatchRequest. Immutable once published.
struct PatchOutcome {
  PatchRequest inputs;
  std::vector<std::string> clean_tokens, corrupted_tokens;  // each sentence's tokens, as displayed
  LogitTarget target;                          // the difference measured (defaults resolved)
  std::vector<NextToken> clean_top, corrupted_top;  // each run's top predictions at the position (the A and B choices)
  std::optional<PatchResult> heads;            // (L, H) recovery, every position patched
  std::vector<float> per_position;             // (T) recovery of inputs.per_position patched at position t alone
  std::string error;                           // why it could not run (token counts differ, random init, ...)
};

// Contributions > Corpus (issue 39, point 4): a search of a corpus file by the model on
// screen, run by the corpus worker (workers/corpus_worker.h), not per request: it takes
// seconds to a minute, and typing in the text must not restart it.
inline constexpr int kCorpusIndexTop = 100;  // examples kept per head, so another head or a smaller top needs no new pass
struct CorpusJob {
  std::shared_ptr<const ModelWeights> weights;
  ModelConfig cfg;
  std::string path;       // the file, read on the worker (only now: the person chose it)
  std::string label;      // what the view calls it ("the shipped corpus (grammar-v1.txt)")
  std::string cache_dir;  // where its index is kept (corpus_cache.h); "" keeps none
  CorpusStat stat = CorpusStat::Weight;  // what the hits are ranked by
};
// The worker's answer. Immutable once published.
struct CorpusOutcome {
  CorpusJob job;
  std::shared_ptr<const std::vector<std::string>> lines;  // the file's non-blank lines
  std::shared_ptr<const CorpusIndex> index;               // every head's strongest rows; null on an error
  std::string error;   // why the file was refused or the search failed (the previous results stay)
  bool cancelled = false;
  std::string cache_note;  // where the index came from or went: "from the cache", "kept in ...", a bad cache ignored
  double seconds = 0;      // the search's wall time
};
// The shown hits' small maps, computed on the corpus worker (one forward pass over the k hit
// lines: a stall on a large model if it ran on the UI thread). The key says which hits.
struct CorpusMapsJob {
  std::shared_ptr<const CorpusOutcome> of;  // the search the hits come from
  int layer = -1, head = -1, top = -1;
  std::vector<std::string> lines;           // (k) the hits' lines
};
struct CorpusMaps {
  std::shared_ptr<const CorpusOutcome> of;
  int layer = -1, head = -1, top = -1;
  std::vector<std::vector<float>> maps;          // (k) each (len, len): the head on the hit's line
  std::vector<std::vector<std::string>> tokens;  // (k) each (len) as the chips spell them
  std::string error;                             // why they could not be computed
};

// The Compare tab's B side when it is another model (issue 28): its config and weights. The
// same text runs through it; its result is ComputeResult::baseline.
struct CompareSideRequest {
  ModelConfig cfg;
  WeightsRef weights;
  std::string label;  // "shipped d128-h4-l2", "num_heads 8", as the tab names it
  bool operator==(const CompareSideRequest& o) const { return cfg == o.cfg && weights == o.weights && label == o.label; }
};

struct ComputeRequest {
  std::vector<std::string> lines;        // one sentence per line
  BatchExtras extras;                    // encoders: sentence B of each line, masked (sentence, token)s
  ModelConfig cfg;                       // valid; context clipped to the weights' positions
  WeightsRef weights;
  std::vector<HeadId> ablated;           // sorted, each inside cfg's L x H; empty = no head off
  std::optional<TraceRequest> trace;     // the head Focus steps through, only while Focus is visible
  // The layer on screen: for a long request it is computed and published first, and the
  // other layers follow. A hint, not an input: equality and hashes leave it out, so moving
  // the layer slider never restarts a computation.
  int visible_layer = 0;
  bool compare = false;                  // also run the correct model (no pitfall): only while Compare is visible
  std::optional<CompareSideRequest> compare_b;  // or another model as B (Compare, while visible)
  bool value_weighted = false;           // View > Value-weighted maps: each row alpha_ij ||f(x_j)||, normalised (contrib.h)
  bool bf16_products = false;            // View > BF16 products: the pass with them, and an F32 pass for their difference
  bool int8_products = false;            // View > 8-bit products: the pass with them (through the K/V cache), the F32 difference later
  std::optional<AttributionRequest> attribution;  // trained models: direct logit attribution of one logit
  std::optional<RolloutRequest> rollout;          // the Rollout view, only while it is visible
  std::optional<LensRequest> lens;                // the Logit lens view, only while it is visible
  std::optional<OverviewRequest> overview;        // the Head overview view, only while it is visible
  std::optional<OffsetsRequest> offsets;          // the Offsets view, only while it is visible
  std::optional<CircuitsRequest> circuits;        // the Circuits view, only while it is visible
  std::optional<DetectorRequest> detectors;       // the Detectors view, and its threshold's marks in the heads grid
  std::optional<PatchRequest> patch;              // the Patching view, only while it is visible and not cancelled

  // Everything but the trace: two requests with the same forward inputs share one forward pass.
  bool same_forward(const ComputeRequest& o) const {
    return lines == o.lines && extras.pairs == o.extras.pairs && extras.masked == o.extras.masked && cfg == o.cfg && weights == o.weights && ablated == o.ablated && value_weighted == o.value_weighted &&
           bf16_products == o.bf16_products && int8_products == o.int8_products;
  }
  bool operator==(const ComputeRequest& o) const {
    return same_forward(o) && trace == o.trace && compare == o.compare && attribution == o.attribution && rollout == o.rollout && lens == o.lens && overview == o.overview && offsets == o.offsets && circuits == o.circuits &&
           detectors == o.detectors && patch == o.patch && compare_b == o.compare_b;
  }
  size_t forward_hash() const;  // a hash of the forward inputs (same_forward => equal hashes)
  size_t hash() const;          // forward_hash and the trace

  // The ablation as the core takes it: (L*H), 1 = head off. Empty when no head is off.
  std::vector<uint8_t> ablation_mask() const;
};

// One forward pass and everything derived from it. Immutable once published.
struct ForwardData {
  ComputeRequest inputs;              // the request it answers (its trace is not used)
  size_t inputs_hash = 0;             // inputs.forward_hash()
  std::shared_ptr<const ModelWeights> weights;
  Batch batch;
  ForwardOutput out;                  // with attn_in / attn_out per layer
  Passport passport;
  std::vector<HeadMetrics> metrics;   // (L, B, Hw)
  std::vector<float> text_induction;  // (L, B, Hw) on the text itself, NaN where nothing repeats
  std::string source;                 // "random init (seed 7)", "trained (...)"
  std::vector<std::vector<std::string>> labels;  // (B) display text of each sentence's tokens
  std::vector<float> map_max;         // (L, B, Hw) largest weight over rows that see more than one key
  std::vector<MapLevels> levels;      // (L, B, Hw) each map's max-pooled levels (none for short maps)
  std::vector<double> sentence_loss;  // (B) each sentence's own loss (trained models), NaN under 2 tokens
  double compute_ms = 0;              // wall time of the forward pass and metrics
  // The worker thread's own CPU time for the same work. It also runs the serial parts and
  // its share of every parallel one, so it is about the wall time the work takes when
  // nothing else holds the cores (as in a frame that waits for it); the wall time of an
  // asynchronous request includes the frames drawn beside it. Predictions use this.
  double compute_cpu_ms = 0;
  // Where compute_ms went, wall ms per part, in order (the benchmark prints them): the
  // request's set-up, the forward's stages (stage_times.h) and what derive() adds; rows
  // computed and rows taken from the K/V cache (0, 0: not incremental).
  std::vector<std::pair<std::string, double>> stage_ms;
  int rows_computed = 0, rows_reused = 0;
  // False for the first answer to a long request: out has only layers 0 .. visible_layer
  // (out.L of them), with their metrics, and no logits yet. The
  // complete answer follows from the same request.
  bool complete = true;
  // View > BF16 products: why they did not run (bf16_products_refusal: this CPU, or no BF16
  // weights), or, when they did, this pass's time beside the F32 pass's and their largest
  // difference (precision.h). Empty when not asked.
  std::string products_note;
  std::optional<PrecisionDiff> products_diff;
  // View > 8-bit products, when they ran: their difference from the F32 pass, computed once the
  // text has been still for kDiffAfterPause (the worker's finish_products_diff), so typing keeps
  // the mode's speed. Written once, then `ready` set (release), as Late below.
  struct LateDiff {
    std::atomic<bool> ready{false};
    std::string text;  // precision_diff_text and both passes' times, or why there is none
  };
  std::shared_ptr<LateDiff> late_diff;
  std::string int8_note;  // View > 8-bit products: why they did not run (int8_products_refusal), else empty
  const LateDiff* late_diff_ready() const { return late_diff && late_diff->ready.load(std::memory_order_acquire) ? late_diff.get() : nullptr; }
  // A typing pass's next tokens and loss, computed after its maps were published
  // (ForwardOptions::defer_next_tokens; the worker's finish_late): null when the pass computed
  // its own (out.next, out.loss). The worker writes `v` once, then sets `ready` (release); the
  // UI reads `v` only after seeing `ready` (acquire).
  struct Late {
    std::atomic<bool> ready{false};
    LateNextTokens v;
    double cpu_ms = 0;  // the worker thread's CPU time for them: part of what this pass costs (App::predicted_compute_ms)
  };
  std::shared_ptr<Late> late;
  const Late* late_ready() const { return late && late->ready.load(std::memory_order_acquire) ? late.get() : nullptr; }
  bool next_pending() const { return late && !late_ready(); }  // the predictions and the loss come later
  bool has_next() const { return late ? late_ready() != nullptr : has_next_tokens(out); }
  std::vector<NextToken> top_next(int b, int t, int k) const;  // top_k_next on out's or the late rows
  double loss() const { return late_ready() ? late->v.loss : out.loss; }
  int loss_tokens() const { return late_ready() ? late->v.loss_tokens : out.loss_tokens; }
  double sentence_loss_at(int b) const;  // sentence_loss[b], the late loss for a deferred pass's one sentence
};

// The step-through's matrices by step id, as Focus shows them: 0-9 every model's (Q_h, K_h,
// V_h, Q_h·K_hᵀ, the scale, the mask, softmax, ·V_h, concat, W_O; Q_h and K_h are the
// projections before a family's q/k norm and RoPE), then a family's own (arch.h): 10 q/k norm,
// 11 RoPE (q and k rotated), 12 soft-cap. A step the model does not have is an empty matrix.
// The ids are stable (focus_step, lessons); Focus draws the family's steps where they happen.
inline constexpr int kTraceSteps = 13;
enum TraceStepId : int { kStepQNorm = 10, kStepRope = 11, kStepSoftcap = 12 };
inline std::vector<const MatR*> trace_step_matrices(const HeadTrace& h) {
  static const MatR none;  // (0, 0): a step this model does not have
  return {h.q_proj.size() ? &h.q_proj : &h.q, h.k_proj.size() ? &h.k_proj : &h.k, &h.v, &h.scores, &h.scaled, &h.masked,
          &h.weights, &h.head_out, &h.concat, &h.out, &h.q_normed, h.rope_inv_freq.empty() ? &none : &h.q,
          &h.capped};
}

// The worker's answer to one request. Immutable once published.
struct ComputeResult {
  ComputeRequest request;
  uint64_t seq = 0;                          // order of the request
  std::shared_ptr<const ForwardData> fwd;    // null when `error` is set
  std::optional<HeadTrace> trace;            // when requested, and the batch is not empty
  std::shared_ptr<const ForwardData> baseline;  // request.compare: the same inputs with every pitfall off; request.compare_b: model B's
  // Finite (min, max) over the real rows of each trace_step_matrices(*trace), in that order.
  std::vector<std::pair<float, float>> trace_range;
  // Parallel to trace_range: the max-pooled levels of the (T, T) steps (scores, scaled,
  // capped and masked by magnitude, weights by max); empty for the others and for short sentences.
  std::vector<MapLevels> trace_levels;
  // (L, H) each head's score on the induction probe (metrics.h). The probe does not depend
  // on the text, so it is computed once per model and config, after the maps: a result
  // whose probe is new is published first without it (empty), then again with it.
  std::vector<float> induction;
  std::optional<Attribution> attribution;    // request.attribution's, computed on the worker
  std::string attribution_error;             // why it could not be (random init, a position gone, a pitfall)
  std::string compare_error;                 // why request.compare_b's model could not run (a file that would not load)
  std::vector<float> rollout;                // request.rollout's (T, T), row = query; empty when not asked
  std::optional<LogitLens> lens;             // request.lens's, computed on the worker
  std::string lens_error;                    // why it could not be (random init, an encoder without its head)
  std::optional<HeadOverview> overview;      // request.overview's, from the maps computed
  std::optional<OffsetProfile> offsets;      // request.offsets', from the maps and the attention inputs
  // request.circuits': every head's composition scores and the head's circuits on the text's
  // tokens (null until computed: a model's first ones are published after the maps).
  std::shared_ptr<const CompositionRow> composition;
  std::optional<HeadCircuit> circuit;
  std::string circuit_error;                 // why the head's circuits cannot be (random init)
  std::vector<float> detector_scores;        // request.detectors' (L, Hw); empty when not asked
  // request.patch's, published after the maps (null until then: the view shows the progress).
  std::shared_ptr<const PatchOutcome> patch;
  std::optional<Error> error;                // e.g. a checkpoint that would not load
  double latency_ms = 0;                     // request posted -> result ready
};

// ---- training ------------------------------------------------------------------------
struct TrainJob {
  std::string corpus_path;
  std::vector<TrainOptions> runs;
  std::vector<std::string> labels;  // one per run: "H = 1", "with W_O", ...
  bool follow = true;               // hand snapshots of the first run to the heatmaps
};

// What the UI reads, copied under the training worker's lock.
struct TrainStatus {
  bool running = false, done = false, cancelled = false;
  int run = 0, runs = 0;            // the run in progress (0-based), of runs
  std::vector<std::string> labels;
  TrainProgress progress;           // of the run in progress
  std::vector<std::vector<TrainPoint>> curves;  // per run: (step, train loss, val loss)
  std::vector<double> final_val;    // per finished run
  std::shared_ptr<const ModelWeights> snapshot;  // the newest weights of the followed run
  uint64_t snapshot_id = 0;         // changes with every new snapshot
  std::shared_ptr<const ModelWeights> result;    // the followed run's final weights
  std::vector<std::shared_ptr<const ModelWeights>> run_weights;  // per finished run: its final weights (Show heads)
  std::optional<Error> error;
  std::string corpus_name;
};

}  // namespace headmap
