// next_tokens.cpp: a row's k most likely next tokens, and its cross-entropy.
//
// T = tokens (rows), V = vocab, k = tokens kept per row
#include "core/model/next_tokens.h"

#include <algorithm>
#include <cmath>

#include "core/math/parallel.h"

namespace headmap {

void NextTokenRows::resize(int n, int k_per_row) {
  if (k_per_row != k) ids.clear(), logits.clear(), max.clear(), sum.clear();
  k = k_per_row;
  ids.resize(static_cast<size_t>(n) * k);
  logits.resize(static_cast<size_t>(n) * k);
  max.resize(static_cast<size_t>(n));
  sum.resize(static_cast<size_t>(n));
}

void top_logits(const float* row, int V, int k, int* ids, float* logits, float& mx, double& sum) {
  const Eigen::Map<const Eigen::ArrayXf> r(row, V);
  // pass 1: the log-sum-exp's parts, stable
  mx = r.maxCoeff();
  sum = (r - mx).exp().cast<double>().sum();
  // pass 2: the k largest, kept sorted; ids rise along the row, so an equal logit seen later
  // goes after the ones kept (the lower id first) and is not kept once k are
  int n = 0;
  for (int v = 0; v < V; ++v) {
    const float x = row[v];
    if (n == k && !(x > logits[k - 1])) continue;
    int p = n < k ? n : k - 1;  // where x goes: after every kept logit >= x
    while (p > 0 && logits[p - 1] < x) {
      logits[p] = logits[p - 1], ids[p] = ids[p - 1];
      --p;
    }
    logits[p] = x, ids[p] = v;
    n = std::min(n + 1, k);
  }
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

}  // namespace headmap
