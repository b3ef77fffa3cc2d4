// train_corpus.cpp: see train_corpus.h.
#include "core/train/train_corpus.h"

#include <algorithm>
#include <cmath>

#include "core/io/file_io.h"
#include "core/model/model.h"
#include "core/text/utf8.h"

namespace headmap {

static bool blank_line(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

size_t held_out_lines(size_t n, double val_fraction) {
  if (n < 2) return 0;
  return std::clamp<size_t>(static_cast<size_t>(std::llround(static_cast<double>(n) * val_fraction)), 1, n - 1);
}

Result<TrainCorpus> train_corpus_from_text(const std::string& text, const std::string& name, const CorpusOptions& o) {
  std::vector<std::string> lines;
  for (std::string& l : split_lines(text))
    if (!blank_line(l)) lines.push_back(sanitize_utf8(l));
  if (lines.size() < 2)
    return Error{ErrorKind::InvalidArgument, "The corpus " + name + " has " + std::to_string(lines.size()) +
                                                 " text lines; training needs at least 2 (one held out for validation)."};
  if (!(o.val_fraction > 0.0 && o.val_fraction < 1.0))
    return Error{ErrorKind::InvalidArgument, "val_fraction must be in (0, 1)."};
  if (!o.bpe && (o.vocab_size < 257 || o.vocab_size > 65536))
    return Error{ErrorKind::InvalidArgument, "The BPE vocabulary size must be in 257..65536 (256 bytes and at least one merge)."};
  const size_t n_train = lines.size() - held_out_lines(lines.size(), o.val_fraction);
  TrainCorpus c;
  c.name = name;
  c.train_lines = static_cast<long>(n_train);
  c.bpe = o.bpe ? *o.bpe : Bpe::train(std::vector<std::string>(lines.begin(), lines.begin() + static_cast<long>(n_train)), o.vocab_size);
  // Lines encode independently, so both cores share the work; the streams keep line order.
  std::vector<std::vector<int>> ids(lines.size());
#pragma omp parallel for schedule(dynamic, 256)
  for (long i = 0; i < static_cast<long>(lines.size()); ++i) ids[size_t(i)] = c.bpe.encode(lines[size_t(i)] + "\n");
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<int32_t>& dst = i < n_train ? c.train : c.val;
    dst.insert(dst.end(), ids[i].begin(), ids[i].end());
    if (i >= n_train) c.val_lines.push_back(lines[i]);
  }
  return c;
}

Result<TrainCorpus> load_train_corpus(const std::string& path, const CorpusOptions& o) {
  Result<std::string> text = read_file(path, size_t(256) << 20);
  if (!text) return text.error();
  std::string name = path;
  if (const size_t slash = name.find_last_of('/'); slash != std::string::npos) name = name.substr(slash + 1);
  if (const size_t dot = name.find_last_of('.'); dot != std::string::npos && dot > 0) name = name.substr(0, dot);
  return train_corpus_from_text(*text, name, o);
}
}  // namespace headmap
