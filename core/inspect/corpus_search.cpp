// corpus_search.cpp: see corpus_search.h.
//
// B = lines in a chunk, T = the chunk's longest line in tokens, Hw = heads in the maps
#include "core/inspect/corpus_search.h"

#include <algorithm>

#include "core/io/file_io.h"
#include "core/text/utf8.h"

namespace headmap {

Result<std::vector<std::string>> read_corpus(const std::string& path) {
  Result<std::string> text = read_file(path, kCorpusMaxBytes);
  if (!text) return text.error();
  const DecodedText d = decode_utf8(*text);
  if (d.replaced > 0) {
    size_t at = 0;  // the first byte that is not part of valid UTF-8: where sanitize_utf8 first differs
    const std::string clean = sanitize_utf8(*text);
    while (at < text->size() && at < clean.size() && (*text)[at] == clean[at]) ++at;
    const size_t line = static_cast<size_t>(std::count(text->begin(), text->begin() + static_cast<std::ptrdiff_t>(at), '\n')) + 1;
    return Error{ErrorKind::BadFormat, path + " is not UTF-8 text: " + std::to_string(d.replaced) + " invalid byte sequences, the first at byte " +
                                           std::to_string(at) + " (line " + std::to_string(line) + "). A corpus is a UTF-8 text file, one context a line."};
  }
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    std::string line = text->substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) {
      if (static_cast<int>(lines.size()) >= kCorpusMaxLines)
        return Error{ErrorKind::BadFormat, path + " has more than " + std::to_string(kCorpusMaxLines) + " lines: search a part of it."};
      lines.push_back(std::move(line));
    }
    start = end + 1;
  }
  return lines;
}

Result<CorpusSearch> corpus_search(const ModelWeights& w, const ModelConfig& cfg, const std::vector<std::string>& lines, int layer, int head,
                                   int k, int chunk, const std::function<bool()>& cancelled) {
  if (k < 1 || k > kCorpusMaxTop)
    return Error{ErrorKind::InvalidArgument, "The number of examples is 1 to " + std::to_string(kCorpusMaxTop) + ", got " + std::to_string(k) + "."};
  if (layer < 0 || layer >= cfg.num_layers)
    return Error{ErrorKind::InvalidArgument, "No layer " + std::to_string(layer) + ": the model has " + std::to_string(cfg.num_layers) + "."};
  CorpusSearch cs;
  cs.layer = layer;
  cs.head = head;
  std::vector<CorpusHit> all;  // per query row its best key, pruned to the k largest as chunks arrive
  auto better = [](const CorpusHit& a, const CorpusHit& b) {
    return a.weight > b.weight || (a.weight == b.weight && (a.line < b.line || (a.line == b.line && a.query < b.query)));
  };
  ForwardOptions fo;
  fo.skip_final_mlp = true;  // the maps alone
  fo.cancelled = cancelled;
  chunk = std::max(1, chunk);
  for (size_t c0 = 0; c0 < lines.size(); c0 += static_cast<size_t>(chunk)) {
    if (cancelled && cancelled()) return Error{ErrorKind::Cancelled, "The corpus search was cancelled."};
    const std::vector<std::string> part(lines.begin() + static_cast<std::ptrdiff_t>(c0),
                                        lines.begin() + static_cast<std::ptrdiff_t>(std::min(lines.size(), c0 + static_cast<size_t>(chunk))));
    if (Status st = check_batch_memory(part, cfg); !st) return st.error();
    const Batch batch = make_batch(part, cfg, w);
    if (batch.empty()) continue;
    Result<ForwardOutput> out = forward(w, cfg, batch, fo);
    if (!out) return out.error();
    if (head < 0 || head >= out->Hw)
      return Error{ErrorKind::InvalidArgument, "No head " + std::to_string(head) + ": the maps have " + std::to_string(out->Hw) + " per layer."};
    const bool causal = mask_kind(cfg) == MaskKind::Causal;
    for (int b = 0; b < batch.B(); ++b) {
      const float* m = out->weights(layer, b, head);  // (T, T)
      const int len = batch.lengths[static_cast<size_t>(b)];
      for (int t = 1; t < len; ++t) {
        CorpusHit h;
        h.line = static_cast<int>(c0) + batch.source_line[static_cast<size_t>(b)];
        h.query = t;
        h.weight = -1;
        for (int s = 1; s < (causal ? t + 1 : len); ++s)
          if (m[static_cast<size_t>(t) * out->T + s] > h.weight) h.weight = m[static_cast<size_t>(t) * out->T + s], h.key = s;
        if (h.weight < 0) continue;
        ++cs.rows;
        all.push_back(std::move(h));
      }
      cs.lines += 1;
    }
    if (all.size() > static_cast<size_t>(4 * k) + 1024) {  // keep memory bounded by k
      std::nth_element(all.begin(), all.begin() + k, all.end(), better);
      all.resize(static_cast<size_t>(k));
    }
  }
  const size_t n = std::min(all.size(), static_cast<size_t>(k));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), better);
  all.resize(n);
  for (CorpusHit& h : all) {  // the hits' own tokens, for showing them
    const Batch one = make_batch({lines[static_cast<size_t>(h.line)]}, cfg, w);
    if (!one.empty())
      for (const Token& t : one.sentences[0].tokens) h.token_ids.push_back(t.id);
  }
  cs.hits = std::move(all);
  return cs;
}

}  // namespace headmap
