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
// Kernels: kMR (8) rows and more run packed_gemm_rows.cpp's (GotoBLAS's loop nest: A packed
// once a call into 12-row micro-panels, C summed in a thread-local buffer, each (128, kPanel)
// sub-panel widened to F32 once into L1 and used by every tile); fewer rows stream the panels
// G side by side (few_rows_panels); each C(i, j) is the same chain in both.
//
// Storage in the file's precision: a matrix whose file holds BF16 or F16 keeps its panels
// as 16-bit values (half the bytes, the same layout), and the kernel widens each row of a
// panel to F32 as it reads it (BF16: a 16-bit shift; F16: the F16C / AVX-512 conversion;
// both exact): in registers for a few rows, once per sub-panel into a scratch for many. The products and sums are the F32 kernel's, in the same order,
// so the result equals the F32 matrix of the same values bit for bit (test_gemm.cpp).
//
// Storage in a GGUF file's blocks (weight_dtype.h: Q8_0 ... Q6_K): each column keeps its
// source row of blocks verbatim (columns one after another), possibly of different types
// (Q4_K_M's Q6_K W_V beside its Q4_K W_Q and W_K). A product on it runs block_gemm.h's
// kernels: each column widened 256 values at a time and multiplied along k, each C(i, n)
// summed in dot order (8 lane sums over k mod 8, reduced in a fixed order), the same bits
// for any number of rows (an appended token equals a full recompute). An F32 matrix of the
// same values sums in k order: the two agree to rounding (test_quant_weights.cpp).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <functional>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/math/huge_pages.h"
#include "core/math/weight_dtype.h"

