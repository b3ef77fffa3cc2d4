// compute_worker.h: the model runs here, off the UI thread.
//
// The UI posts a request (requests.h) whenever its inputs change; the latest request wins
// (older ones that have not started are dropped). Forward passes are cached by their
// inputs (text, config, weights, ablation), so going back to an earlier state is instant
// and a frame that changes nothing computes nothing. The step-through of one head is
// computed on top of a cached forward pass, so clicking through heads does not rerun the
// model.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "app/gui/requests.h"
#include "app/gui/workers/worker_thread.h"
#include "core/model/kv_cache.h"

namespace headmap {

// The worker's cache budgets: recent forward passes (by count and by the bytes of their
// outputs: maps, logits, layer rows; the newest is always kept), loaded models, and induction scores.
// 32 MB: a classroom model's passes (KBs) are all kept; a 1B model's older pass (56 MB at
// 60 tokens, and the K/V cache's logits and layer rows its views keep) is not: the app's peak
// RSS typing into the 1B GGUF fell by 30-100 MB (tests/bench/README.md, helper rss8).
inline constexpr size_t kForwardCacheEntries = 32;
inline constexpr size_t kForwardCacheBytes = size_t(32) << 20;
inline constexpr size_t kWeightsCacheModels = 8;
inline constexpr size_t kInductionCacheEntries = 64;
inline constexpr size_t kPatchCacheEntries = 16;
// Models whose circuits (the Circuits view: each head's text-free circuits, composition rows
// and the vocabulary's U^T E) are kept.
inline constexpr size_t kCircuitModels = 2;
inline constexpr size_t kCircuitHeadsPerModel = 512;
// Requests above this many FLOPs (the forward pass, counted densely) with layers beyond the
// visible one publish the visible layer first (compute() in compute_worker.cpp): about
// 3 ms of this machine's GEMM.
inline constexpr double kStagedFlops = 3e8;
// Random weights not drawn yet: when the layers after the visible one need at least this
// many normals (about 3 ms), the layers up to the visible one are drawn and shown first.
inline constexpr double kDrawFirstNormals = 1e6;
// K/V caches kept (kv_cache.h), one per model, the most recently used first.
inline constexpr size_t kKvCacheModels = 2;
// An incremental forward of at most this many new rows is not cancelled by a newer request
// (forward_data): typing at the end extends it, and the next request starts from its rows.
inline constexpr int kFinishAppendRows = 16;
// Next tokens kept per row in place of a trained model's (T, V) logits (ForwardOptions::
// next_tokens_k, core/model/next_tokens.h): what the predictions panel (5) and Generate
// (App::kGenerateCandidates, 16) read. The 1B shape's logits were 82 MB a block at T = 128,
// up to three blocks while typing, and copied whole at each edit under a row on screen.
inline constexpr int kKeptNextTokens = 16;
// A pass through the K/V cache (typing, or a whole new text) of a model whose unembedding has at
// least this many weights publishes its maps first and its next tokens and loss after
// (ForwardOptions::defer_next_tokens, finish_late): the 1B shape's logits stage is ~15 ms of a
// ~75 ms keystroke and ~0.38 s of a 1.8 s forward at T = 128 (Q4_K_M, 2-core Zen 4 VM). A small
// model's logits cost less than the second publish.
inline constexpr double kDeferLogitsWeights = 8e6;
// How long a typing pass's late next tokens wait for its maps to reach the screen (shown()):
// computed beside that frame they took its cores (input to pixels p50 +6 ms, the swap under
// llvmpipe 7.5 -> 10-12.5 ms). Without a UI (no shown()) they start after this.
inline constexpr std::chrono::milliseconds kLateAfterShown{60};
// View > 8-bit products: how long the text stays still before the F32 pass for their difference
// runs (finish_products_diff; ~1.8 s on the 1B shape at T = 128): a keystroke sooner starts its
// own pass instead, and one during it stops it.
inline constexpr std::chrono::milliseconds kDiffAfterPause{700};
// Maps longer than this get max-pooled levels down to this side (a thumbnail's pixels).
inline constexpr int kMapLevelsMinSide = 16;

class ComputeWorker {
 public:
  // `wake` is called from the worker thread when a result is ready (glfwPostEmptyEvent).
  explicit ComputeWorker(std::function<void()> wake);
  // Stops the work in progress where it checks for a newer request (a long pass between heads,
  // the late next tokens, the F32 pass beside 8-bit products and its pause), then joins: quitting
  // does not wait for a pass nobody will see.
  ~ComputeWorker();
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  // Posts a request; returns its sequence number. Cheap: never computes on this thread.
  uint64_t request(ComputeRequest r);
  // The newest finished result not yet taken, or null.
  std::shared_ptr<const ComputeResult> take();
  // Waits up to `budget` for the result of request `seq` (or a newer one), then takes it;
  // null if it is not ready by then. For small requests, the frame that posts one draws it.
  std::shared_ptr<const ComputeResult> wait_for(uint64_t seq, std::chrono::microseconds budget);
  bool busy() const;
  // The UI's frame showing result `seq` (its maps drawn) reached the screen: a typing pass's
  // next tokens (finish_late) wait for it, so they do not take the cores from that frame.
  void shown(uint64_t seq);
  uint64_t last_requested() const;
  // The patching in progress (Patching view): heads (or positions) done, of total; (0, 0) when none runs.
  std::pair<int, int> patch_progress() const { return {patch_done_.load(), patch_total_.load()}; }

