// model_loader.cpp: see model_loader.h.
#include "app/gui/workers/model_loader.h"

#include <atomic>
#include <chrono>
#include <new>
#include <thread>

#include "core/io/hf_tensors.h"
#include "core/io/hf_model.h"
#include "core/memory_budget.h"

namespace headmap {

static std::atomic<double> g_stall_s{0.0};  // stall_reads_for_tests

void ModelLoader::stall_reads_for_tests(double seconds) { g_stall_s = seconds; }

ModelLoader::ModelLoader() : thread_(0, [this](Job& j) { work(j); }) {}

void ModelLoader::start(const std::string& dir, uint64_t held_bytes, const std::string& held_what) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(mu_);
    seq = ++newest_;
    done_.reset();
  }
  thread_.post(Job{dir, seq, held_bytes, held_what});
}

std::optional<LoadedModel> ModelLoader::take() {
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<LoadedModel> r = std::move(done_);
  done_.reset();
  return r;
}

bool ModelLoader::busy() const {
  if (thread_.busy()) return true;
  std::lock_guard<std::mutex> lock(mu_);
  return done_.has_value();  // done, not yet taken
}

void ModelLoader::work(Job& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (job.seq != newest_) return;  // superseded before it started
  }
  LoadedModel m{job.dir, Error{ErrorKind::InvalidArgument, ""}};
  if (const double stall = g_stall_s; stall > 0) std::this_thread::sleep_for(std::chrono::duration<double>(stall));
  try {
    const MemoryHeld held(job.held_bytes, job.held_what);  // every check of the read counts what the app keeps beside it
    Result<ModelWeights> w = open_model_path(job.dir);  // the one dispatcher: any path File > Open model names
    if (w) m.weights = std::shared_ptr<const ModelWeights>(std::make_shared<const ModelWeights>(std::move(w).value()));
    else m.weights = w.error();
  } catch (const std::bad_alloc&) {
    m.weights = Error{ErrorKind::InvalidArgument, job.dir + ": there is not enough memory to load this model. Close other programs, or open a smaller model."};
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (job.seq == newest_) done_ = std::move(m);  // a newer start() drops this one
}

}  // namespace headmap
