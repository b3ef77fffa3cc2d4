// compute_worker.cpp: the worker thread, its caches, and one compute step.
#include "app/gui/workers/compute_worker.h"

#include "core/memory_budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

#include "app/common/token_labels.h"
#include "core/inspect/patch_positions.h"
#include "core/io/checkpoint.h"
#include "core/math/gemm.h"
#include "core/model/stage_times.h"
#include "core/model/source_label.h"

namespace headmap {

// A little below the UI thread (and the GL driver's threads, which it starts): on two
// cores a long request must not take the frames' time.
ComputeWorker::ComputeWorker(std::function<void()> wake)
    : wake_(std::move(wake)), thread_(5, [this](Job& job) { work(job); }) {}

ComputeWorker::~ComputeWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    newest_.store(std::numeric_limits<uint64_t>::max(), std::memory_order_relaxed);  // newer than any job
  }
  ready_cv_.notify_all();
}  // thread_, the last member, joins first

uint64_t ComputeWorker::request(ComputeRequest r) {
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);  // under the lock: finish_late's wait cannot miss it
    seq = ++seq_;
    newest_.store(seq, std::memory_order_relaxed);
  }
  thread_.post(Job{std::move(r), seq, std::chrono::steady_clock::now()});  // latest wins
  ready_cv_.notify_all();  // a late computation waiting for the screen gives way (finish_late)
  return seq;
}

void ComputeWorker::shown(uint64_t seq) {
  if (shown_.load(std::memory_order_relaxed) >= seq) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shown_.store(seq, std::memory_order_relaxed);
  }
  ready_cv_.notify_all();
}

std::shared_ptr<const ComputeResult> ComputeWorker::take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(ready_, nullptr);
}

std::shared_ptr<const ComputeResult> ComputeWorker::wait_for(uint64_t seq, std::chrono::microseconds budget) {
  std::unique_lock<std::mutex> lock(mu_);
  ready_cv_.wait_for(lock, budget, [&] { return ready_ && ready_->seq >= seq; });
  if (!ready_ || ready_->seq < seq) return nullptr;
  return std::exchange(ready_, nullptr);
}

bool ComputeWorker::busy() const { return thread_.busy(); }

uint64_t ComputeWorker::last_requested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

void ComputeWorker::work(Job& job) {
  std::shared_ptr<ComputeResult> res;
  try {
    res = compute(job, job.request, job.seq);
  } catch (const std::bad_alloc&) {  // an estimate fell short: a message, and the last result stays on screen
    forward_cache_.clear();
    retired_.clear();
    weights_cache_.clear();
    res = std::make_shared<ComputeResult>();
    res->request = job.request;
    res->seq = job.seq;
    res->error = out_of_memory("computing this model");
  }
  if (res->error && res->error->kind == ErrorKind::Cancelled) return;  // a newer request is queued: it runs next
  publish(job, res);
  if (res->fwd && res->fwd->next_pending()) finish_late(job, *res);
  if (res->fwd && res->fwd->late_diff && !res->fwd->late_diff_ready()) finish_products_diff(job, *res);
}

static double thread_cpu_ms();  // CPU time of the calling thread, in ms (below)

void ComputeWorker::finish_late(const Job& job, const ComputeResult& res) {
  {  // the frame that shows the maps first (its swap shares the cores), unless a newer request comes
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait_for(lock, kLateAfterShown, [&] { return shown_.load() >= job.seq || newest_.load() != job.seq; });
  }
  if (newest_.load(std::memory_order_relaxed) != job.seq) return;  // the next keystroke first (its pass computes these rows too)
  const ForwardData& f = *res.fwd;
  auto it = std::find_if(kv_caches_.begin(), kv_caches_.end(), [&](const auto& e) { return e.first == f.weights; });
  if (it == kv_caches_.end()) return;
  KvCache& c = *it->second;
  if (c.T() != f.out.T || f.batch.B() != 1 || c.tokens.size() != f.batch.sentences[0].tokens.size()) return;  // the cache moved on
  for (size_t t = 0; t < c.tokens.size(); ++t)
    if (c.tokens[t].id != f.batch.sentences[0].tokens[t].id) return;
  // A keystroke arriving meanwhile stops it between blocks of rows; its pass takes the rest.
  const double cpu0 = thread_cpu_ms();
  if (!finish_next_tokens(*f.weights, c, &f.late->v, [&] { return newest_.load(std::memory_order_relaxed) != job.seq; })) return;
  f.late->cpu_ms = thread_cpu_ms() - cpu0;
  f.late->ready.store(true, std::memory_order_release);
  publish(job, std::make_shared<ComputeResult>(res));  // the same maps, now with their predictions
}

void ComputeWorker::finish_products_diff(const Job& job, const ComputeResult& res) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    ready_cv_.wait_for(lock, kDiffAfterPause, [&] { return newest_.load() != job.seq; });
  }
  if (newest_.load(std::memory_order_relaxed) != job.seq) return;  // still typing: the next pass asks again
  const ForwardData& f = *res.fwd;
  const ComputeRequest& r = f.inputs;
  ForwardOptions exact;
  // A decoder's loss from the final stream 16 rows at a time (stream_loss): no (T, V) logits
  // block beside the maps (66 MB at T = 128 on the 1B shape, in every pause).
  const bool streamed = f.weights->trained() && !f.weights->arch.encoder();
  exact.want_logits = f.weights->trained() && !streamed;
  exact.skip_final_mlp = !streamed;
  const std::vector<uint8_t> ablate = r.ablation_mask();  // (L*H)
  if (!ablate.empty()) exact.ablate = &ablate;
  exact.cancelled = [&] { return newest_.load(std::memory_order_relaxed) != job.seq; };
  const auto t0 = std::chrono::steady_clock::now();
  Result<ForwardOutput> f32 = forward(*f.weights, r.cfg, f.batch, exact);
  if (!f32) return;  // cancelled by a keystroke (or refused, as the pass itself would have been)
  if (streamed) f32->loss = stream_loss(*f.weights, f.batch, f32->out, &f32->loss_tokens);
  PrecisionDiff d = precision_diff(f.out, *f32);
  if (!d.has_loss && f.loss_tokens() > 0 && f32->loss_tokens == f.loss_tokens())
    d.has_loss = true, d.loss_approx = f.loss(), d.loss_exact = f32->loss;
  char times[96];
  std::snprintf(times, sizeof times, "this pass %.0f ms, the F32 pass in full %.0f ms; ", f.compute_ms,
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  f.late_diff->text = times + (r.value_weighted ? std::string("no difference shown for value-weighted maps") : precision_diff_text(d));
  f.late_diff->ready.store(true, std::memory_order_release);
  publish(job, std::make_shared<ComputeResult>(res));  // the same maps, now with their difference
}

