// bench_rows.cpp: a typing pass of R rows through the K/V cache, as the app's compute worker
// runs it (every map, each layer's input and output, each row's 16 most likely next tokens
// in place of its logits, the last MLP skipped, the last output's buffers reused), on any
// model: a GGUF file (load_gguf_model) or a model directory (load_hf_model).
//
//   headmap-bench-rows FILE.gguf|DIR PREFIX R [R ...] [--seconds S]
//
// For each R: the cache is filled with PREFIX random ids (untimed), then R new ids are appended
// at a time, again and again for S seconds (3 at least; default 4): each pass computes R rows
// (kv_computed; the row before them is unembedded again for its loss, as in the app).
// Prints one JSON line per R (rows_ms: the median pass; team: passes whose products the cache
// split over the team, of the passes it decided; KvCache::SplitTiming), then on stderr where
// a pass's time goes stage by stage (core/model/stage_times.h), from five more timed passes.
// B = 1, T = PREFIX + R * passes tokens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../family_fixtures.h"
#include "core/io/gguf_model.h"
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
[[noreturn]] void fail(const std::string& m) { bench::fail("headmap-bench-rows", m); }
bool ends_with(const std::string& s, const std::string& e) { return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0; }
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  double seconds = 4;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (a.rfind("--", 0) == 0) fail("unknown option " + a);
    else pos.push_back(a);
  }
  if (pos.size() < 3) {
    std::fprintf(stderr, "usage: headmap-bench-rows FILE.gguf|DIR PREFIX R [R ...] [--seconds S]\n");
    return 2;
  }
  const int prefix = std::atoi(pos[1].c_str());
  std::vector<int> rows;
  for (size_t i = 2; i < pos.size(); ++i) rows.push_back(std::atoi(pos[i].c_str()));
  if (prefix < 1) fail("PREFIX must be at least 1.");
  for (int r : rows)
    if (r < 1 || r > 64) fail("each R must be 1-64.");
  Result<ModelWeights> w = ends_with(pos[0], ".gguf") ? load_gguf_model(pos[0]) : load_hf_model(pos[0]);
  if (!w) fail(w.error().message);
  if (!w->trained()) fail("the model has no vocabulary to draw token ids from.");
  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  base.context = kMaxContext;
  const ModelConfig cfg = config_for_weights(*w, base);
  ForwardOptions fo;  // as the app's compute worker asks (compute_worker.cpp)
  fo.keep_layer_io = true;
  fo.want_logits = true;
  fo.next_tokens_k = 16;
  fo.skip_final_mlp = true;
  Rng rng(2026);
  std::vector<int> ids;
  for (int t = 0; t < prefix; ++t) ids.push_back(static_cast<int>(rng.below(static_cast<uint64_t>(w->vocab_size()))));
  KvCache cache;
  ForwardOptions inc = fo;
  inc.kv_cache = &cache;
  ForwardOutput spare;
  auto pass = [&](int R, StageTimes* st) {  // R more ids appended to the cache's; the pass's ms
    for (int i = 0; i < R; ++i) ids.push_back(static_cast<int>(rng.below(static_cast<uint64_t>(w->vocab_size()))));
    if (static_cast<int>(ids.size()) > cfg.context) fail("the passes ran past the model's context.");
    ForwardOptions o = inc;
    o.reuse = &spare;
    o.times = st;
    const Batch b = test::id_batch({ids});
    const auto t0 = std::chrono::steady_clock::now();
    Result<ForwardOutput> a = forward(*w, cfg, b, o);
    const double ms = ms_since(t0);
    if (!a) fail(a.error().message);
    if (a->kv_computed != R) fail("a pass computed " + std::to_string(a->kv_computed) + " rows, not " + std::to_string(R) + ".");
    spare = std::move(*a);
    return ms;
  };
  for (int R : rows) {
    ids.resize(static_cast<size_t>(prefix));
    {  // the prefix, untimed (a full forward: the cache holds another text's rows or none)
      ForwardOptions o = inc;
      o.reuse = &spare;
      Result<ForwardOutput> p = forward(*w, cfg, test::id_batch({ids}), o);
      if (!p || cache.T() != prefix) fail("the prefix did not fill the cache.");
      spare = std::move(*p);
    }
    std::vector<double> t;
    const int team0 = cache.split.tries[1], one0 = cache.split.tries[0];
    const auto start = std::chrono::steady_clock::now();
    while (ms_since(start) < seconds * 1e3 || t.size() < 3) t.push_back(pass(R, nullptr));
    const int team = cache.split.tries[1] - team0, one = cache.split.tries[0] - one0;
    std::printf("{\"model\":\"%s\",\"prefix\":%d,\"rows\":%d,\"rows_ms\":%.1f,\"min_ms\":%.1f,\"passes\":%zu,\"team\":%d,\"one_thread\":%d,"
                "\"threads\":%d}\n",
                pos[0].c_str(), prefix, R, median(t), *std::min_element(t.begin(), t.end()), t.size(), team, one, compute_threads());
    std::fflush(stdout);
    StageTimes st;
    double total = 0;
    for (int i = 0; i < 5; ++i) total += pass(R, &st);
    std::fprintf(stderr, "%d rows a pass after %d or more tokens (%s):\n%s", R, prefix, pos[0].c_str(), st.table(total).c_str());
  }
  return 0;
}
