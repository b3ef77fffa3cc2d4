// training_worker.h: training runs on their own thread, at a lower priority than the
// UI and the compute worker, so the heatmaps stay live while a model trains. One job is
// one run ("Train this configuration") or several in sequence (the comparisons). The job
// and its status are plain values (requests.h).
//
// D = d_model, H = heads, L = layers
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "app/gui/requests.h"
#include "app/gui/workers/worker_thread.h"

namespace headmap {

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
  void work(TrainJob& job);
  std::function<void()> wake_;
  mutable std::mutex mu_;  // guards status_
  TrainStatus status_;
  std::atomic<bool> cancel_{false};
  std::string corpus_path_;                    // the corpus below was loaded from here
  std::shared_ptr<const TrainCorpus> corpus_;  // worker thread only
  WorkerThread<TrainJob> thread_;              // last: joined before the members above go away
};

}  // namespace headmap