void ComputeWorker::publish(const Job& job, std::shared_ptr<ComputeResult> res) {
  res->latency_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - job.posted).count();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_ = std::move(res);  // published: const from here on
  }
  ready_cv_.notify_all();
  if (wake_) wake_();
}

// The request's random weights fit the memory budget (whole, as they end up).
static Status check_random_memory(const ComputeRequest& r) {
  return check_random_weights_memory(r.cfg.d_model, r.cfg.num_layers, r.cfg.context, "use a smaller d_model or fewer layers");
}

ComputeWorker::WeightsKey ComputeWorker::weights_key(const ComputeRequest& r) {
  const ModelConfig& c = r.cfg;
  return r.weights.checkpoint.empty() ? WeightsKey{"", c.d_model, c.num_layers, c.seed} : WeightsKey{r.weights.checkpoint, 0, 0, 0};
}

std::shared_ptr<const ModelWeights> ComputeWorker::cached_weights(const ComputeRequest& r) const {
  const WeightsKey key = weights_key(r);
  for (const auto& [k, w] : weights_cache_)
    if (k == key) return w;
  // Random init, fewer layers than a cached model of the same d_model and seed: its first
  // layers are this model's (each layer is drawn from its own keys), and the forward pass
  // reads only cfg.num_layers of them. Shared, not copied.
  if (key.checkpoint.empty())
    for (const auto& [k, w] : weights_cache_)
      if (k.checkpoint.empty() && k.d_model == key.d_model && k.seed == key.seed && k.num_layers >= key.num_layers) return w;
  return nullptr;
}

void ComputeWorker::cache_weights(const ComputeRequest& r, std::shared_ptr<const ModelWeights> w) {
  if (weights_cache_.size() >= kWeightsCacheModels) weights_cache_.clear();
  weights_cache_.emplace_back(weights_key(r), std::move(w));
}

// Random weights of (D, L, seed). Each layer is drawn from its own keys, so a cached model
// of the same D and seed with fewer layers shares them: all of them are copied and the
// missing ones drawn (the layers slider moved up; moved down, cached_weights shares the
// deeper model itself).
ModelWeights ComputeWorker::random_weights_from_cache(int d_model, int num_layers, uint64_t seed) const {
  const ModelWeights* best = nullptr;
  for (const auto& [k, w] : weights_cache_)
    if (k.checkpoint.empty() && k.d_model == d_model && k.seed == seed && (!best || w->num_layers() > best->num_layers())) best = w.get();
  if (!best) return random_weights(d_model, num_layers, seed);
  ModelWeights w;  // random init: no vocabulary, no embeddings; the layers kept are copied (cheaper than drawing them)
  w.d_model = best->d_model;
  w.context = best->context;
  w.ln_eps = best->ln_eps;
  w.source = best->source;
  w.layers.assign(best->layers.begin(), best->layers.begin() + std::min(num_layers, best->num_layers()));
  extend_random_weights(w, num_layers, seed);
  return w;
}

Result<std::shared_ptr<const ModelWeights>> ComputeWorker::weights_for(const ComputeRequest& r) {
  if (r.weights.in_memory) return r.weights.in_memory;
  if (std::shared_ptr<const ModelWeights> w = cached_weights(r)) return w;
  const ModelConfig& c = r.cfg;
  std::shared_ptr<const ModelWeights> w;
  if (r.weights.checkpoint.empty()) {
    if (Status s = check_random_memory(r); !s)
      return s.error();
    w = std::make_shared<const ModelWeights>(random_weights_from_cache(c.d_model, c.num_layers, c.seed));
  } else if (r.weights.loaded) {  // read by the app already (the shipped checkpoints, at start)
    w = r.weights.loaded;
  } else {
    Result<ModelWeights> loaded = load_checkpoint(r.weights.checkpoint);
    if (!loaded) return loaded.error();
    w = std::make_shared<const ModelWeights>(std::move(loaded).value());
  }
  cache_weights(r, w);
  return w;
}

// Wall time of a request's parts, one lap each, into ForwardData::stage_ms.
class PartClock {
 public:
  explicit PartClock(std::vector<std::pair<std::string, double>>& out) : out_(out) {}
  void lap(std::string name) {
    const auto now = std::chrono::steady_clock::now();
    out_.emplace_back(std::move(name), std::chrono::duration<double, std::milli>(now - t_).count());
    t_ = now;
  }
  void restart() { t_ = std::chrono::steady_clock::now(); }  // the time since is not counted

 private:
  std::vector<std::pair<std::string, double>>& out_;
  std::chrono::steady_clock::time_point t_ = std::chrono::steady_clock::now();
};

