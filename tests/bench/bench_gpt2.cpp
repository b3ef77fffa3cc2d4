// bench_gpt2.cpp: headmap's side of tests/bench/compare_torch_gpt2.py. Opens a GPT-2 model
// directory, times the load and the forward pass with every attention map at T tokens, and
// reports the process's peak resident memory. Prints one JSON object.
//
//   headmap-bench-gpt2 DIR [T=128] [seconds=3]
//
// B = 1, T = tokens, D = d_model, H = heads, L = layers, V = vocab
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/io/hf_gpt2.h"
#include "core/math/rng.h"
#include "core/model/model.h"

using namespace headmap;

namespace {
long status_kib(const char* field) {  // VmHWM / VmRSS from /proc/self/status, in KiB
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::string(field).size() + 1);
  return -1;
}
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: headmap-bench-gpt2 DIR [T=128] [seconds=3]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int T = argc > 2 ? std::atoi(argv[2]) : 128;
  const double budget = argc > 3 ? std::atof(argv[3]) : 3.0;
  const long rss_start = status_kib("VmRSS:");

  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelWeights> w = load_hf_gpt2(dir);
  const double load_s = seconds_since(t0);
  if (!w) {
    std::fprintf(stderr, "headmap-bench-gpt2: %s\n", w.error().message.c_str());
    return 1;
  }
  const long hwm_load = status_kib("VmHWM:");

  ModelConfig cfg;
  cfg.d_model = w->d_model;
  cfg.num_heads = w->source.trained_heads;
  cfg.num_layers = w->num_layers();
  cfg.context = std::min(w->context, kMaxContext);
  // One sentence of T fixed pseudo-random ids, the same as the torch side uses (seeded ids
  // are written to stdout so the script can pass them on).
  Batch batch;
  batch.tokenizer = TokenizerKind::Bpe;
  TokenizedText tt;
  std::vector<int> ids;
  Rng r(2026);
  for (int t = 0; t < T; ++t) ids.push_back(r.below(w->vocab_size()));
  for (int id : ids) tt.tokens.push_back(Token{"", id, false});
  tt.total_tokens = T;
  batch.sentences.push_back(tt);
  batch.lengths.push_back(T);
  batch.source_line.push_back(0);
  batch.T = T;

  auto time_forward = [&](bool logits, double* loss) {
    ForwardOptions fo;
    fo.want_logits = logits;
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 3; ++i) (void)forward(*w, cfg, batch, fo);  // warm-up (an error stops the timed run below)
    while (seconds_since(start) < budget || times.size() < 10) {
      const auto s = std::chrono::steady_clock::now();
      Result<ForwardOutput> out = forward(*w, cfg, batch, fo);
      times.push_back(seconds_since(s) * 1e3);
      if (!out) {
        std::fprintf(stderr, "headmap-bench-gpt2: %s\n", out.error().message.c_str());
        std::exit(1);
      }
      if (loss) *loss = out->loss;
    }
    std::sort(times.begin(), times.end());
    return std::make_pair(times[times.size() / 2], times.front());
  };
  double loss = 0;
  const auto [attn_med, attn_min] = time_forward(false, nullptr);
  const auto [full_med, full_min] = time_forward(true, &loss);
  const long hwm_all = status_kib("VmHWM:");

  std::printf("{\"load_s\": %.4f, \"forward_attention_ms\": %.3f, \"forward_attention_min_ms\": %.3f, "
              "\"forward_logits_ms\": %.3f, \"forward_logits_min_ms\": %.3f, \"loss\": %.6f, "
              "\"rss_start_kib\": %ld, \"peak_rss_after_load_kib\": %ld, \"peak_rss_kib\": %ld, \"parameters\": %lld, \"ids\": [",
              load_s, attn_med, attn_min, full_med, full_min, loss, rss_start, hwm_load, hwm_all,
              static_cast<long long>(w->source.parameters));
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? ", " : "", ids[i]);
  std::printf("]}\n");
  return 0;
}
