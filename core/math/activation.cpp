// activation.cpp: the activation table's vectorised forms (see activation.h).
#include "core/math/activation.h"

#include "core/math/parallel.h"

namespace headmap {

void activate_inplace(Activation a, float* x, int64_t n, int threads) {
  switch (a) {
    case Activation::GeluTanh:
      parallel_aligned_chunks(x, n, threads, [](float* p, int64_t len) {
        Eigen::Map<Eigen::ArrayXf> v(p, len);
        constexpr float k = static_cast<float>(kGeluTanhK), c = static_cast<float>(kGeluTanhC);
        v = 0.5f * v * (1.0f + (k * (v + c * v.cube())).tanh());
      });
      return;
    case Activation::GeluErf:
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
      for (int64_t i = 0; i < n; ++i) x[i] = activate(a, x[i]);
      return;
    case Activation::Silu:
      parallel_aligned_chunks(x, n, threads, [](float* p, int64_t len) {
        Eigen::Map<Eigen::ArrayXf> v(p, len);
        v = v / (1.0f + (-v).exp());
      });
      return;
  }
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::GeluTanh: return "gelu_new";
    case Activation::GeluErf: return "gelu";
    case Activation::Silu: return "silu";
  }
  return "?";
}

}  // namespace headmap
