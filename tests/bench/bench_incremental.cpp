// bench_incremental.cpp: the incremental forward (core/model/kv_cache.h) against the full
// one. Opens a model directory (load_hf_model: any family) or the shipped default, and times,
// with the app's options (every map, each layer's input and output, logits on a trained
// model):
//   full_ms    the median full forward at PREFIX + 1 tokens;
//   append_ms  the median incremental forward of one token appended after PREFIX (the
//              PREFIX rows are in the cache, put there untimed before each run);
//   max_abs_diff  the largest difference between the two over every map (weights in [0, 1]);
//   logits_max_rel_diff  over the logits, relative to the largest logit's magnitude;
//   append_one_thread_ms, append_team_ms  the cache's recent time of an append's split
//              products each way its weights can be streamed (KvCache::SplitTiming: the
//              products only, FewRowSplit::products_ms), and how often the team ran (the
//              prefix's passes, which rewrite its last row, count too);
//   append_settled_ms  the median append once both ways have their first kKept tries (the
//              faster way, and every 16th the other: as the app types), -1 before that;
//   appends    each timed append in order: [ms, way], way 1 = the team, 0 = one thread (the
//              first appends learn which way is faster, KvCache::SplitTiming);
//   threads    the compute threads (OMP_NUM_THREADS, default every core); ids  the PREFIX + 1
//              ids run (the first PREFIX are headmap-bench-families' at T = PREFIX).
// Prints one JSON line; then, on stderr, where the full forward's and the append's time goes
// stage by stage (core/model/stage_times.h), from separate runs with the timers on.
//
//   headmap-bench-incremental DIR|default PREFIX [seconds=3] [--fresh]
//
// Each kind of run writes into the buffers of its last one (ForwardOptions::reuse), as the
// app's worker does across keystrokes; --fresh gives every forward fresh buffers (the old
// way), so the page faults it costs show in the stage table.
//
// B = 1, T = PREFIX + 1 tokens, D = d_model, H = heads, L = layers, V = vocab
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/io/checkpoint.h"
#include "core/io/hf_model.h"
#include "core/math/gemm.h"
#include "core/math/rng.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "core/model/stage_times.h"
#include "tests/bench/bench_args.h"

using namespace headmap;

namespace {
using bench::median;
using bench::ms_since;

Batch batch_of(const std::vector<int>& ids) {  // one sentence of these vocabulary ids
  Batch b;
  b.tokenizer = TokenizerKind::Bpe;
  TokenizedText tt;
  for (int id : ids) tt.tokens.push_back(Token{"", id, false});
  tt.total_tokens = static_cast<int>(ids.size());
  b.sentences.push_back(std::move(tt));
  b.lengths.push_back(static_cast<int>(ids.size()));
  b.source_line.push_back(0);
  b.T = static_cast<int>(ids.size());
  return b;
}


[[noreturn]] void fail(const std::string& m) { bench::fail("headmap-bench-incremental", m); }
}  // namespace

