// corpus_search.h: where in a corpus a head fires (issue 39, point 4; exBERT's corpus search,
// CircuitsVis' max-activating examples). The model runs over every line of a text file the
// person chose, a few lines at a time, and the head's strongest query -> key weights are kept:
// per query row t >= 1 its largest weight on a key s >= 1 (the first token, where heads
// park their weight, is left out), the k largest of those over the corpus.
//
// L = layers, H = heads, T = tokens of a line (at most the context)
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/model/model.h"

namespace headmap {

// A corpus file's bounds: its bytes and its non-blank lines.
inline constexpr size_t kCorpusMaxBytes = size_t(4) << 20;
inline constexpr int kCorpusMaxLines = 100000;
inline constexpr int kCorpusMaxTop = 1000;

// The non-blank lines of the corpus file at `path` (read only when the person names it).
// Errors: unreadable (Io), over kCorpusMaxBytes or kCorpusMaxLines, or not UTF-8 (BadFormat,
// saying where the first bad byte is).
Result<std::vector<std::string>> read_corpus(const std::string& path);

struct CorpusHit {
  int line = 0;          // index into the lines searched
  int query = 0, key = 0;  // token positions in that line, key s >= 1
  float weight = 0;      // the head's weight there
  std::vector<int> token_ids;  // (T) the line's tokens, for showing the hit
};
struct CorpusSearch {
  int layer = 0, head = 0;
  int lines = 0, rows = 0;       // lines searched (non-blank), query rows scored
  std::vector<CorpusHit> hits;   // the k largest, largest first (ties: earlier line, then row)
};

// Head (layer, head) over `lines`, `chunk` lines per forward pass; `cancelled` (may be null)
// is asked between chunks. Errors: no such head (weight-heads: Hw), a line the model cannot
// run, k outside 1..kCorpusMaxTop, Cancelled.
Result<CorpusSearch> corpus_search(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int layer, int head,
                                   int k, int chunk = 32, const std::function<bool()>& cancelled = {});

}  // namespace headmap
