// corpus_search.h: where in a corpus a head fires (issue 39, point 4; exBERT's corpus search,
// CircuitsVis' max-activating examples). The model runs over every line of a text file the
// person chose, a few lines at a time, and each head's strongest query -> key cells are kept:
// per query row t >= 1 its largest statistic on a key s >= 1 (the first token, where heads
// park their weight, is left out), the k largest of those over the corpus. The statistic is
// the person's choice (CorpusStat): the attention weight a[t, s], or the value-weighted norm
// a[t, s] ||f(x_s)|| (Kobayashi et al. 2020: how much of the key's value reaches the output).
//
// L = layers, H = heads, T = tokens of a line (at most the context)
#pragma once
#include <cstddef>
#include <cstdint>
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
// The same for a file's bytes already read (`path` names it in the messages).
Result<std::vector<std::string>> corpus_lines(const std::string& bytes, const std::string& path);

// What a head's cells are ranked by; both statistics look at the same cells (rows t >= 1,
// keys s >= 1).
enum class CorpusStat : int {
  Weight = 0,     // the attention weight a[t, s]
  ValueNorm = 1,  // a[t, s] ||f(x_s)||, f(x) = (x W_V[h] + b_V[h]) W_O[h]: contrib.h's head_value_norms
};
inline constexpr int kCorpusStats = 2;
// "weight", "value_norm": the CLI's --corpus-stat, the script's corpus_stat= and the JSON's "stat".
const char* corpus_stat_name(CorpusStat s);
// What the views call it: "attention weight", "value-weighted norm".
const char* corpus_stat_label(CorpusStat s);
// The name back; InvalidArgument naming the choices.
Result<CorpusStat> parse_corpus_stat(const std::string& name);

struct CorpusHit {
  int line = 0;          // index into the lines searched
  int query = 0, key = 0;  // token positions in that line, key s >= 1
  float weight = 0;      // the head's attention weight there
  float score = 0;       // the statistic ranked by: `weight`, or weight * ||f(x_key)||
  std::vector<int> token_ids;  // (T) the line's tokens, for showing the hit
};
struct CorpusSearch {
  int layer = 0, head = 0;
  CorpusStat stat = CorpusStat::Weight;
  int lines = 0, rows = 0;       // lines searched (non-blank), query rows scored
  std::vector<CorpusHit> hits;   // the k largest, largest first (ties: earlier line, then row)
  // The head's offset profile over the corpus: offset_profile.h's definition with every
  // line's query rows pooled, the mean weight at d = t - s from -(len - 1) to len - 1, len the
  // longest line in tokens (index d + len - 1).
  int len = 0;
  std::vector<float> by_offset;  // (2 len - 1)
  std::vector<int64_t> rows_at;  // (2 len - 1) query rows t >= 1 whose key t - d is a real token
};

// Every head's strongest rows over a corpus, `top` kept per head (corpus_search reads one
// head from it): one pass of the model gives every head's maps, so searching another head of
// the same model and file needs no second pass. What the app caches on disk (corpus_cache.h).
struct CorpusIndex {
  CorpusStat stat = CorpusStat::Weight;      // what the hits are ranked by
  int L = 0, Hw = 0, top = 0;
  int lines = 0, rows = 0;                   // as CorpusSearch's
  std::vector<std::vector<CorpusHit>> hits;  // (L*Hw) each head's `top` largest, largest first, token_ids empty
  int len = 0;                               // the longest line in tokens
  std::vector<double> offset_sum;            // (L*Hw, 2 len - 1) the summed weight at each offset d (index d + len - 1)
  std::vector<int64_t> rows_at;              // (2 len - 1) as OffsetProfile's, summed over the lines
};

// Called between chunks with the lines done and the lines in all; from the calling thread.
using CorpusProgress = std::function<void(int done, int total)>;

// Every head over `lines` ranked by `stat`, `chunk` lines per forward pass; `cancelled` (may
// be null) is asked between chunks and inside the forward. Errors: a line the model cannot
// run, top outside 1..kCorpusMaxTop, the value-weighted norm where contrib_supported refuses
// (a pitfall), Cancelled.
Result<CorpusIndex> corpus_index(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int top, CorpusStat stat,
                                 int chunk = 32,
                                 const std::function<bool()>& cancelled = {}, const CorpusProgress& progress = {});

// Head (layer, head)'s k largest from an index (k <= index.top), with their lines' tokens
// (`lines`: the lines the index was made from). Errors: no such head, k above index.top.
Result<CorpusSearch> corpus_search_in(const CorpusIndex& index, const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines,
                                      int layer, int head, int k);

// Head (layer, head) over `lines`: corpus_index with top = k, then corpus_search_in.
// Errors: corpus_index's, and no such head (weight-heads: Hw).
Result<CorpusSearch> corpus_search(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int layer, int head,
                                   int k, CorpusStat stat, int chunk = 32, const std::function<bool()>& cancelled = {}, const CorpusProgress& progress = {});

}  // namespace headmap
