// bench_gguf.cpp: a GGUF model kept in its blocks (issue 37), on the Llama-3.2-1B shape
// (D 2048, 32 heads of 64, 8 K/V heads, 16 layers, MLP 8192, vocabulary 128,256, tied):
//   load_s            load_gguf_model, wall clock (the file in the page cache after the write);
//   peak_rss_over_file  the load's peak resident growth over the file's bytes;
//   forward_ms        the median forward at T tokens (default 128) with every map, each
//                     layer's input and output and the logits, as the app's worker asks;
//   forward_maps_ms   the same forward without the logits (every map and layer I/O), run in
//                     turn with it: what llama.cpp's evaluation of T tokens computes besides
//                     the maps (no token asks it for logits: bench_llama_cpp.mjs);
//   append_ms         the median incremental forward of one token appended after T - 1 in
//                     the K/V cache, with its logits over the whole vocabulary, then each
//                     next token as typing appends them (after the forwards; each half the
//                     seconds: runs, appends).
// Then, on stderr, where the forward's and an append's time go stage by stage
// (core/model/stage_times.h), from two more forwards and five more appends with the timers on.
// Prints one JSON line per type. Each type is written by tests/gguf_writer.h (random blocks
// under fixed scales: the same bytes a real file of the type streams) into DIR unless the
// file is already there, then measured in a fresh process (so that the write's memory does
// not count). BF16 is the 16-bit path, for comparison.
//
//   headmap-bench-gguf DIR [TYPE ...] [--tokens T] [--seconds S] [--reuse] [--bf16-products] [--int8-products]   (types: Q8_0 Q4_K_M BF16, any block type)
//   headmap-bench-gguf --file FILE.gguf [--tokens T] [--seconds S] [--reuse] [--bf16-products] [--int8-products] (any GGUF file)
//
// B = 1, T tokens, D = d_model, L = layers, V = vocab. Figures go to tests/bench/README.md
// only from a quiet machine, with the machine named.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "../family_fixtures.h"
#include "../gguf_writer.h"
#include "../proc_status.h"
#include "core/io/gguf_model.h"
#include "core/math/gemm.h"
#include "core/math/packed_gemm.h"
#include "core/math/rng.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"
#include "core/model/stage_times.h"
#include "tests/bench/bench_args.h"

using namespace headmap;
namespace fs = std::filesystem;

