// training_worker.h: training runs on their own thread, at a lower priority than the
// UI and the compute worker, so the heatmaps stay live while a model trains. One job is
// one run ("Train this configuration") or several in sequence (the comparisons).
//
// D = d_model, H = heads, L = layers
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/train/trainer.h"

namespace headmap {

struct TrainJob {
  std::string corpus_path;
  std::vector<TrainOptions> runs;
  std::vector<std::string> labels;  // one per run: "H = 1", "with W_O", ...
  bool follow = true;               // hand snapshots of the first run to the heatmaps
};

// What the UI reads, copied under the lock.
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
  std::optional<Error> error;
  std::string corpus_name;
};

class TrainingWorker {
 public:
  explicit TrainingWorker(std::function<void()> wake);
  ~TrainingWorker();  // cancels a running job and waits for it
  TrainingWorker(const TrainingWorker&) = delete;
  TrainingWorker& operator=(const TrainingWorker&) = delete;

  bool start(TrainJob job);  // false when a job is already running
  void cancel();
  TrainStatus status() const;

 private:
  void run();
  std::function<void()> wake_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<TrainJob> job_;
  TrainStatus status_;
  std::atomic<bool> cancel_{false};
  bool quit_ = false;
  std::string corpus_path_;                  // the corpus below was loaded from here
  std::shared_ptr<const TrainCorpus> corpus_;  // worker thread only
  std::thread thread_;
};

}  // namespace headmap