int main(int argc_all, char** argv_all) {
  bool fresh = false;
  const std::vector<char*> argv = bench::positional_args(argc_all, argv_all, "--fresh", &fresh);
  const int argc = static_cast<int>(argv.size());
  if (argc < 3) {
    std::fprintf(stderr, "usage: headmap-bench-incremental DIR|default PREFIX [seconds=3] [--fresh]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int prefix = std::atoi(argv[2]);
  const double budget_ms = (argc > 3 ? std::atof(argv[3]) : 3.0) * 1e3;
  if (prefix < 1) fail("PREFIX must be at least 1.");
  Result<ModelWeights> w = dir == "default" ? load_checkpoint(std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h4-l2.safetensors")
                                            : load_hf_model(dir);
  if (!w) fail(w.error().message);
  if (!w->trained()) fail("the model has no vocabulary to draw token ids from.");
  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  base.context = kMaxContext;
  const ModelConfig cfg = config_for_weights(*w, base);
  if (prefix + 1 > cfg.context) fail("PREFIX + 1 = " + std::to_string(prefix + 1) + " is longer than the model's context of " + std::to_string(cfg.context) + ".");

  std::vector<int> ids;
  Rng r(2026);
  for (int t = 0; t <= prefix; ++t) ids.push_back(r.below(w->vocab_size()));
  const Batch whole = batch_of(ids);
  const Batch head = batch_of(std::vector<int>(ids.begin(), ids.end() - 1));

  ForwardOptions fo;  // as the app's compute worker asks
  fo.keep_layer_io = true;
  fo.want_logits = true;
  fo.skip_final_mlp = true;

  std::vector<double> full_t, append_t, settled_t;
  std::vector<int> append_way;  // 1: the team streamed the weights, 0: one thread
  Result<ForwardOutput> full = forward(*w, cfg, whole, fo);  // warm-up, and the reference
  if (!full) fail(full.error().message);
  KvCache cache;
  ForwardOptions inc = fo;
  inc.kv_cache = &cache;
  // The last output of each kind of run, written into by the next (unless --fresh).
  ForwardOutput spare_full, spare_head, spare_append;
  auto reusing = [&](ForwardOptions o, ForwardOutput& spare) {
    o.reuse = fresh ? nullptr : &spare;
    return o;
  };
  auto keep = [](Result<ForwardOutput>& r, ForwardOutput& spare) {
    if (r) spare = std::move(*r);
  };
  double max_diff = 0, logits_diff = 0;
  size_t worst = 0;  // where the maps differ most: (layer, head, row, column) in the JSON
  const auto start = std::chrono::steady_clock::now();
  while (ms_since(start) < budget_ms || full_t.size() < 5) {
    auto t0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> f = forward(*w, cfg, whole, reusing(fo, spare_full));
    full_t.push_back(ms_since(t0));
    if (!f) fail(f.error().message);
    keep(f, spare_full);

    Result<ForwardOutput> p = forward(*w, cfg, head, reusing(inc, spare_head));
    if (!p || cache.T() != prefix) fail("the prefix did not fill the cache.");
    keep(p, spare_head);
    const int team_before = cache.split.tries[1];
    const bool settled = std::min(cache.split.tries[0], cache.split.tries[1]) >= KvCache::SplitTiming::kKept;
    t0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> a = forward(*w, cfg, whole, reusing(inc, spare_append));
    append_t.push_back(ms_since(t0));
    if (settled) settled_t.push_back(append_t.back());
    append_way.push_back(cache.split.tries[1] > team_before ? 1 : 0);
    if (!a) fail(a.error().message);
    if (a->kv_reused != prefix || a->kv_computed != 1) fail("the appended token did not reuse the prefix.");
    for (size_t i = 0; i < a->attention.size(); ++i)
      if (const double d = std::abs(a->attention[i] - full->attention[i]); d > max_diff) max_diff = d, worst = i;
    if (a->logits.size() == full->logits.size() && a->logits.size() > 0)
      logits_diff = std::max(logits_diff, static_cast<double>((a->logits - full->logits).cwiseAbs().maxCoeff()) /
                                              std::max(1.0, static_cast<double>(full->logits.cwiseAbs().maxCoeff())));
    keep(a, spare_append);
  }
  std::printf("{\"prefix\":%d,\"full_ms\":%.3f,\"append_ms\":%.3f,\"max_abs_diff\":%.3g,\"logits_max_rel_diff\":%.3g,"
              "\"full_min_ms\":%.3f,\"append_min_ms\":%.3f,\"runs\":%zu,\"layers\":%d,\"heads\":%d,"
              "\"kv_heads\":%d,\"d_model\":%d,\"vocab\":%d,\"kv_cache_bytes\":%llu,"
              "\"append_one_thread_ms\":%.3f,\"append_team_ms\":%.3f,\"append_team_tries\":%d,\"append_settled_ms\":%.3f,\"threads\":%d,\"ids\":[",
              prefix, median(full_t), median(append_t), max_diff, logits_diff, *std::min_element(full_t.begin(), full_t.end()),
              *std::min_element(append_t.begin(), append_t.end()), full_t.size(), cfg.num_layers, cfg.num_heads, cfg.kv_heads(),
              cfg.d_model, w->vocab_size(), static_cast<unsigned long long>(cache.bytes()), cache.split.ms[0], cache.split.ms[1],
              cache.split.tries[1], settled_t.empty() ? -1.0 : median(settled_t), compute_threads());
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? "," : "", ids[i]);
  const size_t T1 = static_cast<size_t>(prefix) + 1, Hw = full->attention.size() / (T1 * T1 * static_cast<size_t>(cfg.num_layers));
  std::printf("],\"max_abs_diff_at\":[%zu,%zu,%zu,%zu]", worst / (Hw * T1 * T1), worst / (T1 * T1) % Hw, worst / T1 % T1, worst % T1);
  std::printf(",\"appends\":[");
  for (size_t i = 0; i < append_t.size(); ++i) std::printf("%s[%.1f,%d]", i ? "," : "", append_t[i], append_way[i]);
  std::printf("]}\n");

  // Where the time goes, five passes each way with the stage timers on.
  StageTimes st_full, st_append;
  double full_total = 0, append_total = 0;
  ForwardOptions timed_full = reusing(fo, spare_full), timed_inc = reusing(inc, spare_append);
  timed_full.times = &st_full;
  timed_inc.times = &st_append;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> f = forward(*w, cfg, whole, timed_full);
    full_total += ms_since(t0);
    keep(f, spare_full);
    Result<ForwardOutput> p = forward(*w, cfg, head, reusing(inc, spare_head));
    if (!p) fail(p.error().message);
    keep(p, spare_head);
    t0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> a = forward(*w, cfg, whole, timed_inc);
    append_total += ms_since(t0);
    keep(a, spare_append);
  }
  std::fprintf(stderr, "\nfull forward, T = %d:\n%s\none token appended after %d:\n%s", prefix + 1, st_full.table(full_total).c_str(), prefix,
               st_append.table(append_total).c_str());
  return 0;
}