namespace {
constexpr test::GgufShape kLlama1B{2048, 32, 8, 64, 16, 8192, 128256};

using bench::median;
using bench::ms_since;
[[noreturn]] void fail(const std::string& m) { bench::fail("headmap-bench-gguf", m); }

// --reuse: each append writes into the last one's buffers (ForwardOptions::reuse), as the
// app's compute worker does across keystrokes; without it each append gets fresh buffers
// (their page faults then show in the stage table's "maps alloc" and "K/V cache copies").
bool g_reuse = false;
// --bf16-products: the forwards with BF16 products (packed_gemm.h, Bf16Products; avx512_bf16);
// the appends (a few rows) are F32's either way.
bool g_bf16 = false;
// --int8-products: the forwards and the appends with 8-bit products on Q4_K, Q5_K, Q6_K and
// Q8_0 blocks (int8_products.h), as llama.cpp computes them; the K/V cache serves the mode.
bool g_int8 = false;

int measure(const std::string& path, int T, double budget_ms) {
  const double file_bytes = static_cast<double>(fs::file_size(path));
  const long rss_before = test::status_kib("VmRSS:");
  const auto t0 = std::chrono::steady_clock::now();
  Result<ModelWeights> w = load_gguf_model(path);
  const double load_s = ms_since(t0) / 1e3;
  if (!w) fail(w.error().message);
  const double peak = (test::status_kib("VmHWM:") - rss_before) * 1024.0 / file_bytes;
  ModelConfig base;
  base.tokenizer = TokenizerKind::Bpe;
  base.context = kMaxContext;
  const ModelConfig cfg = config_for_weights(*w, base);
  std::vector<int> ids;
  Rng r(2026);
  for (int t = 0; t < T; ++t) ids.push_back(static_cast<int>(r.below(static_cast<uint64_t>(w->vocab_size()))));
  const Batch whole = test::id_batch({ids}), head = test::id_batch({std::vector<int>(ids.begin(), ids.end() - 1)});
  ForwardOptions fo;  // as the app's compute worker asks: every map, layer I/O, logits
  fo.keep_layer_io = true;
  fo.want_logits = true;
  fo.bf16_products = g_bf16;
  fo.int8_products = g_int8;
  ForwardOptions maps = fo;  // the same forward without the logits
  maps.want_logits = false;
  std::vector<double> full_t, maps_t, append_t;
  if (Result<ForwardOutput> warm = forward(*w, cfg, whole, fo); !warm) fail(warm.error().message);
  KvCache cache;
  ForwardOptions inc = fo;
  inc.kv_cache = &cache;
  inc.bf16_products = false;  // a pass with them never goes through the K/V cache
  // The full forward for half the budget (3 runs at least), then the appends for the other
  // half (3 at least): the T-th token after the T - 1 in the cache, then each next one (T + 1,
  // ...) as when someone types, so that the cache's split timing (one thread or the team:
  // KvCache::split) is warm.
  auto start = std::chrono::steady_clock::now();
  while (ms_since(start) < budget_ms / 2 || full_t.size() < 3) {
    const auto t1 = std::chrono::steady_clock::now();
    if (Result<ForwardOutput> f = forward(*w, cfg, whole, fo); !f) fail(f.error().message);
    full_t.push_back(ms_since(t1));
    const auto t2 = std::chrono::steady_clock::now();
    if (Result<ForwardOutput> f = forward(*w, cfg, whole, maps); !f) fail(f.error().message);
    maps_t.push_back(ms_since(t2));
  }
  if (Result<ForwardOutput> p = forward(*w, cfg, head, inc); !p || cache.T() != T - 1) fail("the prefix did not fill the cache.");
  start = std::chrono::steady_clock::now();
  ForwardOutput spare;  // the last append's output, its buffers reused with --reuse
  for (int n = T; ms_since(start) < budget_ms / 2 || append_t.size() < 3; ++n) {
    if (n == static_cast<int>(ids.size())) ids.push_back(static_cast<int>(r.below(static_cast<uint64_t>(w->vocab_size()))));
    const Batch grown = test::id_batch({std::vector<int>(ids.begin(), ids.begin() + n)});
    inc.reuse = g_reuse ? &spare : nullptr;
    const auto t1 = std::chrono::steady_clock::now();
    Result<ForwardOutput> a = forward(*w, cfg, grown, inc);
    append_t.push_back(ms_since(t1));
    if (!a || a->kv_computed != 1) fail("the appended token did not reuse the prefix.");
    spare = std::move(*a);
  }
  std::printf("{\"file\":\"%s\",\"weights\":\"%s\",\"file_mb\":%.1f,\"load_s\":%.3f,\"peak_rss_over_file\":%.3f,\"tokens\":%d,"
              "\"forward_ms\":%.1f,\"forward_maps_ms\":%.1f,\"append_ms\":%.1f,\"runs\":%zu,\"appends\":%zu,\"threads\":%d,\"reuse\":%s,\"bf16_products\":%s,\"int8_products\":%s}\n",
              fs::path(path).filename().c_str(), w->source.dtype.c_str(), file_bytes / 1e6, load_s, peak, T, median(full_t), median(maps_t),
              median(append_t), full_t.size(), append_t.size(), compute_threads(), g_reuse ? "true" : "false",
              g_bf16 ? "true" : "false", g_int8 ? "true" : "false");
  std::fflush(stdout);
  {  // Where the full forward's time goes: two more with the stage timers on (stderr).
    StageTimes fst;
    ForwardOptions ft = fo;
    ft.times = &fst;
    double ftotal = 0;
    for (int i = 0; i < 2; ++i) {
      const auto t1 = std::chrono::steady_clock::now();
      if (Result<ForwardOutput> f = forward(*w, cfg, whole, ft); !f) fail(f.error().message);
      ftotal += ms_since(t1);
    }
    std::fprintf(stderr, "the forward at T = %d (%s):\n%s", T, fs::path(path).filename().c_str(), fst.table(ftotal).c_str());
  }
  // Where an append's time goes: five more appends with the stage timers on (stderr).
  StageTimes st;
  ForwardOptions timed = inc;
  timed.times = &st;
  double total = 0;
  for (int i = 0; i < 5; ++i) {  // ids holds one more than the cache (the loop above pushed it)
    const Batch grown = test::id_batch({ids});
    ids.push_back(static_cast<int>(r.below(static_cast<uint64_t>(w->vocab_size()))));
    const auto t1 = std::chrono::steady_clock::now();
    timed.reuse = g_reuse ? &spare : nullptr;
    Result<ForwardOutput> a = forward(*w, cfg, grown, timed);
    total += ms_since(t1);
    if (!a || a->kv_computed != 1) fail("the appended token did not reuse the prefix.");
    spare = std::move(*a);
  }
  std::fprintf(stderr, "one token appended after %d or more (%s):\n%s", T - 1, fs::path(path).filename().c_str(), st.table(total).c_str());
  return 0;
}

// Runs `args` of this program in a fresh process; its exit status.
int child(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(3);
  }
  int st = 0;
  return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pos;
  std::string file, tokens = "128", seconds = "10";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--file" && i + 1 < argc) file = argv[++i];
    else if (a == "--tokens" && i + 1 < argc) tokens = argv[++i];
    else if (a == "--seconds" && i + 1 < argc) seconds = argv[++i];
    else if (a == "--reuse") g_reuse = true;
    else if (a == "--fresh") g_reuse = false;
    else if (a == "--bf16-products") g_bf16 = true;
    else if (a == "--int8-products") g_int8 = true;
    else if (a == "--measure" && i + 1 < argc) return measure(argv[i + 1], std::atoi(tokens.c_str()), std::atof(seconds.c_str()) * 1e3);
    else if (a == "--write" && i + 2 < argc) {
      const std::string type = argv[i + 2];
      test::GgufTypes ty = test::GgufTypes::all(WeightDtype::BF16);
      if (type == "Q4_K_M") ty = test::GgufTypes::q4_k_m(), ty.untied = false;  // Llama-3.2-1B is tied
      else if (type != "BF16") {  // any one block type for every matrix (Q8_0, Q4_K, IQ4_XS, ...)
        WeightDtype t = WeightDtype::F32;
        for (int d = 0; d < kWeightDtypes; ++d)
          if (type == dtype_name(static_cast<WeightDtype>(d))) t = static_cast<WeightDtype>(d);
        if (!is_block_dtype(t)) fail("unknown type " + type + " (Q4_K_M, BF16, or a block type: Q8_0, Q4_K, IQ4_XS, ...).");
        ty = test::GgufTypes::all(t);
      }
      return test::write_llama_gguf(argv[i + 1], kLlama1B, ty, 2026, false, /*full_vocab=*/true) ? 0 : 1;
    } else pos.push_back(a);
  }
  if (std::atoi(tokens.c_str()) < 2) fail("--tokens must be at least 2.");
  const std::string reuse = g_reuse ? "--reuse" : "--fresh";
  if (g_bf16 && !Bf16Products::available()) fail("--bf16-products needs a CPU with avx512_bf16 and a build for it (HEADMAP_NATIVE).");
  // The child's flags: --reuse or --fresh, then --bf16-products only when asked (a "--fresh" in
  // its place once undid --reuse).
  const auto measure_args = [&](const std::string& path) {
    std::vector<std::string> a = {argv[0], reuse};
    if (g_bf16) a.push_back("--bf16-products");
    if (g_int8) a.push_back("--int8-products");
    a.insert(a.end(), {std::string("--tokens"), tokens, std::string("--seconds"), seconds, std::string("--measure"), path});
    return a;
  };
  if (!file.empty()) return child(measure_args(file));
  if (pos.empty()) {
    std::fprintf(stderr, "usage: headmap-bench-gguf DIR [Q8_0 Q4_K_M BF16] [--tokens T] [--seconds S] | --file FILE.gguf [...]\n");
    return 2;
  }
  std::vector<std::string> types(pos.begin() + 1, pos.end());
  if (types.empty()) types = {"Q8_0", "Q4_K_M", "BF16"};
  fs::create_directories(pos[0]);
  int rc = 0;
  for (const std::string& t : types) {
    const std::string path = (fs::path(pos[0]) / ("llama-3.2-1b-shape-" + t + ".gguf")).string();
    if (!fs::exists(path) && child({argv[0], "--write", path, t}) != 0) fail("could not write " + path);
    rc |= child(measure_args(path));
  }
  return rc;
}
