#include "core/math/tensor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace headmap {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Tensor::Tensor(Shape s, float fill) : shape(std::move(s)), data(static_cast<size_t>(shape_numel(shape)), fill) {}

Tensor Tensor::view(Shape s) const {
  HM_ASSERT(shape_numel(s) == numel(), "view " + shape_str(s) + " of a tensor " + shape_str(shape) + ": element counts differ");
  Tensor t;
  t.shape = std::move(s);
  t.data = data;
  return t;
}

Tensor Tensor::transpose(int a, int b) const {
  const int r = rank();
  if (a < 0) a += r;
  if (b < 0) b += r;
  HM_ASSERT(a >= 0 && b >= 0 && a < r && b < r, "transpose axes out of range for " + shape_str(shape));
  Shape out_shape = shape;
  std::swap(out_shape[a], out_shape[b]);
  Tensor out(out_shape);
  // Strides of the input, then walk the output in order and gather.
  std::vector<int64_t> in_stride(r, 1);
  for (int i = r - 2; i >= 0; --i) in_stride[i] = in_stride[i + 1] * shape[i + 1];
  std::vector<int64_t> perm_stride = in_stride;
  std::swap(perm_stride[a], perm_stride[b]);
  std::vector<int64_t> idx(r, 0);
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t src = 0;
    for (int i = 0; i < r; ++i) src += idx[i] * perm_stride[i];
    out.data[o] = data[src];
    for (int i = r - 1; i >= 0; --i) {
      if (++idx[i] < out_shape[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

Tensor Tensor::select0(int64_t i) const {
  HM_ASSERT(rank() >= 1 && i >= 0 && i < shape[0], "select0 index out of range");
  Shape s(shape.begin() + 1, shape.end());
  Tensor t(s);
  const int64_t n = t.numel();
  std::copy(data.begin() + i * n, data.begin() + (i + 1) * n, t.data.begin());
  return t;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  HM_ASSERT(a.rank() >= 2 && b.rank() >= 2, "matmul needs rank >= 2");
  const int64_t M = a.dim(-2), K = a.dim(-1), N = b.dim(-1);
  HM_ASSERT(b.dim(-2) == K, "matmul inner dims differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  const bool broadcast = b.rank() == 2;
  Shape lead(a.shape.begin(), a.shape.end() - 2);
  if (!broadcast) HM_ASSERT(Shape(b.shape.begin(), b.shape.end() - 2) == lead, "matmul batch dims differ");
  Shape out_shape = lead;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor out(out_shape);
  const int64_t batches = shape_numel(lead);
  for (int64_t z = 0; z < batches; ++z) {
    const float* A = a.data.data() + z * M * K;
    const float* Bm = b.data.data() + (broadcast ? 0 : z * K * N);
    float* C = out.data.data() + z * M * N;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t k = 0; k < K; ++k) {
        const float aik = A[i * K + k];
        for (int64_t j = 0; j < N; ++j) C[i * N + j] += aik * Bm[k * N + j];
      }
  }
  return out;
}

Tensor transpose_last2(const Tensor& a) { return a.transpose(-2, -1); }

Tensor add_bias(const Tensor& a, const std::vector<float>& bias) {
  const int64_t N = a.dim(-1);
  HM_ASSERT(static_cast<int64_t>(bias.size()) == N, "bias length differs from the last axis");
  Tensor out = a;
  for (int64_t i = 0; i < out.numel(); ++i) out.data[i] += bias[i % N];
  return out;
}

Tensor scale(const Tensor& a, float s) {
  Tensor out = a;
  for (float& v : out.data) v *= s;
  return out;
}

Tensor softmax_last(const Tensor& a) {
  const int64_t N = a.dim(-1);
  Tensor out = a;
  for (int64_t r = 0; r < a.numel() / N; ++r) {
    float* row = out.data.data() + r * N;
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < N; ++j) mx = std::max(mx, row[j]);
    if (mx == -std::numeric_limits<float>::infinity()) {  // nothing visible: all zeros, not NaN
      std::fill(row, row + N, 0.0f);
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < N; ++j) sum += (row[j] = std::exp(row[j] - mx));
    for (int64_t j = 0; j < N; ++j) row[j] = static_cast<float>(row[j] / sum);
  }
  return out;
}

}  // namespace headmap