// The maps and metrics of a forward pass (all its out.L layers), derived once here, not
// every frame: metrics, text induction, token labels, each map's colour peak and its
// max-pooled levels.
static void derive(ForwardData& data, const ComputeRequest& r) {
  const ForwardOutput& o = data.out;
  PartClock clock(data.stage_ms);
  data.metrics = head_metrics(o, data.batch, mask_kind(r.cfg));
  clock.lap("metrics");
  data.text_induction = text_induction_scores(o, data.batch);
  clock.lap("text induction");
  // One sentence of a decoder: the forward's own loss (the same sum in the same order), not a
  // second pass over its (T, V) logits (14 ms a keystroke on the 1B shape).
  const bool own = o.B == 1 && data.weights && !data.weights->arch.encoder() && o.loss_tokens > 0 && o.loss_tokens == data.batch.lengths[0] - 1;
  data.sentence_loss = own ? std::vector<double>{o.loss} : sentence_losses(o, data.batch);  // empty without logits
  clock.lap("sentence loss");
  for (int b = 0; b < data.batch.B(); ++b) {
    data.labels.push_back(token_labels(data.batch.sentences[b].tokens));
  }
  clock.lap("token labels");
  for (int l = 0; l < o.L; ++l)
    for (int b = 0; b < o.B; ++b)
      for (int h = 0; h < o.Hw; ++h) data.map_max.push_back(map_peak(o.weights(l, b, h), o.T, data.batch.lengths[b], mask_kind(r.cfg)));
  clock.lap("map peaks");
  // Long maps are drawn from max-pooled levels (heatmap_renderer.h), built here, off the UI thread.
  // data.levels may hold a retired pass's levels (take_spare): written into their storage.
  const int maps = o.L * o.B * o.Hw;
  data.levels.resize(static_cast<size_t>(maps));
  if (o.T > kMapLevelsMinSide) {
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads_for(4.0 * maps * o.T * o.T))
    for (int i = 0; i < maps; ++i) {
      const int b = (i / o.Hw) % o.B, len = data.batch.lengths[b];
      max_pool_levels_into(data.levels[i], o.attention.data() + static_cast<size_t>(i) * o.T * o.T, len, len, o.T, kMapLevelsMinSide);
    }
  } else {
    data.levels.assign(static_cast<size_t>(maps), MapLevels{});
  }
  clock.lap("pooled levels");
}

// job: where a long request publishes its visible layer first; nullptr: only the complete pass
// (the Compare tab's correct model, which is drawn beside a complete result).
// CPU time of the calling thread, in ms.
static double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

