// tensor.h: a plain N-d float tensor and the few numpy-like ops the explicit (teaching)
// path needs: view, transpose, batched matmul, softmax. Row-major, always contiguous.
//
// The fast path in attention.cpp works on Eigen matrices; this type exists so that every
// step the passport names can be produced as a real tensor with a real shape, and so the
// exporters have one thing to write.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace headmap {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& s);  // "[2, 10, 512]"
int64_t shape_numel(const Shape& s);

struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(Shape s, float fill = 0.0f);
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  int rank() const { return static_cast<int>(shape.size()); }
  int64_t dim(int i) const { return shape[i < 0 ? shape.size() + i : i]; }

  // Reinterprets the same data with a new shape (numel must match), like torch's view.
  Tensor view(Shape s) const;
  // Swaps two axes and materialises the result, like transpose(a, b).contiguous().
  Tensor transpose(int a, int b) const;
  // Slices index i along axis 0: (N, ...) -> (...).
  Tensor select0(int64_t i) const;
};

// Batched matmul over all leading axes: (..., M, K) x (..., K, N) -> (..., M, N).
// If b has rank 2 it is broadcast: (..., M, K) x (K, N).
Tensor matmul(const Tensor& a, const Tensor& b);
// a^T over the last two axes.
Tensor transpose_last2(const Tensor& a);
// Adds a bias of shape (N) to the last axis.
Tensor add_bias(const Tensor& a, const std::vector<float>& bias);
Tensor scale(const Tensor& a, float s);
// Softmax over the last axis; a row of all -inf becomes all zeros (not NaN).
Tensor softmax_last(const Tensor& a);

}  // namespace headmap
