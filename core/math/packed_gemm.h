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
//
// Storage in the file's precision: a matrix whose file holds BF16 or F16 keeps its panels
// as 16-bit values (half the bytes, the same layout), and the kernel widens each row of a
// panel to F32 in registers as it reads it (BF16: a 16-bit shift; F16: the F16C / AVX-512
// conversion; both exact). The products and sums are the F32 kernel's, in the same order,
// so the result equals the F32 matrix of the same values bit for bit (test_gemm.cpp).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/math/half.h"

namespace headmap {

// How weights are stored: F32, or 16-bit as in the file (widened to F32 in the kernel).
enum class WeightDtype : uint8_t { F32, BF16, F16 };
inline int bytes_per_weight(WeightDtype d) { return d == WeightDtype::F32 ? 4 : 2; }
inline const char* dtype_name(WeightDtype d) { return d == WeightDtype::BF16 ? "BF16" : d == WeightDtype::F16 ? "F16" : "F32"; }
// One 16-bit value to float (exact), and a float to the nearest 16-bit value (ties to even;
// exact for a float that came from one).
inline float narrow_to_float(uint16_t v, WeightDtype d) { return d == WeightDtype::BF16 ? bf16_to_float(v) : half_to_float(v); }
inline uint16_t float_to_narrow(float f, WeightDtype d) { return d == WeightDtype::BF16 ? float_to_bf16(f) : float_to_half(f); }

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
  explicit PackedMatrix(const Plain& plain, WeightDtype dtype = WeightDtype::F32) { assign(plain.data(), plain.rows(), plain.cols(), dtype); }
  // Packs a row-major (rows, cols) matrix (stored as `dtype`: see resize).
  void assign(const float* plain, Eigen::Index rows, Eigen::Index cols, WeightDtype dtype = WeightDtype::F32);
  // Or in row blocks (a loader's chunks): resize (values zero), then set rows [r0, r0 + n)
  // from a row-major (n, cols) block.
  // `dtype` BF16 or F16 stores the values 16-bit (set_rows rounds to it: exact for values that
  // came from such a file).
  void resize(Eigen::Index rows, Eigen::Index cols, WeightDtype dtype = WeightDtype::F32);
  void set_rows(Eigen::Index r0, Eigen::Index n, const float* block);
  // Packs a Linear weight straight from a file's 16-bit data: src (cols, rows) row-major,
  // (out, in) as Hugging Face stores it, of type src_dtype, into this (rows = in, cols = out)
  // matrix kept in src_dtype, one panel (kPanel rows of src) at a time; no F32 copy.
  // Both threads pack disjoint panels. Returns false (matrix incomplete) when a value is not
  // finite.
  bool assign_transposed_narrow(const uint16_t* src, Eigen::Index rows, Eigen::Index cols, WeightDtype src_dtype);
  // The same with column c read from col_src[c] (rows values): several Linear weights side
  // by side (W_Q | W_K | W_V) packed as one matrix, straight from the file.
  bool assign_transposed_narrow(const std::vector<const uint16_t*>& col_src, Eigen::Index rows, WeightDtype src_dtype);
  // Packs a (rows, cols) matrix made kBlockRows rows at a time, never whole (a loader's
  // reads, a random stream, a concatenation): fill(r0, n, block) writes rows [r0, r0 + n)
  // row-major into block and returns false to stop, leaving the matrix incomplete.
  static constexpr Eigen::Index kBlockRows = 64;  // even: a block of a normal stream starts on a pair
  template <class Fill>
  bool assign_by_rows(Eigen::Index rows, Eigen::Index cols, Fill&& fill, WeightDtype dtype = WeightDtype::F32) {
    resize(rows, cols, dtype);
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
  WeightDtype dtype() const { return dtype_; }
  bool narrow() const { return dtype_ != WeightDtype::F32; }
  size_t bytes() const { return data_.size() * sizeof(float) + data16_.size() * sizeof(uint16_t); }
  Eigen::Index cols() const { return cols_; }  // N
  Eigen::Index size() const { return rows_ * cols_; }
  int panels() const { return static_cast<int>((cols_ + kPanel - 1) / kPanel); }
  const float* panel(int p) const { return data_.data() + static_cast<size_t>(p) * rows_ * kPanel; }  // (K, kPanel), F32 only
  const uint16_t* panel16(int p) const { return data16_.data() + static_cast<size_t>(p) * rows_ * kPanel; }  // (K, kPanel), narrow only

  float operator()(Eigen::Index r, Eigen::Index c) const {
    const size_t i = (static_cast<size_t>(c / kPanel) * rows_ + r) * kPanel + c % kPanel;
    return narrow() ? narrow_to_float(data16_[i], dtype_) : data_[i];
  }
  Plain plain() const;  // the (K, N) matrix, unpacked
  Plain middle_cols(Eigen::Index c0, Eigen::Index n) const;  // (K, n): columns [c0, c0 + n), unpacked (exact)
  bool operator==(const PackedMatrix& o) const {
    return rows_ == o.rows_ && cols_ == o.cols_ && dtype_ == o.dtype_ && data_ == o.data_ && data16_ == o.data16_;
  }
  bool operator!=(const PackedMatrix& o) const { return !(*this == o); }

 private:
  Eigen::Index rows_ = 0, cols_ = 0;
  WeightDtype dtype_ = WeightDtype::F32;
  std::vector<float, UninitialisedAllocator<float>> data_;  // (panels, K, kPanel) when F32
  std::vector<uint16_t, UninitialisedAllocator<uint16_t>> data16_;  // (panels, K, kPanel) when BF16 or F16
};

// A (rows, cols) row-major table kept in a file's 16-bit precision: the token embedding of a
// BF16 / F16 model (Llama 3.2-1B's 128,256 x 2048 is 525 MB so, 1 GB widened). Rows are
// widened as they are gathered; the tied unembedding widens panels inside the GEMM.
struct NarrowRows {
  Eigen::Index rows = 0, cols = 0;
  WeightDtype dtype = WeightDtype::BF16;
  std::vector<uint16_t> data;  // (rows, cols)
  bool empty() const { return rows == 0; }
  void row(Eigen::Index r, float* out) const {  // out (cols)
    const uint16_t* s = data.data() + static_cast<size_t>(r) * cols;
    for (Eigen::Index c = 0; c < cols; ++c) out[c] = narrow_to_float(s[c], dtype);
  }
  bool operator==(const NarrowRows& o) const { return rows == o.rows && cols == o.cols && dtype == o.dtype && data == o.data; }
};

// C (M, N) = A (M, K) B, or C += A B when accumulate; A and C row-major with row strides.
// Splits B's panels across the compute threads (one thread below ~2 MFLOP).
void packed_gemm(int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate);

// Fewer than kMR rows of A against a packed matrix below 64 MiB (the incremental forward's
// appended tokens against one layer's weights) are streamed by one thread, unless a
// FewRowSplit scope on the calling thread asks for the whole team. On a quiet 2-core VM a
// second core reads 1.5x the bandwidth (headmap-bench-bandwidth: 22 vs 32 GB/s); on a shared
// one a parallel region's join costs more than the rows take. The incremental forward times
// both and keeps the faster (KvCache::split). The result is the same bit for bit either way.
class FewRowSplit {
 public:
  explicit FewRowSplit(bool split);
  ~FewRowSplit();
  FewRowSplit(const FewRowSplit&) = delete;
  FewRowSplit& operator=(const FewRowSplit&) = delete;