namespace headmap {

// Storage of packed weights: resize() leaves the floats unwritten (PackedMatrix::resize
// zeroes them itself; assign_by_rows_parallel writes every one, on the thread that draws it,
// so a fresh matrix is not written twice), and a block of 4 MB or more is on 2 MB pages
// (huge_pages.h: a token's pass reads every weight, 1,200 pages for the 1B shape, not 600k).
template <class T>
struct UninitialisedAllocator : Eigen::aligned_allocator<T> {
  T* allocate(std::size_t n, const void* = nullptr) {
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_alloc();
    void* p = huge_alloc(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) { huge_free(p, n * sizeof(T)); }
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
  // The same by parts, for a loader whose threads pack one matrix side by side with other
  // work (the 16-bit unembedding, NarrowRows): begin_narrow sets the shape and allocates the
  // panels unwritten; pack_transposed_panels then writes panels [p0, p1) from col_src (column
  // c at col_src[c], the whole matrix's), false when a value is not finite. Each panel once.
  void begin_narrow(Eigen::Index rows, Eigen::Index cols, WeightDtype src_dtype);
  bool pack_transposed_panels(const uint16_t* const* col_src, int p0, int p1);
  // Keeps a Linear weight in its file's blocks: column c of this (rows = in, cols =
  // col_src.size()) matrix is the row of `rows` elements stored at col_src[c] in col_dtype[c]
  // (any WeightDtype; rows a whole number of its blocks), copied verbatim. Several tensors
  // side by side, rows permuted (llama's Q/K), types mixed. Both threads copy disjoint
  // panels. Returns false (matrix incomplete) when a widened value is not finite.
  bool assign_blocks(const std::vector<const uint8_t*>& col_src, const std::vector<WeightDtype>& col_dtype, Eigen::Index rows);
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
  WeightDtype dtype() const { return dtype_; }  // kept in blocks: column 0's type (dtype_text names them all)
  bool narrow() const { return storage_ == Storage::Narrow16; }  // BF16 / F16 panels
  bool blocks() const { return storage_ == Storage::Blocks; }    // a file's blocks, per column
  WeightDtype column_dtype(Eigen::Index c) const { return blocks() ? run_of(c).dt : dtype_; }
  std::string dtype_text() const;  // "Q4_K", "Q4_K+Q6_K": the types its columns are kept in
  size_t bytes() const { return data_.size() * sizeof(float) + data16_.size() * sizeof(uint16_t) + data8_.size(); }
  Eigen::Index cols() const { return cols_; }  // N
  Eigen::Index size() const { return rows_ * cols_; }
  int panels() const { return static_cast<int>((cols_ + kPanel - 1) / kPanel); }
  const float* panel(int p) const { return data_.data() + static_cast<size_t>(p) * rows_ * kPanel; }  // (K, kPanel), F32 only
  const uint16_t* panel16(int p) const { return data16_.data() + static_cast<size_t>(p) * rows_ * kPanel; }  // (K, kPanel), narrow only
  const uint8_t* column_blocks(Eigen::Index c) const {  // (rows) in column_dtype(c), blocks only
    const Run& r = run_of(c);
    return data8_.data() + r.at + static_cast<size_t>(c - r.c0) * static_cast<size_t>(dtype_bytes(r.dt, rows_));
  }
  // Rows [k0, k0 + kc) of panel p widened into wide (kc, kPanel), F32 (zero past the last
  // column); k0 and kc whole numbers of every column's blocks. Blocks only.
  void widen_panel(int p, Eigen::Index k0, Eigen::Index kc, float* wide) const;

  float operator()(Eigen::Index r, Eigen::Index c) const;
  // Column c widened to F32 into out (rows): a strided gather down one panel (a row of a
  // table kept as its transpose's panels: NarrowRows::row).
  void column(Eigen::Index c, float* out) const;
  Plain plain() const;  // the (K, N) matrix, unpacked
  Plain middle_cols(Eigen::Index c0, Eigen::Index n) const;  // (K, n): columns [c0, c0 + n), unpacked (exact)
  bool operator==(const PackedMatrix& o) const {
    return rows_ == o.rows_ && cols_ == o.cols_ && dtype_ == o.dtype_ && storage_ == o.storage_ && data_ == o.data_ && data16_ == o.data16_ &&
           data8_ == o.data8_ && runs_ == o.runs_;
  }
  bool operator!=(const PackedMatrix& o) const { return !(*this == o); }

 private:
  Eigen::Index rows_ = 0, cols_ = 0;
  WeightDtype dtype_ = WeightDtype::F32;
  enum class Storage : uint8_t { F32, Narrow16, Blocks } storage_ = Storage::F32;
  std::vector<float, UninitialisedAllocator<float>> data_;  // (panels, K, kPanel) when F32
  std::vector<uint16_t, UninitialisedAllocator<uint16_t>> data16_;  // (panels, K, kPanel) when BF16 or F16
  std::vector<uint8_t, UninitialisedAllocator<uint8_t>> data8_;  // blocks: the columns' rows, one after another
  // Blocks: the runs of columns of one type (W_Q, W_K | W_V of Q4_K_M: two), each from c0 on,
  // its rows from data8_[at] on (a few bytes per matrix, not per column).
  struct Run {
    Eigen::Index c0;
    WeightDtype dt;
    size_t at;
    bool operator==(const Run& o) const { return c0 == o.c0 && dt == o.dt && at == o.at; }
  };
  std::vector<Run> runs_;
  const Run& run_of(Eigen::Index c) const {
    size_t i = runs_.size() - 1;
    while (runs_[i].c0 > c) --i;
    return runs_[i];
  }
  void free_other_storage();           // every storage but storage_'s emptied
};

// A (rows, cols) table kept in a file's precision: the token embedding of a BF16 / F16 model
// (Llama 3.2-1B's 128,256 x 2048 is 525 MB so, 1 GB widened), or of a GGUF file in its blocks
// (Q8_0: 279 MB). 16-bit, it is kept as its transpose (cols, rows) in PackedMatrix's panels:
// the unembedding is then packed_gemm's B, read in k order by the F32 kernel at any number of
// rows (an appended token's logits stream it as the MLP streams its weights), and a row (an
// embedding lookup) is a strided gather down one panel (PackedMatrix::column). The same bytes
// as the file's, reordered; the last panel zero-padded. In blocks, rows are kept one after
// another, widened as they are gathered, and the unembedding widens them inside its GEMM.
struct NarrowRows {
  Eigen::Index rows = 0, cols = 0;  // V, D
  WeightDtype dtype = WeightDtype::BF16;
  PackedMatrix panels;          // (cols, rows) = the table transposed, when BF16 / F16
  std::vector<uint8_t> blocks;  // (rows, row_bytes()) when a block type (weight_dtype.h)
  bool empty() const { return rows == 0; }
  size_t row_bytes() const { return static_cast<size_t>(dtype_bytes(dtype, cols)); }
  size_t bytes() const { return panels.bytes() + blocks.size(); }
  void row(Eigen::Index r, float* out) const {  // out (cols)
    if (is_block_dtype(dtype)) return widen_weights(dtype, blocks.data() + static_cast<size_t>(r) * row_bytes(), cols, out);
    panels.column(r, out);
  }
  bool operator==(const NarrowRows& o) const {
    return rows == o.rows && cols == o.cols && dtype == o.dtype && panels == o.panels && blocks == o.blocks;
  }
};

// C (M, N) = A (M, K) B, or C += A B when accumulate; A and C row-major with row strides.
// Splits B's panels across the compute threads (one thread below ~2 MFLOP).
void packed_gemm(int M, const float* A, int lda, const PackedMatrix& B, float* C, int ldc, bool accumulate);

// Fewer than kFewRowSplitRows rows of A against a packed matrix below 64 MiB (the incremental
// forward's appended tokens against one layer's weights) are streamed by one thread, unless a
// FewRowSplit scope on the calling thread asks for the whole team (for a matrix of 1 MiB or
// more whatever its flops: a few rows are bound by the bytes they stream). From
// kFewRowSplitRows rows on, a product takes the threads its flops ask (threads_for), as any
// other: a typing pass of 4-7 rows ran on one thread (this rule stopped at the panel tile's 8
// rows, the cache's timing at 3), 1.3-2.0x as long on the Q4_K files of the 1B shape on a
// 2-core VM (tests/bench/README.md, helper typq13). On a quiet 2-core VM a
// second core reads 1.5x the bandwidth (headmap-bench-bandwidth: 22 vs 32 GB/s); on a shared
// one a parallel region's join costs more than the rows take. The incremental forward times
// both and keeps the faster (KvCache::split). The result is the same bit for bit either way.
constexpr int kFewRowSplitRows = 4;
class FewRowSplit {
 public:
  explicit FewRowSplit(bool split);
  ~FewRowSplit();
  FewRowSplit(const FewRowSplit&) = delete;
  FewRowSplit& operator=(const FewRowSplit&) = delete;
  // The wall time (ms) of the products this scope decided on its thread so far (fewer than kMR
  // rows against a matrix below 64 MiB): what the split changes, and nothing of the pass
  // around them. Timing the whole pass let an edit's copy on write and page faults decide it
  // (tests/bench/README.md, helper share7).
  double products_ms() const { return products_ms_; }