 private:
  struct Job {
    ComputeRequest request;
    uint64_t seq = 0;
    std::chrono::steady_clock::time_point posted;
  };
  void work(Job& job);
  void publish(const Job& job, std::shared_ptr<ComputeResult> res);
  // res's forward left its next tokens for later (ForwardData::late): computed from the model's
  // K/V cache, which still holds that pass, and res published again; unless a newer request waits.
  void finish_late(const Job& job, const ComputeResult& res);
  // res ran with 8-bit products (ForwardData::late_diff): once no newer request came for
  // kDiffAfterPause, the same forward in F32 and their difference, and res published again.
  void finish_products_diff(const Job& job, const ComputeResult& res);
  std::shared_ptr<ComputeResult> compute(const Job& job, const ComputeRequest& r, uint64_t seq);
  static void trace_head(ComputeResult& res, const ForwardData& fwd, const ComputeRequest& r);
  // r.patch on these weights: defaults resolved, every head patched, and per position; a
  // Cancelled error when a newer request arrives.
  Result<std::shared_ptr<const PatchOutcome>> run_patch(const ComputeRequest& r, const ModelWeights& w, uint64_t seq);
  // The forward pass of r's forward inputs and what is derived from it, from the cache or
  // computed; with a job, a long request publishes its visible layer first.
  Result<std::shared_ptr<const ForwardData>> forward_data(const Job* job, const ComputeRequest& r, uint64_t seq);
  Result<std::shared_ptr<const ModelWeights>> weights_for(const ComputeRequest& r);  // cached, else read or drawn, then cached
  std::shared_ptr<const ModelWeights> cached_weights(const ComputeRequest& r) const;  // null when not cached
  void cache_weights(const ComputeRequest& r, std::shared_ptr<const ModelWeights> w);

  std::function<void()> wake_;
  mutable std::mutex mu_;  // guards seq_ and ready_
  uint64_t seq_ = 0;
  std::atomic<uint64_t> newest_{0};
  std::atomic<uint64_t> shown_{0};   // shown(): the newest result on screen  // seq_, readable without the lock (the cancel flag, between heads)
  std::shared_ptr<const ComputeResult> ready_;
  std::condition_variable ready_cv_;  // a result was published

  // Worker-thread-only caches.
  struct WeightsKey {
    std::string checkpoint;  // or random init of:
    int d_model = 0, num_layers = 0;
    uint64_t seed = 0;
    bool operator==(const WeightsKey&) const = default;
  };
  struct InductionKey {  // the probe does not depend on the text
    ModelConfig cfg;
    std::string checkpoint;
    bool in_memory = false;
    uint64_t in_memory_id = 0;
    bool operator==(const InductionKey&) const = default;
  };
  struct PatchKey {  // a patching's inputs: the model and config, and the request
    ModelConfig cfg;
    std::string checkpoint;
    const void* in_memory = nullptr;
    uint64_t in_memory_id = 0;
    PatchRequest request;
    bool operator==(const PatchKey&) const = default;
  };
  std::vector<std::pair<PatchKey, std::shared_ptr<const PatchOutcome>>> patch_cache_;
  // The Circuits view's parts that need no text, per model and config (the key is the
  // induction probe's), most recent first: U^T E, and per head asked its circuits and
  // composition row (or why it has none).
  struct CircuitHead {
    HeadId id;
    std::optional<HeadCircuit> circuit;
    std::string error;
    std::shared_ptr<const CompositionRow> composition;
  };
  struct CircuitModel {
    InductionKey key;
    std::optional<Eigen::MatrixXd> ute;  // computed with the first head's circuits
    std::vector<CircuitHead> heads;
  };
  std::list<CircuitModel> circuit_cache_;
  // r.circuits answered into res from circuit_cache_; false when the head is not cached yet.
  bool circuits_from_cache(ComputeResult& res, const ForwardData& fwd, const ComputeRequest& r) const;
  void compute_circuits(const ModelWeights& w, const ComputeRequest& r);  // into circuit_cache_
  std::atomic<int> patch_done_{0}, patch_total_{0};
  std::list<std::shared_ptr<const ForwardData>> forward_cache_;  // most recent first
  // Forward passes dropped from forward_cache_ whose buffers the next forward writes into
  // (ForwardOptions::reuse: no fresh pages faulted in per keystroke), each taken only once
  // nothing else holds it (no frame shows it, no result refers to it); the oldest first.
  std::list<std::shared_ptr<const ForwardData>> retired_;
  // A retired pass's output that nothing holds, or an empty one; its maps' levels into `levels`.
  ForwardOutput take_spare(std::vector<MapLevels>& levels);
  static WeightsKey weights_key(const ComputeRequest& r);
  ModelWeights random_weights_from_cache(int d_model, int num_layers, uint64_t seed) const;
  std::vector<std::pair<WeightsKey, std::shared_ptr<const ModelWeights>>> weights_cache_;
  std::vector<std::pair<InductionKey, std::vector<float>>> induction_cache_;
  // The incremental forward's caches: the last request of each model (the model kept alive
  // with it, so its address names it).
  std::list<std::pair<std::shared_ptr<const ModelWeights>, std::shared_ptr<KvCache>>> kv_caches_;
  KvCache& kv_cache_for(const std::shared_ptr<const ModelWeights>& w);

  WorkerThread<Job> thread_;  // last: joined before the caches above go away
};

}  // namespace headmap
