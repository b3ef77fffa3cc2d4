// training_worker.cpp: one training job at a time, on the shared worker thread.
#include "app/gui/workers/training_worker.h"

#include "core/memory_budget.h"

namespace headmap {

// Below the UI and the compute worker (nice 5): training uses what they leave.
TrainingWorker::TrainingWorker(std::function<void()> wake)
    : wake_(std::move(wake)), thread_(10, [this](TrainJob& job) { work(job); }) {}

TrainingWorker::~TrainingWorker() { cancel_ = true; }  // thread_ then waits for the run to stop

bool TrainingWorker::start(TrainJob job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.running) return false;
    status_ = TrainStatus();
    status_.running = true;
    status_.runs = static_cast<int>(job.runs.size());
    status_.labels = job.labels;
    status_.curves.resize(job.runs.size());
    cancel_ = false;
  }
  thread_.post(std::move(job));
  return true;
}

void TrainingWorker::cancel() { cancel_ = true; }

TrainStatus TrainingWorker::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void TrainingWorker::work(TrainJob& job) {
  auto finish = [&](std::optional<Error> err, bool cancelled) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_.running = false;
      status_.done = !err && !cancelled;
      status_.cancelled = cancelled;
      status_.error = std::move(err);
    }
    if (wake_) wake_();
  };
  if (!corpus_ || corpus_path_ != job.corpus_path) {
    Result<TrainCorpus> c = load_train_corpus(job.corpus_path);
    if (!c) {
      finish(c.error(), false);
      return;
    }
    corpus_ = std::make_shared<const TrainCorpus>(std::move(c).value());
    corpus_path_ = job.corpus_path;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.corpus_name = corpus_->name;
  }
  std::optional<Error> failed;
  bool cancelled = false;
  std::optional<TrainProgress> at_snapshot;  // the followed run's progress at its newest snapshot
  for (size_t i = 0; i < job.runs.size() && !failed && !cancelled; ++i) {
    const bool follow = job.follow && i == 0;
    TrainOptions o = job.runs[i];
    if (follow && o.snapshot_every == 0) o.snapshot_every = std::max(25, o.steps / 40);
    TrainHooks hooks;
    hooks.cancel = &cancel_;
    hooks.on_progress = [&, i](const TrainProgress& p) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        status_.run = static_cast<int>(i);
        status_.progress = p;
        status_.curves[i].push_back({p.step, p.train_loss, p.evaluated ? p.val_loss : -1.0});
      }
      if (wake_) wake_();
    };
    if (follow)
      hooks.on_snapshot = [&](const ModelWeights& w, const TrainProgress& p) {
        auto snap = std::make_shared<const ModelWeights>(w);
        {
          std::lock_guard<std::mutex> lock(mu_);
          status_.snapshot = std::move(snap);
          ++status_.snapshot_id;
          at_snapshot = p;
        }
        if (wake_) wake_();
      };
    Result<TrainResult> r = Error{ErrorKind::InvalidArgument, ""};
    try {
      r = train(*corpus_, o, hooks);
    } catch (const std::bad_alloc&) {  // the app keeps running, and says what to lower
      r = out_of_memory("training this configuration");
    }
    if (!r) {
      if (r.error().kind == ErrorKind::Cancelled) {
        cancelled = true;
        // A cancelled run keeps its newest snapshot, so its step is the one reported
        // everywhere: the progress ("Cancelled at step N"), the weights (N steps) and the
        // loss curve, which is cut there and ends with the snapshot's own point.
        std::lock_guard<std::mutex> lock(mu_);
        if (follow && at_snapshot && status_.snapshot) {
          std::vector<TrainPoint>& curve = status_.curves[i];
          while (!curve.empty() && curve.back().step > at_snapshot->step) curve.pop_back();
          if (curve.empty() || curve.back().step != at_snapshot->step)
            curve.push_back({at_snapshot->step, at_snapshot->train_loss, at_snapshot->evaluated ? at_snapshot->val_loss : -1.0});
          status_.progress = *at_snapshot;
        }
      } else {
        failed = r.error();
      }
      break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    status_.final_val.push_back(r->val_loss);
    status_.run_weights.push_back(std::make_shared<const ModelWeights>(std::move(r->weights)));
    if (follow) {
      status_.result = status_.run_weights.back();
      status_.snapshot = status_.result;
      ++status_.snapshot_id;
    }
  }
  finish(failed, cancelled);
}

}  // namespace headmap
