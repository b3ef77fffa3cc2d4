// shared_rows.h: the first rows of a matrix that a writer appends to and several readers hold.
//
// The K/V cache (core/model/kv_cache.h) keeps each output's rows (the logits, each layer's
// attention input and output) in a RowsBlock with room for more tokens; the output it gives
// holds a SharedRows, a read-only view of the block's first T rows that keeps the block alive.
// Typing at the end then writes only the new rows, past every row an earlier output reads,
// and no output copies the kept rows (66 MB of logits a keystroke on the 1B shape). A write
// under a row that some view may read (an edit, not an append) goes into a fresh block with
// the kept rows copied (copy on write): a result is immutable once it is published.
//
// rows = tokens (T), cols = the matrix's width (V for logits, D for a layer's rows)
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>

namespace headmap {

// A read-only (rows, cols) row-major view of a block's first rows, sharing the block. It is an
// Eigen map: row(), (r, c), data(), arithmetic and comparison read as on a matrix. A SharedRows
// made from a matrix owns it alone.
class SharedRows : public Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::AlignedMax> {
 public:
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Base = Eigen::Map<const Matrix, Eigen::AlignedMax>;

  SharedRows() : Base(nullptr, 0, 0) {}
  explicit SharedRows(Matrix m) : SharedRows(std::shared_ptr<const Matrix>(std::make_shared<Matrix>(std::move(m)))) {}
  // rows [0, rows) of block (all of them when rows < 0)
  explicit SharedRows(std::shared_ptr<const Matrix> block, Eigen::Index rows = -1)
      : Base(block ? block->data() : nullptr, block ? (rows < 0 ? block->rows() : std::min(rows, block->rows())) : 0,
             block ? block->cols() : 0),
        block_(std::move(block)) {}
  SharedRows(const SharedRows& o) : Base(o.data(), o.rows(), o.cols()), block_(o.block_) {}
  SharedRows(SharedRows&& o) noexcept : Base(o.data(), o.rows(), o.cols()), block_(std::move(o.block_)) { o.rebind(nullptr, 0, 0); }
  SharedRows& operator=(const SharedRows& o) {
    if (this != &o) block_ = o.block_, rebind(o.data(), o.rows(), o.cols());
    return *this;
  }
  SharedRows& operator=(SharedRows&& o) noexcept {
    if (this != &o) {
      block_ = std::move(o.block_);
      rebind(o.data(), o.rows(), o.cols());
      o.rebind(nullptr, 0, 0);
    }
    return *this;
  }
  ~SharedRows() = default;

  // The block's storage for writing, when this view holds the only reference to it (its rows
  // and room as they are), else an empty matrix; this view is left empty either way.
  Matrix take();

 private:
  void rebind(const float* p, Eigen::Index r, Eigen::Index c) { new (static_cast<Base*>(this)) Base(p, r, c); }  // Eigen's way to move a map
  std::shared_ptr<const Matrix> block_;
};

// The writer's side: one block of rows, appended to, whose first rows views read.
class RowsBlock {
 public:
  using Matrix = SharedRows::Matrix;

  // The block, (>= rows, cols), with rows [0, keep) as they were and rows [keep, rows) free to
  // write: in place when no view reads them, else a fresh block of rows + room rows with the
  // kept rows copied (the views keep the old one). Grown by `room` rows past `rows` when it
  // must grow. A fresh block is made in `recycled`'s storage when given (a block an output
  // no longer reads, SharedRows::take: its pages are faulted in already), else in the standby's;
  // a recycled block not needed now becomes the standby (freed there instead, the 1B shape's
  // ~108 MB went inside the append: tests/bench/README.md, helper share7, which took over share6).
  Matrix& write_rows(Eigen::Index keep, Eigen::Index rows, Eigen::Index cols, Eigen::Index room, Matrix recycled = Matrix());
  // A view of rows [0, rows) for an output; the block is not written under them while it lives.
  SharedRows view(Eigen::Index rows);
  uint64_t bytes() const { return (m_ ? static_cast<uint64_t>(m_->size()) * sizeof(float) : 0) + static_cast<uint64_t>(standby_.size()) * sizeof(float); }
  int copies() const { return copies_; }  // fresh blocks made because views held the old one (tests)
  void clear() {
    m_.reset();
    standby_.resize(0, 0);
    viewed_rows_ = 0;
  }

 private:
  void keep_standby(Matrix m) {
    if (m.size() > standby_.size()) standby_.swap(m);
  }
  std::shared_ptr<Matrix> m_;
  Matrix standby_;  // the storage of a block no view reads (a spare's), kept for the next fresh block
  Eigen::Index viewed_rows_ = 0;  // the most rows a view given out of m_ may read
  int copies_ = 0;
};

}  // namespace headmap