 private:
  friend void packed_gemm(int, const float*, int, const PackedMatrix&, float*, int, bool);
  bool previous_;
  FewRowSplit* previous_scope_;
  double products_ms_ = 0;
};

// BF16 products, a faster mode that is off unless asked (the app's View > BF16 products,
// headmap-cli --bf16-products; issue 38): while a scope holds true on the calling thread, a
// product of kMinRows (8) rows or more (a full forward's tokens) against any packed weights
// (BF16, F16 or F32 panels, a GGUF file's blocks) rounds A and the weights to BF16 (nearest
// even) and multiplies pairs along k with the CPU's vdpbf16ps, accumulating in F32
// (packed_gemm_rows.cpp, block_gemm.cpp). Everything else is unchanged: a few rows (a typing
// pass: bound by the bytes it streams), an F32 table read in place (gemm_transposed_b),
// attention's own products. The rounding (8 significant bits) is the difference from F32:
// callers show it.
// Only where the build targets a CPU with avx512_bf16 (-march=native on one): elsewhere
// available() is false and a scope changes nothing.
class Bf16Products {
 public:
  explicit Bf16Products(bool on);
  ~Bf16Products();
  Bf16Products(const Bf16Products&) = delete;
  Bf16Products& operator=(const Bf16Products&) = delete;
  static bool available();
  static bool active();  // on in the calling thread's innermost scope, and available
  static constexpr int kMinRows = 8;  // fewer rows (a typing pass's) keep F32's products

 private:
  bool previous_;
};

// C (M, N) = A (M, K) Bt^T, with Bt (N, K) row-major and row stride ldb: the F32 unembedding
// (a checkpoint's (V, D) embedding table, which the trainer updates, or an F32 file's), too big
// to keep a packed copy of. Each panel of kPanel rows of Bt (one contiguous stream) is packed
// on the fly by the thread that uses it; fewer than 4 rows read Bt's rows in place and
// transpose them in registers. Each C(i, n) is packed_gemm's chain over k: a 16-bit table kept
// in panels (NarrowRows) gives the same bits as this call on its widened values.
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const float* Bt, int ldb, float* C, int ldc);
// The same with Bt kept 16-bit (BF16 or F16): each panel is widened as it is packed; the
// result equals the F32 call on the widened Bt bit for bit.
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const uint16_t* Bt, WeightDtype dtype, int ldb, float* C, int ldc);
// The same with Bt's rows in a block type (weight_dtype.h), row_bytes apart: each row is a
// column of the product, summed in block_gemm.h's dot order (not the F32 call's k order).
void gemm_transposed_b(int M, const float* A, int lda, int N, int K, const uint8_t* Bt, WeightDtype dtype, size_t row_bytes, float* C, int ldc);

// The same on Eigen row-major matrices (or row blocks of them).
template <class Dst, class Src>
void packed_gemm(Dst&& C, const Src& A, const PackedMatrix& B, bool accumulate = false) {
  static_assert(std::decay_t<Dst>::IsRowMajor && std::decay_t<Src>::IsRowMajor, "packed_gemm takes row-major operands");
  HM_ASSERT(A.cols() == B.rows() && C.rows() == A.rows() && C.cols() == B.cols(), "packed_gemm: C (M, N) = A (M, K) B (K, N); check the shapes");
  packed_gemm(static_cast<int>(A.rows()), A.data(), static_cast<int>(A.outerStride()), B, C.data(), static_cast<int>(C.outerStride()),
              accumulate);
}

}  // namespace headmap