Result<std::shared_ptr<const ForwardData>> ComputeWorker::forward_data(const Job* job, const ComputeRequest& r, uint64_t seq) {
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_ms();

  const size_t fhash = r.forward_hash();
  std::shared_ptr<const ForwardData> fwd;
  for (auto it = forward_cache_.begin(); it != forward_cache_.end(); ++it)
    if ((*it)->inputs_hash == fhash && (*it)->inputs.same_forward(r) && !(*it)->next_pending()) {  // pending: computed again
      fwd = *it;
      forward_cache_.splice(forward_cache_.begin(), forward_cache_, it);
      break;
    }
  if (!fwd) {
    const int visible = std::clamp(r.visible_layer, 0, r.cfg.num_layers - 1);
    // Random weights not drawn yet, for a model deeper than the layer on screen: draw the
    // layers up to it first, show them, then draw the rest (each layer has its own keys, so
    // the model is the same as one drawn whole).
    std::shared_ptr<const ModelWeights> model, first_layers;
    const bool random = r.weights.random_init();
    const double rest_normals = 12.0 * r.cfg.d_model * r.cfg.d_model * (r.cfg.num_layers - visible - 1);
    if (job && random && rest_normals >= kDrawFirstNormals && !cached_weights(r)) {
      if (Status s = check_random_memory(r); !s)
        return s.error();
      first_layers = std::make_shared<const ModelWeights>(random_weights_from_cache(r.cfg.d_model, visible + 1, r.cfg.seed));
    } else {
      Result<std::shared_ptr<const ModelWeights>> w = weights_for(r);
      if (!w) return w.error();
      model = *w;
    }
    const ModelWeights& batch_weights = model ? *model : *first_layers;  // the tokenizer is the same in both
    auto data = std::make_shared<ForwardData>();
    data->stage_ms.emplace_back("cache lookup + weights", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    PartClock clock(data->stage_ms);
    data->inputs = r;
    data->inputs.trace.reset();
    data->inputs_hash = fhash;
    data->weights = model;
    if (Status s = check_batch_memory(r.lines, r.cfg); !s) return s.error();
    data->batch = make_batch(r.lines, r.cfg, batch_weights, &r.extras);
    clock.lap("tokenize");
    ForwardOptions fo;
    fo.keep_layer_io = true;
    fo.want_logits = batch_weights.trained();
    fo.next_tokens_k = kKeptNextTokens;  // through the K/V cache: each row's next tokens, not its logits
    fo.skip_final_mlp = true;  // the app reads maps and, for trained models, the loss (which keeps the MLP)
    if (r.bf16_products) {  // View > BF16 products, where they can run (else the note says why not)
      data->products_note = bf16_products_refusal(batch_weights);
      fo.bf16_products = data->products_note.empty();
    }
    if (r.int8_products) {  // View > 8-bit products: the same, their difference later (finish_products_diff)
      data->int8_note = int8_products_refusal(batch_weights);
      fo.int8_products = data->int8_note.empty();
      if (fo.int8_products) data->late_diff = std::make_shared<ForwardData::LateDiff>();
    }
    const std::vector<uint8_t> ablate = r.ablation_mask();  // (L*H)
    if (!ablate.empty()) fo.ablate = &ablate;
    fo.cancelled = [this, seq] {  // a newer request makes this one pointless (latest wins); asked between heads
      return newest_.load(std::memory_order_relaxed) != seq;
    };
    // A long request shows its visible layer first: layers 0 .. visible_layer, their maps
    // and metrics, published at once; the complete pass follows (and recomputes those
    // layers: at most visible_layer + 1 of L, against a wait for all of them).
    const double tokens = static_cast<double>(data->batch.B()) * data->batch.T, D = r.cfg.d_model;
    const double flops = r.cfg.num_layers * tokens * (24.0 * D * D + 4.0 * data->batch.T * D);
    // Not when the whole request will be refused (its maps would exceed the memory limit):
    // the refusal comes at once, and no partial result stands in for it.
    const int64_t all_maps_bytes = int64_t(4) * r.cfg.num_layers * data->batch.B() * weight_heads(mha_options(r.cfg)) *
                                   data->batch.T * data->batch.T;
    // A request that shares a prefix with the model's last one computes only its new rows
    // (kv_cache.h): no need to show a layer first.
    KvCache* kv = model ? &kv_cache_for(model) : nullptr;
    const bool incremental = kv && kv_reusable_rows(*kv, *model, r.cfg, data->batch, fo) > 0;
    if (job && visible + 1 < r.cfg.num_layers && (flops > kStagedFlops || first_layers) && all_maps_bytes <= kMaxAttentionBytes &&
        !r.value_weighted && !incremental) {
      auto first = std::make_shared<ForwardData>(*data);
      const ModelWeights& w1 = model ? *model : *first_layers;
      first->weights = model ? model : first_layers;
      ModelConfig upto = r.cfg;
      upto.num_layers = visible + 1;
      ForwardOptions fo1 = fo;
      fo1.want_logits = false;
      std::vector<uint8_t> ablate1;
      if (!ablate.empty()) {
        ablate1.assign(ablate.begin(), ablate.begin() + static_cast<size_t>(upto.num_layers) * r.cfg.num_heads);
        fo1.ablate = &ablate1;
      }
      Result<ForwardOutput> out1 = forward(w1, upto, first->batch, fo1);
      if (!out1) return out1.error();
      first->out = std::move(out1).value();
      first->complete = false;
      derive(*first, r);
      first->source = describe_source(w1, r.cfg);
      first->passport = make_passport(r.cfg, first->batch.B(), first->batch.T, w1.trained() ? w1.vocab_size() : 0, w1.context, &w1.arch);
      first->passport.storage = weight_storage(w1);
      first->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      first->compute_cpu_ms = thread_cpu_ms() - cpu0;
      auto partial = std::make_shared<ComputeResult>();
      partial->request = r;
      partial->seq = seq;
      partial->fwd = first;
      publish(*job, partial);
    }
    if (first_layers) {  // the rest of the layers, and the whole model cached as if drawn at once
      // (even when a newer request has arrived: it most likely needs the same model)
      ModelWeights whole = *first_layers;
      extend_random_weights(whole, r.cfg.num_layers, r.cfg.seed);
      model = std::make_shared<const ModelWeights>(std::move(whole));
      cache_weights(r, model);
      data->weights = model;
    }
    const ModelWeights& mw = *model;
    fo.kv_cache = &kv_cache_for(model);
    ForwardOutput spare = take_spare(data->levels);
    fo.reuse = &spare;
    clock.lap(spare.attention.empty() ? "K/V prefix match (no spare output)" : "K/V prefix match");
    // An append of a few rows (typing at the end) runs to its end whatever comes meanwhile:
    // the newer request most likely extends it, and then computes only its own new rows from
    // the cache this one fills. Cancelled, its rows were computed again by the next request:
    // on the 1B shape, whose append takes about the gap between two keystrokes, each keystroke
    // cancelled the one before and none was shown until the typing stopped.
    ForwardOptions run = fo;
    if (const int kept = kv_reusable_rows(*fo.kv_cache, mw, r.cfg, data->batch, fo); kept > 0 && data->batch.T - kept <= kFinishAppendRows)
      run.cancelled = nullptr;
    // Through the K/V cache: the maps published first, the next tokens after (finish_late).
    run.defer_next_tokens = job && static_cast<double>(mw.vocab_size()) * mw.d_model >= kDeferLogitsWeights && kv_cacheable(mw, r.cfg, data->batch, run);
    StageTimes st;
    run.times = &st;
    const auto pass0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> out = forward(mw, r.cfg, data->batch, run);
    if (!out) return out.error();
    data->out = std::move(out).value();
    if (data->out.next_pending) data->late = std::make_shared<ForwardData::Late>();
    clock.lap("forward (wall)");
    if (fo.bf16_products) {  // the same pass in F32, in full, for the difference shown beside the maps
      const auto pass1 = std::chrono::steady_clock::now();
      ForwardOptions exact = fo;
      exact.bf16_products = exact.int8_products = false;
      exact.kv_cache = nullptr;
      exact.reuse = nullptr;
      Result<ForwardOutput> f32 = forward(mw, r.cfg, data->batch, exact);
      if (!f32) return f32.error();
      data->products_diff = precision_diff(data->out, *f32);
      const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
      char times[96];
      std::snprintf(times, sizeof times, "this pass %.0f ms, F32 %.0f ms", ms(pass0, pass1), ms(pass1, std::chrono::steady_clock::now()));
      data->products_note = times;
      clock.lap("F32 pass (BF16 products' difference)");
    }
    for (int s = 0; s < static_cast<int>(Stage::kCount); ++s)
      if (st.ms(static_cast<Stage>(s)) > 0) data->stage_ms.emplace_back(std::string("  ") + stage_name(static_cast<Stage>(s)), st.ms(static_cast<Stage>(s)));
    data->rows_computed = data->out.kv_computed, data->rows_reused = data->out.kv_reused;
    // Through the K/V cache: it keeps no maps of its own (KvCache::maps_lent), the next request
    // copies its kept rows from this output's, which the forward cache holds anyway.
    const bool lend = data->out.kv_computed > 0;
    if (lend && !r.value_weighted) fo.kv_cache->lend_maps(std::shared_ptr<const void>(data, data->out.attention.data()), data->out.attention.data(), data->out.T);
    if (r.value_weighted && !data->batch.empty()) {  // the maps shown: value-weighted shares (contrib.h)
      Result<std::vector<float>> vw = value_weighted_shares(mw, r.cfg, data->batch, ablate.empty() ? nullptr : &ablate, fo.cancelled);
      if (!vw) return vw.error();
      auto weights = std::make_shared<const std::vector<float>>(std::exchange(data->out.attention, std::move(vw).value()));
      if (lend) fo.kv_cache->lend_maps(weights, weights->data(), data->out.T);  // the attention weights, not the shares
    }
    data->passport = make_passport(r.cfg, data->batch.B(), data->batch.T, mw.trained() ? mw.vocab_size() : 0, mw.context, &mw.arch);
    data->passport.storage = weight_storage(mw);
    clock.lap("passport");
    derive(*data, r);
    clock.restart();  // derive() laps its own parts
    data->source = describe_source(mw, r.cfg);
    clock.lap("source");
    data->compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    data->compute_cpu_ms = thread_cpu_ms() - cpu0;
    fwd = data;
    // Typing at the end: the pass this one extends (the model's last, all but its last row
    // taken from the K/V cache) is dropped from the cache, so the next keystroke writes into
    // its buffers (take_spare) instead of faulting in fresh ones: 134 MB on the 1B shape,
    // ~0.4 s of page faults on this VM per keystroke, and the cache held three such passes
    // that the K/V cache answers anyway (going back recomputes one row).
    if (!forward_cache_.empty() && data->out.kv_reused > 0) {
      const ForwardData& prev = *forward_cache_.front();
      if (prev.weights == data->weights && prev.inputs.cfg == r.cfg && prev.out.B == 1 && data->out.kv_reused >= prev.out.T - 1)
        retired_.splice(retired_.end(), forward_cache_, forward_cache_.begin());
    }
    // Keep recent results, within the budget of attention maps.
    forward_cache_.push_front(fwd);
    size_t bytes = 0, kept = 0;
    for (auto it = forward_cache_.begin(); it != forward_cache_.end(); ++it, ++kept) {
      bytes += (*it)->out.bytes();
      if (kept >= kForwardCacheEntries || (kept > 0 && bytes > kForwardCacheBytes)) {
        retired_.splice(retired_.end(), forward_cache_, it, forward_cache_.end());
        break;
      }
    }
    // Three: while the worker computes the next pass, the screen still shows the one before
    // the newest (the newest waits to be taken), and one before that when the screen skipped
    // a result or has not drawn since (its textures hold their pass until the next frame):
    // the oldest is the one free to reuse. (With one kept, 7 of 17 keystrokes on the 1B shape
    // found none free and faulted in 134 MB; with two, 5 of 16.)
    while (retired_.size() > 3) retired_.pop_front();  // held elsewhere: freed by whoever holds it
  }
  return fwd;
}

bool ComputeWorker::circuits_from_cache(ComputeResult& res, const ForwardData& fwd, const ComputeRequest& r) const {
  const InductionKey key{r.cfg, r.weights.checkpoint, r.weights.in_memory != nullptr, r.weights.in_memory_id};
  const auto m = std::find_if(circuit_cache_.begin(), circuit_cache_.end(), [&](const CircuitModel& c) { return c.key == key; });
  if (m == circuit_cache_.end()) return false;
  const HeadId id{r.circuits->layer, r.circuits->head};
  const auto h = std::find_if(m->heads.begin(), m->heads.end(), [&](const CircuitHead& c) { return c.id == id; });
  if (h == m->heads.end()) return false;
  res.composition = h->composition;
  res.circuit_error = h->error;
  if (h->circuit) {  // restricted to the sentence's tokens: D*dh per token, cheap beside the maps
    std::vector<int> ids;
    for (const Token& t : fwd.batch.sentences[static_cast<size_t>(std::clamp(r.circuits->batch, 0, fwd.batch.B() - 1))].tokens) ids.push_back(t.id);
    res.circuit = circuit_on_tokens(*h->circuit, *fwd.weights, r.cfg, ids);
  }
  return true;
}

void ComputeWorker::compute_circuits(const ModelWeights& w, const ComputeRequest& r) {
  const InductionKey key{r.cfg, r.weights.checkpoint, r.weights.in_memory != nullptr, r.weights.in_memory_id};
  auto m = std::find_if(circuit_cache_.begin(), circuit_cache_.end(), [&](const CircuitModel& c) { return c.key == key; });
  if (m == circuit_cache_.end()) {
    circuit_cache_.push_front(CircuitModel{key, std::nullopt, {}});
    if (circuit_cache_.size() > kCircuitModels) circuit_cache_.pop_back();
  } else {
    circuit_cache_.splice(circuit_cache_.begin(), circuit_cache_, m);
  }
  CircuitModel& model = circuit_cache_.front();
  CircuitHead head{HeadId{r.circuits->layer, r.circuits->head}, std::nullopt, "", nullptr};
  Result<CompositionRow> row = composition_into(w, r.cfg, head.id.layer, head.id.head);
  if (row) head.composition = std::make_shared<const CompositionRow>(std::move(row).value());
  if (w.trained() && !model.ute) model.ute = vocab_gram(w);
  Result<HeadCircuit> c = head_circuit_weights(w, r.cfg, head.id.layer, head.id.head, model.ute ? *model.ute : Eigen::MatrixXd());
  if (c) head.circuit = std::move(c).value();
  else head.error = c.error().message;  // random init: no vocabulary (the composition still is)
  if (!row) head.error = row.error().message;
  if (model.heads.size() >= kCircuitHeadsPerModel) model.heads.erase(model.heads.begin());
  model.heads.push_back(std::move(head));
}

ForwardOutput ComputeWorker::take_spare(std::vector<MapLevels>& levels) {
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    // Only this list holds it, and only this thread could hand it out again: nobody can
    // start reading it now. The fence orders the last reader's reads (before its release of
    // the count) before the writes into its buffers.
    if (it->use_count() != 1) continue;
    std::atomic_thread_fence(std::memory_order_acquire);
    ForwardData& d = const_cast<ForwardData&>(**it);  // made non-const (make_shared<ForwardData>)
    ForwardOutput spare = std::move(d.out);
    levels = std::move(d.levels);
    retired_.erase(it);
    // Of the other passes only this list holds, one is kept for the next keystroke and the rest
    // freed. The pass before this one is often still on screen when the next keystroke comes
    // (the heads' textures hold it until the new maps are uploaded, later when frames are slow):
    // with none kept, 2-3 of 42 keystrokes on the 1B shape found no free pass and faulted in
    // fresh maps (~28 MB, 12-35 ms). A kept pass holds its maps, levels and the K/V cache's rows
    // its views read (~40 MB at T = 128 on the 1B shape).
    bool kept_one = false;
    std::erase_if(retired_, [&](const std::shared_ptr<const ForwardData>& d) { return d.use_count() == 1 && std::exchange(kept_one, true); });
    return spare;
  }
  return {};
}

