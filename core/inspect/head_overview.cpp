// head_overview.cpp: see head_overview.h.
//
// T = tokens, L = layers, Hw = heads in the maps, N = L*Hw
#include "core/inspect/head_overview.h"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/inspect/contrib.h"

namespace headmap {

float mean_distance_of_map(const float* w, int T, int len) {
  if (len < 2) return 0;
  double total = 0;
  for (int t = 1; t < len; ++t) {
    const float* row = w + static_cast<size_t>(t) * T;
    double d = 0;
    for (int s = 0; s < len; ++s) d += static_cast<double>(row[s]) * std::abs(t - s);
    total += d;
  }
  return static_cast<float>(total / (len - 1));
}

const std::vector<float>* HeadOverview::stat(HeadMetric m) const {
  for (size_t i = 0; i < stat_keys.size(); ++i)
    if (stat_keys[i] == m) return &stats[i];
  return nullptr;
}

HeadOverview head_overview(const ForwardOutput& out, const Batch& batch, int b, MaskKind mask) {
  HeadOverview o;
  if (b < 0 || b >= out.B || b >= batch.B()) return o;
  const int L = out.L, Hw = out.Hw, T = out.T, len = batch.lengths[b], N = L * Hw;
  o.L = L;
  o.Hw = Hw;
  o.mean_distance.resize(static_cast<size_t>(N));
  // (N, (len - 1) * len) every map's rows t >= 1, in double, for the similarities.
  const int rows = std::max(0, len - 1);
  Eigen::MatrixXd maps(N, static_cast<Eigen::Index>(rows) * len);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < Hw; ++h) {
      const int n = l * Hw + h;
      const float* w = out.weights(l, b, h);  // (T, T)
      o.mean_distance[static_cast<size_t>(n)] = mean_distance_of_map(w, T, len);
      for (int t = 1; t < len; ++t)
        for (int s = 0; s < len; ++s) maps(n, static_cast<Eigen::Index>(t - 1) * len + s) = w[static_cast<size_t>(t) * T + s];
    }
  // The statistics: metrics.h's per map, the detectors on this text.
  std::vector<float> entropy(static_cast<size_t>(N)), first(static_cast<size_t>(N)), prev(static_cast<size_t>(N)), self(static_cast<size_t>(N));
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < Hw; ++h) {
      const HeadMetrics m = map_metrics(out.weights(l, b, h), T, len, mask);
      const size_t n = static_cast<size_t>(l) * Hw + h;
      entropy[n] = m.entropy, first[n] = m.first_token, prev[n] = m.prev_token, self[n] = m.self;
    }
  o.stat_keys = {HeadMetric::Entropy, HeadMetric::FirstToken, HeadMetric::MeanDistance, HeadMetric::PrevToken, HeadMetric::Self};
  o.stats = {entropy, first, o.mean_distance, prev, self};
  for (Detector d : {Detector::PreviousToken, Detector::DuplicateToken, Detector::Induction, Detector::FirstToken}) {
    o.stat_keys.push_back(detector_metric(d));
    o.stats.push_back(detector_scores(out, batch, b, mask, d));
  }
  const Eigen::VectorXd norms = maps.rowwise().norm();  // (N)
  const Eigen::MatrixXd gram = maps * maps.transpose();  // (N, N)
  o.similarity.assign(static_cast<size_t>(N) * N, 0.0f);
  Eigen::MatrixXd d2(N, N);  // squared distances (1 - similarity)^2
  for (int n = 0; n < N; ++n)
    for (int m = 0; m < N; ++m) {
      const double c = n == m ? 1.0 : norms(n) > 0 && norms(m) > 0 ? gram(n, m) / (norms(n) * norms(m)) : 0.0;
      o.similarity[static_cast<size_t>(n) * N + m] = static_cast<float>(c);
      d2(n, m) = (1.0 - c) * (1.0 - c);
      if (n < m && c >= kNearDuplicate) o.near_duplicates.emplace_back(n, m);
    }
  // Classical MDS: B = -J D^2 J / 2, J = I - 11^T / N; its two leading eigenpairs.
  o.layout.assign(static_cast<size_t>(N) * 2, 0.0f);
  if (N >= 2) {
    const Eigen::MatrixXd J = Eigen::MatrixXd::Identity(N, N) - Eigen::MatrixXd::Constant(N, N, 1.0 / N);
    const Eigen::MatrixXd B = -0.5 * J * d2 * J;
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(B);  // eigenvalues ascending
    for (int k = 0; k < 2 && k < N; ++k) {
      const int col = N - 1 - k;
      const double lambda = es.eigenvalues()(col);
      Eigen::VectorXd v = es.eigenvectors().col(col) * (lambda > 0 ? std::sqrt(lambda) : 0.0);
      Eigen::Index at = 0;
      v.cwiseAbs().maxCoeff(&at);
      if (v(at) < 0) v = -v;
      for (int n = 0; n < N; ++n) o.layout[static_cast<size_t>(n) * 2 + k] = static_cast<float>(v(n));
    }
  }
  return o;
}

}  // namespace headmap
