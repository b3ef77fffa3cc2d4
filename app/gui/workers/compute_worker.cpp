// compute_worker.cpp: the worker thread, its caches, and one compute step.
#include "app/gui/workers/compute_worker.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <limits>

#include "core/io/checkpoint.h"
#include "core/io/export.h"

namespace headmap {

std::string ComputeRequest::forward_key() const {
  std::string k = config_json(cfg) + "\n" + checkpoint + "\n" + weights_id + "\n";
  for (uint8_t a : ablated) k += a ? '1' : '0';
  k += "\n";
  for (const std::string& l : lines) k += l + "\n";
  return k;
}

std::string ComputeRequest::key() const {
  return forward_key() + "#" + std::to_string(trace.layer) + "," + std::to_string(trace.batch) + "," + std::to_string(trace.head);
}

ComputeWorker::ComputeWorker(std::function<void()> wake) : wake_(std::move(wake)), thread_([this] { run(); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

uint64_t ComputeWorker::request(ComputeRequest r) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_ = std::make_pair(std::move(r), ++seq_);  // latest wins: an unstarted request is replaced
  posted_at_ = std::chrono::steady_clock::now();
  cv_.notify_one();
  return seq_;
}

std::shared_ptr<const ComputeResult> ComputeWorker::take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(ready_, nullptr);
}

bool ComputeWorker::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return working_ || pending_.has_value();
}

uint64_t ComputeWorker::last_requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

void ComputeWorker::run() {
  // A little below the UI thread (and the GL driver's threads, which it starts): on two
  // cores a long request must not take the frames' time. Its OpenMP threads inherit this.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
  for (;;) {
    std::pair<ComputeRequest, uint64_t> job;
    std::chrono::steady_clock::time_point posted;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return quit_ || pending_.has_value(); });
      if (quit_) return;
      job = std::move(*pending_);
      pending_.reset();
      posted = posted_at_;
      working_ = true;
    }
    std::shared_ptr<const ComputeResult> res = compute(job.first, job.second);
    if (res->error && res->error->kind == ErrorKind::Cancelled) {  // a newer request is pending: it runs next
      std::lock_guard<std::mutex> lock(mu_);
      working_ = false;
      continue;
    }
    auto* mutable_res = const_cast<ComputeResult*>(res.get());
    mutable_res->latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - posted).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = res;
      working_ = false;
    }
    if (wake_) wake_();
  }
}

Result<std::shared_ptr<const ModelWeights>> ComputeWorker::weights_for(const ComputeRequest& r) {
  if (r.weights) return r.weights;
  const ModelConfig& c = r.cfg;
  const std::string key = r.checkpoint.empty()
                              ? "random:" + std::to_string(c.d_model) + ":" + std::to_string(c.num_layers) + ":" + std::to_string(c.seed)
                              : "file:" + r.checkpoint;
  if (auto it = weights_cache_.find(key); it != weights_cache_.end()) return it->second;
  std::shared_ptr<const ModelWeights> w;
  if (r.checkpoint.empty()) {
    w = std::make_shared<const ModelWeights>(random_weights(c.d_model, c.num_layers, c.seed));
  } else {
    Result<ModelWeights> loaded = load_checkpoint(r.checkpoint);
    if (!loaded) return loaded.error();
    w = std::make_shared<const ModelWeights>(std::move(loaded).value());
  }
  if (weights_cache_.size() >= 8) weights_cache_.clear();  // a handful of models is plenty
  weights_cache_[key] = w;
  return w;
}

