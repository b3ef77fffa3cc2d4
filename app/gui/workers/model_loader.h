// model_loader.h: File > Open model reads a GPT-2-family directory off the UI thread.
//
// Reading and converting GPT-2 small takes about 0.4 s (GPT-2 medium, about 1.2 s): frames
// keep coming while it runs, the current model stays on screen, and the newest request wins
// (an older load that is still running finishes, and its result is dropped).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "app/gui/workers/worker_thread.h"
#include "core/error.h"
#include "core/model/weights.h"

namespace headmap {

struct LoadedModel {
  std::string dir;
  Result<std::shared_ptr<const ModelWeights>> weights;  // or why the directory could not be opened
};

class ModelLoader {
 public:
  ModelLoader();
  // Starts reading dir; a load asked for earlier is superseded. `held_bytes`: memory the app
  // keeps beside the new model (the Compare tab's A and B), counted against the memory
  // budget (MemoryHeld) and named by `held_what` in a refusal.
  void start(const std::string& dir, uint64_t held_bytes = 0, const std::string& held_what = "");
  // The newest load's result, once, when it is done.
  std::optional<LoadedModel> take();
  // A load is queued or running.
  bool busy() const;
  // Test hook (issue 35, F9): every read first waits this many seconds, standing for a read
  // that hangs (a stalled network disk), which no file in a directory can make: FIFOs and
  // other non-regular files are refused before they are opened. main.cpp sets it only in a
  // scripted run, from HEADMAP_TEST_STALL_LOAD_S; tests/app/check_hostile_inputs.sh uses it.
  static void stall_reads_for_tests(double seconds);

 private:
  struct Job {
    std::string dir;
    uint64_t seq = 0;
    uint64_t held_bytes = 0;
    std::string held_what;
  };
  void work(Job& job);

  mutable std::mutex mu_;
  uint64_t newest_ = 0;  // the seq of the newest start()
  std::optional<LoadedModel> done_;
  WorkerThread<Job> thread_;  // last: it runs work() once everything above exists
};

}  // namespace headmap
