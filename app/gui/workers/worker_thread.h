// worker_thread.h: one background thread that runs posted jobs, newest first.
//
// Shared by the compute worker and the training worker. post() replaces a job that has not
// started (the latest wins); the thread runs at a lower priority than the UI, and the
// OpenMP threads it starts inherit that priority. The destructor waits for the job in
// progress: an owner that can cut a job short (training's cancel flag) sets it first.
#pragma once
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace headmap {

template <class Job>
class WorkerThread {
 public:
  // nice: added to the UI's priority (higher = yields more). work runs on the thread.
  WorkerThread(int nice, std::function<void(Job&)> work) : nice_(nice), work_(std::move(work)), thread_([this] { run(); }) {}
  ~WorkerThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Queues a job, replacing one that has not started.
  void post(Job job) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending_ = std::move(job);
    }
    cv_.notify_one();
  }
  // A job is queued or running.
  bool busy() const {
    std::lock_guard<std::mutex> lock(mu_);
    return working_ || pending_.has_value();
  }

 private:
  void run() {
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice_);
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return quit_ || pending_.has_value(); });
        if (quit_) return;
        job = std::move(*pending_);
        pending_.reset();
        working_ = true;
      }
      work_(job);
      std::lock_guard<std::mutex> lock(mu_);
      working_ = false;
    }
  }

  const int nice_;
  const std::function<void(Job&)> work_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Job> pending_;
  bool working_ = false, quit_ = false;
  std::thread thread_;  // last: it starts once everything above exists
};

}  // namespace headmap
