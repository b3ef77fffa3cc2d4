// activation.h: the MLP's activation functions, one table. Each kind has its name, its
// scalar form (float or double: the attribution's sums run in double) and its form over a
// whole block of values; GELU-tanh's inner argument is shared with the trainer's backward
// pass. The forward (core/model/model.cpp), the contributions (core/inspect/contrib.cpp) and
// the trainer (core/train/backprop.cpp) read it; Arch::activation() (arch.h) names a family's.
//
// n = values
#pragma once
#include <cmath>
#include <cstdint>

#include <Eigen/Core>

namespace headmap {

enum class Activation {
  GeluTanh,  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  "gelu_new", "gelu_pytorch_tanh"
  GeluErf,   // 0.5 x (1 + erf(x / sqrt(2)))                     "gelu"
  Silu,      // x / (1 + exp(-x))                                "silu"
};

// sqrt(2/pi) (x + 0.044715 x^3): the argument of GELU-tanh's tanh (its derivative in backprop.cpp uses the same constants).
constexpr double kGeluTanhK = 0.7978845608028654, kGeluTanhC = 0.044715;
template <class T>
inline T gelu_tanh_arg(T x) {
  return static_cast<T>(kGeluTanhK) * (x + static_cast<T>(kGeluTanhC) * x * x * x);
}

// The activation of one value.
template <class T>
inline T activate(Activation a, T x) {
  switch (a) {
    case Activation::GeluTanh: return static_cast<T>(0.5) * x * (static_cast<T>(1) + std::tanh(gelu_tanh_arg(x)));
    case Activation::GeluErf: return static_cast<T>(0.5) * x * (static_cast<T>(1) + std::erf(x * static_cast<T>(0.7071067811865476)));
    case Activation::Silu: return x / (static_cast<T>(1) + std::exp(-x));
  }
  return x;
}

// The activation of x[0 .. n) in place, vectorised where Eigen can (tanh, exp): the same
// function as activate() to a few ulp. threads: for the erf form's loop.
void activate_inplace(Activation a, float* x, int64_t n, int threads = 1);

// Its name in config.json ("gelu_new", "gelu", "silu").
const char* activation_name(Activation a);

}  // namespace headmap
