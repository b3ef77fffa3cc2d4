// compute_worker.h: the model runs here, off the UI thread.
//
// The UI posts a request whenever its inputs change; the latest request wins (older ones
// that have not started are dropped). Results are cached by their inputs (text, config,
// seed, weights, ablation), so going back to an earlier state is instant and a frame that
// changes nothing computes nothing. The step-through of one head is cached separately on
// top of its forward pass, so clicking through heads does not rerun the model.
//
// B = batch, T = tokens, D = d_model, H = heads, L = layers
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/inspect/metrics.h"
#include "core/model/model.h"
#include "core/inspect/passport.h"

namespace headmap {

struct ComputeRequest {
  std::vector<std::string> lines;  // one sentence per line
  ModelConfig cfg;
  std::string checkpoint;          // a file to load; empty: random init from cfg.seed
  std::shared_ptr<const ModelWeights> weights;  // or weights in memory (training), named by:
  std::string weights_id;          // e.g. "session:12", part of the cache key
  std::vector<uint8_t> ablated;    // (L*H), empty = no head ablated
  TraceRequest trace;              // the head the focus view steps through

  std::string forward_key() const;  // everything that changes the forward pass
  std::string key() const;          // forward_key + the traced head
};

// One forward pass and everything derived from it. Immutable once published.
struct ForwardData {
  std::string key;
  std::shared_ptr<const ModelWeights> weights;
  Batch batch;
  ForwardOutput out;                  // with attn_in / attn_out per layer
  Passport passport;
  std::vector<HeadMetrics> metrics;   // (L, B, Hw)
  std::vector<float> induction;       // (L, H) on the induction probe
  std::string source;                 // "random init (seed 7)", "trained (...)"
  std::vector<std::vector<std::string>> labels;  // (B) display text of each sentence's tokens
  std::vector<float> map_max;         // (L, B, Hw) largest weight over rows that see more than one key
  double compute_ms = 0;              // wall time of the forward pass and metrics
};

struct ComputeResult {
  ComputeRequest request;
  uint64_t seq = 0;                          // order of the request
  std::shared_ptr<const ForwardData> fwd;    // null when `error` is set
  std::optional<HeadTrace> trace;            // absent for an empty batch
  // Finite (min, max) over the real rows of trace's q, k, v, scores, scaled, masked,
  // weights, head_out, concat and out, in that order.
  std::vector<std::pair<float, float>> trace_range;
  std::optional<Error> error;                // e.g. a checkpoint that would not load
  double latency_ms = 0;                     // request posted -> result ready
};

class ComputeWorker {
 public:
  // `wake` is called from the worker thread when a result is ready (glfwPostEmptyEvent).
  explicit ComputeWorker(std::function<void()> wake);
  ~ComputeWorker();
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  // Posts a request; returns its sequence number. Cheap: never computes on this thread.
  uint64_t request(ComputeRequest r);
  // The newest finished result not yet taken, or null.
  std::shared_ptr<const ComputeResult> take();
  bool busy() const;
  uint64_t last_requested() const;

 private:
  void run();
  std::shared_ptr<const ComputeResult> compute(const ComputeRequest& r, uint64_t seq);
  Result<std::shared_ptr<const ModelWeights>> weights_for(const ComputeRequest& r);

  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<ComputeRequest, uint64_t>> pending_;
  std::shared_ptr<const ComputeResult> ready_;
  bool working_ = false, quit_ = false;
  uint64_t seq_ = 0;
  std::chrono::steady_clock::time_point posted_at_;

  // Worker-thread-only caches.
  std::list<std::shared_ptr<const ForwardData>> forward_cache_;  // most recent first
  std::map<std::string, std::shared_ptr<const ModelWeights>> weights_cache_;
  std::map<std::string, std::vector<float>> induction_cache_;  // by weights and config: not by text
  std::thread thread_;
};

}  // namespace headmap
