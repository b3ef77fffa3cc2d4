// shared_rows.cpp: a view's release of its block for writing, and the writer's copy on write.
//
// rows = tokens (T), cols = the matrix's width
#include "core/math/shared_rows.h"

#include <algorithm>
#include <atomic>

#include "core/math/parallel.h"

namespace headmap {

SharedRows::Matrix SharedRows::take() {
  Matrix m;
  if (block_ && block_.use_count() == 1) {
    // Only this view holds the block, and it is ours: nobody can start reading it now. The
    // fence orders the last other reader's reads (before its release) before our writes.
    std::atomic_thread_fence(std::memory_order_acquire);
    m.swap(const_cast<Matrix&>(*block_));  // made as a non-const Matrix (make_shared<Matrix>)
  }
  *this = SharedRows();
  return m;
}

RowsBlock::Matrix& RowsBlock::write_rows(Eigen::Index keep, Eigen::Index rows, Eigen::Index cols, Eigen::Index room, Matrix recycled) {
  // Only this writer makes views, so a count of 1 cannot rise behind our back; a count above
  // 1 may be falling (a view being dropped elsewhere), and then we copy once too often.
  const bool viewed = m_ && m_.use_count() > 1;
  if (!viewed) {
    std::atomic_thread_fence(std::memory_order_acquire);  // the last view's reads before our writes
    viewed_rows_ = 0;
  }
  if (m_ && m_->cols() != cols) keep = 0;
  keep = std::clamp<Eigen::Index>(keep, 0, m_ ? std::min(m_->rows(), rows) : 0);
  const bool fits = m_ && m_->cols() == cols && m_->rows() >= rows;
  if (fits && keep >= viewed_rows_) {  // rows [keep, rows) are read by no view
    keep_standby(std::move(recycled));
    return *m_;
  }
  if (m_ && !viewed && m_->cols() == cols) {  // ours alone: grown in place (its rows keep their pages)
    m_->conservativeResize(rows + room, cols);
    keep_standby(std::move(recycled));
    return *m_;
  }
  // (>= rows, cols), rows [0, keep) copied; in the recycled block's (or the standby's) pages
  if (recycled.size() < standby_.size()) recycled.swap(standby_);
  if (recycled.cols() != cols) recycled.resize(0, cols);
  if (recycled.rows() < rows) recycled.conservativeResize(rows + room, cols);  // realloc: the pages it had stay
  auto fresh = std::make_shared<Matrix>(std::move(recycled));
  if (keep > 0) parallel_copy(fresh->data(), m_->data(), static_cast<size_t>(keep * cols));
  if (viewed) ++copies_;
  m_ = std::move(fresh);
  viewed_rows_ = 0;
  return *m_;
}

SharedRows RowsBlock::view(Eigen::Index rows) {
  if (!m_) return SharedRows();
  viewed_rows_ = std::max(viewed_rows_, std::min(rows, m_->rows()));
  return SharedRows(std::shared_ptr<const Matrix>(m_), rows);
}

}  // namespace headmap
