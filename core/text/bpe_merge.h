// bpe_merge.h: the one BPE merge loop, shared by GPT-2's byte-level BPE (bpe.h) and the
// Hugging Face BPE model (hf_tokenizer.h).
//
// n = symbols in one pre-token. `sym` (n) holds the initial symbol ids; `lookup(left,
// right)` gives the pair's merge {rank, merged id}, or rank < 0 when the pair never merges.
// The adjacent pair with the lowest rank is merged first, and among equal ranks (the same
// pair several times) the leftmost: GPT-2's order, and Hugging Face's without dropout.
// A heap of (rank, position) over a linked list of symbols makes a piece cost O(n log n),
// so a long run of letters cannot stall the UI. Stale heap entries are recognised and
// skipped. On return `sym` holds the merged symbols; `len` (if given, n) the number of
// initial symbols each one covers is summed alongside.
#pragma once
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace headmap {

struct MergeRule {
  int rank = -1;    // < 0: no merge
  int result = -1;  // the merged symbol's id
};

template <class Lookup>
void bpe_merge(std::vector<int>& sym, Lookup&& lookup, std::vector<int>* len = nullptr) {
  const int n = static_cast<int>(sym.size());
  if (n < 2) return;
  std::vector<int> prev(static_cast<size_t>(n)), next(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    prev[size_t(i)] = i - 1;
    next[size_t(i)] = i + 1 < n ? i + 1 : -1;
  }
  struct Cand {
    int rank, pos, left, right, result;  // left/right: the symbols when pushed, to detect stale entries
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int i) {
    if (i < 0) return;  // before the first symbol (checked first: next[-1] is out of bounds)
    const int j = next[size_t(i)];
    if (j < 0) return;
    const MergeRule r = lookup(sym[size_t(i)], sym[size_t(j)]);
    if (r.rank >= 0) heap.push({r.rank, i, sym[size_t(i)], sym[size_t(j)], r.result});
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    const int i = c.pos;
    if (sym[size_t(i)] != c.left) continue;  // i was merged away or changed
    const int j = next[size_t(i)];
    if (j < 0 || sym[size_t(j)] != c.right) continue;
    sym[size_t(i)] = c.result;
    sym[size_t(j)] = -1;  // j is gone
    if (len) (*len)[size_t(i)] += (*len)[size_t(j)];
    next[size_t(i)] = next[size_t(j)];
    if (next[size_t(j)] >= 0) prev[size_t(next[size_t(j)])] = i;
    push(prev[size_t(i)]);
    push(i);
  }
  size_t w = 0;
  for (int i = 0; i >= 0; i = next[size_t(i)]) {
    if (len) (*len)[w] = (*len)[size_t(i)];
    sym[w++] = sym[size_t(i)];
  }
  sym.resize(w);
  if (len) len->resize(w);
}

}  // namespace headmap
