// next_tokens.cpp: a row's k most likely next tokens, and its cross-entropy.
//
// T = tokens (rows), V = vocab, k = tokens kept per row
#include "core/model/next_tokens.h"

#include <algorithm>
#include <cmath>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "core/math/parallel.h"
#include "core/model/model.h"

namespace headmap {

void NextTokenRows::resize(int n, int k_per_row) {
  if (k_per_row != k) ids.clear(), logits.clear(), max.clear(), sum.clear();
  k = k_per_row;
  ids.resize(static_cast<size_t>(n) * k);
  logits.resize(static_cast<size_t>(n) * k);
  max.resize(static_cast<size_t>(n));
  sum.resize(static_cast<size_t>(n));
}

// Which of p[0..16) are > kth, one bit each (a NaN is not, as in take() below).
static inline unsigned above_mask(const float* p, float kth) {
#if defined(__AVX512F__)
  return _mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_set1_ps(kth), _CMP_GT_OQ);
#elif defined(__AVX__)
  const __m256 t = _mm256_set1_ps(kth);
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), t, _CMP_GT_OQ))) |
         static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8), t, _CMP_GT_OQ))) << 8;
#else
  unsigned m = 0;
  for (int j = 0; j < 16; ++j) m |= static_cast<unsigned>(p[j] > kth) << j;
  return m;
#endif
}

void top_logits(const float* row, int V, int k, int* ids, float* logits, float& mx, double& sum) {
  // pass 1: the log-sum-exp's parts, stable. exp(x - mx) in float, chunk by chunk into an
  // aligned buffer: every element through Eigen's vectorised exp (a tail shorter than a packet
  // through the scalar one), whatever the row's own alignment, so the full row and a kept one
  // sum the same terms; each chunk's terms summed in double, chunks in order.
  mx = Eigen::Map<const Eigen::ArrayXf>(row, V).maxCoeff();
  constexpr int kChunk = 512;
  alignas(64) float e[kChunk];
  double s = 0;
  for (int v0 = 0; v0 < V; v0 += kChunk) {
    const int n = std::min(kChunk, V - v0);
    Eigen::Map<Eigen::ArrayXf, Eigen::Aligned64>(e, n) = (Eigen::Map<const Eigen::ArrayXf>(row + v0, n) - mx).exp();
    double lane[8] = {};  // eight running sums, each in element order (vectorised without reordering)
    int j = 0;
    for (; j + 8 <= n; j += 8)
      for (int l = 0; l < 8; ++l) lane[l] += static_cast<double>(e[j + l]);
    for (; j < n; ++j) lane[j % 8] += static_cast<double>(e[j]);
    for (double x : lane) s += x;
  }
  sum = s;
  // pass 2: the k largest, kept sorted; ids rise along the row, so an equal logit seen later
  // goes after the ones kept (the lower id first) and is not kept once k are. Once k are kept,
  // only the logits of a block of 16 above the k-th are looked at (the k-th only rises, so one
  // not above it then is not above it later): most blocks of a long row are skipped whole.
  int n = 0;
  auto take = [&](int v) {
    const float x = row[v];
    if (n == k && !(x > logits[k - 1])) return;
    int p = n < k ? n : k - 1;  // where x goes: after every kept logit >= x
    while (p > 0 && logits[p - 1] < x) {
      logits[p] = logits[p - 1], ids[p] = ids[p - 1];
      --p;
    }
    logits[p] = x, ids[p] = v;
    n = std::min(n + 1, k);
  };
  int v = 0;
  for (; v < V && n < k; ++v) take(v);
  constexpr int kBlock = 16;
  for (; v + kBlock <= V; v += kBlock) {
    const float kth = logits[k - 1];
    for (unsigned m = above_mask(row + v, kth); m != 0; m &= m - 1) take(v + __builtin_ctz(m));
  }
  for (; v < V; ++v) take(v);
}

double row_nll(const Eigen::Ref<const RowVec>& row, int id) {
  const float mx = row.maxCoeff();
  const double lse = mx + std::log((row.array() - mx).exp().sum());
  return lse - row(id);
}

void set_next_token_rows(NextTokenRows& rows, int first, const Eigen::Ref<const MatR>& fresh) {
  const int k = rows.k, V = static_cast<int>(fresh.cols());
  parallel_for(fresh.rows(), 3.0 * static_cast<double>(fresh.rows()) * V, [&](int64_t i) {
    const size_t t = static_cast<size_t>(first + i);
    top_logits(fresh.row(i).data(), V, k, rows.ids.data() + t * k, rows.logits.data() + t * k, rows.max[t], rows.sum[t]);
  });
}

double decoder_loss(const Batch& batch, int rows, const std::function<const MatR&(int first, int n)>& logits, int* loss_tokens) {
  const int B = batch.B(), T = batch.T, N = B * T;
  std::vector<double> nll(static_cast<size_t>(N), 0.0);  // (B*T) each row's loss, then summed in row order
  for (int first = 0; first < N; first += rows) {
    const int n = std::min(rows, N - first);
    const MatR& part = logits(first, n);  // (n, V)
    parallel_for(n, 4.0 * n * part.cols(), [&](int64_t i) {
      const int r = first + static_cast<int>(i), b = r / T, t = r % T;
      if (t + 1 < batch.lengths[b]) nll[static_cast<size_t>(r)] = row_nll(part.row(i), batch.sentences[b].tokens[t + 1].id);
    });
  }
  double total = 0;
  int n = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t + 1 < batch.lengths[b]; ++t, ++n) total += nll[static_cast<size_t>(b) * T + t];
  *loss_tokens = n;
  return n ? total / n : 0.0;
}

double stream_loss(const ModelWeights& w, const Batch& batch, const MatR& x, int* loss_tokens) {
  constexpr int kRows = 16;  // (16, V) logits at a time: 8 MB for a vocabulary of 128,256
  MatR part;
  return decoder_loss(batch, kRows, [&](int first, int n) -> const MatR& {
    stream_logits(w, x.middleRows(first, n), part);
    return part;
  }, loss_tokens);
}

}  // namespace headmap
