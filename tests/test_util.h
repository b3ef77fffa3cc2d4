// test_util.h: small helpers shared by the core test suites.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/math/rng.h"
#include "core/model/weights.h"

#include "sanitized.h"

namespace headmap::test {

// What the core suites read (their target defines HEADMAP_ASSETS and HEADMAP_TEST_DATA).
inline const std::string kShippedDefault = std::string(HEADMAP_ASSETS) + "/checkpoints/d128-h4-l2.safetensors";
inline const std::string kTestData = HEADMAP_TEST_DATA;

// The same floats, bit for bit (NaNs and signed zeros included).
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// (rows, cols) of N(0, 1) values from a fixed stream.
inline MatR random_matrix(int rows, int cols, uint64_t key) {
  MatR m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = normal_at(key, static_cast<uint64_t>(i));
  return m;
}

// Random weights with non-zero biases, so the tests exercise every term.
inline LayerWeights random_layer(int D, uint64_t key) {
  ModelWeights w = random_weights(D, 1, key);
  LayerWeights lw = w.layers[0];
  lw.b_q = random_matrix(1, D, key + 1) * 0.3f;
  lw.b_k = random_matrix(1, D, key + 2) * 0.3f;
  lw.b_v = random_matrix(1, D, key + 3) * 0.3f;
  lw.b_o = random_matrix(1, D, key + 4) * 0.3f;
  lw.fuse();
  return lw;
}

inline bool all_finite(const std::vector<float>& v) {
  for (float x : v)
    if (!std::isfinite(x)) return false;
  return true;
}

inline float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

inline ModelConfig config(int D, int H, int L = 1, bool causal = true) {
  ModelConfig c;
  c.d_model = D;
  c.num_heads = H;
  c.num_layers = L;
  c.causal = causal;
  return c;
}

}  // namespace headmap::test
