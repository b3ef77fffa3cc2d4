// packed_gemm.h: weight matrices stored the way the GEMM kernel reads them, and that kernel.
//
// A forward pass multiplies activations (B*T, K) by weights (K, N). At T = 128 the weights
// are the big operand: GPT-2 small streams 340 MB of them per pass, and Eigen re-packs every
// weight matrix on every call (13% of a GPT-2 forward, in a phase that does no arithmetic).
// A PackedMatrix is packed once, when the weights are made or loaded, and replaces the plain
// matrix (never a second copy). The kernel then reads each panel as one sequential stream,
// prefetching the next while it computes.
//
// Layout: column panels of kPanel = 2 SIMD registers (32 floats with AVX-512). Panel p
// holds columns [p*kPanel, (p+1)*kPanel) as K rows of kPanel floats, contiguous; the last
// panel is zero-padded. Same numbers as the plain matrix, only reordered.
//
// Measured on the 2-core AVX-512 VM, the 48 GEMMs of a GPT-2-small forward at T = 128,
// distinct weights per layer (cold caches): ~185 GFLOP/s against Eigen's ~118 (adhoc A/B).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace headmap {

// Storage of packed weights: Eigen's aligned allocator, except that resize() leaves the
// floats unwritten (PackedMatrix::resize zeroes them itself; assign_by_rows_parallel writes
// every one, on the thread that draws it, so a fresh matrix is not written twice).
template <class T>
struct UninitialisedAllocator : Eigen::aligned_allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitialisedAllocator<U>;
  };
  UninitialisedAllocator() = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) {}
  template <class U, class... Args>
  void construct(U* p, Args&&... args) { ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...); }
  template <class U>
  void construct(U* p) noexcept { ::new (static_cast<void*>(p)) U; }
};

class PackedMatrix {
 public:
  using Plain = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  static constexpr int kPanel = 2 * Eigen::internal::packet_traits<float>::size;

  PackedMatrix() = default;
  explicit PackedMatrix(const Plain& plain) { assign(plain.data(), plain.rows(), plain.cols()); }
  // Packs a row-major (rows, cols) matrix.
  void assign(const float* plain, Eigen::Index rows, Eigen::Index cols);
  // Or in row blocks (a loader's chunks): resize (values zero), then set rows [r0, r0 + n)
  // from a row-major (n, cols) block.
  void resize(Eigen::Index rows, Eigen::Index cols);
  void set_rows(Eigen::Index r0, Eigen::Index n, const float* block);
  // Packs a (rows, cols) matrix made kBlockRows rows at a time, never whole (a loader's
  // reads, a random stream, a concatenation): fill(r0, n, block) writes rows [r0, r0 + n)
  // row-major into block and returns false to stop, leaving the matrix incomplete.
  static constexpr Eigen::Index kBlockRows = 64;  // even: a block of a normal stream starts on a pair
  template <class Fill>
  bool assign_by_rows(Eigen::Index rows, Eigen::Index cols, Fill&& fill) {
    resize(rows, cols);
    thread_local std::vector<float> block;  // reused: a fresh buffer per matrix cost more than drawing it
    block.resize(static_cast<size_t>(std::min(kBlockRows, rows) * cols));
    for (Eigen::Index r0 = 0; r0 < rows; r0 += kBlockRows) {
      const Eigen::Index n = std::min(kBlockRows, rows - r0);
      if (!fill(r0, n, block.data())) return false;
      set_rows(r0, n, block.data());
    }
    return true;
  }

  // The same when fill may run on several threads at once (a counter-based stream, a copy
  // of other matrices): the compute threads draw and pack disjoint blocks side by side.
  // `flops_per_element` sizes the team (threads_for). Always completes.
  using BlockFill = std::function<void(Eigen::Index r0, Eigen::Index n, float* block)>;
  void assign_by_rows_parallel(Eigen::Index rows, Eigen::Index cols, const BlockFill& fill, double flops_per_element);
  Eigen::Index rows() const { return rows_; }  // K
  Eigen::Index cols() const { return cols_; }  // N
  Eigen::Index size() const { return rows_ * cols_; }
  int panels() const { return static_cast<int>((cols_ + kPanel - 1) / kPanel); }
  const float* panel(int p) const { return data_.data() + static_cast<size_t>(p) * rows_ * kPanel; }  // (K, kPanel)

  float operator()(Eigen::Index r, Eigen::Index c) const {
    return data_[(static_cast<size_t>(c / kPanel) * rows_ + r) * kPanel + c % kPanel];
  }
  Plain plain() const;  // the (K, N) matrix, unpacked
  bool operator==(const PackedMatrix& o) const { return rows_ == o.rows_ && cols_ == o.cols_ && data_ == o.data_; }
  bool operator!=(const PackedMatrix& o) const { return !(*this == o); }

 private:
  Eigen::Index rows_ = 0, cols_ = 0;
  std::vector<float, UninitialisedAllocator<float>> data_;  // (panels, K, kPanel)
};

// C (M, N) = A (M, K) B, or C += A B when accumulate; A and C row-major with row strides.
// Splits B's panels across the compute threads (one thread below ~2 MFLOP).
void packed_gemm(int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate);

// C (M, N) = A (M, K) Bt^T, with Bt (N, K) row-major and row stride ldb: the unembedding,
// where Bt is the (V, D) embedding table and too big to keep a packed copy of. Each panel of
// kPanel rows of Bt (one contiguous stream) is packed on the fly by the thread that uses it.
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const float* Bt, int ldb, float* C, int ldc);

// The same on Eigen row-major matrices (or row blocks of them).
template <class Dst, class Src>
void packed_gemm(Dst&& C, const Src& A, const PackedMatrix& B, bool accumulate = false) {
  static_assert(std::decay_t<Dst>::IsRowMajor && std::decay_t<Src>::IsRowMajor, "packed_gemm takes row-major operands");
  HM_ASSERT(A.cols() == B.rows() && C.rows() == A.rows() && C.cols() == B.cols(), "packed_gemm: C (M, N) = A (M, K) B (K, N); check the shapes");
  packed_gemm(static_cast<int>(A.rows()), A.data(), static_cast<int>(A.outerStride()), B, C.data(), static_cast<int>(C.outerStride()),
              accumulate);
}

}  // namespace headmap