KvCache& ComputeWorker::kv_cache_for(const std::shared_ptr<const ModelWeights>& w) {
  auto it = std::find_if(kv_caches_.begin(), kv_caches_.end(), [&](const auto& e) { return e.first == w; });
  if (it == kv_caches_.end()) {
    kv_caches_.emplace_front(w, std::make_shared<KvCache>());
    kv_caches_.front().second->maps_lent = true;  // forward_data lends each output's maps
    if (kv_caches_.size() > kKvCacheModels) kv_caches_.pop_back();
  } else {
    kv_caches_.splice(kv_caches_.begin(), kv_caches_, it);
  }
  return *kv_caches_.front().second;
}

std::shared_ptr<ComputeResult> ComputeWorker::compute(const Job& job, const ComputeRequest& r, uint64_t seq) {
  auto res = std::make_shared<ComputeResult>();
  res->request = r;
  res->seq = seq;
  // 1. The forward pass, from the cache when these inputs were seen before; and for the
  // Compare tab the correct model's, on the same inputs with every pitfall off.
  Result<std::shared_ptr<const ForwardData>> got = forward_data(&job, r, seq);
  if (!got) {
    res->error = got.error();
    return res;
  }
  const std::shared_ptr<const ForwardData> fwd = *got;
  res->fwd = fwd;
  if (r.compare && r.cfg.pitfalls.any()) {
    ComputeRequest correct = r;
    correct.cfg.pitfalls = Pitfalls{};
    correct.trace.reset();
    correct.compare = false;
    Result<std::shared_ptr<const ForwardData>> base = forward_data(nullptr, correct, seq);
    if (!base) {
      res->error = base.error();
      return res;
    }
    res->baseline = *base;
  }

  if (r.compare_b) {  // another model as B: the same text, its own config, weights and tokenizer
    ComputeRequest b;
    b.lines = r.lines;
    b.cfg = r.compare_b->cfg;
    b.weights = r.compare_b->weights;
    b.visible_layer = 0;
    Result<std::shared_ptr<const ForwardData>> base = forward_data(nullptr, b, seq);
    if (!base && base.error().kind == ErrorKind::Cancelled) {
      res->error = base.error();
      return res;
    }
    if (base) res->baseline = *base;
    else res->compare_error = base.error().message;  // A stays on screen; the tab says why B could not run
  }

  // 2. The step-through of the selected head, on the cached layer input.
  if (r.trace) trace_head(*res, *fwd, r);
  // 2b. The clicked prediction's logit, attributed to every head (on this thread, never the UI's).
  if (r.attribution && fwd->weights) {
    const std::vector<uint8_t> ablate = r.ablation_mask();  // (L*H), empty: none off
    Result<Attribution> a = direct_attribution(*fwd->weights, r.cfg, fwd->batch, r.attribution->batch, r.attribution->target,
                                               ablate.empty() ? nullptr : &ablate);
    if (a) res->attribution = std::move(*a);
    else res->attribution_error = a.error().message;
  }
  // 2c. The Contributions tab's rollout and detector scores, from the maps computed (cheap beside them).
  if (r.rollout && !fwd->batch.empty()) {
    const int b = std::clamp(r.rollout->batch, 0, fwd->batch.B() - 1);
    res->rollout = rollout(fwd->out, fwd->batch, b, fwd->out.L - 1, r.rollout->head < fwd->out.Hw ? r.rollout->head : -1);
  }
  if (r.lens && fwd->weights && !fwd->batch.empty()) {
    Result<LogitLens> lens = logit_lens(*fwd->weights, r.cfg, fwd->batch, std::clamp(r.lens->batch, 0, fwd->batch.B() - 1), r.lens->target,
                                        r.lens->k, [this, seq] { return newest_.load(std::memory_order_relaxed) != seq; });
    if (lens) res->lens = std::move(*lens);
    else res->lens_error = lens.error().message;
  }
  if (r.overview && !fwd->batch.empty())
    res->overview = head_overview(fwd->out, fwd->batch, std::clamp(r.overview->batch, 0, fwd->batch.B() - 1), mask_kind(r.cfg));
  if (r.offsets && fwd->weights && !fwd->batch.empty())
    res->offsets = offset_profile(*fwd->weights, r.cfg, fwd->out, fwd->batch, std::clamp(r.offsets->batch, 0, fwd->batch.B() - 1));
  // The Circuits view: the head's parts without text from the cache per model, else computed
  // after the maps are published (a model's first head reads its whole vocabulary).
  if (r.circuits && fwd->weights && !fwd->batch.empty() && !circuits_from_cache(*res, *fwd, r)) {
    publish(job, res);
    if (newest_.load(std::memory_order_relaxed) != seq) {  // a newer request computes them if it still needs them
      auto dropped = std::make_shared<ComputeResult>();
      dropped->error = Error{ErrorKind::Cancelled, "The circuits were cancelled by a newer request."};
      return dropped;
    }
    compute_circuits(*fwd->weights, r);
    res = std::make_shared<ComputeResult>(*res);
    if (!circuits_from_cache(*res, *fwd, r)) res->circuit_error = "The circuits could not be kept.";
  }
  if (r.detectors && !fwd->batch.empty()) {
    const int b = std::clamp(r.detectors->batch, 0, fwd->batch.B() - 1);
    res->detector_scores = detector_scores(fwd->out, fwd->batch, b, mask_kind(r.cfg), r.detectors->detector, &r.detectors->painted);
  }
  // 2d. Activation patching: from its cache, else published after the maps (the view shows
  // the progress meanwhile), then run here, head by head, cancelled by a newer request.
  if (r.patch && fwd->weights) {
    const PatchKey key{r.cfg, r.weights.checkpoint, r.weights.in_memory.get(), r.weights.in_memory_id, *r.patch};
    const auto hit = std::find_if(patch_cache_.begin(), patch_cache_.end(), [&](const auto& e) { return e.first == key; });
    if (hit != patch_cache_.end()) {
      res->patch = hit->second;
    } else {
      publish(job, res);
      Result<std::shared_ptr<const PatchOutcome>> p = run_patch(r, *fwd->weights, seq);
      if (!p) {
        auto dropped = std::make_shared<ComputeResult>();
        dropped->error = p.error();  // Cancelled: a newer request runs next
        return dropped;
      }
      if (patch_cache_.size() >= kPatchCacheEntries) patch_cache_.erase(patch_cache_.begin());
      patch_cache_.emplace_back(key, *p);
      res = std::make_shared<ComputeResult>(*res);
      res->patch = *p;
    }
  }
  // 3. The induction probe, once per model and config: from the cache, or published after
  // the maps (the frame that waits for this request shows them without it).
  const InductionKey ikey{r.cfg, r.weights.checkpoint, r.weights.in_memory != nullptr, r.weights.in_memory_id};
  const auto cached = std::find_if(induction_cache_.begin(), induction_cache_.end(), [&](const auto& e) { return e.first == ikey; });
  if (cached != induction_cache_.end()) {
    res->induction = cached->second;
    return res;
  }
  if (!fwd->weights) return res;  // no model (an empty batch never needs one)
  publish(job, res);
  if (newest_.load(std::memory_order_relaxed) != seq) {  // a newer request computes the probe if it still needs it
    auto dropped = std::make_shared<ComputeResult>();
    dropped->error = Error{ErrorKind::Cancelled, "The induction probe was cancelled by a newer request."};
    return dropped;
  }
  auto with_probe = std::make_shared<ComputeResult>(*res);
  with_probe->induction = induction_scores(*fwd->weights, r.cfg, make_induction_probe(r.cfg, *fwd->weights, 20, r.cfg.seed));
  if (induction_cache_.size() >= kInductionCacheEntries) induction_cache_.clear();
  induction_cache_.emplace_back(ikey, with_probe->induction);
  return with_probe;
}

