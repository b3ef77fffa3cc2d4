// stage_times.h: where a forward pass spends its time, stage by stage, for the benchmarks
// (headmap-bench-families, headmap-bench-incremental). ForwardOptions::times points at one;
// null (every normal run) costs one branch per stage.
//
// Stages that run on the calling thread (norms, the projections' GEMMs, the MLP, the logits)
// are wall time. The per-head work inside attention's parallel region (scores, softmax,
// weights·V) runs on every thread at once, so each is summed over threads ("thread
// seconds") and the region's own wall time is kept apart as `heads_wall`; the table shows
// each per-head stage as its share of that wall time. Page faults (minor, the whole process)
// are counted per wall stage: fresh buffers fault every page they touch.
#pragma once
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace headmap {

enum class Stage : int {
  Embed,       // token (+ position) embeddings: (B*T, D)
  MapsAlloc,   // the (L, B, Hw, T, T) maps buffer, zeroed
  Norm,        // every LayerNorm / RMSNorm before and after the sub-blocks (final norm in Logits)
  QkvProj,     // x (B*T, D) · W_QKV (D, Dq + 2Dkv) + b
  QkSteps,     // q/k RMSNorm, RoPE and the score scale on each head's q and k
  HeadsWall,   // the per-head region's wall time (scores + softmax + weights·V + its maps)
  Scores,      // per head: Q·K^T (+ soft-cap), thread seconds
  Softmax,     // per head: mask and softmax, written into the maps in place, thread seconds
  WeightsV,    // per head: weights · V into the concatenation, thread seconds
  OutProj,     // concat (B*T, Dq) · W_O (Dq, D) + b
  MlpIn,       // the MLP's first GEMM(s): (B*T, D) · W_fc or W_gate | W_up
  MlpAct,      // GELU / SiLU (and the gate's product)
  MlpOut,      // (B*T, F) · W_proj
  Residual,    // the residual adds, padding rows zeroed, kept layer inputs/outputs
  KvCopy,      // the incremental forward: the cached prefix's maps, rows and K/V copied
  Logits,      // final norm, (B*T, D) · U^T (D, V), soft-cap
  Loss,        // the next-token cross-entropy over the logits
  kCount
};

inline const char* stage_name(Stage s) {
  static const char* const names[] = {"embed",        "maps alloc", "norms",   "QKV projection", "q/k norm + RoPE + scale",
                                      "heads (wall)", "  scores",   "  softmax", "  weights x V", "output projection",
                                      "MLP in",       "MLP act",    "MLP out", "residual + copies", "K/V cache copies",
                                      "logits",       "loss"};
  static_assert(sizeof names / sizeof names[0] == static_cast<size_t>(Stage::kCount), "one name per stage");
  return names[static_cast<int>(s)];
}

// Thread seconds are added from the compute threads: atomics, nanoseconds.
struct StageTimes {
  std::array<std::atomic<int64_t>, static_cast<size_t>(Stage::kCount)> ns{};
  std::array<std::atomic<int64_t>, static_cast<size_t>(Stage::kCount)> faults{};
  std::atomic<int64_t> passes{0};

  void add(Stage s, int64_t nanos, int64_t minor_faults = 0) {
    ns[static_cast<size_t>(s)].fetch_add(nanos, std::memory_order_relaxed);
    faults[static_cast<size_t>(s)].fetch_add(minor_faults, std::memory_order_relaxed);
  }
  double ms(Stage s) const { return ns[static_cast<size_t>(s)].load() * 1e-6; }
  void clear() {
    for (auto& v : ns) v = 0;
    for (auto& v : faults) v = 0;
    passes = 0;
  }
  // A text table, per pass: stage, ms, share of the pass, page faults. `total_ms` is the
  // measured wall time of the passes (the rest is shown as "other").
  std::string table(double total_ms) const;
};

// The process's minor page faults so far (getrusage).
int64_t minor_faults_now();

// Times one wall stage of the calling thread from construction to destruction (or stop());
// with a null StageTimes it does nothing.
class StageClock {
 public:
  StageClock(StageTimes* t, Stage s) : t_(t), s_(s) {
    if (t_) start();
  }
  ~StageClock() { stop(); }
  StageClock(const StageClock&) = delete;
  StageClock& operator=(const StageClock&) = delete;
  void stop() {
    if (!t_ || !running_) return;
    running_ = false;
    t_->add(s_, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0_).count(),
            minor_faults_now() - f0_);
  }
  // Ends this stage and starts another on the same clock.
  void next(Stage s) {
    stop();
    s_ = s;
    if (t_) start();
  }

 private:
  void start() {
    running_ = true;
    f0_ = minor_faults_now();
    t0_ = std::chrono::steady_clock::now();
  }
  StageTimes* t_;
  Stage s_;
  bool running_ = false;
  int64_t f0_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

// Thread seconds of the per-head stages: a lap timer for one thread's loop (no page faults).
class StageLap {
 public:
  explicit StageLap(StageTimes* t) : t_(t) {
    if (t_) t0_ = std::chrono::steady_clock::now();
  }
  // The time since the last lap goes to stage s.
  void lap(Stage s) {
    if (!t_) return;
    const auto now = std::chrono::steady_clock::now();
    t_->add(s, std::chrono::duration_cast<std::chrono::nanoseconds>(now - t0_).count());
    t0_ = now;
  }

 private:
  StageTimes* t_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace headmap