 private:
  bool previous_;
};

// C (M, N) = A (M, K) Bt^T, with Bt (N, K) row-major and row stride ldb: the unembedding,
// where Bt is the (V, D) embedding table and too big to keep a packed copy of. Each panel of
// kPanel rows of Bt (one contiguous stream) is packed on the fly by the thread that uses it.
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const float* Bt, int ldb, float* C, int ldc);
// The same with Bt kept 16-bit (BF16 or F16): each panel is widened as it is packed; the
// result equals the F32 call on the widened Bt bit for bit.
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const uint16_t* Bt, WeightDtype dtype, int ldb, float* C, int ldc);

// The same on Eigen row-major matrices (or row blocks of them).
template <class Dst, class Src>
void packed_gemm(Dst&& C, const Src& A, const PackedMatrix& B, bool accumulate = false) {
  static_assert(std::decay_t<Dst>::IsRowMajor && std::decay_t<Src>::IsRowMajor, "packed_gemm takes row-major operands");
  HM_ASSERT(A.cols() == B.rows() && C.rows() == A.rows() && C.cols() == B.cols(), "packed_gemm: C (M, N) = A (M, K) B (K, N); check the shapes");
  packed_gemm(static_cast<int>(A.rows()), A.data(), static_cast<int>(A.outerStride()), B, C.data(), static_cast<int>(C.outerStride()),
              accumulate);
}

}  // namespace headmap