// The position p of sentence 0 where the clean and corrupted runs' logit differences part
// most: with A the clean run's top prediction at p and B the corrupted run's (its next one
// when that is A), |(A - B)_clean - (A - B)_corrupted|; the later position on a tie.
// logits: (T, V) each run's, as forward() leaves them with want_logits.
static int most_different_position(const ForwardOutput& clean, const ForwardOutput& corrupt, int n) {
  int best = n - 1;
  double best_gap = -1;
  for (int t = 0; t < n; ++t) {
    const auto c = clean.logits.row(t), k = corrupt.logits.row(t);  // (V)
    Eigen::Index a = 0, b0 = 0, b1 = -1;
    c.maxCoeff(&a);
    k.maxCoeff(&b0);
    if (b0 == a) {  // the corrupted run's next most likely
      for (Eigen::Index v = 0; v < k.size(); ++v)
        if (v != a && (b1 < 0 || k(v) > k(b1))) b1 = v;
    } else {
      b1 = b0;
    }
    if (b1 < 0) continue;
    const double gap = std::abs((static_cast<double>(c(a)) - c(b1)) - (static_cast<double>(k(a)) - k(b1)));
    if (gap >= best_gap) best_gap = gap, best = t;
  }
  return best;
}

Result<std::shared_ptr<const PatchOutcome>> ComputeWorker::run_patch(const ComputeRequest& r, const ModelWeights& w, uint64_t seq) {
  const PatchRequest& p = *r.patch;
  auto o = std::make_shared<PatchOutcome>();
  o->inputs = p;
  const std::function<bool()> cancelled = [this, seq] { return newest_.load(std::memory_order_relaxed) != seq; };
  const Batch clean = make_batch({p.clean}, r.cfg, w), corrupt = make_batch({p.corrupted}, r.cfg, w);
  for (const Batch* b : {&clean, &corrupt}) {
    std::vector<std::string>& labels = b == &clean ? o->clean_tokens : o->corrupted_tokens;
    if (!b->empty()) labels = token_labels(b->sentences[0].tokens);
  }
  if (!w.trained()) {
    o->error = "Patching measures a logit difference, so it needs a trained model: random init has no vocabulary.";
    return std::shared_ptr<const PatchOutcome>(o);
  }
  if (w.arch.encoder() && !w.arch.mlm_head) {
    o->error = "Patching measures a logit difference, and this " + w.arch.name +
               " has no masked-LM head (a ...Model checkpoint, not ...ForMaskedLM): it has no logits to patch.";
    return std::shared_ptr<const PatchOutcome>(o);
  }
  if (clean.empty() || corrupt.empty()) {
    o->error = clean.empty() ? "The clean sentence (the text) has no tokens." : "Type a corrupted sentence to patch from the clean one.";
    return std::shared_ptr<const PatchOutcome>(o);
  }
  const int n = clean.lengths[0], m = corrupt.lengths[0];
  // -1: the last token; on an encoder the clean sentence's first [MASK], where its head predicts.
  int pos = p.position < 0 ? n - 1 : p.position;
  bool at_mask = false;
  if (p.position < 0 && w.arch.encoder())
    for (int t = 0; t < n; ++t)
      if (clean.sentences[0].tokens[t].id == mask_token_id(w)) {
        pos = t;
        at_mask = true;
        break;
      }
  ForwardOptions fo;
  fo.want_logits = true;
  fo.cancelled = cancelled;
  Result<ForwardOutput> co = forward(w, r.cfg, clean, fo);
  if (!co) return co.error();
  Result<ForwardOutput> ko = forward(w, r.cfg, corrupt, fo);
  if (!ko) return ko.error();
  if (pos < n) o->clean_top = top_k_next(w, *co, 0, pos, 10);
  if (pos < m) o->corrupted_top = top_k_next(w, *ko, 0, pos, 10);
  if (n != m) {
    o->error = "The clean sentence has " + std::to_string(n) + " tokens and the corrupted one " + std::to_string(m) +
               ": patching needs the same token count (edit one until they match).";
    return std::shared_ptr<const PatchOutcome>(o);
  }
  // No position chosen (and no clicked chip, compute_request): where the two runs differ most,
  // not the last token, where they may hardly differ and every recovery would be noise.
  if (p.position < 0 && !at_mask) {
    pos = most_different_position(*co, *ko, n);
    o->clean_top = top_k_next(w, *co, 0, pos, 10);
    o->corrupted_top = top_k_next(w, *ko, 0, pos, 10);
  }
  if (pos >= n || o->clean_top.empty() || o->corrupted_top.empty()) {
    o->error = "Position " + std::to_string(pos) + " is outside the sentence (" + std::to_string(n) + " tokens).";
    return std::shared_ptr<const PatchOutcome>(o);
  }
  o->target.position = pos;
  o->target.token_a = p.token_a >= 0 ? p.token_a : o->clean_top[0].id;
  // The corrupted run's top prediction; when it is A too, its next one (a difference of A with itself is 0).
  o->target.token_b = p.token_b >= 0 ? p.token_b
                      : o->corrupted_top[0].id != o->target.token_a || o->corrupted_top.size() < 2 ? o->corrupted_top[0].id
                                                                                                  : o->corrupted_top[1].id;
  const int heads = r.cfg.num_layers * r.cfg.num_heads, total = heads + (p.per_position ? n : 0);
  patch_done_ = 0;
  patch_total_ = total;
  struct Reset {  // no patching in progress once this one ends, however it ends
    ComputeWorker* w;
    ~Reset() { w->patch_done_ = 0, w->patch_total_ = 0; }
  } reset{this};
  Result<PatchResult> ph = patch_heads(w, r.cfg, clean, corrupt, o->target, -1, cancelled, [this](int done, int) { patch_done_ = done; });
  if (!ph && ph.error().kind == ErrorKind::Cancelled) return ph.error();
  if (!ph) {
    o->error = ph.error().message;
    return std::shared_ptr<const PatchOutcome>(o);
  }
  o->heads = std::move(ph).value();
  if (p.per_position) {
    Result<std::vector<float>> pp = patch_head_positions(w, r.cfg, clean, corrupt, o->target, p.per_position->layer, p.per_position->head,
                                                         cancelled, [this, heads](int done, int) { patch_done_ = heads + done; });
    if (!pp && pp.error().kind == ErrorKind::Cancelled) return pp.error();
    if (pp) o->per_position = std::move(pp).value();
    else o->error = pp.error().message;
  }
  return std::shared_ptr<const PatchOutcome>(o);
}

