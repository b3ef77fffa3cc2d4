// train_corpus.h: a training text made ready for the trainer: its tokenizer and its train
// and validation token streams. (The texts themselves come from english.h, real English
// assembled from Debian packages, and grammar.h, the generated grammar.)
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/text/bpe.h"

namespace headmap {

// A tokenized training text: a byte-level BPE learned from its training lines (or given),
// and the train and validation splits as token streams (each line followed by "\n").
struct CorpusOptions {
  double val_fraction = 0.05;  // the last 5% of lines are held out
  int vocab_size = 4096;       // BPE tokens to learn (256 bytes + merges); ignored if `bpe` is set
  const Bpe* bpe = nullptr;    // use this tokenizer instead of learning one
};
// How many of n lines the last val_fraction holds out (at least 1, at most n - 1).
size_t held_out_lines(size_t n, double val_fraction);
struct TrainCorpus {
  std::string name;              // e.g. "english-v1" (the file name without extension)
  Bpe bpe;                       // (V) learned from the training lines only
  std::vector<int32_t> train;    // token ids of the training lines
  std::vector<int32_t> val;      // token ids of the held-out lines
  std::vector<std::string> val_lines;  // the held-out lines themselves (for metrics)
  long train_lines = 0;
};
Result<TrainCorpus> train_corpus_from_text(const std::string& text, const std::string& name, const CorpusOptions& o = {});
Result<TrainCorpus> load_train_corpus(const std::string& path, const CorpusOptions& o = {});

}  // namespace headmap
