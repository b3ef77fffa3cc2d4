// bench_families.cpp: headmap's side of tests/bench/compare_torch_families.py and of
// compare_torch_gpt2.py. Opens a model directory of any family through load_hf_model (Llama,
// Qwen3, GPT-2, ...), times the load and the forward pass with every attention map at T
// tokens (without, then with, the logits and loss), and reports the process's peak resident
// memory. Prints one JSON object; then, on stderr, where a forward's time goes stage by stage
// (core/model/stage_times.h), from separate runs with the timers on (so the JSON's timings
// carry no timer overhead), with and without the logits.
//
//   headmap-bench-families DIR [T=128] [seconds=3] [--fresh] [--bf16-products]
//
// --bf16-products also times both forwards with BF16 products (packed_gemm.h, Bf16Products;
// a CPU with avx512_bf16), prints their stage table, and adds to the JSON their medians and
// their largest difference from F32 (precision.h) on the same ids.
//
// Each run writes into the buffers of the one before (ForwardOptions::reuse), as the app's
// worker does across keystrokes; --fresh gives every forward fresh buffers (the old way), so
// the page faults it costs show in the stage table.
//
// B = 1, T = tokens, D = d_model, H = heads, L = layers, V = vocab
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/inspect/precision.h"
#include "core/io/hf_model.h"
#include "core/math/packed_gemm.h"
#include "core/math/gemm.h"
#include "core/math/rng.h"
#include "core/model/model.h"
#include "core/model/stage_times.h"
#include "tests/bench/bench_args.h"
#include "tests/proc_status.h"