std::shared_ptr<const ComputeResult> ComputeWorker::compute(const ComputeRequest& r, uint64_t seq) {
  auto res = std::make_shared<ComputeResult>();
  res->request = r;
  res->seq = seq;
  const auto t0 = std::chrono::steady_clock::now();

  // 1. The forward pass, from the cache when these inputs were seen before.
  const std::string fkey = r.forward_key();
  std::shared_ptr<const ForwardData> fwd;
  for (auto it = forward_cache_.begin(); it != forward_cache_.end(); ++it)
    if ((*it)->key == fkey) {
      fwd = *it;
      forward_cache_.splice(forward_cache_.begin(), forward_cache_, it);
      break;
    }
  if (!fwd) {
    Result<std::shared_ptr<const ModelWeights>> w = weights_for(r);
    if (!w) {
      res->error = w.error();
      return res;
    }
    auto data = std::make_shared<ForwardData>();
    data->key = fkey;
    data->weights = *w;
    data->batch = make_batch(r.lines, r.cfg, **w);
    ForwardOptions fo;
    fo.keep_layer_io = true;
    fo.want_logits = (*w)->trained();
    if (!r.ablated.empty()) fo.ablate = &r.ablated;
    fo.cancelled = [this] {  // a newer request makes this one pointless (latest wins)
      std::lock_guard<std::mutex> lock(mu_);
      return pending_.has_value() || quit_;
    };
    Result<ForwardOutput> out = forward(**w, r.cfg, data->batch, fo);
    if (!out) {
      res->error = out.error();
      return res;
    }
    data->out = std::move(out).value();
    data->passport = make_passport(r.cfg, data->batch.B(), data->batch.T, (*w)->trained() ? (*w)->vocab_size() : 0, (*w)->context);
    data->metrics = head_metrics(data->out, data->batch);
    // The probe does not depend on the text: one per model and config.
    const std::string ikey = config_json(r.cfg) + "\n" + r.checkpoint + "\n" + r.weights_id;
    if (auto it = induction_cache_.find(ikey); it != induction_cache_.end()) {
      data->induction = it->second;
    } else {
      data->induction = induction_scores(**w, r.cfg, make_induction_probe(r.cfg, **w, 20, r.cfg.seed));
      if (induction_cache_.size() >= 64) induction_cache_.clear();
      induction_cache_[ikey] = data->induction;
    }
    data->source = describe_source(**w, r.cfg);
    // Derived once here, not every frame: token labels and each map's colour range. The
    // first row of a causal map is always [1, 0, ...]; it is left out of the range.
    for (int b = 0; b < data->batch.B(); ++b) {
      std::vector<std::string> l;
      for (const Token& t : data->batch.sentences[b].tokens) l.push_back(token_display(t));
      data->labels.push_back(std::move(l));
    }
    const ForwardOutput& o = data->out;
    const bool skip_first = r.cfg.causal && !r.cfg.pitfalls.reversed_mask;
    for (int l = 0; l < o.L; ++l)
      for (int b = 0; b < o.B; ++b)
        for (int h = 0; h < o.Hw; ++h) {
          const int len = data->batch.lengths[b];
          const float* m = o.weights(l, b, h);
          float mx = 0;
          for (int t = skip_first && len > 1 ? 1 : 0; t < len; ++t)
            for (int k = 0; k < len; ++k) mx = std::max(mx, m[static_cast<size_t>(t) * o.T + k]);
          data->map_max.push_back(mx);
        }
    data->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    fwd = data;
    // Keep recent results, up to ~512 MB of attention maps.
    forward_cache_.push_front(fwd);
    size_t bytes = 0, kept = 0;
    for (auto it = forward_cache_.begin(); it != forward_cache_.end(); ++it, ++kept) {
      bytes += (*it)->out.attention.size() * sizeof(float);
      if (kept >= 32 || (kept > 0 && bytes > (size_t(512) << 20))) {
        forward_cache_.erase(it, forward_cache_.end());
        break;
      }
    }
  }
  res->fwd = fwd;

  // 2. The step-through of the selected head, on the cached layer input.
  const ForwardOutput& out = fwd->out;
  const TraceRequest& tr = r.trace;
  if (!fwd->batch.empty() && tr.layer >= 0 && tr.layer < out.L && tr.batch >= 0 && tr.batch < out.B && tr.head >= 0 &&
      tr.head < out.H) {
    MhaOptions mo;
    mo.num_heads = r.cfg.num_heads;
    mo.causal = r.cfg.causal;
    mo.pitfalls = r.cfg.pitfalls;
    mo.lengths = fwd->batch.lengths.data();
    if (!r.ablated.empty()) mo.ablated = r.ablated.data() + static_cast<size_t>(tr.layer) * out.H;
    const MatR x_b = out.attn_in[tr.layer].middleRows(static_cast<Eigen::Index>(tr.batch) * out.T, out.T);  // (T, D)
    res->trace = head_trace(fwd->weights->layers[tr.layer], x_b, fwd->batch.lengths[tr.batch], tr.head, mo);
    const HeadTrace& h = *res->trace;
    for (const MatR* m : {&h.q, &h.k, &h.v, &h.scores, &h.scaled, &h.masked, &h.weights, &h.head_out, &h.concat, &h.out}) {
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (int t = 0; t < h.len; ++t)
        for (Eigen::Index c = 0; c < m->cols(); ++c)
          if (const float v = (*m)(t, c); std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      res->trace_range.emplace_back(lo <= hi ? lo : 0.0f, lo <= hi ? hi : 0.0f);
    }
  }
  return res;
}

}  // namespace headmap
