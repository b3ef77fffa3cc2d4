// corpus_worker.h: Contributions > Corpus's search, off the UI thread (issue 39, point 4).
//
// A job names a file and the model on screen. The worker reads the file (only now: the
// person chose it) and refuses what read_corpus refuses; it then takes the index from the
// cache on disk (corpus_cache.h) when a good one is there for this model and file, else
// runs the model over every line (corpus_index) with progress, and keeps the index on disk.
// Cancel stops it between chunks of lines and inside the forward; a newer start supersedes
// an older job. The previous outcome stays with the app until a new one succeeds.
#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include "app/gui/requests.h"
#include "app/gui/workers/worker_thread.h"

namespace headmap {

class CorpusWorker {
 public:
  // `wake` is called from the worker thread as progress is made and when a job ends.
  explicit CorpusWorker(std::function<void()> wake);
  CorpusWorker(const CorpusWorker&) = delete;
  CorpusWorker& operator=(const CorpusWorker&) = delete;
  ~CorpusWorker();  // cancels the job in progress, then waits for it

  void start(CorpusJob job);  // supersedes a job queued or running
  void cancel();              // the running job ends Cancelled
  // Lines done, of the file's lines; (0, 0) before a file is read.
  std::pair<int, int> progress() const { return {done_.load(), total_.load()}; }
  std::optional<CorpusOutcome> take();  // the newest job's outcome, once
  // The hits' small maps (corpus_view.h's corpus_hit_maps) on a thread of their own, so that
  // choosing another head never waits for the UI; a newer job supersedes an older one.
  void start_maps(CorpusMapsJob job);
  std::optional<CorpusMaps> take_maps();  // the newest maps job's answer, once
  bool busy() const;                    // a search or a maps job is queued or running

 private:
  struct Job {
    CorpusJob job;
    uint64_t seq = 0;
  };
  void work(Job& j);

  std::function<void()> wake_;
  mutable std::mutex mu_;  // guards newest_ and done_job_
  uint64_t newest_ = 0;
  std::optional<CorpusOutcome> done_job_;
  std::atomic<uint64_t> cancel_upto_{0};  // jobs up to this seq stop (Cancel, a newer start, the destructor)
  std::atomic<int> done_{0}, total_{0};
  struct MapsJob {
    CorpusMapsJob job;
    uint64_t seq = 0;
  };
  std::atomic<uint64_t> maps_newest_{0};
  std::optional<CorpusMaps> maps_done_;  // guarded by mu_
  WorkerThread<Job> thread_;  // last: it runs work() once everything above exists
  WorkerThread<MapsJob> maps_thread_;
};

}  // namespace headmap
