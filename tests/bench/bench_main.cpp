// headmap-bench: speed of the core, in GFLOP/s, beside the machine's own Eigen GEMM rate,
// and the trainer's throughput in tokens/s.
// Run tests/bench/compare_torch.py (attention) and tests/bench/compare_torch_train.py
// (training) to time PyTorch on the same shapes in the same run.
//
// B = batch, T = tokens, D = d_model, H = heads, d_head = D/H
// FLOPs are counted densely, as a plain implementation performs them:
//   projections 4 x 2·B·T·D·D, scores 2·B·T·T·D, weights·V 2·B·T·T·D.
// headmap's causal path skips key blocks that are entirely masked, so for long causal
// sequences it performs fewer FLOPs than it is credited with: the figure is the
// dense-equivalent rate (the work a dense implementation such as torch's does).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <deque>
#include <map>

#include "core/model/attention.h"
#include "core/math/gemm.h"
#include "core/math/packed_gemm.h"
#include "core/math/rng.h"
#include "core/train/trainer.h"
#include "tests/bench/fp32_peak.h"
#include "tests/gguf_writer.h"

using namespace headmap;

namespace {

MatR random_matrix(Eigen::Index rows, Eigen::Index cols, uint64_t key) {
  MatR m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = normal_at(key, static_cast<uint64_t>(i));
  return m;
}

double mha_flops(double B, double T, double D) { return 8 * B * T * D * D + 4 * B * T * T * D; }

// mha_forward: one causal multi-head attention layer with per-head weights returned.
void BM_mha_forward(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), T = static_cast<int>(state.range(1));
  const int D = static_cast<int>(state.range(2)), H = static_cast<int>(state.range(3));
  ModelWeights w = random_weights(D, 1, 1);
  const LayerWeights& lw = w.layers[0];
  const MatR x = random_matrix(static_cast<Eigen::Index>(B) * T, D, 2);
  MhaOptions o;
  o.num_heads = H;
  o.causal = true;
  std::vector<float> weights(static_cast<size_t>(B) * H * T * T);  // (B, H, T, T)
  MatR y;
  for (auto _ : state) {
    mha_forward(lw, x, B, T, o, y, weights.data());
    benchmark::DoNotOptimize(y.data());
    benchmark::DoNotOptimize(weights.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(mha_flops(B, T, D) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_mha_forward)
    ->Name("mha_forward")
    ->ArgNames({"B", "T", "D", "H"})
    ->Args({1, 16, 64, 4})
    ->Args({1, 128, 768, 12})
    ->Args({1, 1024, 768, 12})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// eigen_gemm: the machine's own float GEMM rate with Eigen's own OpenMP threading on all
// cores, C(M,N) = A(M,K) B(K,N). (headmap turns Eigen's threading off for its own work;
// it is switched back on here for the reference figure.)
void BM_eigen_gemm(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = state.range(1), N = state.range(2);
  const MatR a = random_matrix(M, K, 3), b = random_matrix(K, N, 4);
  MatR c(M, N);
  Eigen::setNbThreads(compute_threads());
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  Eigen::setNbThreads(1);
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * M * K * N * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_eigen_gemm)
    ->Name("eigen_gemm")
    ->ArgNames({"M", "K", "N"})
    ->Args({128, 768, 2304})
    ->Args({1024, 768, 2304})
    ->Args({1024, 1024, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// gemm_split: the same products through headmap's gemm(): Eigen single-threaded per
// thread on a column split of C. The better of eigen_gemm and gemm_split is the machine's
// GEMM rate that the attention is held against.
void BM_gemm_split(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = state.range(1), N = state.range(2);
  const MatR a = random_matrix(M, K, 3), b = random_matrix(K, N, 4);
  MatR c(M, N);
  for (auto _ : state) {
    gemm(c, a, b);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * M * K * N * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_gemm_split)
    ->Name("gemm_split")
    ->ArgNames({"M", "K", "N"})
    ->Args({128, 768, 2304})
    ->Args({1024, 768, 2304})
    ->Args({1024, 1024, 1024})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// train_step: one training step of the whole model: forward, backward, global-norm clip,
// AdamW. tokens_per_s = B*T per step. V is the built-in corpus's vocabulary size, so the
// unembedding costs what it costs in real training.
void BM_train_step(benchmark::State& state) {
  const int B = static_cast<int>(state.range(0)), T = static_cast<int>(state.range(1)), D = static_cast<int>(state.range(2));
  const int H = static_cast<int>(state.range(3)), L = static_cast<int>(state.range(4)), V = static_cast<int>(state.range(5));
  Trainer tr(init_params(D, L, V, T, 1), H, false);
  Rng rng(3);
  std::vector<int32_t> tok(static_cast<size_t>(B) * T), tgt(tok.size());  // (B, T) each
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = rng.below(V), tgt[i] = rng.below(V);
  const TrainOptions o;
  for (auto _ : state) {
    benchmark::DoNotOptimize(tr.loss_and_grad(tok.data(), tgt.data(), B, T));
    tr.update(o, 1e-3f);
    benchmark::ClobberMemory();
  }
  state.counters["tokens_per_s"] = benchmark::Counter(static_cast<double>(B) * T, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_train_step)
    ->Name("train_step")
    ->ArgNames({"B", "T", "D", "H", "L", "V"})
    ->Args({16, 64, 64, 4, 2, 858})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// random_weights: one layer of random-init weights (12·D² normals) at D = 768, drawn and
// freed in a loop (the allocator may hand back the same memory each time); random_weights_kept:
// the same as the app meets it (below); normals: the generator alone; and the previous
// generator (scalar, double precision, one Box-Muller output per pair) on the same count,
// threaded as it was.
void BM_random_weights(benchmark::State& state) {
  const int D = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ModelWeights w = random_weights(D, 1, 7);
    benchmark::DoNotOptimize(w.layers[0].w_q.data());
  }
  state.counters["Mnormals/s"] = benchmark::Counter(12.0 * D * D * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_random_weights)->Name("random_weights")->ArgNames({"D"})->Arg(768)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same as the app meets it: the worker keeps the last 8 models, so each new draw lands
// in memory the process has not touched yet (page faults included).
void BM_random_weights_fresh(benchmark::State& state) {
  const int D = static_cast<int>(state.range(0));
  std::deque<ModelWeights> kept;
  uint64_t seed = 100;
  for (auto _ : state) {
    kept.push_back(random_weights(D, 1, seed++));
    if (kept.size() > 8) kept.pop_front();
  }
  state.counters["Mnormals/s"] = benchmark::Counter(12.0 * D * D * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_random_weights_fresh)->Name("random_weights_kept")->ArgNames({"D"})->Arg(768)->Unit(benchmark::kMillisecond)->UseRealTime();

// The generator alone, on the same count and the same warm output as the previous one below.
void BM_normals(benchmark::State& state) {
  const int D = static_cast<int>(state.range(0));
  const int64_t n = 12LL * D * D;
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    fill_normals(7, out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["Mnormals/s"] = benchmark::Counter(n * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_normals)->Name("normals")->ArgNames({"D"})->Arg(768)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_normals_scalar_previous(benchmark::State& state) {
  const int D = static_cast<int>(state.range(0));
  const int64_t n = 12LL * D * D;
  std::vector<float> out(static_cast<size_t>(n));
  for (auto _ : state) {
    float* p = out.data();
#pragma omp parallel for schedule(static) num_threads(threads_for(40.0 * static_cast<double>(n)))
    for (int64_t i = 0; i < n; ++i) p[i] = normal_at(7, static_cast<uint64_t>(i));
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["Mnormals/s"] = benchmark::Counter(n * 1e-6, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_normals_scalar_previous)->Name("normals_scalar_previous")->ArgNames({"D"})->Arg(768)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

// packed_gemm: the forward's weight products, weights packed as F32 (dtype 0) or kept BF16
// (1) / F16 (2) and widened in the kernel; distinct weights per call (8 matrices in turn), so
// they stream from memory as in a forward of a model bigger than the caches.
void BM_packed_gemm(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = state.range(1), N = state.range(2);
  const WeightDtype dt = static_cast<WeightDtype>(state.range(3));
  const MatR a = random_matrix(M, K, 3);
  std::vector<PackedMatrix> bs;
  for (int i = 0; i < 8; ++i) bs.emplace_back(random_matrix(K, N, 4 + i), dt);
  MatR c(M, N);
  size_t i = 0;
  for (auto _ : state) {
    packed_gemm(c, a, bs[i++ % bs.size()]);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * M * K * N * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_packed_gemm)
    ->ArgNames({"M", "K", "N", "dtype"})
    ->ArgsProduct({{1, 128}, {2048}, {8192}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Appends a (K, N) matrix kept in a GGUF file's blocks of type dt (random quants, finite
// scales), the i-th of its kind.
void push_block_matrix(std::deque<PackedMatrix>& bs, WeightDtype dt, Eigen::Index K, Eigen::Index N, size_t i) {
  std::vector<std::string> cols(static_cast<size_t>(N));
  std::vector<const uint8_t*> src;
  for (Eigen::Index c = 0; c < N; ++c) {
    test::gguf_writer_detail::random_weights(dt, K, 1000 * i + static_cast<uint64_t>(c), cols[static_cast<size_t>(c)]);
    src.push_back(reinterpret_cast<const uint8_t*>(cols[static_cast<size_t>(c)].data()));
  }
  bs.emplace_back().assign_blocks(src, std::vector<WeightDtype>(static_cast<size_t>(N), dt), K);
}

// packed_gemm_shapes: the forward's weight products at T = 128 on the shapes that matter
// (issue 38): the Llama-3.2-1B shape (K = 2048, N = 2048 / 8192; K = 8192, N = 2048) and
// GPT-2 small (K = 768, N = 768 / 2304 / 3072; K = 3072, N = 768), weights F32 (dtype 0) or
// BF16 (1), on 1 or 2 threads; on the 1B shape also kept in a GGUF file's blocks (dtype 3
// Q8_0, 11 Q4_K, 13 Q6_K: block_gemm.h's many-row kernel, issue 37). Distinct weights per call (matrices in turn, at least 64 MiB
// of them), so they stream from memory as in a forward. Prints GFLOP/s and pct_peak: the
// rate over the threads' FP32 fused multiply-add peak (fp32_peak.h, measured once here).
void BM_packed_gemm_shapes(benchmark::State& state) {
  static const double peak = bench::one_thread_peak_gflops();
  const Eigen::Index M = state.range(0), K = state.range(1), N = state.range(2);
  const WeightDtype dt = static_cast<WeightDtype>(state.range(3));
  const int threads = static_cast<int>(state.range(4)), before = compute_threads();
  const MatR a = random_matrix(M, K, 3);
  const size_t bytes = is_block_dtype(dt) ? static_cast<size_t>(dtype_bytes(dt, K * N)) : static_cast<size_t>(K * N) * (dt == WeightDtype::F32 ? 4 : 2);
  std::deque<PackedMatrix> bs;
  for (size_t i = 0; i < std::max<size_t>(2, (size_t(64) << 20) / bytes); ++i) {
    if (is_block_dtype(dt)) {  // a GGUF file's blocks (issue 37): random quants, finite scales
      push_block_matrix(bs, dt, K, N, i);
      continue;
    }
    const MatR b = random_matrix(K, N, 4 + i);
    bs.emplace_back(b, dt);
  }
  MatR c(M, N);
  set_compute_threads(threads);
  size_t i = 0;
  for (auto _ : state) {
    packed_gemm(c, a, bs[i++ % bs.size()]);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_compute_threads(before);
  const double flops = 2.0 * M * K * N;
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["pct_peak"] = benchmark::Counter(flops * 1e-9 * 100.0 / (peak * threads), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_1t"] = peak;
}
BENCHMARK(BM_packed_gemm_shapes)
    ->Name("packed_gemm_shapes")
    ->ArgNames({"M", "K", "N", "dtype", "threads"})
    ->ArgsProduct({{128}, {2048}, {2048, 8192}, {0, 1}, {1, 2}})
    ->ArgsProduct({{128}, {8192}, {2048}, {0, 1}, {1, 2}})
    ->ArgsProduct({{128}, {2048}, {2048, 8192}, {3, 11, 13}, {1, 2}})
    ->ArgsProduct({{128}, {8192}, {2048}, {3, 11, 13}, {1, 2}})
    ->ArgsProduct({{128}, {768}, {768, 2304, 3072}, {0, 1}, {1, 2}})
    ->ArgsProduct({{128}, {3072}, {768}, {0, 1}, {1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// few_rows_stream: what typing costs per weight byte. The app's passes append 1-5 tokens (a
// keystroke's new rows while the last pass ran), so M = 1..8 rows against one 1B-shape MLP
// matrix (K = 2048, N = 8192), BF16 (1), Q8_0 (3) or Q4_K (11), on 1 or 2 threads (2: inside a
// FewRowSplit scope, as KvCache does when the team measures faster). Prints the weights' read
// rate (GB/s, to hold against headmap-bench-bandwidth) and GFLOP/s.
// Cheap values in [-1, 1) (the streams' speed does not depend on them; the normals of
// random_matrix take seconds for a few hundred MiB, and Google Benchmark runs each setup more
// than once).
MatR cheap_matrix(Eigen::Index rows, Eigen::Index cols, uint64_t key) {
  MatR m(rows, cols);
  uint64_t x = key * 0x9E3779B97F4A7C15ull + 1;
  for (Eigen::Index i = 0; i < m.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    m.data()[i] = static_cast<float>(static_cast<int64_t>(x >> 40) - (int64_t(1) << 23)) * (1.0f / (1 << 23));
  }
  return m;
}

void BM_few_rows_stream(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = 2048, N = 8192;
  const WeightDtype dt = static_cast<WeightDtype>(state.range(1));
  const int threads = static_cast<int>(state.range(2)), before = compute_threads();
  const MatR a = cheap_matrix(M, K, 3);
  const size_t bytes = is_block_dtype(dt) ? static_cast<size_t>(dtype_bytes(dt, K * N)) : static_cast<size_t>(K * N) * 2;
  static std::map<int, std::deque<PackedMatrix>> made;  // per type, made once
  std::deque<PackedMatrix>& bs = made[static_cast<int>(dt)];
  for (size_t i = bs.size(); i < std::max<size_t>(2, (size_t(256) << 20) / bytes); ++i) {  // 256 MiB: past every cache
    if (is_block_dtype(dt)) {
      push_block_matrix(bs, dt, K, N, i);
      continue;
    }
    bs.emplace_back(cheap_matrix(K, N, 4 + i), dt);
  }
  MatR c(M, N);
  set_compute_threads(threads);
  {
    FewRowSplit split(threads > 1);
    size_t i = 0;
    for (auto _ : state) {
      packed_gemm(c, a, bs[i++ % bs.size()]);
      benchmark::DoNotOptimize(c.data());
      benchmark::ClobberMemory();
    }
  }
  set_compute_threads(before);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * M * K * N * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_few_rows_stream)
    ->Name("few_rows_stream")
    ->ArgNames({"M", "dtype", "threads"})
    ->ArgsProduct({{1, 2, 3, 4, 5, 6, 8}, {1, 3, 11}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// few_rows_hot: the few-row kernels' own speed, the weights in L1 / L2 (K = 2048, N columns:
// 16 = 18 KB of Q4_K, 256 = 295 KB), one thread: what the widening and the multiply-adds cost
// without the memory (GBps: the weights' bytes per second, as few_rows_stream).
void BM_few_rows_hot(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = 2048, N = state.range(2);
  const WeightDtype dt = static_cast<WeightDtype>(state.range(1));
  const int before = compute_threads();
  const MatR a = cheap_matrix(M, K, 3);
  const size_t bytes = is_block_dtype(dt) ? static_cast<size_t>(dtype_bytes(dt, K * N)) : static_cast<size_t>(K * N) * 2;
  std::deque<PackedMatrix> bs;
  if (is_block_dtype(dt)) push_block_matrix(bs, dt, K, N, 0);
  else bs.emplace_back(cheap_matrix(K, N, 4), dt);
  MatR c(M, N);
  set_compute_threads(1);
  for (auto _ : state) {
    packed_gemm(c, a, bs[0]);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_compute_threads(before);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_few_rows_hot)
    ->Name("few_rows_hot")
    ->ArgNames({"M", "dtype", "N"})
    ->ArgsProduct({{1, 2, 4}, {1, 3, 11, 13}, {16, 256}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// logits_stream: the unembedding for an append's rows, C (M, V) = A (M, D) E^T with the
// (V, D) table kept BF16 and read in place (gemm_transposed_b), a quarter of the
// 1B shape's vocabulary (V = 32,064, D = 2048) in distinct tables so that it streams from
// memory; M = 1..8 rows, 1 or 2 threads. Prints the table's read rate (GB/s).
void BM_logits_stream(benchmark::State& state) {
  const Eigen::Index M = state.range(0), K = 2048, N = 32064;
  const int threads = static_cast<int>(state.range(2)), before = compute_threads();
  const MatR a = cheap_matrix(M, K, 3);
  const size_t bytes = static_cast<size_t>(K * N) * 2;
  static std::vector<std::vector<uint16_t>> t16;  // made once
  while (t16.size() < std::max<size_t>(2, (size_t(256) << 20) / bytes)) {
    const MatR t = cheap_matrix(N, K, 40 + t16.size());
    t16.emplace_back(static_cast<size_t>(t.size()));
    for (Eigen::Index j = 0; j < t.size(); ++j) t16.back()[static_cast<size_t>(j)] = float_to_narrow(t.data()[j], WeightDtype::BF16);
  }
  MatR c(M, N);
  set_compute_threads(threads);
  size_t i = 0;
  for (auto _ : state) {
    gemm_transposed_b(M, a.data(), K, N, K, t16[i++ % t16.size()].data(), WeightDtype::BF16, K, c.data(), N);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_compute_threads(before);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_logits_stream)
    ->Name("logits_stream")
    ->ArgNames({"M", "dtype", "threads"})
    ->ArgsProduct({{1, 2, 3, 4, 5, 6, 8}, {1}, {1, 2}})  // (dtype 1: BF16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK_MAIN();