// The step-through of r.trace's head, on the forward pass's kept layer input.
void ComputeWorker::trace_head(ComputeResult& res, const ForwardData& fwd, const ComputeRequest& r) {
  const ForwardOutput& out = fwd.out;
  const TraceRequest& tr = *r.trace;
  if (!fwd.batch.empty() && tr.layer >= 0 && tr.layer < out.L && tr.batch >= 0 && tr.batch < out.B && tr.head >= 0 &&
      tr.head < out.H) {
    MhaOptions mo = mha_options(r.cfg, *fwd.weights, tr.layer);  // the family's RoPE, window, scale
    mo.lengths = fwd.batch.lengths.data();
    const std::vector<uint8_t> ablate = r.ablation_mask();  // (L*H)
    if (!ablate.empty()) mo.ablated = ablate.data() + static_cast<size_t>(tr.layer) * out.H;
    const MatR x_b = out.attn_in[tr.layer].middleRows(static_cast<Eigen::Index>(tr.batch) * out.T, out.T);  // (T, D)
    res.trace = head_trace(fwd.weights->layers[tr.layer], x_b, fwd.batch.lengths[tr.batch], tr.head, mo);
    const HeadTrace& h = *res.trace;
    for (const MatR* m : trace_step_matrices(h)) {
      float lo = std::numeric_limits<float>::infinity(), hi = -lo;
      for (int t = 0; t < h.len; ++t)
        for (Eigen::Index c = 0; c < m->cols(); ++c)
          if (const float v = (*m)(t, c); std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      res.trace_range.emplace_back(lo <= hi ? lo : 0.0f, lo <= hi ? hi : 0.0f);
      const bool square = m->size() > 0 && m->rows() == m->cols() && (m == &h.scores || m == &h.scaled || m == &h.capped || m == &h.masked || m == &h.weights);  // (T, T)
      res.trace_levels.push_back(square ? max_pool_levels(m->data(), h.len, static_cast<int>(m->cols()), static_cast<int>(m->cols()), kMapLevelsMinSide,
                                                           m == &h.weights ? Pool::Max : Pool::Magnitude)
                                         : MapLevels{});
    }
  }
}

}  // namespace headmap