using namespace headmap;
using headmap::test::status_kib;  // VmHWM / VmRSS, in KiB

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc_all, char** argv_all) {
  bool fresh = false, bf16 = false;
  std::vector<char*> args = bench::positional_args(argc_all, argv_all, "--fresh", &fresh);
  const std::vector<char*> argv = bench::positional_args(static_cast<int>(args.size()), args.data(), "--bf16-products", &bf16);
  if (bf16 && !Bf16Products::available()) {
    std::fprintf(stderr, "headmap-bench-families: --bf16-products needs a CPU with avx512_bf16 and a build for it (HEADMAP_NATIVE)\n");
    return 2;
  }
  const int argc = static_cast<int>(argv.size());
  if (argc < 2) {
    std::fprintf(stderr, "usage: headmap-bench-families DIR [T=128] [seconds=3] [--fresh] [--bf16-products]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int T = argc > 2 ? std::atoi(argv[2]) : 128;
  const double budget = argc > 3 ? std::atof(argv[3]) : 3.0;
  ForwardOutput spare;  // the last run's output, written into by the next (unless --fresh)
  ForwardOutput* reuse = fresh ? nullptr : &spare;
  const long rss_start = status_kib("VmRSS:");

  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelWeights> w = load_hf_model(dir);
  const double load_s = seconds_since(t0);
  if (!w) {
    std::fprintf(stderr, "headmap-bench-families: %s\n", w.error().message.c_str());
    return 1;
  }
  const long hwm_load = status_kib("VmHWM:"), rss_load = status_kib("VmRSS:");

  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  base.context = std::max(base.context, T);
  const ModelConfig cfg = config_for_weights(*w, base);
  // One sentence of T fixed pseudo-random ids; written out so the torch side runs the same.
  Batch batch;
  batch.tokenizer = TokenizerKind::Bpe;
  TokenizedText tt;
  std::vector<int> ids;
  Rng r(2026);
  for (int t = 0; t < T; ++t) ids.push_back(static_cast<int>(r.below(w->vocab_size())));
  for (int id : ids) tt.tokens.push_back(Token{"", id, false});
  tt.total_tokens = T;
  batch.sentences.push_back(tt);
  batch.lengths.push_back(T);
  batch.source_line.push_back(0);
  batch.T = T;

  // The fingerprint both sides compute: the mean attended key position of the last layer,
  // over every head and query (double), beside the loss.
  double fingerprint = 0;
  auto time_forward = [&](bool logits, double* loss, bool products = false) {
    ForwardOptions fo;
    fo.want_logits = logits;
    fo.bf16_products = products;
    fo.reuse = reuse;
    std::vector<double> times;
    const auto start = std::chrono::steady_clock::now();
    (void)forward(*w, cfg, batch, fo);  // warm-up (an error stops the timed run below)
    while (seconds_since(start) < budget || times.size() < 5) {
      const auto s = std::chrono::steady_clock::now();
      Result<ForwardOutput> out = forward(*w, cfg, batch, fo);
      times.push_back(seconds_since(s) * 1e3);
      if (!out) {
        std::fprintf(stderr, "headmap-bench-families: %s\n", out.error().message.c_str());
        std::exit(1);
      }
      if (loss) *loss = out->loss;
      const size_t per_layer = static_cast<size_t>(out->Hw) * T * T;
      const float* last = out->attention.data() + static_cast<size_t>(out->L - 1) * per_layer;
      double f = 0;
      for (size_t i = 0; i < per_layer; ++i) f += static_cast<double>(last[i]) * static_cast<double>(i % T);
      fingerprint = f / (static_cast<double>(out->Hw) * T);
      spare = std::move(*out);
    }
    std::sort(times.begin(), times.end());
    return std::make_pair(times[times.size() / 2], times.front());
  };
  double loss = 0;
  const auto [attn_med, attn_min] = time_forward(false, nullptr);
  const auto [full_med, full_min] = time_forward(true, &loss);
  const long hwm_all = status_kib("VmHWM:");
  std::pair<double, double> attn_bf16{0, 0}, full_bf16{0, 0};
  PrecisionDiff diff;
  if (bf16) {
    double loss_bf16 = 0;
    attn_bf16 = time_forward(false, nullptr, true);
    full_bf16 = time_forward(true, &loss_bf16, true);
    ForwardOptions fo;
    fo.want_logits = true;
    Result<ForwardOutput> exact = forward(*w, cfg, batch, fo);
    fo.bf16_products = true;
    Result<ForwardOutput> approx = forward(*w, cfg, batch, fo);
    if (exact && approx) diff = precision_diff(*approx, *exact);
    std::fprintf(stderr, "\nBF16 products: %s\n", precision_diff_text(diff).c_str());
  }

  // Where the time goes: the same forward with the stage timers on, five passes each.
  for (const int pass : {0, 1, 2, 3}) {
    const bool logits = pass % 2 == 1, products = pass >= 2;
    if (products && !bf16) break;
    StageTimes st;
    ForwardOptions fo;
    fo.want_logits = logits;
    fo.bf16_products = products;
    fo.times = &st;
    fo.reuse = reuse;
    double total_ms = 0;
    for (int i = -1; i < 5; ++i) {  // a warm-up, not counted, then five passes
      if (i == 0) st.clear(), total_ms = 0;
      const auto s = std::chrono::steady_clock::now();
      Result<ForwardOutput> out = forward(*w, cfg, batch, fo);
      total_ms += seconds_since(s) * 1e3;
      if (out) spare = std::move(*out);
    }
    std::fprintf(stderr, "\n%s, T = %d, every map%s%s:\n%s", w->arch.family.c_str(), T, logits ? ", with logits and loss" : "",
                 products ? ", BF16 products" : "",
                 st.table(total_ms).c_str());
  }

  std::printf("{\"family\": \"%s\", \"dtype\": \"%s\", \"load_s\": %.4f, \"forward_attention_ms\": %.3f, \"forward_attention_min_ms\": %.3f, "
              "\"forward_logits_ms\": %.3f, \"forward_logits_min_ms\": %.3f, \"loss\": %.6f, \"fingerprint\": %.6f, "
              "\"threads\": %d, \"rss_start_kib\": %ld, \"peak_rss_after_load_kib\": %ld, \"rss_after_load_kib\": %ld, \"peak_rss_kib\": %ld, \"parameters\": %lld, ",
              w->arch.family.c_str(), w->source.dtype.empty() ? "F32" : w->source.dtype.c_str(), load_s, attn_med, attn_min, full_med, full_min,
              loss, fingerprint, compute_threads(), rss_start, hwm_load, rss_load, hwm_all, static_cast<long long>(w->source.parameters));
  if (bf16)
    std::printf("\"forward_attention_bf16_ms\": %.3f, \"forward_attention_bf16_min_ms\": %.3f, \"forward_logits_bf16_ms\": %.3f, "
                "\"forward_logits_bf16_min_ms\": %.3f, \"bf16_attention_diff\": %.3g, \"bf16_logits_diff\": %.3g, \"bf16_loss\": %.6f, ",
                attn_bf16.first, attn_bf16.second, full_bf16.first, full_bf16.second, diff.attention, diff.logits, diff.loss_approx);
  std::printf("\"ids\": [");
  for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? ", " : "", ids[i]);
  std::printf("]}\n");
  return 0;
}
